"""`minimax`: negamax with alpha-beta, a transposition table on the canonical key,
move ordering and iterative deepening under a time budget."""

from __future__ import annotations

import random
import time

from bots.strategies.base import StrategyError, bare
from bots.strategies.rules import candidates
from protocol.rules import Cell, State

WIN = 1000


class _OutOfTime(Exception):
    pass


class MinimaxStrategy:
    """Scores prefer the fastest win and the slowest loss; a position repeated on the
    search path scores as a draw; boards too large to search to the end are scored by
    their open lines."""

    name = "minimax"

    def __init__(self, think_ms: int = 1000, depth: int | None = None) -> None:
        if isinstance(think_ms, bool) or not isinstance(think_ms, int) or think_ms < 1:
            raise StrategyError(f"think_ms must be a positive int, not {think_ms!r}")
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
            raise StrategyError(f"depth must be a positive int, not {depth!r}")
        self.think_ms = think_ms
        self.depth = depth
        self.nodes = 0

    def choose(self, state: State, rng: random.Random) -> Cell:
        s = bare(state)
        moves = list(candidates(s))
        rng.shuffle(moves)
        deadline = time.perf_counter() + self.think_ms / 1000
        self.nodes = 0
        best = moves[0]
        limit = self.depth or 64
        for depth in range(1, limit + 1):
            try:
                best, score, complete = self._root(s, moves, depth, deadline)
            except _OutOfTime:
                break
            moves.remove(best)
            moves.insert(0, best)
            if complete or abs(score) >= WIN - 100:
                break
        return best

    def _root(self, s: State, moves: list[Cell], depth: int, deadline: float) -> tuple[Cell, int, bool]:
        self._deadline = deadline
        self._cut = False
        self._tt: dict[int, tuple[int, int, int]] = {}
        alpha, best = -WIN - 1, moves[0]
        path = {s.key()}
        for m in moves:
            score = -self._search(s._play_unchecked(m), depth - 1, -WIN - 1, -alpha, 1, path)
            if score > alpha:
                alpha, best = score, m
        return best, alpha, not self._cut

    def _search(self, s: State, depth: int, alpha: int, beta: int, ply: int, path: set[int]) -> int:
        self.nodes += 1
        if self.nodes & 1023 == 0 and time.perf_counter() > self._deadline:
            raise _OutOfTime
        if s.outcome is not None:
            return -(WIN - ply) if s.outcome.winner is not None else 0
        key = s.key()
        if key in path:
            return 0
        if depth <= 0:
            self._cut = True
            return _evaluate(s)
        ck = s.canonical_key() if s.variant.cells <= 16 else key
        entry = self._tt.get(ck)
        if entry is not None and entry[0] >= depth and s.variant.max_marks is None:
            return entry[1] - ply if abs(entry[1]) >= WIN - 100 else entry[1]
        children = [(m, s._play_unchecked(m)) for m in candidates(s)]
        children.sort(key=lambda mc: 0 if mc[1].outcome is not None else 1)
        best = -WIN - 1
        path.add(key)
        try:
            for _, child in children:
                score = -self._search(child, depth - 1, -beta, -alpha, ply + 1, path)
                if score > best:
                    best = score
                if best > alpha:
                    alpha = best
                if alpha >= beta:
                    break
        finally:
            path.discard(key)
        if best < beta and best > -WIN - 1 and not self._cut:
            stored = best + ply if abs(best) >= WIN - 100 else best
            self._tt[ck] = (depth, stored, 0)
        return best


def _evaluate(s: State) -> int:
    """Open lines: for each K-window free of the opponent, more marks score more."""
    score = 0
    own, theirs = (s.x, s.o) if s.to_move == 0 else (s.o, s.x)
    for mask in s.variant.lines:
        a, b = own & mask, theirs & mask
        if a and not b:
            score += 4 ** bin(a).count("1")
        elif b and not a:
            score -= 4 ** bin(b).count("1")
    return max(-WIN + 200, min(WIN - 200, score))
