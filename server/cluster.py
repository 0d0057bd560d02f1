"""Clustered nodes (``--node-id``): the shell around `server.lease` and the lease tables.

Several nodes share one database. Each room has an owner (a node, and the epoch of that
node's lease) in the table ``room_owners``; `Cluster`:

- registers this node at start (a new epoch: whatever an earlier run of it still owned
  is orphaned and taken over, by this node or another), then renews the lease every
  ``lease_renew`` seconds, in a worker thread on the store's connection;
- on the same beat tells the feed's presence which nodes hold a live lease (the
  database's word beats the broker's: `server.feed.presence`), and takes over rooms
  whose owner's lease ran out (`Store.orphan_rooms`, `Store.adopt_rooms`; not for a
  lease after the database could not be reached, `Lease.may_adopt`): loads them from
  the database with their players (clocks as stored after the last move, both seats
  away with a fresh grace period, as at a restart) and hosts them from then on;
- before a request naming a room it does not host (or challenging a player who is not
  online here) is decided, reads who hosts it, so the arena can redirect the client
  (`Arena.hosts`, `Arena.player_hosts`);
- drops rooms this node lost (a write refused by the fence, or the lease itself lost):
  their players' connections are closed (1012) so they reconnect, anywhere, and are
  redirected to the new host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable
from typing import Any, Protocol

from protocol import messages as m
from server.arena import Arena
from server.config import ServerConfig
from server.decision import Decision
from server.lease import Lease, LeaseRules, Verdict
from server.players import Player
from server.ratings import Rating
from server.recovery import load_rooms, players_of
from server.store import Store, StoredRoom


class Host(Protocol):
    """What `Cluster` needs of the server (`server.app.ArenaServer`)."""

    config: ServerConfig
    store: Store
    arena: Arena
    conns: dict[int, Any]
    #: The MQTT feed (`server.feed.bridge.Feed`), or None.
    feed: Any

    @property
    def url(self) -> str: ...

    def now(self) -> float: ...

    def carry_out(self, decision: Decision) -> None: ...

    def close_conn(self, conn: Any, code: int, reason: str) -> None: ...


log = logging.getLogger("ttt.server.cluster")

#: Close code for the players of a room this node no longer hosts (1012: service restart).
MOVED_CODE = 1012

#: Pause before renewing again after a failed renewal.
RETRY = 0.25

#: Most entries kept in `Arena.hosts` and `Arena.player_hosts` (each is read afresh anyway).
MAX_HOSTS = 10_000

PlayerRow = tuple[str, str, str, str]
RatingRow = tuple[str, str, float, float, float, int]
Loaded = tuple[list[StoredRoom], list[PlayerRow], list[RatingRow]]


class Cluster:
    """The lease of one node and what follows from it. Lives on the server's loop."""

    def __init__(self, server: Host) -> None:
        self.server = server
        self.store = server.store
        config = server.config
        self.node = config.node_id
        self.lease = Lease(config.node_id, LeaseRules(config.lease, config.lease_renew))
        #: Rooms taken over from other nodes, and rooms dropped (for /metrics and tests).
        self.adopted = 0
        self.dropped = 0

    # --- start and stop -----------------------------------------------------------------

    def register(self, now: float) -> set[str]:
        """At start (synchronously, before listening): a new epoch, then every orphaned
        room taken over (this node's own from its last run among them). The rooms to load."""
        epoch = self.store.lease_register(self.node, self.server.url, self.lease.expires_ms(time.time()))
        self.lease.registered(epoch, now)
        log.info("node %s holds its lease, epoch %d", self.node, epoch)
        return self._take_orphans(epoch)

    async def run(self) -> None:
        """Renew the lease and take orphaned rooms over, until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(max(0.0, self.lease.due(loop.time()) - loop.time()))
            await self.beat()
            if self.lease.failures:
                await asyncio.sleep(RETRY)

    async def beat(self) -> None:
        """One renewal, then (the lease held) one look for orphaned rooms."""
        loop = asyncio.get_running_loop()
        epoch = self.lease.epoch
        if epoch is None:  # lost: a new incarnation
            await self._reregister()
            return
        try:
            ok: bool | None = await asyncio.to_thread(
                self.store.lease_renew, self.node, epoch, self.server.url, self.lease.expires_ms(time.time())
            )
        except Exception as exc:
            if not self.lease.failures:  # once per outage, not at every retry
                log.warning("renewing the lease failed: %s (retrying every %g s)", exc, RETRY)
            ok = None
        failures = self.lease.failures
        verdict = self.lease.renewed(ok, loop.time())
        if verdict is Verdict.LOST:
            log.error("node %s lost its lease (epoch %d): dropping its rooms", self.node, epoch)
            self.drop(list(self.server.arena.rooms), "this node lost its lease")
            await self._reregister()
        elif verdict is Verdict.HELD:
            if failures:
                log.warning(
                    "node %s renewed its lease after %d failed tries; it takes no room over for %g s",
                    self.node,
                    failures,
                    self.lease.rules.duration,
                )
            await self.vouch()
            if self.lease.may_adopt(loop.time()):
                await self.adopt()

    async def _reregister(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            epoch = await asyncio.to_thread(
                self.store.lease_register, self.node, self.server.url, self.lease.expires_ms(time.time())
            )
        except Exception as exc:
            if not self.lease.failures:
                log.warning("registering the lease failed: %s (retrying every %g s)", exc, RETRY)
            self.lease.renewed(None, loop.time())
            return
        self.lease.registered(epoch, loop.time())
        log.warning("node %s holds a new lease, epoch %d", self.node, epoch)

    def release(self) -> None:
        """A clean exit: the lease ends now, so other nodes take the rooms over at once."""
        if self.lease.epoch is not None:
            with contextlib.suppress(Exception):
                self.store.lease_release(self.node, self.lease.epoch)

    async def vouch(self) -> None:
        """Tell the feed's presence (if any) which other nodes hold a live lease: the
        database, not the broker, says they are alive (`server.feed.presence`)."""
        remote = getattr(self.server.feed, "remote", None)
        if remote is None:
            return
        try:
            wall = time.time()
            rows = await asyncio.to_thread(self.store.live_leases, int(wall * 1000))
        except Exception as exc:
            log.debug("reading the leases failed: %s", exc)
            return
        now = self.server.now()
        remote.presence.leased({n: now + (e / 1000 - wall) for n, e in rows if n != self.node})

    # --- taking rooms over ----------------------------------------------------------------

    def _take_orphans(self, epoch: int) -> set[str]:
        """(In a worker thread, or at start.) Take over every room whose owner's lease is dead."""
        now_ms = int(time.time() * 1000)
        orphans = self.store.orphan_rooms(now_ms)
        if not orphans:
            return set()
        won = set(self.store.adopt_rooms(self.node, epoch, orphans, now_ms))
        if won:
            log.warning("node %s takes over %d rooms: %s", self.node, len(won), " ".join(sorted(won)[:20]))
        return won

    def _load(self, epoch: int) -> Loaded | None:
        """(In a worker thread.) Orphaned rooms taken over, read with their players."""
        won = self._take_orphans(epoch)
        if not won:
            return None
        rooms = self.store.open_rooms(won)
        ids = players_of(rooms)
        players = self.store.players_with_ids(ids)
        ratings = self.store.ratings_of(ids)
        return rooms, players, ratings

    async def adopt(self) -> None:
        """Take over the orphaned rooms, and host them."""
        epoch = self.lease.epoch
        if epoch is None:
            return
        try:
            loaded = await asyncio.to_thread(self._load, epoch)
        except Exception:
            log.exception("taking rooms over failed")
            return
        if loaded is None or self.lease.epoch != epoch:
            return
        rooms, players, ratings = loaded
        arena = self.server.arena
        for pid, name, kind, token_hash in players:
            if pid not in arena.players.by_id:
                arena.players.add(Player(pid, name, kind, token_hash))
        for pid, variant, rating, rd, vol, games in ratings:
            arena.ratings.load(pid, variant, Rating(rating, rd, vol, games))
        decision, closed = load_rooms(arena, rooms, self.server.now())
        for room in rooms:
            arena.hosts.pop(room.id, None)
            if room.id in arena.rooms:
                arena.touch_lobby(room_id=room.id)
        self.adopted += len(rooms) - len(closed)
        self.server.carry_out(decision)

    # --- rooms lost -------------------------------------------------------------------------

    def drop(self, rooms: list[str], reason: str) -> None:
        """Stop hosting ``rooms`` (another node owns them now): their players here are
        disconnected (1012) so they come back through a node that redirects them."""
        arena = self.server.arena
        closing: set[int] = set()
        for rid in rooms:
            room = arena.rooms.pop(rid, None)
            if room is None:
                continue
            self.dropped += 1
            arena.arrangements.pop(rid, None)
            arena.touch_lobby(room_id=rid)
            for pid in room.members():
                session = arena.online.get(pid)
                if session is not None:
                    session.rooms.pop(rid, None)
                    closing.add(session.conn)
        for conn_id in closing:
            conn = self.server.conns.get(conn_id)
            if conn is not None:
                text = f"{reason}: reconnect to be sent to its host"
                goodbye = m.Goodbye(reason=text, close_code=MOVED_CODE)
                conn.send(m.encode(goodbye))
                self.server.close_conn(conn, MOVED_CODE, "room moved to another node")
        if rooms:
            log.warning("node %s dropped %d rooms: %s", self.node, len(rooms), reason)

    def fenced(self, rooms: list[str]) -> None:
        """The store refused writes for ``rooms``: another node took them over."""
        self.drop(rooms, "another node hosts the room now")

    # --- reading who hosts what, before a request is decided ----------------------------------

    def lookup(self, message: m.ClientMessage) -> Awaitable[None] | None:
        """The read to make before ``message`` is decided (None: none needed): who hosts the
        rooms it names that are not here, or where the player it challenges is online."""
        arena = self.server.arena
        if isinstance(message, m.Challenge):
            opponent = arena.players.named(message.opponent)
            if opponent is not None and opponent.id in arena.online:
                return None
            return self._find_player(message.opponent)
        if isinstance(message, m.Hello | m.Resume):
            named = list(message.rooms or ())
        else:
            room = getattr(message, "room", None)
            named = [room] if isinstance(room, str) else []
        missing = [r for r in named if r not in arena.rooms]
        return self._find_rooms(missing) if missing else None

    async def _find_rooms(self, rooms: list[str]) -> None:
        found = await asyncio.to_thread(self.store.room_hosts, rooms, int(time.time() * 1000))
        hosts = self.server.arena.hosts
        if len(hosts) > MAX_HOSTS:
            hosts.clear()
        for rid in rooms:
            if rid in self.server.arena.rooms:
                continue  # taken over meanwhile
            host = found.get(rid)
            if host is None:
                hosts.pop(rid, None)
            elif host[0] == self.node:  # taken over by this node a moment ago, not loaded yet
                hosts[rid] = None
            else:
                hosts[rid] = host[1]

    async def _find_player(self, name: str) -> None:
        found = await asyncio.to_thread(self.store.player_host, name, int(time.time() * 1000))
        hosts = self.server.arena.player_hosts
        if len(hosts) > MAX_HOSTS:
            hosts.clear()
        if found is None or found[0] == self.node:
            hosts.pop(name.casefold(), None)
        else:
            hosts[name.casefold()] = found[1]


__all__ = ["Cluster", "Decision"]
