"""Several nodes, one SQLite database file: what a node must read from the shared store
instead of trusting the copy it loaded at start, read off the event loop.

The nodes of one arena open the same ``--db`` file (WAL; SQLite serializes the writers).
Each node keeps players and ratings in memory, so small read-throughs keep them correct
when another node has changed the file since:

- a token or a name that another node created (a redirected client comes with its
  token): `SharedReads.load`, before the hello is decided;
- the players' current ratings when a game starts, so a game rated on another node
  is not overwritten when this one is rated: `SharedReads.refresh`;
- every rating of a variant, for a leaderboard of the whole arena: `refresh_variant`.

The reads run in a worker thread on a connection of their own (a WAL reader never waits
for a writer's lock), and their results are applied on the loop: the event loop never
waits for the database. `find_player`, `refresh_ratings` and `refresh_variant` do the
same synchronously, for tools and tests.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from typing import TYPE_CHECKING, Any

from protocol import messages as m
from server.players import Player
from server.ratings import Rating
from server.recovery import own_room
from server.store import Store, hash_token, name_key

if TYPE_CHECKING:
    from server.arena import Arena

__all__ = ["SharedReads", "find_player", "own_room", "refresh_ratings", "refresh_variant", "wire"]

PlayerRow = tuple[str, str, str, str]
RatingRow = tuple[str, str, float, float, float, int]


class SharedReads:
    """Read-throughs to the shared store for one arena, each in a worker thread."""

    def __init__(self, arena: Arena, path: str) -> None:
        self.arena = arena
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def needs(self, hello: m.Hello) -> bool:
        """Whether ``hello`` names a player this node has not loaded (a store read first)."""
        players = self.arena.players
        if hello.token is not None:
            return hash_token(hello.token) not in players.by_token
        return players.named(hello.name) is None

    async def load(self, hello: m.Hello) -> None:
        """Load the player ``hello`` names, if another node created it."""
        token_hash = None if hello.token is None else hash_token(hello.token)
        name = hello.name if hello.token is None else None
        found = await asyncio.to_thread(self._read, lambda db: _player_rows(db, token_hash, name))
        if found is not None:
            _apply(self.arena, *found)

    async def refresh(self, players: list[str]) -> None:
        """Reload ``players``' ratings, as other nodes may have rated them since."""
        rows = await asyncio.to_thread(self._read, lambda db: _rating_rows(db, players, None))
        _apply(self.arena, None, rows)

    def _read(self, read: Any) -> Any:
        with self._lock:
            if self._db is None:
                self._db = sqlite3.connect(self.path, check_same_thread=False)
                self._db.execute("PRAGMA busy_timeout=5000")
            return read(self._db)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def wire(arena: Arena, store: Store) -> SharedReads:
    """The read-throughs for ``arena`` to ``store``; the shell calls them (`SharedReads`)."""
    return SharedReads(arena, store.path)


def _player_rows(
    db: sqlite3.Connection, token_hash: str | None, name: str | None
) -> tuple[PlayerRow, list[RatingRow]] | None:
    """The player with that token hash (or that name, by its indexed ``name_key``) and its ratings."""
    if token_hash is not None:
        rows = list(
            db.execute("SELECT id, name, kind, token_hash FROM players WHERE token_hash = ?", (token_hash,))
        )
    elif name is not None:
        rows = list(
            db.execute("SELECT id, name, kind, token_hash FROM players WHERE name_key = ?", (name_key(name),))
        )
    else:
        return None
    if not rows:
        return None
    return rows[0], _rating_rows(db, [rows[0][0]], None)


def _rating_rows(db: sqlite3.Connection, players: list[str], variant: str | None) -> list[RatingRow]:
    rows: list[RatingRow] = []
    for pid in players:
        if variant is None:
            sql = "SELECT player, variant, rating, rd, vol, games FROM ratings WHERE player = ?"
            rows += db.execute(sql, (pid,))
        else:
            sql = (
                "SELECT player, variant, rating, rd, vol, games FROM ratings WHERE player = ? AND variant = ?"
            )
            rows += db.execute(sql, (pid, variant))
    return rows


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
    """The player with that token hash (or that name), loaded from the shared store into
    the arena's roster if another node created it; None if nobody has it. Synchronous."""
    with store.lock:
        found = _player_rows(store.db, token_hash, name)
    return None if found is None else _apply(arena, *found)


def refresh_ratings(arena: Arena, store: Store, variant: str | None, players: list[str]) -> None:
    """Reload ``players``' ratings (in ``variant``, or all) from the shared store. Synchronous."""
    with store.lock:
        rows = _rating_rows(store.db, players, variant)
    _apply(arena, None, rows)


def refresh_variant(arena: Arena, store: Store, variant: str) -> None:
    """Reload every rating in ``variant`` (and any player another node created) from the shared
    store, so this node's leaderboard shows the games rated on every node. Synchronous."""
    rows = store.query(
        "SELECT p.id, p.name, p.kind, p.token_hash, r.rating, r.rd, r.vol, r.games "
        "FROM ratings r JOIN players p ON p.id = r.player WHERE r.variant = ?",
        (variant,),
    )
    for pid, name, kind, thash, rating, rd, vol, games in rows:
        if pid not in arena.players:
            arena.players.add(Player(pid, name, kind, thash))
        arena.ratings.load(pid, variant, Rating(rating, rd, vol, games))
