"""The bridge over the bus with a real Mosquitto and real aiomqtt subscribers: topics,
payloads, QoS, retain, the last will, the broker down at start, killed and restarted."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from mosquitto import Broker, Subscriber, running_broker

from server.bus import EventBus, FeedEvent
from server.feed.bridge import Backoff, Feed

NODE = {"node": "n1", "url": "ws://127.0.0.1:8765", "status": "online"}


def summary(room: str, status: str) -> dict[str, object]:
    return {"type": "room_summary", "room": room, "variant": "classic", "status": status, "node": "n1"}


def room_event(room: str, seq: int) -> FeedEvent:
    return FeedEvent("room_event", room, {"type": "moved", "room": room, "seq": seq, "cell": seq % 9})


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path) as b:
        yield b


@pytest.fixture
def idle_broker(tmp_path: Path) -> Iterator[Broker]:
    """A broker that is not running yet."""
    with running_broker(tmp_path, started=False) as b:
        yield b


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


def make_feed(bus: EventBus, broker: Broker, **kw: object) -> Feed:
    backoff = kw.pop("backoff", Backoff(0.05, 0.3))
    feed = Feed(bus, broker.url, "n1", backoff=backoff, **kw)  # type: ignore[arg-type]
    feed.start()
    return feed


@pytest.fixture
async def feed(bus: EventBus, broker: Broker) -> AsyncIterator[Feed]:
    f = make_feed(bus, broker)
    await until(lambda: f.connected)
    yield f
    await f.close()


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def seqs(sub: Subscriber, room: str) -> list[int]:
    return [m.payload["seq"] for m in sub.on(f"ttt/v1/rooms/{room}/events")]


async def test_whole_topic_tree_live_and_retained(bus: EventBus, broker: Broker, feed: Feed) -> None:
    async with Subscriber(broker, "ttt/v1/#") as live:
        bus.publish(FeedEvent("node", "n1", NODE))
        bus.publish(FeedEvent("room_summary", "r1", summary("r1", "waiting")))
        for seq in range(1, 4):
            bus.publish(room_event("r1", seq))
        bus.publish(FeedEvent("room_summary", "r1", summary("r1", "over")))
        bus.publish(FeedEvent("game_result", "g1", {"type": "game_result", "game": "g1", "result": "1-0"}))
        bus.publish(FeedEvent("standings", "t1", {"type": "standings", "rows": [["a", 3]]}))
        bus.publish(FeedEvent("rating", "p1/classic", {"type": "rating", "player": "p1", "rating": 1516.0}))
        await live.wait_for(lambda m: len(m) >= 8 and m[-1].topic.endswith("rating/classic"))
        assert seqs(live, "r1") == [1, 2, 3]
        assert all(m.qos == 1 for m in live.messages), "every topic is published at QoS 1"
        # Retained topics carry state: a burst of updates may coalesce, the latest wins.
        assert live.on("ttt/v1/lobby/rooms/r1")[-1].payload["status"] == "over"
        assert live.on("ttt/v1/players/p1/rating/classic")[0].payload["rating"] == 1516.0

    async with Subscriber(broker, "ttt/v1/#") as late:
        got = {m.topic: m for m in await late.settle()}
    assert set(got) == {
        "ttt/v1/nodes/n1",
        "ttt/v1/lobby/rooms/r1",
        "ttt/v1/games/g1/result",
        "ttt/v1/tournaments/t1/standings",
        "ttt/v1/players/p1/rating/classic",
    }, "a late subscriber sees exactly the retained state, no room events"
    assert all(m.retained for m in got.values())
    assert got["ttt/v1/nodes/n1"].payload == NODE
    assert got["ttt/v1/lobby/rooms/r1"].payload["status"] == "over"
    assert got["ttt/v1/games/g1/result"].payload["result"] == "1-0"
    assert feed.stats()["feed_published"] == len(live.messages)


async def test_closed_room_is_cleared_from_the_retained_lobby(
    bus: EventBus, broker: Broker, feed: Feed
) -> None:
    bus.publish(FeedEvent("room_summary", "r1", summary("r1", "waiting")))
    bus.publish(FeedEvent("room_summary", "r2", summary("r2", "waiting")))
    async with Subscriber(broker, "ttt/v1/lobby/rooms/+") as live:
        await live.wait_for(lambda m: len(m) == 2)
        bus.publish(FeedEvent("room_summary", "r1", None))
        await live.wait_for(lambda m: len(m) == 3)
        assert live.messages[-1].topic == "ttt/v1/lobby/rooms/r1"
        assert live.messages[-1].raw == b""
    async with Subscriber(broker, "ttt/v1/lobby/rooms/+") as late:
        assert [m.topic for m in await late.settle()] == ["ttt/v1/lobby/rooms/r2"]
    await until(lambda: feed.stats()["feed_retained"] == 1)  # the confirmed clear is forgotten


async def test_clean_close_marks_the_node_offline(bus: EventBus, broker: Broker) -> None:
    async with Subscriber(broker, "ttt/v1/#") as live:
        # Subscribe first: a room event is not retained, so one published before
        # the subscription exists is (rightly) never seen.
        feed = make_feed(bus, broker)
        bus.publish(FeedEvent("node", "n1", NODE))
        bus.publish(room_event("r1", 1))
        await live.wait_for(lambda m: len(m) >= 2)
        await feed.close()
        await live.wait_for(lambda m: len(live.on("ttt/v1/nodes/n1")) == 2)
    async with Subscriber(broker, "ttt/v1/nodes/+") as late:
        (msg,) = await late.settle()
    assert msg.payload == {**NODE, "status": "offline"}
    assert msg.retained


async def test_last_will_marks_a_crashed_node_offline(broker: Broker, tmp_path: Path) -> None:
    script = tmp_path / "node.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio
            from server.bus import EventBus, FeedEvent
            from server.feed.bridge import Feed

            async def main():
                bus = EventBus()
                feed = Feed(bus, {broker.url!r}, "n1")
                feed.start()
                bus.publish(FeedEvent("node", "n1", {NODE!r}))
                while not (feed.connected and feed.stats()["feed_published"] == 1):
                    await asyncio.sleep(0.01)
                print("ready", flush=True)
                await asyncio.sleep(60)

            asyncio.run(main())
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        async with Subscriber(broker, "ttt/v1/nodes/+") as live:
            await live.wait_for(lambda m: len(m) == 1)
            assert live.messages[0].payload == NODE
            proc.kill()  # no DISCONNECT: the broker sends the will
            await live.wait_for(lambda m: len(m) == 2)
            assert live.messages[1].payload == {**NODE, "status": "offline"}, "the will keeps the URL"
    finally:
        proc.kill()
        proc.wait()
    async with Subscriber(broker, "ttt/v1/nodes/+") as late:
        (msg,) = await late.settle()
    assert msg.retained and msg.payload["status"] == "offline"


async def test_broker_down_at_start(
    bus: EventBus, idle_broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ttt.feed")
    feed = make_feed(bus, idle_broker, backoff=Backoff(600, 600))  # retries only on retry_now()
    try:
        bus.publish(FeedEvent("node", "n1", NODE))
        bus.publish(FeedEvent("room_summary", "r1", summary("r1", "waiting")))
        for seq in range(1, 6):
            bus.publish(room_event("r1", seq))
        for failures in range(1, 4):  # several failed attempts...
            await until(lambda n=failures: feed.failures >= n)
            feed.retry_now()
        unreachable = [r for r in caplog.records if "unreachable" in r.getMessage()]
        assert len(unreachable) == 1, "...logged once"
        stats = feed.stats()
        assert (stats["feed_connected"], stats["feed_queued"], stats["feed_outages"]) == (0, 5, 1)

        # The feed waits out its long backoff while the broker starts and this subscriber comes.
        await until(lambda: feed.failures == feed.attempts == 4)
        idle_broker.start()
        async with Subscriber(idle_broker, "ttt/v1/#") as live:
            feed.retry_now()
            await live.wait_for(lambda m: len(seqs(live, "r1")) == 5)
            assert seqs(live, "r1") == [1, 2, 3, 4, 5]
            assert live.on("ttt/v1/nodes/n1")[0].payload == NODE
        assert feed.stats()["feed_queued"] == 0
        assert any("is back after" in r.getMessage() for r in caplog.records)
    finally:
        await feed.close()


async def test_broker_killed_and_restarted_mid_stream(bus: EventBus, broker: Broker) -> None:
    feed = make_feed(bus, broker, max_events=5, backoff=Backoff(600, 600))
    try:
        bus.publish(FeedEvent("node", "n1", NODE))
        bus.publish(FeedEvent("room_summary", "r1", summary("r1", "waiting")))
        async with Subscriber(broker, "ttt/v1/#") as live:
            for seq in range(1, 4):
                bus.publish(room_event("r1", seq))
            await live.wait_for(lambda m: seqs(live, "r1") == [1, 2, 3])
        await until(lambda: feed.idle)  # every PUBACK is in: nothing to send again

        broker.kill()
        await until(lambda: not feed.connected)
        for seq in range(4, 12):  # 8 events while down; room for 5
            bus.publish(room_event("r1", seq))
        bus.publish(FeedEvent("room_summary", "r1", summary("r1", "playing")))
        bus.publish(FeedEvent("rating", "p1/classic", {"type": "rating", "player": "p1", "rating": 1490.0}))
        await asyncio.sleep(0.05)
        stats = feed.stats()
        assert (stats["feed_queued"], stats["feed_overflow"], stats["feed_outages"]) == (5, 3, 1)

        await until(lambda: feed.failures == feed.attempts)  # lost, and waiting out its backoff
        broker.start()  # empty: no persistence
        async with Subscriber(broker, "ttt/v1/#") as live:
            feed.retry_now()
            await live.wait_for(lambda m: len(seqs(live, "r1")) == 5)
            assert seqs(live, "r1") == [7, 8, 9, 10, 11], "the oldest 3 overflowed"
            # The retained state was republished to the empty broker, newest values.
            assert live.on("ttt/v1/nodes/n1")[0].payload == NODE
            assert live.on("ttt/v1/lobby/rooms/r1")[-1].payload["status"] == "playing"
            assert live.on("ttt/v1/players/p1/rating/classic")[0].payload["rating"] == 1490.0
            bus.publish(room_event("r1", 12))
            await live.wait_for(lambda m: seqs(live, "r1")[-1:] == [12])
        stats = feed.stats()
        assert (stats["feed_connected"], stats["feed_reconnects"], stats["feed_queued"]) == (1, 1, 0)
    finally:
        await feed.close()


async def test_room_closed_while_the_broker_was_away_is_cleared_after(bus: EventBus, tmp_path: Path) -> None:
    with running_broker(tmp_path, persistent=True) as broker:
        feed = make_feed(bus, broker)
        try:
            bus.publish(FeedEvent("room_summary", "r1", summary("r1", "waiting")))
            bus.publish(FeedEvent("room_summary", "r2", summary("r2", "waiting")))
            await until(lambda: feed.stats()["feed_published"] == 2)
            broker.stop()  # saves its retained messages
            await until(lambda: not feed.connected)
            bus.publish(FeedEvent("room_summary", "r1", None))
            broker.start()
            await until(lambda: feed.connected and feed.stats()["feed_retained"] == 1)
            async with Subscriber(broker, "ttt/v1/lobby/rooms/+") as late:
                assert [m.topic for m in await late.settle()] == ["ttt/v1/lobby/rooms/r2"]
        finally:
            await feed.close()


async def test_bad_keys_are_skipped_and_counted(bus: EventBus, broker: Broker, feed: Feed) -> None:
    async with Subscriber(broker, "ttt/v1/#") as live:
        bus.publish(FeedEvent("room_event", "a/b", {"seq": 1}))
        bus.publish(FeedEvent("room_event", "", {"seq": 1}))
        bus.publish(room_event("ok", 1))
        await live.wait_for(lambda m: len(m) == 1)
        assert live.messages[0].topic == "ttt/v1/rooms/ok/events"
    assert feed.stats()["feed_invalid"] == 2


async def test_first_connection_waits_for_the_node_event_so_the_will_is_complete(
    bus: EventBus, broker: Broker
) -> None:
    feed = Feed(bus, broker.url, "n1", wait_for_node=30.0)
    feed.start()
    try:
        await asyncio.sleep(0.3)
        assert feed.attempts == 0, "no connection before the node's presence is known"
        bus.publish(FeedEvent("node", "n1", NODE))
        await until(lambda: feed.connected)
    finally:
        await feed.close()
