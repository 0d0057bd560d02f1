"""The networked runner: a tournament played by real bot processes through a live server.

With no server URL it starts one (``ttt serve`` on a free port, a database in a
temporary folder). It starts one ``ttt bot --control`` process per entry and
carries out the `Director`'s schedule: for each game it tells O's process to
expect the challenge and X's process to send it, then waits for either one to
report the end. A bot process that exits loses its running games at once
(reason ``abandoned``) and every later one, unless ``recover`` starts it again (then
only its running games are lost); the tournament goes on. Given the
games already played (``done_records``), it continues an interrupted tournament.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bots.tournament.director import Director, TournamentConfig
from bots.tournament.pairing import GameSpec, TournamentError
from bots.tournament.standings import PlayedGame
from bots.tournament.timecontrol import per_move, with_margin
from protocol import messages as m

TTT = [sys.executable, "-m", "protocol.cli"]
#: Seconds to wait for the second bot's report of a game (its thinking time) once the
#: first has come; past that the game is recorded with the time known.
REPORT_WAIT_S = 2.0
#: Restarts of one bot process at most, with ``recover``.
MAX_RESTARTS = 10
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child sent SIGTERM when this process dies, even by
    ``kill -9`` (Linux ``PR_SET_PDEATHSIG``); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import signal

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return preexec


#: Waits for its stdin to close (the runner ended, however it ended), then for the server
#: (pid argv[2]) to go, then removes the temporary folder (argv[1]).
_REAPER = """
import os, shutil, sys, time
sys.stdin.buffer.read()
pid, end = int(sys.argv[2]), time.monotonic() + 30
while pid and time.monotonic() < end:
    try:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        os.kill(pid, 0)
    except (OSError, IndexError):
        break
    time.sleep(0.1)
shutil.rmtree(sys.argv[1], ignore_errors=True)
"""
#: A game whose challenge was lost (server restart, bot reconnecting) is started again
#: every `RETRY_S` seconds, at most `RETRIES` times, before it is recorded as not played.
RETRY_S = 0.5
RETRIES = 60


async def start_server(
    db: str, *args: str, port: int = 0, timeout: float = 60.0, house_bots: str | None = "none"
) -> tuple[asyncio.subprocess.Process, str]:
    """Start ``ttt serve`` on ``port`` (0: one the system picks, so no race for a free
    port; a fixed one to start a killed server again where its clients look); its URL.
    ``house_bots`` is its ``--house-bots`` (None: its default, the house bots).

    The server names its URL on stderr once it listens; the rest of its log is
    dropped (printed with ``TTT_DEBUG`` set).
    """
    process = await asyncio.create_subprocess_exec(
        *TTT, "serve", "--host", "127.0.0.1", "--port", str(port), "--db", db,
        *(("--house-bots", house_bots) if house_bots is not None else ()), *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        preexec_fn=_die_with_parent(),
    )  # fmt: skip
    assert process.stderr is not None
    try:
        async with asyncio.timeout(timeout):
            async for raw in process.stderr:
                line = raw.decode(errors="replace")
                if os.environ.get("TTT_DEBUG"):
                    sys.stderr.write(line)
                found = re.search(r"serving on (ws://\S+)", line)
                if found:
                    drain = asyncio.create_task(_drain(process.stderr))
                    _DRAINS.add(drain)
                    drain.add_done_callback(_DRAINS.discard)
                    return process, found.group(1)
    except TimeoutError:
        pass
    await _stop(process, terminate_first=True)
    raise TournamentError(f"the embedded server did not start (exit code {process.returncode})")


_DRAINS: set[asyncio.Task[None]] = set()


async def _drain(stream: asyncio.StreamReader) -> None:
    """Keep reading a child's stderr so it never blocks on a full pipe."""
    debug = bool(os.environ.get("TTT_DEBUG"))
    async for raw in stream:
        if debug:
            sys.stderr.write(raw.decode(errors="replace"))


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def spawn_bot(
    url: str, strategy: str, name: str, *extra: str, control: bool = False
) -> asyncio.subprocess.Process:
    """Start one ``ttt bot`` process playing ``strategy`` as ``name`` on the server at ``url``.

    With ``control`` its stdin and stdout are pipes for a runner (pass ``--control`` in
    ``extra`` too). It is sent SIGTERM (it resigns and leaves) if this process dies.
    """
    args = [*TTT, "bot", "--server", url, "--strategy", strategy, "--name", name, *extra]
    pipe = asyncio.subprocess.PIPE if control else asyncio.subprocess.DEVNULL
    return await asyncio.create_subprocess_exec(
        *args, stdin=pipe, stdout=pipe, limit=2**20, preexec_fn=_die_with_parent()
    )


@dataclass
class BotProcess:
    name: str
    strategy: str
    process: asyncio.subprocess.Process
    alive: bool = True
    #: Started again after a crash (``recover``), not ready yet: its games wait.
    restarting: bool = False


@dataclass
class NetworkRunner:
    """Runs ``config`` with one bot process per entry (``entries``: name -> strategy name).

    Attributes:
        server: a ``ws://`` URL, or None to start an embedded server.
        move_ms: the per-move time control of every game (None: no clock)...
        time_control: ...or this clock (``--tc``), if given.
        margin_ms: the time margin (``--timemargin``): the server's clock has it on top,
            the bots plan without it.
        bot_args: extra ``ttt bot`` flags for every bot (``--think-ms``, ``--noise``...).
        on_game: called after each finished game, with the record and the director.
    """

    config: TournamentConfig
    entries: Mapping[str, str]
    seed: int = 0
    server: str | None = None
    move_ms: int | None = 5000
    time_control: m.TimeControl | None = None
    margin_ms: int = 0
    bot_args: tuple[str, ...] = ()
    #: Extra ``ttt bot`` flags of one entry (``--bot name=...,noise=...``), by name.
    entry_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    server_args: tuple[str, ...] = ()
    on_game: Callable[[PlayedGame, Director], None] | None = None
    start_timeout: float = 60.0
    #: Start a bot process again when it dies (cutechess-cli's ``-recover``): it loses only
    #: the games it was playing.
    recover: bool = False
    #: Games already played (from a saved ``games.jsonl``): the tournament continues after them.
    done_records: Sequence[PlayedGame] = ()
    director: Director = field(init=False)
    bots: dict[str, BotProcess] = field(init=False, default_factory=dict)
    url: str = field(init=False, default="")
    _server: asyncio.subprocess.Process | None = field(init=False, default=None)
    _reaper: asyncio.subprocess.Process | None = field(init=False, default=None)
    #: Restarts of each bot process (``recover``).
    restarts: dict[str, int] = field(init=False, default_factory=dict)
    #: Games waiting for a restarted bot to be ready.
    _deferred: list[GameSpec] = field(init=False, default_factory=list)
    #: Games whose end one bot has reported, waiting for the other's thinking time.
    _ended: dict[int, dict[str, Any]] = field(init=False, default_factory=dict)
    _events: asyncio.Queue[tuple[str, dict[str, Any]]] = field(init=False, default_factory=asyncio.Queue)
    _times: dict[int, dict[str, int]] = field(init=False, default_factory=dict)
    _tmp: tempfile.TemporaryDirectory[str] | None = field(init=False, default=None)
    _readers: list[asyncio.Task[None]] = field(init=False, default_factory=list)
    _timers: set[asyncio.Task[None]] = field(init=False, default_factory=set)
    _first: list[GameSpec] = field(init=False, default_factory=list)
    #: Times each game was started again (`_retry`), by number.
    _tries: dict[int, int] = field(init=False, default_factory=dict)
    #: Seconds spent playing (from the first game started to the last ended; no start-up).
    play_seconds: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        missing = [p for p in self.config.players if p not in self.entries]
        if missing:
            raise TournamentError(f"no strategy for {', '.join(missing)}")
        if self.done_records:
            self.director, self._first = Director.resume(self.config, self.done_records)
        else:
            self.director = Director(self.config)

    async def run(self) -> Director:
        """Play the whole tournament; the processes this started are stopped on the way out."""
        try:
            self._tmp = tempfile.TemporaryDirectory(prefix="ttt-tournament-")
            self.url = self.server or await self._start_server()
            # the reaper removes the folder however this process ends (after the server)
            pid = self._server.pid if self._server is not None else 0
            self._reaper = await asyncio.create_subprocess_exec(
                sys.executable, "-c", _REAPER, self._tmp.name, str(pid),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            await self._start_bots()
            began = asyncio.get_running_loop().time()
            await self._play()
            self.play_seconds = asyncio.get_running_loop().time() - began
        finally:
            await self.close()
        return self.director

    # --- processes -----------------------------------------------------------------

    async def _start_server(self) -> str:
        """An embedded server (it dies with this process: PR_SET_PDEATHSIG)."""
        assert self._tmp is not None
        db = os.path.join(self._tmp.name, "arena.db")
        # bots send many moves a second on one connection, all from this machine's address:
        # lift the per-connection and per-address limits of this private server
        lifted = ("--rate", "100000", "--burst", "100000", "--ip-rate", "1000000", "--ip-burst", "1000000")
        fast = (*lifted, "--sync", "NORMAL", *self.server_args)
        self._server, url = await start_server(db, *fast, timeout=self.start_timeout)
        return url

    async def _spawn(self, name: str) -> BotProcess:
        entrants = ",".join(self.config.players)
        extra = ["--seed", str(self.seed), "--max-games", "1000", "--control", "--entrants", entrants]
        if self._tmp is not None:  # a restarted bot comes back as the same player
            token = f"bot-{self.config.players.index(name)}.token"
            extra += ["--token-file", os.path.join(self._tmp.name, token)]
        extra += [*self.bot_args, *self.entry_args.get(name, ())]
        process = await spawn_bot(self.url, self.entries[name], name, *extra, control=True)
        bot = self.bots[name] = BotProcess(name, self.entries[name], process)
        self._readers.append(asyncio.create_task(self._read(bot)))
        return bot

    async def _start_bots(self) -> None:
        for name in self.config.players:
            await self._spawn(name)
        ready: set[str] = set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout
        while ready != set(self.bots):
            try:
                name, event = await asyncio.wait_for(self._events.get(), max(0.1, deadline - loop.time()))
            except TimeoutError:
                raise TournamentError(f"bots not ready in time: {sorted(set(self.bots) - ready)}") from None
            if event.get("event") == "ready":
                ready.add(name)
            elif event.get("event") == "exit":
                raise TournamentError(f"bot {name} exited before it was ready")

    async def _read(self, bot: BotProcess) -> None:
        assert bot.process.stdout is not None
        async for line in bot.process.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                event = json.loads(line)
                if isinstance(event, dict):
                    await self._events.put((bot.name, event))
        await bot.process.wait()
        await self._events.put((bot.name, {"event": "exit", "code": bot.process.returncode}))

    async def _tell(self, bot: BotProcess, command: dict[str, Any]) -> None:
        stdin = bot.process.stdin
        if stdin is None or not bot.alive:
            return
        try:
            stdin.write((json.dumps(command) + "\n").encode())
            await stdin.drain()
        except (ConnectionError, RuntimeError):
            pass  # the process is gone; its exit event follows

    async def close(self) -> None:
        """Stop the bots (closing stdin asks them to leave cleanly), then the embedded server."""
        for bot in self.bots.values():
            if bot.process.stdin is not None:
                with contextlib.suppress(Exception):
                    bot.process.stdin.close()
        for bot in self.bots.values():
            await _stop(bot.process)
        for task in [*self._readers, *self._timers]:
            task.cancel()
        if self._server is not None:
            await _stop(self._server, terminate_first=True)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        if self._reaper is not None:
            if self._reaper.stdin is not None:
                self._reaper.stdin.close()
            await _stop(self._reaper)
            self._reaper = None

    # --- the games ---------------------------------------------------------------------

    async def _play(self) -> None:
        await self._launch(self._first if self.done_records else self.director.start())
        while not self.director.done:
            name, event = await self._events.get()
            kind = event.get("event")
            if kind == "game_over":
                await self._game_over(name, event)
            elif kind == "report_due":
                number = event.get("number")
                if isinstance(number, int) and number in self._ended:
                    await self._record_ended(number)
            elif kind in ("declined", "lost", "retry"):
                number = event.get("number")
                spec = self.director.running.get(number) if isinstance(number, int) else None
                if spec is None:
                    continue
                if kind == "retry":
                    await self._launch([spec])
                    continue
                forget = {"cmd": "forget", "number": spec.number, "challenger": spec.x}
                await self._tell(self.bots[spec.o], forget)
                reason = str(event.get("reason"))
                # a challenge lost with a connection, or to a bot not back yet: try again
                if kind == "lost" or (event.get("by") is None and reason == "no_such_player"):
                    if self._retry(spec):
                        continue
                    await self._launch(self._record_forfeit(spec, None, f"not played: {reason}"))
                else:  # the challenged bot refused: it forfeits
                    await self._forfeit(spec, spec.o, "declined: " + reason)
            elif kind == "ready" and self.bots[name].restarting:
                await self._back(name)
            elif kind == "exit":
                await self._exited(name)

    async def _exited(self, name: str) -> None:
        """A bot process ended: it loses its running games; with ``recover`` it is started
        again (at most `MAX_RESTARTS` times) and its later games wait for it."""
        bot = self.bots[name]
        bot.alive = False
        if self.recover and self.restarts.get(name, 0) < MAX_RESTARTS:
            self.restarts[name] = self.restarts.get(name, 0) + 1
            bot = await self._spawn(name)
            bot.alive, bot.restarting = False, True
        running = self.director.running
        for number in [n for n in self._ended if n in running and name in running[n].players]:
            await self._record_ended(number)  # the game ended before the bot went
        for spec in sorted(self.director.running.values(), key=lambda g: g.number):
            if name in spec.players and spec.number in self.director.running and spec not in self._deferred:
                await self._forfeit(spec, name, "abandoned")

    async def _back(self, name: str) -> None:
        """A restarted bot is ready: start the games that waited for it."""
        bot = self.bots[name]
        bot.alive, bot.restarting = True, False
        waiting = [g for g in self._deferred if g.number in self.director.running]
        self._deferred = []
        await self._launch(waiting)

    async def _game_over(self, name: str, event: dict[str, Any]) -> None:
        """A bot's report of a game's end, with its own thinking time. The game is recorded
        once both bots have reported (so ``games.jsonl`` gets it whole), or the other bot
        is gone, or `REPORT_WAIT_S` has passed."""
        number = event.get("number")
        if not isinstance(number, int):
            return
        mark = str(event.get("mark", "x"))
        times = self._times.setdefault(number, {})
        times[mark] = int(event.get("time_ms") or 0)
        spec = self.director.running.get(number)
        if spec is None:
            return  # a game already forfeited
        moves = [int(c) for c in event.get("moves", [])]
        if tuple(moves[: len(spec.opening)]) != spec.opening:
            return  # a report that cannot be this game (not its opening): the other bot's will come
        self._ended.setdefault(number, event)
        other = spec.o if mark == "x" else spec.x
        if len(times) < 2 and self.bots[other].alive:
            self._later(REPORT_WAIT_S, name, {"event": "report_due", "number": number})
            return
        await self._record_ended(number)

    async def _record_ended(self, number: int) -> None:
        event = self._ended.pop(number)
        spec = self.director.running.get(number)
        if spec is None:
            return  # called off meanwhile (an SPRT that decided)
        moves = [int(c) for c in event.get("moves", [])]
        result, reason = str(event["result"]), str(event["reason"])
        if reason == "aborted" and len(moves) == len(spec.opening):
            # no first move in time (none, or only illegal ones): the side to move loses,
            # as an illegal move loses in play_match
            result = "0-1" if len(moves) % 2 == 0 else "1-0"
        t = self._times.get(number, {})
        new = self.director.finished(
            number, result, reason, moves, (t.get("x", 0), t.get("o", 0)), game_id=event.get("game")
        )
        self._announce()
        await self._launch(new)

    def _later(self, delay: float, name: str, event: dict[str, Any]) -> None:
        """Put ``event`` (from ``name``) in the queue after ``delay`` seconds."""

        async def later() -> None:
            await asyncio.sleep(delay)
            await self._events.put((name, event))

        task = asyncio.create_task(later())
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

    async def _forfeit(self, spec: GameSpec, loser: str, reason: str) -> None:
        await self._launch(self._record_forfeit(spec, loser, reason))

    def _retry(self, spec: GameSpec) -> bool:
        """Start ``spec`` again in a moment (its challenge was lost, e.g. in a server restart,
        or went to a bot still reconnecting); False once it has been tried for too long."""
        tries = self._tries[spec.number] = self._tries.get(spec.number, 0) + 1
        if tries > RETRIES:
            return False
        self._later(RETRY_S, spec.x, {"event": "retry", "number": spec.number})
        return True

    def _record_forfeit(self, spec: GameSpec, loser: str | None, reason: str) -> list[GameSpec]:
        """``loser`` loses ``spec`` without play (a draw if both players are gone, or with no
        ``loser``); the games to start."""
        result = "0-1" if loser == spec.x else "1-0"
        if loser is None or (not self.bots[spec.x].alive and not self.bots[spec.o].alive):
            result = "1/2-1/2"
        new = self.director.finished(spec.number, result, reason, spec.opening)
        self._announce()
        return new

    async def _launch(self, specs: list[GameSpec]) -> None:
        queue = list(specs)
        while queue:
            spec = queue.pop(0)
            x, o = self.bots[spec.x], self.bots[spec.o]
            if (x.restarting or o.restarting) and (x.alive or x.restarting) and (o.alive or o.restarting):
                self._deferred.append(spec)  # a restarted bot is on its way back
                continue
            if not x.alive or not o.alive:
                queue += self._record_forfeit(spec, spec.x if not x.alive else spec.o, "abandoned")
                continue
            opening, margin = list(spec.opening), self.margin_ms
            expect = {"cmd": "expect", "number": spec.number, "challenger": spec.x, "opening": opening}
            await self._tell(o, {**expect, "margin_ms": margin})
            control = self.time_control if self.time_control is not None else per_move(self.move_ms)
            challenge = {
                "cmd": "challenge",
                "number": spec.number,
                "opponent": spec.o,
                "variant": self.config.variant,
                "time_control": with_margin(control, margin).model_dump(mode="json"),
                "margin_ms": margin,
                "opening": opening,
            }
            await self._tell(x, challenge)

    def _announce(self) -> None:
        if self.on_game is not None:
            self.on_game(self.director.records[-1], self.director)


async def _stop(
    process: asyncio.subprocess.Process, terminate_first: bool = False, wait: float = 5.0
) -> None:
    if process.returncode is not None:
        return
    if terminate_first:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
    try:
        await asyncio.wait_for(process.wait(), wait)
        return
    except TimeoutError:
        pass
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        await asyncio.wait_for(process.wait(), wait)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
