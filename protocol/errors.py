"""One exception tree for ttt-arena, rooted at `ArenaError`.

Every error carries a stable `code` (sent on the wire as `error.code`) and a
message a person can read. Clients act on the code, never on the message.
"""

from __future__ import annotations


class ArenaError(Exception):
    """Root of every error ttt-arena raises on purpose."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RulesError(ArenaError):
    """A request the rules of the game refuse. The state is never changed."""

    code = "rules_error"


class UnknownVariant(RulesError):
    """The variant name matches no registered variant or `RxCkK` form."""

    code = "unknown_variant"


class IllegalMove(RulesError):
    """Root of the reasons a move is refused."""

    code = "illegal_move"


class MalformedMove(IllegalMove):
    """The move is not a cell number (an int; bools and strings are refused)."""

    code = "malformed_move"


class CellOutOfRange(IllegalMove):
    """The cell number is outside the board."""

    code = "cell_out_of_range"


class CellOccupied(IllegalMove):
    """The cell holds a mark."""

    code = "cell_occupied"


class CellVacating(CellOccupied):
    """Tactic-toe: the cell holds the mover's own oldest mark, which leaves as this
    move is made; it is not empty before the move, so the mover may not take it."""

    code = "cell_vacating"


class GameOver(IllegalMove):
    """The game has already ended."""

    code = "game_over"
