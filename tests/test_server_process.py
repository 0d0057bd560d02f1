"""`ttt serve` as a real process: SIGKILL mid-game and restart (the game finishes afterwards,
finished games and ratings are kept), SIGTERM telling clients (close code 1001), and the
house bots it starts: in the lobby by default, and back in their games after a restart."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from hostile import launch
from server_harness import free_port, player, seated_pair

from bots.tournament.runner import start_server
from protocol import messages as m
from protocol.client import ArenaClient, RemoteError
from protocol.rules import State
from protocol.session import ConnectionLost
from server.storage import open_store

#: Most tests here want no house bots (a later ``--house-bots`` wins).
HOUSE_NONE = ("--house-bots", "none")


async def start_serve(db: Path | str, port: int, *extra: str) -> subprocess.Popen[bytes]:
    proc = launch(db, port, *extra)
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


async def test_sigkill_mid_game_then_restart_and_finish(any_db: str) -> None:
    """On either store (a SQLite file, a PostgreSQL database)."""
    db, port = any_db, free_port()
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
        await o.expect(m.Moved, room=room, ply=3)  # olga has seen every event: she resumes by replay
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
    store = open_store(db)
    rows = store.query("SELECT result, reason FROM games ORDER BY started")
    store.close()
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


async def in_lobby(client: ArenaClient, names: set[str], timeout: float = 60) -> dict[str, m.PlayerInfo]:
    """The players online once all of ``names`` are (the lobby's snapshot, then its updates)."""
    snapshot = await client.request(m.LobbySubscribe())
    assert isinstance(snapshot, m.LobbySnapshot)
    online = {p.name: p for p in snapshot.players}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not names <= online.keys():
        update = await client.expect(m.LobbyUpdate, max(0.01, deadline - loop.time()))
        online.update((p.name, p) for p in update.players)
        for gone in update.players_gone:
            online = {n: p for n, p in online.items() if p.id != gone}
    await client.request(m.LobbyUnsubscribe())
    return online


async def challenge_when_online(client: ArenaClient, bot: str) -> str:
    """Challenge ``bot`` (as X, classic, no clock) once it is online; the room."""
    for _ in range(600):
        try:
            await client.request(m.Challenge(opponent=bot, variant="classic", colour="x", rated=False))
        except RemoteError as exc:
            if exc.code != "no_such_player":
                raise
            await asyncio.sleep(0.1)
            continue
        return (await client.expect(m.ChallengeAccepted, 20)).room
    raise AssertionError(f"{bot} never came online")


async def exchange(client: ArenaClient, room: str, state: State) -> State:
    """Move (not ending the game while another move does not) and wait for the bot's answer."""
    cells = state.legal_moves()
    cell = next((c for c in cells if not state.play(c).is_over), cells[0])
    await client.request(m.Move(room=room, cell=cell))
    state = state.play(cell)
    if not state.is_over:
        answer = await client.expect(m.Moved, 30, room=room, ply=state.ply + 1)
        state = state.play(answer.cell)
    return state


async def test_house_bots_come_back_after_sigterm_and_kill_and_finish_their_games(tmp_path: Path) -> None:
    """The house bot's game goes on across a SIGTERM'd server and a ``kill -9``'d one:
    the bot comes back with its token (kept beside the database), never resigns."""
    db, port = tmp_path / "arena.db", free_port()
    url = f"ws://127.0.0.1:{port}"
    serve = ("--grace", "30", "--house-bots", "rule")
    proc = await start_serve(db, port, *serve)
    alice = await player(url, "alice")
    try:
        room = await challenge_when_online(alice, "rule-bot")
        state = await exchange(alice, room, State.start("classic"))
        for signum in (signal.SIGTERM, signal.SIGKILL):
            os.kill(proc.pid, signum)
            assert proc.wait(20) == (0 if signum == signal.SIGTERM else -signal.SIGKILL)
            stop(proc)
            proc = await start_serve(db, port, *serve)
            # replay, or a snapshot if the bot's going (seats held) was announced as the server stopped
            assert (await alice.reconnect()).rooms.keys() == {room}
            assert "rule-bot" in await in_lobby(alice, {"rule-bot"})
            state = await exchange(alice, room, state)  # the bot took its seat up again and answered
        while not state.is_over:
            state = await exchange(alice, room, state)
        over = await alice.expect(m.GameEnded, 10, room=room)
        assert over.outcome.reason in ("line", "full_board") and len(over.moves) == state.ply
        assert (tmp_path / "arena.db.house" / "rule-bot.token").read_text().strip()
    finally:
        await alice.close()
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(30)
        stop(proc)
    with sqlite3.connect(db) as conn:
        (reason,) = conn.execute("SELECT reason FROM games").fetchone()
    assert reason in ("line", "full_board")


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    if not path.exists():
        pytest.skip("no /proc children list on this system")
    return [int(c) for c in path.read_text().split()]


async def test_serve_starts_the_house_bots_unless_told_none(tmp_path: Path) -> None:
    """`ttt serve` with no flags: rule, minimax and table are in the lobby, offering their
    levels; with ``--house-bots none`` it starts no bot process at all."""
    proc, url = await start_server(str(tmp_path / "a.db"), house_bots=None)
    try:
        newcomer = await player(url, "newcomer")
        online = await in_lobby(newcomer, {"rule-bot", "minimax-bot", "table-bot"})
        for name in ("rule-bot", "minimax-bot", "table-bot"):
            assert online[name].kind == "bot" and online[name].levels == ["easy", "medium", "hard", "best"]
        await newcomer.close()
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    proc, _ = await start_server(str(tmp_path / "b.db"))  # --house-bots none
    try:
        assert children(proc.pid) == []
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)


def test_the_server_never_imports_the_bots() -> None:
    """Layers: the house bots plug into ``ttt serve`` from above (`bots.cli`); no module
    of ``server/`` imports ``bots``, not even inside a function."""
    import ast

    root = Path(__file__).parent.parent / "server"
    upward = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            upward += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "bots"]
    assert len(list(root.rglob("*.py"))) > 10 and upward == []
