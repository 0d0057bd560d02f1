"""`gomoku` on its C core (`_gomoku_core.c`): the moves of `GomokuStrategy`, faster.

The C core makes the same decisions as the Python strategy, node for node: given a node
budget, both choose the same move in the same number of nodes (tests/test_bots_gomoku_core.py
compares them on a suite of positions), so everything measured of one holds for the other,
and what a node budget buys, the C core buys in a fraction of the time. The Python
strategy stays the reference: what each step does is said there, and its internals are
what the tests of its steps call.

The core is a C extension built when the project is installed (setup.py, optional: with no
C compiler the install goes on without it). `available()` says whether it was built;
`bots.strategy("gomoku")` takes it when it was, else the Python strategy.
"""

from __future__ import annotations

import functools
import random
from typing import Any

from bots.strategies.base import StrategyError
from bots.strategies.gomoku import _TABLE_LIMIT, GomokuStrategy
from bots.strategies.gomoku_lines import Lines, split
from protocol.rules import Cell, State, Variant, find_variant

try:
    from bots.strategies import _gomoku_core
except ImportError:  # built without a C compiler
    _gomoku_core = None  # type: ignore[assignment]


def available() -> bool:
    """Whether the C core was built."""
    return _gomoku_core is not None


def engine(variant: Variant) -> Any:
    """A C core for ``variant``'s board, its tables taken from `Lines` (windows, cells
    around each cell, Zobrist keys, what a stone does to a window of each code)."""
    if _gomoku_core is None:
        raise StrategyError("the gomoku C core was not built (no C compiler at install)")
    return _gomoku_core.Engine(*_tables(variant.name))


@functools.cache
def _tables(name: str) -> tuple[Any, ...]:
    """`engine`'s arguments for the variant ``name`` (a few milliseconds to make)."""
    variant = find_variant(name)
    lines = Lines(variant)
    steps = [
        [None if s is None else (*split(s[0]), s[1], s[2], s[3]) for s in table] for table in lines.steps
    ]
    return (
        variant.k, variant.rows, variant.cols,
        [tuple(cells) for cells in lines.window_cells],
        [[w for w, _ in through] for through in lines.through],
        [list(cells) for cells in lines.around],
        [list(keys) for keys in lines.zobrist],
        steps,
        [split(v) for v in lines.packed],
    )  # fmt: skip


def board(state: State) -> bytes:
    """``state``'s stones, a byte a cell: 0 empty, 1 X, 2 O."""
    x, o = state.x, state.o
    return bytes(1 if x >> c & 1 else 2 if o >> c & 1 else 0 for c in range(state.variant.cells))


class CoreGomoku(GomokuStrategy):
    """`GomokuStrategy` with `choose` and `threat_win` on the C core (same moves, same
    node counts; see the module doc). The Python steps it inherits are not used."""

    # ``nodes_per_ms`` (a tournament's budget a millisecond, `base.reproducible`) is the
    # Python strategy's 600: a fifth of the 3,100 or so the core counts on 15x15k5 here, and
    # the same budgets make a tournament's games the same whether or not the core was built.

    def __init__(self, think_ms: int = 1000, nodes_budget: int | None = None) -> None:
        super().__init__(think_ms, nodes_budget)
        self._engine: Any = None

    def _engine_for(self, state: State, keep: bool) -> Any:
        """The core for ``state``'s variant; what it kept is forgotten past `_TABLE_LIMIT`
        (as the Python strategy's tables) unless ``keep``."""
        if self._engine is None or self._variant != state.variant.name:
            self._variant = state.variant.name
            self._engine = engine(state.variant)
        elif not keep and self._engine.kept() > _TABLE_LIMIT:
            self._engine.forget()
        return self._engine

    def choose(self, state: State, rng: random.Random) -> Cell:
        why = self.refusal(state.variant.name)
        if why is not None:
            raise StrategyError(why)
        core = self._engine_for(state, keep=False)
        move, self.reason, self.nodes, self.scored, self.reached, value = core.decide(
            board(state), int(state.to_move), self.think_ms, self.nodes_budget or 0, rng.shuffle
        )
        if self.reached:  # as in Python: the score of the last move that searched
            self.value = value
        if not state.is_legal(move):  # cannot happen; never send an illegal move
            move = rng.choice(state.legal_moves())
        return int(move)

    def threat_win(self, state: State, side: int, depth: int, nodes: int, after: Cell = -1
                   ) -> tuple[Cell | None, bool]:  # fmt: skip
        why = self.refusal(state.variant.name)
        if why is not None:
            raise StrategyError(why)
        core = self._engine_for(state, keep=True)
        found, ended, self.nodes = core.threat_win(
            board(state), side, depth, nodes, after, bool(self.nodes_budget)
        )
        return (None if found < 0 else int(found)), bool(ended)
