"""`gomoku`: threat-space search, then alpha-beta on window counts, for m,n,k boards.

A move is chosen in this order, each step on `Lines` (counts per K-window, updated a
move at a time, never a board rescan):

1. a win now; a block of the opponent's only winning cell;
2. VCF (victory by continuous fours): a chain of fours, each forcing the one block,
   ending in two winning cells at once;
3. VCT (victory by continuous threats): fours and threes (a move after which the next
   one would make two winning cells), trying every defence the opponent has (the cells
   that stop that move, `_double_guards`, and its own fours), a few moves deep; the
   positions where a side was found to have none are kept from move to move, as the
   refuted VCFs and the alpha-beta table are;
4. if the opponent has a VCF once it is to move, only moves after which it no longer
   has one (when such moves exist);
5. otherwise alpha-beta (negamax, principal variation search, iterative deepening, a
   transposition table kept from move to move) over the best-scored cells near stones,
   where a side facing one winning cell only searches the block (without spending
   depth) and a side that has one scores the win at once. One ply above the horizon
   (`_frontier`) the side to move is probed for a win by fours, and so is the other
   side: then only a quiet move that stops it counts; every other quiet move is
   scored from its gain without being made. When every root move loses, the rest of
   the cells near stones join the root;
6. after it, the alpha-beta choice and the next best moves are checked in turn for a
   VCT of the opponent's after them, four threats deep, then deeper while time is left
   (up to 8: `_no_vct_after`); the first that passed the deepest check is played.
   When the opponent would win by threats were it to move, its first cell joins the
   root and is checked second, and the checks get more of the time; after a check
   finds a win, the cells that win was made of are checked next.

The threat searches move stones with `Lines.push`/`pop` (window codes and threat sets
only), alpha-beta with `place`/`take` (gains and scores too).

``nodes`` counts the positions the last `choose` entered: alpha-beta calls and threat
search positions (the block after a four included), as `minimax` counts its calls; a
leaf scored from its parent's gains without making the move counts too (the same
position, the same value), and ``scored`` says how many of those there were. With
``nodes_budget`` set the search stops on that count, so a move depends only on the
position, the seed and the searches this object made before (its table), as long as
the count is reached within ``think_ms`` (always a hard limit, since a bot's clock sets
it); with the clock alone, on how fast the machine is too.
"""

from __future__ import annotations

import random
import time

from bots.strategies.base import StrategyError
from bots.strategies.gomoku_lines import FIVE, Lines
from protocol.rules import Cell, State, find_variant

WIN = 1 << 30
#: Scores beyond this are forced wins or losses.
MATE = WIN - 1000
_ROOT_WIDTH = 14
_WIDTHS = (10, 8, 7, 6, 5)
_VCF_DEPTH = 12
_VCT_DEPTH = 3
#: Depth of the VCF looked for at each position of a VCT search.
_VCF_IN_VCT = _VCF_DEPTH // 2
#: Depth of the other side's VCT looked for after a root move: one more than our own,
#: since a win by threats missed there is the game.
_VCT_CHECK_DEPTH = 4
#: The deepest the checks go while time is left (each level about 3-6 times the last).
_VCT_CHECK_MAX = 8
#: Moves checked for the other side's VCT after the alpha-beta search, best first
#: (beyond the root's, the next best by gain).
_VCT_CHECKS = 20
#: After a check finds the other side's win by threats, how many of the cells it was
#: made of are checked next.
_PROOF_CELLS = 2
#: The share of the time left for alpha-beta, before the VCT checks.
_SEARCH_SHARE = 0.7
#: The same share when the root is a defence of at most `_FEW` moves.
_DEFENCE_SHARE = 0.4
_FEW = 3
#: How many fours of its own the side to move may play in the VCF probe made one ply
#: above the horizon.
_PROBE_DEPTH = 6
#: Quiet moves tried against the other side's win by fours one ply above the horizon.
_GUARDS = 6
#: Table entry kinds: an exact score, a lower or an upper bound.
_EXACT, _LOWER, _UPPER = 0, 1, 2
#: Entries kept (table and refuted VCFs) past which they are cleared before a move.
_TABLE_LIMIT = 400_000


class _OutOfTime(Exception):
    pass


class GomokuStrategy:
    """Threat-space search and alpha-beta over K-window counts (see the module doc)."""

    name = "gomoku"

    #: Nodes a millisecond of ``think_ms`` is worth in a tournament (`base.reproducible`): a
    #: fifth of the 3,000 or so it counts here (about 30 times `minimax`), as `minimax`'s
    #: own rate is a fifth of its speed, so each reaches its count before its time.
    nodes_per_ms = 600

    def __init__(self, think_ms: int = 1000, nodes_budget: int | None = None) -> None:
        if isinstance(think_ms, bool) or not isinstance(think_ms, int) or think_ms < 1:
            raise StrategyError(f"think_ms must be a positive int, not {think_ms!r}")
        if nodes_budget is not None and (isinstance(nodes_budget, bool) or not isinstance(nodes_budget, int)
                                         or nodes_budget < 1):  # fmt: skip
            raise StrategyError(f"nodes_budget must be a positive int, not {nodes_budget!r}")
        self.think_ms = think_ms
        self.nodes_budget = nodes_budget
        self.nodes = 0
        #: Of `nodes`, the leaves scored from their parent's gains without making the move.
        self.scored = 0
        #: How the last move was found: win, block, vcf, vct, defence or search.
        self.reason = ""
        #: Deepest alpha-beta iteration the last `choose` completed, and its score.
        self.reached = 0
        self.value = 0
        self._deadline = 0.0
        self._limit = 0
        self._lines: Lines | None = None
        self._refuted_vcf: tuple[dict[int, int], dict[int, int]] = ({}, {})
        #: Per side, positions (hash) where it was found to have no VCT, and how deep.
        self._refuted_vct: tuple[dict[int, int], dict[int, int]] = ({}, {})
        self._variant = ""
        self._vct_until = (0.0, 0)
        #: By depth left: the defence that last refuted a threat in the threat searches,
        #: tried first against the next (it often stops a sibling's threat too).
        self._killers = [-1] * (_VCT_CHECK_MAX + 2)
        #: The attacker's moves in the last win by threats found (its proof), and how
        #: often each was played in it.
        self._proof: dict[Cell, int] = {}
        #: Alpha-beta results by position (hash and side to move): depth searched, score
        #: (mate scores counted from that position), kind of bound, best move.
        self._table: dict[int, tuple[int, int, int, int]] = {}

    def refusal(self, variant: str) -> str | None:
        """Why this strategy does not play ``variant``, or None when it does."""
        v = find_variant(variant)
        if v.max_marks is not None:
            return f"gomoku plays boards where stones stay, not {v.name}"
        if v.k < 4:
            return f"gomoku plays four or more in a row, not {v.name} (k={v.k})"
        return None

    # --- the move -------------------------------------------------------------------

    def choose(self, state: State, rng: random.Random) -> Cell:
        why = self.refusal(state.variant.name)
        if why is not None:
            raise StrategyError(why)
        kept = len(self._table) + sum(map(len, (*self._refuted_vcf, *self._refuted_vct)))
        if self._variant != state.variant.name or kept > _TABLE_LIMIT:
            # What the searches learnt is kept from move to move: facts about positions.
            self._variant = state.variant.name
            self._table, self._refuted_vcf, self._refuted_vct = {}, ({}, {}), ({}, {})
        lines = self._lines = Lines.of(state)
        side = int(state.to_move)
        self.nodes = 0
        self.scored = 0
        self.reached = 0
        self._killers = [-1] * len(self._killers)
        self._deadline = time.perf_counter() + self.think_ms / 1000
        self._limit = self.nodes_budget or (1 << 62)
        move, self.reason = self._decide(lines, side, rng)
        if not state.is_legal(move):  # cannot happen; never send an illegal move
            move = rng.choice(state.legal_moves())
        return move

    def threat_win(self, state: State, side: int, depth: int, nodes: int, after: Cell = -1
                   ) -> tuple[Cell | None, bool]:  # fmt: skip
        """``side``'s first move of a win by threats (fours and threes, ``depth`` threats
        deep) were it to move now in ``state``, or None; and whether the search ended
        within ``nodes`` (if not, None only means none was found in time). None while the
        other side has a four: that comes first. With ``after``, the other side plays that
        cell first, as the checks after alpha-beta see it (a four in it is blocked, and
        ``side`` looked at as if to move again). For analysis (bench/where_lost.py): of
        what it learns, only the refuted VCFs are kept for the next `choose`."""
        why = self.refusal(state.variant.name)
        if why is not None:
            raise StrategyError(why)
        self._lines = Lines.of(state)
        self.nodes = 0
        self._deadline = float("inf")
        self._limit = nodes
        self._vct_until = (float("inf"), nodes)
        try:
            found = self._vct_after(1 - side, after, depth, {}) if after >= 0 else self._vct(side, depth, {})
        except _OutOfTime:
            return None, False
        return found, found is not None or self.nodes < nodes

    def _decide(self, lines: Lines, side: int, rng: random.Random) -> tuple[Cell, str]:
        other = 1 - side
        if lines.fours[side]:
            return min(lines.wins(side)), "win"
        threats = lines.wins(other)
        if threats:
            return min(threats), "block"
        moves = lines.candidates()
        if len(moves) == 1:
            return moves[0], "search"
        try:
            found = self._vcf(side, _VCF_DEPTH)
            if found is not None:
                return found, "vcf"
            share = max(1, (self.nodes_budget or 0) // 4)
            self._vct_until = (time.perf_counter() + self.think_ms / 4000, self.nodes + share)
            found = self._vct(side, _VCT_DEPTH, self._refuted_vct[side])
            if found is not None:
                return found, "vct"
        except _OutOfTime:
            pass
        rng.shuffle(moves)
        ordered = self._ordered(moves, side)
        try:
            safe = self._defences(side, ordered[: _ROOT_WIDTH * 2])
        except _OutOfTime:
            safe = None
        reason = "search"
        if safe:
            ordered, reason = safe, "defence"
        deadline, limit = self._deadline, self._limit
        # the other side's win by threats were it to move now: the checks after the search
        # try its first move first
        hint = -1 if safe else self._tempo_threat(side)
        if hint >= 0:
            # its first cell is often the one defence: searched, and checked second
            if hint in ordered:  # (a three's cell may lie three cells from any stone)
                ordered.remove(hint)
            ordered.insert(min(len(ordered), _ROOT_WIDTH - 1), hint)
        root = ordered[:_ROOT_WIDTH]
        # alpha-beta gets most of what is left, the VCT checks after it the rest; among a
        # few defences, or facing a win by threats, the checks matter more
        search_share = _DEFENCE_SHARE if (safe and len(root) <= _FEW) or hint >= 0 else _SEARCH_SHARE
        self._deadline = time.perf_counter() + (deadline - time.perf_counter()) * search_share
        self._limit = self.nodes + int((limit - self.nodes) * search_share)
        best = self._iterate(side, root, ordered[_ROOT_WIDTH:])
        self._deadline, self._limit = deadline, limit
        first = [best, hint] if hint >= 0 and hint != best else [best]
        checks = [*first, *(m for m in ordered[:_VCT_CHECKS] if m not in first)]
        return self._no_vct_after(side, checks, hint), reason

    def _tempo_threat(self, side: int) -> Cell:
        """The first move of the other side's VCT (`_VCT_CHECK_DEPTH` + 1 deep) were it to
        move now, ``side`` passing; -1 when it has none, or none was found within a tenth
        of what is left."""
        lines = self._lines
        assert lines is not None
        now = time.perf_counter()
        self._vct_until = (now + (self._deadline - now) / 10, self.nodes + (self._limit - self.nodes) // 10)
        try:
            found = self._vct(1 - side, _VCT_CHECK_DEPTH + 1, self._refuted_vct[1 - side])
        except _OutOfTime:
            return -1
        return -1 if found is None else found

    def _no_vct_after(self, side: int, moves: list[Cell], hint: Cell = -1) -> Cell:
        """The move after which the other side's win by threats is looked for deepest and
        not found. The first of ``moves`` that passes the check `_VCT_CHECK_DEPTH` deep
        is held; then the check goes one deeper, for that move first, then (if it fails
        there) for the moves after it, each at every depth from the shallowest up, until
        `_VCT_CHECK_MAX` or the time runs out. Played: the first move that passed the
        deepest check any passed, one not shown to lose a level deeper before one shown
        to (the one being checked when the time ran out is not); none passed: the first.
        A win found after one move is tried first after the next (the same threat often
        wins there too, and is found at once)."""
        lines = self._lines
        assert lines is not None
        self._vct_until = (self._deadline, self._limit)
        failed = self._refuted_vct[1 - side]
        # (deepest check passed, not shown to lose one deeper): the higher the better
        best, best_rank = moves[0], (_VCT_CHECK_DEPTH - 1, False)
        target, i = _VCT_CHECK_DEPTH, 0
        while i < len(moves) and target <= _VCT_CHECK_MAX:
            m = moves[i]
            rank = (_VCT_CHECK_DEPTH - 1, True)
            try:
                for depth in range(_VCT_CHECK_DEPTH, target + 1):  # the shallower: known, or quick
                    self._proof = {}
                    found = self._vct_after(side, m, depth, failed, hint)
                    if found is not None:
                        hint, rank = found, (depth - 1, False)
                        break
                    rank = (depth, True)
            except _OutOfTime:
                return m if rank > best_rank else best
            if m == best or rank > best_rank:
                best, best_rank = m, rank
            if rank[1]:
                target += 1
            else:
                i += 1
                # the cells the other side's win was made of (its first move first, then
                # those its proof used most): taking one may defend
                proof = sorted(self._proof, key=lambda c: (c != hint, -self._proof[c], c))
                fresh = [c for c in proof if c not in moves[:i]][:_PROOF_CELLS]
                moves[i:] = [*fresh, *(c for c in moves[i:] if c not in fresh)]
        return best

    def _vct_after(self, side: int, move: Cell, depth: int, failed: dict[int, int], hint: Cell = -1
                   ) -> Cell | None:  # fmt: skip
        """The other side's VCT after ``side`` plays ``move``. A four in ``move`` delays,
        it does not defend: the block is made, and the other side is looked at as if it
        were to move again."""
        lines = self._lines
        assert lines is not None
        lines.push(move, side)
        try:
            blocks = lines.wins(side)
            if len(blocks) >= 2:
                return None
            if not blocks:
                return self._vct(1 - side, depth, failed, hint)
            (block,) = blocks
            lines.push(block, 1 - side)
            try:
                return self._vct(1 - side, depth, failed, hint)
            finally:
                lines.pop(block)
        finally:
            lines.pop(move)

    def _tick(self) -> None:
        self.nodes += 1
        if self.nodes >= self._limit or (self.nodes & 63 == 0 and time.perf_counter() > self._deadline):
            raise _OutOfTime

    def _ordered(self, moves: list[Cell], side: int) -> list[Cell]:
        """Moves by what they gain for ``side`` plus what they deny the other side."""
        assert self._lines is not None
        return sorted(moves, key=self._lines.packed.__getitem__, reverse=True)

    # --- threats --------------------------------------------------------------------

    def _vcf(self, side: int, depth: int) -> Cell | None:
        """A move that starts a win by continuous fours for ``side`` (to move), or None
        (always None while the other side has a four). Positions already refuted are
        remembered per side."""
        lines = self._lines
        assert lines is not None
        failed = self._refuted_vcf[side]
        other = 1 - side
        if lines.fours[side]:
            return min(lines.wins(side))
        if depth == 0 or lines.fours[other] or failed.get(lines.hash, -1) >= depth:
            return None  # a four of the other side's comes first
        double = self._double_four(side)
        if double >= 0:
            self._tick()  # the position after it: two winning cells, seen without making it
            return double
        if depth == 1:  # a four that is not already a double leaves one block, then nothing
            failed[lines.hash] = depth
            return None
        for c in sorted(lines.four_moves(side)):
            self._tick()
            lines.push(c, side)
            try:
                wins = lines.wins(side)
                if len(wins) >= 2:
                    return c
                (block,) = wins
                self._tick()  # the position after the block: entered too
                lines.push(block, other)
                try:
                    if not lines.fours[other] and self._vcf(side, depth - 1) is not None:
                        return c
                finally:
                    lines.pop(block)
            finally:
                lines.pop(c)
        failed[lines.hash] = depth
        return None

    def _double_four(self, side: int) -> Cell:
        """The least empty cell where ``side`` makes two winning cells at once, or -1.
        Read from the windows, without making the move."""
        return min(self._double_cells(side), default=-1)

    def _double_cells(self, side: int, through: dict[Cell, list[int]] | None = None) -> set[Cell]:
        """The empty cells where ``side`` makes two winning cells at once: two of its
        windows one stone short through the cell, with different empty cells left. With
        ``through``, also fills it with the windows one stone short through each empty cell."""
        lines = self._lines
        assert lines is not None
        stone, cells_of = lines.stone, lines.window_cells
        partner: dict[Cell, Cell] = {}
        doubles = set()
        for w in lines.threes[side]:
            a, b = (e for e in cells_of[w] if stone[e] < 0)
            for e, rest in ((a, b), (b, a)):
                if through is not None:
                    through.setdefault(e, []).append(w)
                if partner.setdefault(e, rest) != rest:
                    doubles.add(e)
        return doubles

    def _threes(self, side: int) -> dict[Cell, int]:
        """Empty cells where ``side`` makes a three (a window two short, none of the
        other's), each with the number of such windows through it."""
        lines = self._lines
        assert lines is not None
        k, stone, size = lines.k, lines.stone, lines.k + 2
        mine, theirs = (k - 3) * size, k - 3  # the code of a window with k-3 of X's / O's, no other
        want = mine if side == 0 else theirs
        out: dict[Cell, int] = {}
        for w, code in enumerate(lines.code):
            if code == want:
                for e in lines.window_cells[w]:
                    if stone[e] < 0:
                        out[e] = out.get(e, 0) + 1
        return out

    def _double_guards(self, side: int) -> tuple[set[Cell], set[Cell]]:
        """The cells that stop every move of ``side``'s making two winning cells at once
        (empty when it has none): each such move's cell, and the empty cells of the
        windows one stone short of a four through it. A stone anywhere else leaves those
        windows as they are, so the move still makes the same two winning cells. Then
        those moves' cells (`_double_cells`)."""
        lines = self._lines
        assert lines is not None
        through: dict[Cell, list[int]] = {}
        doubles = self._double_cells(side, through)
        stone, cells_of = lines.stone, lines.window_cells
        return {e for d in doubles for w in through[d] for e in cells_of[w] if stone[e] < 0}, doubles

    def _vct_spent(self) -> bool:
        if self.nodes_budget:
            return self.nodes >= self._vct_until[1]
        return time.perf_counter() > self._vct_until[0]

    def _vct(self, side: int, depth: int, failed: dict[int, int], hint: Cell = -1) -> Cell | None:
        """A move that starts a win by continuous threats (fours and threes), or None.

        A three is a move after which ``side`` could make two winning cells at once;
        the defences tried are the empty cells of ``side``'s threatening windows and
        the other side's fours (see `_answered`).

        No position is recorded in ``failed`` once `_vct_spent`: a branch may have been
        cut short, and what is recorded is kept from move to move."""
        lines = self._lines
        assert lines is not None
        if depth == 0 or self._vct_spent() or failed.get(lines.hash, -1) >= depth:
            return None
        other = 1 - side
        found = self._vcf(side, _VCF_IN_VCT)
        if found is not None or depth == 1:
            # one level left: a three would be answered and leave none, so only fours win
            if found is not None:
                self._proof[found] = self._proof.get(found, 0) + 1
            return found
        if lines.fours[other]:
            return None
        # fours first, then the threes through the most windows (a win is found sooner)
        threes = self._threes(side)
        for c in lines.four_moves(side):
            threes[c] = 1000
        if hint in threes:
            threes[hint] = 2000  # tried first: it won against a sibling's defence
        for c in sorted(threes, key=lambda c: (-threes[c], c)):
            self._tick()
            lines.push(c, side)
            try:
                if self._answered(side, depth, failed):
                    self._proof[c] = self._proof.get(c, 0) + 1
                    return c
            finally:
                lines.pop(c)
        if not self._vct_spent():
            failed[lines.hash] = depth
        return None

    def _answered(self, side: int, depth: int, failed: dict[int, int]) -> bool:
        """The other side to move, facing ``side``'s threat (a four or a three): does
        ``side`` win by threats whatever it plays? False without a threat."""
        lines = self._lines
        assert lines is not None
        if lines.fours[1 - side]:
            return False  # the other side wins first
        wins = lines.wins(side)
        if len(wins) >= 2:
            return True
        doubles: set[Cell] = set()
        if wins:
            defences = wins
        else:
            defences, doubles = self._double_guards(side)
            if not defences:
                return False
            defences |= lines.four_moves(1 - side)
        killer = self._killers[depth]
        for d in sorted(defences, key=lambda d: (d != killer, d not in doubles, d)):
            if not self._refuted(side, d, depth, failed):
                self._killers[depth] = d
                return False
        return True

    def _refuted(self, side: int, defence: Cell, depth: int, failed: dict[int, int]) -> bool:
        """Whether ``side`` still wins by threats after the other side plays ``defence``.

        A defence that makes a four of the other side's is no refutation by itself:
        ``side`` blocks it (one level of ``depth`` spent, so chains of such fours end)
        and the other side, to move again, must still answer the threat."""
        lines = self._lines
        assert lines is not None
        other = 1 - side
        self._tick()
        lines.push(defence, other)
        try:
            if not lines.fours[other]:
                return self._vct(side, depth - 1, failed) is not None
            blocks = lines.wins(other)
            if len(blocks) >= 2 or depth <= 1:
                return False
            (block,) = blocks
            self._tick()
            lines.push(block, side)
            try:
                return self._answered(side, depth - 1, failed)
            finally:
                lines.pop(block)
        finally:
            lines.pop(defence)

    def _defences(self, side: int, moves: list[Cell]) -> list[Cell] | None:
        """If the other side has a VCF once it is to move: the moves after which it has
        none, best first (None when it has none, or no move stops it)."""
        lines = self._lines
        assert lines is not None
        other = 1 - side
        if self._vcf(other, _VCF_DEPTH) is None:
            return None
        keep = []
        for c in moves:
            lines.push(c, side)
            try:
                if self._stops(side, c):
                    keep.append(c)
            finally:
                lines.pop(c)
        return keep or None

    def _stops(self, side: int, move: Cell) -> bool:
        """After ``side`` played ``move``: has the other side no VCF left? A four in
        ``move`` counts only if the other side has none after its forced block."""
        lines = self._lines
        assert lines is not None
        other = 1 - side
        if not lines.fours[side]:
            return self._vcf(other, _VCF_DEPTH) is None
        wins = lines.wins(side)
        if len(wins) >= 2:
            return True
        (block,) = wins
        lines.push(block, other)
        try:
            return not lines.fours[other] and self._vcf(other, _VCF_DEPTH) is None
        finally:
            lines.pop(block)

    # --- alpha-beta -----------------------------------------------------------------

    def _iterate(self, side: int, moves: list[Cell], spare: list[Cell]) -> Cell:
        """Iterative deepening over ``moves``; the first time every one of them loses,
        the ``spare`` moves (the rest near stones, best first) join them."""
        best = moves[0]
        depth = 1
        while depth <= 64:
            try:
                score, move = self._root(side, moves, depth)
            except _OutOfTime:
                break
            best, self.reached, self.value = move, depth, score
            moves.remove(move)
            moves.insert(0, move)
            if score <= -MATE and spare:
                moves += spare
                spare = []
                continue  # the same depth again, wider
            if abs(score) >= MATE:
                break
            depth += 1
        return best

    def _root(self, side: int, moves: list[Cell], depth: int) -> tuple[int, Cell]:
        lines = self._lines
        assert lines is not None
        alpha, best = -WIN - 1, moves[0]
        for i, m in enumerate(moves):
            lines.place(m, side)
            try:
                if i == 0:
                    score = -self._search(1 - side, depth - 1, -WIN - 1, -alpha, 1)
                else:  # principal variation search: prove the move worse with a null window
                    score = -self._search(1 - side, depth - 1, -alpha - 1, -alpha, 1)
                    if score > alpha:
                        score = -self._search(1 - side, depth - 1, -WIN - 1, -alpha, 1)
            finally:
                lines.take(m)
            if score > alpha:
                alpha, best = score, m
        return alpha, best

    def _search(self, side: int, depth: int, alpha: int, beta: int, ply: int) -> int:
        self._tick()
        lines = self._lines
        assert lines is not None
        other = 1 - side
        if lines.fours[side]:
            return WIN - ply
        key = lines.hash * 2 + side
        entry = self._table.get(key)
        first = -1
        if entry is not None:
            got, score, kind, first = entry
            if got >= depth:
                if score >= MATE:
                    score -= ply
                elif score <= -MATE:
                    score += ply
                if kind == _EXACT or (score >= beta if kind == _LOWER else score <= alpha):
                    return score
        entered = depth
        if lines.fours[other]:
            threats = lines.wins(other)
            if len(threats) >= 2:
                return -(WIN - ply - 1)
            moves = list(threats)
        elif depth <= 0:
            return lines.score[side] - lines.score[other]
        elif depth == 1:
            return self._frontier(side, alpha, beta, ply)
        else:
            moves = self._ordered(lines.candidates(), side)[: _WIDTHS[min(ply, len(_WIDTHS)) - 1]]
            if first >= 0 and lines.stone[first] < 0:
                if first in moves:
                    moves.remove(first)
                moves.insert(0, first)
            depth -= 1
        if not moves:
            return 0
        best, best_move = -WIN - 1, moves[0]
        for i, m in enumerate(moves):
            lower = max(alpha, best)
            lines.place(m, side)
            try:
                if i == 0 or beta - lower == 1:
                    score = -self._search(other, depth, -beta, -lower, ply + 1)
                else:  # principal variation search: a null window first
                    score = -self._search(other, depth, -lower - 1, -lower, ply + 1)
                    if lower < score < beta:
                        score = -self._search(other, depth, -beta, -score, ply + 1)
            finally:
                lines.take(m)
            if score > best:
                best, best_move = score, m
                if best >= beta:
                    break
        kind = _LOWER if best >= beta else _UPPER if best <= alpha else _EXACT
        stored = best + ply if best >= MATE else best - ply if best <= -MATE else best
        self._table[key] = (entered, stored, kind, best_move)
        return best

    def _frontier(self, side: int, alpha: int, beta: int, ply: int) -> int:
        """One ply above the horizon, ``side`` to move and facing no four: a win by
        fours (a VCF probe) if it has one; else the best child over every cell near
        stones. A child that makes no four leaves no threat on the board, so its static
        score is this position's plus the move's gain: it is scored (and counted)
        without making the move. A four is made, so the forced block is seen.

        If the other side would win by fours were it to move, a quiet child counts only
        if it stops that: the best few by gain are made and probed, the first that
        stops it is the value (none: a loss)."""
        lines = self._lines
        assert lines is not None
        other = 1 - side
        fours = lines.four_moves(side) if lines.threes[side] else set()
        if fours and self._vcf(side, _PROBE_DEPTH) is not None:
            return WIN - ply - 2
        here = lines.score[side] - lines.score[other]
        gain = lines.gain
        best = -WIN - 1
        moves = lines.candidates()
        if not moves:
            return 0
        if lines.threes[other] and self._vcf(other, _PROBE_DEPTH) is not None:
            quiet = sorted((m for m in moves if m not in fours), key=lambda m: gain(side, m), reverse=True)
            best = -(WIN - ply - 3)
            for m in quiet[:_GUARDS]:
                self._tick()
                lines.push(m, side)
                try:
                    stops = self._vcf(other, _PROBE_DEPTH) is None
                finally:
                    lines.pop(m)
                if stops:
                    best = here + gain(side, m)
                    break
            moves = []
        for m in moves:
            if m in fours:
                continue
            self.nodes += 1
            self.scored += 1
            score = here + gain(side, m)
            if score > best:
                best = score
                if best >= beta:
                    return best
        for m in sorted(fours):
            lines.place(m, side)
            try:
                score = -self._search(other, 0, -beta, -max(alpha, best), ply + 1)
            finally:
                lines.take(m)
            if score > best:
                best = score
                if best >= beta:
                    break
        return best


__all__ = ["FIVE", "GomokuStrategy"]
