"""`table`: perfect play from the solved table (3x3 boards)."""

from __future__ import annotations

import random

from bots.strategies.base import bare
from protocol.rules import Cell, State


class TableStrategy:
    """Plays a value-preserving move: the fastest win, the slowest loss, random among equals."""

    name = "table"

    def choose(self, state: State, rng: random.Random) -> Cell:
        from bots.solver import solve

        return rng.choice(solve(state.variant.name).best_moves(bare(state)))
