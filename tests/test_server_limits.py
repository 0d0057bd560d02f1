"""Bad input and limits, each over a real connection: clear errors or the right close code,
and nothing changed for anyone else."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from server_harness import player, running_server, seated_pair, url_of
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from protocol import messages as m
from protocol.session import RemoteError


async def _reply(ws: object) -> dict[str, object]:
    raw = await asyncio.wait_for(ws.recv(), 3)  # type: ignore[attr-defined]
    data: dict[str, object] = json.loads(raw)
    m.parse_server(raw)  # every reply is a valid server message
    return data


async def test_each_bad_frame_gets_its_error_and_changes_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x, o, room, _ = await seated_pair(server)
        async with ws_connect(url_of(server), compression=None) as ws:
            await ws.send(json.dumps({"type": "hello", "name": "fuzzy", "ref": "h"}))
            assert (await _reply(ws))["type"] == "welcome"
            cases = [
                ("not json", "bad_json", None),
                ('{"type": "nope", "ref": "a"}', "unknown_type", "a"),
                ('{"type": "move", "room": "' + room + '", "cell": "4", "ref": "b"}', "malformed_move", "b"),
                (
                    '{"type": "move", "room": "' + room + '", "cell": 4, "x": 1, "ref": "c"}',
                    "bad_message",
                    "c",
                ),
                ('{"type": "move", "room": "' + room + '", "cell": 4, "ref": "d"}', "not_in_room", "d"),
                ('{"type": "hello", "name": "again", "ref": "e"}', "already_hello", "e"),
                ("[1, 2, 3]", "bad_json", None),
                ("42", "bad_json", None),
                ('{"type": "ping", "ref": "big", "pad": "' + "x" * 5000 + '"}', "frame_too_large", None),
                (b'{"type": "ping"}', "binary_frame", None),
            ]
            for frame, code, ref in cases:
                await ws.send(frame)
                reply = await _reply(ws)
                assert (reply["type"], reply["code"], reply["ref"]) == ("error", code, ref), frame
                assert isinstance(reply["message"], str) and reply["message"]
            await ws.send("x" * 20_000)  # far over the 4 KiB frame limit: not even read
            with pytest.raises(ConnectionClosed) as info:
                await asyncio.wait_for(ws.recv(), 3)
            assert info.value.rcvd is not None and info.value.rcvd.code == 1009
        # the game in the room was not touched and goes on
        await x.request(m.Move(room=room, cell=4))
        assert (await o.expect(m.Moved, room=room)).ply == 1
        metrics = await asyncio.to_thread(_get, f"http://127.0.0.1:{server.port}/metrics")
        assert 'ttt_errors_total{code="bad_json"} 3.0' in metrics
        assert "ttt_games_in_progress 1" in metrics


async def test_hello_rules(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        async with ws_connect(url_of(server), compression=None) as ws:
            await ws.send('{"type": "move", "room": "r", "cell": 1, "ref": "m"}')
            reply = await _reply(ws)
            assert (reply["code"], reply["ref"]) == ("hello_first", "m")
            with pytest.raises(ConnectionClosed) as info:
                await asyncio.wait_for(ws.recv(), 3)
            assert info.value.rcvd is not None and info.value.rcvd.code == 1008
        async with ws_connect(url_of(server), compression=None) as ws:  # one bad frame, then silence
            await ws.send("{")
            assert (await _reply(ws))["code"] == "bad_json"
            assert (await _reply(ws))["code"] == "hello_first"  # the hello timeout ran on
            with pytest.raises(ConnectionClosed) as info:
                await asyncio.wait_for(ws.recv(), 5)
            assert info.value.rcvd is not None and info.value.rcvd.code == 1008
        async with ws_connect(url_of(server), compression=None) as ws:
            for name in ["a\x1bb", "", "x" * 25, " padded", "tab\there"]:
                await ws.send(json.dumps({"type": "hello", "name": name, "ref": "n"}))
                assert (await _reply(ws))["code"] == "bad_name", name
        alice = await player(server, "alice")
        with pytest.raises(RemoteError) as err:
            await player(server, "ALICE")
        assert err.value.code == "name_taken"
        async with ws_connect(url_of(server), compression=None) as ws:
            await ws.send('{"type": "hello", "name": "alice", "token": "forged", "ref": "t"}')
            assert (await _reply(ws))["code"] == "bad_token"
            await ws.send('{"type": "hello", "name": "x", "protocol": 99}')
            assert (await _reply(ws))["code"] == "protocol_version"
        # the token is the way back; the stored form is a hash
        token = alice.token
        assert token and server.store.query("SELECT count(*) FROM players WHERE token_hash=?", (token,)) == [
            (0,)
        ]
        await alice.close()
        again = await player_with_token(server, token)
        assert again.welcome.player.name == "alice" and again.player_id == alice.player_id


async def player_with_token(server: object, token: str) -> object:
    from protocol.client import connect

    return await connect(url_of(server), "anything", token=token)  # type: ignore[arg-type]


async def test_rate_limit_answers_a_burst_once_with_retry_after(tmp_path: Path) -> None:
    async with running_server(tmp_path, rate=1.0, burst=5) as server:
        client = await player(server, "chatty")
        refs = [await client.send(m.Ping()) for _ in range(12)]
        await asyncio.sleep(1.5)
        got = client.drain()
        pongs = [e for e in got if isinstance(e, m.Pong)]
        limited = [e for e in got if isinstance(e, m.Error) and e.code == "rate_limited"]
        # the hello took one token of five; one more may have refilled (1/s) while they went out
        assert 4 <= len(pongs) <= 6 and {p.ref for p in pongs} <= set(refs)
        assert len(limited) == 1, "one answer for the burst; the rest are dropped unread"
        assert limited[0].ref in refs
        assert limited[0].retry_after is not None and 0 < limited[0].retry_after <= 1.0
        await asyncio.sleep(limited[0].retry_after)
        assert isinstance(await client.request(m.Ping()), m.Pong)
        assert server.arena.errors["rate_limited"] == 12 - len(pongs)


async def test_connection_cap_per_address(tmp_path: Path) -> None:
    async with running_server(tmp_path, max_conns_per_ip=2) as server:
        a = await player(server, "a")
        b = await player(server, "b")
        async with ws_connect(url_of(server), compression=None) as ws:
            with pytest.raises(ConnectionClosed) as info:
                await asyncio.wait_for(ws.recv(), 3)
            assert info.value.rcvd is not None and info.value.rcvd.code == 1008
        await a.close()
        await asyncio.sleep(0.1)
        c = await player(server, "c")
        assert isinstance(await c.request(m.Ping()), m.Pong)
        assert isinstance(await b.request(m.Ping()), m.Pong)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        assert len(response.headers.get_all("Content-Type")) == 1, "one Content-Type header"
        body: str = response.read().decode()
        return body


async def test_healthz_and_metrics(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x, _o, room, _ = await seated_pair(server)
        await x.request(m.Move(room=room, cell=4))
        health = json.loads(await asyncio.to_thread(_get, f"http://127.0.0.1:{server.port}/healthz"))
        assert health["status"] == "ok" and health["connections"] == 2 and health["rooms"] == 1
        metrics = await asyncio.to_thread(_get, f"http://127.0.0.1:{server.port}/metrics")
        lines = dict(line.rsplit(" ", 1) for line in metrics.splitlines() if not line.startswith("#"))
        assert lines["ttt_connections"] == "2.0" and lines["ttt_moves_total"] == "1.0"
        assert lines["ttt_games_in_progress"] == "1.0" and lines["ttt_rooms"] == "1.0"
        assert "# TYPE ttt_moves_total counter" in metrics
        assert float(lines["ttt_move_broadcast_seconds_count"]) >= 1.0, "the move's broadcast was timed"
        assert float(lines["ttt_store_commit_seconds_count"]) >= 1.0
        assert float(lines['ttt_move_broadcast_seconds_bucket{le="+Inf"}']) >= 1.0


async def test_a_trusted_player_is_told_its_allowance(tmp_path: Path) -> None:
    """The operator trusts a tournament's director and bots (``--trust``, alias ``--director``;
    50x the rate and burst, the name compared as names are): each is told its larger
    allowance in its `Welcome`, so its own pacer (``ttt bot``) sends at that rate instead of
    idling at the ordinary one (issue 17, bug 14: connected tournaments were throttled by
    the bots' own pacing), and stands outside its address's budget; a stranger's welcome
    keeps the ordinary limits."""
    async with running_server(
        tmp_path, rate=5.0, burst=5, ip_rate=50.0, ip_burst=50, trusted=frozenset({"fastbot"})
    ) as server:
        fast, slow = await player(server, "FastBot", kind="bot"), await player(server, "slowbot", kind="bot")
        assert (fast.welcome.limits.rate_per_s, fast.welcome.limits.burst) == (250.0, 250)
        assert (slow.welcome.limits.rate_per_s, slow.welcome.limits.burst) == (5.0, 5)
        for client in (fast, slow):
            for _ in range(60):
                await client.send(m.Ping())
        await asyncio.sleep(0.5)
        fast_got, slow_got = fast.drain(), slow.drain()
        assert sum(isinstance(e, m.Pong) for e in fast_got) == 60, "outside the address budget"
        assert not any(isinstance(e, m.Error) for e in fast_got)
        assert any(isinstance(e, m.Error) and e.code == "rate_limited" for e in slow_got)


# --- welcome.limits tells the figures the server enforces --------------------------------------

#: Settings unlike the defaults, so a figure copied from a default would not match. The
#: rates are so slow that no token comes back while a test runs.
_TIGHT = {
    "max_frame": 1000,
    "rate": 0.001,
    "burst": 6,
    "ip_rate": 0.001,
    "ip_burst": 15,
    "max_conns_per_ip": 3,
    "max_flood": 4,
    "max_bad_frames": 3,
    "signup_burst": 3,
    "signup_rate": 0.001,
    "max_challenges_to": 5,
    "write_limit": 12_345,
    "stall_timeout": 2.5,
    "answer_timeout": 7.0,
    "replay_events": 99,
}


async def _from(server: object, source: str) -> Any:
    """A raw WebSocket connection from the loopback address ``source`` (its own budgets)."""
    return await ws_connect(url_of(server), compression=None, local_addr=(source, 0))  # type: ignore[arg-type]


async def _said(ws: Any) -> dict[str, Any]:
    raw = await asyncio.wait_for(ws.recv(), 5)
    m.parse_server(raw)
    data: dict[str, Any] = json.loads(raw)
    return data


async def _welcomed(ws: Any, name: str) -> dict[str, Any]:
    await ws.send(json.dumps({"type": "hello", "name": name, "ref": "h"}))
    reply = await _said(ws)
    assert reply["type"] == "welcome", reply
    return reply


def _pipeline(ws: Any, frames: list[str]) -> None:
    """Send ``frames`` in one write: the server reads them in one go, in order."""
    for frame in frames:
        ws.protocol.send_text(frame.encode())
    ws.transport.write(b"".join(ws.protocol.data_to_send()))


async def _pongs_before_refusal(ws: Any, count: int) -> int:
    """Pipeline ``count`` pings; the pongs answered before the one ``rate_limited``."""
    _pipeline(ws, [f'{{"type":"ping","ref":"p{i}"}}' for i in range(count)])
    pongs = 0
    while (reply := await _said(ws))["type"] == "pong":
        pongs += 1
    assert reply["code"] == "rate_limited", reply
    return pongs


async def _closed_with(ws: Any) -> int:
    with pytest.raises(ConnectionClosed) as info:
        while True:
            await asyncio.wait_for(ws.recv(), 5)
    assert info.value.rcvd is not None
    code: int = info.value.rcvd.code
    return code


async def test_welcome_limits_are_the_figures_the_server_enforces(tmp_path: Path) -> None:
    async with running_server(tmp_path, **_TIGHT) as server:
        cfg = server.config
        ws = await _from(server, "127.0.0.2")
        limits = (await _welcomed(ws, "meter"))["limits"]
        assert limits == m.Limits.model_validate(limits).model_dump()
        told = {
            "max_frame": cfg.max_frame,
            "rate_per_s": cfg.rate,
            "burst": cfg.burst,
            "ip_rate_per_s": cfg.ip_rate,
            "ip_burst": cfg.ip_burst,
            "max_conns_per_ip": cfg.max_conns_per_ip,
            "max_flood": cfg.max_flood,
            "max_bad_frames": cfg.max_bad_frames,
            "signup_burst": cfg.signup_burst,
            "signup_rate_per_s": cfg.signup_rate,
            "max_challenges_to": cfg.max_challenges_to,
            "max_challenges_to_per_ip": cfg.max_challenges_to_per_ip,
            "write_limit": cfg.write_limit,
            "stall_timeout_ms": 2500,
            "answer_timeout_ms": 7000,
            "grace_ms": round(cfg.grace * 1000),
            "first_move_ms": round(cfg.first_move * 1000),
            "replay_events": cfg.replay_events,
            "max_rooms": cfg.max_rooms,
            "max_challenges": cfg.max_challenges,
            "challenge_ttl_ms": round(cfg.challenge_ttl * 1000),
        }
        assert told.keys() == m.Limits.model_fields.keys(), "every limit is checked here"
        assert limits == told
        defaults = m.Limits(max_frame=4096, rate_per_s=20.0, burst=40, grace_ms=30_000, max_rooms=32)
        assert all(limits[k] != getattr(defaults, k) for k in _TIGHT_FIELDS), "figures, not defaults"

        # max_frame: a frame of exactly that many bytes is read, one byte more is refused
        at = '{"type":"ping","ref":"at"' + " " * (limits["max_frame"] - 26) + "}"
        assert len(at.encode()) == limits["max_frame"]
        _pipeline(ws, [at, at[:-1] + " }"])
        assert (await _said(ws))["type"] == "pong"
        assert (await _said(ws))["code"] == "frame_too_large"
        # burst: the hello and the two frames above took 3 of the connection's tokens
        assert await _pongs_before_refusal(ws, 10) == limits["burst"] - 3
        await ws.close()

        # ip_burst: three connections of one address share it (hellos included)
        shared = [await _from(server, "127.0.0.3") for _ in range(3)]
        for i, conn in enumerate(shared):
            await _welcomed(conn, f"share{i}")
        pongs = [await _pongs_before_refusal(conn, limits["burst"] + 2) for conn in shared]
        assert pongs[:2] == [limits["burst"] - 1] * 2, "each connection's own burst first"
        assert sum(pongs) + len(shared) == limits["ip_burst"]

        # max_conns_per_ip: those three are the address's all
        extra = await _from(server, "127.0.0.3")
        assert await _closed_with(extra) == 1008
        for conn in shared:
            await conn.close()

        # max_flood: that many frames over the limit in a row are dropped, one more closes
        ws = await _from(server, "127.0.0.4")
        await _welcomed(ws, "flood")
        limited = server.arena.errors["rate_limited"]
        _pipeline(ws, ['{"type":"ping"}'] * (limits["burst"] - 1 + limits["max_flood"]))
        for _ in range(limits["burst"] - 1):
            assert (await _said(ws))["type"] == "pong"
        assert (await _said(ws))["code"] == "rate_limited"
        for _ in range(100):
            if server.arena.errors["rate_limited"] == limited + limits["max_flood"]:
                break
            await asyncio.sleep(0.02)
        assert server.arena.errors["rate_limited"] == limited + limits["max_flood"]
        assert not any(c.closing for c in server.conns.values() if c.ip == "127.0.0.4")
        _pipeline(ws, ['{"type":"ping"}'])
        assert await _closed_with(ws) == 1008

        # max_bad_frames: that many get their error, the next one's error comes with a close
        ws = await _from(server, "127.0.0.5")
        await _welcomed(ws, "clumsy")
        _pipeline(ws, ["{"] * (limits["max_bad_frames"] + 1))
        for _ in range(limits["max_bad_frames"] + 1):
            assert (await _said(ws))["code"] == "bad_json"
        assert await _closed_with(ws) == 1008

        # signup_burst: new players one address may create
        for i in range(limits["signup_burst"] + 1):
            ws = await _from(server, "127.0.0.6")
            await ws.send(json.dumps({"type": "hello", "name": f"new{i}"}))
            reply = await _said(ws)
            await ws.close()
        assert reply["code"] == "too_many_accounts"
        assert server.store.query("SELECT count(*) FROM players WHERE name LIKE 'new%'") == [
            (limits["signup_burst"],)
        ]


#: Fields of `_TIGHT` whose figure differs from the default (the check that the welcome is
#: not just the defaults).
_TIGHT_FIELDS = ("max_frame", "burst", "ip_burst", "max_conns_per_ip", "max_flood", "max_bad_frames")
