"""The wire vocabulary: one strict pydantic model per message, one union per direction.

Every frame is a JSON text object whose ``type`` names the message. Validation
is strict (``"1"`` is not ``1``) and unknown fields are refused, so a frame is
either exactly one of these models or an error. A request may carry ``ref``
(any short string the client picks); the one reply to it echoes that ``ref``.

Room events (``seats``, ``game_started``, ``moved``, ``game_over``,
``player_disconnected``, ``player_reconnected``, ``rematch_offered``,
``room_closed``, ``snapshot``) carry ``room`` and a per-room ``seq`` that grows
by one with each event, so a client that comes back can ask for what it missed.

Marks travel as ``"x"``/``"o"``; times as whole milliseconds.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

#: Bumped when a change is not backwards compatible; sent in `Hello` and `Welcome`.
PROTOCOL_VERSION = 1

#: Every error code the server sends, with what it means. Clients act on the code.
ERROR_CODES: dict[str, str] = {
    "bad_json": "the frame is not a JSON object (or not UTF-8 text)",
    "bad_message": "the frame is JSON but not a valid message: unknown type, missing or wrong field",
    "frame_too_large": "the frame is larger than the server's limit (the connection is closed, 1009)",
    "bad_name": "a player name must be 1 to 24 printable characters with no control or escape characters",
    "name_taken": "another player already has that name (come back with its token to be that player)",
    "bad_token": "the token matches no player",
    "already_online": "that player is connected on another connection",
    "hello_first": "the first message must be hello",
    "already_hello": "hello was already accepted on this connection",
    "protocol_version": "the client's protocol version is not supported",
    "rate_limited": "too many messages; wait retry_after seconds",
    "unknown_variant": "the variant name matches no variant",
    "bad_time_control": "the time control is out of the allowed range",
    "bad_ply_cap": "a ply cap is only allowed where marks vanish (tactic-toe), 1 to 10000",
    "bad_opening": "the opening moves are not a legal, unfinished game of that variant",
    "no_such_room": "no room has that id (or it is private and the invite code is wrong)",
    "seat_taken": "that seat is occupied",
    "room_full": "both seats are occupied",
    "already_seated": "you already hold a seat in that room",
    "not_in_room": "you are neither seated nor spectating in that room",
    "not_seated": "only a seated player may do that",
    "not_your_turn": "it is the other player's turn",
    "no_game": "no game is in progress in that room",
    "game_in_progress": "that cannot be done while a game is in progress",
    "too_many_rooms": "you are in too many rooms at once",
    "no_such_player": "no player online has that name",
    "no_such_challenge": "no pending challenge has that id for you",
    "self_challenge": "you cannot challenge yourself (nor arrange a game you play in: challenge instead)",
    "same_player": "an arranged game needs two different players",
    "bad_level": "the challenged player offers no such level (see its `levels` in the lobby)",
    "malformed_move": "the move is not a cell number",
    "cell_out_of_range": "the cell number is outside the board",
    "cell_occupied": "the cell holds a mark",
    "cell_vacating": "tactic-toe: the cell holds your own oldest mark, which leaves as you move",
    "game_over": "the game has already ended",
    "shutting_down": "the server is shutting down",
    "binary_frame": "frames must be JSON text, not binary",
    "internal": "the server failed to handle the message; nothing was changed",
}

#: WebSocket close codes the server uses, with when.
CLOSE_CODES: dict[int, str] = {
    1000: "normal closure (the client said goodbye)",
    1001: "going away: the server is shutting down (SIGTERM)",
    1002: "protocol error at the WebSocket level",
    1008: "policy violation: no hello in time, a bad hello, too many connections from one address, "
    "or too many bad frames",
    1009: "message too big: a frame over the size limit",
    1011: "internal error",
}

Ref = Annotated[str, Field(max_length=64)]
RoomId = Annotated[str, Field(min_length=1, max_length=32)]
Cell = Annotated[int, Field(ge=0, le=224)]
MarkName = Literal["x", "o"]
Kind = Literal["human", "bot"]
VariantName = Annotated[str, Field(min_length=1, max_length=16)]
Reason = Annotated[str, Field(max_length=200)]
#: A playing strength a bot offers (``easy``, ``best`` ...): letters, digits, ``-`` and ``_``.
Level = Annotated[str, Field(min_length=1, max_length=16, pattern=r"^[A-Za-z0-9_-]+$")]


def check_name(name: str) -> str | None:
    """Why ``name`` is not a valid player name, or None when it is."""
    if not 1 <= len(name) <= 24:
        return "a name must be 1 to 24 characters"
    if not name.isprintable() or name != name.strip():
        return "a name must be printable, with no control or escape characters and no outer spaces"
    return None


class Model(BaseModel):
    """Base of every message: strict types, no unknown fields."""

    model_config = ConfigDict(strict=True, extra="forbid")


# --- values shared by several messages -------------------------------------------


class NoClock(Model):
    """No time limit."""

    kind: Literal["none"] = "none"


class PerMove(Model):
    """Each move must come within ``move_ms``; the clock resets after every move."""

    kind: Literal["per_move"] = "per_move"
    move_ms: Annotated[int, Field(ge=100, le=86_400_000)]


class Increment(Model):
    """Fischer clock: ``base_ms`` each, plus ``increment_ms`` after every own move."""

    kind: Literal["increment"] = "increment"
    base_ms: Annotated[int, Field(ge=100, le=86_400_000)]
    increment_ms: Annotated[int, Field(ge=0, le=3_600_000)] = 0


TimeControl = Annotated[NoClock | PerMove | Increment, Field(discriminator="kind")]


class Clocks(Model):
    """Milliseconds left for each player when the event was made, and whose clock runs."""

    x_ms: int | None
    o_ms: int | None
    running: MarkName | None


class PlayerInfo(Model):
    """A player as others see them. ``ratings`` maps variant to a rounded Glicko-2 rating."""

    id: str
    name: str
    kind: Kind
    ratings: dict[str, int] = {}
    online: bool = True
    #: Levels of play a bot offers in challenges, weakest first (empty: one strength).
    levels: list[str] = []


class Seats(Model):
    """Who sits where, by player name (None: free)."""

    x: str | None = None
    o: str | None = None


class RoomSummary(Model):
    """A room as the lobby lists it."""

    id: RoomId
    variant: str
    time_control: TimeControl
    rated: bool
    private: bool
    ply_cap: int | None
    seats: Seats
    status: Literal["waiting", "playing", "finished", "closed"]
    spectators: int
    games: int
    #: The node hosting the room when several nodes share a feed (None: this one).
    node: str | None = None


class Result(Model):
    """How a game ended. ``reason`` is a `protocol.rules.Termination` value."""

    result: Literal["1-0", "0-1", "1/2-1/2"]
    winner: MarkName | None
    reason: Literal[
        "line", "full_board", "repetition", "ply_cap", "resignation", "timeout", "abandoned", "aborted"
    ]
    line: list[int] = []


class GameSnapshot(Model):
    """Everything needed to draw a game. ``next_to_vanish`` names, per mark, the cell
    that leaves when that player next moves (tactic-toe; None elsewhere or while
    a player has fewer than 3 marks)."""

    game: str
    number: int
    x: str
    o: str
    moves: list[int]
    board: list[MarkName | None]
    to_move: MarkName
    ply: int
    next_to_vanish: dict[MarkName, int | None]
    clocks: Clocks
    result: Result | None = None


class RoomSnapshot(Model):
    """A room as a member sees it, as of event ``seq``."""

    room: RoomSummary
    seq: int
    games: list[str]
    score: dict[str, float] = {}
    game: GameSnapshot | None = None
    #: Seats whose player dropped, with milliseconds left of their grace period.
    disconnected: dict[MarkName, int] = {}
    rematch: list[MarkName] = []


class LeaderboardEntry(Model):
    rank: int
    player: str
    name: str
    kind: Kind
    rating: float
    rd: float
    games: int


class Limits(Model):
    """What the server enforces on this connection."""

    max_frame: int
    rate_per_s: float
    burst: int
    grace_ms: int
    max_rooms: int


# --- client to server --------------------------------------------------------------


class Hello(Model):
    """First message on a connection. With ``token``, the player comes back as itself."""

    type: Literal["hello"] = "hello"
    name: Annotated[str, Field(max_length=64)]
    kind: Kind = "human"
    protocol: int = PROTOCOL_VERSION
    token: Annotated[str, Field(max_length=128)] | None = None
    #: Bots: the levels of play it offers in challenges, weakest first.
    levels: Annotated[list[Level], Field(max_length=8)] = []
    ref: Ref | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        problem = check_name(value)
        if problem:
            raise ValueError(problem)
        return value


class Resume(Model):
    """After a `Welcome` with a token: rejoin rooms, each with the last ``seq`` seen.

    The reply is `Resumed`; then, per room, the missed events in order, or a `Snapshot`.
    A ``seq`` of 0 (a client that knows nothing of the room yet) always gets a `Snapshot`.
    """

    type: Literal["resume"] = "resume"
    rooms: Annotated[dict[RoomId, Annotated[int, Field(ge=0)]], Field(max_length=64)]
    ref: Ref | None = None


class LobbySubscribe(Model):
    """Reply: `LobbySnapshot`; then `LobbyUpdate` pushes until unsubscribed."""

    type: Literal["lobby_subscribe"] = "lobby_subscribe"
    ref: Ref | None = None


class LobbyUnsubscribe(Model):
    type: Literal["lobby_unsubscribe"] = "lobby_unsubscribe"
    ref: Ref | None = None


class GetLeaderboard(Model):
    """Reply: `Leaderboard` for ``variant``."""

    type: Literal["get_leaderboard"] = "get_leaderboard"
    variant: VariantName = "classic"
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    ref: Ref | None = None


class CreateRoom(Model):
    """Open a room. ``seat`` sits the creator down at once (``random``: either seat).

    Reply: `Joined` (with the invite code when ``private``).
    """

    type: Literal["create_room"] = "create_room"
    variant: VariantName = "classic"
    time_control: TimeControl = NoClock()
    private: bool = False
    rated: bool = True
    ply_cap: Annotated[int, Field(ge=1, le=10_000)] | None = None
    seat: Literal["x", "o", "random"] | None = "random"
    #: Moves played before the clocks start (each game of the series starts from them).
    opening: Annotated[list[Cell], Field(max_length=225)] = []
    ref: Ref | None = None


class Join(Model):
    """Take a seat (``seat`` None: whichever is free). Reply: `Joined`."""

    type: Literal["join"] = "join"
    room: RoomId
    seat: MarkName | None = None
    invite: Annotated[str, Field(max_length=32)] | None = None
    ref: Ref | None = None


class Spectate(Model):
    """Watch a room. Reply: `Joined` with role ``spectator``."""

    type: Literal["spectate"] = "spectate"
    room: RoomId
    invite: Annotated[str, Field(max_length=32)] | None = None
    ref: Ref | None = None


class Leave(Model):
    """Leave a room; leaving a seat mid-game resigns that game. Reply: `Ok`."""

    type: Literal["leave"] = "leave"
    room: RoomId
    ref: Ref | None = None


class Rematch(Model):
    """Ask for (or agree to) the next game of the series, colours swapped. Reply: `Ok`."""

    type: Literal["rematch"] = "rematch"
    room: RoomId
    ref: Ref | None = None


class Challenge(Model):
    """Invite a player or bot by name. Reply: `ChallengeSent`; later the challenger gets
    `ChallengeAccepted` or `ChallengeDeclined`. ``colour`` is the challenger's."""

    type: Literal["challenge"] = "challenge"
    opponent: Annotated[str, Field(min_length=1, max_length=24)]
    variant: VariantName = "classic"
    colour: Literal["x", "o", "random"] = "random"
    time_control: TimeControl = NoClock()
    rated: bool = True
    ply_cap: Annotated[int, Field(ge=1, le=10_000)] | None = None
    #: Moves played before the clocks start.
    opening: Annotated[list[Cell], Field(max_length=225)] = []
    #: One of the opponent's ``levels`` (a bot's playing strength); None: its default.
    level: Level | None = None
    ref: Ref | None = None


class ArrangeGame(Model):
    """Arrange a game between two other players online (a tournament director does this).

    Reply: `GameArranged` with the room, which the director then watches (it is a
    spectator from the start, so it sees every event of the game). Each player gets
    `ChallengeReceived` (``challenger``: the director, ``seat``: its own seat,
    ``opponent``: the other player) and answers as to any challenge; each accepting
    player gets `Joined` in its seat, and the game starts once both are seated. If
    either declines, drops or does not take its seat in time, the director gets
    `ChallengeDeclined` (with ``room`` and ``cause``) for it, then `RoomClosed`; the
    other player is told (`ChallengeCancelled`, or `RoomClosed` if it had sat down).
    """

    type: Literal["arrange_game"] = "arrange_game"
    x: Annotated[str, Field(min_length=1, max_length=24)]
    o: Annotated[str, Field(min_length=1, max_length=24)]
    variant: VariantName = "classic"
    time_control: TimeControl = NoClock()
    rated: bool = False
    ply_cap: Annotated[int, Field(ge=1, le=10_000)] | None = None
    #: Moves played before the clocks start.
    opening: Annotated[list[Cell], Field(max_length=225)] = []
    ref: Ref | None = None


class AcceptChallenge(Model):
    """Reply: `Joined` in the new room (the challenger gets `ChallengeAccepted`); for an
    arranged game, `Joined` in the arranged room, in the seat the challenge named."""

    type: Literal["accept_challenge"] = "accept_challenge"
    challenge: Annotated[str, Field(min_length=1, max_length=32)]
    ref: Ref | None = None


class DeclineChallenge(Model):
    """Reply: `Ok` (the challenger gets `ChallengeDeclined` with ``reason``)."""

    type: Literal["decline_challenge"] = "decline_challenge"
    challenge: Annotated[str, Field(min_length=1, max_length=32)]
    reason: Reason = ""
    ref: Ref | None = None


class Move(Model):
    """Place a mark on ``cell``. Reply: `Ok` with the ``seq`` of the `Moved` event."""

    type: Literal["move"] = "move"
    room: RoomId
    cell: Cell
    ref: Ref | None = None


class Resign(Model):
    """Reply: `Ok`; everyone in the room gets `GameEnded` with reason ``resignation``."""

    type: Literal["resign"] = "resign"
    room: RoomId
    ref: Ref | None = None


class Ping(Model):
    """Reply: `Pong` (application-level round trip; WebSocket pings also run)."""

    type: Literal["ping"] = "ping"
    ref: Ref | None = None


ClientMessage = Annotated[
    Hello
    | Resume
    | LobbySubscribe
    | LobbyUnsubscribe
    | GetLeaderboard
    | CreateRoom
    | Join
    | Spectate
    | Leave
    | Rematch
    | Challenge
    | ArrangeGame
    | AcceptChallenge
    | DeclineChallenge
    | Move
    | Resign
    | Ping,
    Field(discriminator="type"),
]


# --- server to client: replies -------------------------------------------------------


class Welcome(Model):
    """Reply to `Hello`. Keep ``token``: it is the only way to be this player again.
    ``rooms`` lists the rooms where the player holds a seat (to `Resume`)."""

    type: Literal["welcome"] = "welcome"
    player: PlayerInfo
    token: str
    server_version: str
    protocol: int = PROTOCOL_VERSION
    limits: Limits
    rooms: list[str] = []
    ref: Ref | None = None


class Error(Model):
    """A refused request or frame; ``code`` is one of `ERROR_CODES`. Nothing changed."""

    type: Literal["error"] = "error"
    code: str
    message: str
    ref: Ref | None = None
    retry_after: float | None = None


class Ok(Model):
    """A request done. ``seq`` is the room event it caused, if any."""

    type: Literal["ok"] = "ok"
    ref: Ref | None = None
    seq: int | None = None


class Pong(Model):
    type: Literal["pong"] = "pong"
    ref: Ref | None = None


class Joined(Model):
    """Reply to `CreateRoom`, `Join`, `Spectate`, `AcceptChallenge`. ``invite`` is set
    for the creator of a private room; pass it on to whoever should get in."""

    type: Literal["joined"] = "joined"
    room: RoomId
    role: Literal["x", "o", "spectator"]
    invite: str | None = None
    snapshot: RoomSnapshot
    ref: Ref | None = None


class Resumed(Model):
    """Reply to `Resume`: per room, ``replay`` (missed events follow), ``snapshot``
    (a `Snapshot` follows) or ``gone`` (no such room any more)."""

    type: Literal["resumed"] = "resumed"
    rooms: dict[str, Literal["replay", "snapshot", "gone"]]
    ref: Ref | None = None


class LobbySnapshot(Model):
    type: Literal["lobby_snapshot"] = "lobby_snapshot"
    rooms: list[RoomSummary]
    players: list[PlayerInfo]
    ref: Ref | None = None


class LobbyUpdate(Model):
    """Pushed to lobby subscribers: rooms added or changed, rooms gone, players
    online or changed, players gone offline (by id)."""

    type: Literal["lobby_update"] = "lobby_update"
    rooms: list[RoomSummary] = []
    rooms_closed: list[str] = []
    players: list[PlayerInfo] = []
    players_gone: list[str] = []


class Leaderboard(Model):
    type: Literal["leaderboard"] = "leaderboard"
    variant: str
    entries: list[LeaderboardEntry]
    ref: Ref | None = None


class ChallengeSent(Model):
    type: Literal["challenge_sent"] = "challenge_sent"
    challenge: str
    ref: Ref | None = None


class GameArranged(Model):
    """Reply to `ArrangeGame`: the room the game will be played in (the director watches it)."""

    type: Literal["game_arranged"] = "game_arranged"
    room: RoomId
    x: str
    o: str
    ref: Ref | None = None


class ChallengeReceived(Model):
    """Pushed to the challenged player; answer with `AcceptChallenge` or `DeclineChallenge`.

    ``colour`` is the colour of the player you would face: the challenger's, or in a
    game a director arranged (``opponent`` set), the other player's. ``seat`` is yours
    (None: drawn at random when you accept)."""

    type: Literal["challenge_received"] = "challenge_received"
    challenge: str
    challenger: PlayerInfo
    variant: str
    colour: Literal["x", "o", "random"]
    time_control: TimeControl
    rated: bool
    ply_cap: int | None = None
    opening: list[int] = []
    #: The level of play asked for (one of the levels this player offers), if any.
    level: str | None = None
    #: The seat you take if you accept (None: drawn at random).
    seat: MarkName | None = None
    #: In a game a director arranged: the player you would face (None: the challenger).
    opponent: str | None = None


class ChallengeAccepted(Model):
    """Pushed to the challenger: the room is open and both are seated."""

    type: Literal["challenge_accepted"] = "challenge_accepted"
    challenge: str
    room: RoomId
    role: MarkName
    snapshot: RoomSnapshot


class ChallengeDeclined(Model):
    """Pushed to the challenger: ``by`` will not play. For an arranged game (``room`` set),
    ``cause`` says how: it ``declined`` (with ``reason``), went offline (``gone``) or
    did not take its seat in time (``no_answer``); the room is closed next."""

    type: Literal["challenge_declined"] = "challenge_declined"
    challenge: str
    by: str
    reason: str = ""
    room: RoomId | None = None
    cause: Literal["declined", "gone", "no_answer"] = "declined"


class ChallengeCancelled(Model):
    """Pushed to a challenged player: the challenge no longer stands (the challenger went
    offline, or the arranged game was called off). Answering it now gets ``no_such_challenge``."""

    type: Literal["challenge_cancelled"] = "challenge_cancelled"
    challenge: str
    reason: str = ""


class Redirect(Model):
    """The room lives on another node: connect to ``url`` and ask again there."""

    type: Literal["redirect"] = "redirect"
    url: str
    room: str | None = None
    ref: Ref | None = None


class Goodbye(Model):
    """The server is closing this connection (then closes with ``close_code``)."""

    type: Literal["goodbye"] = "goodbye"
    reason: str
    close_code: int = 1001


# --- server to client: room events (each with room and seq) -------------------------------


class SeatsChanged(Model):
    """Someone sat down, stood up or started or stopped watching."""

    type: Literal["seats"] = "seats"
    room: RoomId
    seq: int
    seats: Seats
    spectators: int


class GameStarted(Model):
    type: Literal["game_started"] = "game_started"
    room: RoomId
    seq: int
    game: str
    number: int
    variant: str
    x: str
    o: str
    clocks: Clocks
    rated: bool
    #: Milliseconds X has to make the first move before the game is aborted.
    first_move_ms: int | None = None
    #: Moves already on the board when the clocks start (the room's opening).
    opening: list[int] = []


class Moved(Model):
    """A move was played. ``vanished`` is the cell the mover's oldest mark left
    (tactic-toe), ``next_to_vanish`` as in `GameSnapshot`."""

    type: Literal["moved"] = "moved"
    room: RoomId
    seq: int
    game: str
    ply: int
    cell: int
    mark: MarkName
    vanished: int | None = None
    next_to_vanish: dict[MarkName, int | None] = {}
    clocks: Clocks


class GameEnded(Model):
    type: Literal["game_over"] = "game_over"
    room: RoomId
    seq: int
    game: str
    outcome: Result
    x: str = ""
    o: str = ""
    moves: list[int] = []
    #: Rating after the game, per player name (rated games only).
    ratings: dict[str, float] = {}


class PlayerDisconnected(Model):
    """A seated player dropped; unless they come back within ``grace_ms`` they lose."""

    type: Literal["player_disconnected"] = "player_disconnected"
    room: RoomId
    seq: int
    player: str
    mark: MarkName
    grace_ms: int


class PlayerReconnected(Model):
    type: Literal["player_reconnected"] = "player_reconnected"
    room: RoomId
    seq: int
    player: str
    mark: MarkName


class RematchOffered(Model):
    type: Literal["rematch_offered"] = "rematch_offered"
    room: RoomId
    seq: int
    by: str
    mark: MarkName


class RoomClosed(Model):
    type: Literal["room_closed"] = "room_closed"
    room: RoomId
    seq: int
    reason: str


class Snapshot(Model):
    """The whole room as of ``seq`` (sent on resume when replay is not possible)."""

    type: Literal["snapshot"] = "snapshot"
    room: RoomId
    seq: int
    snapshot: RoomSnapshot


RoomEvent = (
    SeatsChanged
    | GameStarted
    | Moved
    | GameEnded
    | PlayerDisconnected
    | PlayerReconnected
    | RematchOffered
    | RoomClosed
    | Snapshot
)

ServerMessage = Annotated[
    Welcome
    | Error
    | Ok
    | Pong
    | Joined
    | Resumed
    | LobbySnapshot
    | LobbyUpdate
    | Leaderboard
    | ChallengeSent
    | GameArranged
    | ChallengeReceived
    | ChallengeAccepted
    | ChallengeDeclined
    | ChallengeCancelled
    | Redirect
    | Goodbye
    | SeatsChanged
    | GameStarted
    | Moved
    | GameEnded
    | PlayerDisconnected
    | PlayerReconnected
    | RematchOffered
    | RoomClosed
    | Snapshot,
    Field(discriminator="type"),
]

# --- feed payloads (published on the event bus, not sent on a connection) ---------------


class GameRecord(Model):
    """A finished game, whole: the ``game_result`` feed event."""

    game: str
    room: str
    number: int
    variant: str
    x: str
    o: str
    rated: bool
    time_control: TimeControl
    moves: list[int]
    outcome: Result
    started: float
    ended: float


class RatingChange(Model):
    """A player's new rating in one variant after a rated game: the ``rating`` feed event."""

    player: str
    name: str
    variant: str
    rating: float
    rd: float
    games: int


class NodeStatus(Model):
    """A server node's presence: the ``node`` feed event."""

    node: str
    url: str
    status: Literal["online", "offline"]
    version: str
    connections: int = 0
    rooms: int = 0


#: Types of the messages that carry ``room`` and ``seq``.
ROOM_EVENT_TYPES = frozenset(
    {
        "seats",
        "game_started",
        "moved",
        "game_over",
        "player_disconnected",
        "player_reconnected",
        "rematch_offered",
        "room_closed",
        "snapshot",
    }
)

CLIENT_ADAPTER: TypeAdapter[ClientMessage] = TypeAdapter(ClientMessage)
SERVER_ADAPTER: TypeAdapter[ServerMessage] = TypeAdapter(ServerMessage)


def parse_client(raw: str | bytes) -> ClientMessage:
    """Validate one client frame; raises `pydantic.ValidationError`."""
    return CLIENT_ADAPTER.validate_json(raw)


def parse_server(raw: str | bytes) -> ServerMessage:
    """Validate one server frame; raises `pydantic.ValidationError`."""
    return SERVER_ADAPTER.validate_json(raw)


def encode(message: BaseModel) -> str:
    """The JSON text frame of ``message`` (fields at their defaults included)."""
    return message.model_dump_json()


def json_schema() -> dict[str, Any]:
    """The JSON Schema of both directions, generated from the models."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ttt-arena protocol",
        "version": PROTOCOL_VERSION,
        "client_to_server": CLIENT_ADAPTER.json_schema(),
        "server_to_client": SERVER_ADAPTER.json_schema(),
    }
