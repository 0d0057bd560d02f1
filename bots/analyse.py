"""Grade each move of a game against the solved table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bots.solver import solve
from protocol.errors import ArenaError
from protocol.rules import IllegalMove, State


class BadMoveList(ArenaError):
    """A move list that cannot be replayed; the message names the ply."""

    code = "bad_move_list"


@dataclass(frozen=True)
class Grade:
    """One ply: the mover's value before and after the move (+1/0/-1), and the verdict.

    ``grade`` is ``optimal`` (a best move), ``inaccuracy`` (the value is kept but a
    win gets slower or a loss faster) or ``blunder`` (a win or draw thrown away).
    """

    ply: int
    move: int
    value_before: int
    value_after: int
    grade: str
    best: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def grade_moves(variant_name: str, moves: Sequence[int]) -> list[Grade]:
    """Grade every move of ``moves`` played from the empty board of ``variant_name``.

    Raises:
        BadMoveList: a move is illegal (the error names the ply, counted from 1).
        Unsolvable, UnknownVariant: the variant cannot be graded.
    """
    table = solve(variant_name)
    state = State.start(variant_name, draw_rules=False)
    grades = []
    for ply, move in enumerate(moves, start=1):
        try:
            state.check(move)
        except IllegalMove as exc:
            raise BadMoveList(f"ply {ply}: move {move!r} is illegal: {exc.message}") from None
        scored = table.move_values(state)
        best = tuple(table.best_moves(state))
        before = table.value(state)
        after = scored[move][0]
        if move in best:
            grade = "optimal"
        elif after < before:
            grade = "blunder"
        else:
            grade = "inaccuracy"
        grades.append(Grade(ply, move, before, after, grade, best))
        state = state._play_unchecked(move)
    return grades
