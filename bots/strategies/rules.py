"""`rule` and `heuristic`: bots that play by a skilled human's checklist.

Every check is made by playing moves on bare positions and looking, so the rules
engine decides what the vanishing marks of tactic-toe do: a two-in-a-row that holds
the mover's own next-to-vanish mark cannot be completed (that mark leaves as the third
arrives), and a line blocked only by the opponent's next-to-vanish mark opens when the
opponent next moves. So a threat is a cell we could win on at our next turn, after the
opponent's move has taken their oldest mark away (`next_wins`); a threat on the cell
that mark leaves cannot be blocked (nobody may place on their own leaving mark), so it
counts as much as a fork.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence

from bots.strategies.base import bare, passed
from protocol.rules import Cell, State, Variant

#: Boards larger than this skip the forcing-line look-ahead.
_SMALL = 16
#: How many forced exchanges the look-ahead follows on 3x3 (more on 3x3 than on 4x4).
_DEPTH = 4


def candidates(state: State) -> tuple[Cell, ...]:
    """Legal moves worth looking at: all of them on small boards, else cells within two
    steps of a mark (the centre on an empty board)."""
    moves = state.legal_moves()
    v = state.variant
    if v.cells <= _SMALL:
        return moves
    taken = state.x | state.o
    if not taken:
        return ((v.rows // 2) * v.cols + v.cols // 2,)
    near = _near(v)
    return tuple(c for c in moves if near[c] & taken) or moves


@functools.cache
def _near(v: Variant) -> tuple[int, ...]:
    """For each cell, the cells within two steps of it (a bit mask)."""
    out = []
    for cell in range(v.cells):
        r, c = divmod(cell, v.cols)
        mask = 0
        for rr in range(max(0, r - 2), min(v.rows, r + 3)):
            for cc in range(max(0, c - 2), min(v.cols, c + 3)):
                mask |= 1 << (rr * v.cols + cc)
        out.append(mask)
    return tuple(out)


def winning_cells(state: State) -> list[Cell]:
    """Cells where the side to move completes a line now."""
    if state.outcome is not None:
        return []
    return [c for c in candidates(state) if state._play_unchecked(c).outcome is not None
            and state._play_unchecked(c).outcome.winner is state.to_move]  # type: ignore[union-attr]  # fmt: skip


def next_wins(child: State) -> list[Cell]:
    """Cells the player who just moved into ``child`` could win on at their next turn,
    unless the opponent blocks them first: their own oldest mark leaving as they place,
    and in tactic-toe the opponent's oldest mark gone (it leaves when the opponent moves,
    opening any line it blocked)."""
    if child.outcome is not None:
        return []
    v = child.variant
    theirs = child.queues[child.to_move]
    if v.max_marks is None or len(theirs) < v.max_marks:
        return winning_cells(passed(child))
    gone = 1 << theirs[0]
    x, o = (child.x & ~gone, child.o) if child.to_move == 0 else (child.x, child.o & ~gone)
    queues = (theirs[1:], child.queues[1]) if child.to_move == 0 else (child.queues[0], theirs[1:])
    cleared = State(v, x, o, queues, child.to_move.other, child.ply, (), None, None, False)
    return winning_cells(cleared)


def threats_after(child: State) -> int:
    """How many blocks the opponent needs to stop every threat of the player who just
    moved into ``child`` (`next_wins`): one per cell, and 2 for a threat on the cell the
    opponent's own oldest mark leaves, which they cannot block."""
    mine = next_wins(child)
    leaving = child.next_to_vanish(child.to_move)
    return len(mine) + (leaving in mine)


def _pick(rng: random.Random, cells: Sequence[Cell]) -> Cell:
    return rng.choice(sorted(cells))


def _corners(state: State) -> tuple[Cell, ...]:
    v = state.variant
    return (0, v.cols - 1, v.cells - v.cols, v.cells - 1)


class RuleStrategy:
    """How a skilled human plays, checklist first to last; ties broken by ``rng``.

    1. Win now.
    2. Block: never leave the opponent a win next move (in tactic-toe this also rules
       out moves whose vanishing mark opens one of the opponent's lines).
    3. Win by force: make a fork, or a two-in-a-row whose forced block leads, threat by
       threat, to one (blocking any counter-threat on the way). A fork cannot be made in
       the opening yet, but a forcing line to one can (X on 3, O on 2: 0 threatens 6,
       O's block there threatens 4, and X's block on 4 forks), so this comes first.
    4. The 3x3 opening book, while fewer than 4 marks are down.
    5. Block a fork: if the opponent could fork, force them with a two-in-a-row whose
       block gives them no forcing line, else take a move that leaves them none.
    6. Attack: a two-in-a-row whose block gives the opponent no forcing line.
    7. The centre, a corner, anything.

    From step 4 on, only *sound* moves are considered where the board is small: moves
    after which the opponent has no forcing line to a win (the look-ahead of step 3,
    from their side), and, for a two-in-a-row, whose forced block still leaves us such a
    move (a block can set up more forks than one move covers). The old checklist lacked
    the forcing lines of step 3 and checked the block of a two-in-a-row from the wrong
    side; on classic it threw away 32 of the 2,836 won positions and lost 8 of the 1,052
    drawn ones. Now every move it allows keeps the value of every classic position
    (tests/test_bots_proofs.py). On boards over 4x4 the look-aheads are left out.
    """

    name = "rule"

    def choose(self, state: State, rng: random.Random) -> Cell:
        return _pick(rng, self.options(state))

    def options(self, state: State) -> list[Cell]:
        """Every move the checklist allows in ``state`` (`choose` picks one of them)."""
        s = bare(state)
        wins = winning_cells(s)
        if wins:
            return wins
        moves = candidates(s)
        children = {m: s._play_unchecked(m) for m in moves}
        safe = [m for m in moves if not winning_cells(children[m])] or list(moves)
        small = s.variant.cells <= _SMALL
        forks = [m for m in safe if threats_after(children[m]) >= 2]
        if forks:
            return forks
        if small:
            forcing = [m for m in safe if _forcing(children[m])]
            if forcing:
                return forcing
            sound = [m for m in safe if _sound(children[m])] or safe
        else:
            sound = safe
        book = self._opening(s, sound)
        if book:
            return book
        if small and _could_fork(s):
            blocks = [m for m in sound if threats_after(children[m]) == 1]
            return blocks or sound
        attacks = [m for m in sound if threats_after(children[m]) >= 1]
        if attacks:
            return attacks
        v = s.variant
        centre = (v.rows // 2) * v.cols + v.cols // 2
        if centre in sound:
            return [centre]
        corners = [c for c in _corners(s) if c in sound]
        return corners or sound

    @staticmethod
    def _opening(s: State, sound: list[Cell]) -> list[Cell]:
        """As first player with all edges empty take a corner; as second player holding
        the centre, take a corner next to a taken edge, else an edge; else the centre,
        else a corner."""
        v = s.variant
        if v.cells != 9 or v.max_marks is not None or bin(s.x | s.o).count("1") >= 4:
            return []
        taken = s.x | s.o
        edges = [c for c in (1, 3, 5, 7) if taken >> c & 1]
        corners: list[Cell] = [c for c in (0, 2, 6, 8) if c in sound]
        if s.to_move == 0 and not edges:  # first player
            return corners
        if s.to_move == 1 and s.o >> 4 & 1:  # second player holds the centre
            if edges:
                near = {1: (0, 2), 3: (0, 6), 5: (2, 8), 7: (6, 8)}
                return sorted({c for e in edges for c in near[e] if c in sound})
            return [c for c in (1, 3, 5, 7) if c in sound]
        if 4 in sound:
            return [4]
        return corners


def _sound(child: State) -> bool:
    """After our move into ``child``: the opponent has no forcing line to a win, and if
    our move was a two-in-a-row, their forced block leaves us a move after which they
    still have none (a block may set up forks we cannot all cover)."""
    if _forces_win(child):
        return False
    mine = next_wins(child)
    if len(mine) != 1:
        return True
    reply = child._play_unchecked(mine[0])
    if reply.outcome is not None:
        return True
    for m in candidates(reply):
        after = reply._play_unchecked(m)
        if after.outcome is not None or not (winning_cells(after) or _forces_win(after)):
            return True
    return False


def _could_fork(s: State) -> bool:
    """Could the opponent, were it their move, fork or force a fork?"""
    return _forces_win(passed(s))


def _forcing(child: State, depth: int = 0) -> bool:
    """After our move into ``child``: do our threats win by force? Two threats win; one
    forces the opponent's block, after which we must be able to go on forcing."""
    if child.outcome is not None or winning_cells(child):
        return False  # the game is over, or the opponent wins before we can
    if threats_after(child) >= 2:
        return True
    mine = next_wins(child)
    if len(mine) != 1:
        return False
    reply = child._play_unchecked(mine[0])  # the opponent's forced block
    return reply.outcome is None and _forces_win(reply, depth + 1)


def _forces_win(state: State, depth: int = 0) -> bool:
    """Can the side to move force a win by threats alone: win now, fork, or make a
    threat whose forced block lets it go on (answering any counter-threat on the way,
    as the block rule says, since a move that leaves the opponent a win is skipped)?"""
    if state.outcome is not None:
        return False
    if winning_cells(state):
        return True
    if depth > (_DEPTH if state.variant.cells <= 9 else 0):
        return False
    return any(_forcing(state._play_unchecked(m), depth) for m in candidates(state))


class HeuristicStrategy:
    """The simpler checklist: win, block, fork, block a fork, centre, first free cell."""

    name = "heuristic"

    def choose(self, state: State, rng: random.Random) -> Cell:
        s = bare(state)
        wins = winning_cells(s)
        if wins:
            return _pick(rng, wins)
        blocks = winning_cells(passed(s))
        moves = s.legal_moves()
        blocks = [b for b in blocks if b in moves]
        if blocks:
            return _pick(rng, blocks)
        cand = candidates(s)
        forks = [m for m in cand if threats_after(s._play_unchecked(m)) >= 2]
        if forks:
            return _pick(rng, forks)
        opponent = passed(s)
        theirs = [f for f in candidates(opponent) if f in moves
                  and threats_after(opponent._play_unchecked(f)) >= 2]  # fmt: skip
        if theirs:
            return _pick(rng, theirs)
        v = s.variant
        centre = (v.rows // 2) * v.cols + v.cols // 2
        if centre in moves:
            return centre
        return moves[0]
