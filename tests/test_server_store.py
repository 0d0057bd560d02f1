"""The store's batched move writes: many games' moves in one statement still store every
move, each with its room's sequence number, so a room recovers at the sequence number of
its last move without its row being written for each move; a database file made before
schema versions existed takes moves too."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from server.ops import GameSaved, MoveSaved, PlayerSaved, RoomSaved, SeqSaved, StoreOp
from server.schema import TABLES
from server.store import MOVES_PER_STATEMENT, PAGE_SIZE, Store, name_key


def _room(rid: str, seq: int) -> RoomSaved:
    return RoomSaved(rid, "classic", "{}", False, False, None, None, (), "px", "po", seq, False)


def _game(rid: str) -> GameSaved:
    return GameSaved(f"{rid}.1", rid, 1, "classic", "px", "po", "{}", False, None, (), None, None)


def _set_up(store: Store, rooms: tuple[str, ...]) -> None:
    store.write([op for rid in rooms for op in (_room(rid, 2), _game(rid))])


def _seqs(store: Store) -> dict[str, int]:
    """Each open room's seq as a restart recovers it."""
    return {room.id: room.seq for room in store.open_rooms()}


def test_moves_of_many_rooms_in_one_batch(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"))
    _set_up(store, ("r1", "r2"))
    moves: list[StoreOp] = [
        MoveSaved("r1.1", 1, 4, None, None, room="r1", seq=3),
        MoveSaved("r2.1", 1, 0, None, None, room="r2", seq=3),
        MoveSaved("r1.1", 2, 0, None, None, room="r1", seq=4),
        MoveSaved("r1.1", 3, 8, 1500, 900, room="r1", seq=5),
    ]
    store.write(moves)
    assert store.query("SELECT game, ply, cell, x_ms, o_ms FROM moves ORDER BY game, ply") == [
        ("r1.1", 1, 4, None, None),
        ("r1.1", 2, 0, None, None),
        ("r1.1", 3, 8, 1500, 900),
        ("r2.1", 1, 0, None, None),
    ]
    assert store.query("SELECT seq FROM moves ORDER BY game, ply") == [(3,), (4,), (5,), (3,)]
    assert _seqs(store) == {"r1": 5, "r2": 3}
    # A move writes its own row and nothing else: the rooms' rows are as they were.
    assert store.query("SELECT id, seq FROM rooms ORDER BY id") == [("r1", 2), ("r2", 2)]
    recovered = {r.id: r for r in store.open_rooms()}
    assert recovered["r1"].games[0].moves == [4, 0, 8] and recovered["r1"].seq == 5


def test_more_moves_than_one_statement_takes(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"))
    rooms = tuple(f"r{i}" for i in range(7))
    _set_up(store, rooms)
    count = MOVES_PER_STATEMENT + 50
    ops: list[StoreOp] = [
        MoveSaved(f"r{i % 7}.1", i // 7 + 1, i % 9, None, None, room=f"r{i % 7}", seq=i // 7 + 3)
        for i in range(count)
    ]
    store.write(ops)
    assert store.query("SELECT count(*) FROM moves") == [(count,)]
    last = {f"r{i % 7}": i // 7 + 3 for i in range(count)}
    assert _seqs(store) == last


def test_a_failing_batch_stores_nothing(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"))
    _set_up(store, ("r1",))
    bad = MoveSaved("r1.1", 1, None, None, None, room="r1", seq=3)  # type: ignore[arg-type]
    with pytest.raises(sqlite3.IntegrityError):  # cell is NOT NULL
        store.write([MoveSaved("r1.1", 1, 4, None, None, room="r1", seq=3), bad])
    with pytest.raises(sqlite3.IntegrityError):
        store.write([_room("r1", 9), MoveSaved("r1.1", 2, 4, None, None, room="r1", seq=3), bad])
    assert store.query("SELECT count(*) FROM moves") == [(0,)]
    assert _seqs(store) == {"r1": 2}


def test_a_change_with_no_move_after_the_last_move_sets_the_seq(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"))
    _set_up(store, ("r1",))
    store.write([MoveSaved("r1.1", 1, 4, None, None, room="r1", seq=3)])
    store.write([SeqSaved("r1", 4)])  # a spectator came: no move
    assert _seqs(store) == {"r1": 4}
    store.write([MoveSaved("r1.1", 2, 0, None, None, room="r1", seq=5)])
    assert _seqs(store) == {"r1": 5}


def test_a_database_from_before_schema_versions(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    with sqlite3.connect(path) as old:
        old.executescript(TABLES)
    store = Store(path)
    _set_up(store, ("r1",))
    store.write([MoveSaved("r1.1", 1, 4, None, None, room="r1", seq=3)])
    assert store.query("SELECT game, ply, cell, seq FROM moves") == [("r1.1", 1, 4, 3)]
    assert _seqs(store) == {"r1": 3}


def test_names_are_looked_up_through_an_index_of_their_case_folded_keys(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    before = TABLES.replace(", name_key TEXT", "")
    with sqlite3.connect(path) as old:  # a database from before name_key, with players in it
        old.executescript(before)
        old.execute("INSERT INTO players VALUES ('p1', 'Ann', 'human', 'h1', 0)")
    store = Store(path)
    assert store.query("SELECT id FROM players WHERE name_key = ?", (name_key("ANN"),)) == [("p1",)]
    plan = " ".join(
        str(row)
        for row in store.query("EXPLAIN QUERY PLAN SELECT id FROM players WHERE name_key = ?", ("x",))
    )
    assert "players_by_name_key" in plan and "SCAN" not in plan, plan
    store.write([PlayerSaved("p2", "Émile", "human", "h2")])
    with pytest.raises(sqlite3.IntegrityError):
        store.write([PlayerSaved("p3", "éMILE", "human", "h3")])
    assert store.query("SELECT name_key FROM players ORDER BY id") == [("ann",), ("émile",)]
    store.close()


def test_a_new_file_has_small_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    """Each move of a batch dirties a page of its own in the moves index, written whole to
    the WAL: a new file takes `PAGE_SIZE` pages; a file made before keeps its 4 KiB pages."""
    new = Store(str(tmp_path / "new.db"))
    assert new.query("PRAGMA page_size") == [(PAGE_SIZE,)] and PAGE_SIZE == 1024
    new.close()
    path = str(tmp_path / "old.db")
    with sqlite3.connect(path) as old:
        old.execute("PRAGMA page_size=4096")
        old.execute("PRAGMA journal_mode=WAL")
        old.executescript(TABLES)
    store = Store(path)
    _set_up(store, ("r1",))
    store.write([MoveSaved("r1.1", 1, 4, None, None, room="r1", seq=3)])
    assert store.query("PRAGMA page_size") == [(4096,)] and _seqs(store) == {"r1": 3}
    store.close()
    new = Store(str(tmp_path / "new.db"))  # opened again: still small pages
    assert new.query("PRAGMA page_size") == [(PAGE_SIZE,)]
    new.close()
