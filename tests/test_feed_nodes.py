"""Two real server nodes (in process, one shared SQLite file) on one real Mosquitto: the lobby
union, watching a game across nodes through the broker, the redirect to the host node."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mosquitto import Broker, running_broker
from websockets.asyncio.client import connect as ws_connect

from protocol import messages as m
from protocol.client import ArenaClient, connect
from server.app import ArenaServer
from server.config import ServerConfig
from server.feed import start_feed
from server.feed.bridge import Backoff

X_WINS = [4, 1, 0, 2, 8]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path) as b:
        yield b


async def start_node(tmp_path: Path, broker: Broker, node: str) -> ArenaServer:
    config = ServerConfig(host="127.0.0.1", port=0, db=str(tmp_path / "arena.db"), node_id=node)
    server = ArenaServer(config)
    server.feed = await start_feed(server, server.bus, broker.url, node)
    server.feed.backoff = Backoff(0.05, 0.5)
    await server.start()
    return server


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def lobby_rooms(client: ArenaClient) -> dict[str, m.RoomSummary]:
    snapshot = await client.request(m.LobbySubscribe())
    assert isinstance(snapshot, m.LobbySnapshot)
    return {r.id: r for r in snapshot.rooms}


async def wait_lobby(client: ArenaClient, predicate: Callable[[dict[str, m.RoomSummary]], bool]) -> None:
    deadline = time.monotonic() + 10
    while not predicate(await lobby_rooms(client)):
        assert time.monotonic() < deadline, "the lobby never showed it"
        await asyncio.sleep(0.05)


async def test_lobby_union_redirect_and_watching_across_nodes(tmp_path: Path, broker: Broker) -> None:
    a = await start_node(tmp_path, broker, "a")
    clients: list[ArenaClient] = []
    b: ArenaServer | None = None
    try:
        ann = await connect(a.url, "ann")
        bob = await connect(a.url, "bob")  # registered on a, in the shared database
        await bob.close()
        b = await start_node(tmp_path, broker, "b")  # b loads bob from the shared database
        carl = await connect(b.url, "carl")
        dan = await connect(b.url, "dan")
        clients += [ann, carl, dan]
        joined = await ann.request(m.CreateRoom(variant="classic", seat="x"))
        assert isinstance(joined, m.Joined)
        room_a = joined.room
        on_b = await dan.request(m.CreateRoom(variant="tactic-toe", seat="x"))
        assert isinstance(on_b, m.Joined)
        room_b = on_b.room

        # Lobby union: each node lists the rooms of both, its own once.
        await wait_lobby(carl, lambda rooms: {room_a, room_b} <= set(rooms))
        await wait_lobby(ann, lambda rooms: {room_a, room_b} <= set(rooms))
        rooms = await lobby_rooms(carl)
        assert (rooms[room_a].node, rooms[room_b].variant) == ("a", "tactic-toe")

        # Taking a seat in a room on another node answers redirect with that node's URL...
        async with ws_connect(b.url) as raw:
            await raw.send(m.encode(m.Hello(name="eve")))
            assert json.loads(await raw.recv())["type"] == "welcome"
            await raw.send(m.encode(m.Join(room=room_a, ref="j1")))
            assert json.loads(await raw.recv()) == {
                "type": "redirect",
                "url": a.url,
                "room": room_a,
                "ref": "j1",
            }
        # ...and the client follows it, with the same player (shared database).
        bob = await connect(b.url, "bob", token=bob.token)
        clients.append(bob)
        seated = await bob.request(m.Join(room=room_a))
        assert isinstance(seated, m.Joined) and seated.role == "o"
        assert bob.url == a.url

        # Watching across nodes: carl on b spectates the game on a, through the broker.
        for ply, cell in enumerate(X_WINS[:2]):
            await (ann if ply % 2 == 0 else bob).request(m.Move(room=room_a, cell=cell))
        await until(lambda: (b.feed.remote.snapshot(room_a) or {}).get("seq") == a.rooms[room_a].seq)
        watching = await carl.request(m.Spectate(room=room_a))
        assert isinstance(watching, m.Joined) and watching.role == "spectator"
        assert carl.url == b.url, "watched from b, not redirected"
        host = a.rooms[room_a].snapshot(a.now())
        assert watching.snapshot.game is not None and host.game is not None
        assert watching.snapshot.game.board == host.game.board and watching.snapshot.seq == host.seq
        for ply, cell in enumerate(X_WINS[2:], 2):
            await (ann if ply % 2 == 0 else bob).request(m.Move(room=room_a, cell=cell))
        relayed: list[m.ServerMessage] = []
        while not relayed or not isinstance(relayed[-1], m.GameEnded):
            event = await carl.next_event(timeout=10)
            if getattr(event, "room", None) == room_a:
                relayed.append(event)
        assert [e.cell for e in relayed if isinstance(e, m.Moved)] == X_WINS[2:]
        assert [e.seq for e in relayed if hasattr(e, "seq")] == list(
            range(host.seq + 1, a.rooms[room_a].seq + 1)
        )
        over = relayed[-1]
        assert isinstance(over, m.GameEnded) and over.outcome.result == "1-0"
        assert isinstance(await carl.request(m.Leave(room=room_a)), m.Ok), "stops watching"

        # A node that goes away leaves the other lobbies.
        await ann.close()
        await bob.close()
        await a.stop()
        await wait_lobby(carl, lambda rooms: room_a not in rooms and room_b in rooms)
    finally:
        for client in clients:
            await client.close()
        await a.stop()
        if b is not None:
            await b.stop()


async def test_ratings_stay_correct_when_players_play_on_both_nodes(tmp_path: Path, broker: Broker) -> None:
    a = await start_node(tmp_path, broker, "a")
    b = await start_node(tmp_path, broker, "b")
    clients: list[ArenaClient] = []
    try:
        ann, bob = await connect(a.url, "ann"), await connect(a.url, "bob")  # created on a, after b started
        clients += [ann, bob]
        after_a: dict[str, float] = {}
        for server in (a, b):
            if server is b:  # the same players, with their tokens, on the other node
                ann = await connect(b.url, "ann", token=ann.token)
                bob = await connect(b.url, "bob", token=bob.token)
                clients += [ann, bob]
            joined = await ann.request(m.CreateRoom(variant="classic", seat="x"))
            assert isinstance(joined, m.Joined)
            await bob.request(m.Join(room=joined.room))
            for ply, cell in enumerate(X_WINS):
                await (ann if ply % 2 == 0 else bob).request(m.Move(room=joined.room, cell=cell))
            ended = await ann.expect(m.GameEnded, timeout=10)
            if server is a:
                after_a = dict(ended.ratings)
            else:
                # b rated from a's result, not from a fresh 1500: ann went up twice.
                assert ended.ratings["ann"] > after_a["ann"] > 1500
                assert ended.ratings["bob"] < after_a["bob"] < 1500
        rows = a.store.query("SELECT p.name, r.games FROM ratings r JOIN players p ON p.id = r.player")
        assert sorted(rows) == [("ann", 2), ("bob", 2)]
    finally:
        for client in clients:
            await client.close()
        await a.stop()
        await b.stop()
