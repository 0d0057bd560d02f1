"""Load on the game server: N connections (N/2 games) playing random legal moves,
beside the baselines that say what those figures are worth, all in one run.

Run: .venv/bin/python bench/load.py [--connections 1000] [--seconds 10] [--paced-runs 10]
     [--idle 5000] [--loop uvloop|asyncio] [--before DIR] [--postgres | --db postgresql://...]
     [--nodes N]

With ``--postgres`` (a PostgreSQL of its own, started for the run in a temporary
folder as `tests/pg_harness.py` does; fsync and synchronous_commit on) or ``--db URL``
(an existing database), the same server is also loaded on PostgreSQL (``arena-pg``),
beside the one on SQLite, in the same run. Its CPU figures are the ``ttt serve``
process's only; PostgreSQL's own processes are not counted.

With ``--nodes N`` (N > 1, and PostgreSQL), N clustered nodes on one PostgreSQL database
(``arena-pgN``: ``ttt serve --node-id n1`` ... ``nN``, leases on, so every transaction
that writes to a room checks its owner) are loaded too, the games dealt out to the nodes
in turn: both players of a game are on the same node (no redirect in the move path; a
game across nodes is hosted by one node anyway, and its other player is sent there).
Their figures are those of the whole arena: moves/s of all nodes together, every move's
latency, CPU of every node process added up.

Starts `ttt serve` as its own process (durable writes on: SQLite WAL, synchronous
FULL, in a temporary directory) and drives it from this process with raw
``websockets`` clients (on uvloop where installed: the clients share the two
cores with the server, so they spend as little as they can; each frame is
handled by a callback as it is parsed). Each game keeps one move in flight: the
player to move sends a random legal cell, and the move-to-broadcast latency is
the time until the mover's connection receives the ``moved`` event (it is stored
first). A finished game is followed by a rematch. Phases: flat out (each game
sends its next move as soon as the last is announced: the most moves/s), then
``--paced-runs`` windows paced at ``--target`` moves/s in all (the latency at
that load; flat out, latency is only games / throughput). Prints moves/s and
latency p50/p99 of each, the CPU time per move of the server process and of the
clients, and per phase where the server's CPU went (its event-loop thread, its
other threads: the SQLite writer and checkpoints) and what its store did
(transactions and operations per move, from ``/metrics``, read between phases).

Baselines, same run, same machine, same clients, same server loop:

- floor: `bench/floor.py`, the least a durable server of this protocol does (same
  library, same frame shortcut, same frames, the same batched durable SQLite
  writes into the same schema; no rooms, no rules, no validation beyond JSON);
- tutorial: `bench/tutorial.py`, a server written like the ``websockets``
  tutorial's Connect Four, storing nothing;
- echo: a bare ``websockets`` echo server, closed-loop round trips of a frame of
  a move's size.

With ``--before DIR`` (a checkout of another version, e.g. ``git archive main``),
that version's server is loaded the same way in the same run.

Then memory: each arena server's resident memory grows by how much per idle
connection (hello said) with ``--idle`` connections open. Memory only:
``--rounds 0 --paced-runs 0 --baselines "" --connections 0``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from typing import Any

from loadgen import Phase, echo, free_port, idle_memory, pct, play, wait_port

HERE = os.path.dirname(os.path.abspath(__file__))

ECHO_SERVER = """
import asyncio, sys
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed
async def echo(ws):
    try:
        async for message in ws:
            await ws.send(message)
    except ConnectionClosed:
        pass
async def main():
    async with serve(echo, "127.0.0.1", int(sys.argv[1]), compression=None, ping_interval=None):
        await asyncio.get_running_loop().create_future()
if sys.argv[2] == "uvloop":
    import uvloop
    uvloop.run(main())
else:
    asyncio.run(main())
"""


def arena_command(port: int, db: str, loop: str, tree: str | None) -> list[str]:
    """`ttt serve` of this checkout (or of ``tree``), on ``loop``, durable, limits out of the way."""
    cli = os.path.join(tree or os.path.dirname(HERE), "server", "cli.py")
    with open(cli) as f:
        flags = f.read()
    knows_loop = '"--loop"' in flags  # an older version knows only --uvloop
    chosen = ["--loop", loop] if knows_loop else ["--uvloop"] if loop == "uvloop" else []
    for flag in ("--signup-burst", "--ip-rate", "--ip-burst"):  # thousands of players, one address
        if f'"{flag}"' in flags:
            chosen += [flag, "1000000"]
    profile = os.environ.get("LOAD_PROFILE")  # a file prefix: run each server under cProfile
    pre = ["-m", "cProfile", "-o", f"{profile}.{port}"] if profile else []
    return [
        sys.executable,
        *pre,
        "-m",
        "protocol.cli",
        "serve",
        "--port",
        str(port),
        "--db",
        db,
        "--log-level",
        "warning",
        "--house-bots",
        "none",
        "--rate",
        "100000",
        "--burst",
        "100000",
        "--max-conns-per-ip",
        "100000",
        "--first-move",
        "600",
        *chosen,
    ]


@contextlib.asynccontextmanager
async def running(cmd: list[str], port: int, tree: str | None = None) -> AsyncIterator[int]:
    """Start ``cmd`` (with ``tree`` first on the import path), wait for ``port``, yield its pid."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.path.abspath(tree)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env, cwd=tree)
    try:
        await wait_port(port, proc)
        yield proc.pid
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(20)
        proc.kill()
        proc.wait()


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us"


def ms(values: list[float], q: int) -> str:
    return f"{pct(values, q) * 1000:.1f} ms"


def report_flat(name: str, phase: Phase) -> None:
    print(
        f"{name}: flat out {phase.rate:.0f} moves/s, p50 {ms(phase.latencies, 50)}, p99 "
        f"{ms(phase.latencies, 99)}; server CPU {us(phase.server_cpu)}/move (event loop "
        f"{us(phase.loop_cpu)}, other threads {us(phase.thread_cpu)}), clients {us(phase.client_cpu)}/move"
    )
    if phase.counters:
        print("  per move: " + ", ".join(f"{k} {v:.4g}" for k, v in phase.counters.items()))


def command(
    args: argparse.Namespace, tmp: str, name: str, ports: list[int]
) -> tuple[list[list[str]], str | None]:
    """How to start the server called ``name`` on ``ports`` (one process each: several
    only for the nodes of ``arena-pgN``), and the source tree it runs from."""
    port = ports[0]
    db = os.path.join(tmp, f"{name}-{port}.db")
    if name.startswith("arena-pg"):  # a fresh database each time on our own PostgreSQL; else the one named
        url = args.pg.create_db(f"load_{port}") if args.pg is not None else args.db
        if len(ports) == 1:
            return [arena_command(port, url, args.loop, None)], None
        return [
            [*arena_command(p, url, args.loop, None), "--node-id", f"n{n}", "--lease", "4"]
            for n, p in enumerate(ports, 1)
        ], None
    if name in ("arena", "before"):
        tree = args.before if name == "before" else None
        return [arena_command(port, db, args.loop, tree)], tree
    if name == "echo":
        return [[sys.executable, "-c", ECHO_SERVER, str(port), args.loop]], None
    if name == "tutorial":
        return [[sys.executable, os.path.join(HERE, "tutorial.py"), str(port), "--loop", args.loop]], None
    store = "none" if name == "floor-nostore" else "full"
    return [
        [
            sys.executable,
            os.path.join(HERE, "floor.py"),
            str(port),
            db,
            "--loop",
            args.loop,
            "--store",
            store,
        ]
    ], None


async def session(
    args: argparse.Namespace, tmp: str, name: str, rates: list[tuple[float, float]], idle: int = 0
) -> tuple[list[Phase], float | None]:
    """Start server ``name``, play at each of ``rates`` (echo: round trips flat out), then
    measure its memory per idle connection (``idle`` of them; 0: not)."""
    ports = [free_port() for _ in range(nodes_of(args, name))]
    cmds, tree = command(args, tmp, name, ports)
    arena = name.startswith("arena") or name == "before"
    metrics = [f"http://127.0.0.1:{port}/metrics" for port in ports] if arena else None
    urls = [f"ws://127.0.0.1:{port}" for port in ports]
    async with contextlib.AsyncExitStack() as stack:
        started = [running(c, p, tree) for c, p in zip(cmds, ports, strict=True)]
        pids = [await stack.enter_async_context(each) for each in started]
        if name == "echo":
            phases = [await echo(urls[0], pids[0], args.connections, rates[0][1])]
        else:
            names = f"p{ports[0]}x"  # unique in a database (--db) that several sessions share
            phases = await play(urls, pids, args.connections, args.variant, args.cells, rates, metrics, names)
        per_idle = await idle_memory(urls[0], pids[0], idle, f"i{ports[0]}x") if idle else None
    return phases, per_idle


def nodes_of(args: argparse.Namespace, name: str) -> int:
    """How many processes the server called ``name`` is."""
    return args.nodes if name == f"arena-pg{args.nodes}" else 1


def report_paced(name: str, target: float, paced: list[Phase]) -> None:
    for i, phase in enumerate(paced, 1):
        print(
            f"  {name} paced run {i}/{len(paced)} at {target:.0f}/s: {phase.rate:.0f} moves/s, "
            f"p50 {ms(phase.latencies, 50)}, p99 {ms(phase.latencies, 99)}, "
            f"server CPU {us(phase.server_cpu)}/move (event loop {us(phase.loop_cpu)}, "
            f"other threads {us(phase.thread_cpu)})"
        )
        if phase.counters:
            print("    per move: " + ", ".join(f"{k} {v:.4g}" for k, v in phase.counters.items()))
    good = sum(1 for phase in paced if pct(phase.latencies, 99) < 0.020)
    print(f"  {name}: paced runs with move-to-broadcast p99 < 20 ms: {good} of {len(paced)}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1000, help="connections playing (2 per game)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each flat-out phase")
    parser.add_argument(
        "--rounds", type=int, default=3, help="flat-out rounds, every server in turn (medians are compared)"
    )
    parser.add_argument("--paced-runs", type=int, default=10, help="paced windows in a row")
    parser.add_argument("--paced-seconds", type=float, default=10.0, help="length of each paced window")
    parser.add_argument(
        "--baseline-paced", type=int, default=1, help="paced windows for the floor and tutorial"
    )
    parser.add_argument("--target", type=float, default=5000.0, help="moves/s in all for the paced phases")
    parser.add_argument(
        "--idle", type=int, default=5000, help="idle connections for the memory figure (0: skip)"
    )
    parser.add_argument("--variant", default="15x15k5")
    parser.add_argument("--loop", default="uvloop", choices=["uvloop", "asyncio"], help="every server's loop")
    parser.add_argument("--before", metavar="DIR", help="also load the server of this checkout")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="also load the server on a PostgreSQL started for the run (arena-pg)",
    )
    parser.add_argument(
        "--db", metavar="URL", help="also load the server on this PostgreSQL database (arena-pg)"
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="also load this many clustered nodes on one PostgreSQL database (arena-pgN; "
        "needs --postgres or --db)",
    )
    parser.add_argument(
        "--baselines",
        default="floor,tutorial,echo",
        help="which baselines (floor,floor-nostore,tutorial,echo)",
    )
    args = parser.parse_args()
    if args.nodes < 1 or (args.nodes > 1 and not (args.postgres or args.db)):
        parser.error("--nodes N: N >= 1, and N > 1 needs --postgres or --db")
    args.pg = None
    if args.postgres:
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
        from pg_harness import PgCluster

        args.pg = PgCluster(durable=True)
        args.pg.start()
    try:
        await measure(args)
    finally:
        if args.pg is not None:
            args.pg.destroy()


async def measure(args: argparse.Namespace) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    from protocol.rules import find_variant

    args.cells = find_variant(args.variant).cells
    print(
        f"{args.connections} connections ({args.connections // 2} games of {args.variant}), server loop "
        f"{args.loop}, clients {client_loop()}; durable: SQLite WAL, synchronous FULL"
        f"{'; PostgreSQL fsync on, synchronous_commit on' if args.pg or args.db else ''}; cores "
        f"{os.cpu_count()}, load average {os.getloadavg()[0]:.2f} at start"
    )
    pg = ["arena-pg", *([f"arena-pg{args.nodes}"] if args.nodes > 1 else [])] if args.pg or args.db else []
    servers = ["arena", *pg, *(["before"] if args.before else [])]
    bases = [b for b in args.baselines.split(",") if b]
    flat: dict[str, list[Phase]] = {name: [] for name in servers + bases}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(1, args.rounds + 1):
            for name in flat:
                (phase,), _ = await session(args, tmp, name, [(0.0, args.seconds)])
                flat[name].append(phase)
                report_flat(f"round {r} {name}", phase)
        for name in servers:
            paced_rates = [(args.target, args.paced_seconds)] * args.paced_runs
            phases, idle = await session(args, tmp, name, paced_rates, args.idle)
            if paced_rates:
                report_paced(name, args.target, phases)
            if idle is not None:
                print(
                    f"  {name}: memory per idle connection ({args.idle} open, hello said): "
                    f"{idle / 1024:.2f} KiB"
                )
        for name in bases:
            if args.baseline_paced and name != "echo":
                phases, _ = await session(
                    args, tmp, name, [(args.target, args.paced_seconds)] * args.baseline_paced
                )
                report_paced(f"baseline {name}", args.target, phases)
    if not args.rounds:
        return
    print(f"medians of {args.rounds} flat-out rounds:")
    for name, phases in flat.items():
        print(
            f"  {name}: {statistics.median(p.rate for p in phases):.0f} moves/s, move-to-broadcast p99 "
            f"{statistics.median(pct(p.latencies, 99) for p in phases) * 1000:.1f} ms, server CPU "
            f"{us(statistics.median(p.server_cpu for p in phases))}/move"
        )
    several = f"arena-pg{args.nodes}"
    compared = [
        ("arena-pg", "arena", "PostgreSQL / SQLite, one node each"),
        (several, "arena-pg", f"{args.nodes} nodes / 1 node, both on PostgreSQL"),
        (several, "arena", f"{args.nodes} nodes on PostgreSQL / 1 node on SQLite"),
    ]
    for top, bottom, what in compared:
        if top in flat and bottom in flat:
            pairs = list(zip(flat[top], flat[bottom], strict=True))
            rate = [a.rate / b.rate for a, b in pairs]
            p99 = [pct(a.latencies, 99) / pct(b.latencies, 99) for a, b in pairs]
            print(
                f"  {top} / {bottom} ({what}): flat-out moves/s "
                f"{' '.join(f'{x:.2f}' for x in rate)} -> {statistics.median(rate):.2f}x; move-to-broadcast "
                f"p99 {' '.join(f'{x:.2f}' for x in p99)} -> {statistics.median(p99):.2f}x"
            )
    print("ratios (same run; each round's ratio, then their median):")
    for name in servers:
        for base in bases:
            cpu = [a.server_cpu / b.server_cpu for a, b in zip(flat[name], flat[base], strict=True)]
            rate = [a.rate / b.rate for a, b in zip(flat[name], flat[base], strict=True)]
            print(
                f"  {name} / {base}: server CPU per move {' '.join(f'{x:.2f}' for x in cpu)} -> "
                f"{statistics.median(cpu):.2f}x; flat-out moves/s {' '.join(f'{x:.2f}' for x in rate)} -> "
                f"{statistics.median(rate):.2f}x"
            )


def client_loop() -> str:
    return type(asyncio.get_running_loop()).__module__.partition(".")[0]


def run_client(coro: Any) -> None:
    """Run the load clients on uvloop where installed: they share the cores with the server."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(coro)
    else:
        uvloop.run(coro)


if __name__ == "__main__":
    run_client(main())
