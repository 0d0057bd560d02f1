"""The async shell: sockets in, decisions from the rooms, store writes, then announcements out.

`ArenaServer` owns the WebSocket server (``websockets.asyncio.server.serve``),
the connections, the rooms, the writer and the event bus. It decides nothing
about games itself: `server.room.Room` does, and `server.requests` maps each
request to a room decision. Everything a room announces goes through
`commit`: stored first (batched by the writer), then sent and published.

Other modules (the MQTT feed) use: ``server.bus``, ``server.config``,
``server.rooms`` / `room`, `remote_room`, `relay_room_event`, `remote_node`.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from protocol import __version__
from protocol import messages as m
from server.arrange import ArrangedChallenge, player_gone
from server.arrange import tick as arrangement_tick
from server.bus import EventBus, FeedEvent
from server.config import ServerConfig
from server.connection import ArenaConnection
from server.ops import SeqSaved, StoreOp
from server.ratings import Rating, Ratings
from server.room import Changes, Room, RoomRules
from server.store import Store
from server.writer import Writer

log = logging.getLogger("ttt.server")


class Outbox:
    """Sends text frames; while `holding` (the writer announcing a batch), a connection's
    frames are gathered and written with one transport write: a mover's ``moved`` and
    ``ok`` leave in one TCP segment rather than one system call each."""

    def __init__(self) -> None:
        self._held: dict[ServerConnection, list[bytes]] | None = None

    def send(self, sockets: Iterable[ServerConnection], text: str) -> None:
        held = self._held
        if held is None:
            broadcast(sockets, text)
            return
        data = text.encode()
        for ws in sockets:
            frames = held.get(ws)
            if frames is None:
                held[ws] = [data]
            else:
                frames.append(data)

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
            for ws, frames in held.items():
                if len(frames) == 1:
                    broadcast([ws], frames[0], text=True)
                else:
                    self._write(ws, frames)

    @staticmethod
    def _write(ws: ServerConnection, frames: list[bytes]) -> None:
        """What `broadcast` does for one connection, with several frames in one write."""
        if ws.protocol.state is not State.OPEN or ws.send_in_progress is not None:
            return  # as broadcast: closing, or sending a fragmented message (never here)
        try:
            for frame in frames:
                ws.protocol.send_text(frame)
            ws.transport.writelines(ws.protocol.data_to_send())
        except Exception as exc:
            log.warning("skipped frames: failed to write: %s", exc)


@dataclass
class Player:
    id: str
    name: str
    kind: str
    token_hash: str
    #: Levels of play a bot offers, as said in its latest hello (not stored).
    levels: tuple[str, ...] = ()


@dataclass(eq=False)
class Conn:
    """One WebSocket connection and what the server knows about it."""

    ws: ServerConnection
    ip: str
    out: Outbox
    player: Player | None = None
    tokens: float = 0.0
    refilled: float = 0.0
    bad_frames: int = 0
    lobby: bool = False
    closing: bool = False

    def send(self, text: str) -> None:
        self.out.send((self.ws,), text)

    def take_token(self, now: float, rate: float, burst: int) -> float:
        """Spend one message from the bucket; returns 0, or seconds to wait when empty."""
        self.tokens = min(float(burst), self.tokens + (now - self.refilled) * rate)
        self.refilled = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / rate


@dataclass
class RemoteRoom:
    """A room hosted on another node, as the feed reports it."""

    summary: dict[str, Any]
    node: str


@dataclass
class Metrics:
    frames: int = 0
    moves: int = 0
    games_started: int = 0
    games_finished: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    connections_total: int = 0
    relayed: int = 0


class ArenaServer:
    """The game server. ``await start()``, then ``await stop()`` (or `serve_forever`)."""

    def __init__(self, config: ServerConfig | None = None, store: Store | None = None) -> None:
        self.config = config or ServerConfig()
        self.store = store or Store(self.config.db, self.config.sync)
        self.bus = EventBus()
        self.outbox = Outbox()
        self.writer = Writer(self.store, announcing=self.outbox.holding)
        self.ratings = Ratings()
        self.metrics = Metrics()
        self.rules = RoomRules(self.config.grace, self.config.first_move, self.config.replay_events)
        self.rooms: dict[str, Room] = {}
        self.players: dict[str, Player] = {}
        self.by_name: dict[str, Player] = {}
        self.by_token: dict[str, Player] = {}
        self.online: dict[str, Conn] = {}
        self.conns: set[Conn] = set()
        self.per_ip: Counter[str] = Counter()
        self.challenges: dict[str, Any] = {}
        #: Arranged games waiting for their players, by room id (`server.arrange`).
        self.arrangements: dict[str, Any] = {}
        self.remote_rooms: dict[str, RemoteRoom] = {}
        self.remote_nodes: dict[str, str] = {}
        self.feed: Any = None
        self._lobby_rooms: set[str] = set()
        self._lobby_players: set[str] = set()
        self._lobby_flush: asyncio.Handle | None = None
        self._timers: list[tuple[float, str]] = []
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._server: Server | None = None
        self.port = self.config.port
        self.started = time.time()
        self.stopping = False

    # --- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Load the store, recover rooms, and listen. ``self.port`` is the bound port."""
        from server.recovery import recover

        recover(self, self.now())
        self._tasks.append(asyncio.create_task(self.writer.run(), name="writer"))
        self._tasks.append(asyncio.create_task(self.writer.checkpoints(), name="checkpoints"))
        self._tasks.append(asyncio.create_task(self._run_timers(), name="timers"))
        from server.http import process_request

        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            compression=None,
            max_size=self.config.max_frame,
            max_queue=16,
            create_connection=ArenaConnection,
            open_timeout=self.config.open_timeout,
            ping_interval=self.config.ping_interval,
            ping_timeout=self.config.ping_timeout,
            process_request=lambda conn, req: process_request(self, conn, req),
            server_header=f"ttt-arena/{__version__}",
        )
        sockets = self._server.sockets
        if sockets:
            self.port = sockets[0].getsockname()[1]
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
        self.outbox.send([c.ws for c in self.conns], goodbye)
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
        self.publish_node("offline")
        if self.feed is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.feed.close(), 5)
        self.store.close()

    async def serve_forever(self) -> None:
        assert self._server is not None
        with contextlib.suppress(asyncio.CancelledError):
            await self._server.serve_forever()

    @staticmethod
    def now() -> float:
        return asyncio.get_running_loop().time()

    # --- connections --------------------------------------------------------------------

    async def _handle(self, ws: ServerConnection) -> None:
        ip = str(ws.remote_address[0]) if ws.remote_address else "?"
        if self.stopping:
            await ws.close(1001, "server shutting down")
            return
        if self.per_ip[ip] >= self.config.max_conns_per_ip:
            self.metrics.errors["too_many_connections"] += 1
            await ws.close(1008, "too many connections from this address")
            return
        conn = Conn(ws, ip, self.outbox, tokens=float(self.config.burst), refilled=self.now())
        self.per_ip[ip] += 1
        self.conns.add(conn)
        self.metrics.connections_total += 1
        from server.requests import dispatch

        try:
            deadline = self.now() + self.config.hello_timeout
            while conn.player is None:  # bad frames before the hello do not stop the clock
                try:
                    first = await asyncio.wait_for(ws.recv(), max(0.0, deadline - self.now()))
                except TimeoutError:
                    self.error(conn, "hello_first", f"no hello within {self.config.hello_timeout:g} s")
                    await ws.close(1008, "no hello in time")
                    return
                dispatch(self, conn, first)
            if isinstance(ws, ArenaConnection):  # from now on, whole text frames skip the queue
                ws.on_text = lambda frame: dispatch(self, conn, frame)
            async for frame in ws:  # what still comes this way: fragmented, binary, queued
                dispatch(self, conn, frame)
        except ConnectionClosed:
            pass
        finally:
            if isinstance(ws, ArenaConnection):  # ws -> on_text -> conn -> ws: no cycle left for the GC
                ws.on_text = None
            self.conns.discard(conn)
            self.per_ip[ip] -= 1
            if self.per_ip[ip] <= 0:
                del self.per_ip[ip]
            self._gone(conn)

    def _gone(self, conn: Conn) -> None:
        """A connection ended: its player's rooms hold the seats for the grace period; its
        challenges are withdrawn and the arranged games it directs or plays in are called off."""
        player = conn.player
        if player is None or self.online.get(player.id) is not conn:
            return
        del self.online[player.id]
        self._lobby_players.add(player.id)
        self._schedule_lobby()
        withdrawn = m.ChallengeCancelled(challenge="", reason=f"{player.name} went offline")
        for cid, ch in list(self.challenges.items()):
            if player.id in (ch.challenger, ch.opponent):
                del self.challenges[cid]
                opponent = self.online.get(ch.opponent)
                if (
                    ch.challenger == player.id
                    and opponent is not None
                    and not isinstance(ch, ArrangedChallenge)
                ):
                    opponent.send(m.encode(withdrawn.model_copy(update={"challenge": cid})))
        if self.stopping:
            return
        player_gone(self, player.id)  # arranged games it directs or plays in are called off
        now = self.now()
        for room in list(self.rooms.values()):
            if room.has(player.id) and not room.closed:
                self.commit(room, room.drop(player.id, now))

    def close_conn(self, conn: Conn, code: int, reason: str) -> None:
        if not conn.closing:
            conn.closing = True
            asyncio.get_running_loop().create_task(conn.ws.close(code, reason))

    def error(
        self, conn: Conn, code: str, message: str, ref: str | None = None, retry_after: float | None = None
    ) -> None:
        self.metrics.errors[code] += 1
        conn.send(m.encode(m.Error(code=code, message=message, ref=ref, retry_after=retry_after)))

    # --- announcing ------------------------------------------------------------------------

    def commit(
        self,
        room: Room | None,
        changes: Changes,
        then: Callable[[], None] | None = None,
        ops: list[StoreOp] | None = None,
    ) -> None:
        """Store ``changes`` (and ``ops``), then announce its events to the room, then ``then``."""
        all_ops = list(changes.ops) + (ops or [])
        if room is not None and changes.events and not changes.ops:
            all_ops.append(SeqSaved(room.id, room.seq))
        for game, ended in changes.finished:
            self.metrics.games_finished += 1
            if game.rated and ended.outcome.reason != "aborted":
                score = {"1-0": 1.0, "0-1": 0.0}.get(ended.outcome.result, 0.5)
                if self.config.node_id != "local":  # feed hook (issue 7): ratings from the shared store
                    from server.feed.shared import refresh_ratings

                    refresh_ratings(self, room.variant.name if room else None, [game.x, game.o])
                saved = self.ratings.rate(room.variant.name if room else "", game.x, game.o, score)
                all_ops += saved
                ended.ratings = {self.players[s.player].name: round(s.rating, 1) for s in saved}

        def announce() -> None:
            if room is not None:
                self._announce(room, changes)
            if then is not None:
                then()

        if room is not None:
            self._schedule_room(room)
        self.writer.submit(all_ops, announce)

    def _announce(self, room: Room, changes: Changes) -> None:
        summary_changed = False
        if changes.events:
            sockets = [c.ws for p in room.members() if (c := self.online.get(p)) is not None]
            # Building the feed's JSON costs as much as the frame; skip it when nobody listens.
            feeding = bool(self.bus._subscriptions)
            for event in changes.events:
                frame = m.encode(event)
                room.announced(event.seq, frame)
                self.outbox.send(sockets, frame)
                if feeding:
                    self.bus.publish(FeedEvent("room_event", room.id, event.model_dump(mode="json")))
                if isinstance(event, m.Moved):
                    self.metrics.moves += 1
                    continue  # a move changes nothing a room summary shows
                summary_changed = True
                if isinstance(event, m.GameStarted):
                    self.metrics.games_started += 1
        for game, ended in changes.finished:
            self._publish_result(room, game, ended)
        if summary_changed:
            self._lobby_rooms.add(room.id)
            self._schedule_lobby()
        if room.closed:
            self.rooms.pop(room.id, None)

    def _publish_result(self, room: Room, game: Any, ended: m.GameEnded) -> None:
        record = m.GameRecord(
            game=game.id,
            room=room.id,
            number=game.number,
            variant=room.variant.name,
            x=ended.x,
            o=ended.o,
            rated=game.rated,
            time_control=room.time_control,
            moves=list(game.state.moves),
            outcome=ended.outcome,
            started=0.0,
            ended=time.time(),
        )
        self.bus.publish(FeedEvent("game_result", game.id, record.model_dump(mode="json")))
        if game.rated and ended.outcome.reason != "aborted":
            for pid in (game.x, game.o):
                r: Rating = self.ratings.get(pid, room.variant.name)
                change = m.RatingChange(
                    player=pid,
                    name=self.players[pid].name,
                    variant=room.variant.name,
                    rating=r.rating,
                    rd=r.rd,
                    games=r.games,
                )
                self.bus.publish(FeedEvent("rating", pid, change.model_dump(mode="json")))
            for pid in (game.x, game.o):
                self._lobby_players.add(pid)

    def publish_node(self, status: str) -> None:
        st: Any = status
        payload = m.NodeStatus(
            node=self.config.node_id,
            url=self.url,
            status=st,
            version=__version__,
            connections=len(self.conns),
            rooms=len(self.rooms),
        )
        self.bus.publish(FeedEvent("node", self.config.node_id, payload.model_dump(mode="json")))

    # --- lobby -----------------------------------------------------------------------------

    def player_info(self, pid: str) -> m.PlayerInfo:
        p = self.players[pid]
        kind: Any = p.kind
        return m.PlayerInfo(
            id=p.id,
            name=p.name,
            kind=kind,
            ratings=self.ratings.of_player(pid),
            online=pid in self.online,
            levels=list(p.levels),
        )

    def lobby_snapshot(self, ref: str | None) -> m.LobbySnapshot:
        rooms = [r.summary() for r in self.rooms.values() if not r.private and not r.closed]
        rooms += [m.RoomSummary.model_validate(r.summary, strict=False) for r in self.remote_rooms.values()]
        players = [self.player_info(pid) for pid in self.online]
        return m.LobbySnapshot(rooms=rooms, players=players, ref=ref)

    def _schedule_lobby(self) -> None:
        if self._lobby_flush is None:
            self._lobby_flush = asyncio.get_running_loop().call_soon(self._flush_lobby)

    def _flush_lobby(self) -> None:
        self._lobby_flush = None
        update = m.LobbyUpdate()
        for rid in self._lobby_rooms:
            room = self.rooms.get(rid)
            if room is None or room.closed:
                update.rooms_closed.append(rid)
                self.bus.publish(FeedEvent("room_summary", rid, None))
            elif not room.private:
                summary = room.summary()
                update.rooms.append(summary)
                self.bus.publish(FeedEvent("room_summary", rid, summary.model_dump(mode="json")))
        for pid in self._lobby_players:
            if pid in self.online:
                update.players.append(self.player_info(pid))
            else:
                update.players_gone.append(pid)
        self._lobby_rooms.clear()
        self._lobby_players.clear()
        if update.rooms or update.rooms_closed or update.players or update.players_gone:
            self.outbox.send([c.ws for c in self.online.values() if c.lobby], m.encode(update))

    def touch_lobby(self, room_id: str | None = None, player_id: str | None = None) -> None:
        if room_id is not None:
            self._lobby_rooms.add(room_id)
        if player_id is not None:
            self._lobby_players.add(player_id)
        self._schedule_lobby()

    # --- timers ------------------------------------------------------------------------------

    def _schedule_room(self, room: Room) -> None:
        due = room.next_deadline()
        if due is not None:
            self.wake_at(due, room.id)

    def wake_at(self, due: float, room_id: str) -> None:
        """Look at ``room_id`` (its room and its arrangement) again at ``due``."""
        if not self._timers or due < self._timers[0][0]:
            self._wake.set()
        heapq.heappush(self._timers, (due, room_id))

    async def _run_timers(self) -> None:
        while True:
            now = self.now()
            while self._timers and self._timers[0][0] <= now:
                _, rid = heapq.heappop(self._timers)
                room = self.rooms.get(rid)
                if room is not None:
                    changes = room.tick(now)
                    if changes.events or changes.ops:
                        self.commit(room, changes)
                if rid in self.arrangements:
                    arrangement_tick(self, rid, now)
            self._wake.clear()
            timeout = self._timers[0][0] - now if self._timers else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    # --- for other modules (the feed, several nodes) ------------------------------------------

    def room(self, room_id: str) -> Room | None:
        """The local room ``room_id``, if this node hosts it."""
        return self.rooms.get(room_id)

    def new_room_id(self) -> str:
        prefix = "" if self.config.node_id == "local" else f"{self.config.node_id}-"
        while True:
            rid = prefix + secrets.token_hex(4)
            if rid not in self.rooms:
                return rid

    def remote_room(self, room_id: str, summary: dict[str, Any] | None, node_id: str) -> None:
        """A room on another node appeared, changed (``summary``: RoomSummary JSON) or closed (None)."""
        if summary is None:
            self.remote_rooms.pop(room_id, None)
        else:
            self.remote_rooms[room_id] = RemoteRoom(summary, node_id)
        update = m.LobbyUpdate()
        if summary is None:
            update.rooms_closed.append(room_id)
        else:
            try:
                update.rooms.append(m.RoomSummary.model_validate(summary, strict=False))
            except ValidationError:
                self.remote_rooms.pop(room_id, None)
                return
        self.outbox.send([c.ws for c in self.online.values() if c.lobby], m.encode(update))

    def remote_node(self, node_id: str, url: str | None) -> None:
        """Another node's public URL (None: it went away)."""
        if url is None:
            self.remote_nodes.pop(node_id, None)
        else:
            self.remote_nodes[node_id] = url

    def relay_room_event(self, room_id: str, event: dict[str, Any]) -> None:
        """An event of a room on another node. Nobody here watches remote rooms (joining or
        watching one answers `Redirect`), so it is only counted."""
        self.metrics.relayed += 1
