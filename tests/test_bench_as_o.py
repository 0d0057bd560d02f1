"""bench/as_o.py: the openings it plays, games that replay from the seed, and its counts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import as_o
import strength

from protocol.rules import State

#: Nodes a millisecond: at 300 ms, budgets of 150 and 1,500 nodes a move.
_SMALL = {"minimax": 0.5, "gomoku": 5.0}


def test_only_the_four_stone_openings_of_each_seed_are_played() -> None:
    jobs = as_o.four_stone_openings([11, 12], 16)
    drawn = {seed: strength.drawn_openings(16, seed) for seed in (11, 12)}
    assert jobs and all(len(moves) == 4 for _, _, moves in jobs)
    assert [j for j in jobs if j[0] == 11] == [(11, i, o) for i, o in enumerate(drawn[11]) if len(o) == 4]
    assert len(jobs) == sum(len(o) == 4 for seed in drawn for o in drawn[seed])


def test_a_game_is_played_out_from_its_opening_and_replays() -> None:
    job = as_o.four_stone_openings([11], 8)[0]
    result, moves = as_o.play(job, "minimax", _SMALL, 300)
    assert tuple(moves[:4]) == job[2]
    end = State.replay(strength.VARIANT, moves)
    assert end.outcome is not None and end.outcome.result == result
    assert as_o.play(job, "minimax", _SMALL, 300) == (result, moves)


def test_the_match_plays_every_opening_once() -> None:
    jobs = as_o.four_stone_openings([12], 8)[:3]
    results = as_o.match(jobs, "gomoku", _SMALL, 300, 2)
    assert sorted(results) == sorted(jobs)
    assert {result for result, _ in results.values()} <= {"1-0", "0-1", "1/2-1/2"}
    assert all(tuple(moves[:4]) == job[2] for job, (_, moves) in results.items())


def test_the_fixed_openings_are_each_played_the_times_asked() -> None:
    jobs = as_o.fixed_openings(2)
    assert len(jobs) == 2 * len(strength.OPENINGS)
    assert [",".join(map(str, o)) for r, _, o in jobs if r == 1] == list(strength.OPENINGS)
    assert {len(o) for _, _, o in jobs} == {2, 3, 4}
    assert as_o.fixed_openings(0) == []


def test_a_game_from_an_opening_of_odd_length_is_played_out_and_replays() -> None:
    job = next(j for j in as_o.fixed_openings(1) if len(j[2]) == 3)
    result, moves = as_o.play(job, "minimax", _SMALL, 300)
    assert tuple(moves[:3]) == job[2] and len(moves) > 3
    assert State.replay(strength.VARIANT, moves).outcome.result == result  # type: ignore[union-attr]
    assert as_o.play(job, "minimax", _SMALL, 300) == (result, moves)


def test_the_counts_by_stones_and_by_how_the_opening_went_against_itself() -> None:
    two, three, four = (0, 0, (112, 113)), (0, 1, (112, 98, 113)), (0, 2, (112, 113, 127, 98))
    against = {two: "0-1", three: "1-0", four: "1-0"}
    assert as_o.by_stones(against) == "0 of 1 (2 stones), 1 of 1 (3 stones), 1 of 1 (4 stones)"
    itself = {two: "1/2-1/2", three: "0-1", four: "1-0"}
    assert as_o.by_balance(against, itself) == (
        "minimax as X won 1 of the 2 openings O held against itself (50.0 %), "
        "1 of the 1 openings X won against itself (100.0 %)"
    )
    assert as_o.by_balance(against, {two: "1-0"}) == (
        "minimax as X won 0 of the 0 openings O held against itself, "
        "0 of the 1 openings X won against itself (0.0 %)"
    )


def test_a_negative_number_of_fixed_repetitions_is_refused() -> None:
    command = [sys.executable, str(Path(as_o.__file__)), "--fixed", "-1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--fixed -1" in done.stderr
