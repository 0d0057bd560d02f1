"""Every position a variant can reach: the walk solvers, proofs and benchmarks share."""

from __future__ import annotations

from collections import deque

from protocol.rules.state import State
from protocol.rules.variants import Variant


def reachable(variant: Variant | str) -> list[State]:
    """Every state reachable from the empty board, once each by `State.key`: the empty
    board first, then breadth first (the same order every run), finished games included.

    States are bare positions (``draw_rules=False``): no repetition history, no ply cap.
    Only small boards fit in memory (classic: 5,478 states; tactic-toe: 128,170).
    """
    start = State.start(variant, draw_rules=False)
    seen = {start.key()}
    out = [start]
    queue = deque([start])
    while queue:
        state = queue.popleft()
        for cell in state.legal_moves():  # none once the game is over
            child = state._play_unchecked(cell)
            key = child.key()
            if key not in seen:
                seen.add(key)
                out.append(child)
                queue.append(child)
    return out
