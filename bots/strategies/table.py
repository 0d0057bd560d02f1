"""`table`: perfect play from the solved table (3x3 games and boards of up to 16 cells)."""

from __future__ import annotations

import random

from bots.strategies.base import bare
from protocol.rules import Cell, State


class TableStrategy:
    """Plays a value-preserving move: the fastest win, the slowest loss, random among equals."""

    name = "table"

    def refusal(self, variant: str) -> str | None:
        """Why this strategy cannot play ``variant`` (its table would not cover it), or None.

        A player should ask before it takes a game; `choose` raises `Unsolvable` with
        the same message otherwise.
        """
        from bots.solver import refusal

        return refusal(variant)

    def choose(self, state: State, rng: random.Random) -> Cell:
        from bots.solver import solve

        return rng.choice(solve(state.variant.name).best_moves(bare(state)))
