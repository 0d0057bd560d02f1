"""Small honest strategies for tournament tests, loadable by bot processes as ``tournament_strategies:NAME``
(with ``tests/`` on PYTHONPATH), so runner tests need nothing but the rules engine."""

from __future__ import annotations

import random

from protocol.rules import Cell, State


class RandomMover:
    """Uniform over the legal moves."""

    def choose(self, state: State, rng: random.Random) -> Cell:
        return rng.choice(state.legal_moves())


class Greedy:
    """Wins at once when it can, else blocks the opponent's immediate win, else plays at random."""

    def choose(self, state: State, rng: random.Random) -> Cell:
        moves = state.legal_moves()
        for cell in moves:
            after = state.play(cell)
            if after.outcome is not None and after.outcome.winner is state.to_move:
                return cell
        threats = [c for c in moves if _wins_for_opponent(state, c)]
        return rng.choice(threats) if threats else rng.choice(moves)


def _wins_for_opponent(state: State, cell: Cell) -> bool:
    """Would the opponent win by taking ``cell`` if it were their move now?"""
    line_bits = state.o if state.to_move == 0 else state.x
    bit = 1 << cell
    return any(line & bit and (line & ~bit) & line_bits == line & ~bit for line in state.variant.lines)


class Sleeper:
    """Thinks far too long (0.5 s a move, blocking): loses on time under a short clock."""

    def choose(self, state: State, rng: random.Random) -> Cell:
        import time

        time.sleep(0.5)
        return state.legal_moves()[0]


class Slow:
    """Greedy, but takes 20 ms over each move (a thinking time that shows in the journal)."""

    def choose(self, state: State, rng: random.Random) -> Cell:
        import time

        time.sleep(0.02)
        return Greedy().choose(state, rng)


class Illegal:
    """Always answers a cell off the board: an illegal move."""

    def choose(self, state: State, rng: random.Random) -> Cell:
        return state.variant.cells
