"""Reads through to the store, off the event loop: what a node does not hold in memory.

A node keeps in memory only the players it has met since it started (and those of the
rooms it recovered), with their ratings. Everything else is in the store, which several
nodes may share (one PostgreSQL database, or one SQLite file on one host), so the shell
reads before it decides:

- a token or a name it does not know (a player from before the start, or created on
  another node; a redirected client comes with its token): `SharedReads.load`, before
  the hello is decided; the name goes through the index of ``name_key``;
- the players' current ratings when a game starts, so what the game shows starts from
  what other nodes rated since: `SharedReads.refresh` (the store adds each game's change
  to what it holds, so no rating is lost either way);
- a variant's best ratings in the whole database, for the leaderboard: `SharedReads.leaderboard`.

The reads run in worker threads on the store's readers' connections (`Store.read`) and
their results are applied on the loop: the event loop never waits for the database.
`find_player`, `refresh_ratings` and `refresh_variant` do the same synchronously, for
tools and tests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from protocol import messages as m
from protocol.rules import find_variant
from server.players import Player
from server.ratings import Rating
from server.recovery import own_room
from server.store import PlayerRow, RatingRow, Store, hash_token

if TYPE_CHECKING:
    from server.arena import Arena

log = logging.getLogger("ttt.server")

#: The most hellos read in one go (one query per key of up to 500).
BATCH = 500

__all__ = ["SharedReads", "find_player", "own_room", "refresh_ratings", "refresh_variant", "wire"]


class SharedReads:
    """Read-throughs to the store for one arena, each in a worker thread."""

    def __init__(self, arena: Arena, store: Store) -> None:
        self.arena = arena
        self.store = store
        #: Hellos waiting for the next read (`load_then`), and those of the read in flight.
        self._waiting: list[tuple[m.Hello, Callable[[m.Hello, str | None], None]]] = []
        self._batch: list[tuple[m.Hello, Callable[[m.Hello, str | None], None]]] | None = None

    def needs(self, hello: m.Hello) -> bool:
        """Whether ``hello`` names a player this node has not loaded (a store read first)."""
        players = self.arena.players
        if hello.token is not None:
            return hash_token(hello.token) not in players.by_token
        return players.named(hello.name) is None

    def load_then(self, hello: m.Hello, then: Callable[[m.Hello, str | None], None]) -> None:
        """Load the player ``hello`` names, if the store has it, then call ``then(hello,
        failed)`` on the loop (``failed``: why the read failed, or None).

        The hellos that come while a read is in flight wait in a list and are read together
        in the next one (one worker-thread job and a few queries for a burst of hellos): a
        waiting hello costs a tuple, not a task, a coroutine and a future of its own, so a
        burst of them leaves no scattered memory behind once they are decided."""
        self._waiting.append((hello, then))
        if self._batch is None:
            self._next()

    def _next(self) -> None:
        """Read the hellos that wait (at most `BATCH`), in a worker thread."""
        batch, self._waiting = self._waiting[:BATCH], self._waiting[BATCH:]
        if not batch:
            self._batch = None
            return
        self._batch = batch
        tokens = [hash_token(h.token) for h, _ in batch if h.token is not None]
        names = [h.name for h, _ in batch if h.token is None]
        try:
            read = asyncio.get_running_loop().run_in_executor(None, self.store.find_players, tokens, names)
        except RuntimeError as exc:  # the loop's executor is shut down: the server is stopping
            self._batch = None
            for hello, then in batch:
                then(hello, f"{type(exc).__name__}: {exc}")
            return
        read.add_done_callback(self._read)

    def _read(self, read: asyncio.Future[tuple[list[PlayerRow], list[RatingRow]]]) -> None:
        """A batch was read: put what was found into the arena, then decide its hellos."""
        batch, failed = self._batch or [], None
        try:
            players, ratings = read.result()
        except Exception as exc:
            failed = f"{type(exc).__name__}: {exc}".strip()
            log.warning("reading the store failed: %s", failed)
        else:
            for player in players:
                _apply(self.arena, player, [])
            _apply(self.arena, None, ratings)
        for hello, then in batch:
            try:
                then(hello, failed)
            except Exception:  # one hello's trouble is not the others'
                log.exception("deciding a hello after a read failed")
        self._next()

    async def load(self, hello: m.Hello) -> None:
        """Load the player ``hello`` names, if the store has it."""
        token_hash = None if hello.token is None else hash_token(hello.token)
        name = hello.name if hello.token is None else None
        found = await asyncio.to_thread(self.store.find_player, token_hash, name)
        if found is not None:
            _apply(self.arena, *found)

    async def refresh(self, players: list[str]) -> None:
        """Reload ``players``' ratings, as other nodes may have rated them since."""
        rows = await asyncio.to_thread(self.store.ratings_of, players)
        _apply(self.arena, None, rows)

    async def leaderboard(self, variant: str, limit: int) -> None:
        """Load the best ``limit`` players of ``variant`` in the whole database."""
        try:
            name = find_variant(variant).name
        except (ValueError, KeyError):
            return  # the request is refused for its variant
        rows = await asyncio.to_thread(self.store.leaderboard, name, limit)
        for player, rating in rows:
            _apply(self.arena, player, [rating])


def wire(arena: Arena, store: Store) -> SharedReads:
    """The read-throughs for ``arena`` to ``store``; the shell calls them (`SharedReads`)."""
    return SharedReads(arena, store)


def _apply(arena: Arena, player: PlayerRow | None, ratings: list[RatingRow]) -> Player | None:
    """Put what was read into ``arena`` (on the loop)."""
    found = None
    if player is not None:
        pid, pname, kind, thash = player
        found = arena.players.by_id.get(pid)
        if found is None:
            found = Player(pid, pname, kind, thash)
            arena.players.add(found)
    for pid, var, rating, rd, vol, games in ratings:
        arena.ratings.load(pid, var, Rating(rating, rd, vol, games))
    return found


def find_player(
    arena: Arena, store: Store, *, token_hash: str | None = None, name: str | None = None
) -> Player | None:
    """The player with that token hash (or that name), loaded from the store into the
    arena's roster if it was not there; None if nobody has it. Synchronous."""
    found = store.find_player(token_hash, name)
    return None if found is None else _apply(arena, *found)


def refresh_ratings(arena: Arena, store: Store, variant: str | None, players: list[str]) -> None:
    """Reload ``players``' ratings (in ``variant``, or all) from the store. Synchronous."""
    _apply(arena, None, store.ratings_of(players, variant))


def refresh_variant(arena: Arena, store: Store, variant: str, limit: int = 1000) -> None:
    """Load the best ``limit`` ratings in ``variant`` (and their players) from the store, so
    this node's leaderboard shows the games rated on every node. Synchronous."""
    for player, rating in store.leaderboard(variant, limit):
        _apply(arena, player, [rating])
