"""bench/strength.py plays its match at equal thinking time: a tournament gives every
searcher a node budget (`base.reproducible`, at a rate each strategy names well under its
speed), so the bench sets each side's budget from the nodes a millisecond it measured for
that side in the same run, and neither is cut short of its time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bots.strategies.base import reproducible

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import strength


def test_each_side_thinks_the_same_time_at_its_own_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTT_STRENGTH_MS", "300")
    monkeypatch.setenv("TTT_STRENGTH_RATES", "gomoku=500.5,minimax=16.25")
    ours, theirs = strength.gomoku(), strength.minimax()
    for player in (ours, theirs):
        reproducible(player)  # what `ttt tournament` does to every entry
    assert (ours.nodes_budget, theirs.nodes_budget) == (round(300 * 500.5), round(300 * 16.25))
    # the wall clock is a limit only (a loaded machine must not cut the budgets short)
    assert ours.think_ms == theirs.think_ms == strength._SLACK * 300 > 300


def test_without_rates_the_match_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTT_STRENGTH_MS", "300")
    monkeypatch.delenv("TTT_STRENGTH_RATES", raising=False)
    with pytest.raises(RuntimeError, match="nodes a millisecond"):
        strength.gomoku()


def test_drawn_openings_are_balanced_distinct_and_follow_the_seed() -> None:
    from bots.strategies.gomoku_lines import Lines, weights
    from protocol.rules import find_variant

    v = find_variant(strength.VARIANT)
    drawn = strength.drawn_openings(64, 11)
    assert drawn == strength.drawn_openings(64, 11)
    assert len(set(drawn) & set(strength.drawn_openings(64, 12))) < 8  # a few 2-stone ones recur
    shapes = set()
    for moves in drawn:
        assert len(moves) in (2, 4) and moves[0] == 112
        assert all(abs(c // 15 - 7) <= 2 and abs(c % 15 - 7) <= 2 for c in moves)
        lines = Lines(v, weights(v.k, strength.OPENING_BASE))
        for i, c in enumerate(moves):
            lines.place(c, i % 2)
        assert not lines.threes[0] and not lines.threes[1]
        assert abs(lines.score[0] - lines.score[1]) <= strength._BALANCE
        shapes.add(min(tuple(sorted((p[c], i % 2) for i, c in enumerate(moves))) for p in v.symmetries))
    assert len(shapes) == len(drawn)  # no two the same up to the board's symmetries


def test_a_seed_keeps_its_openings_whatever_gomoku_weighs() -> None:
    """The held-out seeds' openings (those of docs/engines.md's figures) are balanced by
    the window worths they were first drawn with, not by what `gomoku` weighs now."""
    from bots.strategies.gomoku_lines import BASE

    assert strength.OPENING_BASE != BASE  # else this test says nothing
    first, last = strength.drawn_openings(64, 11), strength.drawn_openings(64, 14)
    assert first[:2] == [(112, 83), (112, 144, 128, 110)] and first[-1] == (112, 95, 97, 125)
    assert first[12:14] == [(112, 142, 128, 110), (112, 83, 95, 98)]  # where base 4 would differ
    assert last[12:14] == [(112, 97), (112, 144, 114, 83)] and last[-1] == (112, 126, 128, 114)
