"""WebSocket connections that hand whole text frames straight to a callback, and stop
reading from a client that does not read what it is sent.

``websockets`` queues each incoming message for the connection's handler task to
``recv``: a future, a task wake-up and a loop iteration per frame. With hundreds
of games in flight that is a large share of the server's time for a frame that
is handled in microseconds, so once a player has said hello the server sets
`ArenaConnection.on_text` and each complete text frame is handled as it is parsed.

Everything else (fragmented and binary messages, invalid UTF-8, frames arriving
while earlier ones still wait in the queue) takes the ordinary path to ``recv``,
so the order of a connection's messages never changes.

Backpressure: when the connection's write buffer passes its high-water mark
(``serve(write_limit=...)``) the transport says `pause_writing`; the connection then
stops reading too (`stalled_since` is set), so a client that sends pings or requests
without reading the answers cannot make the server buffer more. The server closes a
connection stalled for too long. Reading resumes once the buffer drains, unless the
incoming queue (``max_queue``) still holds it paused: both reasons are counted.

`TextShortcut` is the mechanism for the frames, for either end: `ArenaConnection` is
the server's; ``bench/load.py`` puts it on its load clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import Event, State

#: What an open connection keeps in place of its opening request: one shared, empty request.
OPENED = Request("/", Headers())


class TextShortcut(Connection):
    """Mixed into a client or server connection class, ahead of it."""

    #: Called with each complete text frame while set (``recv`` still gets the rest).
    on_text: Callable[[str], None] | None = None

    def process_event(self, event: Event) -> None:
        handle = self.on_text
        if (
            handle is not None
            and isinstance(event, Frame)
            and event.opcode is Opcode.TEXT
            and event.fin
            and not len(self.recv_messages.frames)  # nothing queued ahead of it
        ):
            try:
                text = bytes(event.data).decode()
            except UnicodeDecodeError:
                pass  # recv raises it and the connection closes, as without this shortcut
            else:
                handle(text)
                return
        super().process_event(event)


class ArenaConnection(TextShortcut, ServerConnection):
    """The server's connections (``serve(create_connection=ArenaConnection)``)."""

    #: When the write buffer went over its high-water mark (None: it is below).
    stalled_since: float | None = None
    #: Called when a stalled connection's buffer has drained.
    on_drained: Callable[[], None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._holds: set[str] = set()
        self.recv_messages.pause = lambda: self._hold("queue")
        self.recv_messages.resume = lambda: self._release("queue")

    def _hold(self, why: str) -> None:
        if not self._holds:
            self.transport.pause_reading()
        self._holds.add(why)

    def _release(self, why: str) -> None:
        if why not in self._holds:
            return
        self._holds.discard(why)
        if not self._holds and not self.transport.is_closing():
            self.transport.resume_reading()

    def pause_writing(self) -> None:
        super().pause_writing()
        self.stalled_since = self.loop.time()
        self._hold("write")

    def resume_writing(self) -> None:
        super().resume_writing()
        self.stalled_since = None
        self._release("write")
        drained = self.on_drained
        if drained is not None:
            drained()

    @property
    def buffered(self) -> int:
        """Bytes waiting in the write buffer."""
        return self.transport.get_write_buffer_size()

    async def handshake(self, *args: Any, **kwargs: Any) -> None:
        """The opening handshake; once the connection is open, its HTTP request and response
        (headers and all: about 3 KiB) are let go, as nothing reads them any more and an
        idle connection should cost as little memory as it can."""
        await super().handshake(*args, **kwargs)
        if self.protocol.state is State.OPEN:
            self.request = OPENED  # not None: `process_event` takes None for "no request yet"
            self.response = None
