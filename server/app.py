"""The async shell: frames in, the arena's decisions carried out, frames out.

`ArenaServer` owns the WebSocket server (``websockets.asyncio.server.serve``), the
connections, the writer, the timers and the event bus. It decides nothing about games:
each frame is checked against the transport's limits (size, rate, JSON) and handed to
`server.arena.Arena`, whose `Decision` it carries out: frames to send now, operations to
store, frames to send once stored (`Arena.deliver` says which), times to wake the arena.

The path of a move: socket -> `ArenaServer.receive` (limits, parse) -> `events.receive`
-> `server.requests.on_move` -> `Room.play` -> `Decision` -> `Writer.submit` -> stored ->
`Arena.deliver` -> `Outbox.send`. A plain move (legal, leaving the game going: nearly
all of them) takes a shorter way with the same result: `server.moves.plain` ->
`Played` -> `ArenaServer.play` -> `Writer.submit` -> stored -> `Arena.played` ->
`Outbox.send_to`.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import time
from collections.abc import Awaitable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from protocol import __version__
from protocol import messages as m
from protocol.bucket import TokenBucket
from protocol.errors import ErrorCode, ProtocolError
from protocol.frames import read_client, ref_of
from server import events, moves, outage
from server.accept import AcceptErrors, ConnectionCap, default_limit
from server.arena import Arena
from server.bus import EventBus, FeedEvent
from server.cluster import Cluster
from server.config import ServerConfig
from server.connection import ArenaConnection, keep_alive, send_texts
from server.decision import Announce, Close, Decision, Out, Played, Publish
from server.frames import MovedEvent, is_moved
from server.metrics import ServerMetrics
from server.players import Player
from server.recovery import recover
from server.room import Room
from server.storage import open_store
from server.store import Store
from server.trim import collect_young, trim_after_bursts
from server.writer import Writer

log = logging.getLogger("ttt.server")


class FrameOutbox:
    """Sends text frames; while `holding` (the writer announcing a batch), a connection's
    frames are gathered and written with one transport write: a mover's ``moved`` and
    ``ok`` leave in one TCP segment rather than one system call each."""

    def __init__(self) -> None:
        self._held: dict[ServerConnection, list[str]] | None = None

    def send(self, sockets: Iterable[ServerConnection], text: str) -> None:
        if self._held is None:
            broadcast(sockets, text)
            return
        for ws in sockets:
            self.send_to(ws, text)

    def send_to(self, ws: ServerConnection, text: str) -> None:
        """`send` to one connection (the move path's: no tuple to make and walk)."""
        held = self._held
        if held is None:
            broadcast((ws,), text)
            return
        frames = held.get(ws)
        if frames is None:
            held[ws] = [text]
        else:
            frames.append(text)

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        if self._held is not None:  # already holding: the outer one writes
            yield
            return
        self._held = {}
        try:
            yield
        finally:
            held, self._held = self._held, None
            write = self._write
            for ws, frames in held.items():
                write(ws, frames)

    @staticmethod
    def _write(ws: ServerConnection, frames: list[str]) -> None:
        """What `broadcast` does for one connection, with its frames in one write."""
        protocol = ws.protocol
        if protocol.state is not State.OPEN or ws.send_in_progress is not None:
            return  # as broadcast: closing, or sending a fragmented message (never here)
        try:
            send_texts(ws, frames)
        except Exception as exc:
            log.warning("skipped frames: failed to write: %s", exc)


@dataclass(eq=False, slots=True, weakref_slot=True)
class Conn:
    """One WebSocket connection: the transport's side of an arena `Session`."""

    id: int
    ws: ServerConnection
    ip: str
    out: FrameOutbox
    bucket: TokenBucket
    server: ArenaServer
    bad_frames: int = 0
    #: Frames refused over the rate limit since the last one let through.
    flooded: int = 0
    #: A player the operator trusts (``--trust``): a larger budget, outside its address's.
    trusted: bool = False
    #: The lobby changed while this connection could not take more (a snapshot is owed).
    lobby_stale: bool = False
    closing: bool = False
    #: Who said hello on this connection (the arena's session has it too).
    player: Player | None = None
    #: Frames that came while its hello waits for a read of the shared store (in order).
    held: list[str | bytes] | None = None
    #: Done when that read is (and its hello decided).
    reading: asyncio.Future[None] | None = None

    def send(self, text: str) -> None:
        self.out.send_to(self.ws, text)

    # What its `ArenaConnection` calls (bound methods: lighter than a closure or a partial).

    def receive(self, frame: str) -> None:
        self.server.receive(self, frame)

    def drained(self) -> None:
        self.server._drained(self)

    def loaded(self, hello: m.Hello, failed: str | None) -> None:
        self.server._after_read(self, hello, failed)


@dataclass
class Metrics:
    frames: int = 0
    connections_total: int = 0
    relayed: int = 0


class ArenaServer:
    """The game server. ``await start()``, then ``await stop()`` (or `serve_forever`)."""

    def __init__(self, config: ServerConfig | None = None, store: Store | None = None) -> None:
        self.config = config or ServerConfig()
        # A clustered node frozen in a write must not hold its rooms' owner rows past its
        # lease (`server.postgres`): its transaction ends at half the lease.
        stall = self.config.lease / 2 if self.config.clustered else None
        self.store = store or open_store(self.config.db, self.config.sync, stall)
        self.arena = Arena(self.config)
        from server.feed.shared import wire

        #: Read-throughs to the store, off the loop: players are loaded when they come
        #: back (or come from another node), leaderboards read the whole database.
        self.shared = wire(self.arena, self.store)
        self._reads: set[asyncio.Task[None]] = set()
        self.bus = EventBus()
        self.outbox = FrameOutbox()
        self.metrics = Metrics()
        self.prometheus = ServerMetrics(self)
        #: Rooms with owners and leases, when several nodes share the store (`server.cluster`).
        self.cluster: Cluster | None = Cluster(self) if self.config.clustered else None
        self.writer = Writer(
            self.store,
            announcing=self.outbox.holding,
            committed=self.prometheus.store_commit.observe,
            failing=self._store_failing,
            recovered=self._store_recovered,
            fenced=self.cluster.fenced if self.cluster is not None else None,
        )
        self.conns: dict[int, Conn] = {}
        self.per_ip: dict[str, int] = {}
        #: The message budget each address's connections share.
        self.ip_buckets: dict[str, TokenBucket] = {}
        self.cap = ConnectionCap(self.config.max_connections or default_limit())
        self.accept_errors: AcceptErrors | None = None
        self.feed: Any = None
        self._ids = itertools.count(1)
        self._lobby_flush: asyncio.Handle | None = None
        self._timers: list[tuple[float, str]] = []
        self._next_wake: dict[str, float] = {}
        self._wake = asyncio.Event()
        self._started_at: dict[str, float] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._server: Server | None = None
        #: The loop `start` ran on (what `now` reads).
        self._loop: asyncio.AbstractEventLoop | None = None
        self.port = self.config.port
        self.started = time.time()
        self.stopping = False

    # --- what other modules and tests read ------------------------------------------------

    @property
    def rooms(self) -> dict[str, Room]:
        return self.arena.rooms

    @property
    def players(self) -> dict[str, Player]:
        return self.arena.players.by_id

    @property
    def challenges(self) -> dict[str, Any]:
        return self.arena.challenges

    @property
    def arrangements(self) -> dict[str, Any]:
        return self.arena.arrangements

    @property
    def ratings(self) -> Any:
        return self.arena.ratings

    @property
    def online(self) -> dict[str, Conn]:
        """Player id -> its connection."""
        return {pid: self.conns[s.conn] for pid, s in self.arena.online.items() if s.conn in self.conns}

    def room(self, room_id: str) -> Room | None:
        """The local room ``room_id``, if this node hosts it."""
        return self.arena.rooms.get(room_id)

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the store, recover rooms, and listen. ``self.port`` is the bound port."""
        self._loop = asyncio.get_running_loop()
        self._tasks.append(asyncio.create_task(self.writer.run(), name="writer"))
        self._tasks.append(asyncio.create_task(self.writer.checkpoints(), name="checkpoints"))
        self._tasks.append(asyncio.create_task(self.writer.watch(self.config.store_stall), name="stuck"))
        self._tasks.append(asyncio.create_task(self._run_timers(), name="timers"))
        self._tasks.append(asyncio.create_task(self._drop_stalled(), name="stalls"))
        metrics = self.metrics
        trimming = trim_after_bursts(lambda: metrics.connections_total + metrics.frames)
        self._tasks.append(asyncio.create_task(trimming, name="trim"))
        self._tasks.append(asyncio.create_task(collect_young(), name="gc"))
        only = None if self.cluster is None else self.cluster.register(self.now())
        self.carry_out(recover(self.arena, self.store, self.now(), only))
        rooms = self.arena.rooms.values()
        games = [r.game.id for r in rooms if r.game is not None and not r.game.state.is_over]
        self._started_at.update(self.store.started(games))  # results of recovered games say when they began
        from server.http import process_request

        self.accept_errors = AcceptErrors(asyncio.get_running_loop())
        self.accept_errors.install()
        self._server = await serve(
            self._handle,
            sock=self.cap.listen(self.config.host, self.config.port),
            compression=None,
            # Frames up to 4x the limit are read and refused with `frame_too_large`;
            # larger ones close the connection (1009) before they are read.
            max_size=self.config.max_frame * 4,
            max_queue=16,
            write_limit=self.config.write_limit,
            create_connection=self.cap.connection_class(ArenaConnection),
            origins=self.config.ws_origins,
            open_timeout=self.config.open_timeout,
            ping_interval=None,  # one task pings them all (`keep_alive`), not one per connection
            process_request=lambda conn, req: process_request(self, conn, req),
            server_header=f"ttt-arena/{__version__}",
        )
        interval = self.config.ping_interval
        if interval is not None:
            server = self._server
            pinging = keep_alive(lambda: server.connections, interval, self.config.ping_timeout)
            self._tasks.append(asyncio.create_task(pinging, name="keepalive"))
        sockets = self._server.sockets
        if sockets:
            self.port = sockets[0].getsockname()[1]
        if self.cluster is not None:  # the lease now names the URL (the bound port) other nodes redirect to
            await self.cluster.beat()
            self._tasks.append(asyncio.create_task(self.cluster.run(), name="lease"))
        self.publish_node("online")
        log.info("listening on %s:%d (db %s)", self.config.host, self.port, self.store.path)

    @property
    def url(self) -> str:
        return self.config.public_url or f"ws://{self.config.host}:{self.port}"

    async def stop(self) -> None:
        """Clean shutdown: tell every client (`Goodbye`, close 1001), write what is pending."""
        if self.stopping:
            return
        self.stopping = True
        goodbye = m.encode(m.Goodbye(reason="server shutting down", close_code=1001))
        self.outbox.send([c.ws for c in self.conns.values()], goodbye)
        if self._server is not None:
            self._server.close(close_connections=True, code=1001, reason="server shutting down")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 10)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.writer.flush()
        if self.cluster is not None:
            self.cluster.release()
        self.publish_node("offline")
        if self.feed is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.feed.close(), 5)
        self.store.close()
        if self.accept_errors is not None:
            self.accept_errors.uninstall()

    async def serve_forever(self) -> None:
        assert self._server is not None
        with contextlib.suppress(asyncio.CancelledError):
            await self._server.serve_forever()

    def now(self) -> float:
        """The loop's clock. The loop is looked up once (`start`), not each time:
        ``asyncio.get_running_loop`` asks the system for the process id on every call."""
        loop = self._loop
        return (loop if loop is not None else asyncio.get_running_loop()).time()

    # --- connections ------------------------------------------------------------------------

    async def _handle(self, ws: ServerConnection) -> None:
        ip = str(ws.remote_address[0]) if ws.remote_address else "?"
        if self.stopping:
            await ws.close(1001, "server shutting down")
            return
        if self.per_ip.get(ip, 0) >= self.config.max_conns_per_ip:
            self.arena.errors["too_many_connections"] += 1
            await ws.close(1008, "too many connections from this address")
            return
        cfg = self.config
        conn = Conn(next(self._ids), ws, ip, self.outbox, TokenBucket(cfg.rate, cfg.burst, self.now()), self)
        session = self.arena.connect(conn.id, ip)
        self.per_ip[ip] = self.per_ip.get(ip, 0) + 1
        if ip not in self.ip_buckets:
            self.ip_buckets[ip] = TokenBucket(cfg.ip_rate, cfg.ip_burst, self.now())
        if isinstance(ws, ArenaConnection):
            ws.on_drained = conn.drained
        self.conns[conn.id] = conn
        self.metrics.connections_total += 1
        try:
            deadline = self.now() + cfg.hello_timeout
            while session.player is None:  # bad frames before the hello do not stop the clock
                try:
                    async with asyncio.timeout_at(deadline):  # no task of its own, as wait_for makes
                        if isinstance(ws, ArenaConnection):
                            await ws.queued()
                        first = await ws.recv()
                except TimeoutError:
                    self.carry_out(
                        self.arena.refuse(conn.id, "hello_first", f"no hello within {cfg.hello_timeout:g} s")
                    )
                    await ws.close(1008, "no hello in time")
                    return
                self.receive(conn, first)
                del first  # the handler lives as long as the connection: not its hello too
                if conn.reading is not None:  # a hello waits for the store: decided after it
                    await conn.reading  # (a future of its own: cancelling it stops no read)
                if conn.closing:
                    break
            conn.player = session.player
            if conn.player is not None and cfg.is_trusted(conn.player.name):
                conn.trusted = True  # a tournament's director and bots: not throttled like a stranger
                conn.bucket = TokenBucket(*cfg.allowance(conn.player.name), self.now())
            if isinstance(ws, ArenaConnection):  # from now on, whole text frames skip the queue
                ws.on_text = conn.receive
            while True:  # what still comes this way: fragmented, binary, queued
                if isinstance(ws, ArenaConnection):
                    await ws.queued()  # idle, it waits here, cheaper than in recv
                self.receive(conn, await ws.recv())
        except ConnectionClosed:
            pass
        finally:
            if isinstance(ws, ArenaConnection):  # ws -> on_text -> conn -> ws: no cycle left for the GC
                ws.on_text = None
                ws.on_drained = None
            self.conns.pop(conn.id, None)
            left = self.per_ip.get(ip, 1) - 1
            if left <= 0:
                self.per_ip.pop(ip, None)
                self.ip_buckets.pop(ip, None)
            else:
                self.per_ip[ip] = left
            self._gone(conn)

    def _gone(self, conn: Conn) -> None:
        """A connection ended: the arena holds its player's seats for the grace period."""
        if self.feed is not None:
            from server.feed.spectate import stop_all

            stop_all(conn)
        self.carry_out(events.disconnect(self.arena, conn.id, self.now(), self.stopping))

    def receive(self, conn: Conn, frame: str | bytes) -> None:
        """One frame from ``conn``: the transport's checks, then the arena's decision."""
        self.metrics.frames += 1
        if conn.closing:
            return
        if conn.held is not None:
            conn.held.append(frame)
            return
        now = self.now()
        wait = conn.bucket.take(now) or (0.0 if conn.trusted else self.ip_buckets[conn.ip].take(now))
        if wait:  # before anything else: a flood costs the flooder, not the server
            self._flooded(conn, frame, wait)
            return
        conn.flooded = 0
        if isinstance(frame, bytes):
            self._bad_frame(conn, "binary_frame", "send JSON as text frames", None)
            return
        if len(frame) > self.config.max_frame and len(frame.encode()) > self.config.max_frame:
            self._bad_frame(
                conn, "frame_too_large", f"frames are limited to {self.config.max_frame} bytes", None
            )
            return
        try:
            message = read_client(frame)
        except ProtocolError as exc:
            self._bad_frame(conn, exc.code, exc.message, exc.ref)
            return
        if type(message) is m.Move and self.cluster is None:  # the move path: no read, not remote
            played = None if self.stopping else moves.plain(self.arena, conn.id, message, now)
            if played is not None:  # a plain move (the commonest frame): its own fast path
                self.play(played)
            else:
                self.carry_out(events.receive(self.arena, conn.id, message, now, self.stopping))
            return
        session = self.arena.sessions.get(conn.id)
        if session is not None and session.player is not None and self._remote(conn, message):
            return
        # A hello of a player this node has not loaded, and who hosts the rooms a message
        # names or the player it challenges: reads of the shared store before it is decided.
        hello = message if isinstance(message, m.Hello) and self.shared.needs(message) else None
        lookup = None if self.cluster is None else self.cluster.lookup(message)
        if hello is not None and lookup is None:  # the common case: read with the other hellos
            self._hold(conn)
            self.shared.load_then(hello, conn.loaded)
            return
        if hello is not None or lookup is not None:
            reads: list[Awaitable[Any]] = [] if lookup is None else [lookup]
            if hello is not None:
                reads.append(self.shared.load(hello))
            self._read_then(conn, reads[0] if len(reads) == 1 else asyncio.gather(*reads), message)
            return
        if isinstance(message, m.GetLeaderboard) and session is not None and session.player is not None:
            self._read_then(conn, self.shared.leaderboard(message.variant, message.limit), message)
            return
        self.carry_out(events.receive(self.arena, conn.id, message, now, self.stopping))

    def _hold(self, conn: Conn) -> None:
        """``conn`` waits for a read of the shared store: its frames wait their turn, and its
        handler waits for `conn.reading` (`_after_read` ends both)."""
        conn.held = []
        conn.reading = asyncio.get_running_loop().create_future()

    def _read_then(self, conn: Conn, read: Any, message: m.ClientMessage) -> None:
        """Decide ``message`` once ``read`` (a read of the shared store, in a thread) is done."""
        self._hold(conn)

        async def then() -> None:
            failed = None
            try:
                await read
            except Exception as exc:
                failed = f"{type(exc).__name__}: {exc}".strip()
                log.warning("reading the store failed: %s", failed)
            self._after_read(conn, message, failed)

        self._spawn(then())

    def _after_read(self, conn: Conn, message: m.ClientMessage, failed: str | None) -> None:
        """The read before ``message`` is done (or ``failed``): decide it, then the frames
        that came meanwhile, then let the connection's handler go on."""
        held, conn.held = conn.held or [], None
        reading, conn.reading = conn.reading, None
        try:
            if conn.closing or conn.id not in self.arena.sessions:
                return
            if failed is not None:  # not "bad_token": the token may well be good
                self._deliver(outage.unreadable(self.arena, conn.id, message, failed).now)
            else:
                self.carry_out(events.receive(self.arena, conn.id, message, self.now(), self.stopping))
            for frame in held:
                self.receive(conn, frame)
        finally:
            if reading is not None and not reading.done():
                reading.set_result(None)

    def _spawn(self, work: Any) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._reads.add(task)
        task.add_done_callback(self._reads.discard)
        return task

    def _remote(self, conn: Conn, message: m.ClientMessage) -> bool:
        """Watching a room hosted on another node goes through the feed (issue 7)."""
        if self.feed is None:
            return False
        from server.feed.spectate import spectate_remote, stop_watching

        if isinstance(message, m.Spectate) and message.room not in self.arena.rooms:
            return spectate_remote(self, conn, message)
        if (
            isinstance(message, m.Leave)
            and message.room not in self.arena.rooms
            and stop_watching(conn, message.room)
        ):
            conn.send(m.encode(m.Ok(ref=message.ref)))
            return True
        return False

    def _flooded(self, conn: Conn, frame: str | bytes, wait: float) -> None:
        """A frame over the rate limit: the first of a burst is answered (``rate_limited``),
        the rest are dropped unread, and a connection that keeps on is closed (1008)."""
        conn.flooded += 1
        self.arena.errors["rate_limited"] += 1
        if conn.flooded == 1:
            small = isinstance(frame, str) and len(frame) <= self.config.max_frame
            error = m.Error(
                code=ErrorCode.RATE_LIMITED,
                message="too many messages",
                ref=ref_of(frame) if small else None,
                retry_after=max(0.001, round(wait, 3)),
            )
            conn.send(m.encode(error))
        elif conn.flooded > self.config.max_flood:
            log.info("closing a connection from %s: flooding", conn.ip)
            self.close_conn(conn, 1008, "flooding: too many messages")

    def _drained(self, conn: Conn) -> None:
        """A stalled connection caught up: a lobby it missed comes as one fresh snapshot."""
        session = self.arena.sessions.get(conn.id)
        if conn.lobby_stale and session is not None and session.lobby and not conn.closing:
            conn.lobby_stale = False
            conn.send(m.encode(self.arena.lobby_snapshot(None)))

    async def _drop_stalled(self, every: float = 0.5) -> None:
        """Close connections whose write buffer stayed over its limit (they do not read):
        their seats get the grace period like any other dropped connection."""
        while True:
            await asyncio.sleep(every)
            now = self.now()
            for conn in list(self.conns.values()):
                ws = conn.ws
                since = ws.stalled_since if isinstance(ws, ArenaConnection) else None
                if since is None or now - since <= self.config.stall_timeout or conn.closing:
                    continue
                log.info("closing a connection from %s: it does not read what it is sent", conn.ip)
                conn.closing = True
                session = self.arena.sessions.get(conn.id)
                if session is not None:
                    session.closing = True
                ws.transport.abort()  # a close frame would wait behind what it does not read

    def _lobby_sockets(self, listeners: list[int]) -> list[ServerConnection]:
        """The lobby listeners that can take more now; the others are owed a snapshot."""
        sockets = []
        for conn_id in listeners:
            conn = self.conns.get(conn_id)
            if conn is None:
                continue
            ws = conn.ws
            if conn.lobby_stale or (isinstance(ws, ArenaConnection) and ws.stalled_since is not None):
                conn.lobby_stale = True
                continue
            sockets.append(ws)
        return sockets

    def _bad_frame(self, conn: Conn, code: str, text: str, ref: str | None) -> None:
        conn.bad_frames += 1
        self.carry_out(self.arena.refuse(conn.id, code, text, ref))
        if conn.bad_frames > self.config.max_bad_frames:
            self.close_conn(conn, 1008, "too many bad frames")

    def close_conn(self, conn: Conn, code: int, reason: str) -> None:
        if not conn.closing:
            conn.closing = True
            session = self.arena.sessions.get(conn.id)
            if session is not None:
                session.closing = True
            asyncio.get_running_loop().create_task(conn.ws.close(code, reason))

    # --- carrying decisions out ------------------------------------------------------------

    def carry_out(self, decision: Decision) -> None:
        """Send what goes now, store what must be stored, then deliver the rest, in order."""
        if decision.now:
            self._deliver(decision.now)
        for due, key in decision.wake:
            self.wake_at(due, key)
        if decision.ops or decision.later:
            later = decision.later
            decided = time.perf_counter()
            rejected = decision.rejected
            self.writer.submit(
                decision.ops,
                (lambda: self._deliver(later, decided)) if later else None,
                (lambda: self._deliver(rejected)) if rejected else None,
            )
        if self.arena.lobby_dirty:
            self._schedule_lobby()

    def play(self, played: Played) -> None:
        """Carry out a plain move's decision (`server.moves`) as `carry_out` carries out the
        general path's for it: store the move, then send what `Arena.played` says (and feed
        the event, and time the move's broadcast)."""
        if played.due is not None:
            self.wake_at(played.due, played.room)
        decided = time.perf_counter()
        self.writer.submit(played.ops, lambda: self._played(played, decided))

    def _played(self, played: Played, decided: float) -> None:
        send_to = self.outbox.send_to
        conns = self.conns
        for conn_id, frame in self.arena.played(played):
            conn = conns.get(conn_id)
            if conn is not None:
                send_to(conn.ws, frame)
        if self.bus.listened:  # building the feed's JSON costs as much as the frame
            self.bus.publish(FeedEvent("room_event", played.room, played.event.model_dump(mode="json")))
        self.prometheus.move_broadcast.observe(time.perf_counter() - decided)

    def _deliver(self, items: list[Out], decided: float | None = None) -> None:
        now = self.now()
        feeding = self.bus.listened
        send_to = self.outbox.send_to
        for item in items:
            if isinstance(item, Close):
                conn = self.conns.get(item.conn)
                if conn is not None:
                    self.close_conn(conn, item.code, item.reason)
                continue
            if isinstance(item, Publish):
                self._publish(item)
            for conn_id, frame in self.arena.deliver(item, now):
                conn = self.conns.get(conn_id)
                if conn is not None:
                    send_to(conn.ws, frame)
            if isinstance(item, Announce):
                events = item.events
                # a lone move without listeners: nothing to feed
                if feeding or len(events) > 1 or type(events[0]) is not MovedEvent:
                    self._feed_events(item, feeding)
                if decided is not None and is_moved(events[0]):
                    self.prometheus.move_broadcast.observe(time.perf_counter() - decided)
        if self.arena.lobby_dirty:
            self._schedule_lobby()

    def _feed_events(self, ann: Announce, feeding: bool) -> None:
        for event in ann.events:
            if isinstance(event, m.GameStarted):
                self._started_at[event.game] = time.time()
                room = self.arena.rooms.get(ann.room)
                if self.config.node_id != "local" and room is not None and room.game is not None:
                    self._spawn(self.shared.refresh([room.game.x, room.game.o]))
            if feeding:  # building the feed's JSON costs as much as the frame: only for listeners
                self.bus.publish(FeedEvent("room_event", ann.room, event.model_dump(mode="json")))

    def _publish(self, item: Publish) -> None:
        payload = item.payload
        if item.kind == "game_result":
            payload = {**payload, "started": self._started_at.pop(item.key, 0.0), "ended": time.time()}
        self.bus.publish(FeedEvent(item.kind, item.key, payload))  # type: ignore[arg-type]

    def publish_node(self, status: str) -> None:
        st: Any = status
        payload = m.NodeStatus(
            node=self.config.node_id,
            url=self.url,
            status=st,
            version=__version__,
            connections=len(self.conns),
            rooms=len(self.arena.rooms),
        )
        self.bus.publish(FeedEvent("node", self.config.node_id, payload.model_dump(mode="json")))

    # --- lobby --------------------------------------------------------------------------------

    def _schedule_lobby(self) -> None:
        if self._lobby_flush is None:
            self._lobby_flush = asyncio.get_running_loop().call_soon(self._flush_lobby)

    def _flush_lobby(self) -> None:
        self._lobby_flush = None
        listeners, frame, summaries = self.arena.lobby_update(feeding=self.bus.listened)
        for rid, summary in summaries:
            payload = None if summary is None else summary.model_dump(mode="json")
            self.bus.publish(FeedEvent("room_summary", rid, payload))
        if frame is not None:
            self.outbox.send(self._lobby_sockets(listeners), frame)

    # --- timers ---------------------------------------------------------------------------------

    def wake_at(self, due: float, key: str) -> None:
        """Call `events.tick` with ``key`` at ``due`` (a later time for a key already due
        earlier is asked for again by that earlier tick, so it is not queued twice)."""
        if self._next_wake.get(key, float("inf")) <= due:
            return
        self._next_wake[key] = due
        if not self._timers or due < self._timers[0][0]:
            self._wake.set()
        heapq.heappush(self._timers, (due, key))

    async def _run_timers(self) -> None:
        while True:
            if self.arena.outage is not None:  # no flag falls while nobody can move
                self._wake.clear()
                await self._wake.wait()
                continue
            now = self.now()
            while self._timers and self._timers[0][0] <= now:
                due, key = heapq.heappop(self._timers)
                if self._next_wake.get(key) == due:
                    del self._next_wake[key]
                self.carry_out(events.tick(self.arena, key, now))
            self._wake.clear()
            timeout = self._timers[0][0] - now if self._timers else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    # --- the store failing (server.outage) ----------------------------------------------------------

    def _store_failing(self, reason: str, stuck: float) -> None:
        """The writer could not store a batch (its write began ``stuck`` seconds ago, or
        has not returned since): refuse changes, and pause the clocks from then."""
        outage.begin(self.arena, reason, self.now() - stuck)

    def _store_recovered(self) -> None:
        """The failing batch is stored (its announcements come next), or the store turned it
        away for good (a fence, a constraint: it answers, so it works): clocks and deadlines
        move on by the outage, and the timers start again from the new deadlines."""
        self._timers.clear()
        self._next_wake.clear()
        self.carry_out(outage.end(self.arena, self.now()))
        self._wake.set()

    # --- for the feed (several nodes) -------------------------------------------------------------

    def remote_room(self, room_id: str, summary: dict[str, Any] | None, node_id: str) -> None:
        """A room on another node appeared, changed (``summary``: RoomSummary JSON) or closed (None)."""
        frame = self.arena.remote_room(room_id, summary, node_id)
        if frame is not None:
            self.outbox.send(self._lobby_sockets(self.arena.lobby_listeners()), frame)

    def remote_node(self, node_id: str, url: str | None) -> None:
        """Another node's public URL (None: it went away)."""
        if url is None:
            self.arena.remote_nodes.pop(node_id, None)
        else:
            self.arena.remote_nodes[node_id] = url

    def relay_room_event(self, room_id: str, event: dict[str, Any]) -> None:
        """An event of a room on another node. Nobody here watches remote rooms through the
        arena (watching one goes through the feed's relay), so it is only counted."""
        self.metrics.relayed += 1


__all__ = ["ArenaServer", "Conn", "FrameOutbox", "Player"]
