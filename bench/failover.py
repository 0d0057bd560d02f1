"""Failover time: ``kill -9`` of a node hosting games -> every player resumed on the node
that took its games over, over several kills (p50 and p99), against two baselines from the
same run: the lease itself (no failover can be faster than the dead node's lease running
out) and the same players reconnecting and resuming on a live node (the cost of the
reconnects alone).

Run: .venv/bin/python bench/failover.py [--kills 10] [--games 20] [--lease 4] [--renew 1] [--postgres]

Each kill: two fresh ``ttt serve --node-id`` processes (a and b) on a new shared SQLite
file (with ``--postgres``: a new database on a PostgreSQL started for the run in a
temporary folder as `tests/pg_harness.py` does, fsync and synchronous_commit on);
``--games`` games on a with one acknowledged move each; every player reconnects to a
and resumes (the baseline); a is killed with SIGKILL and every player reconnects to b
(retrying every 50 ms while a's lease runs: b answers ``room_moving`` or sends them to the
dead a) until b has resumed them. Also printed: kill -> b owns every room (read from the
database every 20 ms), and what the fence costs on the move path: batches of moves written
by a clustered node's store (each transaction first checks that the node owns the rooms)
against the same batches written by a lone node's store (no check), in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from cluster_nodes import Node, query, resume_via
from server_harness import seated_pair

from protocol import messages as m
from protocol.client import ArenaClient
from server.ops import MoveSaved, RoomSaved
from server.storage import open_store
from server.store import Store

#: Seconds one kill may take before the bench gives up (it never hangs).
TIMEOUT = 120.0


def quantile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def all_owned_by(db: str, node: str, rooms: set[str]) -> bool:
    owned = {r for (r,) in query(db, "SELECT room FROM room_owners WHERE node = ?", (node,))}
    return rooms <= owned


async def watch_owners(db: str, rooms: set[str], started: float) -> float:
    while not await asyncio.to_thread(all_owned_by, db, "b", rooms):
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def one_kill(db: str, games: int, lease: tuple[str, ...]) -> tuple[float, float, float]:
    """(baseline resume on a live node, kill -> b owns every room, kill -> all resumed on b),
    two nodes on the fresh database ``db`` (a SQLite file or a PostgreSQL URL)."""
    a = await Node(db, "a", 0, *lease).start()
    b = await Node(db, "b", 0, *lease).start()
    clients: list[tuple[ArenaClient, str]] = []
    try:
        for i in range(games):
            x, o, room, _ = await seated_pair(a.url, f"x{i}", f"o{i}")
            await x.request(m.Move(room=room, cell=4))
            clients += [(x, room), (o, room)]
        begin = time.monotonic()
        await asyncio.gather(*(resume_via(c, a.url, room, TIMEOUT, 0.05) for c, room in clients))
        baseline = time.monotonic() - begin
        rooms = {room for _, room in clients}
        a.kill()
        killed = time.monotonic()
        owned = asyncio.create_task(watch_owners(db, rooms, killed))
        await asyncio.gather(*(resume_via(c, b.url, room, TIMEOUT, 0.05) for c, room in clients))
        failover = time.monotonic() - killed
        assert all(c.url == b.url for c, _ in clients)
        return baseline, await owned, failover
    finally:
        for c, _ in clients:
            with contextlib.suppress(Exception):
                await c.close()
        await a.stop()
        await b.stop()


def fence_cost(dbs: list[str], batches: int = 2000, per_batch: int = 10) -> tuple[float, float]:
    """Seconds per batch of ``per_batch`` moves (of as many rooms): (lone node, clustered
    node), each on a fresh database of ``dbs``."""
    times = []
    for clustered, db in zip((False, True), dbs, strict=True):
        store: Store = open_store(db, "NORMAL")
        if clustered:
            store.lease_register("a", "ws://a", 2**62)
        rooms = [f"a-{i}" for i in range(per_batch)]
        store.write(
            [RoomSaved(r, "classic", "{}", False, False, None, None, (), "x", "o", 0, False) for r in rooms]
        )
        started = time.perf_counter()
        for n in range(batches):
            store.write([MoveSaved(f"{r}.1", n, 0, None, None, r, n + 1) for r in rooms])
        times.append((time.perf_counter() - started) / batches)
        store.close()
    return times[0], times[1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--games", type=int, default=20, help="games on the node killed (default 20)")
    parser.add_argument("--lease", type=float, default=4.0, help="ttt serve --lease (default 4)")
    parser.add_argument("--renew", type=float, default=1.0, help="ttt serve --lease-renew (default 1)")
    parser.add_argument(
        "--postgres", action="store_true", help="the nodes share a PostgreSQL started for the run"
    )
    args = parser.parse_args()
    pg = None
    if args.postgres:
        from pg_harness import PgCluster

        pg = PgCluster(durable=True)
        pg.start()
    try:
        await measure(args, pg)
    finally:
        if pg is not None:
            pg.destroy()


async def measure(args: argparse.Namespace, pg: Any) -> None:
    lease = ("--lease", str(args.lease), "--lease-renew", str(args.renew))
    players = 2 * args.games
    store = "PostgreSQL (fsync on, same host)" if pg is not None else "one SQLite file"
    print(f"failover: {args.kills} kills, {args.games} games ({players} players), lease {args.lease:g} s, "
          f"renewed every {args.renew:g} s, nodes on {store}")  # fmt: skip
    rows = []
    for kill in range(args.kills):
        with tempfile.TemporaryDirectory(prefix="ttt-failover-") as tmp:
            db = pg.create_db() if pg is not None else str(Path(tmp) / "arena.db")
            base, owned, failover = await asyncio.wait_for(one_kill(db, args.games, lease), TIMEOUT)
        rows.append((base, owned, failover))
        print(f"kill {kill + 1}: resume on a live node {base:.3f} s, b owns every room {owned:.3f} s, "
              f"all players resumed on b {failover:.3f} s")  # fmt: skip
    for name, i in (("resume on a live node (baseline)", 0), ("kill -> b owns every room", 1),
                    ("kill -> all players resumed on b", 2)):  # fmt: skip
        values = [row[i] for row in rows]
        print(f"{name}: p50 {quantile(values, 50):.3f} s, p99 {quantile(values, 99):.3f} s")
    with tempfile.TemporaryDirectory(prefix="ttt-fence-") as tmp:
        dbs = [pg.create_db() for _ in range(2)] if pg is not None else [f"{tmp}/lone.db", f"{tmp}/fenced.db"]
        lone, fenced = fence_cost(dbs)
    how = "PostgreSQL" if pg is not None else "SQLite, sync NORMAL"
    print(f"batch of 10 moves ({how}): lone node {lone * 1e6:.0f} us, clustered (fenced) "
          f"{fenced * 1e6:.0f} us, ratio {fenced / lone:.2f}")  # fmt: skip
    fail = [row[2] for row in rows]
    print(f"failover p50 / lease: {quantile(fail, 50) / args.lease:.2f}; "
          f"failover p50 - lease: {quantile(fail, 50) - args.lease:.3f} s")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
