"""Static facts about each game: board size, line length, mark limit, lines, symmetries.

A `Variant` is built once per name and cached, so identity comparison is enough
and states can hold a reference cheaply. Cells are numbered row-major from 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache

from protocol.errors import UnknownVariant

#: A cell number, row-major from 0.
Cell = int
#: A permutation of cells: ``perm[cell]`` is where ``cell`` goes.
Symmetry = tuple[Cell, ...]

MIN_SIDE, MAX_SIDE = 3, 15
MNK_PATTERN = re.compile(r"^(\d{1,2})x(\d{1,2})k(\d{1,2})$")
VALID_FORMS = (
    "classic, tactic-toe, or RxCkK with 3 <= R, C <= 15 and 3 <= K <= max(R, C), e.g. 4x4k4, 15x15k5"
)

#: Bumped whenever a rule changes, so cached solver tables are rebuilt.
RULES_VERSION = 1
DEFAULT_PLY_CAP = 200


class Variant:
    """One game of the family. Compare by identity; get instances from `find_variant`."""

    __slots__ = (
        "cells",
        "cols",
        "default_ply_cap",
        "full",
        "k",
        "lines",
        "lines_through",
        "max_marks",
        "name",
        "rows",
        "spans_through",
        "summary",
        "symmetries",
        "window_cells",
        "window_step",
    )

    def __init__(
        self,
        name: str,
        rows: int,
        cols: int,
        k: int,
        *,
        max_marks: int | None = None,
        summary: str = "",
    ) -> None:
        self.name = name
        self.rows = rows
        self.cols = cols
        self.k = k
        self.cells = rows * cols
        #: Tactic-toe keeps at most this many marks per player; None means no limit.
        self.max_marks = max_marks
        #: Only variants whose marks can vanish can repeat a position.
        self.default_ply_cap = DEFAULT_PLY_CAP if max_marks is not None else None
        self.full = (1 << self.cells) - 1
        self.summary = summary
        self.lines: tuple[int, ...] = tuple(_line_masks(rows, cols, k))
        through: list[list[int]] = [[] for _ in range(self.cells)]
        for mask in self.lines:
            for cell in _bits(mask):
                through[cell].append(mask)
        #: Bit masks of every K-window passing through each cell.
        self.lines_through: tuple[tuple[int, ...], ...] = tuple(tuple(t) for t in through)
        #: For each cell, the cells of its K-windows along each direction, one mask a
        #: direction: a line through the cell needs K marks inside one of them.
        self.spans_through: tuple[tuple[int, ...], ...] = tuple(
            tuple(_spans(masks, cols)) for masks in self.lines_through
        )
        self.symmetries: tuple[Symmetry, ...] = _symmetries(rows, cols)
        #: Each K-window's cells, ascending, and the (row, col) step along it.
        self.window_cells: dict[int, tuple[int, ...]] = {m: tuple(_bits(m)) for m in self.lines}
        self.window_step: dict[int, tuple[int, int]] = {}
        for m, cells in self.window_cells.items():
            (r0, c0), (r1, c1) = divmod(cells[0], cols), divmod(cells[1], cols)
            self.window_step[m] = (r1 - r0, c1 - c0)

    @property
    def size(self) -> str:
        return f"{self.rows}x{self.cols}"

    def cell_name(self, cell: Cell) -> str:
        """``b2``-style name of ``cell``: column letter, row number from 1."""
        return cell_name(cell, self.cols)

    def cell_named(self, text: str) -> Cell | None:
        """The cell named ``text`` (``h8``, ``a10``, ``:h8``) on this board, or None."""
        text = text.strip().lower().lstrip(":")
        if len(text) < 2 or text[0] not in COLUMN_LETTERS[: self.cols] or not text[1:].isdigit():
            return None
        row = int(text[1:]) - 1
        if not 0 <= row < self.rows:
            return None
        return row * self.cols + COLUMN_LETTERS.index(text[0])

    def __repr__(self) -> str:
        return f"Variant({self.name!r})"


#: Column names, left to right (boards are at most 15 wide).
COLUMN_LETTERS = "abcdefghijklmno"


def cell_name(cell: Cell, cols: int) -> str:
    """``b2``-style name of ``cell`` on a board ``cols`` wide: column letter, row from 1."""
    row, col = divmod(cell, cols)
    return f"{COLUMN_LETTERS[col]}{row + 1}"


def _bits(mask: int) -> Iterator[int]:
    """Yield the set bit positions of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _line_masks(rows: int, cols: int, k: int) -> Iterator[int]:
    for r in range(rows):
        for c in range(cols):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                end_r, end_c = r + dr * (k - 1), c + dc * (k - 1)
                if 0 <= end_r < rows and 0 <= end_c < cols:
                    mask = 0
                    for i in range(k):
                        mask |= 1 << ((r + dr * i) * cols + c + dc * i)
                    yield mask


def _spans(masks: tuple[int, ...], cols: int) -> Iterator[int]:
    """The union of ``masks`` (windows through one cell) in each direction they run."""
    spans: dict[int, int] = {}
    for mask in masks:
        low = (mask & -mask).bit_length() - 1
        rest = mask & (mask - 1)
        step = (rest & -rest).bit_length() - 1 - low  # 1, cols, cols + 1 or cols - 1
        spans[step] = spans.get(step, 0) | mask
    yield from spans.values()


def _symmetries(rows: int, cols: int) -> tuple[Symmetry, ...]:
    """The board's symmetries, identity first: 8 on a square board, 4 otherwise."""
    maps: list[Callable[[int, int], tuple[int, int]]] = [
        lambda r, c: (r, c),
        lambda r, c: (r, cols - 1 - c),
        lambda r, c: (rows - 1 - r, c),
        lambda r, c: (rows - 1 - r, cols - 1 - c),
    ]
    if rows == cols:
        n = rows - 1
        maps += [
            lambda r, c: (c, r),
            lambda r, c: (c, n - r),
            lambda r, c: (n - c, r),
            lambda r, c: (n - c, n - r),
        ]
    result = []
    for f in maps:
        perm = []
        for cell in range(rows * cols):
            r2, c2 = f(*divmod(cell, cols))
            perm.append(r2 * cols + c2)
        result.append(tuple(perm))
    return tuple(result)


CLASSIC_SUMMARY = "3x3, three in a row wins; a full board is a draw."
TACTIC_SUMMARY = (
    "3x3, three in a row wins; each player keeps at most 3 marks, the oldest vanishes "
    "as the 4th is placed; threefold repetition or the ply cap is a draw."
)


@cache
def find_variant(name: str) -> Variant:
    """Return the variant called ``name``.

    Raises:
        UnknownVariant: the name is not ``classic``, ``tactic-toe`` or a valid ``RxCkK``.
    """
    if not isinstance(name, str):
        raise UnknownVariant(f"variant name must be a string; valid forms: {VALID_FORMS}")
    if name == "classic":
        return Variant("classic", 3, 3, 3, summary=CLASSIC_SUMMARY)
    if name == "tactic-toe":
        return Variant("tactic-toe", 3, 3, 3, max_marks=3, summary=TACTIC_SUMMARY)
    match = MNK_PATTERN.match(name)
    if match:
        rows, cols, k = (int(g) for g in match.groups())
        if f"{rows}x{cols}k{k}" == name and (
            MIN_SIDE <= rows <= MAX_SIDE and MIN_SIDE <= cols <= MAX_SIDE and 3 <= k <= max(rows, cols)
        ):
            return Variant(
                name,
                rows,
                cols,
                k,
                summary=f"{rows}x{cols}, {k} or more in a row wins; a full board is a draw.",
            )
    raise UnknownVariant(f"unknown variant {name!r}; valid forms: {VALID_FORMS}")


#: Variants listed by `ttt variants`; any other RxCkK is found on demand.
FEATURED = ("classic", "tactic-toe", "4x4k4", "5x5k4", "6x7k4", "15x15k5")
