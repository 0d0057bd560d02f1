"""Retrograde analysis of every position reachable from the empty board.

A position is named by an integer code (`Table.code`): where marks vanish
(tactic-toe) it is `State.key`, each side's marks oldest first in 4-bit slots, so
the ages are part of it; elsewhere the board in base 3 (`ternary`; the side to
move follows from the counts). The build works on whole numpy arrays of codes: successors come
from precomputed tables (pushing a cell onto a queue, the cells a queue holds,
whether it makes a line), never from `State` objects (`bots.solver_build`).

Each position's result is one small int, its score for the side to move: ``WIN -
d`` for a win in ``d`` plies (fastest win), ``-(WIN - d)`` for a loss in ``d``
(slowest loss), 0 for a draw. Tables are cached on disk in the user cache
directory, keyed by the rules version and the table format.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from protocol.errors import ArenaError
from protocol.rules import RULES_VERSION, State, Variant, find_variant

Node = tuple[tuple[int, ...], tuple[int, ...], int]
Codes = npt.NDArray[np.int64]
Scores = npt.NDArray[np.int16]

#: Distance given to drawn positions that can go on for ever (tactic-toe).
ENDLESS = -1
#: A score of ``WIN - d`` is a win in ``d`` plies for the side to move.
WIN = 1000
#: Bumped when the cached arrays change meaning.
TABLE_FORMAT = 2
#: The largest boards the table covers: every reachable position is built and kept.
MAX_CELLS = 16


class Unsolvable(ArenaError):
    """The variant has too many positions to solve here."""

    code = "unsolvable_variant"


def solvable(variant: Variant) -> bool:
    """Whether the table covers ``variant``: 3x3 games and m,n,k boards of up to 16 cells."""
    return variant.cells <= 9 or (variant.max_marks is None and variant.cells <= MAX_CELLS)


def refusal(variant_name: str) -> str | None:
    """Why the table cannot play ``variant_name``, or None when it can."""
    variant = find_variant(variant_name)
    if solvable(variant):
        return None
    return (
        f"{variant.name} has too many positions for the solved table; it covers classic, tactic-toe "
        f"and m,n,k boards of up to {MAX_CELLS} cells (e.g. 4x4k4)"
    )


@dataclass
class Table:
    """The value and distance to the end of every reachable position of one variant.

    ``codes`` is sorted; ``scores[i]`` is the score of position ``codes[i]``. A
    value is from the side to move: +1 win, 0 draw, -1 loss. A distance is the
    number of plies to the end under perfect play (fastest win, slowest loss); a
    draw's distance is the plies to a full board, or `ENDLESS` where marks vanish.
    """

    variant: Variant
    codes: Codes
    scores: Scores
    seconds: float = 0.0
    from_cache: bool = field(default=False)

    def __len__(self) -> int:
        return len(self.codes)

    def code(self, state: State) -> int:
        """The table's name for ``state``'s position."""
        if self.variant.max_marks is not None:
            return state.key()
        return ternary(state.x, state.o, self.variant.cells)

    def score(self, state: State) -> int:
        code = self.code(state)
        i = int(np.searchsorted(self.codes, code))
        if i == len(self.codes) or int(self.codes[i]) != code:
            raise Unsolvable(f"position not reachable in {self.variant.name}: {state.render()}")
        return int(self.scores[i])

    def _decode(self, score: int, marks: int) -> tuple[int, int]:
        if score > 0:
            return 1, WIN - score
        if score < 0:
            return -1, WIN + score
        return 0, ENDLESS if self.variant.max_marks is not None else self.variant.cells - marks

    def lookup(self, state: State) -> tuple[int, int]:
        """(value, distance) of ``state``."""
        return self._decode(self.score(state), (state.x | state.o).bit_count())

    def value(self, state: State) -> int:
        return self.lookup(state)[0]

    def distance(self, state: State) -> int:
        return self.lookup(state)[1]

    def move_values(self, state: State) -> dict[int, tuple[int, int]]:
        """For each legal move: (value for the mover, plies to the end counting this move)."""
        out = {}
        for m in state.legal_moves():
            v, d = self.lookup(state._play_unchecked(m))
            out[m] = (-v, d + 1 if d != ENDLESS else ENDLESS)
        return out

    def best_moves(self, state: State) -> list[int]:
        """The value-preserving moves: fastest win, slowest loss, any draw."""
        scored = {m: -self.score(state._play_unchecked(m)) for m in state.legal_moves()}
        best = max(scored.values())
        if best == 0:
            return sorted(m for m, s in scored.items() if s == 0)
        return sorted(m for m, s in scored.items() if s == best)

    def counts(self) -> tuple[int, int, int]:
        """How many positions are won, drawn and lost for the side to move."""
        wins = int(np.count_nonzero(self.scores > 0))
        losses = int(np.count_nonzero(self.scores < 0))
        return wins, len(self.scores) - wins - losses, losses

    def longest_win(self) -> int:
        """The most plies any forced win takes."""
        won = self.scores[self.scores > 0]
        return WIN - int(won.min()) if len(won) else 0

    def entries(self) -> Iterator[tuple[Node, tuple[int, int]]]:
        """Every position as ``(x_marks, o_marks, to_move)`` with its (value, distance):
        marks oldest first where they vanish, ascending otherwise. Slow: for tests."""
        n = self.variant.cells
        vanish = self.variant.max_marks is not None
        for code, score in zip(self.codes.tolist(), self.scores.tolist(), strict=True):
            if vanish:
                tm, o, x = code & 1, _slots(code >> 1 & 0xFFF), _slots(code >> 13)
            else:
                digits = [code // 3**c % 3 for c in range(n)]
                x = tuple(c for c, d in enumerate(digits) if d == 1)
                o = tuple(c for c, d in enumerate(digits) if d == 2)
                tm = int(len(x) > len(o))
            yield (x, o, tm), self._decode(score, len(x) + len(o))


def _slots(packed: int) -> tuple[int, ...]:
    out = []
    while packed:
        out.append((packed & 0xF) - 1)
        packed >>= 4
    return tuple(reversed(out))


def ternary(x: int, o: int, cells: int) -> int:
    """The base-3 code of a board: digit ``c`` is 0 (empty), 1 (X) or 2 (O)."""
    code = 0
    for c in range(cells - 1, -1, -1):
        code = code * 3 + (x >> c & 1) + 2 * (o >> c & 1)
    return code


def build(variant: Variant) -> Table:
    """Solve ``variant`` from scratch (no cache).

    Raises:
        Unsolvable: the table does not cover ``variant``.
    """
    why = refusal(variant.name)
    if why is not None:
        raise Unsolvable(why)
    from bots.solver_build import build_layered, build_vanishing

    started = time.perf_counter()
    codes, scores = build_vanishing(variant) if variant.max_marks is not None else build_layered(variant)
    return Table(variant, codes, scores, time.perf_counter() - started)


def cache_path(variant: Variant) -> Path:
    import platformdirs

    name = f"table-{variant.name}-rules{RULES_VERSION}-format{TABLE_FORMAT}.npz"
    return Path(platformdirs.user_cache_dir("ttt-arena")) / name


_TABLES: dict[str, Table] = {}


def solve(variant_name: str, *, use_cache: bool = True) -> Table:
    """The solved table of ``variant_name``: from memory, the disk cache, or built now.

    Raises:
        UnknownVariant: no such variant.
        Unsolvable: the table does not cover the variant.
    """
    variant = find_variant(variant_name)
    if use_cache and variant.name in _TABLES:
        return _TABLES[variant.name]
    why = refusal(variant.name)
    if why is not None:
        raise Unsolvable(why)
    path = cache_path(variant)
    table = None
    if use_cache and path.exists():
        try:
            started = time.perf_counter()
            with np.load(path) as saved:
                codes, scores = saved["codes"].astype(np.int64), saved["scores"].astype(np.int16)
            table = Table(variant, codes, scores, time.perf_counter() - started, from_cache=True)
        except Exception:
            table = None  # a damaged cache is rebuilt
    if table is None:
        table = build(variant)
        if use_cache:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(path.name + ".tmp.npz")
                np.savez(tmp, codes=table.codes.astype(np.uint32), scores=table.scores)
                tmp.replace(path)
            except OSError:
                pass  # no cache dir: solve again next time
    if use_cache:
        _TABLES[variant.name] = table
    return table


__all__ = ["ENDLESS", "WIN", "Node", "Table", "Unsolvable", "build", "refusal", "solvable", "solve"]
