"""Storage figures (issue 13, items 7 and 8), each beside its baseline measured in the same run.

1. Looking a name up among N players: the old query (``name = ? COLLATE NOCASE``, which
   no index serves: SCAN players) against the new one (``name_key = ?``, the unique index).
2. Ping round trips to a real server (node mode: names are read from the shared store)
   with the database free, then while another process holds its write lock, a move
   waits to be stored and a new player's hello is being decided.

Run: ``python bench/storage.py [--players 200000] [--pings 200]``
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from protocol import messages as m
from protocol.client import ArenaClient, connect
from server.app import ArenaServer
from server.config import ServerConfig
from server.store import Store, name_key

LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
"""


def lookups(folder: Path, players: int, tries: int = 200) -> None:
    path = str(folder / "names.db")
    Store(path).close()
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO players VALUES (?,?,?,?,?,?)",
            ((f"p{i}", f"Name{i}", "human", f"h{i}", 0.0, name_key(f"Name{i}")) for i in range(players)),
        )
    db = sqlite3.connect(path)
    for label, sql, key in (
        ("old: name = ? COLLATE NOCASE", "SELECT id FROM players WHERE name = ? COLLATE NOCASE", str.upper),
        ("new: name_key = ? (index)   ", "SELECT id FROM players WHERE name_key = ?", name_key),
    ):
        times = []
        for i in range(tries):
            name = key(f"Name{(i * 7919) % players}")
            started = time.perf_counter()
            assert db.execute(sql, (name,)).fetchone() is not None
            times.append(time.perf_counter() - started)
        print(f"  {label}: p50 {statistics.median(times) * 1e3:8.3f} ms   max {max(times) * 1e3:8.3f} ms")
    db.close()


async def pings(client: ArenaClient, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        assert isinstance(await client.request(m.Ping(), timeout=60), m.Pong)
        times.append(time.perf_counter() - started)
    return times


def show(label: str, times: list[float]) -> None:
    times = sorted(times)
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    p50 = statistics.median(times)
    print(f"  {label}: p50 {p50 * 1e3:7.2f} ms   p99 {p99 * 1e3:7.2f} ms   n={len(times)}")


async def locked(folder: Path, count: int) -> None:
    db = str(folder / "arena.db")
    config = ServerConfig(
        host="127.0.0.1", port=0, db=db, node_id="a", ping_interval=None, rate=1e6, burst=1_000_000
    )
    server = ArenaServer(config)
    await server.start()
    url = f"ws://127.0.0.1:{server.port}"
    try:
        x, o = await connect(url, "alice"), await connect(url, "bob")
        joined = await x.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined)
        await o.request(m.Join(room=joined.room))
        await x.expect(m.GameStarted, room=joined.room)
        show("database free        ", await pings(o, count))
        locker = subprocess.Popen(
            [sys.executable, "-c", LOCKER, db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert locker.stdout is not None and locker.stdin is not None
        assert locker.stdout.readline().strip() == "locked"
        move = asyncio.create_task(x.request(m.Move(room=joined.room, cell=0), timeout=60))
        newcomer = asyncio.create_task(connect(url, "carol", timeout=60))
        await asyncio.sleep(0.1)
        held = await pings(o, count)
        still = not move.done()
        locker.stdin.write("go\n")
        locker.stdin.flush()
        locker.wait(10)
        show("lock held elsewhere  ", held)
        print(f"  the move was still waiting for the store after those pings: {still}")
        await move
        await (await newcomer).close()
        await x.close()
        await o.close()
    finally:
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--players", type=int, default=200_000)
    parser.add_argument("--pings", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"name lookup among {args.players} players (old query = baseline):")
        lookups(Path(tmp), args.players)
        print("ping round trips to a node-mode server (database free = baseline):")
        asyncio.run(locked(Path(tmp), args.pings))


if __name__ == "__main__":
    main()
