"""Helpers for the server tests: a real `ArenaServer` on a free port with a temporary
database, and real `ArenaClient` players connected to it."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from protocol import messages as m
from protocol.client import ArenaClient, connect
from server.app import ArenaServer
from server.config import ServerConfig

#: Short times so disconnects, aborts and flags happen within a second.
FAST: dict[str, Any] = {"grace": 0.6, "first_move": 5.0, "ping_interval": None, "hello_timeout": 1.0}


@asynccontextmanager
async def running_server(tmp_path: Path, **overrides: Any) -> AsyncIterator[ArenaServer]:
    settings = {"host": "127.0.0.1", "port": 0, "db": str(tmp_path / "arena.db"), **FAST, **overrides}
    server = ArenaServer(ServerConfig(**settings))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def url_of(server: ArenaServer) -> str:
    return f"ws://127.0.0.1:{server.port}"


async def player(server: ArenaServer | str, name: str, kind: str = "human") -> ArenaClient:
    return await connect(server if isinstance(server, str) else url_of(server), name, kind, timeout=5)


async def seated_pair(
    server: ArenaServer | str, a: str = "alice", b: str = "bob", **room: Any
) -> tuple[ArenaClient, ArenaClient, str, m.GameStarted]:
    """Two players in a new room, ``a`` as X and ``b`` as O; returns them, the room and the start."""
    x = await player(server, a)
    o = await player(server, b)
    joined = await x.request(m.CreateRoom(seat="x", **room))
    assert isinstance(joined, m.Joined)
    await o.request(m.Join(room=joined.room))
    started = await x.expect(m.GameStarted, room=joined.room)
    return x, o, joined.room, started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
