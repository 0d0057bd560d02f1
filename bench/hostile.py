"""Honest move latency while one address floods the server, beside the same game with no
flood, in one run against a real `ttt serve` (loopback only, bounded in time).

    .venv/bin/python bench/hostile.py [--seconds 8] [--flooders 60]

Prints one line a figure: p50/p99/max of an honest move's round trip (move -> ok) with no
attack (the baseline), then during a pipelined ping flood from ``--flooders`` connections
of one address, and how many flooders the server cut off.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect

TTT = [sys.executable, "-m", "protocol.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def hello(url: str, name: str, source: str) -> ClientConnection:
    ws = await connect(url, compression=None, local_addr=(source, 0), max_size=None)
    await ws.send(json.dumps({"type": "hello", "name": name, "ref": "h"}))
    while json.loads(await ws.recv()).get("ref") != "h":
        pass
    return ws


async def reply(ws: ClientConnection, ref: str) -> dict[str, object]:
    while True:
        frame = json.loads(await ws.recv())
        if frame.get("ref") == ref:
            return frame  # type: ignore[no-any-return]


async def honest(url: str, seconds: float, tag: str) -> list[float]:
    """Round trips (ms) of moves of games played back to back at an honest pace."""
    x, o = await hello(url, f"{tag}x", "127.0.0.2"), await hello(url, f"{tag}o", "127.0.0.2")
    times: list[float] = []
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        await x.send(json.dumps({"type": "create_room", "seat": "x", "ref": f"c{n}"}))
        room = (await reply(x, f"c{n}"))["room"]
        await o.send(json.dumps({"type": "join", "room": room, "ref": f"j{n}"}))
        await reply(o, f"j{n}")
        for ply, cell in enumerate([0, 3, 1, 4, 2]):
            ws = x if ply % 2 == 0 else o
            started = time.perf_counter()
            await ws.send(json.dumps({"type": "move", "room": room, "cell": cell, "ref": f"m{n}.{ply}"}))
            await reply(ws, f"m{n}.{ply}")
            times.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.06)
        for ws in (x, o):
            await ws.send(json.dumps({"type": "leave", "room": room, "ref": f"l{n}"}))
            await reply(ws, f"l{n}")
        n += 1
    await x.close()
    await o.close()
    return times


async def flooder(url: str, name: str, stop: asyncio.Event) -> bool:
    """Pipelined pings flat out; True when the server closed the connection."""
    try:
        ws = await hello(url, name, "127.0.0.1")
        ping = json.dumps({"type": "ping", "ref": "p"})
        while not stop.is_set():
            for _ in range(200):
                await ws.send(ping)
            await asyncio.sleep(0)
        await ws.close()
    except Exception:
        return True
    return False


def line(label: str, times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"{label}: moves {len(times)}, p50 {statistics.median(times):.1f} ms, p99 {p99:.1f} ms, "
        f"max {ordered[-1]:.1f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--flooders", type=int, default=60)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [*TTT, "serve", "--port", str(port), "--db", str(Path(tmp) / "a.db"), "--house-bots", "none",
             "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            url = f"ws://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    await asyncio.sleep(0.1)
            print(line("baseline (no attack)", await honest(url, args.seconds, "a")))
            stop = asyncio.Event()
            floods = [asyncio.create_task(flooder(url, f"f{i}", stop)) for i in range(args.flooders)]
            times = await honest(url, args.seconds, "b")
            stop.set()
            cut = sum(await asyncio.gather(*floods))
            print(line(f"during a ping flood from {args.flooders} connections of one address", times))
            print(f"flooders cut off by the server: {cut} of {args.flooders}")
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
