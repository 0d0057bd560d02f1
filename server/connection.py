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

Keepalive: `keep_alive` pings every open connection from one task, where ``websockets``
runs a task per connection (a task, a coroutine and a timer: about 1.5 KiB a connection).

An idle connection is kept small (``tests/test_server_memory.py`` holds it to a budget):
whatever websockets keeps per connection that the server never reads again is let go or
shared (see `ArenaConnection`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import struct
from collections.abc import Callable, Iterable
from typing import Any

from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode, Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import Event, Protocol, Side, State
from websockets.streams import StreamReader

log = logging.getLogger("ttt.server")

#: The logger of every `ArenaConnection` (and of its protocol).
_SERVER_LOG = logging.getLogger("websockets.server")

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


#: The first byte of a whole text frame (FIN, opcode 1); the second holds its length.
_TEXT = 0x81
_LENGTH_16 = struct.Struct("!BBH").pack
_LENGTH_64 = struct.Struct("!BBQ").pack


def send_texts(ws: Connection, texts: Iterable[str]) -> None:
    """Send each of ``texts`` as a text frame, all in one transport write (the caller checks
    the connection is open first, as ``broadcast`` does)."""
    ws.transport.writelines(text_frames(ws.protocol, texts))


def text_frames(protocol: Protocol, texts: Iterable[str]) -> list[bytes]:
    """What to write for ``texts``, a text frame each, after whatever ``protocol`` has yet to
    send: the same bytes as ``protocol.send_text`` of each then ``data_to_send()``, without
    a `Frame` object and its checks, a buffer and a join per frame (about 2 µs a frame,
    three frames a move). The shortcut is taken only where those calls would do nothing
    else: a server's side (no mask), no extension (``serve(compression=None)``), no
    fragmented message going, no debug log; elsewhere websockets frames them."""
    if (
        protocol.side is not Side.SERVER
        or protocol.extensions
        or protocol.expect_continuation_frame
        or protocol.debug
    ):
        for text in texts:
            protocol.send_text(text.encode())
        return protocol.data_to_send()
    chunks = protocol.data_to_send()
    for text in texts:
        data = text.encode()
        length = len(data)
        if length < 126:
            chunks.append(bytes((_TEXT, length)))
        elif length < 65536:
            chunks.append(_LENGTH_16(_TEXT, 126, length))
        else:
            chunks.append(_LENGTH_64(_TEXT, 127, length))
        chunks.append(data)
    return chunks


def _parse_frames_only(protocol: Protocol) -> None:
    """Give an open connection's protocol a parser of frames only, if its parser waits
    for data between frames: the server's parser (a generator) that read the opening
    request goes on parsing frames in a generator of its own, and its frame keeps the
    request alive. Elsewhere (inside a frame) it is left as it is."""
    parser = protocol.parser
    inner = getattr(parser, "gi_yieldfrom", None)  # Protocol.parse, once the request is read
    innermost = getattr(inner, "gi_yieldfrom", None)
    if (
        getattr(inner, "gi_code", None) is not Protocol.parse.__code__
        or getattr(innermost, "gi_code", None) is not StreamReader.at_eof.__code__
        or protocol.reader.buffer
    ):
        return
    frames = Protocol.parse(protocol)
    next(frames)  # as `Protocol.__init__` starts its parser: it now waits for data
    protocol.parser = frames


class _FrameQueue(list[Frame]):
    """The frames waiting for ``recv``, in a list where websockets keeps them in a deque
    (``Assembler.frames.queue``): an empty deque holds a 64-slot block (760 bytes), and on
    the server the queue is nearly always empty (whole text frames skip it)."""

    __slots__ = ()

    def popleft(self) -> Frame:
        return self.pop(0)

    def extendleft(self, frames: Iterable[Frame]) -> None:
        self[0:0] = reversed(list(frames))  # as a deque's: each one in turn goes first


class ArenaConnection(TextShortcut, ServerConnection):
    """The server's connections (``serve(create_connection=ArenaConnection)``)."""

    #: When the write buffer went over its high-water mark (None: it is below).
    stalled_since: float | None = None
    #: Called when a stalled connection's buffer has drained.
    on_drained: Callable[[], None] | None = None

    #: Why reading is paused ("queue", "write"); empty: it is not. Set only while paused.
    _holds: frozenset[str] = frozenset()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Waiters for the write buffer to drain (only while it is over its limit): an
        # empty deque holds a 64-slot block (760 bytes), an empty list 56 bytes.
        self.drain_waiters = []  # type: ignore[assignment]
        # Every attribute a connection keeps is set now, so that its name is in the
        # class's shared attribute keys before other connections are made: CPython (3.11)
        # lets the instances of a class share one table of attribute names, of at most
        # 29 names here, and makes each new instance shrink the room left for names added
        # later. A connection that needs a name not in the table gets a dictionary of its
        # own (about 1.3 KiB more). The rest come in `connection_made`, or while paused.
        self.recv_messages = self.transport = None  # type: ignore[assignment]
        self.on_text = self.on_drained = None
        # websockets gives each connection a logger adapter of its own (with a weak proxy
        # to the connection, for log handlers that want it): the server's share one.
        self.logger = self.protocol.logger = _SERVER_LOG

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.recv_messages.frames.queue = _FrameQueue()  # type: ignore[assignment]
        self.recv_messages.pause = self._queue_full
        self.recv_messages.resume = self._queue_emptied

    async def queued(self) -> None:
        """Wait until ``recv`` has a frame to return, or an end to raise: an idle connection
        waits here in one coroutine on one future, rather than in the three of ``recv``."""
        frames = self.recv_messages.frames
        if len(frames) or self.recv_messages.closed:
            return
        # What `SimpleQueue.get` waits on (`put` sets it, `abort` fails it), without its coroutine.
        waiter = frames.get_waiter = self.loop.create_future()
        try:
            await waiter
        except EOFError:  # the connection closed: `recv` says how
            pass
        finally:
            waiter.cancel()
            frames.get_waiter = None

    def _queue_full(self) -> None:
        self._hold("queue")

    def _queue_emptied(self) -> None:
        self._release("queue")

    def _hold(self, why: str) -> None:
        if not self._holds:
            self.transport.pause_reading()
        self._holds = self._holds | {why}

    def _release(self, why: str) -> None:
        if why not in self._holds:
            return
        self._holds = self._holds - {why}
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
            # OPENED, not None: `process_event` takes None for "no request yet"
            request, self.request = self.request, OPENED
            self.response = None
            if request is not None:
                # The protocol's parser, a generator, keeps the request in a local for as
                # long as the connection lives: its headers at least can go.
                request.headers = OPENED.headers
            _parse_frames_only(self.protocol)


def send_ping(ws: Connection) -> asyncio.Future[float] | None:
    """Send ``ws`` a ping, as ``ws.ping()`` does but without waiting for its write buffer
    to drain (a client that does not read must not hold up the others' pings); the
    future gets the round trip when the pong comes. None: ``ws`` is not open."""
    if ws.protocol.state is not State.OPEN:
        return None
    data = struct.pack("!I", random.getrandbits(32))
    while data in ws.pending_pings:
        data = struct.pack("!I", random.getrandbits(32))
    pong: asyncio.Future[float] = ws.loop.create_future()
    ws.pending_pings[data] = (pong, ws.loop.time())
    ws.protocol.send_ping(data)
    ws.send_data()
    return pong


async def keep_alive(
    connections: Callable[[], Iterable[Connection]], interval: float, timeout: float | None
) -> None:
    """Every ``interval`` seconds, ping each of ``connections()``; one whose pong has not
    come ``timeout`` seconds later is closed (1011, "keepalive ping timeout"), as by the
    keepalive of ``websockets`` (``serve(ping_interval=..., ping_timeout=...)``)."""
    failing: set[asyncio.Task[None]] = set()
    while True:
        await asyncio.sleep(interval)
        pongs: dict[asyncio.Future[float], Connection] = {}
        for ws in connections():
            try:
                pong = send_ping(ws)
            except Exception as exc:  # its transport failed: it is closing anyway
                log.debug("could not ping a connection: %s", exc)
                continue
            if pong is not None:
                pongs[pong] = ws
        if timeout is None or not pongs:
            continue
        await asyncio.wait(pongs, timeout=timeout)
        for pong, ws in pongs.items():
            if not pong.done():
                task = asyncio.get_running_loop().create_task(_no_pong(ws))
                failing.add(task)
                task.add_done_callback(failing.discard)


async def _no_pong(ws: Connection) -> None:
    log.debug("closing a connection: no pong within the keepalive timeout")
    with contextlib.suppress(ConnectionClosed):
        async with ws.send_context():  # closes, and waits for the close (or its timeout)
            ws.protocol.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
