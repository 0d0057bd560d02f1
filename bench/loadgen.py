"""The load clients of `bench/load.py`: connections, games of random moves, echo round
trips, and the measurements of a server process (CPU per thread, memory, ``/metrics``).

The clients share this machine's two cores with the server they load: each
microsecond they spend is one the server does not get, so they do as little as a
client can (each frame is handled by a callback as it is parsed, see `LoadClient`).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from server.connection import TextShortcut


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


def thread_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of process ``pid``'s main thread (its event loop) and of its other
    threads (the SQLite writer, checkpoints), summed over the threads alive now."""
    tick = os.sysconf("SC_CLK_TCK")
    main = other = 0.0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0, 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        seconds = (int(fields[11]) + int(fields[12])) / tick
        if int(tid) == pid:
            main += seconds
        else:
            other += seconds
    return main, other


def scrape(url: str | None) -> dict[str, float]:
    """The arena's ``/metrics`` counters (empty for a server without them)."""
    if url is None:
        return {}
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
    except OSError:
        return {}
    figures = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, _, value = line.partition(" ")
            figures[name] = float(value)
    return figures


def scrape_all(urls: list[str]) -> dict[str, float]:
    """The counters of several nodes, added up."""
    total: dict[str, float] = {}
    for url in urls:
        for name, value in scrape(url).items():
            total[name] = total.get(name, 0.0) + value
    return total


@dataclass
class Phase:
    """One phase's figures: moves/s, latencies, and CPU seconds per move of each side."""

    rate: float
    latencies: list[float]
    server_cpu: float
    client_cpu: float
    #: Per move: CPU of the server's event-loop thread and of its other threads.
    loop_cpu: float = 0.0
    thread_cpu: float = 0.0
    #: Per move, from ``/metrics``: store transactions, operations, commit seconds, frames in.
    counters: dict[str, float] = field(default_factory=dict)


class Window:
    """Counts what the server processes (one, or every node) and the clients spend
    between `__init__` and `end`."""

    COUNTERS = (
        ("ttt_store_batches_total", "store transactions"),
        ("ttt_store_writes_total", "store operations"),
        ("ttt_store_commit_seconds_sum", "commit seconds"),
        ("ttt_frames_total", "frames received"),
    )

    def __init__(self, pid: int | list[int], metrics: str | list[str] | None) -> None:
        self.pids = pid if isinstance(pid, list) else [pid]
        self.metrics = metrics if isinstance(metrics, list) else [] if metrics is None else [metrics]
        self.figures = scrape_all(self.metrics)
        self.t0 = time.perf_counter()
        self.server = self._cpu()
        self.threads = self._threads()
        self.client = own_cpu_seconds()

    def _cpu(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.pids)

    def _threads(self) -> tuple[float, float]:
        each = [thread_cpu(pid) for pid in self.pids]
        return sum(t[0] for t in each), sum(t[1] for t in each)

    def end(self, count: int, latencies: list[float]) -> Phase:
        elapsed = time.perf_counter() - self.t0
        server, client, threads = self._cpu(), own_cpu_seconds(), self._threads()
        figures = scrape_all(self.metrics)
        count = max(count, 1)
        counters = {
            label: (figures[key] - self.figures.get(key, 0.0)) / count
            for key, label in self.COUNTERS
            if key in figures
        }
        return Phase(
            count / elapsed,
            latencies,
            (server - self.server) / count,
            (client - self.client) / count,
            (threads[0] - self.threads[0]) / count,
            (threads[1] - self.threads[1]) / count,
            counters,
        )


async def play(
    url: str | list[str],
    pid: int | list[int],
    connections: int,
    variant: str,
    cells: int,
    rates: list[tuple[float, float]],
    metrics: str | list[str] | None = None,
    names: str = "b",
) -> list[Phase]:
    """Moves/s and latencies at each (moves/s in all, seconds) of ``rates`` (0: flat out).

    With several ``url`` (nodes of one arena), the games are dealt out to the nodes in
    turn, both players of a game on the same node (so no game is redirected); players
    are called ``names`` + a number (unique in a database several runs share)."""
    urls = url if isinstance(url, list) else [url]
    pairs = connections // 2
    share = [pairs // len(urls) + (1 if n < pairs % len(urls) else 0) for n in range(len(urls))]
    opened = await asyncio.gather(*(open_many(u, 2 * k) for u, k in zip(urls, share, strict=True)))
    # game g's two players on node g % len(urls), in the order the games are made
    sockets = []
    for g in range(pairs):
        node = opened[g % len(urls)]
        sockets += [node.pop(0), node.pop(0)]
    await asyncio.gather(*(hello(ws, f"{names}{i}") for i, ws in enumerate(sockets)))
    rng = random.Random(1)
    games = []
    for i in range(0, connections - 1, 2):
        wx, wo = sockets[i], sockets[i + 1]
        await wx.send(json.dumps({"type": "create_room", "variant": variant, "seat": "x", "rated": False}))
        room = (await until(wx, ("joined",)))["room"]
        await wo.send(json.dumps({"type": "join", "room": room}))
        await until(wo, ("joined",))  # its snapshot holds the game: no game_started for the joiner
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
    previous = -1.0
    for rate, length in rates:
        if rate != previous:
            for g in games:
                g.interval = len(games) / rate if rate else 0.0
                g.restart = True
            await asyncio.sleep(1.0)  # settle
            previous = rate
        start_moves = sum(g.moves for g in games)
        for g in games:
            g.latencies.clear()
        window = Window(pid, metrics)
        await asyncio.sleep(length)
        moves = sum(g.moves for g in games) - start_moves
        phases.append(window.end(moves, [x for g in games for x in g.latencies]))
    for g in games:
        g.stopped = True
    failures = [g.failure for g in games if g.failure is not None]
    if failures:
        raise RuntimeError(f"{len(failures)} games were refused a move, e.g. {failures[0]}")
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return phases


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
    window = Window(pid, None)
    await asyncio.sleep(seconds)
    phase = window.end(sum(counts) - base, list(latencies))
    stopped = True
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return phase


async def idle_memory(url: str, pid: int, count: int, names: str = "idle") -> float:
    """Bytes of resident memory the server gains per connection open with hello said."""
    before = rss_kib(pid)
    sockets = await open_many(url, count)
    await asyncio.gather(*(hello(ws, f"{names}{i}") for i, ws in enumerate(sockets)))
    await asyncio.sleep(1.0)
    after = rss_kib(pid)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return (after - before) * 1024 / count


def pct(values: list[float], q: int) -> float:
    if not values:
        return float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]
