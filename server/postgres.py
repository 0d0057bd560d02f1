"""The store in PostgreSQL (``--db postgresql://...``): the tables of every node of an arena.

`PostgresStore` is `server.store.Store` with another connection under it: the same
methods and the same SQL, written with SQLite's ``?`` placeholders, which
`PgConnection` turns into psycopg's ``%s`` (so a method added to `Store` in that
style runs here unchanged). What differs:

- a batch of moves is one statement: the moves as arrays, ``unnest``-ed into
  ``moves`` (each with its room's seq), so it commits on its own in one round trip;
- the writer's connection is opened again after it broke (PostgreSQL restarted, the
  network dropped): the writer's retries (`server.writer`) keep trying, and the server
  refuses changes meanwhile, as when a SQLite disk is full;
- reads while the server runs go through a small pool of connections of their own;
- no checkpoints (PostgreSQL runs its own), and ``--sync`` is SQLite's: a commit here is
  durable as the server's ``synchronous_commit`` says (on by default);
- a transaction of the writer's connection left waiting on the node (the process frozen,
  its host cut off between two statements) is ended by PostgreSQL after ``stall`` seconds
  (``idle_in_transaction_session_timeout``), and its row locks with it: a node frozen in
  the middle of a write would otherwise hold its rooms' owner rows (`Store._check_fence`)
  and stop any other node from taking them over for as long as it stays frozen. A
  clustered node's bound is half its lease (`server.app`); the node, thawed, finds its
  connection closed and writes again on a new one, where the fence turns it away;
- a connection whose server went silent (packets lost, no reset: a cable pulled, a host
  cut off) is ended on the node's side after about ``stall`` seconds too (`silence`: TCP
  keepalives and ``tcp_user_timeout``), not after the many minutes TCP retries by
  default: the writer's thread (and the lease renewal behind it) gets an error, the
  writer tries new connections, and the node sees the network come back at its next try.

The SQL keeps to what CockroachDB also runs where that costs nothing (no advisory
locks, no ``LISTEN``; ``unnest`` of several arrays it has).
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from server.ops import MoveSaved
from server.schema import migrate
from server.store import Fenced, Store

#: Seconds to wait for a connection (a stopped server refuses at once; a lost host does not).
CONNECT_TIMEOUT = 5
#: Seconds a transaction of the writer may wait on the node between two statements before
#: PostgreSQL ends it (a node alone: no other node waits on its locks, so it can be long).
STALL = 30.0


@functools.lru_cache(maxsize=512)
def placeholders(sql: str) -> str:
    """``sql`` with SQLite's ``?`` as psycopg's ``%s`` (and a literal ``%`` doubled);
    quoted strings are left as they are."""

    def swap(match: re.Match[str]) -> str:
        text = match.group(0)
        return "%s" if text == "?" else "%%" if text == "%" else text

    return re.sub(r"'(?:[^']|'')*'|\?|%", swap, sql)


def _params(params: Any) -> Any:
    """Booleans as the 0 and 1 the INTEGER columns hold (as SQLite stores them)."""
    if isinstance(params, dict):
        return params
    return tuple(int(p) if p is True or p is False else p for p in params)


def redacted(url: str) -> str:
    """``url`` without its password, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def silence(stall: float) -> dict[str, int]:
    """libpq's settings that end a connection about ``stall`` seconds after its server
    went silent: data sent and not acknowledged that long (``tcp_user_timeout``), or a
    wait for a reply with the keepalive probes unanswered (sent from half of it on)."""
    seconds = max(1, round(stall))
    return {
        "keepalives": 1,
        "keepalives_idle": max(1, seconds // 2),
        "keepalives_interval": max(1, seconds // 4),
        "keepalives_count": 3,
        "tcp_user_timeout": max(1, round(stall * 1000)),
    }


class PgConnection:
    """One psycopg connection, autocommit, taking ``?`` placeholders; opened again on
    the next statement once it broke. Its `execute` returns a cursor (iterable, as
    sqlite3's), and it is its own `cursor`, so `Store`'s code runs on it as it is."""

    def __init__(self, url: str, stall: float | None = None) -> None:
        self.url = url
        #: See `PostgresStore`: seconds a transaction may idle before the server ends it.
        self.stall = stall
        self._conn: psycopg.Connection[Any] | None = None

    def connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            if self._conn is not None:
                self._conn.close()
            bounds = silence(self.stall) if self.stall is not None else {}
            conninfo = make_conninfo(self.url, **bounds)
            conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
            if self.stall is not None:
                try:
                    ms = max(1, round(self.stall * 1000))
                    conn.execute(f"SET idle_in_transaction_session_timeout = {ms}")
                except BaseException:
                    conn.close()
                    raise
            self._conn = conn
        return self._conn

    def execute(self, sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
        return self.connection().execute(placeholders(sql), _params(params))

    def executemany(self, sql: str, seq: Any) -> None:
        with self.connection().cursor() as cur:
            cur.executemany(placeholders(sql), [_params(p) for p in seq])

    def executescript(self, script: str) -> None:
        """Several statements, no parameters (sent as one simple query)."""
        self.connection().execute(script.encode())

    def cursor(self) -> PgConnection:
        return self

    @property
    def in_transaction(self) -> bool:
        conn = self._conn
        return (
            conn is not None
            and not conn.closed
            and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
        )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


#: A batch of moves in one statement (the moves as arrays, each with its room's seq: the
#: moves rows are all it writes, schema version 5).
MOVES_SQL = """
INSERT INTO moves (game, ply, cell, x_ms, o_ms, at, seq)
SELECT game, ply, cell, x_ms, o_ms, ?, seq
FROM unnest(?::text[], ?::int[], ?::int[], ?::int[], ?::int[], ?::int[])
    AS t(game, ply, cell, x_ms, o_ms, seq)
ON CONFLICT (game, ply) DO UPDATE SET cell = excluded.cell, x_ms = excluded.x_ms,
    o_ms = excluded.o_ms, at = excluded.at, seq = excluded.seq
"""


class PostgresStore(Store):
    """The tables in a PostgreSQL database that every node of the arena shares."""

    dialect = "postgresql"
    rejected: tuple[type[Exception], ...] = (psycopg.IntegrityError, Fenced)
    transient: tuple[type[Exception], ...] = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
    BEGIN = "BEGIN"
    FOR_UPDATE = " FOR UPDATE"

    def __init__(self, url: str, sync: str = "FULL", stall: float | None = None) -> None:
        self.url = url
        self.path = redacted(url)
        self.db = PgConnection(url, STALL if stall is None else stall)
        self.lock = threading.Lock()
        self.writes = 0
        self.batches = 0
        self._pool: ConnectionPool[Any] | None = None
        self._pool_lock = threading.Lock()
        for attempt in range(3):  # two nodes creating the tables at once: one waits, then sees them
            try:
                migrate(self.db, self.dialect)
                break
            except (pg_errors.UniqueViolation, pg_errors.DuplicateTable, pg_errors.DuplicateObject):
                if attempt == 2:
                    self.db.close()
                    raise
            except BaseException:
                self.db.close()
                raise

    def checkpoint(self) -> None:
        """PostgreSQL checkpoints by itself."""

    def close(self) -> None:
        with self.lock:
            self.db.close()
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def _moves(self, cur: Any, moves: list[MoveSaved], now: float) -> None:
        cur.execute(
            MOVES_SQL,
            (
                now,
                [op.game for op in moves],
                [op.ply for op in moves],
                [op.cell for op in moves],
                [op.x_ms for op in moves],
                [op.o_ms for op in moves],
                [op.seq for op in moves],
            ),
        )

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=4,
                    kwargs={
                        "autocommit": True,
                        "connect_timeout": CONNECT_TIMEOUT,
                        **silence(self.db.stall or STALL),
                    },
                    check=ConnectionPool.check_connection,
                    timeout=CONNECT_TIMEOUT,
                    name="ttt-reads",
                    open=True,
                )
            pool = self._pool
        with pool.connection() as conn:
            return list(conn.execute(placeholders(sql), _params(params)))
