"""The solver's build: every reachable position as an array of integer codes, then
retrograde analysis over whole arrays (numpy), never one `State` at a time.

Codes are those of `bots.solver.Table.code`; scores as in `bots.solver`.
"""

from __future__ import annotations

from itertools import permutations

import numpy as np
import numpy.typing as npt

from bots.solver import WIN, Codes, Scores
from protocol.rules import Variant

Flags = npt.NDArray[np.bool_]
_SLOT = 4  # bits per queue slot: cell + 1, 0 for an empty slot


def _has_line(board: Codes, lines: tuple[int, ...]) -> Flags:
    out = np.zeros(board.shape, dtype=bool)
    for mask in lines:
        out |= (board & mask) == mask
    return out


# --- boards that fill up: a layer per ply, solved from the last layer back ------------

_HALF = 8  # cells decoded at once from a base-3 code through one lookup table


class _Halves:
    """Bitboards of each side from a base-3 code, ``_HALF`` cells per table lookup."""

    def __init__(self) -> None:
        size = 3**_HALF
        digits = np.arange(size)
        self.x = np.zeros(size, dtype=np.int64)
        self.o = np.zeros(size, dtype=np.int64)
        for c in range(_HALF):
            digits, d = np.divmod(digits, 3)
            self.x |= (d == 1).astype(np.int64) << c
            self.o |= (d == 2).astype(np.int64) << c

    def boards(self, codes: npt.NDArray[np.int32], cells: int) -> tuple[Codes, Codes]:
        x, o = np.zeros(codes.shape, dtype=np.int64), np.zeros(codes.shape, dtype=np.int64)
        for start in range(0, cells, _HALF):
            part = codes // 3**start % 3**_HALF
            x |= self.x[part] << start
            o |= self.o[part] << start
        return x, o


def build_layered(variant: Variant) -> tuple[Codes, Scores]:
    """Base-3 codes (`bots.solver.ternary`) of every reachable position, sorted, with their scores.

    Positions with ``p`` marks form layer ``p``; a layer's successors all lie in the
    next one, so scores are settled from the last layer back. A code is also the
    position's index in one flag array (and one score array) over all ``3**cells``
    boards, so neither step hashes, sorts or searches.
    """
    n = variant.cells
    halves = _Halves()
    powers = [3**c for c in range(n)]
    layers: list[npt.NDArray[np.int32]] = [np.zeros(1, dtype=np.int32)]
    ends: list[Flags] = []
    lines: list[Flags] = []
    reached = np.zeros(3**n, dtype=bool)
    while True:
        ply = len(layers) - 1
        codes = layers[-1]
        x, o = halves.boards(codes, n)
        last = o if ply % 2 == 0 else x  # the last mover's marks
        line = _has_line(last, variant.lines)
        over = line | (ply == n)
        ends.append(over)
        lines.append(line)
        live = np.flatnonzero(~over)
        if not len(live):
            break
        occupied = (x | o)[live]
        digit = 1 if ply % 2 == 0 else 2
        base = codes[live]
        reached[:] = False
        for c in range(n):
            reached[base[(occupied >> c & 1) == 0] + digit * powers[c]] = True
        layers.append(np.flatnonzero(reached).astype(np.int32))
    del reached
    score_of = np.zeros(3**n, dtype=np.int16)
    known = np.zeros(3**n, dtype=bool)
    for ply in range(len(layers) - 1, -1, -1):
        codes, over = layers[ply], ends[ply]
        score = np.where(lines[ply], -WIN, 0).astype(np.int16)
        live = np.flatnonzero(~over)
        if len(live):
            base = codes[live]
            x, o = halves.boards(base, n)
            occupied = x | o
            digit = 1 if ply % 2 == 0 else 2
            best = np.full(len(live), -2 * WIN, dtype=np.int16)
            for c in range(n):
                legal = np.flatnonzero((occupied >> c & 1) == 0)
                child = score_of[base[legal] + digit * powers[c]]
                best[legal] = np.maximum(best[legal], -child + np.sign(child))
            score[live] = best
        score_of[codes] = score
        known[codes] = True
    found: Codes = np.flatnonzero(known).astype(np.int64)
    found_scores: Scores = score_of[found]
    return found, found_scores


# --- marks that vanish: breadth first over queue codes, then rounds of retrograde ----


class _Queues:
    """Every queue of at most ``limit`` distinct cells, oldest first, numbered in the
    order of their packed codes (4-bit slots, cell + 1): the code, the cells each
    holds, the queue after pushing a cell, and whether it makes a line.

    A position is then one dense number ``(x_queue * count + o_queue) * 2 + to_move``,
    ordered as its `State.key`, so a flag array over those numbers replaces hashing.
    """

    def __init__(self, variant: Variant) -> None:
        limit = variant.max_marks or 0
        n = variant.cells
        queues = sorted((q for length in range(limit + 1) for q in permutations(range(n), length)), key=_pack)
        number = {q: i for i, q in enumerate(queues)}
        self.count = len(queues)
        self.bits = _SLOT * limit
        self.code = np.array([_pack(q) for q in queues], dtype=np.int64)
        masks = [sum(1 << c for c in q) for q in queues]
        self.cells = np.array(masks, dtype=np.int64)
        self.line = np.array([any(m & w == w for w in variant.lines) for m in masks], dtype=bool)
        self.push = np.array(
            [[number[(*q[1:], c) if len(q) == limit else (*q, c)] if c not in q else 0 for c in range(n)]
             for q in queues],
            dtype=np.int64,
        )  # fmt: skip


def _pack(queue: tuple[int, ...]) -> int:
    code = 0
    for c in queue:
        code = code << _SLOT | (c + 1)
    return code


def _split(ids: Codes, q: _Queues) -> tuple[Codes, Codes, Codes]:
    pair, tm = np.divmod(ids, 2)
    xq, oq = np.divmod(pair, q.count)
    return xq, oq, tm


def _ended(ids: Codes, q: _Queues, full: int) -> tuple[Flags, Flags]:
    """(finished, won by the last mover): a line for the last mover, or a full board."""
    xq, oq, tm = _split(ids, q)
    won = q.line[np.where(tm == 1, xq, oq)]
    return won | ((q.cells[xq] | q.cells[oq]) == full), won


def _children(ids: Codes, q: _Queues, n: int) -> list[tuple[npt.NDArray[np.intp], Codes]]:
    """For each cell: the indices of ``ids`` that may take it, and the positions reached."""
    xq, oq, tm = _split(ids, q)
    own = np.where(tm == 0, xq, oq)
    occupied = q.cells[xq] | q.cells[oq]
    out = []
    for c in range(n):
        legal = np.flatnonzero((occupied >> c & 1) == 0)
        pushed = q.push[own[legal], c]
        x_moves = tm[legal] == 0
        child = np.where(x_moves, (pushed * q.count + oq[legal]) * 2 + 1, (xq[legal] * q.count + pushed) * 2)
        out.append((legal, child))
    return out


def build_vanishing(variant: Variant) -> tuple[Codes, Scores]:
    """`State.key` codes of every reachable position, sorted, with their scores.

    Positions repeat, so this is a graph: wins and losses spread back from the ends
    one distance at a time (a position is won once a move reaches a lost one, lost
    once every move reaches a won one); whatever is never reached is a draw.
    """
    q = _Queues(variant)
    n, full = variant.cells, variant.full
    space = q.count * q.count * 2
    seen = np.zeros(space, dtype=bool)
    seen[0] = True
    frontier: Codes = np.zeros(1, dtype=np.int64)
    while len(frontier):
        live = frontier[~_ended(frontier, q, full)[0]]
        reached = np.zeros(space, dtype=bool)
        for _, child in _children(live, q, n):
            reached[child] = True
        reached &= ~seen
        seen |= reached
        frontier = np.flatnonzero(reached)
    ids = np.flatnonzero(seen)
    rank = np.cumsum(seen) - 1  # dense number -> position in ``ids``
    over, won = _ended(ids, q, full)
    live = np.flatnonzero(~over)
    parents, kids = [], []
    for legal, child in _children(ids[live], q, n):
        parents.append(live[legal])
        kids.append(rank[child])
    parent, child = np.concatenate(parents), np.concatenate(kids)
    total = len(ids)
    left = np.bincount(parent, minlength=total)
    score = np.where(won, -WIN, 0).astype(np.int16)
    done = over.copy()
    lost, winning = won, np.zeros(total, dtype=bool)
    distance = 0
    while lost.any() or winning.any():
        distance += 1
        keep = ~done[parent]
        parent, child = parent[keep], child[keep]
        new_win = np.zeros(total, dtype=bool)
        new_win[parent[lost[child]]] = True
        left -= np.bincount(parent[winning[child]], minlength=total)
        new_loss = (left == 0) & ~done & ~new_win
        score[new_win] = WIN - distance
        score[new_loss] = -(WIN - distance)
        done |= new_win | new_loss
        lost, winning = new_loss, new_win
    xq, oq, tm = _split(ids, q)
    codes = (q.code[xq] << (q.bits + 1)) | (q.code[oq] << 1) | tm
    return codes, score
