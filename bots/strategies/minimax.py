"""`minimax`: negamax with alpha-beta (principal variation search), a transposition table
on the canonical key, move ordering and iterative deepening under a time budget.

Scores are from the side to move. A forced result is ``WIN - n`` (a win ``n`` plies
from the root of the search) or ``-(WIN - n)``, so the fastest win and the slowest loss
score best; anything else is a draw (0) or an open-line estimate well inside ``MATE``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable
from functools import cache

from bots.strategies.base import StrategyError, bare
from bots.strategies.rules import candidates
from protocol.rules import Cell, State, Variant

WIN = 1000
#: Scores at or beyond +-MATE are forced results; estimates stay within +-(WIN - 200).
MATE = WIN - 100
#: The depth recorded for a result that no further depth can change.
_SETTLED = 1 << 20
#: How deep iterative deepening goes when no depth is given.
_MAX_DEPTH = 64
#: Transposition-table entry kinds: an exact score, a lower or an upper bound.
EXACT, LOWER, UPPER = 0, 1, 2
#: Entries kept before the table is cleared (long games on big boards; about 40 MB).
_TT_LIMIT = 250_000
_NO_REPETITION = 1 << 20
_NO_LIMIT = 1 << 62

# (depth searched, score with mate scores counted from this position, kind, best move in
# the canonical frame or -1)
_Entry = tuple[int, int, int, int]


class _OutOfTime(Exception):
    pass


class _Board:
    """Per-variant facts the search needs in its hot path."""

    def __init__(self, v: Variant) -> None:
        self.variant = v
        self.lines = v.lines
        self.limit = v.max_marks
        #: Canonical keys (and symmetry) only where they are cheap: boards up to 4x4.
        self.symmetric = v.cells <= 16
        self.perms = v.symmetries if self.symmetric else (tuple(range(v.cells)),)
        self.inverse = tuple(_invert(p) for p in self.perms)
        # Each symmetry maps a bitboard 8 cells at a time through two lookup tables.
        self.low: tuple[tuple[int, ...], ...] = ()
        self.high: tuple[tuple[int, ...], ...] = ()
        if self.symmetric:
            low, high = range(1 << min(8, v.cells)), range(1 << max(0, v.cells - 8))
            self.low = tuple(tuple(_map(m, p) for m in low) for p in self.perms)
            self.high = tuple(tuple(_map(m << 8, p) for m in high) for p in self.perms)
        #: Centre first, then corners, then edges: how many lines pass through a cell.
        self.weight = tuple(len(t) for t in v.lines_through)
        #: On big boards only the lines through a mark are worth a look.
        self.through = v.lines_through

    def lines_of(self, s: State) -> tuple[int, ...] | set[int]:
        """The lines that hold a mark (all of them on boards up to 4x4)."""
        if self.symmetric:
            return self.lines
        occupied, through = s.x | s.o, self.through
        found: set[int] = set()
        while occupied:
            low = occupied & -occupied
            found.update(through[low.bit_length() - 1])
            occupied ^= low
        return found


@cache
def _board(v: Variant) -> _Board:
    return _Board(v)


def _invert(perm: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(perm)
    for c, image in enumerate(perm):
        out[image] = c
    return tuple(out)


def _map(mask: int, perm: tuple[int, ...]) -> int:
    out = 0
    c = 0
    while mask:
        if mask & 1:
            out |= 1 << perm[c]
        mask >>= 1
        c += 1
    return out


class MinimaxStrategy:
    """Negamax with alpha-beta, a transposition table and iterative deepening.

    ``think_ms`` (milliseconds) is read afresh at every `choose`, so a caller may set it
    per move from the bot's clock; ``depth`` caps iterative deepening; ``nodes_budget``
    caps the positions entered (checked every 8), and makes each `choose` start from an
    empty table: a move then depends on the position and ``rng`` alone, as long as the
    count is reached within ``think_ms`` (a tournament sets it: `base.reproducible`). `nodes` counts
    the positions the last `choose` or `search` entered (immediate wins and unstoppable
    threats are recognised from the lines of the position where they arise, without
    entering the next position).

    The transposition table is keyed by the canonical key (the least over the board's
    symmetries) on boards up to 4x4 and stores the depth searched, the score with mate
    distances counted from that position (so an entry is valid at any ply), whether the
    score is exact or a lower or upper bound, and the best move (tried first next time).
    It is kept across iterations and across moves (cleared past `_TT_LIMIT` entries),
    unless a ``nodes_budget`` is set.

    What keeps the search small (one complete search of the empty classic board enters
    162 positions): a side that can win now scores the win at once; a side facing one
    threat only searches the block, and facing two (or one it may not take) scores the
    loss at once; moves that a symmetry of the position maps onto each other are searched
    once; the table's move goes first, then moves by the lines through them (open lines
    they extend, the opponent's lines they block) and a history bonus for moves that cut
    off before; principal variation search tries the rest with a null window.

    Tactic-toe has cycles. The search scores a position already on its own path as a
    draw (the solver's semantics: play that never ends is a draw), so it terminates.
    Such a score depends on the path, not only on the position, and a table entry
    must not carry it to another path (the graph-history problem). So a result is
    stored only when every repetition met below it returns to that position or to one
    below it: then it is what a search started from that position would give, whatever
    path led there. With that rule, a search at least one ply deeper than the longest
    forced win (17 plies) gets the root's value right and plays a move that keeps it:
    a side that wins can do so through positions ever nearer the end, so it never runs
    into a repetition, and a side that draws can always avoid losing, so a repetition
    never turns a drawn line into a loss. (The alternative, no table on tactic-toe, is
    sound too but slower: on 1,000 sampled states at depth 18 it enters 1.72 million
    positions against 0.41 million.) The proof tests and ``bench/solve.py`` check
    this against the solved table.
    """

    name = "minimax"

    def __init__(
        self, think_ms: int = 1000, depth: int | None = None, nodes_budget: int | None = None
    ) -> None:
        if isinstance(think_ms, bool) or not isinstance(think_ms, int) or think_ms < 1:
            raise StrategyError(f"think_ms must be a positive int, not {think_ms!r}")
        for option, value in (("depth", depth), ("nodes_budget", nodes_budget)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise StrategyError(f"{option} must be a positive int, not {value!r}")
        self.think_ms = think_ms
        self.depth = depth
        #: Positions a `choose` may enter (None: the wall clock alone bounds it). With a
        #: budget each `choose` also starts from an empty table, so the move depends only
        #: on the position and ``rng`` while the count is reached within ``think_ms``.
        self.nodes_budget = nodes_budget
        #: Positions entered by the last `choose` or `search`.
        self.nodes = 0
        #: Positions entered by each iteration of the last `choose` (the last one may have
        #: run out of time).
        self.iterations: list[int] = []
        #: The depth of the last iteration the last `choose` completed.
        self.reached = 0
        self._tt: dict[int, _Entry] = {}
        self._tt_variant: Variant | None = None
        self._deadline = float("inf")
        self._limit = _NO_LIMIT
        self._path: dict[int, int] = {}
        self._horizon = 0
        self._rep_low = _NO_REPETITION
        self._history: list[int] = [0] * 256
        self._b: _Board | None = None

    # --- entry points ---------------------------------------------------------

    def choose(self, state: State, rng: random.Random) -> Cell:
        s = bare(state)
        if self.nodes_budget is not None:
            self._tt = {}  # nothing from earlier moves or games: the same move every time
        self._prepare(s)
        self._deadline = time.perf_counter() + self.think_ms / 1000
        self._limit = self.nodes_budget or _NO_LIMIT
        self.nodes = 0
        self.iterations = []
        self.reached = 0
        moves, orbits = self._root_moves(s, rng)
        best = moves[0]
        if len(moves) > 1:
            for depth in range(1, (self.depth or _MAX_DEPTH) + 1):
                before = self.nodes
                try:
                    best, score, complete = self._root(s, moves, depth)
                except _OutOfTime as late:
                    if late.args:
                        best = late.args[0]  # a move this iteration already proved better
                    self.iterations.append(self.nodes - before)
                    break
                self.iterations.append(self.nodes - before)
                self.reached = depth
                moves.remove(best)
                moves.insert(0, best)
                if complete or abs(score) >= MATE:
                    break
        return rng.choice(orbits[best])

    def search(self, state: State, depth: int | None = None) -> tuple[Cell, int]:
        """One search of ``state`` to ``depth`` (to the end of every line when None):
        no iterative deepening and no time limit. Returns the best move and its score;
        `nodes` holds the positions entered. Uses (and fills) this strategy's table."""
        s = bare(state)
        self._prepare(s)
        self._deadline = float("inf")
        self._limit = _NO_LIMIT
        self.nodes = 0
        moves, _ = self._root_moves(s, random.Random(0))
        best, score, _ = self._root(s, moves, depth or _MAX_DEPTH)
        return best, score

    # --- the search -----------------------------------------------------------

    def _prepare(self, s: State) -> None:
        v = s.variant
        if self._tt_variant is not v or len(self._tt) > _TT_LIMIT:
            self._tt = {}
            self._tt_variant = v
        self._b = _board(v)
        self._path = {}
        self._history = [0] * v.cells

    def _root_moves(self, s: State, rng: random.Random) -> tuple[list[Cell], dict[Cell, list[Cell]]]:
        """The root moves, one per class of moves the position's symmetries make equal,
        shuffled, then ordered; and each one's class (the move played is drawn from it)."""
        b = self._b
        assert b is not None
        _, _, stab = self._canonical(s, b)
        orbits: dict[Cell, list[Cell]] = {}
        for m in candidates(s):
            rep = min(b.perms[i][m] for i in stab)
            orbits.setdefault(rep, []).append(m)
        moves = list(orbits)
        rng.shuffle(moves)
        wins, threat = self._tactics(s, b)
        if wins:
            first = [m for m in moves if wins >> m & 1]
        elif threat is not None and threat >= 0:
            first = [min(b.perms[i][threat] for i in stab)]
        else:
            first = []
        rest = [m for m in moves if m not in first]
        rest.sort(key=lambda m: -self._order_value(s, m))
        return first + rest, orbits

    def _root(self, s: State, moves: list[Cell], depth: int) -> tuple[Cell, int, bool]:
        horizon = self._horizon
        key = s.key()
        self._path[key] = 0
        alpha, beta = -WIN - 1, WIN + 1
        best = moves[0]
        try:
            for i, m in enumerate(moves):
                child = s._play_unchecked(m)
                try:
                    if i == 0:
                        score = -self._search(child, depth - 1, -beta, -alpha, 1)
                    else:
                        score = -self._search(child, depth - 1, -alpha - 1, -alpha, 1)
                        if score > alpha:
                            score = -self._search(child, depth - 1, -beta, -alpha, 1)
                except _OutOfTime:
                    raise _OutOfTime(best) if i > 0 else _OutOfTime() from None
                if i == 0 or score > alpha:
                    alpha, best = score, m
        finally:
            self._path.pop(key, None)
        return best, alpha, self._horizon == horizon

    def _search(self, s: State, depth: int, alpha: int, beta: int, ply: int) -> int:
        self.nodes += 1
        if self.nodes & 7 == 0 and (self.nodes >= self._limit or time.perf_counter() > self._deadline):
            raise _OutOfTime
        outcome = s.outcome
        if outcome is not None:
            return -(WIN - ply) if outcome.winner is not None else 0
        # No score here can beat a win next ply or lose faster than on the ply after.
        if alpha < -(WIN - ply - 2):
            alpha = -(WIN - ply - 2)
        if beta > WIN - ply - 1:
            beta = WIN - ply - 1
        if alpha >= beta:
            return alpha
        b = self._b
        assert b is not None
        cycles = b.limit is not None
        key = 0
        if cycles:
            key = s.key()
            seen = self._path.get(key)
            if seen is not None:
                if seen < self._rep_low:
                    self._rep_low = seen
                return 0
        wins, threat = self._tactics(s, b)
        if wins:
            return WIN - ply - 1
        if threat == -1:
            return -(WIN - ply - 2)
        ck, sym, stab = self._canonical(s, b)
        tt = self._tt
        entry = tt.get(ck)
        tt_move = -1
        if entry is not None:
            e_depth, e_score, e_kind, e_move = entry
            if e_depth >= depth:
                score = e_score - ply if e_score >= MATE else e_score + ply if e_score <= -MATE else e_score
                if e_kind == EXACT or (score >= beta if e_kind == LOWER else score <= alpha):
                    if e_depth < _SETTLED:
                        self._horizon += 1  # a depth-limited result: so is ours
                    return score
            if e_move >= 0:
                tt_move = b.inverse[sym][e_move]
        if depth <= 0:
            self._horizon += 1
            return _evaluate(s, b.lines_of(s))
        moves = [threat] if threat is not None else self._ordered(s, b, stab, tt_move)
        alpha0 = alpha
        horizon = self._horizon
        rep_outer = self._rep_low
        self._rep_low = _NO_REPETITION
        if cycles:
            self._path[key] = ply
        best, best_move = -WIN - 1, moves[0]
        try:
            for i, m in enumerate(moves):
                child = s._play_unchecked(m)
                if i == 0:
                    score = -self._search(child, depth - 1, -beta, -alpha, ply + 1)
                else:
                    score = -self._search(child, depth - 1, -alpha - 1, -alpha, ply + 1)
                    if alpha < score < beta:
                        score = -self._search(child, depth - 1, -beta, -alpha, ply + 1)
                if score > best:
                    best, best_move = score, m
                    if score > alpha:
                        alpha = score
                        if alpha >= beta:
                            self._history[m] += depth * depth
                            break
        finally:
            if cycles:
                del self._path[key]
            below = self._rep_low
            self._rep_low = min(rep_outer, below)
        if below >= ply:  # the result does not depend on the path that led here
            kind = UPPER if best <= alpha0 else LOWER if best >= beta else EXACT
            settled = (
                self._horizon == horizon
                or (kind == LOWER and best >= MATE)
                or (kind == UPPER and best <= -MATE)
            )
            stored = best + ply if best >= MATE else best - ply if best <= -MATE else best
            old = tt.get(ck)
            d = _SETTLED if settled else depth
            if old is None or d >= old[0]:
                tt[ck] = (d, stored, kind, b.perms[sym][best_move])
        return best

    # --- helpers --------------------------------------------------------------

    @staticmethod
    def _tactics(s: State, b: _Board) -> tuple[int, int | None]:
        """The cells where the side to move wins now (a bit mask), and what the opponent
        threatens: None for nothing, a cell that must be taken now, or -1 when no move
        stops the opponent winning next (two threats, or one on the mover's own
        vanishing mark, which it may not take)."""
        me, them = (s.x, s.o) if s.to_move == 0 else (s.o, s.x)
        empty = b.variant.full & ~(s.x | s.o)
        freed = 0  # the cell the mover's oldest mark leaves: free for the opponent next
        if b.limit is not None:
            mine, theirs = s.queues[s.to_move], s.queues[1 - s.to_move]
            if len(mine) >= b.limit:
                freed = 1 << mine[0]
                me &= ~freed
            if len(theirs) >= b.limit:
                them &= ~(1 << theirs[0])
        after = empty | freed
        wins = threats = 0
        for line in b.lines_of(s):
            rest = line & ~me
            if rest & (rest - 1) == 0 and rest & empty:
                wins |= rest
            rest = line & ~them
            if rest & (rest - 1) == 0 and rest & after:
                threats |= rest
        if not threats or wins:
            return wins, None
        if threats & (threats - 1) or not threats & empty:
            return wins, -1
        return wins, threats.bit_length() - 1

    @staticmethod
    def _canonical(s: State, b: _Board) -> tuple[int, int, list[int]]:
        """The canonical key, the index of a symmetry that maps ``s`` to it, and the
        indices of the symmetries that leave ``s`` unchanged."""
        if not b.symmetric:
            return s.key(), 0, [0]
        keys = []
        if b.limit is not None:
            qx, qo = s.queues
            for p in b.perms:
                kx = ko = 0
                for c in qx:
                    kx = kx << 4 | (p[c] + 1)
                for c in qo:
                    ko = ko << 4 | (p[c] + 1)
                keys.append(((kx << 12 | ko) << 1) | s.to_move)
        else:
            x, o, n = s.x, s.o, b.variant.cells
            xl, xh, ol, oh = x & 255, x >> 8, o & 255, o >> 8
            for low, high in zip(b.low, b.high, strict=True):
                keys.append(((low[ol] | high[oh]) << n | low[xl] | high[xh]) << 1 | s.to_move)
        own = keys[0]
        best = min(keys)
        return best, keys.index(best), [i for i, k in enumerate(keys) if k == own]

    def _ordered(self, s: State, b: _Board, stab: list[int], tt_move: int) -> list[Cell]:
        moves = candidates(s)
        if len(stab) > 1:  # symmetric position: one move per class of equal moves
            moves = tuple(m for m in moves if all(b.perms[i][m] >= m for i in stab))
        scored = sorted(moves, key=lambda m: -self._order_value(s, m))
        if tt_move in scored:
            scored.remove(tt_move)
            scored.insert(0, tt_move)
        return scored

    def _order_value(self, s: State, m: Cell) -> int:
        """Lines through ``m``: open ones the move extends, the opponent's it blocks."""
        b = self._b
        assert b is not None
        me, them = (s.x, s.o) if s.to_move == 0 else (s.o, s.x)
        value = b.weight[m] + self._history[m]
        for line in b.variant.lines_through[m]:
            if not line & them:
                value += 8 << 3 * (line & me).bit_count()
            elif not line & me:
                value += 4 << 3 * (line & them).bit_count()
        return value


def _evaluate(s: State, lines: Iterable[int]) -> int:
    """Open lines: for each K-window free of the opponent, more marks score more (``lines``
    must hold every line with a mark)."""
    score = 0
    own, theirs = (s.x, s.o) if s.to_move == 0 else (s.o, s.x)
    for mask in lines:
        a, b = own & mask, theirs & mask
        if a and not b:
            score += 4 ** a.bit_count()
        elif b and not a:
            score -= 4 ** b.bit_count()
    return max(-WIN + 200, min(WIN - 200, score))
