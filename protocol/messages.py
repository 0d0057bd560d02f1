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

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from protocol import names
from protocol.errors import ErrorCode
from protocol.rules import Mark

#: Bumped when a change is not backwards compatible; sent in `Hello` and `Welcome`.
PROTOCOL_VERSION = 1

#: WebSocket close codes the server uses, with when.
CLOSE_CODES: dict[int, str] = {
    1000: "normal closure (the client said goodbye)",
    1001: "going away: the server is shutting down (SIGTERM)",
    1002: "protocol error at the WebSocket level",
    1007: "invalid frame payload: a text frame that is not valid UTF-8",
    1006: "(seen by the client, never sent) the connection dropped with no close frame: the network, "
    "or a client that did not read what it was sent for limits.stall_timeout_ms",
    1008: "policy violation: no hello in time, a first message that is not hello, an unsupported "
    "protocol version, too many connections from one address (limits.max_conns_per_ip), too many "
    "bad frames (limits.max_bad_frames), flooding past the rate limit (limits.max_flood), or replaced "
    "by a newer connection of the same player (after a goodbye)",
    1009: "message too big: a frame over the size limit",
    1011: "internal error",
    1012: "a room of this connection moved to another node (this node lost its lease on it): "
    "reconnect to any node and resume; it redirects to the room's host",
}

Ref = Annotated[str, Field(max_length=64)]
RoomId = Annotated[str, Field(min_length=1, max_length=32)]
#: A cell of a board up to 15x15, as an opening lists it.
Cell = Annotated[int, Field(ge=0, le=224)]
MarkName = Literal["x", "o"]
#: The wire name of each mark, indexed by `Mark`.
MARK_NAMES: tuple[MarkName, MarkName] = ("x", "o")


def mark_named(name: str) -> Mark:
    """The `Mark` a wire name (``"x"`` or ``"o"``) stands for."""
    return Mark.O if name == "o" else Mark.X


Kind = Literal["human", "bot"]
VariantName = Annotated[str, Field(min_length=1, max_length=16)]
Reason = Annotated[str, Field(max_length=200)]
#: A playing strength a bot offers (``easy``, ``best`` ...): letters, digits, ``-`` and ``_``.
Level = Annotated[str, Field(min_length=1, max_length=16, pattern=r"^[A-Za-z0-9_-]+$")]


def check_name(name: str) -> str | None:
    """Why ``name`` is not a valid player name, or None when it is (the rules are
    `protocol.names`': the name is checked in its NFKC form, which `Hello` keeps)."""
    return names.check(names.normalize(name))


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
    #: Milliseconds left before the game is aborted for want of a first move (None once
    #: the first move is made, or the game is over).
    first_move_ms: int | None = None


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
    """What the server enforces on this connection (its operator's settings; defaults here
    are the server's defaults). docs/protocol.md, "Limits", says what each does."""

    #: Largest frame read (bytes): over it ``frame_too_large``, over 4 times it close 1009.
    max_frame: int
    #: Messages per second this connection may send, and its burst; over it ``rate_limited``.
    rate_per_s: float
    burst: int
    #: Milliseconds a dropped seated player has to come back.
    grace_ms: int
    #: Rooms one player may be in (seated or watching) at once.
    max_rooms: int
    #: Milliseconds a challenge stands before it expires unanswered.
    challenge_ttl_ms: int = 60_000
    #: Challenges one player may have pending, as challenger...
    max_challenges: int = 8
    #: ...and as the one challenged, and of those, from the challengers of one address.
    max_challenges_to: int = 32
    max_challenges_to_per_ip: int = 16
    #: Messages per second (and burst) all the connections of one address share.
    ip_rate_per_s: float = 320.0
    ip_burst: int = 640
    #: Open connections one address may hold; one more is closed (1008).
    max_conns_per_ip: int = 64
    #: Frames over the rate limit in a row before the connection is closed (1008).
    max_flood: int = 100
    #: Frames that fail validation before the connection is closed (1008).
    max_bad_frames: int = 50
    #: Bytes waiting to be sent to a client that does not read before it counts as
    #: stalled (no longer read), and milliseconds stalled before it is dropped.
    write_limit: int = 65_536
    stall_timeout_ms: int = 5_000
    #: Milliseconds X has for the first move before the game is aborted.
    first_move_ms: int = 30_000
    #: Milliseconds the players of an arranged game have to take their seats.
    answer_timeout_ms: int = 30_000
    #: Room events kept for a replay on ``resume`` (further back: a snapshot).
    replay_events: int = 500
    #: New players (a ``hello`` without a token) one address may create at once, and per
    #: second after that; beyond it ``too_many_accounts``.
    signup_burst: int = 60
    signup_rate_per_s: float = 1.0


# --- client to server --------------------------------------------------------------


class Hello(Model):
    """First message on a connection. Without ``token``: a new player named ``name``
    (refused with ``name_taken`` if the name is someone's). With a valid ``token``: the
    token's owner comes back, whatever ``name`` says; the `Welcome` carries the owner's
    name. If that player is online on another connection, this one takes over: the old
    one gets `Goodbye` and is closed (1008)."""

    type: Literal["hello"] = "hello"
    name: Annotated[str, Field(min_length=1, max_length=24)]
    kind: Kind = "human"
    protocol: int = PROTOCOL_VERSION
    token: Annotated[str, Field(max_length=128)] | None = None
    #: Bots: the levels of play it offers in challenges, weakest first.
    levels: Annotated[list[Level], Field(max_length=8)] = []
    #: With ``token``: resume these rooms at once, each from the last ``seq`` seen (as
    #: `Resume` does); the `Welcome` then says how (``resumed``) and the catch-up follows it.
    rooms: Annotated[dict[RoomId, Annotated[int, Field(ge=0)]], Field(max_length=64)] | None = None
    ref: Ref | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = names.normalize(value)
        problem = names.check(value)
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
    """Open a room. ``seat`` sits the creator down at once (``random``: either seat);
    ``seat: null`` makes the creator a spectator of its room.

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
    """Place a mark on ``cell``. Reply: `Ok` with the ``seq`` of the `Moved` event.

    Any integer is a well-formed cell (the room refuses one outside its board with
    ``cell_out_of_range``); anything else (``"4"``, ``4.0``, ``true``) is ``malformed_move``."""

    type: Literal["move"] = "move"
    room: RoomId
    cell: int
    ref: Ref | None = None


class Resign(Model):
    """Reply: `Ok`; everyone in the room gets `GameEnded` with reason ``resignation``."""

    type: Literal["resign"] = "resign"
    room: RoomId
    ref: Ref | None = None


class CancelChallenge(Model):
    """Withdraw a challenge you sent. Reply: `Ok`; the challenged player gets
    `ChallengeCancelled`."""

    type: Literal["cancel_challenge"] = "cancel_challenge"
    challenge: Annotated[str, Field(min_length=1, max_length=32)]
    ref: Ref | None = None


class ListChallenges(Model):
    """Reply: `Challenges`, the challenges you sent and those sent to you, still pending."""

    type: Literal["list_challenges"] = "list_challenges"
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
    | CancelChallenge
    | ListChallenges
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
    #: When the hello asked to resume rooms: per room, as in `Resumed`.
    resumed: dict[str, Literal["replay", "snapshot", "gone"]] | None = None
    ref: Ref | None = None


class Error(Model):
    """A refused request or frame; ``code`` is one of `protocol.errors.ErrorCode`.
    Nothing changed."""

    type: Literal["error"] = "error"
    #: Lax so that a server may build it from the code's string; JSON input is checked
    #: against the registry either way.
    code: Annotated[ErrorCode, Field(strict=False)]
    message: str
    ref: Ref | None = None
    #: With ``rate_limited``: seconds to wait before sending again, rounded up to the
    #: millisecond and never below 0.001 (a wait too short to print is still a wait).
    retry_after: float | None = None

    @field_validator("retry_after")
    @classmethod
    def _retry_after(cls, value: float | None) -> float | None:
        return None if value is None else max(0.001, math.ceil(value * 1000 - 1e-6) / 1000)


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
    #: Milliseconds before the challenge expires unanswered (`ChallengeExpired`).
    expires_ms: int | None = None
    ref: Ref | None = None


class ChallengeInfo(Model):
    """A pending challenge, as `Challenges` lists it."""

    challenge: str
    challenger: str
    opponent: str
    variant: str
    colour: Literal["x", "o", "random"]
    rated: bool
    expires_ms: int


class Challenges(Model):
    """Reply to `ListChallenges`."""

    type: Literal["challenges"] = "challenges"
    outgoing: list[ChallengeInfo] = []
    incoming: list[ChallengeInfo] = []
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
    #: Milliseconds before the challenge expires unanswered (`ChallengeExpired`).
    expires_ms: int | None = None


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


class ChallengeExpired(Model):
    """Pushed to both sides: the challenge was not answered in time and no longer stands."""

    type: Literal["challenge_expired"] = "challenge_expired"
    challenge: str


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
    | ChallengeExpired
    | Challenges
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
