"""What an open connection keeps: nothing of its HTTP upgrade once it is open, and, idle
after its hello, a few KiB of Python objects in all."""

from __future__ import annotations

import asyncio
import gc
import sys
import tracemalloc
from pathlib import Path

from server_harness import player, running_server, url_of
from websockets.protocol import Protocol

from server.connection import OPENED, ArenaConnection

#: Holds ``argv[2]`` connections to ``argv[1]``, each with its hello said, until stdin closes.
IDLE_CLIENTS = """
import asyncio, json, sys
from websockets.asyncio.client import connect

async def main(url, count):
    sockets = []
    for i in range(count):
        ws = await connect(url, compression=None, ping_interval=None)
        await ws.send(json.dumps({"type": "hello", "name": f"idle{i}", "kind": "bot"}))
        assert json.loads(await ws.recv())["type"] == "welcome"
        sockets.append(ws)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""

#: Python memory an idle connection may hold on the server (its player included), in bytes.
IDLE_BUDGET = 9 * 1024


async def test_an_open_connection_lets_its_handshake_go(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        client = await player(server, "alice")
        try:
            (conn,) = server.conns.values()
            assert isinstance(conn.ws, ArenaConnection)
            assert conn.ws.request is OPENED and not OPENED.headers and conn.ws.response is None
            assert conn.ws.remote_address is not None  # what the server reads of it is the socket's
            # nor does the protocol's parser, whose first generator held the request in a local
            assert conn.ws.protocol.parser.gi_code is Protocol.parse.__code__  # type: ignore[attr-defined]
        finally:
            await client.close()


async def test_an_idle_connection_holds_little_memory(tmp_path: Path) -> None:
    """Python objects the server holds per connection open with hello said (keepalive on),
    traced while another process holds the connections."""
    count = 300
    limits = {"signup_burst": 10_000, "max_conns_per_ip": 10_000, "ip_burst": 10_000, "hello_timeout": 60.0}
    async with running_server(tmp_path, ping_interval=20.0, **limits) as server:
        tracemalloc.start()
        try:
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            clients = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                IDLE_CLIENTS,
                url_of(server),
                str(count),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            assert clients.stdout is not None and clients.stdin is not None
            try:
                assert await asyncio.wait_for(clients.stdout.readline(), 120) == b"ready\n"
                await asyncio.sleep(0.3)
                gc.collect()
                per_connection = (tracemalloc.get_traced_memory()[0] - before) / count
                assert len(server.conns) == count
            finally:
                clients.stdin.close()
                await clients.wait()
        finally:
            tracemalloc.stop()
    assert per_connection <= IDLE_BUDGET, f"{per_connection:.0f} bytes per idle connection"
