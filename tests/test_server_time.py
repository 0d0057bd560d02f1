"""Time-driven endings and coming back: flags, aborts, abandonment, reconnection with replay."""

from __future__ import annotations

from pathlib import Path

from server_harness import player, running_server, seated_pair

from protocol import messages as m


async def test_flag_on_time_per_move(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x, o, room, started = await seated_pair(server, time_control=m.PerMove(move_ms=300))
        assert started.clocks == m.Clocks(x_ms=300, o_ms=300, running=None)
        await x.request(m.Move(room=room, cell=4))
        moved = await o.expect(m.Moved, room=room)
        assert moved.clocks.running == "o" and moved.clocks.o_ms == 300 and moved.clocks.x_ms == 300
        over = await o.expect(m.GameEnded, room=room, timeout=3)  # O never moves
        assert over.outcome.reason == "timeout" and over.outcome.result == "1-0"
        row = server.store.query("SELECT result, reason FROM games WHERE id=?", (started.game,))
        assert row == [("1-0", "timeout")]


async def test_increment_clock_travels_with_moves(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x, o, room, _ = await seated_pair(server, time_control=m.Increment(base_ms=60_000, increment_ms=2000))
        await x.request(m.Move(room=room, cell=4))
        await o.request(m.Move(room=room, cell=0))
        moved = await x.expect(m.Moved, room=room, ply=2)
        # O's own time: charged for the move, then 2 s added (never more than base + increment)
        assert moved.clocks.o_ms is not None and 60_000 < moved.clocks.o_ms <= 62_000
        assert moved.clocks.running == "x"


async def test_abort_when_the_first_move_never_comes(tmp_path: Path) -> None:
    async with running_server(tmp_path, first_move=0.3) as server:
        _x, o, room, started = await seated_pair(server)
        assert started.first_move_ms == 300
        over = await o.expect(m.GameEnded, room=room, timeout=3)
        assert over.outcome.reason == "aborted" and over.outcome.result == "1/2-1/2"
        assert server.store.query("SELECT count(*) FROM ratings") == [(0,)]  # aborted games are not rated


async def test_abandonment_after_the_grace_period(tmp_path: Path) -> None:
    async with running_server(tmp_path, grace=0.3) as server:
        x, o, room, _ = await seated_pair(server)
        await x.request(m.Move(room=room, cell=4))
        await o.close()
        gone = await x.expect(m.PlayerDisconnected, room=room)
        assert gone.player == "bob" and gone.mark == "o" and gone.grace_ms == 300
        over = await x.expect(m.GameEnded, room=room, timeout=3)
        assert over.outcome.reason == "abandoned" and over.outcome.winner == "x"


async def test_reconnect_replays_missed_events_and_the_game_goes_on(tmp_path: Path) -> None:
    async with running_server(tmp_path, grace=5.0) as server:
        x, o, room, _ = await seated_pair(server)
        await x.request(m.Move(room=room, cell=0))
        await o.expect(m.Moved, room=room, ply=1)
        seen = x.last_seq[room]
        await x.close()
        gone = await o.expect(m.PlayerDisconnected, room=room)
        await o.request(m.Move(room=room, cell=3))  # X misses this
        resumed = await x.reconnect()
        assert resumed.rooms == {room: "replay"}
        assert x.welcome.rooms == [room]
        missed = await x.expect(m.Moved, room=room, ply=2)
        assert missed.cell == 3 and missed.seq > gone.seq > seen
        back = await o.expect(m.PlayerReconnected, room=room)
        assert back.player == "alice"
        for client, cell in [(x, 1), (o, 4), (x, 2)]:
            await client.request(m.Move(room=room, cell=cell))
        over = await o.expect(m.GameEnded, room=room)
        assert over.outcome.result == "1-0" and over.moves == [0, 3, 1, 4, 2]


async def test_reconnect_gets_a_snapshot_when_the_log_is_too_short(tmp_path: Path) -> None:
    async with running_server(tmp_path, grace=5.0, replay_events=2) as server:
        x, o, room, _ = await seated_pair(server, variant="tactic-toe")
        await o.close()
        await x.request(m.Move(room=room, cell=0))
        watcher = await player(server, "carol")  # two more events push the move out of the log
        await watcher.request(m.Spectate(room=room))
        await watcher.request(m.Leave(room=room))
        resumed = await o.reconnect()
        assert resumed.rooms == {room: "snapshot"}
        snap = await o.expect(m.Snapshot, room=room)
        assert snap.snapshot.game is not None and snap.snapshot.game.moves == [0]
        assert snap.snapshot.game.to_move == "o" and snap.snapshot.disconnected == {}
        await o.request(m.Move(room=room, cell=4))
        assert (await x.expect(m.Moved, room=room, ply=2)).cell == 4


async def test_leaving_mid_game_resigns_and_closes_the_room(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x, o, room, _ = await seated_pair(server)
        await o.request(m.Leave(room=room))
        over = await x.expect(m.GameEnded, room=room)
        assert over.outcome.reason == "resignation" and over.outcome.winner == "x"
        await x.request(m.Leave(room=room))
        assert room not in server.rooms
        assert server.store.query("SELECT closed FROM rooms WHERE id=?", (room,)) == [(1,)]
