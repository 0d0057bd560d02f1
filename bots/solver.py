"""Retrograde analysis of every position reachable from the empty board.

Positions are ``(x_marks, o_marks, to_move)`` with each side's marks as a tuple of
cells: oldest first where marks vanish (tactic-toe), ascending otherwise. Tactic-toe
positions repeat, so this works on the position graph, not a tree: wins and losses
spread backwards from the ends in order of distance, and whatever is never reached
is a draw (neither side can force an end).

The table is cached on disk in the user cache directory, keyed by the rules version.
"""

from __future__ import annotations

import pickle
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from protocol.errors import ArenaError
from protocol.rules import RULES_VERSION, Mark, State, Variant, find_variant

Node = tuple[tuple[int, ...], tuple[int, ...], int]

#: Distance given to drawn positions that can go on for ever (tactic-toe).
ENDLESS = -1


class Unsolvable(ArenaError):
    """The variant has too many positions to solve here (only 3x3 boards are)."""

    code = "unsolvable_variant"


@dataclass
class Table:
    """The value and distance to the end of every reachable position of one variant.

    ``value`` is from the side to move: +1 win, 0 draw, -1 loss. ``distance`` is the
    number of plies to the end under perfect play (fastest win, slowest loss); a
    draw's distance is the plies to a full board, or `ENDLESS` where marks vanish.
    """

    variant: Variant
    values: dict[Node, tuple[int, int]]
    seconds: float = 0.0
    from_cache: bool = field(default=False)

    @staticmethod
    def node(state: State) -> Node:
        """The table's name for ``state``'s position."""
        if state.variant.max_marks is not None:
            return (state.queues[0], state.queues[1], int(state.to_move))
        return (state.marks(Mark.X), state.marks(Mark.O), int(state.to_move))

    def lookup(self, state: State) -> tuple[int, int]:
        try:
            return self.values[self.node(state)]
        except KeyError:
            raise Unsolvable(f"position not reachable in {self.variant.name}: {state.render()}") from None

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
        scored = self.move_values(state)
        best = max(v for v, _ in scored.values())
        same = {m: d for m, (v, d) in scored.items() if v == best}
        if best == 1:
            target = min(same.values())
        elif best == -1:
            target = max(same.values())
        else:
            return sorted(same)
        return sorted(m for m, d in same.items() if d == target)


def solvable(variant: Variant) -> bool:
    return variant.cells <= 9


def _successors(variant: Variant):  # type: ignore[no-untyped-def]
    lines = variant.lines
    full = variant.full
    limit = variant.max_marks
    cells = range(variant.cells)

    def won(queue: tuple[int, ...]) -> bool:
        own = 0
        for c in queue:
            own |= 1 << c
        return any(own & m == m for m in lines)

    def children(node: Node) -> list[tuple[Node, bool]]:
        xq, oq, tm = node
        own = xq if tm == 0 else oq
        taken = 0
        for c in xq + oq:
            taken |= 1 << c
        out = []
        for c in cells:
            if taken >> c & 1:
                continue
            if limit is None:
                q = tuple(sorted((*own, c)))
            elif len(own) >= limit:
                q = (*own[1:], c)
            else:
                q = (*own, c)
            child = (q, oq, 1) if tm == 0 else (xq, q, 0)
            end = won(q) or (taken | 1 << c) == full
            out.append((child, end))
        return out

    return children


def build(variant: Variant) -> Table:
    """Solve ``variant`` from scratch (no cache)."""
    if not solvable(variant):
        raise Unsolvable(f"{variant.name} has too many positions to solve; only 3x3 boards are solvable")
    started = time.perf_counter()
    children = _successors(variant)
    start: Node = ((), (), 0)
    index = {start: 0}
    nodes = [start]
    preds: list[list[int]] = [[]]
    left: list[int] = [0]
    values: list[int] = [0]
    dist: list[int] = [0]
    done = [False]
    queue: deque[int] = deque()
    i = 0
    while i < len(nodes):
        if done[i]:
            i += 1
            continue
        kids = children(nodes[i])
        left[i] = len(kids)
        for child, end in kids:
            j = index.get(child)
            if j is None:
                j = index[child] = len(nodes)
                nodes.append(child)
                preds.append([])
                left.append(0)
                values.append(0)
                dist.append(0)
                done.append(False)
                if end:
                    values[j] = -1 if _line(variant, child[0] if child[2] == 1 else child[1]) else 0
                    done[j] = True
                    queue.append(j)
            preds[j].append(i)
        i += 1
    while queue:
        j = queue.popleft()
        if values[j] == 0:
            continue  # full-board draws: handled below
        for p in preds[j]:
            if done[p]:
                continue
            if values[j] == -1:
                values[p], dist[p], done[p] = 1, dist[j] + 1, True
                queue.append(p)
            else:
                left[p] -= 1
                if left[p] == 0:
                    values[p], dist[p], done[p] = -1, dist[j] + 1, True
                    queue.append(p)
    cells = variant.cells
    table: dict[Node, tuple[int, int]] = {}
    for n, node in enumerate(nodes):
        if done[n] or variant.max_marks is not None:
            d = dist[n] if done[n] else ENDLESS
        else:
            d = cells - len(node[0]) - len(node[1])
        table[node] = (values[n], d)
    return Table(variant, table, time.perf_counter() - started)


def _line(variant: Variant, queue: tuple[int, ...]) -> bool:
    own = 0
    for c in queue:
        own |= 1 << c
    return any(own & m == m for m in variant.lines)


def cache_path(variant: Variant) -> Path:
    import platformdirs

    return (
        Path(platformdirs.user_cache_dir("ttt-arena")) / f"table-{variant.name}-rules{RULES_VERSION}.pickle"
    )


_TABLES: dict[str, Table] = {}


def solve(variant_name: str, *, use_cache: bool = True) -> Table:
    """The solved table of ``variant_name``: from memory, the disk cache, or built now.

    Raises:
        UnknownVariant: no such variant.
        Unsolvable: the variant is too large to solve.
    """
    variant = find_variant(variant_name)
    if use_cache and variant.name in _TABLES:
        return _TABLES[variant.name]
    if not solvable(variant):
        raise Unsolvable(f"{variant.name} has too many positions to solve; only 3x3 boards are solvable")
    path = cache_path(variant)
    table = None
    if use_cache and path.exists():
        try:
            started = time.perf_counter()
            with path.open("rb") as f:
                values = pickle.load(f)
            table = Table(variant, values, time.perf_counter() - started, from_cache=True)
        except Exception:
            table = None  # a damaged cache is rebuilt
    if table is None:
        table = build(variant)
        if use_cache:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                with tmp.open("wb") as f:
                    pickle.dump(table.values, f, protocol=pickle.HIGHEST_PROTOCOL)
                tmp.replace(path)
            except OSError:
                pass  # no cache dir: solve again next time
    if use_cache:
        _TABLES[variant.name] = table
    return table
