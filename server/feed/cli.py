"""`ttt watch --mqtt URL [--room ID]`: print the live event feed; a small consumer of the
topic tree and an example of using it."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any, TextIO

from protocol.pacing import Backoff
from protocol.topics import PREFIX, FeedError, check_key, decode, parse_mqtt_url


class BrokerUnreachable(FeedError):
    """``ttt watch`` could not reach the broker at start."""

    code = "mqtt_unreachable"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "watch",
        help="print the live MQTT event feed of one or more servers",
        description="Subscribe to the ttt/v1 topic tree and print each message: retained state "
        "(nodes, lobby, results, standings, ratings) first, then live events.",
    )
    p.add_argument("--mqtt", required=True, metavar="URL", help="the broker, mqtt://HOST[:PORT]")
    p.add_argument("--room", metavar="ID", help="only this room: its lobby entry and its events")
    p.add_argument("--json", action="store_true", help="one JSON object a line: topic, retained, payload")
    p.add_argument("--count", type=int, metavar="N", help="exit after N messages")
    p.set_defaults(handler=_watch)


def filters(room: str | None, prefix: str = PREFIX) -> list[str]:
    """The topic filters ``ttt watch`` subscribes to."""
    if room is None:
        return [f"{prefix}/#"]
    check_key(room)
    return [f"{prefix}/lobby/rooms/{room}", f"{prefix}/rooms/{room}/events"]


def render(topic: str, payload: bytes, retained: bool, as_json: bool, prefix: str = PREFIX) -> str:
    """One output line for one message."""
    short = topic[len(prefix) + 1 :] if topic.startswith(prefix + "/") else topic
    try:
        body: Any = decode(payload)
    except ValueError:
        body = payload.decode(errors="replace")
    if as_json:
        return json.dumps({"topic": topic, "retained": retained, "payload": body}, ensure_ascii=False)
    text = "(cleared)" if body is None else json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    flag = " (retained)" if retained else ""
    return f"{time.strftime('%H:%M:%S')} {short}{flag} {text}"


def _watch(args: argparse.Namespace) -> int:
    address = parse_mqtt_url(args.mqtt)
    topics = filters(args.room)
    if args.count is not None and args.count < 1:
        raise FeedError("--count must be at least 1")
    return asyncio.run(watch(str(address), topics, args.count, args.json, sys.stdout))


async def watch(url: str, topics: list[str], count: int | None, as_json: bool, out: TextIO) -> int:
    """Print messages until ``count`` were printed (or forever); reconnect if the broker
    goes away mid-stream.

    Raises:
        BrokerUnreachable: the first connection fails.
    """
    import aiomqtt

    address = parse_mqtt_url(url)
    printed = 0
    backoff = Backoff(0.25, 10.0)
    first = True
    while True:
        try:
            async with aiomqtt.Client(
                address.host, address.port, username=address.username, password=address.password
            ) as client:
                if not first:
                    print("ttt watch: reconnected", file=sys.stderr, flush=True)
                first = False
                backoff.reset()
                for topic in topics:
                    await client.subscribe(topic, qos=1)
                async for message in client.messages:
                    payload = message.payload if isinstance(message.payload, bytes) else b""
                    print(render(str(message.topic), payload, message.retain, as_json), file=out, flush=True)
                    printed += 1
                    if count is not None and printed >= count:
                        return 0
        except aiomqtt.MqttError as exc:
            if first:
                raise BrokerUnreachable(f"cannot reach the MQTT broker at {address}: {exc}") from None
            delay = backoff.next()
            print(
                f"ttt watch: lost the broker ({exc}); retrying in {delay:.1f} s", file=sys.stderr, flush=True
            )
            await asyncio.sleep(delay)
