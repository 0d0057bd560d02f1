"""Hostile clients at the edges (issue 13, items 6, 9, 10, 11), each against a real server
on a real port while an honest game is played beside the attack.

Every attack here is bounded in count and time and talks only to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import resource
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from server_harness import free_port, player, running_server, url_of
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from protocol import messages as m
from server.accept import Throttle, default_limit
from server.store import Store

TTT = [sys.executable, "-m", "protocol.cli"]
ROOT = Path(__file__).resolve().parent.parent
#: X takes the top row; the game ends on the fifth move.
_HONEST_MOVES = (0, 3, 1, 4, 2)


async def _honest_game(url: str, a: str, b: str, pause: float, started: asyncio.Event) -> m.GameEnded:
    """Two honest players play a whole game at a steady pace; every move must be answered."""
    x = await player(url, a)
    o = await player(url, b)
    try:
        joined = await x.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined)
        await o.request(m.Join(room=joined.room))
        await x.expect(m.GameStarted, room=joined.room)
        started.set()
        for ply, cell in enumerate(_HONEST_MOVES):
            mover = x if ply % 2 == 0 else o
            await asyncio.sleep(pause)
            await mover.request(m.Move(room=joined.room, cell=cell), timeout=5)
        return await o.expect(m.GameEnded, room=joined.room, timeout=5)
    finally:
        await x.close()
        await o.close()


@asynccontextmanager
async def honest_beside(url: str, tag: str = "h", pause: float = 0.05) -> AsyncIterator[None]:
    """Plays an honest game while the body attacks (its players are seated before the body
    starts); on leaving, the game must have been won by X with exactly the moves played."""
    started = asyncio.Event()
    game = asyncio.create_task(_honest_game(url, f"{tag}-x", f"{tag}-o", pause, started))
    try:
        await asyncio.wait_for(started.wait(), 10)
        yield
    except BaseException:
        game.cancel()
        raise
    ended = await asyncio.wait_for(game, 30)
    assert ended.outcome.winner == "x" and ended.moves == list(_HONEST_MOVES)


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not tracebacks, [r.getMessage() for r in tracebacks]


async def _answer(ws: Any) -> dict[str, Any] | int:
    """The next frame (parsed: a valid server message), or the close code if the server closed."""
    try:
        raw = await asyncio.wait_for(ws.recv(), 3)
    except ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd is not None else 1006
    m.parse_server(raw)
    data: dict[str, Any] = json.loads(raw)
    return data


# --- item 6: frames that used to kill the connection with a traceback ------------------------

_KILLERS = [
    pytest.param('{"type":"ping","ref":"\\ud800"}', id="lone-surrogate-ref"),
    pytest.param('{"type":"join","room":"\\udfff"}', id="lone-surrogate-field"),
    pytest.param('{"type":"ping","\\ud800":1}', id="lone-surrogate-key"),
    pytest.param("[" * 2000 + "]" * 2000, id="deep-nesting"),
    pytest.param('{"a":' * 600 + "1" + "}" * 600, id="deep-object"),
]


@pytest.mark.parametrize("frame", _KILLERS)
async def test_a_frame_that_is_no_text_gets_bad_json_before_and_after_hello(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, frame: str
) -> None:
    caplog.set_level(logging.DEBUG)
    async with running_server(tmp_path) as server, honest_beside(url_of(server)):
        for hello in (False, True):
            async with ws_connect(url_of(server), compression=None) as ws:
                if hello:
                    await ws.send(json.dumps({"type": "hello", "name": "hostile"}))
                    welcome = await _answer(ws)
                    assert isinstance(welcome, dict) and welcome["type"] == "welcome"
                await ws.send(frame)
                reply = await _answer(ws)
                assert isinstance(reply, dict), f"closed with {reply} instead of an error reply"
                assert (reply["type"], reply["code"], reply["ref"]) == ("error", "bad_json", None)
                await ws.send('{"type":"ping","ref":"still"}')  # the connection goes on
                after = await _answer(ws)  # a pong, or before hello: hello_first
                assert isinstance(after, dict) and after["ref"] == "still"
                assert after["type"] == "pong" if hello else after["code"] == "hello_first"
    _no_traceback(caplog)


# --- item 10: names that look like someone else's, or like nothing ---------------------------


async def _hello(url: str, name: str) -> dict[str, Any] | int:
    async with ws_connect(url, compression=None) as ws:
        await ws.send(json.dumps({"type": "hello", "name": name, "ref": "h"}))
        return await _answer(ws)


async def test_look_alike_and_invisible_names_are_refused_by_a_real_server(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server, honest_beside(url_of(server)):
        alice = await player(server, "alice")
        try:
            url = url_of(server)
            refused = {
                "\uff41\uff4c\uff49\uff43\uff45": "name_taken",  # fullwidth: NFKC makes it "alice"
                "\u0430lice": "bad_name",  # Cyrillic a: mixed scripts
                "\u0430\u0441\u0435": "bad_name",  # Cyrillic "ace", all look-alikes
                "\u3164": "bad_name",  # Hangul filler
                "\u2800": "bad_name",  # braille blank
                "al\u200bice": "bad_name",  # zero-width space
                "Z\u0351\u0352\u0353algo": "bad_name",  # three marks on a letter
            }
            for name, code in refused.items():
                reply = await _hello(url, name)
                assert isinstance(reply, dict), f"{name!r}: closed with {reply}"
                assert (reply["type"], reply.get("code")) == ("error", code), (name, reply)
            welcome = await _hello(url, "\uff42\uff4f\uff42\uff42\uff59")  # fullwidth "bobby"
            assert isinstance(welcome, dict) and welcome["type"] == "welcome"
            assert welcome["player"]["name"] == "bobby"
            for again in ("bobby", "BOBBY"):
                taken = await _hello(url, again)
                assert isinstance(taken, dict) and taken.get("code") == "name_taken"
        finally:
            await alice.close()


async def test_a_name_is_taken_by_its_skeleton_not_only_by_its_case(tmp_path: Path) -> None:
    """Uniqueness compares skeletons (`protocol.names.key`): ``a1ice`` and ``b0b`` are taken by
    ``alice`` and ``bob``, and a Cyrillic ``аlice`` stored before the name rules (with the
    case-folded key of schema version 3) takes ``alice``: the upgrade to version 4 gives its
    row the skeleton key, so the store's lookup of a new name finds it."""
    db = tmp_path / "arena.db"
    Store(str(db)).close()
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO players (id, name, kind, token_hash, created, name_key) VALUES (?,?,?,?,?,?)",
            ("pold0cyrillic", "\u0430lice", "human", "old-hash", 0.0, "\u0430lice"),
        )
        conn.execute("UPDATE schema_version SET version = 3")  # as a database of version 3 was
    async with running_server(tmp_path, db=str(db)) as server, honest_beside(url_of(server)):
        url = url_of(server)
        bob = await player(server, "bob")
        try:
            for name in ("alice", "ALICE", "\uff41lice", "a1ice", "b0b", "B0B", "\uff42\uff10b"):
                reply = await _hello(url, name)
                assert isinstance(reply, dict), f"{name!r}: closed with {reply}"
                assert (reply["type"], reply.get("code")) == ("error", "name_taken"), (name, reply)
            for name in ("alicia", "bobo"):
                welcome = await _hello(url, name)
                assert isinstance(welcome, dict) and welcome["type"] == "welcome", (name, welcome)
        finally:
            await bob.close()
    with contextlib.closing(sqlite3.connect(db)) as conn:
        names = sorted(row[0] for row in conn.execute("SELECT name FROM players"))
    assert names == sorted(["\u0430lice", "bob", "alicia", "bobo", "h-x", "h-o"])


# --- item 11: HTTP methods and paths, origins, retry_after, a private room's existence -------


async def _http(port: int, method: str, path: str, *headers: str) -> tuple[int, list[str], bytes]:
    """One raw HTTP/1.1 request: the status, the header lines, the body (all the server sent)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers, "Connection: close", "", ""]
        writer.write("\r\n".join(lines).encode())
        raw = await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status, *header_lines = head.decode("latin-1").split("\r\n")
    return int(status.split(" ")[1]), header_lines, body


def _header(lines: list[str], name: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in lines if line.split(":", 1)[0].lower() == name.lower()]


async def test_http_answers_only_get_and_head_on_its_two_paths(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server, honest_beside(url_of(server)):
        port = server.port
        for path in ("/healthz", "/metrics", "/metrics?x=1"):
            for method in ("POST", "DELETE", "TRACE", "PUT", "GETX", "OPTIONS"):
                status, headers, _ = await _http(port, method, path)
                assert (status, _header(headers, "Allow")) == (405, ["GET, HEAD"]), (method, path)
            status, headers, body = await _http(port, "GET", path)
            assert status == 200 and body and len(_header(headers, "Content-Type")) == 1
            status, head_headers, head_body = await _http(port, "HEAD", path)
            assert (status, head_body) == (200, b"")
            assert _header(head_headers, "Content-Type") == _header(headers, "Content-Type")
        for method in ("GET", "POST", "HEAD"):
            assert (await _http(port, method, "/nowhere"))[0] == 404
            assert (await _http(port, method, "/healthz/x"))[0] == 404
        status, headers, _ = await _http(port, "POST", "/")
        assert (status, _header(headers, "Allow")) == (405, ["GET"])


async def test_the_websocket_upgrade_is_accepted_only_on_the_root_path(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server, honest_beside(url_of(server)):
        # /healthz and /metrics answer as plain HTTP (200, no upgrade); other paths are 404
        paths = (("/game", 404), ("//", 404), ("/a/b", 404), ("/healthz", 200), ("/metrics", 200))
        for path, status in paths:
            with pytest.raises(InvalidStatus) as info:
                async with ws_connect(url_of(server) + path, compression=None):
                    pass
            assert info.value.response.status_code == status, path
        async with ws_connect(url_of(server) + "/?v=1", compression=None) as ws:
            await ws.send('{"type":"ping","ref":"root"}')
            reply = await _answer(ws)
            assert isinstance(reply, dict) and reply["ref"] == "root"


async def test_an_origin_allow_list_turns_other_origins_away(tmp_path: Path) -> None:
    allowed = "https://play.example"
    async with running_server(tmp_path, origins=(allowed,)) as server, honest_beside(url_of(server)):
        with pytest.raises(InvalidStatus) as info:
            async with ws_connect(url_of(server), origin="https://evil.example", compression=None):  # type: ignore[arg-type]
                pass
        assert info.value.response.status_code == 403
        for origin in (allowed, None):  # the listed one, and programs that send none
            async with ws_connect(url_of(server), origin=origin, compression=None) as ws:  # type: ignore[arg-type]
                await ws.send('{"type":"ping","ref":"o"}')
                assert isinstance(await _answer(ws), dict)


async def test_rate_limited_never_says_retry_after_zero(tmp_path: Path) -> None:
    # A fast refill and no burst: each refused frame waits well under half a millisecond.
    async with (
        running_server(tmp_path, rate=5000.0, burst=1) as server,
        honest_beside(url_of(server)),
        ws_connect(url_of(server), compression=None) as ws,
    ):
        await ws.send(json.dumps({"type": "hello", "name": "hasty"}))
        assert isinstance(await _answer(ws), dict)
        frames = [f'{{"type":"ping","ref":"{i}"}}' for i in range(40)]
        for frame in frames:  # all in one write: handled microseconds apart
            ws.protocol.send_text(frame.encode())
        ws.transport.write(b"".join(ws.protocol.data_to_send()))
        waits = []
        # a burst over the limit gets one answer; the frames after it are dropped unread
        with contextlib.suppress(TimeoutError):
            while True:
                reply = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
                if reply.get("code") == "rate_limited":
                    waits.append(reply["retry_after"])
    assert waits, "no frame was rate limited: the test did not test anything"
    assert min(waits) >= 0.001, waits


async def test_leave_does_not_tell_a_private_room_from_none(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server, honest_beside(url_of(server)):
        owner = await player(server, "owner")
        snoop = await player(server, "snoop")
        try:
            joined = await owner.request(m.CreateRoom(seat="x", private=True))
            assert isinstance(joined, m.Joined)
            answers = []
            for room in (joined.room, "r-does-not-exist"):
                async with ws_connect(url_of(server), compression=None) as ws:
                    hello = {"type": "hello", "token": snoop.welcome.token, "name": "snoop"}
                    await ws.send(json.dumps(hello))
                    assert isinstance(await _answer(ws), dict)
                    await ws.send(json.dumps({"type": "leave", "room": room, "ref": "l"}))
                    reply = await _answer(ws)
                    assert isinstance(reply, dict)
                    answers.append((reply["code"], reply["message"].replace(room, "ROOM")))
            assert answers[0] == answers[1] == ("no_such_room", "no room 'ROOM'")
            assert (await owner.request(m.Leave(room=joined.room))).type == "ok"  # a member still leaves
        finally:
            await owner.close()
            await snoop.close()


# --- item 9: more TCP connections than the process may open ------------------------------------

#: The open-file limit the server process runs under, and how many sockets the attack opens.
_NOFILE = 256
_FLOOD = 420


def _serve(db: Path, port: int, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    def lower_limit() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (_NOFILE, hard))

    with log.open("wb") as err:
        return subprocess.Popen(
            [*TTT, "serve", "--port", str(port), "--db", str(db), "--house-bots", "none", *extra],
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=lower_limit,
        )


async def _listening(proc: subprocess.Popen[bytes], port: int) -> None:
    for _ in range(200):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            assert proc.poll() is None, "ttt serve died"
            await asyncio.sleep(0.05)
    raise AssertionError("ttt serve did not start")


async def _flood(port: int, count: int) -> list[asyncio.StreamWriter]:
    """Idle TCP connections that never start a handshake (those the kernel takes, in 2 s)."""

    async def one() -> asyncio.StreamWriter | None:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 2)
        except (OSError, TimeoutError):
            return None
        return writer

    return [w for w in await asyncio.gather(*(one() for _ in range(count))) if w is not None]


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param((), id="default-cap"),
        pytest.param(("--max-connections", "5000"), id="cap-above-the-file-limit"),
    ],
)
async def test_a_flood_of_idle_sockets_neither_floods_the_log_nor_locks_newcomers_out(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    proc = _serve(tmp_path / "arena.db", port, log, *extra)
    url = f"ws://127.0.0.1:{port}"
    try:
        await _listening(proc, port)
        async with honest_beside(url, pause=0.3):
            flood = await _flood(port, _FLOOD)
            assert len(flood) > _NOFILE  # the attack did hold more sockets than the server may open
            await asyncio.sleep(2.0)  # what used to write thousands of lines a second
            for writer in flood:
                writer.close()
        await asyncio.sleep(1.5)  # the server sees the flood's sockets close
        newcomers = [await player(url, f"newcomer-{i}") for i in range(6)]
        for client in newcomers:
            assert (await client.request(m.Ping())).type == "pong"
            await client.close()
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    lines = log.read_text(errors="replace").splitlines()
    accept_lines = [line for line in lines if "open files" in line or "accept" in line]
    assert len(accept_lines) <= 5, accept_lines[:10]
    assert len(lines) <= 40, lines[:40]
    if not extra:  # the cap turned the surplus away (one line says so); nothing failed
        assert "Traceback" not in "\n".join(lines), lines
        assert [line for line in lines if "connection cap" in line], lines
        assert not [line for line in lines if "open files" in line], lines
    # (with the cap above the file limit, anything needing a descriptor may fail meanwhile)


async def test_a_text_frame_that_is_not_utf8_closes_with_1007_as_documented(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    assert 1007 in m.CLOSE_CODES
    async with running_server(tmp_path) as server, honest_beside(url_of(server)):
        for hello in (False, True):
            async with ws_connect(url_of(server), compression=None) as ws:
                if hello:
                    await ws.send(json.dumps({"type": "hello", "name": "garbled"}))
                    assert isinstance(await _answer(ws), dict)
                ws.protocol.send_text(b'{"type":"ping","ref":"\xff\xfe"}')
                ws.transport.write(b"".join(ws.protocol.data_to_send()))
                assert await _answer(ws) == 1007
    _no_traceback(caplog)


def test_every_close_code_the_server_sends_is_in_the_documented_table() -> None:
    """Every literal close code in the server's source (``close(1008, ...)``, ``Close(conn,
    1008, ...)``, ``close_code=1001``, ``close_conn(conn, 1008, ...)``) is in `CLOSE_CODES`,
    the table docs/protocol.md is generated from, with the reason each close gives."""
    source = "\n".join(p.read_text() for p in (ROOT / "server").rglob("*.py"))
    pattern = r"(?:close|Close|close_conn)\((?:[\w.]+, )?(1\d{3})|close_code=(1\d{3})|code=(1\d{3})"
    sent = {int(next(g for g in found if g)) for found in re.findall(pattern, source)}
    assert {1001, 1008} <= sent, sent  # the scan finds what it should
    assert sent <= m.CLOSE_CODES.keys(), sent - m.CLOSE_CODES.keys()
    for reason in ("no hello in time", "too many bad frames", "flooding", "replaced by a new"):
        assert reason in source
    table = m.CLOSE_CODES[1008]
    assert all(word in table for word in ("hello", "bad frames", "flooding", "replaced", "connections"))


def test_the_default_cap_leaves_headroom_under_the_file_limit() -> None:
    assert default_limit(1024) == 896 and default_limit(256) == 192 and default_limit(65536) == 57344
    assert default_limit(10) == 1


def test_a_repeated_error_is_reported_once_a_period_with_its_count() -> None:
    throttle = Throttle(10.0)
    reports = [throttle.hit(t / 100) for t in range(0, 2500)]  # 100 a second for 25 s
    assert [r for r in reports if r is not None] == [1, 1000, 1000]
