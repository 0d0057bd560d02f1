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


@dataclass(slots=True)
class MoveSaved:
    """One move with both clocks after it (None: untimed). Not frozen, unlike the others:
    one is made a move, and a frozen dataclass sets each field through
    ``object.__setattr__`` (twice the time). Nothing changes or hashes one once made."""

    game: str
    ply: int
    cell: int
    x_ms: int | None
    o_ms: int | None
    room: str
    seq: int


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
