"""Helpers for tests with several real `ttt serve` nodes on one shared database (a SQLite
file, or a PostgreSQL URL: ``db`` is what ``--db`` takes): start a node, read the lease
tables, and bring a player back to its room wherever it is hosted now."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from websockets.exceptions import WebSocketException

from bots.tournament.runner import start_server
from protocol import messages as m
from protocol.client import ArenaClient, ConnectionLost, RemoteError
from server.storage import is_url

#: Short leases so a failover takes a couple of seconds; a long grace so nobody loses on time
#: while the test reconnects 100 players on a shared machine.
LEASE = ("--lease", "2", "--lease-renew", "0.5")
ROOMY = (
    "--max-conns-per-ip",
    "1000",
    "--signup-burst",
    "1000",
    "--ip-rate",
    "100000",
    "--ip-burst",
    "100000",
)


class Node:
    """One `ttt serve --node-id NAME` process."""

    def __init__(self, db: Path | str, name: str, port: int = 0, *extra: str) -> None:
        self.db, self.name, self.port, self.extra = db, name, port, extra
        self.process: asyncio.subprocess.Process | None = None
        self.url = ""

    async def start(self) -> Node:
        args = (
            "--node-id",
            self.name,
            "--grace",
            "120",
            "--log-level",
            "warning",
            *LEASE,
            *ROOMY,
            *self.extra,
        )
        self.process, self.url = await start_server(str(self.db), *args, port=self.port)
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def kill(self) -> None:
        """SIGKILL: no goodbye, no lease released, nothing flushed."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()

    async def stop(self) -> None:
        if self.process is not None:
            self.kill()
            await self.process.wait()
            self.process = None


class HostNode(Node):
    """`ttt serve --node-id NAME` run by ``prefix`` (``ip netns exec HOST``), listening on
    ``address``:``port`` and redirected to as ``ws://address:port``."""

    def __init__(self, db: str, name: str, prefix: list[str], address: str, port: int = 8765) -> None:
        super().__init__(db, name, port)
        self.prefix, self.address = prefix, address
        self._drain: asyncio.Task[None] | None = None

    async def start(self) -> HostNode:
        url = f"ws://{self.address}:{self.port}"
        self.process = await asyncio.create_subprocess_exec(
            *self.prefix, sys.executable, "-m", "protocol.cli", "serve",
            "--host", self.address, "--port", str(self.port), "--public-url", url,
            "--db", str(self.db), "--house-bots", "none", "--node-id", self.name,
            "--grace", "120", "--log-level", "warning", *LEASE, *ROOMY,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert self.process.stderr is not None
        lines = []
        async with asyncio.timeout(60):
            while True:
                line = (await self.process.stderr.readline()).decode(errors="replace")
                lines.append(line)
                assert line, f"node {self.name} did not start: {''.join(lines)}"
                if "serving on" in line:
                    break
        self._drain = asyncio.create_task(_drain(self.process.stderr))
        self.url = url
        return self

    async def stop(self) -> None:
        await super().stop()
        if self._drain is not None:
            self._drain.cancel()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


@contextlib.asynccontextmanager
async def nodes(db: Path | str, *names: str) -> AsyncIterator[dict[str, Node]]:
    started: dict[str, Node] = {}
    try:
        for name in names:
            started[name] = await Node(db, name).start()
        yield started
    finally:
        for node in started.values():
            await node.stop()


def query(db: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` (``?`` placeholders) on ``db``: a SQLite file or a PostgreSQL URL."""
    if is_url(str(db)):
        import psycopg

        from server.postgres import placeholders

        with psycopg.connect(str(db), autocommit=True) as conn:
            return [tuple(row) for row in conn.execute(placeholders(sql), params)]
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return [tuple(row) for row in conn.execute(sql, params)]


def owners(db: Path | str) -> dict[str, str]:
    """room -> the node that owns it, as the lease table says."""
    return {room: node for room, node in query(db, "SELECT room, node FROM room_owners")}


def epochs(db: Path | str) -> dict[str, int]:
    """node -> the epoch of its lease."""
    return {node: epoch for node, epoch in query(db, "SELECT node, epoch FROM leases")}


def moves_of(db: Path | str, room: str) -> list[int]:
    """The moves stored for the latest game of ``room``."""
    games = query(db, "SELECT id FROM games WHERE room = ? ORDER BY number DESC", (room,))
    if not games:
        return []
    return [c for (c,) in query(db, "SELECT cell FROM moves WHERE game = ? ORDER BY ply", (games[0][0],))]


async def until(predicate: Callable[[], bool], timeout: float = 30.0, what: str = "it") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        await asyncio.sleep(0.05)


async def resume_via(
    client: ArenaClient, url: str, room: str, timeout: float = 60.0, pause: float = 0.2
) -> m.Resumed:
    """Reconnect ``client`` to ``url`` and resume ``room``, following redirects, until its
    host answers (a dead host's lease has to run out first: until then the client is sent
    to the dead node, or told ``room_moving``, and tries again)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            resumed = await client.reconnect(url)
            if resumed.rooms.get(room) in ("replay", "snapshot"):
                return resumed
        except (OSError, ConnectionLost, RemoteError, TimeoutError, WebSocketException):
            pass  # as the client's Reconnector: a dying host may accept and then hang up
        assert time.monotonic() < deadline, f"{client.name} could not resume {room}"
        await asyncio.sleep(pause)
