"""`ttt watch`: the real command as a child process, against a real broker."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mosquitto import Broker, free_port, running_broker

from server.bus import EventBus, FeedEvent
from server.feed.bridge import Backoff, Feed
from server.feed.cli import filters, render

TTT = [sys.executable, "-m", "protocol.cli"]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path) as b:
        yield b


@pytest.fixture
async def bus(broker: Broker) -> AsyncIterator[EventBus]:
    bus = EventBus()
    feed = Feed(bus, broker.url, "n1", backoff=Backoff(0.05, 0.3))
    feed.start()
    bus.publish(FeedEvent("node", "n1", {"node": "n1", "status": "online"}))
    bus.publish(FeedEvent("room_summary", "r1", {"room": "r1", "status": "waiting"}))
    bus.publish(FeedEvent("room_summary", "r2", {"room": "r2", "status": "waiting"}))
    while feed.stats()["feed_published"] < 3:
        await asyncio.sleep(0.01)
    yield bus
    await feed.close()


async def run_watch(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *TTT, "watch", *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


async def read_lines(proc: asyncio.subprocess.Process, n: int) -> list[str]:
    assert proc.stdout is not None
    return [(await asyncio.wait_for(proc.stdout.readline(), 10)).decode() for _ in range(n)]


async def test_watch_prints_retained_state_then_live_events(bus: EventBus, broker: Broker) -> None:
    proc = await run_watch("--mqtt", broker.url, "--json", "--count", "4")
    first = [json.loads(line) for line in await read_lines(proc, 3)]
    assert {m["topic"] for m in first} == {
        "ttt/v1/nodes/n1",
        "ttt/v1/lobby/rooms/r1",
        "ttt/v1/lobby/rooms/r2",
    }
    assert all(m["retained"] for m in first)
    bus.publish(FeedEvent("room_event", "r1", {"seq": 1, "type": "moved"}))
    (live,) = [json.loads(line) for line in await read_lines(proc, 1)]
    assert live == {
        "topic": "ttt/v1/rooms/r1/events",
        "retained": False,
        "payload": {"seq": 1, "type": "moved"},
    }
    assert await asyncio.wait_for(proc.wait(), 10) == 0, "--count 4 exits after four messages"


async def test_watch_one_room(bus: EventBus, broker: Broker) -> None:
    proc = await run_watch("--mqtt", broker.url, "--room", "r2", "--count", "3")
    (lobby,) = await read_lines(proc, 1)
    assert "lobby/rooms/r2 (retained)" in lobby and '"status":"waiting"' in lobby
    bus.publish(FeedEvent("room_event", "r1", {"seq": 1}))  # another room: not shown
    bus.publish(FeedEvent("room_event", "r2", {"seq": 7}))
    bus.publish(FeedEvent("room_summary", "r2", None))
    event, cleared = await read_lines(proc, 2)
    assert "rooms/r2/events" in event and '{"seq":7}' in event
    assert "lobby/rooms/r2 (cleared)" in cleared
    assert await asyncio.wait_for(proc.wait(), 10) == 0


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--mqtt", "http://x"], "bad_mqtt_url"),
        (["--mqtt", "mqtt://127.0.0.1:1", "--room", "a/b"], "bad_topic_key"),
        (["--mqtt", "mqtt://127.0.0.1:1", "--count", "0"], "feed_error"),
    ],
)
def test_watch_refuses_bad_input(args: list[str], code: str) -> None:
    done = subprocess.run([*TTT, "watch", *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert f"[{code}]" in done.stderr


def test_watch_without_a_broker_says_so() -> None:
    url = f"mqtt://127.0.0.1:{free_port()}"
    done = subprocess.run([*TTT, "watch", "--mqtt", url], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "[mqtt_unreachable]" in done.stderr and url in done.stderr


def test_filters_and_render() -> None:
    assert filters(None) == ["ttt/v1/#"]
    assert filters("r9") == ["ttt/v1/lobby/rooms/r9", "ttt/v1/rooms/r9/events"]
    line = render("ttt/v1/players/p/rating", b'{"rating":1500}', True, as_json=False)
    assert line.endswith(' players/p/rating (retained) {"rating":1500}')
    not_json = json.loads(render("x/y", b"\xff", False, as_json=True))
    assert not_json == {"topic": "x/y", "retained": False, "payload": "\ufffd"}
