"""Tournament throughput: classic games per minute through the live server, against play_match.

Run: .venv/bin/python bench/tournament.py [--bots table,rule,heuristic,random] [--concurrency 16]
     [--games-per-pair 100] [--repeat 2] [--untrusted]

The networked figure is a round-robin of 4 bot processes through an embedded
`ttt serve` (real WebSocket, real processes) at concurrency 16, timed from the
first game started to the last ended (start-up excluded). The baseline, measured
in the same run, is the same schedule and seed through `play_match` in this
process; the ratio says what the network, the server and the processes cost.
Both runs must give the same results; the script says whether they did.

The connected figure (``--connected``: ordinary ``ttt bot`` players already online,
the runner only arranging games) is the same schedule on a fresh ``ttt serve`` with the
server's default limits, its operator trusting the director and the four bots
(``--trust``: 50x the message rate, told in each welcome, outside the address's
budget), with the same storage settings as the embedded server; it is quoted as a ratio
to the embedded figure of this run. The two are timed ``--repeat`` times, alternating
(a burst of load from other work then hits both), and the best rate of each counts;
each run's CPU milliseconds per game, over all processes, is printed too. For contrast,
the same without any trust (``--untrusted``, off by default: every bot then paces
itself at the ordinary 20 messages a second, about 6 messages a game each).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import resource
import sys
import time
from pathlib import Path

from bots.tournament.cli import load_strategy, parse_entries
from bots.tournament.connected import ConnectedRunner
from bots.tournament.director import Format, TournamentConfig
from bots.tournament.match import play_match
from bots.tournament.runner import NetworkRunner, spawn_bot, start_server
from protocol import messages as m
from protocol.client import connect


def default_bots() -> str:
    """The registry's strategies, or (before they exist) the small test strategies in tests/."""
    if getattr(importlib.import_module("bots"), "strategy", None) is None:
        tests = str(Path(__file__).resolve().parent.parent / "tests")
        sys.path.insert(0, tests)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
        g, r = "tournament_strategies:Greedy", "tournament_strategies:RandomMover"
        return f"greedy={g},random={r},greedy2={g},random2={r}"
    return "table,rule,heuristic,random"


async def connected_rate(
    config: TournamentConfig,
    entries: dict[str, str],
    server_args: tuple[str, ...],
    director: str | None = None,
) -> float:
    """Games per minute of ``config`` among ``ttt bot`` players online on a fresh server."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ttt-bench-") as tmp:
        server, url = await start_server(os.path.join(tmp, "arena.db"), *server_args)
        bots = []
        try:
            for name, strategy in entries.items():
                bots.append(await spawn_bot(url, strategy, name, "--max-games", "64", "--seed", "1"))
            watcher = await connect(url, "bench-watcher", timeout=10)
            try:
                while True:
                    snapshot = await watcher.request(m.LobbySubscribe())
                    await watcher.request(m.LobbyUnsubscribe())
                    assert isinstance(snapshot, m.LobbySnapshot)
                    if set(entries) <= {p.name for p in snapshot.players}:
                        break
                    await asyncio.sleep(0.1)
            finally:
                await watcher.close()
            named = {"name": director} if director else {}
            runner = ConnectedRunner(config, url, move_ms=10_000, **named)
            director = await runner.run()
            return len(director.records) / runner.play_seconds * 60
        finally:
            for bot in bots:
                bot.terminate()
            for bot in bots:
                await bot.wait()
            server.terminate()
            await server.wait()


def cpu_seconds() -> float:
    """CPU time of this process and every child it has waited for (server, bots): what a
    run costs the machine, which load from other work does not change the way it changes
    wall-clock rates."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--bots", help="entries (default: table,rule,heuristic,random when bots.strategy exists)"
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--games-per-pair", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-connected", action="store_true", help="skip the --connected figure")
    parser.add_argument(
        "--sync", choices=("FULL", "NORMAL"), default="FULL", help="both servers' --sync (FULL: ttt serve's)"
    )
    parser.add_argument(
        "--repeat", type=int, default=2, help="time each networked mode N times, alternating; the best counts"
    )
    parser.add_argument(
        "--untrusted", action="store_true", help="also time --connected with nobody trusted (slow)"
    )
    args = parser.parse_args()
    entries = parse_entries(args.bots or default_bots())
    print(f"bots: {', '.join(f'{n}={s}' for n, s in entries.items())}")
    config = TournamentConfig(
        "classic", tuple(entries), Format.ROUND_ROBIN, args.games_per_pair, args.concurrency
    )
    trust = [arg for name in ("td-bench", *entries) for arg in ("--trust", name)]
    embedded: list[tuple[float, float]] = []  # (games a minute, CPU ms a game) of each round
    connected: list[tuple[float, float]] = []
    networked = None
    for _ in range(args.repeat):  # alternating, so a burst of load from other work hits both
        lifted = ("--rate", "100000", "--burst", "100000", "--sync", args.sync)
        runner = NetworkRunner(config, entries, seed=args.seed, move_ms=10_000, server_args=lifted)
        cpu = cpu_seconds()
        networked = asyncio.run(runner.run())
        games = len(networked.records)
        embedded.append((games / runner.play_seconds * 60, (cpu_seconds() - cpu) / games * 1000))
        if not args.no_connected:
            cpu = cpu_seconds()
            rate = asyncio.run(connected_rate(config, entries, (*trust, "--sync", args.sync), "td-bench"))
            connected.append((rate, (cpu_seconds() - cpu) / games * 1000))
    assert networked is not None
    games = len(networked.records)
    net_rate = max(rate for rate, _ in embedded)

    strategies = {name: load_strategy(s) for name, s in entries.items()}
    began = time.perf_counter()
    local = play_match(config, strategies, seed=args.seed)
    local_seconds = time.perf_counter() - began
    local_rate = len(local.records) / local_seconds * 60

    same = [
        (r.spec.number, r.moves, r.result) for r in sorted(networked.records, key=lambda r: r.spec.number)
    ] == [(r.spec.number, r.moves, r.result) for r in local.records]
    print(f"networked games: {games} a run ({len(entries)} bots, concurrency {args.concurrency})")
    print(f"each networked mode timed {args.repeat} times, alternating; the best rate counts")
    print(f"networked classic games per minute: {net_rate:,.0f} ({_each(embedded)})")
    print(f"networked CPU ms per game, all processes (start-up included): {_cpu(embedded)}")
    print(f"baseline play_match games per minute: {local_rate:,.0f}")
    print(f"ratio networked / play_match: {net_rate / local_rate:.3f}")
    print(f"same results networked and in-process: {same}")
    if connected:
        label = "trusted director and bots, default limits"
        rate = max(r for r, _ in connected)
        print(f"connected classic games per minute ({label}): {rate:,.0f} ({_each(connected)})")
        print(f"connected CPU ms per game, all processes ({label}): {_cpu(connected)}")
        print(f"ratio connected ({label}) / networked: {rate / net_rate:.3f}")
    if args.untrusted:
        label = "nobody trusted, default limits"
        rate = asyncio.run(connected_rate(config, entries, ("--sync", args.sync), None))
        print(f"connected classic games per minute ({label}): {rate:,.0f}")
        print(f"ratio connected ({label}) / networked: {rate / net_rate:.3f}")


def _each(runs: list[tuple[float, float]]) -> str:
    return "each run: " + ", ".join(f"{rate:,.0f}" for rate, _ in runs)


def _cpu(runs: list[tuple[float, float]]) -> str:
    return ", ".join(f"{ms:.2f}" for _, ms in runs)


if __name__ == "__main__":
    main()
