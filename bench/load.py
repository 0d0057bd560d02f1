"""Load on the game server: N connections (N/2 games) playing random legal moves.

Run: .venv/bin/python bench/load.py [--connections 1000] [--seconds 10] [--idle 5000]

Starts `ttt serve` as its own process (durable writes on: SQLite WAL, synchronous
FULL, in a temporary directory) and drives it from this process with raw
``websockets`` clients (on uvloop where installed: the clients share the two
cores with the server, so they spend as little as they can; each frame is
handled by a callback as it is parsed). Each game keeps one move in flight: the
player to move sends a random legal cell, and the move-to-broadcast latency is
the time until the mover's connection receives the ``moved`` event (it is stored
first). A finished game is followed by a rematch. Two phases: flat out (each
game sends its next move as soon as the last is announced: the most moves/s),
then paced at ``--target`` moves/s in all (the latency at that load; flat out,
latency is only games / throughput). Prints moves/s and latency p50/p99 of
each, and the CPU time per move of the server process and of the clients.

Baseline, same run, same machine, same clients: a bare ``websockets`` echo
server in its own process, with N connections doing closed-loop round trips of
a frame of the same size. Prints its round trips/s, its CPU per round trip and
the ratios.

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
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from server.connection import TextShortcut

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


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class LoadClient(TextShortcut, ClientConnection):
    """A client connection that, once `on_text` is set, hands each whole text frame to it
    as the frame arrives (no task switch, no queue), and `send_now` writes at once.

    The load generator shares this machine's two cores with the server: each
    microsecond it spends is one the server does not get, so it does as little
    as a client can.
    """

    def send_now(self, text: str) -> None:
        self.protocol.send_text(text.encode())
        self.send_data()


async def open_many(url: str, count: int, parallel: int = 64) -> list[LoadClient]:
    gate = asyncio.Semaphore(parallel)

    async def one() -> LoadClient:
        async with gate:
            ws = await connect(
                url,
                compression=None,
                ping_interval=None,
                open_timeout=60,
                max_size=2**20,
                create_connection=LoadClient,
            )
            assert isinstance(ws, LoadClient)
            return ws

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
    """Two connections playing random legal moves in one room, forever (rematch after each game).

    Driven by frames as they arrive: a move is done when the mover has its ``moved``
    (the latency) and ``ok`` and the other player its ``moved`` (and, when the move
    ended the game, both their ``game_over``); then the next move goes, or a rematch.
    """

    def __init__(self, wx: LoadClient, wo: LoadClient, room: str, cells: int, rng: random.Random):
        self.ws = [wx, wo]
        self.room = room
        self.cells = cells
        self.rng = rng
        self.latencies: list[float] = []
        self.moves = 0
        self.games = 0
        #: Seconds between this game's moves (0: as fast as the server answers).
        self.interval = 0.0
        self.restart = True
        self.stopped = False
        self.failure: dict[str, Any] | None = None
        self._loop = asyncio.get_running_loop()
        self._next_at = 0.0
        self._free = set(range(cells))
        self._first = 0  # index into self.ws of the player with X (swapped by each rematch)
        self._turn = 0
        self._sent = 0.0
        self._need: set[tuple[int, str]] = set()  # (connection index, frame type) still to come
        self._over: set[int] = set()  # connections that heard game_over
        self._starting: set[tuple[int, str]] = set()  # (connection index, frame type) before a rematch starts
        for i, ws in enumerate(self.ws):
            ws.on_text = lambda text, i=i: self._frame(i, text)

    def start(self) -> None:
        self._schedule()

    def _schedule(self) -> None:
        if self.stopped:
            return
        if not self.interval:
            self._move()
            return
        now = self._loop.time()
        if self.restart:  # spread the games over the interval, or they move in bursts
            self.restart = False
            self._next_at = now + self.rng.random() * self.interval
        else:
            self._next_at = max(self._next_at + self.interval, now - self.interval)
        self._loop.call_at(self._next_at, self._move)

    def _move(self) -> None:
        if self.stopped:
            return
        cell = self.rng.choice(tuple(self._free))
        mover = self._turn  # index into self.ws of the side to move
        self._need = {(mover, "moved"), (mover, "ok"), (1 - mover, "moved")}
        self._over.clear()
        self._sent = time.perf_counter()
        self.ws[mover].send_now(json.dumps({"type": "move", "room": self.room, "cell": cell}))

    def _frame(self, i: int, text: str) -> None:
        if self.stopped:
            return
        event = json.loads(text)
        kind = event["type"]
        if kind == "error":
            self.failure = event
            self.stopped = True
            return
        if self._starting:
            self._starting.discard((i, kind))
            if not self._starting:
                self._first = 1 - self._first  # colours swap in a rematch
                self._free = set(range(self.cells))
                self._turn = self._first
                self._schedule()
            return
        if (i, kind) not in self._need and kind != "game_over":
            return
        if kind == "moved":
            if i == self._turn:
                self.latencies.append(time.perf_counter() - self._sent)
                self._free.discard(event["cell"])
                if event.get("vanished") is not None:
                    self._free.add(event["vanished"])
        elif kind == "game_over":
            self._over.add(i)
        self._need.discard((i, kind))
        if self._need or (self._over and len(self._over) < 2):
            return
        self.moves += 1
        if self._over:
            self.games += 1
            self._starting = {(0, "game_started"), (1, "game_started"), (0, "ok"), (1, "ok")}
            for ws in self.ws:
                ws.send_now(json.dumps({"type": "rematch", "room": self.room}))
            return
        self._turn = 1 - self._turn
        self._schedule()


@dataclass
class Phase:
    """One phase's figures: moves/s, latencies, and CPU seconds per move of each side."""

    rate: float
    latencies: list[float]
    server_cpu: float
    client_cpu: float


async def load(
    url: str, pid: int, connections: int, seconds: float, variant: str, cells: int, target: float
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
        for ws in (wx, wo):  # a frame left queued would keep every later one off the shortcut
            while len(ws.recv_messages.frames):
                await ws.recv()
        games.append(Game(wx, wo, room, cells, random.Random(rng.random())))
    gc.collect()
    gc.freeze()  # the clients' own collection pauses would show as server latency
    gc.set_threshold(20_000, 50, 100)
    for g in games:
        g.start()
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
        server0, client0 = cpu_seconds(pid), own_cpu_seconds()
        await asyncio.sleep(seconds)
        elapsed = time.perf_counter() - t0
        moves = sum(g.moves for g in games) - start_moves
        server_cpu, client_cpu = cpu_seconds(pid) - server0, own_cpu_seconds() - client0
        latencies = [x for g in games for x in g.latencies]
        phases.append(Phase(moves / elapsed, latencies, server_cpu / moves, client_cpu / moves))
    for g in games:
        g.stopped = True
    failures = [g.failure for g in games if g.failure is not None]
    if failures:
        raise RuntimeError(f"{len(failures)} games were refused a move, e.g. {failures[0]}")
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return phases[0], phases[1]


async def echo(url: str, pid: int, connections: int, seconds: float) -> Phase:
    """Round trips/s of closed-loop echoes, one in flight per connection, by the same clients."""
    sockets = await open_many(url, connections)
    frame = json.dumps({"type": "move", "room": "abcdef12", "cell": 112, "ref": None})
    counts = [0] * len(sockets)
    sent = [0.0] * len(sockets)
    latencies: list[float] = []
    stopped = False

    def send(i: int) -> None:
        sent[i] = time.perf_counter()
        sockets[i].send_now(frame)

    def echoed(i: int, _text: str) -> None:
        latencies.append(time.perf_counter() - sent[i])
        counts[i] += 1
        if not stopped:
            send(i)

    for i, ws in enumerate(sockets):
        ws.on_text = lambda text, i=i: echoed(i, text)
        send(i)
    await asyncio.sleep(1.0)
    base = sum(counts)
    latencies.clear()
    t0 = time.perf_counter()
    server0, client0 = cpu_seconds(pid), own_cpu_seconds()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - t0
    trips = sum(counts) - base
    server_cpu, client_cpu = cpu_seconds(pid) - server0, own_cpu_seconds() - client0
    measured = list(latencies)
    stopped = True
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return Phase(trips / elapsed, measured, server_cpu / trips, client_cpu / trips)


async def idle_memory(url: str, pid: int, count: int) -> float:
    before = rss_kib(pid)
    sockets = await open_many(url, count)
    await asyncio.gather(*(hello(ws, f"idle{i}") for i, ws in enumerate(sockets)))
    await asyncio.sleep(1.0)
    after = rss_kib(pid)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return (after - before) * 1024 / count


def pct(values: list[float], q: int) -> float:
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
            flat, paced = await load(
                url, proc.pid, args.connections, args.seconds, args.variant, cells, args.target
            )
            rate = flat.rate
            loops = f"server loop {'uvloop' if args.uvloop else 'asyncio'}, clients {client_loop()}"
            print(f"server: {args.connections} connections, {args.variant}, WAL {args.sync}; {loops}")
            print(f"moves/s (flat out, one move in flight per game): {rate:.0f}")
            print(f"move-to-broadcast p50 (flat out): {pct(flat.latencies, 50) * 1000:.1f} ms")
            print(f"move-to-broadcast p99 (flat out): {pct(flat.latencies, 99) * 1000:.1f} ms")
            print(f"server CPU per move (flat out): {flat.server_cpu * 1e6:.0f} us")
            print(f"load-client CPU per move (flat out): {flat.client_cpu * 1e6:.0f} us")
            print(f"moves/s (paced at {args.target:.0f}): {paced.rate:.0f}")
            print(f"move-to-broadcast p50 (paced): {pct(paced.latencies, 50) * 1000:.1f} ms")
            print(f"move-to-broadcast p99 (paced): {pct(paced.latencies, 99) * 1000:.1f} ms")
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
            base = await echo(f"ws://127.0.0.1:{port}", echo_proc.pid, args.connections, args.seconds)
        finally:
            echo_proc.kill()
            echo_proc.wait()
        print(f"baseline echo round trips/s ({args.connections} connections): {base.rate:.0f}")
        print(f"baseline echo round trip p50: {pct(base.latencies, 50) * 1000:.1f} ms")
        print(f"baseline echo round trip p99: {pct(base.latencies, 99) * 1000:.1f} ms")
        print(f"baseline echo server CPU per round trip: {base.server_cpu * 1e6:.0f} us")
        print(f"baseline echo client CPU per round trip: {base.client_cpu * 1e6:.0f} us")
        print(f"ratio moves/s / echo round trips/s: {rate / base.rate:.2f}")
        print(
            f"ratio server CPU a move / echo server CPU a round trip: {flat.server_cpu / base.server_cpu:.2f}"
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
