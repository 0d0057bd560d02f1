"""Attacks by clients that never read or send too much, against a real `ttt serve`, with
an honest game going on beside each: the server stays up, its memory stays bounded, the
attacker is the one cut off, and the honest players' requests keep being answered.

Loopback only; each attack is bounded in count and time. Honest players connect from
127.0.0.2 where an attack comes from 127.0.0.1, so the per-address budget they meet is
their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hostile import Deaf, frame, rss_kib, serve, stop, text
from server_harness import free_port, player, running_server, seated_pair
from websockets.asyncio.client import ClientConnection, connect

from protocol import messages as m


class Honest:
    """Two players on their own address, playing game after game; counts acknowledged moves,
    and every request answered (rooms created, joined and left too: four of a game's nine
    requests are not moves, so at an honest pace a short attack may fall between two moves)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.moves = 0
        self.answered = 0
        self.failure: BaseException | None = None

    async def _open(self, name: str) -> ClientConnection:
        ws = await connect(f"ws://127.0.0.1:{self.port}", compression=None, local_addr=("127.0.0.2", 0))
        await ws.send(json.dumps({"type": "hello", "name": name, "ref": "h"}))
        await self._reply(ws, "h")
        return ws

    async def _reply(self, ws: ClientConnection, ref: str) -> dict[str, Any]:
        while True:
            reply: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if reply.get("ref") == ref:
                assert reply["type"] != "error", reply
                self.answered += 1
                await asyncio.sleep(0.06)  # an honest pace: within 20 messages a second
                return reply

    async def play(self, stop_event: asyncio.Event, tag: str) -> None:
        try:
            x, o = await self._open(f"{tag}x"), await self._open(f"{tag}o")
            n = 0
            while not stop_event.is_set():
                await x.send(json.dumps({"type": "create_room", "seat": "x", "ref": f"c{n}"}))
                room = (await self._reply(x, f"c{n}"))["room"]
                await o.send(json.dumps({"type": "join", "room": room, "ref": f"j{n}"}))
                await self._reply(o, f"j{n}")
                for ply, cell in enumerate([0, 3, 1, 4, 2]):  # X wins on the top row
                    ws = x if ply % 2 == 0 else o
                    await ws.send(
                        json.dumps({"type": "move", "room": room, "cell": cell, "ref": f"m{n}.{ply}"})
                    )
                    await self._reply(ws, f"m{n}.{ply}")
                    self.moves += 1
                for ws in (x, o):
                    await ws.send(json.dumps({"type": "leave", "room": room, "ref": f"l{n}"}))
                    await self._reply(ws, f"l{n}")
                n += 1
            await x.close()
            await o.close()
        except BaseException as exc:  # reported by the test
            self.failure = exc


async def _beside(port: int, attack: Any, tag: str = "h") -> tuple[Any, Honest]:
    """Await ``attack()`` while an honest game goes on; its result."""
    honest = Honest(port)
    done = asyncio.Event()
    game = asyncio.create_task(honest.play(done, tag))
    await asyncio.sleep(0.3)
    before = honest.answered
    result = await attack()
    during = honest.answered - before
    done.set()
    await asyncio.wait_for(game, 30)
    assert honest.failure is None, honest.failure
    assert during > 0, "no request of the honest players was answered during the attack"
    return result, honest


async def test_a_client_that_pings_and_never_reads_is_dropped_and_memory_stays_bounded(
    tmp_path: Path,
) -> None:
    port = free_port()
    proc = serve(tmp_path / "arena.db", port, "--stall-timeout", "1.5")
    try:
        start_rss = rss_kib(proc.pid)
        deaf = Deaf(port)
        deaf.send(text({"type": "hello", "name": "deaf", "ref": "h"}))
        ping = frame(0x9, b"p" * 125)  # a WebSocket ping: the server answers each with a pong
        dropped_after, honest = await _beside(port, lambda: asyncio.to_thread(deaf.flood, ping, 20.0))
        grown = rss_kib(proc.pid) - start_rss
        deaf.close()
        assert dropped_after is not None, "the deaf client was never dropped"
        assert grown < 40_000, f"the server grew by {grown} KiB"
        assert proc.poll() is None
    finally:
        stop(proc)
    with contextlib.closing(sqlite3.connect(tmp_path / "arena.db")) as db:
        stored = db.execute("SELECT COUNT(*) FROM moves").fetchone()[0]
    assert stored == honest.moves, "every move the honest players were told of is in the database"


async def test_a_lobby_subscriber_that_never_reads_is_dropped(tmp_path: Path) -> None:
    port = free_port()
    proc = serve(tmp_path / "arena.db", port, "--stall-timeout", "1.5")
    try:
        url = f"ws://127.0.0.1:{port}"
        owners = [await player(url, f"owner{i}") for i in range(4)]
        for owner in owners:
            for _ in range(25):  # 100 rooms: each lobby snapshot is a few tens of KiB
                await owner.request(m.CreateRoom(seat="x"))
        start_rss = rss_kib(proc.pid)
        deaf = Deaf(port)
        deaf.send(text({"type": "hello", "name": "lurker", "ref": "h"}))
        subscribe = text({"type": "lobby_subscribe"})

        def attack() -> float | None:
            import time

            started = time.monotonic()
            while time.monotonic() - started < 20:
                if not deaf.send(subscribe):
                    return time.monotonic() - started
                time.sleep(1 / 19)  # within the rate limit
            return None

        dropped_after, _ = await _beside(port, lambda: asyncio.to_thread(attack))
        grown = rss_kib(proc.pid) - start_rss
        deaf.close()
        assert dropped_after is not None, "the lurker was never dropped"
        assert grown < 40_000, f"the server grew by {grown} KiB"
        for owner in owners:
            await owner.close()
    finally:
        stop(proc)


#: How long the flooder keeps at it, reconnecting: several honest requests' worth.
_KEEP_AT_IT = 1.5


async def test_a_pipelined_flood_is_answered_once_and_the_flooder_cut_off(tmp_path: Path) -> None:
    """One flood is cut off within milliseconds, shorter than an honest player's pace: so
    the attacker floods again over a new connection each time it is cut off, for
    `_KEEP_AT_IT` seconds, and the honest game must go on meanwhile."""
    port = free_port()
    proc = serve(tmp_path / "arena.db", port)
    try:
        url = f"ws://127.0.0.1:{port}"
        ping = json.dumps({"type": "ping", "ref": "p"})

        async def flood(n: int) -> tuple[int | None, list[dict[str, Any]]]:
            """One connection's flood (a new name each: a name is an account's), its close
            code and the replies it read."""
            flooder = await connect(url, compression=None)
            await flooder.send(json.dumps({"type": "hello", "name": f"flooder{n}", "ref": "h"}))
            welcome = json.loads(await flooder.recv())
            assert welcome["type"] == "welcome", welcome
            replies: list[dict[str, Any]] = []
            try:
                for _ in range(5000):  # pipelined, flat out
                    await flooder.send(ping)
                while True:
                    replies.append(json.loads(await asyncio.wait_for(flooder.recv(), 5)))
            except Exception:
                return flooder.close_code, replies

        async def attack() -> list[tuple[int | None, list[dict[str, Any]]]]:
            loop = asyncio.get_running_loop()
            until = loop.time() + _KEEP_AT_IT
            floods = [await flood(0)]
            while loop.time() < until:
                floods.append(await flood(len(floods)))
            return floods

        floods, _ = await _beside(port, attack)
        assert len(floods) > 1
        for close_code, replies in floods:
            assert close_code == 1008, f"the flooder was not cut off ({close_code})"
            limited = [r for r in replies if r.get("code") == "rate_limited"]
            assert 1 <= len(limited) <= 20, f"{len(limited)} rate_limited replies to one flood"
            assert all(r["retry_after"] > 0 for r in limited)
        assert proc.poll() is None
    finally:
        stop(proc)


async def test_many_connections_of_one_address_share_its_budget(tmp_path: Path) -> None:
    async with running_server(tmp_path, ip_rate=100.0, ip_burst=100, rate=50.0, burst=50) as server:
        crowd = [await player(server, f"c{i}") for i in range(10)]
        for client in crowd:  # each connection under its own limit, the address over its own
            for _ in range(20):
                await client.send(m.Ping())
        over = 200 - 100 - 5  # pings sent, less the address's burst, less what refilled meanwhile
        limited = 0
        for _ in range(500):  # until the server has refused enough and a refusal has arrived
            limited += sum(
                1 for c in crowd for e in c.drain() if isinstance(e, m.Error) and e.code == "rate_limited"
            )
            if limited and server.arena.errors["rate_limited"] >= over:
                break
            await asyncio.sleep(0.02)
        assert limited > 0, "the address's budget did not hold"
        assert server.arena.errors["rate_limited"] >= over


async def test_resumes_do_not_grow_the_timer_heap(tmp_path: Path) -> None:
    async with running_server(tmp_path, rate=10_000.0, burst=10_000) as server:
        x, _, room, _ = await seated_pair(server, time_control=m.Increment(base_ms=86_400_000))
        await x.request(m.Move(room=room, cell=4))
        for _ in range(500):
            await x.request(m.Resume(rooms={room: x.last_seq[room]}))
        assert len(server._timers) < 10, len(server._timers)


def test_the_thread_tools_work() -> None:
    """The deaf client's frames are well-formed (a server would refuse them otherwise)."""
    assert frame(0x1, b"hi")[:2] == bytes([0x81, 0x82])
    assert len(frame(0x1, b"x" * 200)) == 2 + 2 + 4 + 200


pytestmark = pytest.mark.timeout(180)


# --- item 4: a few accounts on one address against a house bot ----------------------------------


async def _challenge_flood(port: int, name: str, stop_event: asyncio.Event) -> dict[str, int]:
    """One attacker on 127.0.0.2: challenges ``rule-bot`` 18 times a second, untimed, as O
    (the bot moves first, then waits forever for a move that never comes); counts replies."""
    counts: dict[str, int] = {}
    async with connect(f"ws://127.0.0.1:{port}", compression=None, local_addr=("127.0.0.2", 0)) as ws:
        await ws.send(json.dumps({"type": "hello", "name": name, "ref": "h"}))

        async def read() -> None:
            async for raw in ws:
                reply = json.loads(raw)
                key = reply["type"] + (":" + reply["code"] if reply["type"] == "error" else "")
                counts[key] = counts.get(key, 0) + 1

        reader = asyncio.create_task(read())
        challenge = json.dumps({"type": "challenge", "opponent": "rule-bot", "colour": "o"})
        while not stop_event.is_set():
            await ws.send(challenge)
            await asyncio.sleep(1 / 18)
        await asyncio.sleep(0.5)
        reader.cancel()
    return counts


async def _play_out(client: Any, room: str) -> m.GameEnded:
    """Play X in ``room`` against the bot, the lowest free cell each turn, to the end."""
    from protocol.session import RemoteError

    taken: set[int] = set()
    while True:
        cell = min(set(range(9)) - taken)
        try:
            await client.request(m.Move(room=room, cell=cell), timeout=30)
        except RemoteError as exc:  # the bot's last move ended it
            assert exc.code == "game_over", exc
            ended: m.GameEnded = await client.expect(m.GameEnded, room=room, timeout=30)
            return ended
        while True:
            event = await client.expect((m.Moved, m.GameEnded), room=room, timeout=30)
            if isinstance(event, m.GameEnded):
                return event
            taken.add(event.cell)
            if event.mark == "o":
                break


async def test_a_few_accounts_on_one_address_cannot_deny_a_house_bot(tmp_path: Path) -> None:
    """Four accounts challenge ``rule-bot`` flat out and never move in the games it takes:
    the server refuses their challenges over the address's share of the bot's list at once,
    the bot plays at most 2 games with each, and a player on another address still gets a
    game with it and has every move answered."""
    from protocol.client import connect as connect_player

    port = free_port()
    proc = serve(tmp_path / "a.db", port, "--house-bots", "rule")
    try:
        url = f"ws://127.0.0.1:{port}"
        watcher = await player(url, "watcher")
        for _ in range(200):
            snap = await watcher.request(m.LobbySubscribe())
            assert isinstance(snap, m.LobbySnapshot)
            if any(p.name == "rule-bot" for p in snap.players):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("rule-bot never came online")
        await watcher.close()
        stop_event = asyncio.Event()
        attack = [asyncio.create_task(_challenge_flood(port, f"atk{i}", stop_event)) for i in range(4)]
        await asyncio.sleep(3.0)  # the bot's list and games fill up

        client = await connect_player(url, "honest", timeout=30)  # from 127.0.0.1
        sent = await client.request(m.Challenge(opponent="rule-bot", colour="x"), timeout=30)
        assert isinstance(sent, m.ChallengeSent)
        answer = await client.expect((m.ChallengeAccepted, m.ChallengeDeclined), timeout=30)
        assert isinstance(answer, m.ChallengeAccepted), answer
        ended = await _play_out(client, answer.room)
        assert ended.outcome.reason != "timeout"
        await client.close()

        stop_event.set()
        counts = await asyncio.gather(*attack)
    finally:
        stop(proc)
    for each in counts:
        assert each.get("challenge_accepted", 0) <= 2, counts
    assert sum(each.get("error:too_many_challenges", 0) for each in counts) > 0, counts
