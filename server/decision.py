"""What the arena decides, as plain values: frames to send now, operations to store,
frames to send once those are stored, and times to be woken at.

The arena (`server.arena`) never touches a socket, the store or a clock; it returns a
`Decision`, and the shell (`server.app`) carries it out in this order:

1. ``now``: sent at once (refusals, pongs, lobby snapshots: nothing a store write backs);
2. ``ops``: handed to the writer;
3. ``later``: once ``ops`` (and everything submitted before them) are stored, each item
   is turned into frames by `Arena.deliver`, which decides then who hears what;
4. ``wake``: the shell calls `server.events.tick` with the key at that time.

Items are addressed by connection (`Reply`), by player (`Tell`: its connection when the
item is delivered) or by room (`Announce`: its members attached to the room).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol import messages as m
from server.frames import MovedEvent
from server.ops import StoreOp


@dataclass(slots=True)
class Reply:
    """A frame for one connection. (`Reply` and `Announce`, made once a move or more, are
    not frozen: a frozen dataclass sets each field through ``object.__setattr__``, twice
    the time. Nothing changes or hashes them once made.)"""

    conn: int
    frame: str


@dataclass(frozen=True, slots=True)
class Tell:
    """A frame for a player, wherever it is connected when this is delivered; with
    ``challenge``, only if that challenge still stands then (an invitation)."""

    player: str
    frame: str
    challenge: str | None = None


@dataclass(slots=True)
class Announce:
    """A room's events, for its members attached to it (each gets the events it lacks)."""

    room: str
    events: tuple[m.RoomEvent | MovedEvent, ...]
    #: Whether the room's lobby summary changed (the lobby hears of it after the events).
    summary_changed: bool


@dataclass(frozen=True, slots=True)
class Attach:
    """Answer ``conn`` for ``room`` with ``frames`` (`Joined`, a `Snapshot`), then let it
    hear every event of the room with a seq above ``seq``. With ``replay``, the frames are
    the room's announced events after ``seq``, taken when this is delivered."""

    conn: int
    room: str
    frames: tuple[str, ...]
    seq: int
    replay: bool = False


@dataclass(frozen=True, slots=True)
class Close:
    """Close ``conn`` with a WebSocket close code."""

    conn: int
    code: int
    reason: str


@dataclass(frozen=True, slots=True)
class Publish:
    """News for the event feed (`server.bus`), published once stored. The shell stamps
    wall-clock times where the payload has them (``started``, ``ended``)."""

    kind: str
    key: str
    payload: dict[str, object]


@dataclass(frozen=True, slots=True)
class Unwelcome:
    """The store refused the new player ``player`` made by ``conn``'s hello (another node
    took its name meanwhile): the arena forgets the player; the connection is as before
    its hello."""

    conn: int
    player: str


Out = Reply | Tell | Announce | Attach | Close | Publish | Unwelcome


@dataclass(slots=True)
class Played:
    """The decision on a plain move (`server.moves`): what the general path's `Decision`
    for it says (store the move; then announce its `moved` event to the room and answer
    the mover `ok`; be woken at the room's next deadline), in one object, with both frames
    already encoded. The shell carries it out with `ArenaServer.play`, and `Arena.played`
    says who hears it once it is stored."""

    room: str
    event: MovedEvent
    #: ``event``'s frame, and the mover's `ok` (for connection ``conn``).
    frame: str
    conn: int
    ok: str
    #: The move's one `MoveSaved`, in the list the writer takes.
    ops: list[StoreOp]
    #: When the room is next due (`Room.next_deadline`: the mover's opponent's flag), if ever.
    due: float | None


@dataclass(slots=True)
class Decision:
    """One decision's work for the shell; see the module docstring for the order."""

    now: list[Out] = field(default_factory=list)
    ops: list[StoreOp] = field(default_factory=list)
    later: list[Out] = field(default_factory=list)
    #: (due, key): call `events.tick` with the key then. Keys are room ids or ``"challenge:ID"``.
    wake: list[tuple[float, str]] = field(default_factory=list)
    #: Delivered instead of ``later`` if the store rejects ``ops`` for good (a constraint
    #: they break, such as a name another node took since it was looked up).
    rejected: list[Out] = field(default_factory=list)

    def __iadd__(self, other: Decision) -> Decision:
        self.now += other.now
        self.ops += other.ops
        self.later += other.later
        self.wake += other.wake
        self.rejected += other.rejected
        return self

    @property
    def empty(self) -> bool:
        return not (self.now or self.ops or self.later or self.wake)
