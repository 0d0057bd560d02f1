"""MQTT feed throughput: room events per second from `EventBus.publish` to a subscriber,
through the bridge (outbox, QoS 1, topic mapping, JSON), against a baseline measured in
the same run: a raw aiomqtt client publishing the same pre-encoded payloads at QoS 1 in
the same window of 100 messages in flight.

Run: .venv/bin/python bench/feed.py [--events N]

Starts its own Mosquitto on a free port (the ``mosquitto`` binary must be installed).
Each figure is end to end: the clock stops when the subscriber has received every message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import aiomqtt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from mosquitto import Broker, find_mosquitto

from server.bus import EventBus, FeedEvent
from server.feed.bridge import Feed

WINDOW = 100


#: Seconds a run may take before the bench gives up (it never hangs).
TIMEOUT = 300.0


def moved(seq: int) -> dict[str, object]:
    return {
        "type": "moved",
        "room": "r1",
        "seq": seq,
        "game": "g1",
        "ply": seq,
        "cell": seq % 9,
        "mark": "x" if seq % 2 else "o",
        "vanished": None,
        "next_to_vanish": {"x": None, "o": None},
        "clocks": {"x_ms": 60000, "o_ms": 60000, "running": "o"},
    }


async def count_until(broker: Broker, topic: str, n: int, ready: asyncio.Event, done: asyncio.Event) -> None:
    async with aiomqtt.Client(broker.host, broker.port, max_queued_incoming_messages=0) as client:
        await client.subscribe(topic, qos=1)
        ready.set()
        got = 0
        async for _ in client.messages:
            got += 1
            if got >= n:
                done.set()
                return


async def through_bridge(broker: Broker, n: int) -> float:
    bus = EventBus()
    feed = Feed(bus, broker.url, "bench", max_events=n + 1, batch=WINDOW)
    feed.start()
    while not feed.connected:
        await asyncio.sleep(0.01)
    ready, done = asyncio.Event(), asyncio.Event()
    counter = asyncio.create_task(count_until(broker, "ttt/v1/rooms/r1/events", n, ready, done))
    await ready.wait()
    start = time.perf_counter()
    for seq in range(n):
        bus.publish(FeedEvent("room_event", "r1", moved(seq)))
        if seq % 1000 == 999:
            await asyncio.sleep(0)  # let the bridge drain, as a game loop would
    await asyncio.wait_for(done.wait(), TIMEOUT)
    elapsed = time.perf_counter() - start
    await counter
    await feed.close()
    return elapsed


async def raw_baseline(broker: Broker, n: int) -> float:
    payloads = [json.dumps(moved(seq), separators=(",", ":")).encode() for seq in range(n)]
    ready, done = asyncio.Event(), asyncio.Event()
    counter = asyncio.create_task(count_until(broker, "bench/raw", n, ready, done))
    await ready.wait()
    async with aiomqtt.Client(broker.host, broker.port, max_inflight_messages=WINDOW) as client:
        client.pending_calls_threshold = WINDOW + 10
        start = time.perf_counter()
        for i in range(0, n, WINDOW):
            await asyncio.gather(*(client.publish("bench/raw", p, 1) for p in payloads[i : i + WINDOW]))
        await asyncio.wait_for(done.wait(), TIMEOUT)
        elapsed = time.perf_counter() - start
    await counter
    return elapsed


async def offer_cost(n: int) -> tuple[float, float]:
    """Seconds for ``n`` events handed to a feed whose broker is down (what the game loop pays:
    topic, JSON, queue), and for the baseline: ``json.dumps`` of the same events alone."""
    feed = Feed(EventBus(), "mqtt://127.0.0.1:1", "bench", max_events=n + 1)
    events = [FeedEvent("room_event", "r1", moved(seq)) for seq in range(n)]
    start = time.perf_counter()
    for event in events:
        feed.offer(event)
    offered = time.perf_counter() - start
    start = time.perf_counter()
    for event in events:
        json.dumps(event.payload, separators=(",", ":"))
    dumped = time.perf_counter() - start
    await feed.close()
    return offered, dumped


async def main(n: int) -> None:
    binary = find_mosquitto()
    if binary is None:
        sys.exit("bench/feed.py needs mosquitto (Debian package 'mosquitto')")
    with tempfile.TemporaryDirectory() as tmp:
        # Mosquitto queues at most 1,000 QoS 1 messages per client by default and drops the
        # rest silently; a bench subscriber that falls behind must not lose any.
        broker = Broker(binary, Path(tmp), extra="max_queued_messages 0\n")
        broker.start()
        try:
            await raw_baseline(broker, min(n, 2000))  # warm up
            base = await raw_baseline(broker, n)
            bridged = await through_bridge(broker, n)
        finally:
            broker.kill()
    print(f"baseline raw aiomqtt QoS1 publish: {n / base:,.0f} msgs/s ({n} msgs, {base:.2f} s)")
    print(f"bridge bus->MQTT room events:     {n / bridged:,.0f} events/s ({n} events, {bridged:.2f} s)")
    print(f"ratio bridge/baseline:            {base / bridged:.2f}")
    offered, dumped = await offer_cost(n)
    print(f"baseline json.dumps of an event:  {dumped / n * 1e6:.2f} us/event")
    print(f"game-loop cost, broker down:      {offered / n * 1e6:.2f} us/event (Feed.offer)")
    print(f"ratio offer/json.dumps:           {offered / dumped:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    asyncio.run(main(parser.parse_args().events))
