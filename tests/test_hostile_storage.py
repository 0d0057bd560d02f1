"""A failing disk and a database other processes hold, against real `ttt serve` processes
(issue 13, items 2, 7 and 8).

The disk fills up as a full disk behaves: the server process's file size limit
(RLIMIT_FSIZE) is lowered to one byte while it runs, so every write to the database
fails with "database or disk is full", then lifted again. Every move the players were
told of is compared with the database afterwards, as the audit did.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from server_harness import free_port, running_server

from protocol import messages as m
from protocol.client import ArenaClient, RemoteError, connect

TTT = [sys.executable, "-m", "protocol.cli"]
QUIET = ("--log-level", "warning", "--house-bots", "none")
ROOT = Path(__file__).resolve().parent.parent
#: prctl(PR_CAPBSET_DROP), and the capabilities that let root write what it may not.
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _as_ordinary_user() -> None:
    """In the child before exec: root loses the right to ignore file permissions."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


class Serve:
    """A `ttt serve` process; its stderr is read in a thread (a pipe is not subject to the
    file size limit, so the server can still log while its disk is full)."""

    def __init__(self, db: Path | str, *extra: str, ordinary: bool = False) -> None:
        self.port = free_port()
        self.url = f"ws://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        preexec: Callable[[], None] | None = _as_ordinary_user if ordinary else None
        self.proc = subprocess.Popen(
            [*TTT, "serve", "--port", str(self.port), "--db", str(db), *QUIET, *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            preexec_fn=preexec,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    async def started(self) -> None:
        for _ in range(300):
            if any("serving on" in line for line in self.lines):
                return
            if self.proc.poll() is not None:
                break
            await asyncio.sleep(0.05)
        raise RuntimeError("ttt serve did not start: " + "".join(self.lines))

    def healthz(self) -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def metric(self, name: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " ") or line.startswith(name + "_total "):
                    return float(line.split()[-1])
        raise KeyError(name)

    def disk_full(self, full: bool) -> None:
        limit = 1 if full else resource.RLIM_INFINITY
        resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        code = self.proc.wait(20)
        self._reader.join(5)
        return code


def told_moves(*clients: ArenaClient, seen: list[m.ServerMessage]) -> set[tuple[str, int, int]]:
    """Every move any of ``clients`` was told of (drained now, plus those ``seen`` before)."""
    events = list(seen)
    for client in clients:
        events += client.drain()
    return {(e.game, e.ply, e.cell) for e in events if isinstance(e, m.Moved)}


async def refused(request: Any) -> RemoteError:
    try:
        reply = await request
    except RemoteError as exc:
        return exc
    raise AssertionError(f"not refused: {reply}")


async def unhealthy(server: Serve, tries: int = 200) -> tuple[int, dict[str, Any]]:
    """``/healthz`` once it says something other than 200 (or its last answer)."""
    for _ in range(tries):
        status, health = await asyncio.to_thread(server.healthz)
        if status != 200:
            break
        await asyncio.sleep(0.05)
    return status, health


async def two_moves_in(x: ArenaClient, o: ArenaClient, move_ms: int) -> str:
    """A game of ``x`` and ``o`` on a per-move clock, a move each played: its room."""
    joined = await x.request(m.CreateRoom(seat="x", time_control=m.PerMove(move_ms=move_ms)))
    assert isinstance(joined, m.Joined)
    room = joined.room
    await o.request(m.Join(room=room))
    await x.expect(m.GameStarted, room=room)
    await x.request(m.Move(room=room, cell=0))
    await o.request(m.Move(room=room, cell=4))
    return room


async def test_a_full_disk_pauses_the_arena_and_nothing_unstored_is_announced(tmp_path: Path) -> None:
    db = tmp_path / "arena.db"
    server = Serve(db)
    seen: list[m.ServerMessage] = []
    try:
        await server.started()
        x = await connect(server.url, "alice", timeout=30)
        o = await connect(server.url, "bob", timeout=30)
        returning = await connect(server.url, "carol", timeout=30)
        token = returning.welcome.token
        await returning.close()
        room = await two_moves_in(x, o, 1500)

        server.disk_full(True)
        move = asyncio.create_task(x.request(m.Move(room=room, cell=1), timeout=60))
        status, health = await unhealthy(server, 100)  # the writer finds out at its first try
        assert status == 503 and health["status"] == "store_unavailable"
        assert "error" in health["reason"], health  # "disk I/O error": EFBIG

        assert isinstance(await o.request(m.Ping()), m.Pong), "read-only requests still work"
        assert isinstance(await o.request(m.LobbySubscribe()), m.LobbySnapshot)
        busy = await refused(o.request(m.CreateRoom(seat="x")))
        assert busy.code == "store_unavailable" and busy.retry_after and busy.retry_after > 0
        assert (await refused(connect(server.url, "dave", timeout=30))).code == "store_unavailable"
        back = await connect(server.url, "carol", token=token, timeout=30)
        assert back.welcome.player.name == "carol", "a returning player's hello stores nothing"
        await back.close()
        await asyncio.sleep(2.5)  # longer than bob's 1.5 s for a move: his clock must not run
        assert not move.done(), "a move that is not stored is not answered"
        seen += o.drain()
        assert not [e for e in seen if isinstance(e, m.Moved) and e.ply == 3], "nor announced"

        server.disk_full(False)
        assert isinstance(await move, m.Ok)
        third = await o.expect(m.Moved, room=room, ply=3, timeout=30)
        seen.append(third)
        assert (await asyncio.to_thread(server.healthz))[0] == 200
        assert isinstance(await o.request(m.Move(room=room, cell=8)), m.Ok), "bob did not lose on time"
        await x.request(m.Move(room=room, cell=2))
        ended = await o.expect(m.GameEnded, room=room, timeout=30)
        assert ended.outcome.reason != "timeout" and ended.outcome.winner == "x"
        await asyncio.sleep(0.2)  # x's own events
        told = told_moves(x, o, seen=seen)
        await x.close()
        await o.close()
    finally:
        code = server.stop()
    assert code == 0, "".join(server.lines)
    with sqlite3.connect(db) as conn:
        stored = set(conn.execute("SELECT game, ply, cell FROM moves"))
    assert told == stored == {(f"{room}.1", ply, cell) for ply, cell in enumerate((0, 4, 1, 8, 2), 1)}
    assert not any("Traceback" in line for line in server.lines), "".join(server.lines)

    again = Serve(db)  # after a restart the database and the players agree
    try:
        await again.started()
        status, _ = await asyncio.to_thread(again.healthz)
        assert status == 200
    finally:
        again.stop()


def _read_only_cases(tmp: Path) -> list[tuple[str, Path]]:
    """A database file nobody may write, and a folder nobody may create files in."""
    shut = tmp / "shut"
    shut.mkdir()
    sqlite3.connect(shut / "arena.db").close()
    fixed = tmp / "fixed"
    fixed.mkdir()
    db = fixed / "arena.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    os.chmod(db, 0o444)
    os.chmod(shut, 0o555)
    return [("read-only file", db), ("read-only folder", shut / "arena.db")]


@pytest.mark.parametrize("case", [0, 1])
async def test_a_database_it_cannot_write_stops_the_start_with_one_line(case: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        what, db = _read_only_cases(Path(tmp))[case]
        server = Serve(db, ordinary=os.geteuid() == 0)  # root writes anything: not as root
        server.proc.wait(30)
        code = server.stop()
        lines = [line for line in server.lines if line.strip()]
        assert code == 2, (what, lines)
        assert len(lines) == 1 and "cannot" in lines[0] and str(db.parent) in lines[0], (what, lines)
        assert "Traceback" not in "".join(lines)


LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
print("released", flush=True)
"""


async def test_a_lock_held_by_another_process_does_not_stall_the_loop(tmp_path: Path) -> None:
    """Two nodes' worth of reads (node ids) on one file: a new name is looked up in the
    shared store. While another process holds the write lock, the server keeps answering
    pings and /healthz before its writer has even given up its first try (5 s); /healthz
    may already say 503 (a write stuck over ``store_stall`` counts as failing)."""
    db = tmp_path / "arena.db"
    server = Serve(db, "--node-id", "a")
    locker: subprocess.Popen[str] | None = None
    try:
        await server.started()
        x = await connect(server.url, "alice", timeout=30)
        o = await connect(server.url, "bob", timeout=30)
        joined = await x.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined)
        await o.request(m.Join(room=joined.room))
        await x.expect(m.GameStarted, room=joined.room)
        locker = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert locker.stdout is not None and locker.stdin is not None
        assert (await asyncio.to_thread(locker.stdout.readline)).strip() == "locked"
        move = asyncio.create_task(x.request(m.Move(room=joined.room, cell=0), timeout=60))
        await asyncio.sleep(0.3)  # the writer is waiting for the lock
        newcomer = asyncio.create_task(connect(server.url, "carol", timeout=60))
        await asyncio.sleep(0.3)  # carol's name is being looked up
        pongs = 0
        for _ in range(5):
            if isinstance(await o.request(m.Ping(), timeout=60), m.Pong):
                pongs += 1
        status, _ = await asyncio.to_thread(server.healthz)
        retried = await asyncio.to_thread(server.metric, "ttt_store_retried")
        assert pongs == 5 and status in (200, 503), "answered while the writer still waits for the lock"
        assert retried == 0, "...before SQLite gave up the writer's first try"
        assert not move.done(), "the move waits for the store"
        locker.stdin.write("go\n")
        locker.stdin.flush()
        assert (await asyncio.to_thread(locker.stdout.readline)).strip() == "released"
        assert isinstance(await move, m.Ok)
        carol = await newcomer
        assert carol.welcome.player.name == "carol"
        await carol.close()
        await x.close()
        await o.close()
    finally:
        if locker is not None:
            locker.kill()
            locker.wait(10)
        server.stop()


async def test_a_write_stuck_on_a_lock_counts_as_failing_and_pauses_the_clocks(tmp_path: Path) -> None:
    """Another process holds the write lock and keeps it: the writer's first try waits in
    SQLite's busy timeout (5 s). A write that has not returned for ``--store-stall``
    (0.5 s here, 1 s by default) already counts as the store failing: ``/healthz`` turns
    503, a move that comes then (the opponent's, behind the stuck one) is refused at once
    with ``store_unavailable``, and the clocks stop from the moment the write got stuck,
    so nobody loses on time."""
    db = tmp_path / "arena.db"
    server = Serve(db, "--store-stall", "0.5")
    locker: subprocess.Popen[str] | None = None
    seen: list[m.ServerMessage] = []
    try:
        await server.started()
        x = await connect(server.url, "alice", timeout=30)
        o = await connect(server.url, "bob", timeout=30)
        room = await two_moves_in(x, o, 2500)
        locker = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert locker.stdout is not None and locker.stdin is not None
        assert (await asyncio.to_thread(locker.stdout.readline)).strip() == "locked"
        move = asyncio.create_task(x.request(m.Move(room=room, cell=1), timeout=60))  # bob's clock runs
        status, health = await unhealthy(server, 200)
        assert status == 503 and health["status"] == "store_unavailable", health
        busy = await refused(o.request(m.Move(room=room, cell=2), timeout=30))
        assert busy.code == "store_unavailable" and busy.retry_after and busy.retry_after > 0
        await asyncio.sleep(3.0)  # longer than bob's 2.5 s for a move: his clock must not run
        assert not move.done(), "the stuck move is not answered before it is stored"
        seen += o.drain()
        late = [e for e in seen if isinstance(e, m.GameEnded) or (isinstance(e, m.Moved) and e.ply > 2)]
        assert not late, "nothing unstored is announced"
        locker.stdin.write("go\n")
        locker.stdin.flush()
        assert (await asyncio.to_thread(locker.stdout.readline)).strip() == "released"
        assert isinstance(await move, m.Ok)
        seen.append(await o.expect(m.Moved, room=room, ply=3, timeout=30))
        assert isinstance(await o.request(m.Move(room=room, cell=2), timeout=30), m.Ok), "bob lost on time"
        assert (await asyncio.to_thread(server.healthz))[0] == 200
        await asyncio.sleep(0.2)
        told = told_moves(x, o, seen=seen)
        await x.close()
        await o.close()
    finally:
        if locker is not None:
            locker.kill()
            locker.wait(10)
        code = server.stop()
    assert code == 0, "".join(server.lines)
    with sqlite3.connect(db) as conn:
        stored = set(conn.execute("SELECT game, ply, cell FROM moves"))
    assert told == stored == {(f"{room}.1", ply, cell) for ply, cell in enumerate((0, 4, 1, 2), 1)}
    assert not any("Traceback" in line for line in server.lines), "".join(server.lines)


async def test_a_bot_sends_again_a_move_refused_while_the_disk_is_full(tmp_path: Path) -> None:
    """A bot's move that comes during an outage is refused (``store_unavailable``); the bot
    sends it again after ``retry_after`` until the store works, and the game goes on."""
    db = tmp_path / "arena.db"
    server = Serve(db)
    bot: subprocess.Popen[bytes] | None = None
    try:
        await server.started()
        thinker = ("--strategy", "rule", "--name", "slowbot", "--think-ms", "1500")
        bot = subprocess.Popen(
            [*TTT, "bot", "--server", server.url, *thinker],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        x = await connect(server.url, "alice", timeout=30)
        other = await connect(server.url, "bob", timeout=30)
        for _ in range(300):  # until the bot is online
            try:
                await x.request(m.Challenge(opponent="slowbot", colour="x"), timeout=30)
                break
            except RemoteError as exc:
                assert exc.code == "no_such_player", exc
                await asyncio.sleep(0.1)
        accepted = await x.expect(m.ChallengeAccepted, timeout=30)
        room = accepted.room  # both seated: the game has started
        await x.request(m.Move(room=room, cell=4))  # stored; the bot thinks 1.5 s
        server.disk_full(True)
        stuck = asyncio.create_task(other.request(m.CreateRoom(seat="x"), timeout=60))  # finds it full
        await unhealthy(server, 100)
        await asyncio.sleep(3.0)  # the bot's move comes, is refused, is sent again
        assert not [e for e in x.drain() if isinstance(e, m.Moved) and e.ply == 2]
        refusals = await asyncio.to_thread(server.metric, 'ttt_errors_total{code="store_unavailable"}')
        assert refusals >= 2, "the bot's move was refused, and again when sent again"
        server.disk_full(False)
        reply = await x.expect(m.Moved, room=room, ply=2, timeout=30)
        assert reply.mark == "o", "the bot's move, sent again, is stored and announced"
        assert isinstance(await stuck, m.Joined)
        await x.close()
        await other.close()
    finally:
        if bot is not None:
            bot.terminate()
            bot.wait(20)
        server.stop()


async def test_new_players_from_one_address_are_limited_and_returning_ones_are_not(tmp_path: Path) -> None:
    async with running_server(tmp_path, signup_burst=3, signup_rate=0.01) as server:
        url = f"ws://127.0.0.1:{server.port}"
        first = [await connect(url, f"sock{i}", timeout=10) for i in range(3)]
        over = await refused(connect(url, "sock3", timeout=10))
        assert over.code == "too_many_accounts" and over.retry_after and over.retry_after > 1
        taken = await refused(connect(url, "SOCK0", timeout=10))
        assert taken.code == "name_taken", "a taken name spends nothing and says why"
        token = first[0].welcome.token
        await first[0].close()
        back = await connect(url, "sock0", token=token, timeout=10)
        assert back.welcome.player.name == "sock0", "a returning player is never counted"
        assert server.store.query("SELECT count(*) FROM players") == [(3,)]
        for client in [*first[1:], back]:
            await client.close()
