"""`server.connection.ArenaConnection`: after hello, whole text frames are handled as they
are parsed; frames written together, fragmented messages and binary frames keep their
order and their answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from server_harness import running_server, url_of
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from server.connection import ArenaConnection


async def _replies(ws: ClientConnection, count: int) -> list[dict[str, Any]]:
    return [json.loads(await asyncio.wait_for(ws.recv(), 3)) for _ in range(count)]


def _write_together(ws: ClientConnection, frames: list[str]) -> None:
    """Several text frames in one transport write, so they reach the server in one read."""
    for frame in frames:
        ws.protocol.send_text(frame.encode())
    ws.transport.writelines(ws.protocol.data_to_send())


async def test_frames_written_together_are_answered_in_order(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, burst=100) as server,
        ws_connect(url_of(server), compression=None) as ws,
    ):
        # the hello and the requests behind it arrive in one read: some wait in the queue
        # while the hello is handled, later ones take the shortcut; the order must hold
        frames = [json.dumps({"type": "hello", "name": "quick", "ref": "h"})]
        frames += [json.dumps({"type": "ping", "ref": f"p{i}"}) for i in range(30)]
        _write_together(ws, frames)
        replies = await _replies(ws, 31)
        # the welcome waits for the new player to be stored; the pongs do not wait
        assert [r["type"] for r in replies].count("welcome") == 1
        assert [r["ref"] for r in replies if r["type"] == "pong"] == [f"p{i}" for i in range(30)]
        conns = [c.ws for c in server.conns.values()]
        assert len(conns) == 1 and isinstance(conns[0], ArenaConnection)
        assert conns[0].on_text is not None, "after hello, text frames take the shortcut"
        _write_together(ws, [json.dumps({"type": "ping", "ref": f"q{i}"}) for i in range(30)])
        assert [r.get("ref") for r in await _replies(ws, 30)] == [f"q{i}" for i in range(30)]


async def test_fragmented_and_binary_frames_still_take_the_queue(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server, ws_connect(url_of(server), compression=None) as ws:
        await ws.send(json.dumps({"type": "hello", "name": "pieces", "ref": "h"}))
        assert (await _replies(ws, 1))[0]["type"] == "welcome"
        ping = json.dumps({"type": "ping", "ref": "frag"})
        await ws.send([ping[:5], ping[5:12], ping[12:]])  # one message in three frames
        await ws.send(json.dumps({"type": "ping", "ref": "whole"}))
        await ws.send(b'{"type": "ping", "ref": "bin"}')
        await ws.send(json.dumps({"type": "ping", "ref": "after"}))
        replies = await _replies(ws, 4)
        assert [(r["type"], r.get("ref")) for r in replies[:2]] == [("pong", "frag"), ("pong", "whole")]
        assert (replies[2]["type"], replies[2]["code"]) == ("error", "binary_frame")
        assert (replies[3]["type"], replies[3]["ref"]) == ("pong", "after")
