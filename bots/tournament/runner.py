"""The networked runner: a tournament played by real bot processes through a live server.

With no server URL it starts one (``ttt serve`` on a free port, a database in a
temporary folder). It starts one ``ttt bot --control`` process per entry and
carries out the `Director`'s schedule: for each game it tells O's process to
expect the challenge and X's process to send it, then waits for either one to
report the end. A bot process that exits loses its running games at once
(reason ``abandoned``) and every later one; the tournament goes on. Given the
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
from bots.tournament.standings import GameRecord

TTT = [sys.executable, "-m", "protocol.cli"]
#: A game whose challenge was lost (server restart, bot reconnecting) is started again
#: every `RETRY_S` seconds, at most `RETRIES` times, before it is recorded as not played.
RETRY_S = 0.5
RETRIES = 60


async def start_server(
    db: str, *args: str, port: int = 0, timeout: float = 60.0
) -> tuple[asyncio.subprocess.Process, str]:
    """Start ``ttt serve`` on ``port`` (0: one the system picks, so no race for a free
    port; a fixed one to start a killed server again where its clients look); its URL.

    The server names its URL on stderr once it listens; the rest of its log is
    dropped (printed with ``TTT_DEBUG`` set).
    """
    process = await asyncio.create_subprocess_exec(
        *TTT, "serve", "--host", "127.0.0.1", "--port", str(port), "--db", db, *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
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

    For ``ttt serve --house-bots``: each house bot is such a process. With ``control`` its
    stdin and stdout are pipes for a runner (pass ``--control`` in ``extra`` too).
    """
    args = [*TTT, "bot", "--server", url, "--strategy", strategy, "--name", name, *extra]
    pipe = asyncio.subprocess.PIPE if control else asyncio.subprocess.DEVNULL
    return await asyncio.create_subprocess_exec(*args, stdin=pipe, stdout=pipe, limit=2**20)


@dataclass
class BotProcess:
    name: str
    strategy: str
    process: asyncio.subprocess.Process
    alive: bool = True


@dataclass
class NetworkRunner:
    """Runs ``config`` with one bot process per entry (``entries``: name -> strategy name).

    Attributes:
        server: a ``ws://`` URL, or None to start an embedded server.
        move_ms: the per-move time control of every game (None: no clock).
        bot_args: extra ``ttt bot`` flags for every bot (``--think-ms``, ``--noise``...).
        on_game: called after each finished game, with the record and the director.
    """

    config: TournamentConfig
    entries: Mapping[str, str]
    seed: int = 0
    server: str | None = None
    move_ms: int | None = 5000
    bot_args: tuple[str, ...] = ()
    server_args: tuple[str, ...] = ()
    on_game: Callable[[GameRecord, Director], None] | None = None
    start_timeout: float = 60.0
    #: Games already played (from a saved ``games.jsonl``): the tournament continues after them.
    done_records: Sequence[GameRecord] = ()
    director: Director = field(init=False)
    bots: dict[str, BotProcess] = field(init=False, default_factory=dict)
    url: str = field(init=False, default="")
    _server: asyncio.subprocess.Process | None = field(init=False, default=None)
    _events: asyncio.Queue[tuple[str, dict[str, Any]]] = field(init=False, default_factory=asyncio.Queue)
    _times: dict[int, dict[str, int]] = field(init=False, default_factory=dict)
    _tmp: tempfile.TemporaryDirectory[str] | None = field(init=False, default=None)
    _readers: list[asyncio.Task[None]] = field(init=False, default_factory=list)
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
            self.url = self.server or await self._start_server()
            await self._start_bots()
            began = asyncio.get_running_loop().time()
            await self._play()
            self.play_seconds = asyncio.get_running_loop().time() - began
        finally:
            await self.close()
        self._merge_times()
        return self.director

    # --- processes -----------------------------------------------------------------

    async def _start_server(self) -> str:
        self._tmp = tempfile.TemporaryDirectory(prefix="ttt-tournament-")
        db = os.path.join(self._tmp.name, "arena.db")
        # bots send many moves a second on one connection: lift the per-connection rate limit
        fast = ("--rate", "100000", "--burst", "100000", "--sync", "NORMAL", *self.server_args)
        self._server, url = await start_server(db, *fast, timeout=self.start_timeout)
        return url

    async def _start_bots(self) -> None:
        for name in self.config.players:
            entrants = ",".join(self.config.players)
            extra = ["--seed", str(self.seed), "--max-games", "1000", "--control", "--entrants", entrants]
            extra += self.bot_args
            process = await spawn_bot(self.url, self.entries[name], name, *extra, control=True)
            self.bots[name] = BotProcess(name, self.entries[name], process)
            self._readers.append(asyncio.create_task(self._read(self.bots[name])))
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
        for task in self._readers:
            task.cancel()
        if self._server is not None:
            await _stop(self._server, terminate_first=True)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # --- the games ---------------------------------------------------------------------

    async def _play(self) -> None:
        await self._launch(self._first if self.done_records else self.director.start())
        while not self.director.done:
            name, event = await self._events.get()
            kind = event.get("event")
            if kind == "game_over":
                await self._game_over(name, event)
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
            elif kind == "exit":
                bot = self.bots[name]
                bot.alive = False
                for spec in sorted(self.director.running.values(), key=lambda g: g.number):
                    if name in spec.players and spec.number in self.director.running:
                        await self._forfeit(spec, name, "abandoned")

    async def _game_over(self, name: str, event: dict[str, Any]) -> None:
        number = event.get("number")
        if not isinstance(number, int):
            return
        mark = str(event.get("mark", "x"))
        self._times.setdefault(number, {})[mark] = int(event.get("time_ms") or 0)
        spec = self.director.running.get(number)
        if spec is None:
            return  # the other bot's report of the same game, or a game already forfeited
        moves = [int(c) for c in event.get("moves", [])]
        if tuple(moves[: len(spec.opening)]) != spec.opening:
            return  # a report that cannot be this game (not its opening): the other bot's will come
        new = self.director.finished(
            number, str(event["result"]), str(event["reason"]), moves, game_id=event.get("game")
        )
        self._announce()
        await self._launch(new)

    async def _forfeit(self, spec: GameSpec, loser: str, reason: str) -> None:
        await self._launch(self._record_forfeit(spec, loser, reason))

    def _retry(self, spec: GameSpec) -> bool:
        """Start ``spec`` again in a moment (its challenge was lost, e.g. in a server restart,
        or went to a bot still reconnecting); False once it has been tried for too long."""
        tries = self._tries[spec.number] = self._tries.get(spec.number, 0) + 1
        if tries > RETRIES:
            return False

        async def later() -> None:
            await asyncio.sleep(RETRY_S)
            await self._events.put((spec.x, {"event": "retry", "number": spec.number}))

        self._readers.append(asyncio.create_task(later()))
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
            if not x.alive or not o.alive:
                queue += self._record_forfeit(spec, spec.x if not x.alive else spec.o, "abandoned")
                continue
            opening = list(spec.opening)
            await self._tell(
                o, {"cmd": "expect", "number": spec.number, "challenger": spec.x, "opening": opening}
            )
            challenge = {
                "cmd": "challenge",
                "number": spec.number,
                "opponent": spec.o,
                "variant": self.config.variant,
                "move_ms": self.move_ms,
                "opening": opening,
            }
            await self._tell(x, challenge)

    def _announce(self) -> None:
        if self.on_game is not None:
            self.on_game(self.director.records[-1], self.director)

    def _merge_times(self) -> None:
        """Each bot reports its own thinking time; put both into the records."""
        for i, record in enumerate(self.director.records):
            t = self._times.get(record.spec.number, {})
            if t:
                time_ms = (t.get("x", record.time_ms[0]), t.get("o", record.time_ms[1]))
                self.director.records[i] = GameRecord(
                    record.spec, record.result, record.reason, record.moves, time_ms, record.game_id
                )


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
