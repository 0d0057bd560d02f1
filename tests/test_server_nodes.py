"""One arena on several nodes sharing one PostgreSQL database (and the same behaviour on
the embedded SQLite store where it applies): one identity everywhere, names unique
everywhere, ratings that two nodes write at once, and nothing announced that the
database did not store when PostgreSQL stops."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_harness import own_cluster
from server_harness import running_server, url_of
from test_hostile_storage import Serve, refused, told_moves, two_moves_in, unhealthy

from protocol import messages as m
from protocol.client import ArenaClient, connect
from server.store import hash_token


async def _win_as_x(x: ArenaClient, o: ArenaClient, room: str) -> None:
    """X takes the top row (cells 0, 1, 2) while O plays 3 and 4."""
    for cell, mover in ((0, x), (3, o), (1, x), (4, o), (2, x)):
        assert isinstance(await mover.request(m.Move(room=room, cell=cell)), m.Ok)


async def test_a_token_from_node_a_works_on_node_b_and_names_are_one_set(pg_url: str, tmp_path: Path) -> None:
    """Two `ttt serve` processes on one database: a player created on a comes back on b
    with its token (b never saw it), and its name is taken on b too."""
    a = Serve(pg_url, "--node-id", "a")
    b = Serve(pg_url, "--node-id", "b")
    try:
        await asyncio.gather(a.started(), b.started())
        alice = await connect(a.url, "alice", timeout=30)
        token, pid = alice.welcome.token, alice.welcome.player.id
        await alice.close()
        back = await connect(b.url, "alice", token=token, timeout=30)
        assert back.welcome.player.id == pid and back.welcome.player.name == "alice"
        await back.close()
        taken = await refused(connect(b.url, "ALICE", timeout=30))
        assert taken.code == "name_taken"
        bad = await refused(connect(b.url, "alice", token="not-a-token", timeout=30))
        assert bad.code == "bad_token"
    finally:
        a.stop()
        b.stop()
    assert not any("Traceback" in line for line in a.lines + b.lines), "".join(a.lines + b.lines)


async def test_a_name_two_nodes_create_at_once_goes_to_one_and_the_other_hears_name_taken(
    pg_url: str, tmp_path: Path
) -> None:
    """Both nodes look the name up before either has stored it (the players table is held
    by another transaction meanwhile: both inserts wait). The database's unique index
    decides: one player gets its welcome, the other ``name_taken``, and nobody hangs."""
    async with (
        running_server(tmp_path / "a", db=pg_url, node_id="a") as a,
        running_server(tmp_path / "b", db=pg_url, node_id="b") as b,
    ):
        blocker = await psycopg.AsyncConnection.connect(pg_url)
        await blocker.execute("LOCK TABLE players IN EXCLUSIVE MODE")  # reads go on, inserts wait
        first = asyncio.create_task(connect(url_of(a), "zed", timeout=30))
        second = asyncio.create_task(connect(url_of(b), "ZED", timeout=30))
        watcher = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
        for _ in range(300):  # both writers wait for the lock, each after its own lookup
            cur = await watcher.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT%'"
            )
            row = await cur.fetchone()
            if row is not None and row[0] == 2:
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the two inserts never waited together")
        await blocker.commit()
        await blocker.close()
        await watcher.close()
        results = await asyncio.gather(first, second, return_exceptions=True)
        welcomed = [r for r in results if isinstance(r, ArenaClient)]
        errors = [getattr(r, "code", r) for r in results if not isinstance(r, ArenaClient)]
        assert len(welcomed) == 1 and errors == ["name_taken"], results
        loser = b if welcomed[0].welcome.player.name == "zed" else a
        assert loser.arena.players.named("zed") is None, "the refused player is forgotten"
        again = await refused(connect(url_of(loser), "zed", timeout=30))
        assert again.code == "name_taken", "the loser's node now finds the winner in the database"
        assert a.store.query("SELECT name FROM players") in ([("zed",)], [("ZED",)])
        await welcomed[0].close()


async def test_one_player_rated_on_two_nodes_at_once_keeps_both_games(pg_url: str, tmp_path: Path) -> None:
    """Alice plays a rated game on node a and one on node b at the same time; each node
    read her rating (1500, no games) when its game started. Both games count."""
    async with (
        running_server(tmp_path / "a", db=pg_url, node_id="a") as a,
        running_server(tmp_path / "b", db=pg_url, node_id="b") as b,
    ):
        alice_a = await connect(url_of(a), "alice", timeout=10)
        alice_b = await connect(url_of(b), "alice", token=alice_a.welcome.token, timeout=10)
        bob = await connect(url_of(a), "bob", timeout=10)
        carol = await connect(url_of(b), "carol", timeout=10)
        rooms = []
        for alice, opponent in ((alice_a, bob), (alice_b, carol)):
            joined = await alice.request(m.CreateRoom(seat="x", rated=True))
            assert isinstance(joined, m.Joined)
            await opponent.request(m.Join(room=joined.room))
            await alice.expect(m.GameStarted, room=joined.room)
            rooms.append(joined.room)
        await asyncio.sleep(0.3)  # each node has read the ratings the game starts from
        await asyncio.gather(_win_as_x(alice_a, bob, rooms[0]), _win_as_x(alice_b, carol, rooms[1]))
        for alice, room in ((alice_a, rooms[0]), (alice_b, rooms[1])):
            await alice.expect(m.GameEnded, room=room, timeout=10)
        pid = alice_a.welcome.player.id
        for _ in range(500):  # until both nodes' writers have stored the game's rating
            ((games, rating),) = a.store.query(
                "SELECT games, rating FROM ratings WHERE player = ? AND variant = 'classic'", (pid,)
            )
            if games == 2:
                break
            await asyncio.sleep(0.02)
        one_game = a.arena.ratings.get(pid, "classic").rating - 1500.0
        assert games == 2 and rating == pytest.approx(1500.0 + 2 * one_game)
        board = await carol.request(m.GetLeaderboard(variant="classic"))
        assert isinstance(board, m.Leaderboard)
        top = board.entries[0]
        assert top.name == "alice" and top.games == 2, "b's board reads the database"
        assert {e.name for e in board.entries} == {"alice", "bob", "carol"}, "bob played on a only"
        for client in (alice_a, alice_b, bob, carol):
            await client.close()


async def test_players_are_loaded_when_they_come_back_not_at_start(any_db: str, tmp_path: Path) -> None:
    tokens = {}
    async with running_server(tmp_path, db=any_db) as server:
        for name in ("ann", "bob", "cy"):
            client = await connect(url_of(server), name, timeout=10)
            tokens[name] = client.welcome.token
            await client.close()
    async with running_server(tmp_path, db=any_db) as server:
        assert len(server.players) == 0, "nobody is loaded at start"
        back = await connect(url_of(server), "bob", token=tokens["bob"], timeout=10)
        assert back.welcome.player.name == "bob" and len(server.players) == 1
        assert (await refused(connect(url_of(server), "Ann", timeout=10))).code == "name_taken"
        assert [p.name for p in server.players.values()] == ["bob", "ann"]
        await back.close()


async def test_a_burst_of_hellos_waits_for_one_read_and_shares_the_next(
    any_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hellos that come while the store is read wait as a list, not a task and a worker
    thread each, and are then read together: a few queries for the whole burst, each hello
    decided as before (a token loads its player, a stored name is taken, a new one is free)."""
    tokens = {}
    async with running_server(tmp_path, db=any_db) as server:
        for name in ("ann", "bob"):
            client = await connect(url_of(server), name, timeout=10)
            tokens[name] = client.welcome.token
            await client.close()
    limits = {"signup_burst": 1000, "ip_burst": 1000}
    async with running_server(tmp_path, db=any_db, hello_timeout=30.0, **limits) as server:
        gate, reads = threading.Event(), []
        read = server.store.read

        def gated(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
            reads.append(sql)
            gate.wait(30)
            return read(sql, params)

        monkeypatch.setattr(server.store, "read", gated)
        url = url_of(server)
        hellos = [asyncio.create_task(connect(url, f"new{i}", timeout=30)) for i in range(20)]
        hellos.append(asyncio.create_task(connect(url, "bob", token=tokens["bob"], timeout=30)))
        taken = asyncio.create_task(refused(connect(url, "Ann", timeout=30)))
        try:
            for _ in range(500):
                if server.metrics.frames >= 22:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            assert server.metrics.frames == 22 and len(reads) == 1, "one read at a time"
            assert not server._reads, "no task per waiting hello"
        finally:
            gate.set()
        clients = await asyncio.gather(*hellos)
        assert (await taken).code == "name_taken"
        assert len(reads) <= 4, f"the other 21 hellos in one batch: {reads}"
        assert [c.welcome.player.name for c in clients] == [*(f"new{i}" for i in range(20)), "bob"]
        assert server.arena.players.by_token[hash_token(tokens["bob"])].name == "bob"
        for client in clients:
            await client.close()


async def test_postgres_stopped_mid_game_pauses_the_arena_and_announces_nothing_unstored() -> None:
    """As with a full disk under SQLite (test_hostile_storage): the move waits, unanswered
    and unannounced; changes are refused with ``store_unavailable``; /healthz says 503;
    once PostgreSQL is back the move is stored, then announced, and the game goes on."""
    seen: list[m.ServerMessage] = []
    with own_cluster() as cluster:
        url = cluster.create_db("arena")
        server = Serve(url)
        try:
            await server.started()
            x = await connect(server.url, "alice", timeout=30)
            o = await connect(server.url, "bob", timeout=30)
            room = await two_moves_in(x, o, 1500)

            await asyncio.to_thread(cluster.stop)
            move = asyncio.create_task(x.request(m.Move(room=room, cell=1), timeout=60))
            status, health = await unhealthy(server)
            assert status == 503 and health["status"] == "store_unavailable", health
            assert isinstance(await o.request(m.Ping()), m.Pong), "read-only requests still work"
            busy = await refused(o.request(m.CreateRoom(seat="x")))
            assert busy.code == "store_unavailable" and busy.retry_after
            assert (await refused(connect(server.url, "dave", timeout=30))).code == "store_unavailable"
            await asyncio.sleep(2.0)  # longer than bob's 1.5 s for a move: his clock must not run
            assert not move.done(), "a move that is not stored is not answered"
            seen += o.drain()
            assert not [e for e in seen if isinstance(e, m.Moved) and e.ply == 3], "nor announced"

            await asyncio.to_thread(cluster.start)
            assert isinstance(await move, m.Ok)
            seen.append(await o.expect(m.Moved, room=room, ply=3, timeout=30))
            assert (await asyncio.to_thread(server.healthz))[0] == 200
            assert isinstance(await o.request(m.Move(room=room, cell=8)), m.Ok), "bob did not lose on time"
            await x.request(m.Move(room=room, cell=2))
            ended = await o.expect(m.GameEnded, room=room, timeout=30)
            assert ended.outcome.winner == "x" and ended.outcome.reason != "timeout"
            await asyncio.sleep(0.2)
            told = told_moves(x, o, seen=seen)
            await x.close()
            await o.close()
        finally:
            code = server.stop()
        assert code == 0, "".join(server.lines)
        with psycopg.connect(url) as conn:
            stored = set(conn.execute("SELECT game, ply, cell FROM moves").fetchall())
        assert told == stored == {(f"{room}.1", ply, cell) for ply, cell in enumerate((0, 4, 1, 8, 2), 1)}
        assert not any("Traceback" in line for line in server.lines), "".join(server.lines)
