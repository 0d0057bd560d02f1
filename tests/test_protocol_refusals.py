"""Every refusal the docs promise, from a real server: the code, the ref, and the
behaviour docs/protocol.md describes (a token's owner, a takeover, a creator who
only watches). Cases marked ``xfail`` are what the server core's rewrite makes
true (it reads frames with `protocol.frames.read_client`); strict, so each one
fails the suite as soon as it passes and its mark must go.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from server_harness import player, running_server, seated_pair, url_of
from websockets.asyncio.client import connect as ws_connect

from protocol import messages as m
from protocol.client import ArenaClient, connect
from protocol.errors import ErrorCode
from protocol.session import RemoteError
from server.app import ArenaServer


async def _refused(client: ArenaClient, message: m.ClientMessage) -> ErrorCode:
    with pytest.raises(RemoteError) as caught:
        await client.request(message)
    return ErrorCode(caught.value.code)


async def _raw(client: ArenaClient, frame: str | bytes) -> m.Error:
    await client.send_raw(frame)
    return await client.expect(m.Error, timeout=5)


def _frame(**fields: Any) -> str:
    return json.dumps(fields)


def _case(name: str, frame: str | bytes, code: ErrorCode, ref: str | None) -> Any:
    return pytest.param(frame, code, ref, id=name)


def _move(cell: object) -> str:
    return f'{{"type": "move", "room": "ROOM", "cell": {cell}, "ref": "m"}}'


@pytest.mark.parametrize(
    ("frame", "code", "ref"),
    [
        _case("not json", "not json", ErrorCode.BAD_JSON, None),
        _case("a list", "[1,2]", ErrorCode.BAD_JSON, None),
        _case("a number", "42", ErrorCode.BAD_JSON, None),
        _case("binary", b'{"type": "ping"}', ErrorCode.BINARY_FRAME, None),
        _case("no such type", _frame(type="dance", ref="t"), ErrorCode.UNKNOWN_TYPE, "t"),
        _case("extra field", _frame(type="ping", extra=1, ref="e"), ErrorCode.BAD_MESSAGE, "e"),
        _case("second hello", _frame(type="hello", name="again", ref="h"), ErrorCode.ALREADY_HELLO, "h"),
        *(
            _case(f"cell {cell}", _move(cell), ErrorCode.MALFORMED_MOVE, "m")
            for cell in ('"4"', "4.0", "true", "null", "[4]")
        ),
        *(
            _case(f"cell {cell}", _move(cell), ErrorCode.CELL_OUT_OF_RANGE, "m")
            for cell in (-1, 9, 225, 10**9)
        ),
        _case(
            "move_ms 50",
            _frame(type="create_room", time_control={"kind": "per_move", "move_ms": 50}, ref="c"),
            ErrorCode.BAD_TIME_CONTROL,
            "c",
        ),
        _case(
            "ply_cap 0",
            _frame(type="create_room", variant="tactic-toe", ply_cap=0, ref="c"),
            ErrorCode.BAD_PLY_CAP,
            "c",
        ),
        _case(
            "classic ply_cap",
            _frame(type="create_room", variant="classic", ply_cap=10, ref="c"),
            ErrorCode.BAD_PLY_CAP,
            "c",
        ),
        _case("variant", _frame(type="create_room", variant="nine", ref="c"), ErrorCode.UNKNOWN_VARIANT, "c"),
        _case(
            "illegal opening", _frame(type="create_room", opening=[4, 4], ref="c"), ErrorCode.BAD_OPENING, "c"
        ),
        _case(
            "opening off the board",
            _frame(type="create_room", opening=[225], ref="c"),
            ErrorCode.BAD_OPENING,
            "c",
        ),
    ],
)
async def test_each_bad_frame_gets_its_code_and_its_ref(
    tmp_path: Path, frame: str | bytes, code: ErrorCode, ref: str | None
) -> None:
    async with running_server(tmp_path) as server:
        x, o, room, _ = await seated_pair(server)
        if isinstance(frame, str):
            frame = frame.replace("ROOM", room)
        error = await _raw(x, frame)
        assert (error.code, error.ref) == (code, ref), error.message
        await x.request(m.Move(room=room, cell=4))  # nothing changed: the game goes on
        assert (await o.expect(m.Moved, room=room)).cell == 4


async def _first_reply(server: ArenaServer, frame: dict[str, Any]) -> m.ServerMessage:
    """Send ``frame`` first on a new connection; the server's reply."""
    async with ws_connect(url_of(server), compression=None) as ws:
        await ws.send(json.dumps(frame))
        return m.parse_server(await asyncio.wait_for(ws.recv(), 5))


async def test_hello_refusals(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        alice = await player(server, "alice")
        for hello, code in [
            ({"name": "alice"}, ErrorCode.NAME_TAKEN),
            ({"name": "ALICE"}, ErrorCode.NAME_TAKEN),  # unique ignoring case
            ({"name": "bob", "token": "no such token"}, ErrorCode.BAD_TOKEN),
            ({"name": "bob", "protocol": m.PROTOCOL_VERSION + 1}, ErrorCode.PROTOCOL_VERSION),
            ({"name": ""}, ErrorCode.BAD_NAME),
            ({"name": "n" * 25}, ErrorCode.BAD_NAME),
        ]:
            reply = await _first_reply(server, {"type": "hello", **hello, "ref": "h"})
            assert isinstance(reply, m.Error) and (reply.code, reply.ref) == (code, "h"), hello
        reply = await _first_reply(server, {"type": "ping", "ref": "p"})
        assert isinstance(reply, m.Error) and (reply.code, reply.ref) == (ErrorCode.HELLO_FIRST, "p")
        await alice.close()


async def test_a_token_logs_in_as_its_owner_and_takes_over(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        alice = await player(server, "alice")
        again = await connect(url_of(server), "someone-else", token=alice.token, timeout=5)
        assert again.welcome.player.name == "alice"  # the token's owner, not the name given
        assert again.welcome.player.id == alice.player_id
        bye = await alice.expect(m.Goodbye, timeout=5)
        assert (bye.reason, bye.close_code) == ("replaced by a new connection", 1008)
        assert isinstance(await again.request(m.Ping()), m.Pong)
        await again.close()


async def test_a_creator_with_no_seat_watches(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        host = await player(server, "host")
        joined = await host.request(m.CreateRoom(seat=None))
        assert isinstance(joined, m.Joined) and joined.role == "spectator"
        assert joined.snapshot.room.seats == m.Seats(x=None, o=None)
        assert await _refused(host, m.Move(room=joined.room, cell=4)) == ErrorCode.NOT_SEATED
        guest = await player(server, "guest")
        assert isinstance(await guest.request(m.Join(room=joined.room)), m.Joined)
        assert await _refused(guest, m.Move(room=joined.room, cell=4)) == ErrorCode.NO_GAME
        await host.close()


async def test_room_and_seat_refusals(tmp_path: Path) -> None:
    async with running_server(tmp_path, max_rooms=2) as server:
        x, _, room, _ = await seated_pair(server)
        third = await player(server, "carol")
        assert await _refused(third, m.Join(room="nope")) == ErrorCode.NO_SUCH_ROOM
        assert await _refused(third, m.Join(room=room)) == ErrorCode.ROOM_FULL
        assert await _refused(x, m.Join(room=room)) == ErrorCode.ALREADY_SEATED
        assert await _refused(third, m.Leave(room=room)) == ErrorCode.NOT_IN_ROOM
        assert await _refused(third, m.Move(room=room, cell=4)) == ErrorCode.NOT_IN_ROOM
        await third.request(m.Spectate(room=room))
        assert await _refused(third, m.Move(room=room, cell=4)) == ErrorCode.NOT_SEATED
        assert await _refused(third, m.Rematch(room=room)) == ErrorCode.NOT_SEATED
        assert await _refused(x, m.Rematch(room=room)) == ErrorCode.GAME_IN_PROGRESS
        await third.request(m.CreateRoom(seat="x"))
        assert await _refused(third, m.CreateRoom()) == ErrorCode.TOO_MANY_ROOMS
        lone = await player(server, "dave")
        alone = await lone.request(m.CreateRoom(seat="x"))
        assert isinstance(alone, m.Joined)
        assert await _refused(x, m.Join(room=alone.room, seat="x")) == ErrorCode.SEAT_TAKEN
        assert await _refused(lone, m.Rematch(room=alone.room)) == ErrorCode.NO_GAME


async def test_move_refusals(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x, o, room, _ = await seated_pair(server)
        assert await _refused(o, m.Move(room=room, cell=4)) == ErrorCode.NOT_YOUR_TURN
        await x.request(m.Move(room=room, cell=4))
        assert await _refused(o, m.Move(room=room, cell=4)) == ErrorCode.CELL_OCCUPIED
        assert await _refused(o, m.Move(room=room, cell=9)) == ErrorCode.CELL_OUT_OF_RANGE
        await x.request(m.Resign(room=room))
        assert await _refused(o, m.Move(room=room, cell=0)) == ErrorCode.GAME_OVER

        tx, to, tactic, _ = await seated_pair(server, "tx", "to", variant="tactic-toe")
        for mover, cell in [(tx, 0), (to, 3), (tx, 1), (to, 6), (tx, 5), (to, 7)]:
            await mover.request(m.Move(room=tactic, cell=cell))
        # X holds 0, 1, 5; 0 is the oldest and leaves as X moves, so X may not take it
        assert await _refused(tx, m.Move(room=tactic, cell=0)) == ErrorCode.CELL_VACATING


async def test_challenge_refusals(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        alice = await player(server, "alice")
        bob = await player(server, "bob")
        assert await _refused(alice, m.Challenge(opponent="ghost")) == ErrorCode.NO_SUCH_PLAYER
        assert await _refused(alice, m.Challenge(opponent="alice")) == ErrorCode.SELF_CHALLENGE
        assert await _refused(alice, m.Challenge(opponent="bob", level="best")) == ErrorCode.BAD_LEVEL
        assert await _refused(alice, m.ArrangeGame(x="bob", o="bob")) == ErrorCode.SAME_PLAYER
        assert await _refused(alice, m.ArrangeGame(x="alice", o="bob")) == ErrorCode.SELF_CHALLENGE
        assert await _refused(bob, m.AcceptChallenge(challenge="c-nope")) == ErrorCode.NO_SUCH_CHALLENGE
        assert await _refused(bob, m.DeclineChallenge(challenge="c-nope")) == ErrorCode.NO_SUCH_CHALLENGE


async def test_too_many_messages_are_rate_limited(tmp_path: Path) -> None:
    async with running_server(tmp_path, rate=1.0, burst=3) as server:
        alice = await player(server, "alice")
        refs = [await alice.send(m.Ping()) for _ in range(6)]
        await asyncio.sleep(0.5)
        replies = alice.drain()
        limited = [r for r in replies if isinstance(r, m.Error)]
        assert len(limited) == 1 and limited[0].code is ErrorCode.RATE_LIMITED and limited[0].retry_after
        assert {r.ref for r in replies} <= set(refs)
