"""The `gomoku` strategy's board: counts kept per K-window, updated a move at a time.

Every K-window (a run of K cells: `Variant.lines`) holds a count of each side's
stones. A window with stones of one side only is alive for that side and worth
``weight[count]`` (`weights`); a window with both is dead. From the counts the board keeps,
without rescanning:

- ``score[side]``: the sum of the side's live windows;
- ``gain[side][cell]``: how much placing ``side`` on an empty ``cell`` changes
  ``score[side] - score[other]`` (windows it extends, windows of the other side it
  kills), so a move is scored before it is made;
- ``fours[side]``: windows with K-1 of the side's stones and no other (the empty
  cell wins next move); ``threes[side]``: windows with K-2 and no other (either
  empty cell makes a four);
- ``near[cell]``: stones within two cells (the search looks only there).

`place` and `take` are exact inverses, so the search makes and unmakes moves.
"""

from __future__ import annotations

import random
from itertools import compress
from operator import mul

from protocol.rules import Cell, State, Variant

#: A window of K stones: the game is won.
FIVE = 1 << 24
_RADIUS = 2
_SHIFT = 40
_HALF = 1 << (_SHIFT - 1)


_Step = tuple[int, int, int, tuple[tuple[int, int, int], ...]]


#: How much each stone in a live window multiplies its worth. Of 3, 4, 5, 6 and 8, 4 lost
#: the fewest games as O against `minimax` on the tuning seeds (docs/engines.md; against
#: 6, by about two standard deviations).
BASE = 4


def weights(k: int, base: int = BASE) -> list[int]:
    """Worth of a live window by count: 0, 1, 4, 16, ... (x ``base`` a stone), and `FIVE` at K."""
    return [0, *(base ** (i - 1) for i in range(1, k)), FIVE]


def split(packed: int) -> tuple[int, int]:
    """A packed gain (`Lines.packed`, or a step's change to it) as (X's, both sides')."""
    total = (packed + _HALF) >> _SHIFT
    return packed - (total << _SHIFT), total


class Lines:
    """Window counts for both sides (side 0 is X, 1 is O) on one variant's board.

    Each window's counts are one code, ``x_count * (K + 2) + o_count``; what a stone
    does to a window of a given code (gain and score changes, which threat sets it
    enters or leaves) is looked up in a table made once. Per cell it keeps X's gain
    and the sum of both sides' gains (the order moves are tried in, read by a C-level
    key); O's gain is the difference.
    """

    def __init__(self, variant: Variant, weight: list[int] | None = None) -> None:
        k = self.k = variant.k
        n = self.cells = variant.cells
        self.cols, self.rows = variant.cols, variant.rows
        masks = variant.lines
        self.window_cells: list[tuple[int, ...]] = [variant.window_cells[m] for m in masks]
        index = {m: i for i, m in enumerate(masks)}
        self.through: list[tuple[tuple[int, tuple[int, ...]], ...]] = [
            tuple((index[m], variant.window_cells[m]) for m in t) for t in variant.lines_through
        ]
        self.code: list[int] = [0] * len(masks)
        self.stone: list[int] = [-1] * n
        self.score = [0, 0]
        self.fours: list[set[int]] = [set(), set()]
        self.threes: list[set[int]] = [set(), set()]
        self.near = [0] * n
        self.stones = 0
        #: Zobrist hash of the stones (a fixed seed: the same position, the same hash).
        keys = random.Random(n * 31 + k)
        self.zobrist = [[keys.getrandbits(62) for _ in range(n)] for _ in (0, 1)]
        self.hash = 0
        w = self.weight = weight or weights(k)

        def gain(a: int, b: int) -> int:  # one window's share of an empty cell's gain for a side
            if b == 0:
                return w[a + 1] - w[a] if a < k else 0
            return w[b] if a == 0 and b < k else 0

        def score(a: int, b: int) -> int:
            return w[a] if b == 0 else 0

        size = self._size = k + 2
        self.step_by: tuple[int, int] = (size, 1)
        #: For each side and window code: None if the window is dead before and after the
        #: side's stone, else (packed gain change, X score change, O score change,
        #: threat-set changes as (side, set: 3 or 4, +1 add / -1 remove) triples).
        self.steps: list[list[_Step | None]] = []
        for side in (0, 1):
            table: list[_Step | None] = []
            for code in range(size * size):
                x, o = divmod(code, size)
                nx, no = (x + 1, o) if side == 0 else (x, o + 1)
                if (x and o) or nx + no > k or nx > k or no > k:
                    table.append(None)
                    continue
                dx = gain(nx, no) - gain(x, o)
                do = gain(no, nx) - gain(o, x)
                events = []
                for who, (before, after) in ((0, ((x, o), (nx, no))), (1, ((o, x), (no, nx)))):
                    for kind, need in ((3, k - 2), (4, k - 1)):
                        was = before[0] == need and before[1] == 0
                        now = after[0] == need and after[1] == 0
                        if was != now:
                            events.append((who, kind, 1 if now else -1))
                table.append((
                    dx + ((dx + do) << _SHIFT),
                    score(nx, no) - score(x, o),
                    score(no, nx) - score(o, x),
                    tuple(events),
                ))  # fmt: skip
            self.steps.append(table)
        #: The threat-set changes alone, by side and window code (what `push` needs).
        self.events: list[list[tuple[tuple[int, int, int], ...]]] = [
            [change[3] if change is not None else () for change in table] for table in self.steps
        ]
        #: Per cell, X's gain plus ``2**40`` times both sides' gains together: one number
        #: to update, and sorting by it sorts by the sum (the order moves are tried in).
        self.packed: list[int] = [len(self.through[c]) * gain(0, 0) * (1 + (2 << _SHIFT)) for c in range(n)]
        #: 1 for an empty cell, 0 for a stone.
        self.empty: list[int] = [1] * n
        self._all = range(n)
        self.around: list[tuple[int, ...]] = []
        for c in range(n):
            r0, c0 = divmod(c, self.cols)
            self.around.append(tuple(
                r * self.cols + q
                for r in range(max(0, r0 - _RADIUS), min(self.rows, r0 + _RADIUS + 1))
                for q in range(max(0, c0 - _RADIUS), min(self.cols, c0 + _RADIUS + 1))
                if (r, q) != (r0, c0)
            ))  # fmt: skip

    @classmethod
    def of(cls, state: State) -> Lines:
        """The board of ``state``, its stones placed."""
        lines = cls(state.variant)
        for c in range(state.variant.cells):
            if state.x >> c & 1:
                lines.place(c, 0)
            elif state.o >> c & 1:
                lines.place(c, 1)
        return lines

    def place(self, cell: Cell, side: int) -> None:
        """Put ``side``'s stone on the empty ``cell``."""
        self.stone[cell] = side
        self.empty[cell] = 0
        self.stones += 1
        self.hash ^= self.zobrist[side][cell]
        code, step, packed, score = self.code, self.steps[side], self.packed, self.score
        inc = self.step_by[side]
        for w, cells in self.through[cell]:
            before = code[w]
            code[w] = before + inc
            change = step[before]
            if change is None:
                continue
            d, sx, so, events = change
            score[0] += sx
            score[1] += so
            if events:
                for who, kind, add in events:
                    found = self.fours[who] if kind == 4 else self.threes[who]
                    if add > 0:
                        found.add(w)
                    else:
                        found.discard(w)
            for e in cells:
                packed[e] += d
        near = self.near
        for e in self.around[cell]:
            near[e] += 1

    def take(self, cell: Cell) -> None:
        """Undo `place` on ``cell`` (the last stone placed there)."""
        side = self.stone[cell]
        self.stone[cell] = -1
        self.empty[cell] = 1
        self.stones -= 1
        self.hash ^= self.zobrist[side][cell]
        code, step, packed, score = self.code, self.steps[side], self.packed, self.score
        inc = self.step_by[side]
        for w, cells in self.through[cell]:
            before = code[w] - inc
            code[w] = before
            change = step[before]
            if change is None:
                continue
            d, sx, so, events = change
            score[0] -= sx
            score[1] -= so
            if events:
                for who, kind, add in events:
                    found = self.fours[who] if kind == 4 else self.threes[who]
                    if add < 0:
                        found.add(w)
                    else:
                        found.discard(w)
            for e in cells:
                packed[e] -= d
        near = self.near
        for e in self.around[cell]:
            near[e] -= 1

    def push(self, cell: Cell, side: int) -> None:
        """`place` for the threat searches: only the stones, the hash, the window codes and
        the threat sets follow (scores, gains and ``near`` go stale until the matching
        `pop`, so nothing in between may read them). About twice as fast."""
        self.stone[cell] = side
        self.empty[cell] = 0
        self.hash ^= self.zobrist[side][cell]
        code, events = self.code, self.events[side]
        inc = self.step_by[side]
        for w, _ in self.through[cell]:
            before = code[w]
            code[w] = before + inc
            if events[before]:
                for who, kind, add in events[before]:
                    found = self.fours[who] if kind == 4 else self.threes[who]
                    if add > 0:
                        found.add(w)
                    else:
                        found.discard(w)

    def pop(self, cell: Cell) -> None:
        """Undo `push` on ``cell``."""
        side = self.stone[cell]
        self.stone[cell] = -1
        self.empty[cell] = 1
        self.hash ^= self.zobrist[side][cell]
        code, events = self.code, self.events[side]
        inc = self.step_by[side]
        for w, _ in self.through[cell]:
            before = code[w] - inc
            code[w] = before
            if events[before]:
                for who, kind, add in events[before]:
                    found = self.fours[who] if kind == 4 else self.threes[who]
                    if add < 0:
                        found.add(w)
                    else:
                        found.discard(w)

    def gains(self, cell: Cell) -> tuple[int, int]:
        """(X's gain, O's gain) at ``cell``: how much a stone there changes that side's
        score minus the other's."""
        x, total = split(self.packed[cell])
        return x, total - x

    def gain(self, side: int, cell: Cell) -> int:
        v = self.packed[cell]
        total = (v + _HALF) >> _SHIFT
        x = v - (total << _SHIFT)
        return total - x if side else x

    def wins(self, side: int) -> set[Cell]:
        """Empty cells where ``side`` makes K in a row now."""
        stone = self.stone
        return {e for w in self.fours[side] for e in self.window_cells[w] if stone[e] < 0}

    def four_moves(self, side: int) -> set[Cell]:
        """Empty cells where ``side`` makes a four (a window one stone short, none of the other's)."""
        stone = self.stone
        return {e for w in self.threes[side] for e in self.window_cells[w] if stone[e] < 0}

    def candidates(self) -> list[Cell]:
        """Empty cells near a stone (the centre on an empty board)."""
        if not self.stones:
            return [(self.rows // 2) * self.cols + self.cols // 2]
        return list(compress(self._all, map(mul, self.near, self.empty)))
