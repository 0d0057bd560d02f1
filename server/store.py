"""The store: players with hashed tokens, rooms, games, moves, results, ratings.

`Store` is the embedded default, one SQLite file in WAL mode; `server.postgres`
holds the same tables in PostgreSQL for several nodes on several hosts
(`server.storage.open_store` picks one from ``--db``). Both run the same methods:
SQL here is written once, with ``?`` placeholders and standard SQL (``INSERT ... ON
CONFLICT``), and the PostgreSQL store only swaps what differs (how a batch of moves is
written, its connections). The tables and their versions are in `server.schema`.

Synchronous on purpose: the server's `server.writer.Writer` runs `write` in a
worker thread, one transaction per batch of operations from many rooms; the reads a
node makes while it runs (`find_player`, `ratings_of`, `leaderboard`) go through a
connection of their own, from worker threads. Wall clock times are stamped here,
never in the rooms.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from server.ops import (
    GameFinished,
    GameSaved,
    MoveSaved,
    PlayerSaved,
    PresenceSaved,
    RatingSaved,
    RoomSaved,
    SeqSaved,
    StoreOp,
)
from server.schema import migrate, name_key

__all__ = ["MOVES_PER_STATEMENT", "PAGE_SIZE", "Store", "StoredGame", "StoredRoom", "hash_token", "name_key"]

#: Rooms named in one fencing statement (one parameter each, and three more).
FENCE_CHUNK = 500

#: Moves written by one INSERT (7 parameters each: SQLite allows 32,766 since 3.32).
MOVES_PER_STATEMENT = 1000

#: WAL frames past which the writer's next pause lets the WAL start over (`Store.catch_up`):
#: a few seconds of writes at 5,000 moves/s (16 MiB at `PAGE_SIZE`, 64 MiB at 4 KiB pages).
WAL_CAP = 16384

#: The page size of a new SQLite file (SQLite's default is 4096). A batch of moves from
#: many games dirties about one leaf page of the moves index for each move (each game's
#: entries are apart from the others'), and the WAL and the checkpoint write every dirty
#: page whole: at 1 KiB a move costs the writer a third of the bytes it does at 4 KiB, and
#: about a quarter less CPU (`bench/store_growth.py`). A file made with other pages keeps
#: them (docs/operations.md says how to convert one).
PAGE_SIZE = 1024

PlayerRow = tuple[str, str, str, str]
RatingRow = tuple[str, str, float, float, float, int]


@functools.lru_cache(maxsize=64)
def moves_sql(count: int) -> str:
    """The statement that writes ``count`` moves (seven ``?`` each: game, ply, cell, x_ms,
    o_ms, at, seq). A move stored again (a batch tried again after its commit was lost on
    the way back) replaces its row."""
    return "INSERT OR REPLACE INTO moves (game, ply, cell, x_ms, o_ms, at, seq) VALUES " + ",".join(
        ["(?,?,?,?,?,?,?)"] * count
    )


def unwritable(path: str) -> str | None:
    """Why the server could not write the database file ``path`` and the WAL and SHM files
    beside it (None: it can). Tried for real (a file created in the folder, the database
    opened for writing), so it holds for root and odd mounts as for anyone else."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"the folder {folder} does not exist"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return f"cannot create files in {folder} (for the WAL and SHM files): {exc.strerror or exc}"
    for name in (path, path + "-wal", path + "-shm"):
        if os.path.exists(name):
            try:
                with open(name, "r+b"):
                    pass
            except OSError as exc:
                return f"cannot write {name}: {exc.strerror or exc}"
    return None


def hash_token(token: str) -> str:
    """The stored form of a token: SHA-256 (tokens are 256-bit random, so no salt is needed)."""
    return hashlib.sha256(token.encode()).hexdigest()


class Fenced(Exception):
    """A write for rooms this node no longer owns (another node took them over after this
    node's lease ran out): nothing of the transaction was written."""

    def __init__(self, rooms: list[str]) -> None:
        super().__init__(f"this node no longer hosts {', '.join(rooms)}")
        self.rooms = rooms


def _op_room(op: StoreOp) -> str | None:
    """The room an operation writes to (None: players, ratings, presence)."""
    return getattr(op, "room", None)


@dataclass
class StoredGame:
    id: str
    number: int
    x: str
    o: str
    rated: bool
    opening: tuple[int, ...]
    moves: list[int]
    #: Clocks after the last move (or at the start).
    x_ms: int | None
    o_ms: int | None
    result: str | None
    winner: str | None
    reason: str | None


@dataclass
class StoredRoom:
    id: str
    variant: str
    time_control: str
    rated: bool
    private: bool
    invite: str | None
    ply_cap: int | None
    opening: tuple[int, ...]
    seat_x: str | None
    seat_o: str | None
    seq: int
    games: list[StoredGame] = field(default_factory=list)

    def seats_taken(self) -> list[str]:
        return [pid for pid in (self.seat_x, self.seat_o) if pid is not None]


class Store:
    """One SQLite database file. Writes from one thread at a time; reads from any."""

    #: Which SQL dialect `server.schema` writes for.
    dialect = "sqlite"
    #: What the database raises for an operation it will never take (a constraint it breaks).
    #: What trying again cannot help: a constraint broken, or a room another node owns now.
    rejected: tuple[type[Exception], ...] = (sqlite3.IntegrityError, Fenced)
    #: (node, epoch) of this node's lease once it is clustered (`lease_register`): then
    #: every write to a room first checks, in its transaction, that the room is ours.
    fence: tuple[str, int] | None = None
    #: What it raises when another writer's transaction crossed this one (try again at once).
    transient: tuple[type[Exception], ...] = ()
    #: WAL frames (pages) past which the writer catches up with the checkpoints (`catch_up`).
    wal_cap = WAL_CAP
    _catch_up_due = False
    #: How a transaction that writes starts (SQLite: take the write lock at once).
    BEGIN = "BEGIN IMMEDIATE"
    #: What locks the rows a SELECT reads until the transaction ends (SQLite: the
    #: transaction's write lock already does), for ``"SELECT ..." + store.FOR_UPDATE``.
    FOR_UPDATE = ""

    def __init__(self, path: str, sync: str = "FULL") -> None:
        if sync.upper() not in ("FULL", "NORMAL", "OFF", "EXTRA"):
            raise ValueError(f"bad synchronous mode {sync!r}")
        self.path = path
        self.db: Any = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        self.db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new file only (before WAL mode)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={sync.upper()}")
        self.db.execute("PRAGMA busy_timeout=5000")
        # Checkpoints run from `checkpoint` on a connection of their own, so a commit never
        # has to copy the WAL into the database while moves wait to be announced.
        self.db.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpointer: sqlite3.Connection | None = None
        self._checkpoint_lock = threading.Lock()
        #: The readers' connection (a WAL reader never waits for the writer's lock).
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()
        try:
            migrate(self.db, self.dialect)
        except BaseException:
            self.db.close()
            raise
        self.writes = 0
        self.batches = 0

    def checkpoint(self) -> None:
        """Copy the WAL into the database (PASSIVE: never waits for the writer)."""
        with self._checkpoint_lock:
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(self.path, check_same_thread=False)
            _busy, frames, _copied = self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if frames >= self.wal_cap:
                self._catch_up_due = True

    def catch_up(self) -> None:
        """From the writer's thread, between two of its transactions: once a checkpoint has
        found the WAL past `wal_cap` frames, copy what was appended since that checkpoint
        (milliseconds' worth), so the next transaction starts the WAL over from its beginning.

        SQLite starts the WAL over only when a transaction begins with all of it copied.
        Under a steady load the writer has always appended more by the time a checkpoint
        (on its own connection) ends, so without this the WAL grows without end (about
        40 MB a second at 5,000 moves/s) and writing to it costs more CPU as it grows
        (appending to a file rather than writing over it)."""
        if not self._catch_up_due:
            return
        self._catch_up_due = False
        with self.lock:
            self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        with self.lock, self._checkpoint_lock, self._read_lock:
            for extra in (self._checkpointer, self._reader):
                if extra is not None:
                    extra.close()
            self._checkpointer = self._reader = None
            self.db.close()

    # --- writing ------------------------------------------------------------------------

    def write(self, ops: list[StoreOp]) -> None:
        """Write ``ops`` in one transaction (committed before this returns).

        The usual batch, moves and nothing else, is one statement and so its own
        transaction: the writer thread then wins the GIL back from the event loop
        once for it, rather than once for each of BEGIN, the statements and COMMIT
        (a busy event loop keeps the GIL up to the switch interval each time)."""
        now = time.time()
        with self.lock:
            cur = self.db.cursor()
            if (
                self.fence is None
                and len(ops) <= MOVES_PER_STATEMENT
                and all(type(op) is MoveSaved for op in ops)
            ):
                self._moves(cur, cast(list[MoveSaved], ops), now)
            else:
                self._transaction(cur, ops, now)
        self.writes += len(ops)
        self.batches += 1

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """One transaction on the writer's connection, for methods beyond `write` (from the
        writer's thread, or before it runs): yields the cursor (``?`` placeholders on both
        stores); commits at the end, rolls back if the block raises."""
        with self.lock:
            cur = self.db.cursor()
            cur.execute(self.BEGIN)
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    with contextlib.suppress(Exception):
                        cur.execute("ROLLBACK")
                raise

    def _transaction(self, cur: Any, ops: list[StoreOp], now: float) -> None:
        cur.execute("BEGIN")
        try:
            if self.fence is not None:
                self._check_fence(cur, ops)
            # A move writes its moves row and nothing else (schema version 5), so the moves
            # of the whole transaction go in together, after the rest, in as few statements
            # as they can (not one run of them between each two other operations).
            moves: list[MoveSaved] = []
            for op in ops:
                if type(op) is MoveSaved:
                    moves.append(op)
                else:
                    self._apply(cur, op, now)
            if moves:
                self._moves(cur, moves, now)
            cur.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:  # a failed COMMIT may have rolled back already
                with contextlib.suppress(Exception):  # the original error says more
                    cur.execute("ROLLBACK")
            raise

    def _check_fence(self, cur: Any, ops: list[StoreOp]) -> None:
        """Inside the write's transaction: claim the new rooms of ``ops`` and check that
        this node's lease (node, epoch) owns every room they write to; `Fenced` if not.

        The check is an UPDATE of the owner rows (to the same values), so on a database
        with row locks it also holds them until the commit: a takeover of one of these
        rooms waits for this transaction, or this one sees the new owner."""
        assert self.fence is not None
        node, epoch = self.fence
        rooms = list(dict.fromkeys(r for op in ops if (r := _op_room(op)) is not None))
        if not rooms:
            return
        for op in ops:
            if isinstance(op, RoomSaved):
                cur.execute(
                    "INSERT INTO room_owners (room, node, epoch) VALUES (?,?,?) "
                    "ON CONFLICT (room) DO NOTHING",
                    (op.room, node, epoch),
                )
        owned = 0
        for start in range(0, len(rooms), FENCE_CHUNK):
            chunk = rooms[start : start + FENCE_CHUNK]
            owned += cur.execute(
                "UPDATE room_owners SET epoch = ? WHERE node = ? AND epoch = ? AND room IN ("
                + ",".join("?" * len(chunk))
                + ")",
                (epoch, node, epoch, *chunk),
            ).rowcount
        if owned == len(rooms):
            return
        mine: set[str] = set()
        for start in range(0, len(rooms), FENCE_CHUNK):
            chunk = rooms[start : start + FENCE_CHUNK]
            mine.update(
                r[0]
                for r in cur.execute(
                    "SELECT room FROM room_owners WHERE node = ? AND epoch = ? AND room IN ("
                    + ",".join("?" * len(chunk))
                    + ")",
                    (node, epoch, *chunk),
                )
            )
        raise Fenced([r for r in rooms if r not in mine])

    def _moves(self, cur: Any, moves: list[MoveSaved], now: float) -> None:
        """Moves (of many games) in one statement per `MOVES_PER_STATEMENT`, each with its
        room's seq: the moves rows are all they write (schema version 5)."""
        for start in range(0, len(moves), MOVES_PER_STATEMENT):
            chunk = moves[start : start + MOVES_PER_STATEMENT]
            cur.execute(
                moves_sql(len(chunk)),
                [v for op in chunk for v in (op.game, op.ply, op.cell, op.x_ms, op.o_ms, now, op.seq)],
            )

    def _apply(self, cur: Any, op: StoreOp, now: float) -> None:
        """Any operation but a move (`_transaction` gathers those for `_moves`)."""
        if isinstance(op, RoomSaved):
            cur.execute(
                "INSERT INTO rooms VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO UPDATE SET "
                "seat_x=excluded.seat_x, seat_o=excluded.seat_o, seq=excluded.seq, "
                "closed=excluded.closed, updated=excluded.updated",
                (
                    op.room,
                    op.variant,
                    op.time_control,
                    int(op.rated),
                    int(op.private),
                    op.invite,
                    op.ply_cap,
                    json.dumps(list(op.opening)),
                    op.seat_x,
                    op.seat_o,
                    op.seq,
                    int(op.closed),
                    now,
                    now,
                ),
            )
        elif isinstance(op, GameSaved):
            cur.execute(
                "INSERT INTO games (id, room, number, variant, x, o, time_control, rated, "
                "ply_cap, opening, x_ms, o_ms, started) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (id) DO UPDATE SET room=excluded.room, number=excluded.number, "
                "variant=excluded.variant, x=excluded.x, o=excluded.o, time_control=excluded.time_control, "
                "rated=excluded.rated, ply_cap=excluded.ply_cap, opening=excluded.opening, "
                "x_ms=excluded.x_ms, o_ms=excluded.o_ms, started=excluded.started, ended=NULL, "
                "result=NULL, winner=NULL, reason=NULL, line=NULL",
                (
                    op.game,
                    op.room,
                    op.number,
                    op.variant,
                    op.x,
                    op.o,
                    op.time_control,
                    int(op.rated),
                    op.ply_cap,
                    json.dumps(list(op.opening)),
                    op.x_ms,
                    op.o_ms,
                    now,
                ),
            )
        elif isinstance(op, GameFinished):
            cur.execute(
                "UPDATE games SET ended=?, result=?, winner=?, reason=?, line=? WHERE id=?",
                (now, op.result, op.winner, op.reason, json.dumps(list(op.line)), op.game),
            )
            cur.execute("UPDATE rooms SET seq=?, updated=? WHERE id=?", (op.seq, now, op.room))
        elif isinstance(op, SeqSaved):
            cur.execute("UPDATE rooms SET seq=?, updated=? WHERE id=?", (op.seq, now, op.room))
        elif isinstance(op, RatingSaved):
            self._rating(cur, op, now)
        elif isinstance(op, PlayerSaved):
            # A retried batch may find its own row (its commit was lost on the way back):
            # that is no conflict; another player's name or token is (the store rejects it).
            cur.execute(
                "INSERT INTO players (id, name, kind, token_hash, created, name_key) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT (id) DO NOTHING",
                (op.player, op.name, op.kind, op.token_hash, now, name_key(op.name)),
            )
        elif isinstance(op, PresenceSaved):
            if self.fence is None:
                return  # a lone node: nobody else asks where its players are
            node, epoch = self.fence
            if op.online:
                cur.execute(
                    "INSERT INTO presence (player, node, epoch) VALUES (?,?,?) ON CONFLICT (player) "
                    "DO UPDATE SET node = excluded.node, epoch = excluded.epoch",
                    (op.player, node, epoch),
                )
            else:  # only if it is still here (it may have moved to another node since)
                cur.execute("DELETE FROM presence WHERE player = ? AND node = ?", (op.player, node))
        else:  # pragma: no cover - exhaustive
            raise TypeError(op)

    @staticmethod
    def _rating(cur: Any, op: RatingSaved, now: float) -> None:
        """A rating from before a game (``op.was``) moves on by what that game changed, in
        one statement: another node that rated the player meanwhile loses nothing (both
        changes add up). Without ``was``, the values are set as they are."""
        insert = (
            "INSERT INTO ratings (player, variant, rating, rd, vol, games, updated) VALUES (?,?,?,?,?,?,?) "
        )
        values = (op.player, op.variant, op.rating, op.rd, op.vol, op.games, now)
        if op.was is None:
            cur.execute(
                insert + "ON CONFLICT (player, variant) DO UPDATE SET rating=excluded.rating, "
                "rd=excluded.rd, vol=excluded.vol, games=excluded.games, updated=excluded.updated",
                values,
            )
            return
        rating, rd, vol, games = op.was
        cur.execute(
            insert + "ON CONFLICT (player, variant) DO UPDATE SET rating=ratings.rating + ?, "
            "rd=ratings.rd + ?, vol=ratings.vol + ?, games=ratings.games + ?, updated=excluded.updated",
            (*values, op.rating - rating, op.rd - rd, op.vol - vol, op.games - games),
        )

    # --- reading at start-up (before the writer runs), and for tests and tools ------------

    def players(self) -> list[PlayerRow]:
        """Every player: (id, name, kind, token_hash)."""
        return self.query("SELECT id, name, kind, token_hash FROM players")

    def ratings(self) -> list[RatingRow]:
        return self.query("SELECT player, variant, rating, rd, vol, games FROM ratings")

    def players_with_ids(self, ids: list[str]) -> list[PlayerRow]:
        """The players of ``ids`` that exist (those of the rooms a node recovers)."""
        rows: list[PlayerRow] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id, name, kind, token_hash FROM players WHERE id IN ({marks})"
            rows += self.query(sql, tuple(chunk))
        return rows

    def open_rooms(self, only: set[str] | None = None) -> list[StoredRoom]:
        """Rooms not closed (or only those of ``only``), each with its games (and the
        moves of each game), and its seq: the highest of its row's and its moves'."""
        with self.lock:
            rooms = [
                StoredRoom(
                    r[0],
                    r[1],
                    r[2],
                    bool(r[3]),
                    bool(r[4]),
                    r[5],
                    r[6],
                    tuple(json.loads(r[7])),
                    r[8],
                    r[9],
                    r[10],
                )
                for r in self.db.execute(
                    "SELECT id, variant, time_control, rated, private, invite, ply_cap, opening, seat_x, "
                    "seat_o, seq FROM rooms WHERE closed=0"
                )
                if only is None or r[0] in only
            ]
            for room in rooms:
                for g in list(
                    self.db.execute(
                        "SELECT id, number, x, o, rated, opening, x_ms, o_ms, result, winner, reason "
                        "FROM games WHERE room=? ORDER BY number",
                        (room.id,),
                    )
                ):
                    moves = list(
                        self.db.execute(
                            "SELECT cell, x_ms, o_ms, seq FROM moves WHERE game=? ORDER BY ply", (g[0],)
                        )
                    )
                    x_ms, o_ms = (moves[-1][1], moves[-1][2]) if moves else (g[6], g[7])
                    # The room's row is not written for a move (schema version 5): a move
                    # later than the room's last other change holds its seq.
                    room.seq = max([room.seq, *(mv[3] for mv in moves if mv[3] is not None)])
                    room.games.append(
                        StoredGame(
                            g[0],
                            g[1],
                            g[2],
                            g[3],
                            bool(g[4]),
                            tuple(json.loads(g[5])),
                            [mv[0] for mv in moves],
                            x_ms,
                            o_ms,
                            g[8],
                            g[9],
                            g[10],
                        )
                    )
            return rooms

    def started(self, games: list[str]) -> dict[str, float]:
        """When each of ``games`` started (wall clock, as stored), by game id."""
        with self.lock:
            return {
                g: t for g in games for (t,) in self.db.execute("SELECT started FROM games WHERE id=?", (g,))
            }

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A query on the writer's connection (for start-up, tests and tools)."""
        with self.lock:
            return [tuple(row) for row in self.db.execute(sql, params)]

    # --- reading while the server runs (from worker threads, never the event loop) ------------

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A query on the readers' connection: it never waits for a write in progress."""
        with self._read_lock:
            if self._reader is None:
                self._reader = sqlite3.connect(self.path, check_same_thread=False)
                self._reader.execute("PRAGMA busy_timeout=5000")
            return list(self._reader.execute(sql, params))

    def find_player(
        self, token_hash: str | None = None, name: str | None = None
    ) -> tuple[PlayerRow, list[RatingRow]] | None:
        """The player with that token hash (or that name, through the index of ``name_key``)
        and its ratings; None if nobody has it."""
        if token_hash is not None:
            where, key = "token_hash = ?", token_hash
        elif name is not None:
            where, key = "name_key = ?", name_key(name)
        else:
            return None
        rows = self.read(f"SELECT id, name, kind, token_hash FROM players WHERE {where}", (key,))
        if not rows:
            return None
        player: PlayerRow = rows[0]
        return player, self.ratings_of([player[0]])

    def find_players(
        self, token_hashes: list[str], names: list[str]
    ) -> tuple[list[PlayerRow], list[RatingRow]]:
        """`find_player` for many at once (one query per key, not per player): the players
        with those token hashes or names, and all their ratings."""
        players: list[PlayerRow] = []
        for column, keys in (("token_hash", token_hashes), ("name_key", [name_key(n) for n in names])):
            for start in range(0, len(keys), 500):
                chunk = tuple(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT id, name, kind, token_hash FROM players WHERE {column} IN ({marks})"
                players += self.read(sql, chunk)
        return players, self.ratings_of(list({p[0]: None for p in players}))

    def ratings_of(self, players: list[str], variant: str | None = None) -> list[RatingRow]:
        """The ratings of ``players`` (in ``variant``, or in all)."""
        rows: list[RatingRow] = []
        for start in range(0, len(players), 500):
            chunk = tuple(players[start : start + 500])
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT player, variant, rating, rd, vol, games FROM ratings WHERE player IN ({marks})"
            if variant is None:
                rows += self.read(sql, chunk)
            else:
                rows += self.read(sql + " AND variant = ?", (*chunk, variant))
        return rows

    def leaderboard(self, variant: str, limit: int) -> list[tuple[PlayerRow, RatingRow]]:
        """The best ``limit`` ratings of ``variant`` in the whole database, with their players."""
        rows = self.read(
            "SELECT p.id, p.name, p.kind, p.token_hash, r.rating, r.rd, r.vol, r.games "
            "FROM ratings r JOIN players p ON p.id = r.player WHERE r.variant = ? "
            "ORDER BY r.rating DESC, r.rd, r.player LIMIT ?",
            (variant, limit),
        )
        return [((r[0], r[1], r[2], r[3]), (r[0], variant, r[4], r[5], r[6], r[7])) for r in rows]

    # --- leases: which node hosts which room (server.lease, server.cluster) -------------------

    def lease_register(self, node: str, url: str, expires_ms: int) -> int:
        """Start a new incarnation of ``node``: its lease's epoch goes up by one (so writes
        of any earlier incarnation are fenced off) and this store writes as it from now on.
        Returns the new epoch."""
        with self.transaction() as cur:
            cur.execute(
                "INSERT INTO leases (node, epoch, url, expires) VALUES (?, 1, ?, ?) ON CONFLICT (node) "
                "DO UPDATE SET epoch = leases.epoch + 1, url = excluded.url, expires = excluded.expires",
                (node, url, expires_ms),
            )
            epoch = int(cur.execute("SELECT epoch FROM leases WHERE node = ?", (node,)).fetchone()[0])
            # Rooms from before leases existed: their creator (by the id's prefix) owns them.
            cur.execute(
                "INSERT INTO room_owners (room, node, epoch) SELECT id, CAST(? AS TEXT), 0 FROM rooms "
                "WHERE closed = 0 "
                "AND substr(id, 1, ?) = ? "
                "AND NOT EXISTS (SELECT 1 FROM room_owners o WHERE o.room = rooms.id)",
                (node, len(node) + 1, node + "-"),
            )
            self.fence = (node, epoch)
        return epoch

    def lease_renew(self, node: str, epoch: int, url: str, expires_ms: int) -> bool:
        """Push the lease of (``node``, ``epoch``) on to ``expires_ms``; False when that
        incarnation lost it (another node fenced it off after it ran out)."""
        with self.transaction() as cur:
            renewed = cur.execute(
                "UPDATE leases SET expires = ?, url = ? WHERE node = ? AND epoch = ?",
                (expires_ms, url, node, epoch),
            ).rowcount
            return bool(renewed == 1)

    def live_leases(self, now_ms: int) -> list[tuple[str, int]]:
        """(node, expires) of every lease live at ``now_ms`` (a read: never waits for the writer)."""
        return [
            (str(n), int(e))
            for n, e in self.read("SELECT node, expires FROM leases WHERE expires >= ?", (now_ms,))
        ]

    def lease_release(self, node: str, epoch: int) -> None:
        """A clean exit: the lease ends now, so another node takes the rooms over at once."""
        with self.transaction() as cur:
            cur.execute("UPDATE leases SET expires = 0 WHERE node = ? AND epoch = ?", (node, epoch))

    def orphan_rooms(self, now_ms: int) -> list[tuple[str, str, int]]:
        """Open rooms whose owner's lease is not live at ``now_ms``: (room, node, epoch)."""
        with self.lock:
            return list(
                self.db.execute(
                    "SELECT o.room, o.node, o.epoch FROM room_owners o JOIN rooms r ON r.id = o.room "
                    "WHERE r.closed = 0 AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.node = o.node "
                    "AND l.epoch = o.epoch AND l.expires >= ?)",
                    (now_ms,),
                )
            )

    def adopt_rooms(
        self, node: str, epoch: int, orphans: list[tuple[str, str, int]], now_ms: int
    ) -> list[str]:
        """Take ``orphans`` (as `orphan_rooms` found them) over for (``node``, ``epoch``), in
        one transaction: each dead incarnation's lease epoch goes up (so it can neither renew
        nor write again), then each room moves to us only if it still has the owner it had
        and that owner's lease is still not live. Returns the rooms taken."""
        won: list[str] = []
        with self.transaction() as cur:
            for dead_node, dead_epoch in sorted({(n, e) for _, n, e in orphans}):
                cur.execute(
                    "UPDATE leases SET epoch = epoch + 1 WHERE node = ? AND epoch = ? AND expires < ?",
                    (dead_node, dead_epoch, now_ms),
                )
            for room, dead_node, dead_epoch in orphans:
                taken = cur.execute(
                    "UPDATE room_owners SET node = ?, epoch = ? WHERE room = ? AND node = ? AND epoch = ? "
                    "AND NOT EXISTS (SELECT 1 FROM leases l "
                    "WHERE l.node = ? AND l.epoch = ? AND l.expires >= ?)",
                    (node, epoch, room, dead_node, dead_epoch, dead_node, dead_epoch, now_ms),
                ).rowcount
                if taken == 1:
                    won.append(room)
        return won

    def room_hosts(self, rooms: list[str], now_ms: int) -> dict[str, tuple[str, str | None]]:
        """Who hosts each of ``rooms`` that is open: room -> (node, its URL if its
        lease is live at ``now_ms``, else None: the room is between hosts)."""
        found: dict[str, tuple[str, str | None]] = {}
        with self.lock:
            for start in range(0, len(rooms), FENCE_CHUNK):
                chunk = rooms[start : start + FENCE_CHUNK]
                for room, node, url, expires in self.db.execute(
                    "SELECT o.room, o.node, l.url, l.expires FROM room_owners o "
                    "JOIN rooms r ON r.id = o.room "
                    "LEFT JOIN leases l ON l.node = o.node AND l.epoch = o.epoch "
                    "WHERE r.closed = 0 AND o.room IN (" + ",".join("?" * len(chunk)) + ")",
                    chunk,
                ):
                    live = expires is not None and expires >= now_ms
                    found[room] = (node, url if live else None)
        return found

    def player_host(self, name: str, now_ms: int) -> tuple[str, str] | None:
        """The node (and its URL) where the player named ``name`` is online, if that node's
        lease is live at ``now_ms``."""
        with self.lock:
            row = self.db.execute(
                "SELECT p.node, l.url FROM presence p JOIN players pl ON pl.id = p.player "
                "JOIN leases l ON l.node = p.node AND l.epoch = p.epoch "
                "WHERE pl.name_key = ? AND l.expires >= ?",
                (name_key(name), now_ms),
            ).fetchone()
        return None if row is None else (row[0], row[1])
