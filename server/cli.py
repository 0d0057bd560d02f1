"""`ttt serve` and `ttt protocol-schema`. Heavy imports happen inside the handlers."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("serve", help="run the game server (WebSocket, plus /healthz and /metrics)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument("--db", default="./ttt-arena.db", help="SQLite database file (default ./ttt-arena.db)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--uvloop", action="store_true", help="run on uvloop (pip install 'ttt-arena[fast]')")
    p.add_argument("--grace", type=float, default=30.0, help="seconds a dropped player has to come back")
    p.add_argument("--first-move", type=float, default=30.0, help="seconds before a game with no move aborts")
    p.add_argument(
        "--answer-timeout",
        type=float,
        default=30.0,
        help="seconds the players of an arranged game have to sit",
    )
    p.add_argument("--max-frame", type=int, default=4096, help="largest frame accepted, in bytes")
    p.add_argument("--rate", type=float, default=20.0, help="messages per second per connection")
    p.add_argument("--burst", type=int, default=40, help="messages allowed in a burst")
    p.add_argument("--max-conns-per-ip", type=int, default=64)
    p.add_argument("--sync", default="FULL", choices=["FULL", "NORMAL"], help="SQLite synchronous mode")
    p.add_argument(
        "--mqtt", metavar="URL", help="publish the event feed to this MQTT broker (mqtt://host:port)"
    )
    p.add_argument("--node-id", default=None, help="this node's id on the feed (default: local)")
    p.add_argument("--public-url", default="", help="the ws:// URL clients use to reach this node")
    p.add_argument(
        "--house-bots", metavar="SPEC", help="start bots beside the server, e.g. rule,minimax,table (ttt bot)"
    )
    p.set_defaults(handler=_serve)
    p = subparsers.add_parser("protocol-schema", help="print the JSON Schema of the wire protocol")
    p.set_defaults(handler=_schema)


def _schema(args: argparse.Namespace) -> int:
    from protocol.messages import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def _serve(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from server.config import ServerConfig

    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("websockets").setLevel(max(logging.WARNING, logging.getLogger().level))
    config = ServerConfig(
        host=args.host,
        port=args.port,
        db=args.db,
        grace=args.grace,
        first_move=args.first_move,
        answer_timeout=args.answer_timeout,
        max_frame=args.max_frame,
        rate=args.rate,
        burst=args.burst,
        max_conns_per_ip=args.max_conns_per_ip,
        sync=args.sync,
        node_id=args.node_id or "local",
        public_url=args.public_url,
    )
    if args.uvloop:
        try:
            import uvloop
        except ImportError:
            print("ttt serve: --uvloop needs uvloop (pip install 'ttt-arena[fast]')", file=sys.stderr)
            return 2
        uvloop.run(run_server(config, args.mqtt, args.house_bots))
    else:
        asyncio.run(run_server(config, args.mqtt, args.house_bots))
    return 0


async def run_server(config: Any, mqtt: str | None = None, house_bots: str | None = None) -> None:
    """Run until SIGTERM or SIGINT, then shut down cleanly (clients get close code 1001)."""
    import asyncio
    import signal

    from server.app import ArenaServer

    server = ArenaServer(config)
    if mqtt:
        try:
            from server.feed import start_feed
        except ImportError as exc:
            print(f"ttt serve: --mqtt needs the feed module (server.feed): {exc}", file=sys.stderr)
            raise SystemExit(2) from exc
        # Before start: the feed subscribes to the bus and so sees the node's "online" event.
        server.feed = await start_feed(server, server.bus, mqtt, config.node_id)
    await server.start()
    import gc

    # Objects alive after start-up (modules, recovered rooms) need no more scanning; fewer
    # full collections keep the pauses that make latency tails short.
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)
    print(f"ttt-arena serving on {server.url} (db {config.db})", file=sys.stderr, flush=True)
    house = None
    if house_bots:
        from bots.tournament.house import start_house_bots

        try:
            house = await start_house_bots(server.url, house_bots)
        except BaseException:
            await server.stop()
            raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    if house is not None:
        await house.stop()  # the bots resign their games and leave first
    await server.stop()
