"""The feed of a real server (in process, real WebSocket clients, real Mosquitto): the topics
and payloads of a whole game, the retained lobby seen late, the broker killed mid-game."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mosquitto import Broker, Subscriber, running_broker

from protocol import messages as m
from protocol.client import ArenaClient, connect
from server.app import ArenaServer
from server.config import ServerConfig
from server.feed import start_feed
from server.feed.bridge import Backoff, Feed

X_WINS = [4, 1, 0, 2, 8]  # X takes the diagonal 0-4-8


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path) as b:
        yield b


async def start_node(tmp_path: Path, broker: Broker, node: str, db: str | None = None) -> ArenaServer:
    config = ServerConfig(host="127.0.0.1", port=0, db=db or str(tmp_path / f"{node}.db"), node_id=node)
    server = ArenaServer(config)
    server.feed = await start_feed(server, server.bus, broker.url, node)
    server.feed.backoff = Backoff(0.05, 0.5)
    await server.start()
    return server


@pytest.fixture
async def node_a(tmp_path: Path, broker: Broker) -> AsyncIterator[ArenaServer]:
    server = await start_node(tmp_path, broker, "a")
    yield server
    await server.stop()


def feed_of(server: ArenaServer) -> Feed:
    feed = server.feed
    assert isinstance(feed, Feed)
    return feed


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def new_game(url: str) -> tuple[ArenaClient, ArenaClient, str]:
    ann = await connect(url, "ann")
    bob = await connect(url, "bob")
    joined = await ann.request(m.CreateRoom(variant="classic", seat="x"))
    assert isinstance(joined, m.Joined)
    await bob.request(m.Join(room=joined.room))
    return ann, bob, joined.room


async def play(ann: ArenaClient, bob: ArenaClient, room: str, cells: list[int], start: int = 0) -> None:
    for ply, cell in enumerate(cells, start):
        reply = await (ann if ply % 2 == 0 else bob).request(m.Move(room=room, cell=cell))
        assert isinstance(reply, m.Ok)


def events(sub: Subscriber, room: str) -> list[dict[str, Any]]:
    return [msg.payload for msg in sub.on(f"ttt/v1/rooms/{room}/events")]


async def test_whole_game_topics_and_payloads(node_a: ArenaServer, broker: Broker) -> None:
    async with Subscriber(broker, "ttt/v1/#") as live:
        ann, bob, room = await new_game(node_a.url)
        await play(ann, bob, room, X_WINS)
        await live.wait_for(lambda msgs: len([x for x in msgs if "/rating" in x.topic]) == 2)
        await live.wait_for(lambda msgs: (events(live, room) or [{}])[-1].get("type") == "game_over")

        feed_events = events(live, room)
        assert [e["seq"] for e in feed_events] == list(range(1, len(feed_events) + 1))
        types = [e["type"] for e in feed_events]
        assert types.count("moved") == 5 and types.count("game_started") == 1 and types[-1] == "game_over"
        # The same models as on the WebSocket: bob's socket got exactly these events.
        seen_by_bob = [e for e in bob.drain() if getattr(e, "room", None) == room and hasattr(e, "seq")]
        assert [m.parse_server(json.dumps(e)) for e in feed_events][-len(seen_by_bob) :] == seen_by_bob

        (result,) = [x for x in live.messages if x.topic.startswith("ttt/v1/games/")]
        record = m.GameRecord.model_validate_json(result.raw)
        assert (record.moves, record.outcome.result, record.x, record.o) == (X_WINS, "1-0", "ann", "bob")
        assert result.topic == f"ttt/v1/games/{record.game}/result"
        assert 0 < record.started <= record.ended, "real start and end times (started was 0.0)"
        ratings = {
            x.payload["name"]: m.RatingChange.model_validate_json(x.raw)
            for x in live.messages
            if "/rating" in x.topic
        }
        assert ratings["ann"].rating > 1500 > ratings["bob"].rating
        node = m.NodeStatus.model_validate_json(live.on("ttt/v1/nodes/a")[0].raw)
        assert (node.status, node.url) == ("online", node_a.url)
        summary = m.RoomSummary.model_validate_json(live.on(f"ttt/v1/lobby/rooms/{room}")[-1].raw)
        assert summary.id == room and summary.node == "a"

    async with Subscriber(broker, "ttt/v1/#") as late:
        retained = {x.topic for x in await late.settle()}
    assert f"ttt/v1/lobby/rooms/{room}" in retained, "the late subscriber sees the lobby"
    assert {
        "ttt/v1/nodes/a",
        result.topic,
        *(f"ttt/v1/players/{r.player}/rating/classic" for r in ratings.values()),
    } <= retained
    assert not any(t.endswith("/events") for t in retained)
    await ann.close()
    await bob.close()


async def test_ratings_per_variant_and_start_times_across_a_restart(tmp_path: Path, broker: Broker) -> None:
    """Issue 17, bug 16: a tactic-toe rating must not replace the classic one on the feed
    (one retained topic per variant), and a game's result says when it really started,
    also for a game started before the server restarted (``started`` was 0.0)."""
    db = str(tmp_path / "a.db")
    server = await start_node(tmp_path, broker, "a", db)
    ann, bob, room = await new_game(server.url)
    await play(ann, bob, room, X_WINS)  # classic: ann wins
    joined = await bob.request(m.CreateRoom(variant="tactic-toe", seat="x"))
    assert isinstance(joined, m.Joined)
    before_start = time.time()
    await ann.request(m.Join(room=joined.room))
    await play(bob, ann, joined.room, [0, 3])
    await server.stop()
    server = await start_node(tmp_path, broker, "a", db)
    try:
        async with Subscriber(broker, "ttt/v1/#") as live:
            for client in (ann, bob):
                await client.reconnect(server.url)
            after_restart = time.time()
            await play(bob, ann, joined.room, [1, 4, 2], start=2)  # tactic-toe: bob wins

            def results() -> list[m.GameRecord]:
                games = [x for x in live.messages if x.topic.startswith("ttt/v1/games/")]
                records = [m.GameRecord.model_validate_json(x.raw) for x in games]
                return [r for r in records if r.room == joined.room]

            await live.wait_for(lambda _: bool(results()))
            (record,) = results()
            assert (record.variant, record.outcome.result) == ("tactic-toe", "1-0")
            assert before_start <= record.started <= after_restart <= record.ended
            await live.wait_for(lambda msgs: len([x for x in msgs if "rating/tactic" in x.topic]) == 2)
        async with Subscriber(broker, "ttt/v1/players/#") as late:
            retained = {x.topic: m.RatingChange.model_validate_json(x.raw) for x in await late.settle()}
        for client, won_classic in ((ann, True), (bob, False)):
            classic = retained[f"ttt/v1/players/{client.player_id}/rating/classic"]
            tactic = retained[f"ttt/v1/players/{client.player_id}/rating/tactic-toe"]
            assert (classic.variant, tactic.variant) == ("classic", "tactic-toe")
            assert (classic.rating > 1500) is won_classic and (tactic.rating > 1500) is not won_classic
        assert len(retained) == 4
    finally:
        await ann.close()
        await bob.close()
        await server.stop()


def metrics(server: ArenaServer) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        k: float(v)
        for k, v in (line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    }


async def test_broker_killed_mid_game(node_a: ArenaServer, broker: Broker) -> None:
    feed = feed_of(node_a)
    feed.backoff = Backoff(600, 600)  # after the kill it retries only on retry_now()
    ann, bob, room = await new_game(node_a.url)
    await play(ann, bob, room, X_WINS[:2])
    await until(lambda: feed.idle)
    broker.kill()
    await until(lambda: not feed.connected)
    feed.outbox.max_events = 1  # room for one event while the broker is away
    await play(ann, bob, room, X_WINS[2:4], start=2)  # the game goes on without the broker
    down = await asyncio.to_thread(metrics, node_a)
    assert (down["ttt_feed_connected"], down["ttt_feed_queued"], down["ttt_feed_overflow_total"]) == (0, 1, 1)

    await until(lambda: feed.failures == feed.attempts)  # waiting out its backoff
    broker.start()  # empty: it lost every retained message
    async with Subscriber(broker, "ttt/v1/#") as live:
        feed.retry_now()
        await until(lambda: feed.connected and feed.idle)
        feed.outbox.max_events = 10_000
        await play(ann, bob, room, X_WINS[4:], start=4)
        await live.wait_for(lambda msgs: (events(live, room) or [{}])[-1].get("type") == "game_over")
        seqs = [e["seq"] for e in events(live, room)]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "queued then live events, in order"
        assert [e["cell"] for e in events(live, room) if e["type"] == "moved"] == X_WINS[3:], "one overflowed"
        await live.wait_for(lambda msgs: bool(live.on("ttt/v1/nodes/a")))
        assert live.on("ttt/v1/nodes/a")[0].payload["status"] == "online", "retained state republished"
        assert live.on(f"ttt/v1/lobby/rooms/{room}")
    up = await asyncio.to_thread(metrics, node_a)
    assert (up["ttt_feed_connected"], up["ttt_feed_outages_total"], up["ttt_feed_reconnects_total"]) == (
        1,
        1,
        1,
    )
    await ann.close()
    await bob.close()
