"""bench/as_o.py: the four-stone openings it plays, and games that replay from the seed."""

from __future__ import annotations

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
