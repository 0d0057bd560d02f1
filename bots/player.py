"""A strategy as a network player: `bots.player_core.BotCore` decides, `BotPlayer` moves the bytes.

`BotCore` is sans-I/O: it takes server messages (and, when a tournament runner
drives the bot, control commands) and returns what to do: messages to send,
games whose turn it is, reports for the runner. The async shell `BotPlayer`
(`run_bot`) connects through `protocol.client`, runs the strategy, comes back
after a drop through `protocol.reconnect` (backoff, token file, resume) and
exits cleanly on SIGINT or SIGTERM: resigning its running games, or with
``keep_games`` (house bots) leaving them to the server's grace period, to be
taken up by the next process with the same token. Its client paces what it
sends to stay within the server's rate limit (`protocol.pacing.Pacer`); a
request the server still refuses as ``rate_limited`` is sent again, later.

The strategy never runs on the event loop: every search goes to one worker
thread (strategies keep state, so one search at a time), most urgent clock
first, with the budget `BotCore.plan` computes from that game's clock. Other
games, keepalive pings and the control channel go on meanwhile.

The control channel (``ttt bot --control``, used by ``ttt tournament``) is JSON
lines: on stdin ``{"cmd": "challenge", "number": N, "opponent": B, "variant": V,
"move_ms": T, "opening": [...]}`` (this bot, X, challenges B from the position
after the opening moves) and ``{"cmd": "expect", "number": N, "challenger": A}``
(accept A's next challenge as game N); on stdout ``{"event": "ready"}``, ``{"event":
"game_over", "number": N, ...}`` and ``{"event": "declined", ...}``. A game
with a number draws its random numbers from `bots.tournament.match.game_rng`,
exactly as `play_match` does, so both runners play the same games.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bots.player_core import (
    Action,
    Assignment,
    BotCore,
    BotGame,
    Policy,
    Report,
    Search,
    Send,
    Think,
    run_search,
)
from bots.tournament.match import Strategy
from protocol import messages as m
from protocol.client import ArenaClient, ConnectionLost, RemoteError
from protocol.pacing import Backoff, Pacer
from protocol.reconnect import Reconnector
from protocol.tokens import TokenFile

__all__ = [
    "Action",
    "Assignment",
    "Backoff",
    "BotConfig",
    "BotCore",
    "BotGame",
    "BotPlayer",
    "Pacer",
    "Policy",
    "Report",
    "Search",
    "Send",
    "Think",
    "run_bot",
]

#: Refusals that mean "not now": the same request is sent again after ``retry_after``
#: (a move refused while the server's disk fails is played once it works again).
RETRIED = frozenset({"rate_limited", "store_unavailable"})


@dataclass(frozen=True, slots=True)
class BotConfig:
    """How to run one bot process (the ``ttt bot`` flags)."""

    server: str
    name: str
    policy: Policy = field(default_factory=Policy)
    seed: int = 0
    token_file: str | None = None
    control: bool = False
    #: The runner's entrants: their challenges wait for the runner's ``expect`` (control mode).
    #: Known from the start, so no challenge can slip in before them.
    entrants: frozenset[str] = frozenset()
    #: On stopping, leave running games to the server's grace period (no resignation): the
    #: next process with the same token takes them up (house bots, across server restarts).
    keep_games: bool = False
    #: Stop when stdin closes: the process holding its other end (the server of a house
    #: bot) is gone, even if killed with no chance to say so.
    lifeline: bool = False


async def run_bot(config: BotConfig, strategy: Strategy, stop: asyncio.Event | None = None) -> int:
    """Play as ``config.name`` until ``stop`` is set (or SIGINT/SIGTERM, or stdin closes in
    control mode or with ``config.lifeline``).

    Returns the process exit code: 0 after a clean stop, 2 when the server refuses the bot's name.
    """
    return await BotPlayer(config, strategy, stop).run()


class BotPlayer:
    """One bot on one server: the async shell around a `BotCore`.

    Three kinds of task share it: a pump per connection (server messages into the
    inbox), the searcher (one search at a time on the worker thread, the most urgent
    clock first) and an answer per move found (its think-time pause, then the move).
    `run` reads the inbox: server messages, runner commands, and the news of a lost
    connection, after which the `Reconnector` brings the bot back.
    """

    def __init__(self, config: BotConfig, strategy: Strategy, stop: asyncio.Event | None = None) -> None:
        self.config = config
        self.strategy = strategy
        self.stop = stop or asyncio.Event()
        self.core = BotCore(config.name, strategy, config.policy, config.seed)
        self.core.entrants = config.entrants
        levels = [name for name, _ in config.policy.levels]
        self.client = ArenaClient(config.server, config.name, "bot", levels=levels, paced=True)
        self.reconnector = Reconnector(
            self.client,
            adopt=True,  # games this player sits in from an earlier run: take them up
            token_file=TokenFile(config.token_file) if config.token_file else None,
            stop=self.stop,
            on_failure=self._cannot_reach,
        )
        self.inbox: asyncio.Queue[tuple[str, Any, float]] = asyncio.Queue()
        self.tasks: set[asyncio.Task[None]] = set()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bot-search")
        #: Turns waiting for the worker: (room, ply) -> when the turn began (loop time).
        self.queued: dict[tuple[str, int], float] = {}
        #: Turns queued, searching or about to move: a repeated `Think` for one of them is dropped.
        self.busy: set[tuple[str, int]] = set()
        self.wake = asyncio.Event()
        #: Requests sent and not answered yet, by ref: one the server refuses with a code in
        #: `RETRIED` (a busy bot on a server with tight limits, a server whose disk is failing)
        #: is sent again after ``retry_after``.
        self.unanswered: dict[str, m.ClientMessage] = {}
        self.refs = itertools.count(1)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    async def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self.loop.add_signal_handler(signum, self.stop.set)
        if self.config.lifeline and not self.config.control:
            _watch_stdin(self.loop, lambda: self.stop.set())
        self._spawn(self._searcher())
        if not await self._connect(first=True):
            self._shut()
            await self.client.close()
            return 0 if self.stop.is_set() else 2
        if self.config.control:
            _read_commands(self.loop, self.inbox)
            _emit({"event": "ready", "name": self.config.name})
        waiter = asyncio.create_task(self.stop.wait())
        try:
            while not self.stop.is_set():
                getter = asyncio.create_task(self.inbox.get())
                done, _ = await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    break
                kind, item, now = getter.result()
                if kind == "message":
                    if not self._retried(item):
                        await self._perform(self.core.receive(item, now), now)
                elif kind == "command":
                    await self._perform(self.core.command(item))
                elif kind == "eof":
                    break  # the runner is gone
                elif kind == "lost" and not await self._connect(first=False):
                    break
            if not self.config.keep_games:
                await self._perform(self.core.resign_all())
        finally:
            waiter.cancel()
            self._shut()
            await self.client.close()
        return 0

    def _shut(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        self.worker.shutdown(wait=False, cancel_futures=True)  # a search under way ends within its budget

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # --- the connection -----------------------------------------------------------------

    async def _connect(self, first: bool) -> bool:
        """Connect (again) and resume; False when the server refuses the bot or it is stopping."""
        if not first:
            self.unanswered.clear()  # the replies to those went with the old connection
        try:
            resumed = await self.reconnector.come_back(first=first)
        except RemoteError as exc:
            hint = ""
            if exc.code == "name_taken" and self.config.token_file:
                hint = f" (its token is not in {self.config.token_file}; choose another name)"
            print(f"ttt bot: the server refused {self.config.name!r}: {exc}{hint}", file=sys.stderr)
            return False
        except ConnectionLost:
            return False  # stopped
        if resumed is not None:
            await self._perform(self.core.receive(resumed, self.loop.time()))
        self._spawn(self._pump())
        return True

    def _cannot_reach(self, error: Exception, delay: float) -> None:
        print(f"ttt bot: cannot reach {self.client.url} ({error}); again in {delay:.1f} s", file=sys.stderr)

    async def _pump(self) -> None:
        while True:
            try:
                event = await self.client.next_event()
            except ConnectionLost:
                await self.inbox.put(("lost", None, self.loop.time()))
                return
            await self.inbox.put(("message", event, self.loop.time()))

    async def _send(self, message: m.ClientMessage) -> None:
        if message.ref is None:
            message = message.model_copy(update={"ref": f"b{next(self.refs)}"})
        assert message.ref is not None
        self.unanswered[message.ref] = message  # before sending: the reply may come at once
        try:
            await self.client.send(message)  # paced: within the server's rate limit
        except ConnectionLost:
            self.unanswered.pop(message.ref, None)

    async def _send_later(self, message: m.ClientMessage, delay: float) -> None:
        await asyncio.sleep(delay)
        await self._send(message)

    def _retried(self, event: m.ServerMessage) -> bool:
        """Whether ``event`` answers a request of this bot that is being sent again."""
        ref = getattr(event, "ref", None)
        request = self.unanswered.pop(ref, None) if ref is not None else None
        if request is None or not isinstance(event, m.Error) or event.code not in RETRIED:
            return False
        self._spawn(self._send_later(request, event.retry_after or 0.05))
        return True

    # --- thinking and moving -------------------------------------------------------------

    async def _searcher(self) -> None:
        """The worker's dispatcher: the most urgent turn first, one search at a time."""
        core, loop = self.core, self.loop
        while True:
            if not self.queued:
                self.wake.clear()
                await self.wake.wait()
                continue
            turn = min(self.queued, key=lambda t: (core.due(t[0]), self.queued[t]))
            began = self.queued.pop(turn)
            job = core.plan(*turn, now=loop.time(), waiting=len(self.queued))
            if not isinstance(job, Search):
                self.busy.discard(turn)
                if job is not None:
                    await self._send(job)
                continue
            try:
                cell = job.cell
                if cell is None:
                    cell = await loop.run_in_executor(self.worker, run_search, self.strategy, job)
            except Exception as exc:  # a strategy bug: give that game up rather than hang in it
                print(f"ttt bot: the strategy failed in {job.room}: {exc!r}; resigning", file=sys.stderr)
                self.busy.discard(turn)
                await self._send(m.Resign(room=job.room))
                continue
            self._spawn(self._answer(turn, began, job, cell))

    async def _answer(self, turn: tuple[str, int], began: float, job: Search, cell: int) -> None:
        """Wait out the policy's think time (if any is left), then move."""
        core, loop = self.core, self.loop
        try:
            pause = core.pause_ms(job.room, began, loop.time())
            if pause > 0:
                await asyncio.sleep(pause / 1000)
            move = core.record(job, cell, loop.time())
            core.spent(job.room, (loop.time() - began) * 1000)
            if move is not None:
                await self._send(move)
        finally:
            self.busy.discard(turn)

    async def _perform(self, actions: list[Action], now: float | None = None) -> None:
        for action in actions:
            if isinstance(action, Send):
                await self._send(action.message)
                if isinstance(action.message, m.Leave):
                    self.client.session.left(action.message.room)
            elif isinstance(action, Think):
                turn = (action.room, action.ply)
                if turn not in self.busy:
                    self.busy.add(turn)
                    self.queued[turn] = self.loop.time() if now is None else now
                    self.wake.set()
            else:
                if action.data.get("event") == "rematch_declined":  # said where people read it
                    room, reason = action.data["room"], action.data["reason"]
                    print(f"ttt bot: {self.config.name} leaves room {room}: {reason}", file=sys.stderr)
                _emit(action.data)


def _emit(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def _watch_stdin(loop: asyncio.AbstractEventLoop, gone: Callable[[], None]) -> None:
    """Call ``gone`` (in the loop) once stdin closes; what comes through it is ignored."""

    def reader() -> None:
        for _ in sys.stdin:
            pass
        loop.call_soon_threadsafe(gone)

    threading.Thread(target=reader, name="bot-lifeline", daemon=True).start()


def _read_commands(loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[tuple[str, Any, float]]) -> None:
    """Read JSON lines from stdin in a thread; each becomes a ``command`` in ``inbox``."""

    def reader() -> None:
        for line in sys.stdin:
            if line.strip():
                try:
                    item: tuple[str, Any, float] = ("command", json.loads(line), 0.0)
                except json.JSONDecodeError:
                    continue
                loop.call_soon_threadsafe(inbox.put_nowait, item)
        loop.call_soon_threadsafe(inbox.put_nowait, ("eof", None, 0.0))

    threading.Thread(target=reader, name="bot-commands", daemon=True).start()
