"""bench/outside_gomoku.py: the outside gomoku AI (PyPI ``gomoku-terminal``, the ``bench``
extra) speaks Gomocup well enough for `bots.engines` to play whole games with it. Skipped
where the extra is not installed."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from bots.engines import engine
from bots.strategies.gomoku import GomokuStrategy
from protocol.rules import Mark, State

pytest.importorskip("gomoku.ai", reason="the bench extra (gomoku-terminal) is not installed")

WRAPPER = Path(__file__).resolve().parent.parent / "bench" / "outside_gomoku.py"


def test_blocks_a_four_then_plays_a_whole_game_legally() -> None:
    outside = engine("gomocup", f"{sys.executable} {WRAPPER}", think_ms=20_000)
    try:
        # X has four in a row on row 7 (one end blocked by O): the outside AI must block.
        s = State.replay("15x15k5", [105, 120, 106, 121, 107, 135, 108])
        assert outside.choose(s, random.Random(0)) == 109
        ours = GomokuStrategy(think_ms=600_000, nodes_budget=500)
        s, rng = State.replay("15x15k5", [112]), random.Random(1)
        while not s.is_over:
            mover = outside if s.to_move == Mark.O else ours
            cell = mover.choose(s, rng)
            assert s.is_legal(cell), (s.moves, cell)
            s = s.play(cell)
        assert s.outcome is not None
    finally:
        outside.close()
