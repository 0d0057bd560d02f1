"""The resume guarantee, against a real server: a connection hears a room's events only
once it has been answered for that room, and from then on every later event once, in
order. Raw WebSocket clients here, so nothing a client library does hides a gap."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_harness import player, running_server, seated_pair, url_of
from websockets.asyncio.client import ClientConnection, connect

from protocol import messages as m
from protocol.rules import State, find_variant
from server.app import ArenaServer

ROOM_EVENTS = m.ROOM_EVENT_TYPES - {"snapshot"}


class Raw:
    """A raw connection that keeps every frame it gets, in order."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self._task = asyncio.create_task(self._read())
        self._new = asyncio.Event()

    @classmethod
    async def open(cls, server: ArenaServer) -> Raw:
        return cls(await connect(url_of(server), compression=None))

    async def _read(self) -> None:
        async for frame in self.ws:
            self.frames.append(json.loads(frame))
            self._new.set()

    async def send(self, **message: Any) -> None:
        await self.ws.send(json.dumps(message))

    async def until(self, kind: str, timeout: float = 5.0, **fields: Any) -> dict[str, Any]:
        async def seek() -> dict[str, Any]:
            while True:
                for frame in self.frames:
                    if frame["type"] == kind and all(frame.get(k) == v for k, v in fields.items()):
                        return frame
                self._new.clear()
                await self._new.wait()

        return await asyncio.wait_for(seek(), timeout)

    async def close(self) -> None:
        """Drop the connection at once (as a lost network does; no closing handshake)."""
        self.ws.transport.abort()
        self._task.cancel()
        await asyncio.sleep(0)

    def events(self, room: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["type"] in ROOM_EVENTS and f.get("room") == room]


async def _settled(*clients: Any) -> None:
    """What the server decided before has reached every client: an empty `resume` is
    answered after everything already on its way to the store (a ping is not: it is
    answered at once)."""
    for client in clients:
        if isinstance(client, Raw):
            ref = f"settle{random.random()}"
            await client.send(type="resume", rooms={}, ref=ref)
            await client.until("resumed", ref=ref)
        else:
            await client.request(m.Resume(rooms={}))


async def test_a_spectator_joining_between_welcome_and_resume_loses_no_move(tmp_path: Path) -> None:
    """The audit's reproduction: Bob drops having seen seq S; Alice moves; Bob says hello;
    a spectator joins (its `seats` event would reach Bob early); Bob resumes with the last
    seq he saw, and must get every event after S, Alice's move included."""
    async with running_server(tmp_path, grace=30.0) as server:
        alice = await player(server, "alice")
        bob = await Raw.open(server)
        await bob.send(type="hello", name="bob", ref="h")
        token = (await bob.until("welcome"))["token"]
        joined = await alice.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined)
        room = joined.room
        await bob.send(type="join", room=room, ref="j")
        await bob.until("joined", ref="j")
        await alice.request(m.Move(room=room, cell=4))
        await bob.until("moved", room=room, ply=1)
        await bob.send(type="move", room=room, cell=0, ref="m")
        await bob.until("ok", ref="m")
        await _settled(bob)
        seen = max(f["seq"] for f in bob.events(room))
        await bob.close()
        await alice.expect(m.PlayerDisconnected, room=room)
        await alice.request(m.Move(room=room, cell=8))  # Bob misses this one

        bob2 = await Raw.open(server)
        await bob2.send(type="hello", name="bob", token=token, ref="h2")
        welcome = await bob2.until("welcome")
        assert welcome["rooms"] == [room]
        watcher = await player(server, "watcher")
        await watcher.request(m.Spectate(room=room))  # a `seats` event while Bob has not resumed
        await _settled(bob2, alice, watcher)
        assert bob2.events(room) == [], "no room event before the room was answered"
        await bob2.send(type="resume", rooms={room: seen}, ref="r")
        resumed = await bob2.until("resumed", ref="r")
        assert resumed["rooms"] == {room: "replay"}
        await _settled(bob2)
        replayed = bob2.events(room)
        seqs = [f["seq"] for f in replayed]
        assert seqs == list(range(seen + 1, server.rooms[room].seq + 1)), seqs
        assert [f["cell"] for f in replayed if f["type"] == "moved"] == [8]
        assert bob2.frames.index(resumed) < bob2.frames.index(replayed[0]), "resumed comes first"
        await bob2.close()


async def test_resuming_inside_hello_leaves_no_window(tmp_path: Path) -> None:
    async with running_server(tmp_path, grace=30.0) as server:
        x, o, room, _ = await seated_pair(server)
        await x.request(m.Move(room=room, cell=4))
        await o.expect(m.Moved, room=room)
        seen = o.last_seq[room]
        token = o.welcome.token
        await o.close()
        await x.expect(m.PlayerDisconnected, room=room)
        await x.request(m.Resign(room=room))  # O misses the end of the game
        back = await Raw.open(server)
        await back.send(type="hello", name="bob", token=token, rooms={room: seen}, ref="h")
        welcome = await back.until("welcome", ref="h")
        assert welcome["resumed"] == {room: "replay"}
        await _settled(back)
        kinds = [f["type"] for f in back.events(room)]
        assert kinds == ["player_disconnected", "game_over", "player_reconnected"], kinds
        assert [f["seq"] for f in back.events(room)] == list(range(seen + 1, server.rooms[room].seq + 1))
        assert back.frames[0]["type"] == "welcome"
        await back.close()


async def test_a_snapshot_is_followed_by_nothing_it_covers(tmp_path: Path) -> None:
    """Bob resumes while Alice's move is decided but not yet stored: the snapshot he gets
    includes it, and the move's event must not reach him again after it."""
    async with running_server(tmp_path, grace=30.0) as server:
        x, o, room, _ = await seated_pair(server)
        token = o.welcome.token
        await o.close()
        await x.expect(m.PlayerDisconnected, room=room)
        back = await Raw.open(server)
        await back.send(type="hello", name="bob", token=token, ref="h")
        await back.until("welcome")
        bob_conn = next(c for c in server.conns.values() if c.player is not None and c.player.name == "bob")
        alice_conn = next(
            c for c in server.conns.values() if c.player is not None and c.player.name == "alice"
        )
        # both decided in one turn of the loop, before the writer stores the move
        server.receive(alice_conn, m.encode(m.Move(room=room, cell=4, ref="mv")))
        server.receive(bob_conn, m.encode(m.Resume(rooms={room: 0}, ref="r")))
        await back.until("resumed", ref="r")
        snapshot = await back.until("snapshot", room=room)
        assert snapshot["snapshot"]["game"]["moves"] == [4]
        await x.request(m.Ping())
        await _settled(back)
        after = [f for f in back.events(room) if f["seq"] <= snapshot["seq"]]
        assert after == [], f"events the snapshot covers came after it: {after}"
        await back.send(type="move", room=room, cell=0, ref="m2")
        await back.until("ok", ref="m2")
        await back.close()


async def test_a_new_spectator_hears_nothing_before_joined(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        _, _, room, _ = await seated_pair(server)
        watcher = await Raw.open(server)
        await watcher.send(type="hello", name="watcher", ref="h")
        await watcher.until("welcome")
        conn = next(c for c in server.conns.values() if c.player is not None and c.player.name == "watcher")
        x_conn = next(c for c in server.conns.values() if c.player is not None and c.player.name == "alice")
        server.receive(x_conn, m.encode(m.Move(room=room, cell=4, ref="mv")))
        server.receive(conn, m.encode(m.Spectate(room=room, ref="s")))
        joined = await watcher.until("joined", ref="s")
        await _settled(watcher)
        position = watcher.frames.index(joined)
        before = [f for f in watcher.frames[:position] if f["type"] in ROOM_EVENTS]
        assert before == []
        covered = [f for f in watcher.events(room) if f["seq"] <= joined["snapshot"]["seq"]]
        assert covered == [] and joined["snapshot"]["game"]["moves"] == [4]
        await watcher.close()


# --- a property: drops, moves, spectators and resumes in any order ------------------------------

Step = tuple[str, int]
steps = st.lists(
    st.tuples(
        st.sampled_from(["move", "drop_x", "drop_o", "watch", "unwatch", "move_pending"]), st.integers(0, 99)
    ),
    min_size=4,
    max_size=24,
)


class Seat:
    """A player that keeps what the docs say a client keeps: per room the last seq seen,
    and the game as its events tell it."""

    def __init__(self, raw: Raw, name: str, token: str) -> None:
        self.raw, self.name, self.token = raw, name, token
        self.last_seq = 0
        self.read = 0
        self.moves: list[int] = []
        self.ended = False

    def absorb(self, room: str) -> None:
        """Apply the frames not read yet, dropping repeats by seq."""
        for frame in self.raw.frames[self.read :]:
            kind = frame["type"]
            if kind in ("joined", "snapshot") and frame.get("room") == room:
                snap = frame["snapshot"]
                self.last_seq = snap["seq"]
                self.moves = list(snap["game"]["moves"]) if snap.get("game") else []
                continue
            if kind in ROOM_EVENTS and frame["room"] == room:
                if frame["seq"] <= self.last_seq:
                    continue
                assert frame["seq"] == self.last_seq + 1, (
                    f"{self.name}: gap {self.last_seq} -> {frame['seq']}"
                )
                self.last_seq = frame["seq"]
                if kind == "moved":
                    assert frame["ply"] == len(self.moves) + 1
                    self.moves.append(frame["cell"])
        self.read = len(self.raw.frames)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(plan=steps, seed=st.integers(0, 2**16))
def test_every_player_ends_with_the_servers_board(tmp_path_factory: Any, plan: list[Step], seed: int) -> None:
    asyncio.run(asyncio.wait_for(_play(tmp_path_factory.mktemp("resume"), plan, seed), 60))


async def _play(tmp: Path, plan: list[Step], seed: int) -> None:
    rng = random.Random(seed)
    # no rate limits: this is about order, and a long plan sends many frames a second
    limits = {"rate": 10_000.0, "burst": 10_000, "ip_rate": 100_000.0, "ip_burst": 100_000}
    async with running_server(tmp, grace=60.0, first_move=60.0, **limits) as server:
        seats: dict[str, Seat] = {}
        for name in ("xena", "oscar"):
            raw = await Raw.open(server)
            await raw.send(type="hello", name=name, ref="h")
            seats[name] = Seat(raw, name, (await raw.until("welcome"))["token"])
        await seats["xena"].raw.send(type="create_room", seat="x", variant="tactic-toe", ref="c")
        room = (await seats["xena"].raw.until("joined", ref="c"))["room"]
        await seats["oscar"].raw.send(type="join", room=room, ref="j")
        await seats["oscar"].raw.until("joined", ref="j")
        watchers: list[Raw] = []
        #: A move sent and not yet acknowledged: the other side's next move waits for it
        #: (two connections' frames may reach the server in either order).
        pending: tuple[Seat, str] | None = None
        state = State.start(find_variant("tactic-toe"), ply_cap=None)
        for n, (action, arg) in enumerate(plan):
            if state.is_over:
                break
            if action in ("move", "move_pending"):
                if pending is not None:
                    await pending[0].raw.until("ok", ref=pending[1])
                    pending = None
                mover = seats["xena" if state.ply % 2 == 0 else "oscar"]
                cell = rng.choice(sorted(state.legal_moves()))
                state = state.play(cell)
                await mover.raw.send(type="move", room=room, cell=cell, ref=f"m{n}")
                if action == "move":
                    await mover.raw.until("ok", ref=f"m{n}")
                else:
                    pending = (mover, f"m{n}")
            elif action in ("drop_x", "drop_o"):
                seat = seats["xena" if action == "drop_x" else "oscar"]
                await _settled(seat.raw)  # a move it sent is decided before this is answered
                if pending is not None and pending[0] is seat:
                    pending = None
                seat.absorb(room)
                await seat.raw.close()
                seat.raw = await Raw.open(server)
                seat.read = 0
                await seat.raw.send(type="hello", name=seat.name, token=seat.token, ref="h")
                await seat.raw.until("welcome")
                if arg % 2:  # something happens in the room between welcome and resume
                    w = await Raw.open(server)
                    await w.send(type="hello", name=f"w{n}", ref="h")
                    await w.until("welcome")
                    await w.send(type="spectate", room=room, ref="s")
                    await w.until("joined", ref="s")
                    watchers.append(w)
                await seat.raw.send(type="resume", rooms={room: seat.last_seq}, ref="r")
                await seat.raw.until("resumed", ref="r")
            elif action == "watch":
                w = await Raw.open(server)
                await w.send(type="hello", name=f"w{n}", ref="h")
                await w.until("welcome")
                await w.send(type="spectate", room=room, ref="s")
                watchers.append(w)
            elif action == "unwatch" and watchers:
                await watchers.pop(arg % len(watchers)).close()
        # A dropped connection's leaving is an event of the room (a seq) that the server
        # decides when it notices the drop: wait for every drop to be noticed, then settle.
        open_now = len(seats) + len(watchers)
        for _ in range(400):
            if len(server.conns) == open_now:
                break
            await asyncio.sleep(0.025)
        assert len(server.conns) == open_now, "the server never noticed the dropped connections"
        await _settled(*(s.raw for s in seats.values()), *watchers)
        truth = server.rooms[room].game
        assert truth is not None and list(truth.state.moves) == list(state.moves)
        for seat in seats.values():
            seat.absorb(room)
            assert seat.moves == list(state.moves), seat.name
            assert seat.last_seq == server.rooms[room].seq, seat.name
        for w in watchers:
            await w.close()
        for seat in seats.values():
            await seat.raw.close()
