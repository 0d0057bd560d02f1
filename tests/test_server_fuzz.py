"""A hypothesis fuzz of random and mutated frames against a real server (in a thread of its
own), while a game in another room goes on: every frame gets valid replies or a proper
close, and the other game ends exactly as played."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_harness import FAST
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from protocol import messages as m
from server.app import ArenaServer
from server.config import ServerConfig

TYPES = sorted(
    t.removeprefix("'").removesuffix("'") for t in m.CLIENT_ADAPTER.json_schema()["discriminator"]["mapping"]
)
VALID: list[dict[str, Any]] = [
    {"type": "hello", "name": "someone"},
    {"type": "move", "room": "abcd1234", "cell": 4},
    {"type": "create_room", "variant": "tactic-toe", "time_control": {"kind": "per_move", "move_ms": 1000}},
    {"type": "join", "room": "abcd1234", "seat": "x"},
    {"type": "spectate", "room": "abcd1234"},
    {"type": "resume", "rooms": {"abcd1234": 3}},
    {"type": "challenge", "opponent": "side-x", "variant": "classic"},
    {"type": "arrange_game", "x": "side-x", "o": "side-o", "variant": "classic", "opening": [4]},
    {"type": "get_leaderboard", "variant": "classic", "limit": 5},
    {"type": "rematch", "room": "abcd1234"},
    {"type": "lobby_subscribe"},
]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    frame = dict(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["replace", "delete", "add"])) if frame else "add"
        key = draw(st.sampled_from(sorted(frame))) if frame else ""
        if how == "replace":
            frame[key] = draw(json_values)
        elif how == "delete":
            frame.pop(key, None)
        if how == "add":
            frame[draw(st.text(max_size=6))] = draw(json_values)
    return json.dumps(frame)


frames = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=64),
    mutated(),
    st.builds(
        lambda t, rest: json.dumps({"type": t, **rest}),
        st.sampled_from(TYPES),
        st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    ),
    st.just("x" * 5000),  # over the limit: refused with frame_too_large
    st.just("x" * 20_000),  # far over it: closed (1009) before it is read
    st.just("[" * 1500 + "]" * 1500),
)


class Arena:
    """A server running in a background event loop."""

    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        config = ServerConfig(
            port=0, db=str(tmp / "fuzz.db"), rate=1e6, burst=10**6, max_bad_frames=10**6, **FAST
        )
        self.server = ArenaServer(config)
        self.run(self.server.start())
        self.url = f"ws://127.0.0.1:{self.server.port}"

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def close(self) -> None:
        self.run(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[Arena]:
    arena = Arena(tmp_path)
    yield arena
    arena.close()


def request(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    """Send, and read until the reply with this ref (events on the way are skipped)."""
    ws.send(json.dumps(message))
    while True:
        raw = ws.recv(timeout=5)
        reply: dict[str, Any] = json.loads(raw)
        if reply.get("ref") == message.get("ref"):
            return reply


def test_fuzzed_frames_leave_the_server_and_other_games_unharmed(arena: Arena) -> None:
    with contextlib.ExitStack() as stack:
        _fuzz(arena, stack)
    errors = arena.server.arena.errors
    assert errors["bad_json"] > 0 and errors["internal"] == 0
    assert errors["frame_too_large"] > 0


def _fuzz(arena: Arena, stack: contextlib.ExitStack) -> None:
    def open_ws() -> ClientConnection:
        return stack.enter_context(connect(arena.url, compression=None))

    x = open_ws()
    o = open_ws()
    assert request(x, {"type": "hello", "name": "side-x", "ref": "h"})["type"] == "welcome"
    assert request(o, {"type": "hello", "name": "side-o", "ref": "h"})["type"] == "welcome"
    room = request(x, {"type": "create_room", "seat": "x", "ref": "c"})["room"]
    assert request(o, {"type": "join", "room": room, "ref": "j"})["type"] == "joined"
    side_moves = [0, 4, 8, 2, 6, 3, 5, 7, 1]  # a full-board draw
    played: list[int] = []
    state: dict[str, Any] = {"ws": open_ws(), "count": 0, "closes": 0}
    request(state["ws"], {"type": "hello", "name": "fuzzer", "ref": "h"})

    def side_step() -> None:
        if len(played) < len(side_moves):
            cell = side_moves[len(played)]
            who = x if len(played) % 2 == 0 else o
            reply = request(who, {"type": "move", "room": room, "cell": cell, "ref": f"m{len(played)}"})
            assert reply["type"] == "ok", reply
            played.append(cell)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(frame=frames)
    def one(frame: str | bytes) -> None:
        ws: ClientConnection = state["ws"]
        ws.send(frame)
        try:
            reply = request(ws, {"type": "ping", "ref": "probe"})
            assert reply["type"] == "pong"
        except ConnectionClosed as exc:
            assert exc.rcvd is not None and exc.rcvd.code in (1008, 1009), exc
            state["closes"] += 1
            state["ws"] = open_ws()
            request(state["ws"], {"type": "hello", "name": f"fuzzer{state['closes']}", "ref": "h"})
        state["count"] += 1
        if state["count"] % 12 == 0:
            side_step()

    one()
    while len(played) < len(side_moves):
        side_step()
    while True:
        event = json.loads(o.recv(timeout=5))
        m.parse_server(json.dumps(event))
        if event["type"] == "game_over":
            break
    assert event["moves"] == side_moves and event["outcome"]["reason"] == "full_board"
    assert state["closes"] > 0  # far oversized frames were closed with 1009 and the fuzzer came back
