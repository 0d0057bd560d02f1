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
