"""A strategy as a network player: `bots.player_core.BotCore` decides, `run_bot` moves the bytes.

`BotCore` is sans-I/O: it takes server messages (and, when a tournament runner
drives the bot, control commands) and returns what to do: messages to send,
games whose turn it is, reports for the runner. The async shell `run_bot`
connects through `protocol.client`, runs the strategy, reconnects with backoff
after a drop and exits cleanly on SIGINT or SIGTERM. It paces what it sends to
stay within the server's rate limit (`Pacer`), and sends again, later, a request
the server still refuses as ``rate_limited``.

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
import os
import random
import signal
import sys
import threading
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

__all__ = [
    "Action",
    "Assignment",
    "Backoff",
    "BotConfig",
    "BotCore",
    "BotGame",
    "Pacer",
    "Policy",
    "Report",
    "Search",
    "Send",
    "Think",
    "run_bot",
]


class Backoff:
    """Delays between reconnection attempts: doubling from ``first`` up to ``cap``, with jitter."""

    def __init__(self, first: float = 0.1, cap: float = 5.0, rng: random.Random | None = None) -> None:
        self.first, self.cap = first, cap
        self.rng = rng or random.Random()
        self.attempt = 0

    def next(self) -> float:
        delay = min(self.cap, self.first * 2.0**self.attempt)
        self.attempt += 1
        return delay * (0.5 + self.rng.random() / 2)

    def reset(self) -> None:
        self.attempt = 0


class Pacer:
    """Keeps a bot's sending within the server's rate limit (`Welcome.limits`): a token
    bucket a little slower and smaller than the server's, so what the bot sends is not
    refused as ``rate_limited`` (which it would send again, later)."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = max(0.1, rate * 0.9)
        self.burst = max(1.0, burst / 2)
        self.tokens = self.burst
        self.refilled = now

    def wait(self, now: float) -> float:
        """Take one message's token at ``now``; 0, or seconds to wait first (then ask again)."""
        self.tokens = min(self.burst, self.tokens + (now - self.refilled) * self.rate)
        self.refilled = now
        if self.tokens >= 1.0 - 1e-9:  # a hair short after waiting exactly: rounding, not a wait
            self.tokens = max(0.0, self.tokens - 1.0)
            return 0.0
        return (1.0 - self.tokens) / self.rate


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


async def run_bot(config: BotConfig, strategy: Strategy, stop: asyncio.Event | None = None) -> int:
    """Play as ``config.name`` until ``stop`` is set (or SIGINT/SIGTERM, or stdin closes in control mode).

    Returns the process exit code: 0 after a clean stop, 2 when the server refuses the bot's name.
    """
    from websockets.exceptions import WebSocketException

    from protocol.client import ArenaClient, ConnectionLost, RemoteError

    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
    core = BotCore(config.name, strategy, config.policy, config.seed)
    core.entrants = config.entrants
    inbox: asyncio.Queue[tuple[str, Any, float]] = asyncio.Queue()
    token = _read_token(config.token_file)
    levels = [name for name, _ in config.policy.levels]
    client = ArenaClient(config.server, config.name, "bot", token, levels=levels)
    backoff = Backoff()
    tasks: set[asyncio.Task[None]] = set()
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bot-search")
    #: Turns waiting for the worker: (room, ply) -> when the turn began (loop time).
    queued: dict[tuple[str, int], float] = {}
    #: Turns queued, searching or about to move: a repeated `Think` for one of them is dropped.
    busy: set[tuple[str, int]] = set()
    wake = asyncio.Event()

    def spawn(coro: Any) -> None:
        task = asyncio.create_task(coro)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def pump() -> None:
        while True:
            try:
                event = await client.next_event()
            except ConnectionLost:
                await inbox.put(("lost", None, loop.time()))
                return
            await inbox.put(("message", event, loop.time()))

    #: Requests sent and not answered yet, by ref: one the server refuses as ``rate_limited``
    #: (a busy bot on a server with the default limits) is sent again after ``retry_after``.
    unanswered: dict[str, m.ClientMessage] = {}

    refs = itertools.count(1)

    pacer: Pacer | None = None  # made from the first welcome's limits

    async def send(message: m.ClientMessage) -> None:
        nonlocal pacer
        if message.ref is None:
            message = message.model_copy(update={"ref": f"b{next(refs)}"})
        assert message.ref is not None
        welcome = client.session.welcome
        if pacer is None and welcome is not None:
            pacer = Pacer(welcome.limits.rate_per_s, welcome.limits.burst, loop.time())
        while pacer is not None and (delay := pacer.wait(loop.time())) > 0:
            await asyncio.sleep(delay)
        unanswered[message.ref] = message  # before sending: the reply may come at once
        try:
            await client.send(message)
        except ConnectionLost:
            unanswered.pop(message.ref, None)

    async def send_later(message: m.ClientMessage, delay: float) -> None:
        await asyncio.sleep(delay)
        await send(message)

    def retried(event: m.ServerMessage) -> bool:
        """Whether ``event`` answers a request of this bot that is being sent again."""
        ref = getattr(event, "ref", None)
        request = unanswered.pop(ref, None) if ref is not None else None
        if request is None or not isinstance(event, m.Error) or event.code != "rate_limited":
            return False
        spawn(send_later(request, event.retry_after or 0.05))
        return True

    async def searcher() -> None:
        """The worker's dispatcher: the most urgent turn first, one search at a time."""
        while True:
            if not queued:
                wake.clear()
                await wake.wait()
                continue
            turn = min(queued, key=lambda t: (core.due(t[0]), queued[t]))
            began = queued.pop(turn)
            job = core.plan(*turn, now=loop.time(), waiting=len(queued))
            if not isinstance(job, Search):
                busy.discard(turn)
                if job is not None:
                    await send(job)
                continue
            try:
                cell = job.cell
                if cell is None:
                    cell = await loop.run_in_executor(worker, run_search, strategy, job)
            except Exception as exc:  # a strategy bug: give that game up rather than hang in it
                print(f"ttt bot: the strategy failed in {job.room}: {exc!r}; resigning", file=sys.stderr)
                busy.discard(turn)
                await send(m.Resign(room=job.room))
                continue
            spawn(answer(turn, began, job, cell))

    async def answer(turn: tuple[str, int], began: float, job: Search, cell: int) -> None:
        """Wait out the policy's think time (if any is left), then move."""
        try:
            pause = core.pause_ms(job.room, began, loop.time())
            if pause > 0:
                await asyncio.sleep(pause / 1000)
            move = core.record(job, cell, loop.time())
            core.spent(job.room, (loop.time() - began) * 1000)
            if move is not None:
                await send(move)
        finally:
            busy.discard(turn)

    async def perform(actions: list[Action], now: float | None = None) -> None:
        for action in actions:
            if isinstance(action, Send):
                await send(action.message)
                if isinstance(action.message, m.Leave):
                    client.session.left(action.message.room)
            elif isinstance(action, Think):
                turn = (action.room, action.ply)
                if turn not in busy:
                    busy.add(turn)
                    queued[turn] = loop.time() if now is None else now
                    wake.set()
            else:
                _emit(action.data)

    async def connect(first: bool) -> bool:
        while not stop.is_set():
            try:
                if first:
                    welcome = await client.open()
                    if welcome.rooms:  # seated from an earlier run (same token): take those games up
                        core.seated_before.update(welcome.rooms)
                        resumed = await client.request(m.Resume(rooms=dict.fromkeys(welcome.rooms, 0)))
                        await perform(core.receive(resumed, loop.time()))
                else:
                    unanswered.clear()  # the replies to those went with the old connection
                    resumed = await client.reconnect()
                    await perform(core.receive(resumed, loop.time()))
                    again = client.session.welcome
                    orphans = set(again.rooms) - set(core.games) if again is not None else set()
                    if orphans:  # seated in a room whose news went with the old connection
                        core.seated_before.update(orphans)
                        resumed = await client.request(m.Resume(rooms=dict.fromkeys(orphans, 0)))
                        await perform(core.receive(resumed, loop.time()))
                _write_token(config.token_file, client.token)
                backoff.reset()
                spawn(pump())
                return True
            except RemoteError as exc:
                if exc.code in ("bad_name", "name_taken", "bad_token", "protocol_version"):
                    print(f"ttt bot: the server refused {config.name!r}: {exc}", file=sys.stderr)
                    return False
                delay = backoff.next()
            except (OSError, TimeoutError, ConnectionLost, WebSocketException) as exc:
                # WebSocketException: e.g. a server still starting (or dying) closes the handshake
                delay = backoff.next()
                print(f"ttt bot: cannot reach {client.url} ({exc}); again in {delay:.1f} s", file=sys.stderr)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
        return False

    spawn(searcher())
    if not await connect(first=True):
        worker.shutdown(wait=False, cancel_futures=True)
        for task in list(tasks):
            task.cancel()
        return 0 if stop.is_set() else 2
    if config.control:
        _read_commands(loop, inbox)
        _emit({"event": "ready", "name": config.name})
    waiter = asyncio.create_task(stop.wait())
    try:
        while not stop.is_set():
            getter = asyncio.create_task(inbox.get())
            done, _ = await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                break
            kind, item, now = getter.result()
            if kind == "message":
                if not retried(item):
                    await perform(core.receive(item, now), now)
            elif kind == "command":
                await perform(core.command(item))
            elif kind == "eof":
                break  # the runner is gone
            elif kind == "lost" and not await connect(first=False):
                break
        await perform(core.resign_all())
    finally:
        waiter.cancel()
        for task in list(tasks):
            task.cancel()
        worker.shutdown(wait=False, cancel_futures=True)  # a search under way ends within its budget
        await client.close()
    return 0


def _emit(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


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


def _read_token(path: str | None) -> str | None:
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or None
    return None


def _write_token(path: str | None, token: str | None) -> None:
    if path and token:
        with open(path, "w", encoding="utf-8") as f:
            f.write(token + "\n")
