"""`server.connection.ArenaConnection`: after hello, whole text frames are handled as they
are parsed; frames written together, fragmented messages and binary frames keep their
order and their answers. `text_frames` writes websockets' own bytes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from server_harness import running_server, url_of
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed
from websockets.frames import Opcode
from websockets.protocol import Protocol, State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from server.connection import ArenaConnection, text_frames


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


async def _hello(ws: ClientConnection, name: str) -> None:
    await ws.send(json.dumps({"type": "hello", "name": name, "ref": "h"}))
    assert (await _replies(ws, 1))[0]["type"] == "welcome"


async def test_the_server_pings_every_connection_and_keeps_those_that_answer(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, ping_interval=0.1, ping_timeout=0.5) as server,
        ws_connect(url_of(server), compression=None, ping_interval=None) as ws,
    ):
        await _hello(ws, "steady")
        (conn,) = server.conns.values()
        for _ in range(100):  # a pong records the round trip on the server's side
            if conn.ws.latency > 0:
                break
            await asyncio.sleep(0.05)
        assert conn.ws.latency > 0, "no ping was answered"
        await asyncio.sleep(1.0)  # ten intervals, each answered
        await ws.send(json.dumps({"type": "ping", "ref": "still"}))
        assert (await _replies(ws, 1))[0]["ref"] == "still"
        assert conn.ws.keepalive_task is None, "one task pings them all, not a task per connection"


async def test_a_connection_that_does_not_answer_pings_is_closed_1011(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, ping_interval=0.1, ping_timeout=0.3) as server,
        ws_connect(url_of(server), compression=None, ping_interval=None) as ws,
        ws_connect(url_of(server), compression=None, ping_interval=None) as other,
    ):
        await _hello(ws, "silent")
        await _hello(other, "awake")
        ws.transport.pause_reading()  # its pings wait unread, unanswered
        (silent,) = [c.ws for c in server.conns.values() if c.player and c.player.name == "silent"]
        for _ in range(100):
            if silent.protocol.close_sent is not None:
                break
            await asyncio.sleep(0.05)
        assert silent.protocol.close_sent is not None and silent.protocol.close_sent.code == 1011
        ws.transport.resume_reading()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
        assert ws.close_code == 1011 and ws.close_reason == "keepalive ping timeout"
        await other.send(json.dumps({"type": "ping", "ref": "fine"}))  # the other one answered
        assert (await _replies(other, 1))[0]["ref"] == "fine"


def test_the_frame_queue_keeps_a_deques_order() -> None:
    from collections import deque

    from websockets.frames import Frame, Opcode

    from server.connection import _FrameQueue

    a, b, c, d = (Frame(Opcode.TEXT, bytes([i])) for i in range(4))
    queue, model = _FrameQueue([d]), deque([d])
    for q in (queue, model):
        q.extendleft(reversed([a, b, c]))  # what websockets' put_back does
        q.append(a)
    assert list(queue) == list(model) == [a, b, c, d, a]
    assert [queue.popleft() for _ in range(5)] == [model.popleft() for _ in range(5)]


def _open(protocol: Protocol) -> Protocol:
    """``protocol`` as after the opening handshake: open, parsing frames."""
    protocol.state = State.OPEN
    protocol.parser = Protocol.parse(protocol)
    next(protocol.parser)
    return protocol


TEXTS = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
#: Payloads around each length the header encodes differently (7 bits, 16 bits, 64 bits).
SIZES = st.sampled_from([0, 1, 125, 126, 127, 65535, 65536, 70000])


@settings(max_examples=60, deadline=None)
@given(short=st.lists(TEXTS, max_size=4), sizes=st.lists(SIZES, max_size=3), first=st.booleans())
def test_text_frames_are_websockets_own_bytes(short: list[str], sizes: list[int], first: bool) -> None:
    """The server's shortcut writes what ``send_text`` then ``data_to_send`` would, after
    what the protocol had yet to send (a pong here), and a client reads the texts back."""
    sized = ["é" * (n // 2) + "x" * (n % 2) for n in sizes]  # n bytes of UTF-8
    texts = sized + short if first else short + sized
    shortcut, websockets_own = _open(ServerProtocol()), _open(ServerProtocol())
    for protocol in (shortcut, websockets_own):
        protocol.receive_data(b"\x89\x80abcd")  # a masked, empty ping from the client: a pong waits
        assert protocol.writes
    written = b"".join(text_frames(shortcut, texts))
    for text in texts:
        websockets_own.send_text(text.encode())
    assert written == b"".join(websockets_own.data_to_send())
    client = _open(ClientProtocol(parse_uri("ws://localhost/")))
    client.receive_data(written)
    got = [frame for frame in client.events_received() if frame.opcode is Opcode.TEXT]
    assert [frame.data.decode() for frame in got] == texts


def test_text_frames_leave_other_cases_to_websockets() -> None:
    """A client's frames are masked (and a fragmented message or an extension would need
    websockets too): there the texts go through ``send_text``, and still arrive."""
    client = _open(ClientProtocol(parse_uri("ws://localhost/")))
    server = _open(ServerProtocol())
    server.receive_data(b"".join(text_frames(client, ["hello", "é" * 200])))
    assert [frame.data.decode() for frame in server.events_received()] == ["hello", "é" * 200]
