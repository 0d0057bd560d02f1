"""The client side of a connection without the socket: refs, replies, room seqs.

`ClientSession` turns requests into frames (giving each a fresh ``ref``) and
frames from the server into either a reply to a pending request or a pushed
event. It remembers the last ``seq`` seen per room, drops repeated room events
(a replay may overlap what already arrived) and builds the `Resume` request a
reconnecting client sends. `protocol.client.ArenaClient` is the asyncio shell.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import messages as m
from protocol.errors import ArenaError


class RemoteError(ArenaError):
    """The server refused a request; ``code`` is the server's (see `messages.ERROR_CODES`)."""

    def __init__(self, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class RateLimited(RemoteError):
    """Too many messages: wait ``retry_after`` seconds."""


class MoveRefused(RemoteError):
    """The move broke the rules or came out of turn; the game is unchanged."""


class ConnectionLost(ArenaError):
    """The connection closed before the reply came."""

    code = "connection_lost"


_MOVE_CODES = frozenset(
    {"malformed_move", "cell_out_of_range", "cell_occupied", "cell_vacating", "game_over", "not_your_turn"}
)


def error_for(error: m.Error) -> RemoteError:
    """The exception to raise for an `Error` reply."""
    if error.code == "rate_limited":
        return RateLimited(error.code, error.message, error.retry_after)
    if error.code in _MOVE_CODES:
        return MoveRefused(error.code, error.message)
    return RemoteError(error.code, error.message, error.retry_after)


@dataclass(frozen=True, slots=True)
class Reply:
    """A frame answering the pending request ``ref``."""

    ref: str
    message: m.ServerMessage


@dataclass(frozen=True, slots=True)
class Event:
    """A frame nobody asked for: a room event, a lobby update, a challenge, ..."""

    message: m.ServerMessage


class ClientSession:
    """What one client remembers about its conversation with the server."""

    def __init__(self) -> None:
        self._counter = 0
        self.pending: set[str] = set()
        #: Last room-event seq seen, per room id.
        self.last_seq: dict[str, int] = {}
        #: Rooms the server answered for (joined, or resumed): their events are this
        #: session's from the start, so their last seq is one to resume from.
        self.answered: set[str] = set()
        self.welcome: m.Welcome | None = None

    def request(self, message: m.ClientMessage) -> tuple[str, str]:
        """Give ``message`` a ref (unless it has one) and return ``(ref, frame)``."""
        if message.ref is None:
            self._counter += 1
            message = message.model_copy(update={"ref": f"r{self._counter}"})
        assert message.ref is not None
        self.pending.add(message.ref)
        return message.ref, m.encode(message)

    def forget(self, ref: str) -> None:
        """Stop waiting for ``ref`` (the caller gave up)."""
        self.pending.discard(ref)

    def receive(self, raw: str | bytes) -> Reply | Event | None:
        """Sort one server frame; None for a room event already seen.

        Raises:
            pydantic.ValidationError: the frame is not a server message.
        """
        message = m.parse_server(raw)
        self._track(message)
        ref = getattr(message, "ref", None)
        if ref is not None and ref in self.pending:
            self.pending.discard(ref)
            return Reply(ref, message)
        if message.type in m.ROOM_EVENT_TYPES:
            room: str = getattr(message, "room")  # noqa: B009 (every room event has it)
            seq: int = getattr(message, "seq")  # noqa: B009
            last = self.last_seq.get(room, -1)
            if seq <= last and message.type != "snapshot":
                return None
            self.last_seq[room] = max(seq, last) if message.type != "snapshot" else seq
        return Event(message)

    def _track(self, message: m.ServerMessage) -> None:
        if isinstance(message, m.Welcome):
            self.welcome = message
        elif isinstance(message, m.Joined | m.ChallengeAccepted):
            self.last_seq[message.room] = message.snapshot.seq
            self.answered.add(message.room)
        elif isinstance(message, m.Resumed):
            for room, how in message.rooms.items():
                if how == "gone":
                    self.last_seq.pop(room, None)
                    self.answered.discard(room)
                else:
                    self.answered.add(room)
        elif isinstance(message, m.RoomClosed):
            pass  # the seq is recorded by receive; the room id stays known until left

    def left(self, room: str) -> None:
        """Stop tracking ``room`` (after a `Leave`)."""
        self.last_seq.pop(room, None)
        self.answered.discard(room)

    def resume_message(self, adopt: bool = False) -> m.Resume:
        """The `Resume` to send after reconnecting: every room with its last seq.

        With ``adopt``, also every room the last `Welcome` says this player sits in
        and the server never answered this session for (a game from before the
        process started), from its beginning (seq 0: the server sends a snapshot),
        even if some of its events came already.
        """
        rooms = dict(self.last_seq)
        if adopt and self.welcome is not None:
            for room in self.welcome.rooms:
                if room not in self.answered:
                    rooms[room] = 0
        return m.Resume(rooms=rooms)
