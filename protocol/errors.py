"""One exception tree for ttt-arena, rooted at `ArenaError`, and the registry of its codes.

Every error carries a stable `code` and a message a person can read. Clients act
on the code, never on the message. Codes that travel on the wire (``error.code``)
are the members of `ErrorCode`; codes of errors that stay on one machine (a bad
command line, a lost connection) are the members of `LocalCode`. docs/protocol.md's
table is generated from `ErrorCode`, and the test suite checks that a real server
sends each of them in at least one test.
"""

from __future__ import annotations

from enum import StrEnum


class _Coded(StrEnum):
    """A code whose value is its wire spelling, with a one-line ``meaning``."""

    meaning: str

    def __new__(cls, value: str, meaning: str) -> _Coded:
        member = str.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member


class ErrorCode(_Coded):
    """Every code a server sends in an ``error`` frame, with what it means."""

    # --- the frame itself (nothing was read from it but, when possible, its ref) ---
    BAD_JSON = (
        "bad_json",
        "the frame is not UTF-8 JSON text (a lone surrogate such as \\ud800 is not text), the JSON "
        "is nested too deep (about 200 levels), or it is not an object",
    )
    BINARY_FRAME = "binary_frame", "frames must be JSON text, not binary"
    FRAME_TOO_LARGE = (
        "frame_too_large",
        "the frame is larger than limits.max_frame (one over 4 times that closes the connection, 1009)",
    )
    UNKNOWN_TYPE = "unknown_type", "the frame's type is missing or names no client message"
    BAD_MESSAGE = (
        "bad_message",
        "a field is missing, unknown or of the wrong type (when no more specific code applies)",
    )
    # --- the connection ---
    HELLO_FIRST = "hello_first", "the first message must be hello"
    ALREADY_HELLO = "already_hello", "hello was already accepted on this connection"
    PROTOCOL_VERSION = "protocol_version", "the client's protocol version is not supported"
    BAD_NAME = (
        "bad_name",
        "a player name (in NFKC form) must be 1 to 24 printable characters with no control, "
        "format or invisible ones, no outer or double spaces, letters of one script and not all "
        "look-alikes of Latin ones, and at most 2 combining marks on a letter",
    )
    NAME_TAKEN = (
        "name_taken",
        "another player already has that name (come back with its token to be that player)",
    )
    BAD_TOKEN = "bad_token", "the token matches no player"
    RATE_LIMITED = "rate_limited", "too many messages; wait retry_after seconds"
    SHUTTING_DOWN = "shutting_down", "the server is shutting down"
    INTERNAL = "internal", "the server failed to handle the message; nothing was changed"
    STORE_UNAVAILABLE = (
        "store_unavailable",
        "the server cannot store anything just now (its disk is failing): nothing was changed and "
        "games' clocks are paused; read-only requests still work; try again after retry_after seconds",
    )
    TOO_MANY_ACCOUNTS = (
        "too_many_accounts",
        "too many new players from your address lately; try again after retry_after seconds "
        "(or come back with a token)",
    )
    ROOM_MOVING = (
        "room_moving",
        "the room's node stopped renewing its lease and another node is taking the room over: "
        "nothing was changed; try again (on any node) after retry_after seconds",
    )
    # --- a new room or game ---
    UNKNOWN_VARIANT = "unknown_variant", "the variant name matches no variant"
    BAD_TIME_CONTROL = (
        "bad_time_control",
        "the time control is unknown or out of range (move_ms and base_ms 100 to 86400000, "
        "increment_ms 0 to 3600000)",
    )
    BAD_PLY_CAP = (
        "bad_ply_cap",
        "a ply cap is 1 to 10000, and only allowed where marks vanish (tactic-toe)",
    )
    BAD_OPENING = "bad_opening", "the opening moves are not a legal, unfinished game of that variant"
    TOO_MANY_ROOMS = "too_many_rooms", "you are in too many rooms at once (limits.max_rooms)"
    # --- rooms and seats ---
    NO_SUCH_ROOM = "no_such_room", "no room has that id (or it is private and the invite code is wrong)"
    SEAT_TAKEN = "seat_taken", "that seat is occupied (or kept for an arranged game)"
    ROOM_FULL = "room_full", "both seats are occupied"
    ALREADY_SEATED = "already_seated", "you already hold a seat in that room"
    NOT_IN_ROOM = "not_in_room", "you are neither seated nor spectating in that room"
    NOT_SEATED = "not_seated", "only a seated player may do that"
    NO_GAME = "no_game", "no game is in progress in that room (or the other seat is empty)"
    GAME_IN_PROGRESS = "game_in_progress", "that cannot be done while a game is in progress"
    # --- moves ---
    NOT_YOUR_TURN = "not_your_turn", "it is the other player's turn"
    MALFORMED_MOVE = "malformed_move", "the move's cell is not an integer"
    CELL_OUT_OF_RANGE = "cell_out_of_range", "the cell number is outside the board"
    CELL_OCCUPIED = "cell_occupied", "the cell holds a mark"
    CELL_VACATING = (
        "cell_vacating",
        "tactic-toe: the cell holds your own oldest mark, which leaves as you move",
    )
    GAME_OVER = "game_over", "the game has already ended (a flag may have fallen before the move came)"
    # --- challenges and arranged games ---
    NO_SUCH_PLAYER = "no_such_player", "no player online has that name"
    SELF_CHALLENGE = (
        "self_challenge",
        "you cannot challenge yourself (nor arrange a game you play in: challenge instead)",
    )
    SAME_PLAYER = "same_player", "an arranged game needs two different players"
    BAD_LEVEL = "bad_level", "the challenged player offers no such level (see its levels in the lobby)"
    NO_SUCH_CHALLENGE = "no_such_challenge", "no pending challenge has that id for you"
    TOO_MANY_CHALLENGES = (
        "too_many_challenges",
        "you (or the player you challenge) have too many challenges pending (limits.max_challenges)",
    )


class LocalCode(_Coded):
    """Codes of errors raised and reported on one machine; never sent by a server."""

    ERROR = "error", "an error with no more specific code"
    RULES_ERROR = "rules_error", "the rules refuse the request"
    ILLEGAL_MOVE = "illegal_move", "the rules refuse the move"
    CONNECTION_LOST = "connection_lost", "the connection closed before the reply came"
    REDIRECT = "redirect", "the room lives on another node (a server answers with redirect, not error)"
    REDIRECT_LOOP = "redirect_loop", "the servers kept redirecting the request"
    BAD_STRATEGY = "bad_strategy", "the bot strategy cannot be made or used"
    BAD_TOURNAMENT = "bad_tournament", "the tournament settings do not make a tournament"
    BAD_MOVE_LIST = "bad_move_list", "the moves to analyse are not a game of that variant"
    UNSOLVABLE_VARIANT = "unsolvable_variant", "the solver cannot solve that variant"
    FEED_ERROR = "feed_error", "the event feed failed"
    BAD_MQTT_URL = "bad_mqtt_url", "the MQTT URL cannot be used"
    BAD_TOPIC_KEY = "bad_topic_key", "a feed topic part is empty or holds MQTT wildcards"
    MQTT_UNREACHABLE = "mqtt_unreachable", "the MQTT broker cannot be reached"
    ENGINE_ERROR = "engine_error", "an external engine failed"
    ENGINE_REFUSED = "engine_refused", "the engine's protocol cannot express the variant, or it refused"
    ENGINE_TIMEOUT = "engine_timeout", "the engine did not answer in time (it loses the game)"
    ENGINE_ILLEGAL = "engine_illegal", "the engine answered garbage or an illegal move (it loses the game)"
    ENGINE_CRASHED = "engine_crashed", "the engine process died (it loses the game; a fresh one starts)"


class ArenaError(Exception):
    """Root of every error ttt-arena raises on purpose.

    ``code`` is a member of `ErrorCode` or `LocalCode` (typed ``str`` so that the
    code of an error a server sent can be carried as received); a test checks
    every subclass.
    """

    code: str = LocalCode.ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Refusal(ArenaError):
    """A request a server refuses, with the `ErrorCode` it answers. Nothing changed."""

    code: ErrorCode

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class ProtocolError(Refusal):
    """A frame that is not a valid client message.

    ``ref`` is the frame's own ``ref`` when the frame is a JSON object whose ``ref``
    is a valid ref (a string of at most 64 characters), so the error can answer it.
    """

    def __init__(self, code: ErrorCode, message: str, ref: str | None = None) -> None:
        super().__init__(code, message)
        self.ref = ref


class RulesError(ArenaError):
    """A request the rules of the game refuse. The state is never changed."""

    code: str = LocalCode.RULES_ERROR


class UnknownVariant(RulesError):
    """The variant name matches no registered variant or `RxCkK` form."""

    code = ErrorCode.UNKNOWN_VARIANT


class IllegalMove(RulesError):
    """Root of the reasons a move is refused."""

    code: str = LocalCode.ILLEGAL_MOVE


class MalformedMove(IllegalMove):
    """The move is not a cell number (an int; bools and strings are refused)."""

    code = ErrorCode.MALFORMED_MOVE


class CellOutOfRange(IllegalMove):
    """The cell number is outside the board."""

    code = ErrorCode.CELL_OUT_OF_RANGE


class CellOccupied(IllegalMove):
    """The cell holds a mark."""

    code = ErrorCode.CELL_OCCUPIED


class CellVacating(CellOccupied):
    """Tactic-toe: the cell holds the mover's own oldest mark, which leaves as this
    move is made; it is not empty before the move, so the mover may not take it."""

    code = ErrorCode.CELL_VACATING


class GameOver(IllegalMove):
    """The game has already ended."""

    code = ErrorCode.GAME_OVER
