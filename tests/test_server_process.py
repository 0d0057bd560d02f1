"""`ttt serve` as a real process: SIGKILL mid-game and restart (the game finishes afterwards,
finished games and ratings are kept), and SIGTERM telling clients (close code 1001)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from server_harness import free_port, player, seated_pair

from protocol import messages as m
from protocol.session import ConnectionLost

TTT = [sys.executable, "-m", "protocol.cli"]


async def start_serve(db: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [*TTT, "serve", "--port", str(port), "--db", str(db), "--log-level", "warning", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    for _ in range(200):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "ttt serve died") from None
            await asyncio.sleep(0.05)
    proc.kill()
    raise RuntimeError("ttt serve did not start")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)
    if proc.stderr:
        proc.stderr.close()


async def test_sigkill_mid_game_then_restart_and_finish(tmp_path: Path) -> None:
    db, port = tmp_path / "arena.db", free_port()
    url = f"ws://127.0.0.1:{port}"
    proc = await start_serve(db, port, "--grace", "20")
    try:
        # a finished, rated game first
        a, b, done_room, _ = await seated_pair(url, "alice", "bob")
        for client, cell in [(a, 0), (b, 3), (a, 1), (b, 4), (a, 2)]:
            await client.request(m.Move(room=done_room, cell=cell))
        await b.expect(m.GameEnded, room=done_room)
        # and a game in progress, in tactic-toe, with a clock
        x, o, room, started = await seated_pair(
            url, "xavier", "olga", variant="tactic-toe", time_control=m.Increment(base_ms=60_000)
        )
        for client, cell in [(x, 4), (o, 0), (x, 8)]:
            await client.request(m.Move(room=room, cell=cell))  # each acknowledged: durably written
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        with pytest.raises(ConnectionLost):
            await o.expect(m.GameEnded, timeout=5)
    finally:
        stop(proc)
    proc = await start_serve(db, port, "--grace", "20")
    try:
        resumed = await x.reconnect()
        assert resumed.rooms == {room: "replay"}  # nothing was missed: numbering goes on
        watcher = await player(url, "watcher")
        snap = await watcher.request(m.Spectate(room=room))
        assert isinstance(snap, m.Joined)
        game = snap.snapshot.game
        assert game is not None and game.game == started.game and game.moves == [4, 0, 8]
        assert game.to_move == "o" and game.clocks.running == "o"
        assert snap.snapshot.disconnected.keys() == {"o"}  # olga has not come back yet
        assert (await o.reconnect()).rooms == {room: "replay"}
        assert (await x.expect(m.PlayerReconnected, room=room, player="olga")).mark == "o"
        for client, cell in [(o, 3), (x, 1), (o, 6)]:
            await client.request(m.Move(room=room, cell=cell))
        over = await x.expect(m.GameEnded, room=room)
        assert over.moves == [4, 0, 8, 3, 1, 6] and over.outcome.reason == "line"
        assert over.outcome.winner == "o" and over.outcome.line == [0, 3, 6]
        board = await (await player(url, "reader")).request(m.GetLeaderboard(variant="classic"))
        assert isinstance(board, m.Leaderboard)
        assert [e.name for e in board.entries] == ["alice", "bob"] and board.entries[0].games == 1
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(15) == 0
        stop(proc)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT result, reason FROM games ORDER BY started").fetchall()
    assert rows == [("1-0", "line"), ("0-1", "line")]


async def test_sigterm_tells_clients_and_exits_cleanly(tmp_path: Path) -> None:
    db, port = tmp_path / "arena.db", free_port()
    proc = await start_serve(db, port)
    try:
        client = await player(f"ws://127.0.0.1:{port}", "alice")
        proc.send_signal(signal.SIGTERM)
        bye = await client.expect(m.Goodbye, timeout=10)
        assert bye.close_code == 1001
        with pytest.raises(ConnectionLost):
            await client.next_event(timeout=10)
        assert client._ws is not None and client._ws.close_code == 1001
        assert proc.wait(15) == 0
    finally:
        stop(proc)
