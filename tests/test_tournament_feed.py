"""A tournament's standings on the MQTT feed, with a real Mosquitto: live after each
game, retained for late subscribers, and not lost when the broker starts late."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mosquitto import Broker, Subscriber, running_broker

from bots.tournament.feed import StandingsFeed

TOPIC = "ttt/v1/tournaments/{}/standings"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path) as b:
        yield b


async def tournament(*args: str) -> int:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "protocol.cli", "tournament", "--in-process", "--quiet", *args,
        stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    return await proc.wait()


async def test_standings_go_out_after_each_game_and_stay_retained(broker: Broker) -> None:
    async with Subscriber(broker, TOPIC.format("+")) as live:
        code = await tournament(
            "--bots", "table,random", "--variant", "tactic-toe", "--games-per-pair", "6",
            "--seed", "5", "--mqtt", broker.url, "--tournament-id", "t-live",
        )  # fmt: skip
        assert code == 0
        await live.wait_for(lambda m: bool(m) and m[-1].payload["status"] == "finished")
    got = live.on(TOPIC.format("t-live"))
    assert all(m.qos == 1 for m in got)
    games = [m.payload["games"] for m in got]
    assert games == sorted(games) and games[-1] == 6, "newest standings last, the final one complete"
    final = got[-1].payload
    assert final["tournament"] == "t-live" and final["planned"] == 6
    rows = {row["name"]: row for row in final["standings"]}
    assert sum(row["points"] for row in rows.values()) == 6, "points add up to the games played"
    assert rows["table"]["points"] >= 5.5, "table beats random on tactic-toe"

    async with Subscriber(broker, TOPIC.format("+")) as late:
        (retained,) = await late.settle()
    assert retained.retained and retained.payload == final


def test_standings_wait_for_a_broker_that_comes_up_late(broker: Broker) -> None:
    broker.stop()
    feed = StandingsFeed(broker.url, "t-late", retry=0.05)
    feed.offer({"games": 1, "status": "running"})
    feed.offer({"games": 2, "status": "running"})  # replaces the first: only the newest matters
    broker.start()
    assert feed.close(timeout=15.0), "sent once the broker was back"
    assert feed.published == 1

    async def read() -> list[object]:
        async with Subscriber(broker, TOPIC.format("t-late")) as late:
            return [m.payload for m in await late.settle()]

    assert asyncio.run(read()) == [{"games": 2, "status": "running"}]


def test_close_gives_up_when_the_broker_never_comes(broker: Broker) -> None:
    broker.stop()
    feed = StandingsFeed(broker.url, "t-none", retry=0.05)
    feed.offer({"games": 1})
    assert not feed.close(timeout=0.5)
    assert feed.published == 0
