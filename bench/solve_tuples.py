"""The solver as it was before the array build: successors generated as tuples of
cells, one dict entry a position. bench/solve.py times it as a baseline.
"""

from __future__ import annotations

from collections import deque

from protocol.rules import Variant

Node = tuple[tuple[int, ...], tuple[int, ...], int]
ENDLESS = -1


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


def build(variant: Variant) -> dict[Node, tuple[int, int]]:
    """Solve ``variant`` the old way: the table as a dict of tuple positions."""
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
    return table


def _line(variant: Variant, queue: tuple[int, ...]) -> bool:
    own = 0
    for c in queue:
        own |= 1 << c
    return any(own & m == m for m in variant.lines)
