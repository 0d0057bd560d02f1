"""Real `ttt serve` nodes on one shared database, with rooms owned under leases (each test
runs on a SQLite file the nodes share on this host, then on a PostgreSQL database, the
store of nodes on several hosts): a challenge
across nodes, `kill -9` of a node with 50 games running (a survivor takes them over with
every acknowledged move, the players resume there, wherever they reconnect), and the fence:
a node that comes back without its lease hosts none of its former rooms."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import time

import psycopg
from cluster_nodes import HostNode, Node, epochs, moves_of, nodes, owners, query, resume_via, until
from pg_harness import hosts_and_postgres, own_cluster
from server_harness import free_port, player, seated_pair

from protocol import messages as m
from protocol.client import ArenaClient, ConnectionLost, RemoteError
from protocol.rules import State, find_variant
from server.storage import is_url

GAMES = 50
CLOCK = m.Increment(base_ms=600_000)


async def test_a_player_on_node_a_challenges_a_player_on_node_b(any_db: str) -> None:
    async with nodes(any_db, "a", "b") as cluster:
        await _challenge_across(any_db, cluster["a"], cluster["b"])


async def test_nodes_on_hosts_of_their_own_challenge_across_and_fail_over() -> None:
    """Two nodes in network namespaces of their own (two hosts on a private network, each
    with its own loopback and port 8765), PostgreSQL on a third (this process's address on
    the bridge): the challenge across nodes, then the host of the game killed and its
    players resumed on the other host."""
    with hosts_and_postgres(2) as (net, pg):
        db = pg.create_db("arena")  # read here through 127.0.0.1; the nodes use the bridge
        there = pg.url("arena", host=net.gateway)
        a = HostNode(there, "a", net.command(0), net.addresses[0])
        b = HostNode(there, "b", net.command(1), net.addresses[1])
        try:
            await a.start()
            await b.start()
            alice, bob, room = await _challenge_across(db, a, b)
            assert {"a": a.url, "b": b.url} == dict(query(db, "SELECT node, url FROM leases")), (
                "each node's address on its own host"
            )
            b.kill()
            for client in (alice, bob):
                await resume_via(client, a.url, room)
                assert client.url == a.url
            assert owners(db)[room] == "a"
            assert isinstance(await bob.request(m.Move(room=room, cell=1)), m.Ok)
            assert moves_of(db, room) == [4, 0, 8, 1]
        finally:
            await a.stop()
            await b.stop()


async def _challenge_across(db: str, a: Node, b: Node) -> tuple[ArenaClient, ArenaClient, str]:
    """alice on a challenges bob on b: she is sent to b, the game is hosted there and
    played. Returns alice, bob and the room."""
    alice = await player(a.url, "alice")
    bob = await player(b.url, "bob")
    sent = await alice.request(m.Challenge(opponent="bob", colour="x"))  # redirected to b, sent there
    assert isinstance(sent, m.ChallengeSent) and alice.url == b.url
    received = await bob.expect(m.ChallengeReceived)
    assert received.challenger.name == "alice"
    joined = await bob.request(m.AcceptChallenge(challenge=received.challenge))
    assert isinstance(joined, m.Joined) and joined.role == "o"
    accepted = await alice.expect(m.ChallengeAccepted)
    assert accepted.room == joined.room and owners(db)[joined.room] == "b"
    for client, cell in [(alice, 4), (bob, 0), (alice, 8)]:
        await client.request(m.Move(room=joined.room, cell=cell))
    assert moves_of(db, joined.room) == [4, 0, 8]
    # a player on neither node is refused as before
    carol = await player(a.url, "carol")
    try:
        await carol.request(m.Challenge(opponent="nobody"))
    except RemoteError as exc:
        assert exc.code == "no_such_player"
    else:
        raise AssertionError("challenged a player who is nowhere")
    await carol.close()
    return alice, bob, joined.room


async def _play_until_the_kill(
    pairs: list[tuple[ArenaClient, ArenaClient, str]], node: Node
) -> dict[str, list[int]]:
    """Three acknowledged moves in every game, then a burst of moves with the node killed
    in its middle: the moves each game had acknowledged."""
    acked: dict[str, list[int]] = {}

    async def opening(x: ArenaClient, o: ArenaClient, room: str) -> None:
        for client, cell in [(x, 4), (o, 0), (x, 8)]:
            await client.request(m.Move(room=room, cell=cell))
        acked[room] = [4, 0, 8]

    await asyncio.gather(*(opening(x, o, room) for x, o, room in pairs))

    async def burst(o: ArenaClient, room: str) -> None:
        with contextlib.suppress(ConnectionLost, TimeoutError, RemoteError):
            await o.request(m.Move(room=room, cell=2))
            acked[room].append(2)

    moves = [asyncio.create_task(burst(o, room)) for _, o, room in pairs]
    await asyncio.sleep(0.02)
    node.kill()
    await asyncio.gather(*moves)
    return acked


async def test_kill_9_mid_game_a_survivor_takes_every_game_over_and_the_players_resume_there(
    any_db: str,
) -> None:
    db = any_db
    async with nodes(db, "a", "b", "c") as cluster:
        a, b, c = cluster["a"], cluster["b"], cluster["c"]
        pairs = []
        for i in range(GAMES):
            x, o, room, _ = await seated_pair(a.url, f"x{i}", f"o{i}", time_control=CLOCK)
            pairs.append((x, o, room))
        assert set(owners(db).values()) == {"a"}
        acked = await _play_until_the_kill(pairs, a)
        assert a.process is not None and await a.process.wait() == -signal.SIGKILL
        # Half the players come back through node b, half through c; whichever took a game
        # over hosts it, and the players who came through the other are redirected there.
        clients = [(client, room) for x, o, room in pairs for client in (x, o)]
        vias = [b.url, c.url]
        await asyncio.gather(
            *(resume_via(client, vias[i % 2], room) for i, (client, room) in enumerate(clients))
        )
        redirected = sum(1 for i, (client, _) in enumerate(clients) if client.url != vias[i % 2])
        assert redirected >= GAMES // 2
        hosts = owners(db)
        urls = {"b": b.url, "c": c.url}
        for client, room in clients:
            assert hosts[room] in ("b", "c") and client.url == urls[hosts[room]]
        for x, o, room in pairs:
            stored = moves_of(db, room)
            assert stored[: len(acked[room])] == acked[room], f"{room}: acknowledged moves lost"
            # the game goes on on its new host: the side to move plays
            state = State.replay(find_variant("classic"), stored)
            mover = x if len(stored) % 2 == 0 else o
            ok = await mover.request(m.Move(room=room, cell=state.legal_moves()[0]))
            assert isinstance(ok, m.Ok)
            assert len(moves_of(db, room)) == len(stored) + 1
        for client, _ in clients:
            await client.close()


async def test_a_node_paused_past_its_lease_writes_nothing_to_its_former_rooms(any_db: str) -> None:
    db = any_db
    async with nodes(db, "a", "b") as cluster:
        a, b = cluster["a"], cluster["b"]
        alice, room = await _two_moves_on(a)
        assert a.process is not None
        await _freeze_between_writes(db, a.process.pid)  # the room in memory, alice connected
        try:
            await until(lambda: owners(db)[room] == "b", what="b taking the room over")
        finally:
            os.kill(a.process.pid, signal.SIGCONT)
        # a wakes up still believing it hosts the room: alice's move there is never
        # acknowledged by a (its write is fenced off, or its lost lease made it drop the room).
        try:
            reply = await alice.request(m.Move(room=room, cell=8), timeout=10)
        except (ConnectionLost, RemoteError):
            reply = None
        if reply is not None:  # a had dropped the room already: alice was redirected to b
            assert isinstance(reply, m.Ok) and alice.url == b.url
        await _hosted_by_b(db, b, room, await player(a.url, "watcher"))


async def test_a_node_frozen_inside_a_write_does_not_hold_its_rooms_past_its_lease(pg_url: str) -> None:
    """Node a freezes (SIGSTOP) in the middle of a write's transaction, after the fence
    locked its room's owner row (`server.store.Store._check_fence`). PostgreSQL ends that
    transaction once it has waited on a for longer than a bound below the lease, so b takes
    the room over as it would from a dead node (it would otherwise wait on the lock for as
    long as a stays frozen), and a, thawed, stores nothing there.

    To freeze a there on purpose, the test holds the moves row a is about to write (an
    uncommitted insert of its own): a's write waits on it, a is stopped, the test rolls
    back, and a's transaction is left open on the server with a asleep."""
    db = pg_url
    async with nodes(db, "a", "b") as cluster:
        a, b = cluster["a"], cluster["b"]
        alice, room = await _two_moves_on(a)
        (game, last), *_ = query(
            db,
            "SELECT game, max(ply) FROM moves JOIN games ON games.id = moves.game WHERE games.room = ? "
            "GROUP BY game, number ORDER BY number DESC",
            (room,),
        )
        assert a.process is not None
        with psycopg.connect(db) as blocker:  # one transaction, left open until the rollback
            blocker.execute(
                "INSERT INTO moves (game, ply, cell, x_ms, o_ms, at) VALUES (%s, %s, 8, 0, 0, 0)",
                (game, last + 1),
            )
            move = asyncio.create_task(alice.request(m.Move(room=room, cell=8), timeout=90))
            await until(lambda: _waiting_to_write_moves(db), what="a's write waiting on the test's row")
            os.kill(a.process.pid, signal.SIGSTOP)
            blocker.rollback()
        try:
            await until(lambda: owners(db)[room] == "b", what="b taking the room over")
        finally:
            os.kill(a.process.pid, signal.SIGCONT)
        try:
            reply = await move
        except (ConnectionLost, RemoteError):
            reply = None
        assert not isinstance(reply, m.Ok) or alice.url == b.url, "a acknowledged a move it lost"
        # a's write failed (its connection was closed under it), then was fenced off: the
        # database answers again, so a takes changes again (a new player) once it retried
        await _hosted_by_b(db, b, room, await _player_once_up(a.url, "watcher"))


async def _two_moves_on(a: Node) -> tuple[ArenaClient, str]:
    """alice (X) and bob in a new room on ``a``, two moves played (4, 0): alice and the room."""
    alice, bob, room, _ = await seated_pair(a.url, "alice", "bob", time_control=CLOCK)
    for client, cell in [(alice, 4), (bob, 0)]:
        await client.request(m.Move(room=room, cell=cell))
    return alice, room


async def _hosted_by_b(db: str, b: Node, room: str, watcher: ArenaClient) -> None:
    """``watcher``, on a, asks to watch ``room``: a sends it to b, which owns the room and
    shows the moves the database holds (the first two of them 4 and 0)."""
    seen = await watcher.request(m.Spectate(room=room))
    assert isinstance(seen, m.Joined) and watcher.url == b.url
    assert seen.snapshot.game is not None and seen.snapshot.game.moves == moves_of(db, room)
    assert moves_of(db, room)[:2] == [4, 0] and owners(db)[room] == "b"


async def _freeze_between_writes(db: str, pid: int) -> None:
    """SIGSTOP ``pid``; on a SQLite file, not while it holds the file's write lock (it
    renews its lease twice a second): SQLite has no bound on a write left open, so a node
    frozen inside one would hold every node's writes until it wakes, takeovers included
    (docs/deploy.md, Fencing), and the freeze is tried again then. On PostgreSQL any
    moment will do (see the test above)."""
    for _ in range(20):
        os.kill(pid, signal.SIGSTOP)
        if is_url(db):
            return
        try:
            with contextlib.closing(sqlite3.connect(db, timeout=0.2)) as probe:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:  # frozen holding the lock: let it finish
            os.kill(pid, signal.SIGCONT)
            await asyncio.sleep(0.1)
    raise AssertionError("the node held the SQLite write lock at every try")


async def _player_once_up(url: str, name: str, timeout: float = 20.0) -> ArenaClient:
    """``name`` joined at ``url``, asking again while that node refuses changes
    (``store_unavailable``) for up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await player(url, name)
        except RemoteError as exc:
            if exc.code != "store_unavailable" or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)


def _waiting_to_write_moves(db: str) -> bool:
    """Whether a session writing moves waits on a lock (pg_stat_activity)."""
    rows = query(
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ?",
        ("%INSERT INTO moves%",),
    )
    return bool(rows[0][0])


async def test_a_killed_node_restarted_after_failover_does_not_host_its_former_rooms(any_db: str) -> None:
    db = any_db
    port = free_port()
    async with nodes(db, "b") as cluster:
        b = cluster["b"]
        a = await Node(db, "a", port).start()
        try:
            alice, bob, room, _ = await seated_pair(a.url, "alice", "bob", time_control=CLOCK)
            await alice.request(m.Move(room=room, cell=4))
            a.kill()
            await until(lambda: owners(db)[room] == "b", what="b taking the room over")
            await a.stop()
            a = await Node(db, "a", port).start()  # same node id, same address
            resumed = await alice.reconnect()  # to a, which sends her to b
            assert resumed.rooms == {room: "replay"} and alice.url == b.url
            back = await bob.reconnect()  # events came on b before he did: a snapshot, or a replay
            assert back.rooms[room] in ("replay", "snapshot") and bob.url == b.url
            await bob.request(m.Move(room=room, cell=0))
            assert moves_of(db, room) == [4, 0] and owners(db)[room] == "b"
            assert epochs(db)["a"] >= 3  # first start, fenced by b, started again
        finally:
            await a.stop()


async def test_postgres_down_longer_than_the_lease_every_node_keeps_its_rooms() -> None:
    """PostgreSQL stops for longer than a lease, so every lease in it has run out when it
    comes back. No node died: each renews its own lease and keeps its rooms (none is
    taken over by the node that happened to reach the database first), and the games go
    on where they were, the move made during the outage stored and acknowledged once."""
    with own_cluster() as pg:
        db = pg.create_db("arena")
        async with nodes(db, "a", "b") as cluster:
            a, b = cluster["a"], cluster["b"]
            games = []
            for node in (a, b):
                x, o, room, _ = await seated_pair(
                    node.url, f"x{node.name}", f"o{node.name}", time_control=CLOCK
                )
                await x.request(m.Move(room=room, cell=4))
                games.append((x, o, room, node))
            assert owners(db) == {games[0][2]: "a", games[1][2]: "b"}
            await asyncio.to_thread(pg.stop)
            waiting = [
                asyncio.create_task(o.request(m.Move(room=room, cell=0), timeout=60))
                for _, o, room, _ in games
            ]
            await asyncio.sleep(5.0)  # two and a half leases (LEASE: 2 s)
            await asyncio.to_thread(pg.start)
            for move in waiting:
                assert isinstance(await move, m.Ok)
            await asyncio.sleep(3.0)  # several beats: time for a takeover, if one were to happen
            assert owners(db) == {games[0][2]: "a", games[1][2]: "b"}, "a live node lost its rooms"
            for x, _, room, node in games:
                assert isinstance(await x.request(m.Move(room=room, cell=8)), m.Ok) and x.url == node.url
                assert moves_of(db, room) == [4, 0, 8]
