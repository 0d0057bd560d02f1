"""`ttt serve` and `ttt protocol-schema`. Heavy imports happen inside the handlers.

The server never imports the bots: the house bots reach ``ttt serve`` through a
hook a layer above puts on this command's parser (``house_bots_hook``, set by
`bots.cli`): an async callable ``(url, spec, db, state_dir)`` that starts them once
the server listens and returns something to ``await .stop()`` before the server
stops (or None: nothing started). Without the bots installed there is no hook,
and ``--house-bots`` starts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("serve", help="run the game server (WebSocket, plus /healthz and /metrics)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument(
        "--db",
        default="./ttt-arena.db",
        help="the store: a SQLite database file (default ./ttt-arena.db), or a PostgreSQL URL "
        "(postgresql://user:password@host:5432/dbname) that several nodes share",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument(
        "--loop",
        choices=["asyncio", "uvloop"],
        default=None,
        help="event loop (default: uvloop where it is installed, as it is with ttt-arena on Linux and "
        "macOS; else asyncio's own)",
    )
    p.add_argument(
        "--uvloop", dest="loop", action="store_const", const="uvloop", help="same as --loop uvloop"
    )
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
    p.add_argument("--max-conns-per-ip", type=int, default=64, help="open connections per client address")
    p.add_argument(
        "--max-connections",
        type=int,
        default=0,
        help="open TCP connections in all, counted from accept; more are closed at once "
        "(default 0: the open-file limit less headroom)",
    )
    p.add_argument(
        "--origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow WebSocket handshakes whose Origin header is ORIGIN (e.g. https://play.example; "
        "repeat for several); others get 403; a handshake without Origin is always allowed "
        "(default: any origin)",
    )
    p.add_argument(
        "--trust",
        "--director",
        dest="trust",
        action="append",
        default=[],
        metavar="NAME",
        help="a player trusted with a larger allowance: a tournament's director (ttt tournament "
        "--connected) and the bots it runs; 50x the message rate and burst, told in its welcome, "
        "outside its address's budget (repeat for several; --director is the same)",
    )
    p.add_argument("--ip-rate", type=float, default=320.0, help="messages per second one address may send")
    p.add_argument("--ip-burst", type=int, default=640, help="messages one address may send in a burst")
    p.add_argument(
        "--max-flood", type=int, default=100, help="frames over the rate limit in a row before closing (1008)"
    )
    p.add_argument(
        "--write-limit",
        type=int,
        default=64 * 1024,
        help="bytes queued to a client before it counts as stalled",
    )
    p.add_argument(
        "--stall-timeout",
        type=float,
        default=5.0,
        help="seconds a stalled client is kept before it is closed",
    )
    p.add_argument(
        "--signup-burst", type=int, default=60, help="new players one address may create at once (default 60)"
    )
    p.add_argument(
        "--signup-rate", type=float, default=1.0, help="...and per second after that (default 1.0)"
    )
    p.add_argument(
        "--sync",
        default="FULL",
        choices=["FULL", "NORMAL"],
        help="SQLite synchronous mode (PostgreSQL: its own synchronous_commit decides)",
    )
    p.add_argument(
        "--store-stall",
        type=float,
        default=1.0,
        help="seconds a database write may take before the store counts as failing: changes are "
        "refused (store_unavailable) and clocks paused until it returns (default 1.0)",
    )
    p.add_argument(
        "--mqtt", metavar="URL", help="publish the event feed to this MQTT broker (mqtt://host:port)"
    )
    p.add_argument("--node-id", default=None, help="this node's id on the feed (default: local)")
    p.add_argument(
        "--mqtt-heartbeat",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how often the node republishes its presence on the feed (default %(default)s)",
    )
    p.add_argument(
        "--mqtt-presence-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="another node is gone after this long without a heartbeat; at least twice the "
        "heartbeat (default %(default)s)",
    )
    p.add_argument("--public-url", default="", help="the ws:// URL clients use to reach this node")
    p.add_argument(
        "--lease",
        type=float,
        default=4.0,
        help="with --node-id: seconds a node's lease on its rooms lasts; another node takes them over "
        "this long after its last renewal (default 4)",
    )
    p.add_argument(
        "--lease-renew", type=float, default=1.0, help="seconds between renewals of the lease (default 1)"
    )
    p.add_argument(
        "--house-bots",
        metavar="SPEC",
        default="rule,minimax,table",
        help="bots started beside the server (ttt bot), NAME=STRATEGY to name one (default %(default)s; "
        "'none' for none); they come back as the same players after a restart",
    )
    p.add_argument(
        "--state-dir", help="where the house bots keep their tokens (default: beside the database, DB.house)"
    )
    p.set_defaults(handler=_serve, house_bots_hook=None)
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
    if not 0 < args.mqtt_heartbeat * 2 <= args.mqtt_presence_timeout:
        print(
            "ttt serve: --mqtt-heartbeat must be positive and --mqtt-presence-timeout at least twice it",
            file=sys.stderr,
        )
        return 2
    from server.lease import LeaseRules

    try:
        LeaseRules(args.lease, args.lease_renew)
    except ValueError as exc:
        print(f"ttt serve: {exc}", file=sys.stderr)
        return 2
    problem = _cannot_store(args.db, args.sync)
    if problem is not None:
        print(f"ttt serve: cannot use the database {_shown(args.db)}: {problem}", file=sys.stderr)
        return 2
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
        trusted=frozenset(args.trust),
        ip_rate=args.ip_rate,
        ip_burst=args.ip_burst,
        max_flood=args.max_flood,
        write_limit=args.write_limit,
        stall_timeout=args.stall_timeout,
        max_connections=args.max_connections,
        origins=tuple(args.origin),
        signup_burst=args.signup_burst,
        signup_rate=args.signup_rate,
        sync=args.sync,
        store_stall=args.store_stall,
        node_id=args.node_id or "local",
        public_url=args.public_url,
        mqtt_heartbeat=args.mqtt_heartbeat,
        mqtt_presence_timeout=args.mqtt_presence_timeout,
        lease=args.lease,
        lease_renew=args.lease_renew,
    )
    loop = args.loop or ("uvloop" if _uvloop_installed() else "asyncio")
    main = run_server(config, args.mqtt, _companions(args))
    if loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            main.close()
            print("ttt serve: --loop uvloop needs uvloop (pip install uvloop)", file=sys.stderr)
            return 2
        uvloop.run(main)
    else:
        asyncio.run(main)
    return 0


Companions = Callable[[str], Awaitable[Any]]


def _shown(db: str) -> str:
    """``db`` as logs show it (a URL without its password)."""
    from server.storage import is_url

    if not is_url(db):
        return db
    from server.postgres import redacted

    return redacted(db)


def _cannot_store(db: str, sync: str) -> str | None:
    """Why the server could not write ``db`` (None: it can): checked before it starts, so
    it never welcomes a player it cannot store. Creates or upgrades the tables."""
    import sqlite3

    from server.schema import SchemaTooNew
    from server.storage import is_url, open_store
    from server.store import unwritable

    if not is_url(db):
        problem = unwritable(db)
        if problem is not None:
            return problem
    try:
        open_store(db, sync).close()
    except SchemaTooNew as exc:
        return str(exc)
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # psycopg's errors: refused, no such database, bad password
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"{type(exc).__name__}: {first}"
    return None


def _uvloop_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("uvloop") is not None


def _companions(args: argparse.Namespace) -> Companions | None:
    """What to start beside the server once it listens at a URL: the house bots, if asked
    for and a hook is installed."""
    hook = args.house_bots_hook
    spec: str = args.house_bots
    if spec.strip().lower() == "none":
        return None
    if hook is None:
        print("ttt serve: no house bots: the bots package is not installed", file=sys.stderr)
        return None
    return lambda url: hook(url, spec, args.db, args.state_dir)


async def run_server(config: Any, mqtt: str | None = None, companions: Companions | None = None) -> None:
    """Run until SIGTERM or SIGINT, then shut down cleanly (clients get close code 1001).

    ``companions(url)`` starts what runs beside the server (the house bots) once it
    listens; what it returns is stopped (``await .stop()``) before the server stops.
    """
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
    house = None
    if companions is not None:
        try:
            house = await companions(server.url)  # before "serving on": whoever reads it knows they run
        except BaseException:
            await server.stop()
            raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # before "serving on": a SIGTERM then stops it cleanly
        loop.add_signal_handler(sig, stop.set)
    loop_name = type(loop).__module__.partition(".")[0]  # uvloop or asyncio
    print(
        f"ttt-arena serving on {server.url} (db {server.store.path}, loop {loop_name})",
        file=sys.stderr,
        flush=True,
    )
    await stop.wait()
    if house is not None:
        await house.stop()  # the bots go first (no resignation): their seats wait out the grace
    await server.stop()
