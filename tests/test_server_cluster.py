"""Clustered nodes in process (real servers, one shared SQLite file, no feed): requests for a
room hosted elsewhere are redirected by the lease table; a room whose node's lease ran out
answers ``room_moving`` until a node takes it over; the taking over itself (`Cluster.beat`)
with the game's moves and clocks as stored."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from server_harness import player, running_server, url_of

from protocol import messages as m
from protocol.client import RemoteError
from server.ops import GameSaved, MoveSaved, RoomSaved
from server.store import Store

#: A lease long enough that no renewal (nor look for orphaned rooms) happens by itself in a test.
STILL = {"lease": 120.0, "lease_renew": 60.0}


async def test_a_room_on_another_node_is_found_by_the_lease_table(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, node_id="a", **STILL) as node_a,
        running_server(tmp_path, node_id="b", **STILL) as node_b,
    ):
        host = await player(node_a, "host")
        joined = await host.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined)
        guest = await player(node_b, "guest")  # b has no feed: only the lease table says where it is
        seated = await guest.request(m.Join(room=joined.room))
        assert isinstance(seated, m.Joined) and guest.url == url_of(node_a)
        await host.expect(m.GameStarted, room=joined.room)
        # the host comes back through b: its resume is sent on to a, which hosts the room
        host.session.last_seq[joined.room] = 0
        resumed = await host.reconnect(url_of(node_b))
        assert resumed.rooms == {joined.room: "snapshot"} and host.url == url_of(node_a)
        # a room hosted nowhere is still just unknown
        other = await player(node_b, "other")
        with pytest.raises(RemoteError) as refused:
            await other.request(m.Join(room="nowhere"))
        assert refused.value.code == "no_such_room"


def _orphan(path: str, x: str, o: str) -> str:
    """A game of node z, which died: its lease ran out long ago."""
    z = Store(path)
    z.lease_register("z", "ws://127.0.0.1:9", int(time.time() * 1000) - 60_000)
    clock = '{"kind":"increment","base_ms":60000,"increment_ms":0}'
    z.write(
        [
            RoomSaved("z-1", "classic", clock, True, False, None, None, (), x, o, 4, False),
            GameSaved("z-1.1", "z-1", 1, "classic", x, o, clock, True, None, (), 60_000, 60_000),
            MoveSaved("z-1.1", 0, 4, 50_000, 60_000, "z-1", 5),
            MoveSaved("z-1.1", 1, 0, 50_000, 41_000, "z-1", 6),
        ]
    )
    z.close()
    return "z-1"


async def test_a_dead_nodes_room_is_moving_until_taken_over_then_resumes_with_moves_and_clocks(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, node_id="b", **STILL) as node_b:
        xavier = await player(node_b, "xavier")
        olga = await player(node_b, "olga")
        room = _orphan(node_b.config.db, xavier.player_id, olga.player_id)
        xavier.session.last_seq[room] = 6
        with pytest.raises(RemoteError) as moving:
            await xavier.resume()
        assert moving.value.code == "room_moving" and moving.value.retry_after == 0.5
        with pytest.raises(RemoteError) as moving:
            await olga.request(m.Move(room=room, cell=8))
        assert moving.value.code == "room_moving"
        assert node_b.cluster is not None
        await node_b.cluster.beat()  # the lease is renewed, and z's room taken over
        assert room in node_b.rooms and node_b.cluster.adopted == 1
        metrics = node_b.prometheus.text().decode()
        assert "ttt_rooms_adopted_total 1.0" in metrics and "ttt_lease_epoch 1.0" in metrics
        resumed = await xavier.resume()
        assert resumed.rooms == {room: "replay"}
        watcher = await player(node_b, "watcher")
        seen = await watcher.request(m.Spectate(room=room))
        assert isinstance(seen, m.Joined) and seen.snapshot.game is not None
        game = seen.snapshot.game
        assert game.moves == [4, 0] and game.to_move == "x"
        # clocks as stored after the last move: the time the room spent between nodes is not charged
        assert game.clocks.o_ms == 41_000 and game.clocks.x_ms <= 50_000 and game.clocks.running == "x"
        assert seen.snapshot.disconnected.keys() == {"o"}  # olga has not come back yet
        ok = await xavier.request(m.Move(room=room, cell=8))
        assert isinstance(ok, m.Ok)
        stored = node_b.store.query("SELECT cell FROM moves WHERE game = 'z-1.1' ORDER BY ply")
        assert stored == [(4,), (0,), (8,)]


async def test_a_room_this_node_took_over_but_has_not_loaded_yet_is_moving_not_gone(tmp_path: Path) -> None:
    async with running_server(tmp_path, node_id="b", **STILL) as node_b:
        xavier = await player(node_b, "xavier")
        olga = await player(node_b, "olga")
        room = _orphan(node_b.config.db, xavier.player_id, olga.player_id)
        assert node_b.cluster is not None and node_b.cluster.lease.epoch is not None
        # the takeover committed in the database; the room is not in b's memory yet
        node_b.store.adopt_rooms("b", node_b.cluster.lease.epoch, node_b.store.orphan_rooms(2**62), 2**62)
        xavier.session.last_seq[room] = 6
        with pytest.raises(RemoteError) as moving:
            await xavier.resume()
        assert moving.value.code == "room_moving"
        assert xavier.session.last_seq == {room: 6}  # not told "gone": the client still knows the room


async def test_a_node_that_lost_its_lease_drops_its_rooms_and_sends_their_players_off(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, node_id="a", **STILL) as node_a:
        host = await player(node_a, "host")
        joined = await host.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined) and node_a.cluster is not None
        epoch = node_a.cluster.lease.epoch
        # node b took the room over (as after a's lease ran out while a was paused)
        b = Store(node_a.config.db)
        b.lease_register("b", "ws://127.0.0.1:1", int(time.time() * 1000) + 600_000)
        b.db.execute("UPDATE leases SET epoch = epoch + 1 WHERE node = 'a'")
        b.db.execute("UPDATE room_owners SET node = 'b', epoch = 1 WHERE room = ?", (joined.room,))
        await node_a.cluster.beat()  # the renewal fails: a drops the room, and starts a new epoch
        assert joined.room not in node_a.rooms and node_a.cluster.dropped == 1
        assert node_a.cluster.lease.epoch == (epoch or 0) + 2
        goodbye = await host.expect(m.Goodbye, timeout=5)
        assert goodbye.close_code == 1012
        other = await player(node_a, "other")
        with pytest.raises(OSError):  # redirected to b (whose address here leads nowhere)
            await other.request(m.Spectate(room=joined.room))
        assert other.url == "ws://127.0.0.1:1"
        b.close()
