"""`rule` and `heuristic`: bots that play by a skilled human's checklist.

Every check is made by playing the move on a bare position and looking, so the
vanishing marks of tactic-toe are reasoned about for free: a two-in-a-row that holds
the mover's own next-to-vanish mark cannot be completed (the third mark's arrival
removes it) and a line blocked only by the opponent's next-to-vanish mark shows up
as a threat once the opponent is to move.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from bots.strategies.base import bare, passed
from protocol.rules import Cell, State

#: Boards larger than this skip the three-ply fork-blocking look-ahead.
_SMALL = 16


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
    near = []
    for c in moves:
        r, col = divmod(c, v.cols)
        found = False
        for dr in (-2, -1, 0, 1, 2):
            rr = r + dr
            if not 0 <= rr < v.rows:
                continue
            for dc in (-2, -1, 0, 1, 2):
                cc = col + dc
                if 0 <= cc < v.cols and taken >> (rr * v.cols + cc) & 1:
                    found = True
                    break
            if found:
                break
        if found:
            near.append(c)
    return tuple(near) or moves


def winning_cells(state: State) -> list[Cell]:
    """Cells where the side to move completes a line now."""
    if state.outcome is not None:
        return []
    return [c for c in candidates(state) if state._play_unchecked(c).outcome is not None
            and state._play_unchecked(c).outcome.winner is state.to_move]  # type: ignore[union-attr]  # fmt: skip


def threats_after(child: State) -> int:
    """How many cells the player who just moved into ``child`` could win on if it were
    their turn again (their own oldest mark leaving first, in tactic-toe)."""
    if child.outcome is not None:
        return 0
    return len(winning_cells(passed(child)))


def _pick(rng: random.Random, cells: Sequence[Cell]) -> Cell:
    return rng.choice(sorted(cells))


def _corners(state: State) -> tuple[Cell, ...]:
    v = state.variant
    return (0, v.cols - 1, v.cells - v.cols, v.cells - 1)


class RuleStrategy:
    """Win; block; the 3x3 opening book; fork; block a fork by forcing; attack; else any."""

    name = "rule"

    def choose(self, state: State, rng: random.Random) -> Cell:
        s = bare(state)
        wins = winning_cells(s)
        if wins:
            return _pick(rng, wins)
        moves = candidates(s)
        children = {m: s._play_unchecked(m) for m in moves}
        safe = [m for m in moves if not winning_cells(children[m])] or list(moves)
        book = [m for m in self._opening(s, safe) if not _has_fork(children[m])]
        if book:
            return _pick(rng, book)
        forks = [m for m in safe if threats_after(children[m]) >= 2]
        if forks:
            return _pick(rng, forks)
        if s.variant.cells <= _SMALL:
            blocks = self._block_fork(s, safe, children)
            if blocks:
                return _pick(rng, blocks)
        attacks = [m for m in safe if threats_after(children[m]) >= 1]
        if s.variant.cells <= _SMALL:
            attacks = [m for m in attacks if _sound(children[m])]
            safe = [m for m in safe if not _has_fork(children[m])] or safe
        if attacks:
            return _pick(rng, attacks)
        v = s.variant
        centre = (v.rows // 2) * v.cols + v.cols // 2
        if centre in safe:
            return centre
        corners = [c for c in _corners(s) if c in safe]
        return _pick(rng, corners or safe)

    @staticmethod
    def _opening(s: State, safe: list[Cell]) -> list[Cell]:
        v = s.variant
        if v.cells != 9 or v.max_marks is not None or bin(s.x | s.o).count("1") >= 4:
            return []
        taken = s.x | s.o
        edges = [c for c in (1, 3, 5, 7) if taken >> c & 1]
        corners: list[Cell] = [c for c in (0, 2, 6, 8) if c in safe]
        if s.to_move == 0:  # first player
            return corners if not edges else []
        if s.o >> 4 & 1:  # second player holds the centre
            if edges:
                near = {1: (0, 2), 3: (0, 6), 5: (2, 8), 7: (6, 8)}
                found: list[Cell] = [c for e in edges for c in near[e] if c in safe]
                return found
            return [c for c in range(1, 9, 2) if c in safe]
        if 4 in safe:
            return [4]
        return corners

    @staticmethod
    def _block_fork(s: State, safe: list[Cell], children: dict[Cell, State]) -> list[Cell]:
        opponent = passed(s)
        if not any(threats_after(opponent._play_unchecked(f)) >= 2 for f in candidates(opponent)):
            return []
        forcing = [m for m in safe if len(winning_cells(passed(children[m]))) == 1 and _sound(children[m])]
        if forcing:
            return forcing
        return [m for m in safe if not _has_fork(children[m])]


def _sound(child: State, depth: int = 0) -> bool:
    """After a one-threat attack, does the opponent's forced block leave them no double threat
    and no fork?"""
    if child.outcome is not None:
        return True
    mine = winning_cells(passed(child))
    if len(mine) != 1:
        return len(mine) > 1
    reply = child._play_unchecked(mine[0])
    if reply.outcome is not None:
        return False
    theirs = winning_cells(passed(reply))
    if len(theirs) >= 2:
        return False
    if len(theirs) == 1 and depth < 4:
        block = reply._play_unchecked(theirs[0])  # our forced answer
        if winning_cells(block):
            return False
        return (threats_after(block) >= 1 and _sound(block, depth + 1)) or not _has_fork(block)
    return not _has_fork(reply)


def _has_fork(state: State, depth: int = 0) -> bool:
    """Can the side to move force a win by threats: a fork now, or a single threat whose
    forced block leaves them threat-free and a fork (or another such threat) later?"""
    if state.outcome is not None:
        return False
    if winning_cells(state):
        return True
    if depth > (3 if state.variant.cells <= 9 else 0):
        return False
    for m in candidates(state):
        child = state._play_unchecked(m)
        if child.outcome is not None or winning_cells(child):
            continue
        mine = winning_cells(passed(child))
        if len(mine) >= 2:
            return True
        if len(mine) == 1:
            reply = child._play_unchecked(mine[0])
            if reply.outcome is not None:
                continue
            theirs = winning_cells(passed(reply))
            if len(theirs) == 1:  # we block, and the block itself may fork
                block = reply._play_unchecked(theirs[0])
                if block.outcome is None and not winning_cells(block) and threats_after(block) >= 2:
                    return True
                continue
            if not theirs and _has_fork(reply, depth + 1):
                return True
    return False


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
