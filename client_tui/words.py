"""What the client says to a person: cell names in the board's own coordinates,
error codes turned into short sentences, and a move checked before it is sent.

Pure: no widgets, no sockets. Codes come from docs/protocol.md; an unknown code
falls back to the server's own message (it is written for people too).
"""

from __future__ import annotations

from client_tui.model import RoomView
from protocol.rules import (
    COLUMN_LETTERS,
    CellOccupied,
    CellVacating,
    GameOver,
    IllegalMove,
    Variant,
    cell_name,
)

__all__ = ["LETTERS", "cell_name", "error_text", "move_problem", "parse_cell", "unreachable_text"]

LETTERS = COLUMN_LETTERS


def parse_cell(text: str, variant: Variant) -> int | None:
    """The cell named ``text`` (``h8``, ``a10``) on ``variant``'s board, or None."""
    return variant.cell_named(text)


#: Every error code a person may meet, as a sentence (no code shown).
ERRORS = {
    "bad_name": "that name can't be used: 1-24 printable characters",
    "name_taken": "someone else has that name on this server",
    "bad_token": "this server does not know your saved identity",
    "protocol_version": "this client is too old or too new for the server",
    "rate_limited": "slow down: too many requests",
    "unknown_variant": "no such game variant",
    "bad_time_control": "that clock is out of range",
    "bad_ply_cap": "a ply cap only applies to tactic-toe (1 to 10000)",
    "bad_opening": "those opening moves are not a legal game",
    "no_such_room": "that room is gone (or the invite code is wrong)",
    "seat_taken": "that seat is taken",
    "room_full": "both seats are taken: you can watch (w)",
    "already_seated": "you already sit in that room",
    "not_in_room": "you are not in that room any more",
    "not_seated": "only the players can do that",
    "not_your_turn": "it is not your turn",
    "no_game": "there is no game going on there",
    "game_in_progress": "not while a game is being played",
    "too_many_rooms": "you are in too many rooms: leave one first",
    "no_such_player": "nobody of that name is online",
    "no_such_challenge": "that challenge is no longer open",
    "self_challenge": "you can't challenge yourself",
    "same_player": "a game needs two different players",
    "bad_level": "that bot has no such level",
    "malformed_move": "that is not a cell",
    "cell_out_of_range": "that cell is off the board",
    "cell_occupied": "that cell is taken",
    "cell_vacating": "that is your oldest mark: it leaves as you move, so you can't play there",
    "game_over": "the game is over",
    "shutting_down": "the server is shutting down",
    "internal": "the server failed on that; nothing changed",
    "bad_json": "the server could not read that",
    "bad_message": "the server could not read that",
    "unknown_type": "the server does not know that request (an older server?)",
    "store_unavailable": "the server cannot save right now (its disk); try again in a moment",
    "too_many_accounts": "too many new players from your address: wait, or come back with your token",
    "room_moving": "that game's server went down; another is taking it over: try again in a moment",
    "too_many_challenges": "too many challenges are waiting: cancel one, or wait for answers",
    "frame_too_large": "that message was too large for the server",
    "hello_first": "the server expected a hello first",
    "already_hello": "already connected on this line",
    "binary_frame": "the server could not read that",
}


def error_text(code: str, message: str) -> str:
    """A short sentence for error ``code`` (the server's message when the code is new)."""
    return ERRORS.get(code, message)


def unreachable_text(delay: float | None = None) -> str:
    """What a refused or timed-out connection means to a person."""
    if delay is None:
        return "server unreachable"
    return f"server unreachable, retrying in {delay:.0f} s"


def move_problem(view: RoomView, cell: int) -> str | None:
    """Why ``cell`` can't be played now in ``view`` (None: send it), in the board's words."""
    if view.role == "spectator":
        return "you are watching this game"
    if not view.playing:
        return "no game in progress: r asks for a rematch"
    if not view.my_turn:
        return f"it is {view.name_of(view.to_move)}'s turn"
    state = view.position()
    name = cell_name(cell, view.variant.cols)
    if state is None:
        return None  # the server decides
    try:
        state.check(cell)
    except CellVacating:
        return f"{name} is your oldest mark: it leaves as you move, so you can't play there"
    except CellOccupied:
        return f"{name} is taken"
    except GameOver:
        return "the game is over"
    except IllegalMove as exc:
        return f"{name}: {exc.message}"
    return None
