"""`ttt serve --mqtt` as real processes: two nodes on one broker, a node killed with SIGKILL
(its last will takes its rooms out of the other lobby), no broker at start, a bad URL."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mosquitto import Broker, free_port, running_broker

from protocol import messages as m
from protocol.client import ArenaClient, connect

TTT = [sys.executable, "-m", "protocol.cli"]
NO_BOTS = ("--house-bots", "none")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path) as b:
        yield b


@asynccontextmanager
async def serve(url: str, node: str, db: Path) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """A ``ttt serve`` process on a free port; yields it and its WebSocket URL."""
    proc = await asyncio.create_subprocess_exec(
        *TTT, "serve", "--port", "0", "--node-id", node, "--mqtt", url, "--db", str(db),
        "--house-bots", "none",
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    try:
        while True:
            line = (await asyncio.wait_for(proc.stderr.readline(), 20)).decode()
            assert line, "ttt serve exited"
            if "serving on " in line:
                yield proc, line.split("serving on ")[1].split()[0]
                return
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def rooms_in_lobby(client: ArenaClient) -> set[str]:
    snapshot = await client.request(m.LobbySubscribe())
    assert isinstance(snapshot, m.LobbySnapshot)
    return {r.id for r in snapshot.rooms}


async def until_lobby(client: ArenaClient, predicate: Callable[[set[str]], bool]) -> None:
    deadline = time.monotonic() + 10
    while not predicate(await rooms_in_lobby(client)):
        assert time.monotonic() < deadline, "the lobby never showed it"
        await asyncio.sleep(0.05)


async def test_two_serve_processes_share_a_lobby_and_a_killed_node_leaves_it(
    broker: Broker, tmp_path: Path
) -> None:
    db = tmp_path / "arena.db"
    async with serve(broker.url, "a", db) as (node_a, url_a), serve(broker.url, "b", db) as (_, url_b):
        ann = await connect(url_a, "ann")
        carl = await connect(url_b, "carl")
        try:
            joined = await ann.request(m.CreateRoom(variant="4x4k4", seat="x"))
            assert isinstance(joined, m.Joined)
            await until_lobby(carl, lambda rooms: joined.room in rooms)
            os.kill(node_a.pid, signal.SIGKILL)  # no goodbye: the broker sends a's last will
            await until_lobby(carl, lambda rooms: joined.room not in rooms)
        finally:
            await carl.close()
            await ann.close()


async def test_serve_without_a_broker_plays_and_logs_the_outage_once(tmp_path: Path) -> None:
    url = f"mqtt://127.0.0.1:{free_port()}"
    async with serve(url, "solo", tmp_path / "solo.db") as (proc, ws_url):
        ann = await connect(ws_url, "ann")
        bob = await connect(ws_url, "bob")
        joined = await ann.request(m.CreateRoom(variant="classic", seat="x"))
        assert isinstance(joined, m.Joined)
        await bob.request(m.Join(room=joined.room))
        for ply, cell in enumerate([4, 1, 0, 2, 8]):
            assert isinstance(
                await (bob if ply % 2 else ann).request(m.Move(room=joined.room, cell=cell)), m.Ok
            )
        assert (await ann.expect(m.GameEnded, timeout=10)).outcome.result == "1-0"
        await ann.close()
        await bob.close()
        await asyncio.sleep(1.0)  # a few more reconnect attempts
        proc.send_signal(signal.SIGTERM)
        assert proc.stderr is not None
        log = (await asyncio.wait_for(proc.stderr.read(), 20)).decode()
    assert log.count("unreachable") == 1, log


def test_serve_refuses_a_bad_mqtt_url(tmp_path: Path) -> None:
    done = subprocess.run(
        [*TTT, "serve", "--port", "0", "--mqtt", "http://broker", "--db", str(tmp_path / "x.db"), *NO_BOTS],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "[bad_mqtt_url]" in done.stderr
