"""Both stores, SQLite and PostgreSQL, through the one interface (`server.storage.open_store`):
batched moves, rejected constraints, versioned schemas, ratings two nodes write at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from server.ops import GameSaved, MoveSaved, PlayerSaved, RatingSaved, RoomSaved, SeqSaved, StoreOp
from server.schema import MIGRATIONS, SCHEMA_VERSION, TABLES, SchemaTooNew, version_of
from server.storage import is_url, open_store
from server.store import Store

ROOT = Path(__file__).resolve().parent.parent


def _room(rid: str, seq: int) -> RoomSaved:
    return RoomSaved(rid, "classic", "{}", True, False, None, None, (), "px", "po", seq, False)


def _game(rid: str) -> GameSaved:
    return GameSaved(f"{rid}.1", rid, 1, "classic", "px", "po", "{}", True, None, (), None, None)


def test_moves_of_many_rooms_in_one_batch(any_db: str) -> None:
    store = open_store(any_db)
    try:
        store.write([op for rid in ("r1", "r2") for op in (_room(rid, 2), _game(rid))])
        moves: list[StoreOp] = [
            MoveSaved("r1.1", 1, 4, None, None, room="r1", seq=3),
            MoveSaved("r2.1", 1, 0, None, None, room="r2", seq=3),
            MoveSaved("r1.1", 2, 0, None, None, room="r1", seq=4),
            MoveSaved("r1.1", 3, 8, 1500, 900, room="r1", seq=5),
        ]
        store.write(moves)
        store.write([MoveSaved("r2.1", 2, 1, None, None, room="r2", seq=4), _room("r3", 1)])  # mixed batch
        assert store.query("SELECT game, ply, cell, x_ms, o_ms FROM moves ORDER BY game, ply") == [
            ("r1.1", 1, 4, None, None),
            ("r1.1", 2, 0, None, None),
            ("r1.1", 3, 8, 1500, 900),
            ("r2.1", 1, 0, None, None),
            ("r2.1", 2, 1, None, None),
        ]
        recovered = {r.id: r for r in store.open_rooms()}
        assert {rid: r.seq for rid, r in recovered.items()} == {"r1": 5, "r2": 4, "r3": 1}
        # Each move holds its room's seq; the rooms' rows are not written for moves.
        assert store.query("SELECT seq FROM moves ORDER BY game, ply") == [(3,), (4,), (5,), (3,), (4,)]
        assert dict(store.query("SELECT id, seq FROM rooms")) == {"r1": 2, "r2": 2, "r3": 1}
        assert recovered["r1"].games[0].moves == [4, 0, 8] and recovered["r1"].seq == 5
        assert recovered["r1"].rated and recovered["r1"].games[0].x_ms == 1500
    finally:
        store.close()


def test_a_batch_breaking_a_constraint_stores_nothing_and_is_rejected(any_db: str) -> None:
    store = open_store(any_db)
    try:
        store.write([PlayerSaved("p1", "Ann", "human", "h1"), _room("r1", 2)])
        store.write([PlayerSaved("p1", "Ann", "human", "h1")])  # its own row again (a retried commit)
        with pytest.raises(store.rejected):
            store.write([_room("r1", 7), PlayerSaved("p2", "aNN", "human", "h2")])  # the name, any case
        with pytest.raises(store.rejected):
            store.write([PlayerSaved("p3", "Bo", "human", "h1")])  # the token
        assert store.query("SELECT id FROM players") == [("p1",)]
        assert store.query("SELECT seq FROM rooms") == [(2,)]
        assert store.find_player(name="ANN") == (("p1", "Ann", "human", "h1"), [])
        assert store.find_player(token_hash="h1") is not None and store.find_player(name="bo") is None
    finally:
        store.close()


def test_two_nodes_rating_one_player_at_once_lose_no_update(any_db: str) -> None:
    """Each node read the player's rating before its games (1500, 0 games) and writes what
    each game changed: every game counts, whichever node wrote first."""
    stores = [open_store(any_db), open_store(any_db)]
    games_each = 40
    try:

        def rate(store: Store) -> None:
            for _ in range(games_each):
                store.write([RatingSaved("p1", "classic", 1510.0, 340.0, 0.06, 1, (1500.0, 350.0, 0.06, 0))])

        threads = [threading.Thread(target=rate, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ((rating, rd, games),) = stores[0].query("SELECT rating, rd, games FROM ratings")
        assert games == 2 * games_each and rating == pytest.approx(1500.0 + 10.0 * 2 * games_each)
        assert rd == pytest.approx(350.0 - 10.0 * 2 * games_each)
        stores[1].write([RatingSaved("p1", "classic", 1600.0, 80.0, 0.05, 3)])  # no `was`: set as is
        assert stores[0].ratings() == [("p1", "classic", 1600.0, 80.0, 0.05, 3)]
    finally:
        for store in stores:
            store.close()


def test_the_leaderboard_reads_every_rating_in_the_database(any_db: str) -> None:
    store = open_store(any_db)
    try:
        store.write(
            [
                PlayerSaved("p1", "Ann", "human", "h1"),
                PlayerSaved("p2", "Bob", "bot", "h2"),
                PlayerSaved("p3", "Cy", "human", "h3"),
                RatingSaved("p1", "classic", 1650.0, 70.0, 0.06, 4),
                RatingSaved("p2", "classic", 1700.0, 70.0, 0.06, 4),
                RatingSaved("p3", "classic", 1400.0, 70.0, 0.06, 4),
                RatingSaved("p3", "4x4k4", 1900.0, 70.0, 0.06, 1),
            ]
        )
        board = store.leaderboard("classic", 2)
        assert [(p[1], r[2]) for p, r in board] == [("Bob", 1700.0), ("Ann", 1650.0)]
    finally:
        store.close()


# --- versions ----------------------------------------------------------------------------------


def _version_1(db: str) -> None:
    """A database as version 1 left it (no leaderboard index), with a player in it."""
    if is_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            for sql in [s for s in TABLES.split(";") if s.strip()]:
                conn.execute(sql)
            conn.execute("CREATE TABLE schema_version (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)")
            conn.execute("INSERT INTO schema_version VALUES (1, 1)")
            conn.execute("INSERT INTO players VALUES ('p1', 'Ann', 'human', 'h1', 0, 'ann')")
    else:
        with sqlite3.connect(db) as conn:
            conn.executescript(TABLES)
            conn.execute("CREATE TABLE schema_version (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)")
            conn.execute("INSERT INTO schema_version VALUES (1, 1)")
            conn.execute("INSERT INTO players VALUES ('p1', 'Ann', 'human', 'h1', 0, 'ann')")


def _indexes(store: Store) -> set[str]:
    if store.dialect == "sqlite":
        return {r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type = 'index'")}
    return {r[0] for r in store.query("SELECT indexname FROM pg_indexes WHERE tablename = 'ratings'")}


def test_an_older_database_is_upgraded_and_keeps_its_rows(any_db: str) -> None:
    _version_1(any_db)
    store = open_store(any_db)
    try:
        assert version_of(store.db) == SCHEMA_VERSION == 5
        assert "ratings_by_variant" in _indexes(store)
        assert store.query("SELECT count(*) FROM room_owners") == [(0,)]  # version 3: leases
        assert store.find_player(token_hash="h1") == (("p1", "Ann", "human", "h1"), [])
    finally:
        store.close()
    open_store(any_db).close()  # opened again: nothing left to do


#: How a version-4 SQLite store wrote a move: through this view, whose trigger also set the
#: room's seq (and ``updated``) in its row; PostgreSQL did the same in one statement.
V4_MOVES_VIEW = """
CREATE VIEW moves_played AS
    SELECT game, ply, cell, x_ms, o_ms, at, NULL AS room, NULL AS seq FROM moves WHERE 0;
CREATE TRIGGER moves_played_insert INSTEAD OF INSERT ON moves_played BEGIN
    INSERT OR REPLACE INTO moves VALUES (NEW.game, NEW.ply, NEW.cell, NEW.x_ms, NEW.o_ms, NEW.at);
    UPDATE rooms SET seq = NEW.seq, updated = NEW.at WHERE id = NEW.room;
END;
"""


def _version_4(db: str) -> None:
    """A database as version 4 left it: a room whose game has three moves, its row at the
    seq of the last (5), as a version-4 server wrote them (moves without a seq)."""
    if is_url(db):
        from server.postgres import PgConnection

        conn: Any = PgConnection(db)
        dialect = "postgresql"
    else:
        conn = sqlite3.connect(db, isolation_level=None)
        dialect = "sqlite"
    try:
        conn.execute("CREATE TABLE schema_version (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (1, 4)")
        for number, step in MIGRATIONS:
            if number <= 4:
                step(conn, dialect)
        conn.execute(
            "INSERT INTO rooms VALUES ('r1', 'classic', '{}', 0, 0, NULL, NULL, '[]', 'px', 'po', 2, 0, 0, 0)"
        )
        conn.execute(
            "INSERT INTO games (id, room, number, variant, x, o, time_control, rated, opening, started) "
            "VALUES ('r1.1', 'r1', 1, 'classic', 'px', 'po', '{}', 0, '[]', 0)"
        )
        moves = [
            ("r1.1", ply, cell, None, None, 1.0, "r1", seq)
            for ply, cell, seq in ((1, 4, 3), (2, 0, 4), (3, 8, 5))
        ]
        if dialect == "sqlite":
            conn.executescript(V4_MOVES_VIEW)
            conn.executemany("INSERT INTO moves_played VALUES (?,?,?,?,?,?,?,?)", moves)
        else:
            conn.executemany("INSERT INTO moves VALUES (?,?,?,?,?,?)", [mv[:6] for mv in moves])
            conn.execute("UPDATE rooms SET seq = 5 WHERE id = 'r1'")
        assert list(conn.execute("SELECT seq FROM rooms")) == [(5,)]
    finally:
        conn.close()


def test_a_version_4_database_is_upgraded_and_its_rooms_go_on_from_their_last_seq(any_db: str) -> None:
    _version_4(any_db)
    store = open_store(any_db)
    try:
        assert version_of(store.db) == SCHEMA_VERSION == 5
        (room,) = store.open_rooms()
        assert room.seq == 5 and room.games[0].moves == [4, 0, 8]  # the row's: its moves have none
        store.write(
            [
                MoveSaved("r1.1", 4, 1, None, None, room="r1", seq=6),
                MoveSaved("r1.1", 5, 2, None, None, room="r1", seq=7),
            ]
        )
        (room,) = store.open_rooms()
        assert room.seq == 7 and room.games[0].moves == [4, 0, 8, 1, 2]  # its last move's
        assert store.query("SELECT seq FROM rooms") == [(5,)]  # the moves did not write the room's row
        if store.dialect == "sqlite":  # the version-4 view is gone: nothing writes through it
            assert store.query("SELECT name FROM sqlite_master WHERE name LIKE 'moves_played%'") == []
    finally:
        store.close()
    store = open_store(any_db)  # opened again: nothing left to do
    try:
        store.write([SeqSaved("r1", 8)])  # a change with no move: the room's row
        assert [r.seq for r in store.open_rooms()] == [8]
    finally:
        store.close()


def test_a_sqlite_file_from_before_versions_is_upgraded(tmp_path: Path) -> None:
    db = str(tmp_path / "old.db")
    with sqlite3.connect(db) as conn:  # no schema_version, no name_key, REAL columns
        conn.executescript(TABLES.replace(", name_key TEXT", "").replace("DOUBLE PRECISION", "REAL"))
        conn.execute("INSERT INTO players VALUES ('p1', 'Émile', 'human', 'h1', 0)")
    store = open_store(db)
    try:
        assert version_of(store.db) == SCHEMA_VERSION
        assert store.find_player(name="éMILE") is not None
        store.write([MoveSaved("g", 1, 4, None, None, room="r", seq=3)])
        assert store.query("SELECT game, seq FROM moves") == [("g", 3)]
    finally:
        store.close()


def _newer(db: str) -> None:
    open_store(db).close()
    if is_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("UPDATE schema_version SET version = 99")
    else:
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE schema_version SET version = 99")


def test_a_newer_database_is_refused_and_left_as_it_is(any_db: str) -> None:
    _newer(any_db)
    with pytest.raises(SchemaTooNew) as refused:
        open_store(any_db)
    assert refused.value.found == 99 and "newer than this server knows" in str(refused.value)
    serve = [sys.executable, "-m", "protocol.cli", "serve", "--port", "0", "--house-bots", "none"]
    served = subprocess.run(
        [*serve, "--db", any_db],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    lines = [line for line in served.stderr.splitlines() if line.strip()]
    assert served.returncode == 2 and len(lines) == 1, served.stderr
    assert "schema is version 99" in lines[0] and "Traceback" not in served.stderr
    if is_url(any_db):
        import psycopg

        with psycopg.connect(any_db) as conn:
            assert conn.execute("SELECT version FROM schema_version").fetchall() == [(99,)]
    else:
        with sqlite3.connect(any_db) as conn:
            assert conn.execute("SELECT version FROM schema_version").fetchall() == [(99,)]


def test_two_nodes_creating_the_tables_at_once(pg_url: str) -> None:
    errors: list[BaseException] = []

    def start() -> None:
        try:
            open_store(pg_url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = open_store(pg_url)
    assert version_of(store.db) == SCHEMA_VERSION
    store.close()


def test_a_database_server_that_cannot_be_reached_stops_the_start_with_one_line() -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://ttt:secret@127.0.0.1:{port}/arena"
    serve = [sys.executable, "-m", "protocol.cli", "serve", "--port", "0", "--house-bots", "none"]
    served = subprocess.run([*serve, "--db", url], capture_output=True, text=True, cwd=ROOT, timeout=60)
    lines = [line for line in served.stderr.splitlines() if line.strip()]
    assert served.returncode == 2 and len(lines) == 1, served.stderr
    assert "cannot use the database postgresql://ttt:***@127.0.0.1" in lines[0] and "secret" not in lines[0]
    assert "Traceback" not in served.stderr


def test_a_method_written_once_runs_on_both_stores(any_db: str) -> None:
    """What a new Store method is written with: `transaction`, ``?`` placeholders,
    `FOR_UPDATE`, standard SQL; a block that raises changes nothing."""
    store = open_store(any_db)
    try:
        store.write([_room("r1", 2)])
        with store.transaction() as cur:
            (seq,) = next(iter(cur.execute("SELECT seq FROM rooms WHERE id = ?" + store.FOR_UPDATE, ("r1",))))
            cur.execute("UPDATE rooms SET seq = ? WHERE id = ?", (seq + 1, "r1"))
        with pytest.raises(RuntimeError), store.transaction() as cur:
            cur.execute("UPDATE rooms SET seq = 99 WHERE id = ?", ("r1",))
            raise RuntimeError("changed my mind")
        assert store.query("SELECT seq FROM rooms WHERE id = ?", ("r1",)) == [(3,)]
        store.db.executescript("CREATE TABLE extra (a INTEGER); CREATE TABLE extra2 (b INTEGER);")
        assert store.query("SELECT count(*) FROM extra2") == [(0,)]
    finally:
        store.close()
