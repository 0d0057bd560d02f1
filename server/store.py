"""The SQLite store (WAL mode): players with hashed tokens, rooms, games, moves, results, ratings.

Synchronous on purpose: the server's `server.writer.Writer` runs `write` in a
worker thread, one transaction per batch of operations from many rooms. Wall
clock times are stamped here, never in the rooms.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, cast

from protocol import names
from server.ops import (
    GameFinished,
    GameSaved,
    MoveSaved,
    PlayerSaved,
    RatingSaved,
    RoomSaved,
    SeqSaved,
    StoreOp,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE, created REAL NOT NULL, name_key TEXT);
CREATE TABLE IF NOT EXISTS ratings (
    player TEXT NOT NULL, variant TEXT NOT NULL, rating REAL NOT NULL, rd REAL NOT NULL,
    vol REAL NOT NULL, games INTEGER NOT NULL, updated REAL NOT NULL, PRIMARY KEY (player, variant));
CREATE TABLE IF NOT EXISTS rooms (
    id TEXT PRIMARY KEY, variant TEXT NOT NULL, time_control TEXT NOT NULL, rated INTEGER NOT NULL,
    private INTEGER NOT NULL, invite TEXT, ply_cap INTEGER, opening TEXT NOT NULL,
    seat_x TEXT, seat_o TEXT, seq INTEGER NOT NULL, closed INTEGER NOT NULL,
    created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY, room TEXT NOT NULL, number INTEGER NOT NULL, variant TEXT NOT NULL,
    x TEXT NOT NULL, o TEXT NOT NULL, time_control TEXT NOT NULL, rated INTEGER NOT NULL,
    ply_cap INTEGER, opening TEXT NOT NULL, x_ms INTEGER, o_ms INTEGER, started REAL NOT NULL,
    ended REAL, result TEXT, winner TEXT, reason TEXT, line TEXT);
CREATE TABLE IF NOT EXISTS moves (
    game TEXT NOT NULL, ply INTEGER NOT NULL, cell INTEGER NOT NULL, x_ms INTEGER, o_ms INTEGER,
    at REAL NOT NULL, PRIMARY KEY (game, ply));
CREATE INDEX IF NOT EXISTS games_by_room ON games (room, number);
CREATE VIEW IF NOT EXISTS moves_played AS
    SELECT game, ply, cell, x_ms, o_ms, at, NULL AS room, NULL AS seq FROM moves WHERE 0;
CREATE TRIGGER IF NOT EXISTS moves_played_insert INSTEAD OF INSERT ON moves_played BEGIN
    INSERT OR REPLACE INTO moves VALUES (NEW.game, NEW.ply, NEW.cell, NEW.x_ms, NEW.o_ms, NEW.at);
    UPDATE rooms SET seq = NEW.seq, updated = NEW.at WHERE id = NEW.room;
END;
"""

#: Moves written by one INSERT (8 parameters each: SQLite allows 32,766 since 3.32).
MOVES_PER_STATEMENT = 1000


def name_key(name: str) -> str:
    """What two names that may not both exist share: `protocol.names.key` (the skeleton of
    the NFKC form, case-folded), as the roster compares them; the players table keeps it in
    ``name_key`` under a unique index. Rows stored before keys were skeletons keep their
    case-folded key (the roster, keyed afresh at start, still catches their look-alikes)."""
    return names.key(name)


def _add_name_keys(db: sqlite3.Connection) -> None:
    """Give a database from before ``name_key`` the column, filled, and its unique index
    (names there were compared with NOCASE, so no two of them share a key unless they
    differ beyond ASCII case, which the roster already refused)."""
    columns = [row[1] for row in db.execute("PRAGMA table_info(players)")]
    if "name_key" not in columns:
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("ALTER TABLE players ADD COLUMN name_key TEXT")
            rows = list(db.execute("SELECT id, name FROM players"))
            keys = [(name_key(name), pid) for pid, name in rows]
            db.executemany("UPDATE players SET name_key = ? WHERE id = ?", keys)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS players_by_name_key ON players (name_key)")


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


class Store:
    """One SQLite database file. Safe to call from one thread at a time."""

    def __init__(self, path: str, sync: str = "FULL") -> None:
        if sync.upper() not in ("FULL", "NORMAL", "OFF", "EXTRA"):
            raise ValueError(f"bad synchronous mode {sync!r}")
        self.path = path
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={sync.upper()}")
        self.db.execute("PRAGMA busy_timeout=5000")
        # Checkpoints run from `checkpoint` on a connection of their own, so a commit never
        # has to copy the WAL into the database while moves wait to be announced.
        self.db.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpointer: sqlite3.Connection | None = None
        self._checkpoint_lock = threading.Lock()
        self.db.executescript(SCHEMA)
        _add_name_keys(self.db)
        self.writes = 0
        self.batches = 0

    def checkpoint(self) -> None:
        """Copy the WAL into the database (PASSIVE: never waits for the writer)."""
        with self._checkpoint_lock:
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(self.path, check_same_thread=False)
            self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        with self.lock, self._checkpoint_lock:
            if self._checkpointer is not None:
                self._checkpointer.close()
                self._checkpointer = None
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
            if len(ops) <= MOVES_PER_STATEMENT and all(type(op) is MoveSaved for op in ops):
                self._moves(cur, cast(list[MoveSaved], ops), now)
            else:
                self._transaction(cur, ops, now)
        self.writes += len(ops)
        self.batches += 1

    def _transaction(self, cur: sqlite3.Cursor, ops: list[StoreOp], now: float) -> None:
        cur.execute("BEGIN")
        try:
            moves: list[MoveSaved] = []
            for op in ops:
                if isinstance(op, MoveSaved):
                    moves.append(op)
                    continue
                if moves:
                    self._moves(cur, moves, now)
                    moves = []
                self._apply(cur, op, now)
            if moves:
                self._moves(cur, moves, now)
            cur.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:  # a failed COMMIT may have rolled back already
                with contextlib.suppress(sqlite3.Error):  # the original error says more
                    cur.execute("ROLLBACK")
            raise

    @staticmethod
    def _moves(cur: sqlite3.Cursor, moves: list[MoveSaved], now: float) -> None:
        """Consecutive moves (of many games) in one statement per `MOVES_PER_STATEMENT`
        rather than two each; the view's trigger also moves each room's seq on."""
        for start in range(0, len(moves), MOVES_PER_STATEMENT):
            chunk = moves[start : start + MOVES_PER_STATEMENT]
            cur.execute(
                "INSERT INTO moves_played VALUES " + ",".join(["(?,?,?,?,?,?,?,?)"] * len(chunk)),
                [
                    v
                    for op in chunk
                    for v in (op.game, op.ply, op.cell, op.x_ms, op.o_ms, now, op.room, op.seq)
                ],
            )

    def _apply(self, cur: sqlite3.Cursor, op: StoreOp, now: float) -> None:
        """Any operation but a move (`_transaction` gathers those for `_moves`)."""
        if isinstance(op, RoomSaved):
            cur.execute(
                "INSERT INTO rooms VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
                "seat_x=excluded.seat_x, seat_o=excluded.seat_o, seq=excluded.seq, "
                "closed=excluded.closed, updated=excluded.updated",
                (
                    op.room,
                    op.variant,
                    op.time_control,
                    op.rated,
                    op.private,
                    op.invite,
                    op.ply_cap,
                    json.dumps(list(op.opening)),
                    op.seat_x,
                    op.seat_o,
                    op.seq,
                    op.closed,
                    now,
                    now,
                ),
            )
        elif isinstance(op, GameSaved):
            cur.execute(
                "INSERT OR REPLACE INTO games (id, room, number, variant, x, o, time_control, rated, "
                "ply_cap, opening, x_ms, o_ms, started) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    op.game,
                    op.room,
                    op.number,
                    op.variant,
                    op.x,
                    op.o,
                    op.time_control,
                    op.rated,
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
            cur.execute(
                "INSERT OR REPLACE INTO ratings VALUES (?,?,?,?,?,?,?)",
                (op.player, op.variant, op.rating, op.rd, op.vol, op.games, now),
            )
        elif isinstance(op, PlayerSaved):
            cur.execute(
                "INSERT INTO players (id, name, kind, token_hash, created, name_key) VALUES (?,?,?,?,?,?)",
                (op.player, op.name, op.kind, op.token_hash, now, name_key(op.name)),
            )
        else:  # pragma: no cover - exhaustive
            raise TypeError(op)

    # --- reading (at start-up, before the writer runs) -------------------------------------

    def players(self) -> list[tuple[str, str, str, str]]:
        """Every player: (id, name, kind, token_hash)."""
        with self.lock:
            return list(self.db.execute("SELECT id, name, kind, token_hash FROM players"))

    def ratings(self) -> list[tuple[str, str, float, float, float, int]]:
        with self.lock:
            return list(self.db.execute("SELECT player, variant, rating, rd, vol, games FROM ratings"))

    def open_rooms(self) -> list[StoredRoom]:
        """Rooms not closed, each with its games (and the moves of each game)."""
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
                            "SELECT cell, x_ms, o_ms FROM moves WHERE game=? ORDER BY ply", (g[0],)
                        )
                    )
                    x_ms, o_ms = (moves[-1][1], moves[-1][2]) if moves else (g[6], g[7])
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

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A read-only query (for tests and tools)."""
        with self.lock:
            return list(self.db.execute(sql, params))
