"""Load on the game server: N connections (N/2 games) playing random legal moves.

Run: .venv/bin/python bench/load.py [--connections 1000] [--seconds 10] [--idle 5000]

Starts `ttt serve` as its own process (durable writes on: SQLite WAL, synchronous
FULL, in a temporary directory) and drives it from this process with raw
``websockets`` clients. Each game keeps one move in flight: the player to move
sends a random legal cell, and the move-to-broadcast latency is the time until
the mover's connection receives the ``moved`` event (it is stored first). A
finished game is followed by a rematch. Two phases: flat out (each game sends
its next move as soon as the last is announced: the most moves/s), then paced
at ``--target`` moves/s in all (the latency at that load; flat out, latency is
only games / throughput). Prints moves/s and latency p50/p99 of each.

Baseline, same run, same machine, same clients: a bare ``websockets`` echo
server in its own process, with N connections doing closed-loop round trips of
a frame of the same size. Prints its round trips/s and the ratio.

Then memory: the server process's resident memory grows by how much per idle
connection (hello said) with ``--idle`` connections open.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

ECHO_SERVER = """
import asyncio, sys
from websockets.asyncio.server import serve
async def echo(ws):
    async for message in ws:
        await ws.send(message)
async def main():
    async with serve(echo, "127.0.0.1", int(sys.argv[1]), compression=None, ping_interval=None):
        await asyncio.get_running_loop().create_future()
asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(400):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("server process died") from None
            await asyncio.sleep(0.05)
    raise RuntimeError("server did not start")


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def open_many(url: str, count: int, parallel: int = 64) -> list[ClientConnection]:
    gate = asyncio.Semaphore(parallel)

    async def one() -> ClientConnection:
        async with gate:
            return await connect(url, compression=None, ping_interval=None, open_timeout=60, max_size=2**20)

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def hello(ws: ClientConnection, name: str) -> None:
    await ws.send(json.dumps({"type": "hello", "name": name, "kind": "bot"}))
    reply = json.loads(await ws.recv())
    assert reply["type"] == "welcome", reply


async def until(ws: ClientConnection, kinds: tuple[str, ...]) -> dict[str, Any]:
    while True:
        event: dict[str, Any] = json.loads(await ws.recv())
        if event["type"] in kinds:
            return event
        if event["type"] == "error":
            raise RuntimeError(event)


class Game:
    """Two connections playing random legal moves in one room, forever (rematch after each game)."""

    def __init__(self, wx: ClientConnection, wo: ClientConnection, room: str, cells: int, rng: random.Random):
        self.ws = [wx, wo]  # seat X, seat O (swapped by each rematch)
        self.room = room
        self.cells = cells
        self.rng = rng
        self.latencies: list[float] = []
        self.moves = 0
        self.games = 0
        #: Seconds between this game's moves (0: as fast as the server answers).
        self.interval = 0.0
        self.restart = True

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            free = set(range(self.cells))
            turn = 0
            while True:
                if self.interval:
                    if self.restart:  # spread the games over the interval, or they move in bursts
                        self.restart = False
                        next_at = loop.time() + self.rng.random() * self.interval
                    else:
                        next_at = max(next_at + self.interval, loop.time() - self.interval)
                    await asyncio.sleep(max(0.0, next_at - loop.time()))
                cell = self.rng.choice(tuple(free))
                mover, other = self.ws[turn], self.ws[1 - turn]
                t0 = time.perf_counter()
                await mover.send(json.dumps({"type": "move", "room": self.room, "cell": cell}))
                event = await until(mover, ("moved",))
                self.latencies.append(time.perf_counter() - t0)
                await until(other, ("moved",))
                self.moves += 1
                free.discard(cell)
                if event.get("vanished") is not None:
                    free.add(event["vanished"])
                if await self._over(mover):  # game_over comes before the mover's ok
                    await until(other, ("game_over",))
                    break
                turn = 1 - turn
            self.games += 1
            for ws in self.ws:
                await ws.send(json.dumps({"type": "rematch", "room": self.room}))
            for ws in self.ws:
                await until(ws, ("game_started",))
            self.ws.reverse()  # colours swap in a rematch

    async def _over(self, ws: ClientConnection) -> bool:
        """Whether the next frame on ``ws`` (the mover's reply `ok`, maybe after game_over) says it ended."""
        while True:
            event = json.loads(await ws.recv())
            if event["type"] == "game_over":
                await until(ws, ("ok",))
                return True
            if event["type"] == "ok":
                return False


Phase = tuple[float, list[float]]


async def load(
    url: str, connections: int, seconds: float, variant: str, cells: int, target: float
) -> tuple[Phase, Phase]:
    """Moves/s and latencies flat out, then paced at ``target`` moves/s in all."""
    sockets = await open_many(url, connections)
    await asyncio.gather(*(hello(ws, f"b{i}") for i, ws in enumerate(sockets)))
    rng = random.Random(1)
    games = []
    for i in range(0, connections - 1, 2):
        wx, wo = sockets[i], sockets[i + 1]
        await wx.send(json.dumps({"type": "create_room", "variant": variant, "seat": "x", "rated": False}))
        room = (await until(wx, ("joined",)))["room"]
        await wo.send(json.dumps({"type": "join", "room": room}))
        await until(wo, ("game_started",))  # announced before the reply
        await until(wo, ("joined",))
        await until(wx, ("game_started",))
        games.append(Game(wx, wo, room, cells, random.Random(rng.random())))
    gc.collect()
    gc.freeze()  # the clients' own collection pauses would show as server latency
    gc.set_threshold(20_000, 50, 100)
    tasks = [asyncio.create_task(g.run()) for g in games]
    phases = []
    for rate in (0.0, target):  # flat out, then paced at the target rate
        for g in games:
            g.interval = len(games) / rate if rate else 0.0
            g.restart = True
        await asyncio.sleep(1.0)  # settle
        start_moves = sum(g.moves for g in games)
        for g in games:
            g.latencies.clear()
        t0 = time.perf_counter()
        await asyncio.sleep(seconds)
        elapsed = time.perf_counter() - t0
        moves = sum(g.moves for g in games) - start_moves
        phases.append((moves / elapsed, [x for g in games for x in g.latencies]))
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return phases[0], phases[1]


async def echo(url: str, connections: int, seconds: float) -> tuple[float, list[float]]:
    sockets = await open_many(url, connections)
    frame = json.dumps({"type": "move", "room": "abcdef12", "cell": 112, "ref": None})
    stop = asyncio.Event()
    counts = [0] * len(sockets)
    latencies: list[float] = []

    async def loop(i: int, ws: ClientConnection) -> None:
        while not stop.is_set():
            t0 = time.perf_counter()
            await ws.send(frame)
            await ws.recv()
            latencies.append(time.perf_counter() - t0)
            counts[i] += 1

    tasks = [asyncio.create_task(loop(i, ws)) for i, ws in enumerate(sockets)]
    await asyncio.sleep(1.0)
    base = sum(counts)
    latencies.clear()
    t0 = time.perf_counter()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - t0
    rate = (sum(counts) - base) / elapsed
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return rate, list(latencies)


async def idle_memory(url: str, pid: int, count: int) -> float:
    before = rss_kib(pid)
    sockets = await open_many(url, count)
    await asyncio.gather(*(hello(ws, f"idle{i}") for i, ws in enumerate(sockets)))
    await asyncio.sleep(1.0)
    after = rss_kib(pid)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return (after - before) * 1024 / count


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def start_server(port: int, db: str, extra: list[str]) -> subprocess.Popen[bytes]:
    profile = os.environ.get("LOAD_PROFILE")  # a file: run the server under cProfile
    pre = ["-m", "cProfile", "-o", profile] if profile else []
    cmd = [
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
    ]
    cmd += ["--rate", "100000", "--burst", "100000", "--max-conns-per-ip", "100000", "--first-move", "600"]
    return subprocess.Popen(cmd + extra, stdout=subprocess.DEVNULL)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1000, help="connections playing (2 per game)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--idle", type=int, default=5000, help="idle connections for the memory figure (0: skip)"
    )
    parser.add_argument("--variant", default="15x15k5")
    parser.add_argument("--target", type=float, default=5000.0, help="moves/s for the paced latency phase")
    parser.add_argument("--uvloop", action="store_true", help="run the server on uvloop")
    parser.add_argument("--sync", default="FULL", choices=["FULL", "NORMAL"], help="server SQLite sync")
    args = parser.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    from protocol.rules import find_variant

    cells = find_variant(args.variant).rows * find_variant(args.variant).cols
    extra = ["--sync", args.sync] + (["--uvloop"] if args.uvloop else [])
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        proc = start_server(port, os.path.join(tmp, "load.db"), extra)
        try:
            await wait_port(port, proc)
            url = f"ws://127.0.0.1:{port}"
            flat, paced = await load(url, args.connections, args.seconds, args.variant, cells, args.target)
            rate, lat = flat
            print(f"server: {args.connections} connections, {args.variant}, durable (WAL, {args.sync})")
            print(f"moves/s (flat out, one move in flight per game): {rate:.0f}")
            print(f"move-to-broadcast p50 (flat out): {pct(lat, 50) * 1000:.1f} ms")
            print(f"move-to-broadcast p99 (flat out): {pct(lat, 99) * 1000:.1f} ms")
            print(f"moves/s (paced at {args.target:.0f}): {paced[0]:.0f}")
            print(f"move-to-broadcast p50 (paced): {pct(paced[1], 50) * 1000:.1f} ms")
            print(f"move-to-broadcast p99 (paced): {pct(paced[1], 99) * 1000:.1f} ms")
            if args.idle:
                per_conn = await idle_memory(url, proc.pid, args.idle)
                print(f"memory per idle connection ({args.idle} open): {per_conn / 1024:.1f} KiB")
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(20)
            proc.kill()
        port = free_port()
        echo_proc = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, str(port)])
        try:
            await wait_port(port, echo_proc)
            erate, elat = await echo(f"ws://127.0.0.1:{port}", args.connections, args.seconds)
        finally:
            echo_proc.kill()
            echo_proc.wait()
        print(f"baseline echo round trips/s ({args.connections} connections): {erate:.0f}")
        print(f"baseline echo round trip p50: {pct(elat, 50) * 1000:.1f} ms")
        print(f"baseline echo round trip p99: {pct(elat, 99) * 1000:.1f} ms")
        print(f"ratio moves/s / echo round trips/s: {rate / erate:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
