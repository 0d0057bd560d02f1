"""What an open connection keeps: nothing of its HTTP upgrade once it is open."""

from __future__ import annotations

from pathlib import Path

from server_harness import player, running_server

from server.connection import OPENED, ArenaConnection


async def test_an_open_connection_lets_its_handshake_go(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        client = await player(server, "alice")
        try:
            (conn,) = server.conns.values()
            assert isinstance(conn.ws, ArenaConnection)
            assert conn.ws.request is OPENED and not OPENED.headers and conn.ws.response is None
            assert conn.ws.remote_address is not None  # what the server reads of it is the socket's
        finally:
            await client.close()
