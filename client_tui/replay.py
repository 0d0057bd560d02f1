"""Every position of one game, rebuilt from its move list by the pure rules.

The client needs more than the board the server sends: which mark each move
removed (tactic-toe's move list says ``c2 (−b2)``), how many moves each mark has
left, how often a position was seen, and the board at any earlier ply for
stepping through a finished game.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import messages as m
from protocol.rules import IllegalMove, Mark, State, Variant


@dataclass(frozen=True)
class Ply:
    """One move: the cell taken, by whom, and the mark it removed (tactic-toe)."""

    cell: int
    mark: m.MarkName
    vanished: int | None


def mark_name(mark: Mark) -> m.MarkName:
    return "x" if mark is Mark.X else "o"


class Replay:
    """The states after 0, 1, ... n plies of ``moves`` (stops at an illegal move)."""

    def __init__(self, variant: Variant, moves: list[int], ply_cap: int | None = None) -> None:
        state = State.start(variant, ply_cap=ply_cap)
        self.states = [state]
        self.plies: list[Ply] = []
        for cell in moves:
            leaving = state.next_to_vanish(state.to_move)
            try:
                after = state.play(cell)
            except IllegalMove:
                break
            self.plies.append(Ply(cell, mark_name(state.to_move), leaving))
            state = after
            self.states.append(state)

    @property
    def last(self) -> State:
        return self.states[-1]

    def board(self, ply: int) -> list[m.MarkName | None]:
        return [None if mk is None else mark_name(mk) for mk in self.states[ply].board()]

    def badges(self, ply: int) -> dict[int, int]:
        """Per marked cell, how many of its owner's moves it has left (tactic-toe): the
        oldest of three shows 1, it leaves on its owner's next move."""
        state = self.states[ply]
        limit = state.variant.max_marks
        if limit is None:
            return {}
        out: dict[int, int] = {}
        for mark in (Mark.X, Mark.O):
            queue = state.marks(mark)
            for age, cell in enumerate(queue):
                out[cell] = limit - len(queue) + age + 1
        return out

    def seen(self, ply: int) -> int:
        """How many times the position after ``ply`` plies has stood (1: the first time)."""
        state = self.states[ply]
        return state.history.count(state.key()) + 1 if state.variant.max_marks is not None else 1
