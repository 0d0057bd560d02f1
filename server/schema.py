"""The tables both stores keep, and the numbered steps that build or upgrade them.

A database remembers the last step it took in ``schema_version`` (one row). A store
that opens it takes the steps it lacks, in one transaction that holds the version
row (``FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), so two nodes
starting at once upgrade it once; and it refuses a database whose version is newer
than `SCHEMA_VERSION` (`SchemaTooNew`): that server would not know what the newer
steps mean. A SQLite file from before versions existed counts as version 0 (the
steps are written so that they can run over the tables it has).

A new step goes at the end of `MIGRATIONS` with the next number; `SCHEMA_VERSION`
follows. Steps use SQL both PostgreSQL (and CockroachDB) and SQLite take, with the
dialect passed in for what differs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from protocol import names

#: The tables as version 1 left them (SQLite reads DOUBLE PRECISION as REAL; PostgreSQL's
#: REAL is 4 bytes, too few for a time or a rating).
TABLES = """
CREATE TABLE IF NOT EXISTS players (
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE, created DOUBLE PRECISION NOT NULL, name_key TEXT);
CREATE TABLE IF NOT EXISTS ratings (
    player TEXT NOT NULL, variant TEXT NOT NULL, rating DOUBLE PRECISION NOT NULL,
    rd DOUBLE PRECISION NOT NULL, vol DOUBLE PRECISION NOT NULL, games INTEGER NOT NULL,
    updated DOUBLE PRECISION NOT NULL, PRIMARY KEY (player, variant));
CREATE TABLE IF NOT EXISTS rooms (
    id TEXT PRIMARY KEY, variant TEXT NOT NULL, time_control TEXT NOT NULL, rated INTEGER NOT NULL,
    private INTEGER NOT NULL, invite TEXT, ply_cap INTEGER, opening TEXT NOT NULL,
    seat_x TEXT, seat_o TEXT, seq INTEGER NOT NULL, closed INTEGER NOT NULL,
    created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY, room TEXT NOT NULL, number INTEGER NOT NULL, variant TEXT NOT NULL,
    x TEXT NOT NULL, o TEXT NOT NULL, time_control TEXT NOT NULL, rated INTEGER NOT NULL,
    ply_cap INTEGER, opening TEXT NOT NULL, x_ms INTEGER, o_ms INTEGER, started DOUBLE PRECISION NOT NULL,
    ended DOUBLE PRECISION, result TEXT, winner TEXT, reason TEXT, line TEXT);
CREATE TABLE IF NOT EXISTS moves (
    game TEXT NOT NULL, ply INTEGER NOT NULL, cell INTEGER NOT NULL, x_ms INTEGER, o_ms INTEGER,
    at DOUBLE PRECISION NOT NULL, PRIMARY KEY (game, ply));
CREATE INDEX IF NOT EXISTS games_by_room ON games (room, number);
"""

#: The version this code writes and understands.
SCHEMA_VERSION = 5


class SchemaTooNew(Exception):
    """The database was made or upgraded by a newer ttt-arena than this one."""

    def __init__(self, found: int) -> None:
        super().__init__(
            f"its schema is version {found}, newer than this server knows (up to {SCHEMA_VERSION}); "
            "run the newer ttt-arena, or point --db at another database"
        )
        self.found = found


def name_key(name: str) -> str:
    """What two names that may not both exist share: `protocol.names.key` (the skeleton of
    the NFKC form, case-folded), as the roster compares them; the players table keeps it in
    ``name_key`` under a unique index."""
    return names.key(name)


def statements(script: str) -> list[str]:
    """The statements of ``script`` (none holds a ``;`` of its own)."""
    return [s.strip() for s in script.split(";") if s.strip()]


def _v1_tables(db: Any, dialect: str) -> None:
    """The tables; and a SQLite file from before ``name_key`` gets the column, filled (its
    names were compared with NOCASE, so no two share a key unless they differ beyond ASCII
    case, which the roster already refused)."""
    for sql in statements(TABLES):
        db.execute(sql)
    if dialect == "sqlite":
        columns = [row[1] for row in db.execute("PRAGMA table_info(players)")]
        if "name_key" not in columns:
            db.execute("ALTER TABLE players ADD COLUMN name_key TEXT")
            rows = list(db.execute("SELECT id, name FROM players"))
            keys = [(name_key(name), pid) for pid, name in rows]
            db.executemany("UPDATE players SET name_key = ? WHERE id = ?", keys)
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS players_by_name_key ON players (name_key)")


def _v2_leaderboard(db: Any, dialect: str) -> None:
    """Leaderboards are read from the database (every node's games): an index serves them."""
    db.execute("CREATE INDEX IF NOT EXISTS ratings_by_variant ON ratings (variant, rating)")


Step = Callable[[Any, str], None]

#: Rooms with owners (`server.lease`, docs/deploy.md): each node's lease (its epoch goes up
#: at each start, and when another node takes over after it expired: the fence), which
#: node (and epoch) hosts each room, and which node each online player is on. Plain
#: portable SQL (SQLite and PostgreSQL); times are wall-clock milliseconds.
LEASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS leases (
    node TEXT PRIMARY KEY, epoch INTEGER NOT NULL, url TEXT NOT NULL, expires BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS room_owners (
    room TEXT PRIMARY KEY, node TEXT NOT NULL, epoch INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS room_owners_by_node ON room_owners (node, epoch);
CREATE TABLE IF NOT EXISTS presence (
    player TEXT PRIMARY KEY, node TEXT NOT NULL, epoch INTEGER NOT NULL);
"""


def _v4_skeleton_keys(db: Any, dialect: str) -> None:
    """Name keys were case-folded names; now they are skeletons (`name_key`), so a
    look-alike of a stored name is taken too. A stored name whose skeleton another stored
    name already holds keeps its old key (both players go on; only new look-alikes are
    refused)."""
    rows = sorted(db.execute("SELECT id, name, name_key FROM players"), key=lambda r: r[0])
    held = {row[2] for row in rows}
    for pid, name, old in rows:
        new = name_key(name)
        if new != old and new not in held:
            db.execute("UPDATE players SET name_key = ? WHERE id = ?", (new, pid))
            held.discard(old)
            held.add(new)


def _v3_leases(db: Any, dialect: str) -> None:
    """Leases, room owners and presence, for nodes that share the database."""
    for sql in statements(LEASE_SCHEMA):
        db.execute(sql)


def _v5_move_seq(db: Any, dialect: str) -> None:
    """Each move keeps its room's event counter (``moves.seq``), so writing a move writes
    its moves row and nothing else: before, each move also rewrote its room's row (``seq``
    and ``updated``), a third of the pages a batch of moves wrote. A room's counter is now
    the highest of ``rooms.seq`` (set by every other change of the room) and the ``seq`` of
    its moves (`server.store.Store.open_rooms`); the moves of older versions have none
    (NULL), their rooms' rows hold it. ``rooms.updated`` says when the room's row last
    changed; its last move's ``at``, when its last move was stored.

    On SQLite this also drops the view and trigger (``moves_played``) that wrote a move
    and its room's row in one statement: moves go straight into the table now."""
    if dialect == "sqlite":
        db.execute("DROP TRIGGER IF EXISTS moves_played_insert")
        db.execute("DROP VIEW IF EXISTS moves_played")
        if "seq" not in [row[1] for row in db.execute("PRAGMA table_info(moves)")]:
            db.execute("ALTER TABLE moves ADD COLUMN seq INTEGER")
    else:
        db.execute("ALTER TABLE moves ADD COLUMN IF NOT EXISTS seq INTEGER")


MIGRATIONS: list[tuple[int, Step]] = [
    (1, _v1_tables),
    (2, _v2_leaderboard),
    (3, _v3_leases),
    (4, _v4_skeleton_keys),
    (5, _v5_move_seq),
]


def version_of(db: Any) -> int | None:
    """The version ``db`` is at (None: no version table yet)."""
    try:
        rows = list(db.execute("SELECT version FROM schema_version WHERE id = 1"))
    except Exception:
        return None
    return int(rows[0][0]) if rows else 0


def migrate(db: Any, dialect: str) -> int:
    """Bring ``db`` (a connection in autocommit mode taking ``?`` placeholders) up to
    `SCHEMA_VERSION`; the version it was at. Raises `SchemaTooNew` (changing nothing)."""
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING")
    db.execute("BEGIN IMMEDIATE" if dialect == "sqlite" else "BEGIN")
    try:
        lock = "" if dialect == "sqlite" else " FOR UPDATE"
        found = int(next(iter(db.execute("SELECT version FROM schema_version WHERE id = 1" + lock)))[0])
        if found > SCHEMA_VERSION:
            raise SchemaTooNew(found)
        for number, step in MIGRATIONS:
            if number > found:
                step(db, dialect)
        if found < SCHEMA_VERSION:
            db.execute("UPDATE schema_version SET version = ? WHERE id = 1", (SCHEMA_VERSION,))
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(Exception):  # a failed COMMIT may have rolled back already
            db.execute("ROLLBACK")
        raise
    return found
