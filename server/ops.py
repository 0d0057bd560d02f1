"""What a room asks the store to write. Plain values: the room decides, the store writes.

The store stamps wall-clock times itself, so rooms never read a clock.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RoomSaved:
    """The room's settings, seats and event counter (written on every change)."""

    room: str
    variant: str
    time_control: str  # the TimeControl model as JSON
    rated: bool
    private: bool
    invite: str | None
    ply_cap: int | None
    opening: tuple[int, ...]
    seat_x: str | None
    seat_o: str | None
    seq: int
    closed: bool


@dataclass(frozen=True, slots=True)
class GameSaved:
    """A game has started."""

    game: str
    room: str
    number: int
    variant: str
    x: str
    o: str
    time_control: str
    rated: bool
    ply_cap: int | None
    opening: tuple[int, ...]
    x_ms: int | None
    o_ms: int | None


@dataclass(frozen=True, slots=True)
class MoveSaved:
    """One move with both clocks after it (None: untimed)."""

    game: str
    ply: int
    cell: int
    x_ms: int | None
    o_ms: int | None
    room: str
    seq: int


_new = object.__new__
_SET_MOVE = tuple(
    getattr(MoveSaved, name).__set__ for name in ("game", "ply", "cell", "x_ms", "o_ms", "room", "seq")
)


def move_saved(
    game: str, ply: int, cell: int, x_ms: int | None, o_ms: int | None, room: str, seq: int
) -> MoveSaved:
    """``MoveSaved(...)`` in half the time: the slots are set through their descriptors,
    not the frozen dataclass's ``object.__setattr__`` per field (once a move)."""
    op: MoveSaved = _new(MoveSaved)
    set_game, set_ply, set_cell, set_x, set_o, set_room, set_seq = _SET_MOVE
    set_game(op, game)
    set_ply(op, ply)
    set_cell(op, cell)
    set_x(op, x_ms)
    set_o(op, o_ms)
    set_room(op, room)
    set_seq(op, seq)
    return op


@dataclass(frozen=True, slots=True)
class GameFinished:
    game: str
    result: str
    winner: str | None
    reason: str
    line: tuple[int, ...]
    room: str
    seq: int


@dataclass(frozen=True, slots=True)
class SeqSaved:
    """The room's event counter, so numbering goes on after a restart (events with no
    other operation: spectators, disconnects, rematch offers)."""

    room: str
    seq: int


@dataclass(frozen=True, slots=True)
class RatingSaved:
    """A player's rating after a game. With ``was`` (rating, rd, vol, games before it),
    the store adds what the game changed to what it holds, so two nodes rating one
    player at once both count; without, it sets these values."""

    player: str
    variant: str
    rating: float
    rd: float
    vol: float
    games: int
    was: tuple[float, float, float, int] | None = None


@dataclass(frozen=True, slots=True)
class PlayerSaved:
    """A new player (the token only as its hash)."""

    player: str
    name: str
    kind: str
    token_hash: str


@dataclass(frozen=True, slots=True)
class PresenceSaved:
    """A player came online on this node (``online``) or left it: what other nodes read to
    send a challenge for that player to the right node (written only by clustered nodes;
    the store fills in the node and its lease's epoch)."""

    player: str
    online: bool


StoreOp = (
    RoomSaved | GameSaved | MoveSaved | GameFinished | RatingSaved | PlayerSaved | SeqSaved | PresenceSaved
)
