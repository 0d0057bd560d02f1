"""`EngineStrategy`: an external program as a bot's brain, behind the usual ``choose``.

It owns the engine's process: started on the first move that needs it (one
process a board size for Gomocup, one in all for ``ttt``), asked for each move
afresh with the whole position (so one process serves any number of games, one
move at a time), killed and started again after any failure, and killed when
the strategy is closed, collected, or the interpreter exits.

A move that goes wrong raises an `EngineError` whose ``code`` is the loss
reason: ``engine_timeout`` (no answer within ``think_ms``), ``engine_illegal``
(garbage, or a cell that is not legal), ``engine_crashed`` (the process died or
would not start), ``engine_refused`` (a variant the protocol cannot express, or a
board the engine turned down). It never waits past its deadline.
"""

from __future__ import annotations

import os
import random
import re
import shlex
import shutil
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol

from bots.engines import gomocup, ttt
from bots.engines.errors import EngineError, EngineRefused
from bots.engines.pipe import EnginePipe
from bots.strategies.base import StrategyError
from protocol.rules import Cell, State, Variant, find_variant


class Dialect(Protocol):
    """One engine protocol as lines in and lines out (the modules `gomocup` and `ttt`)."""

    NAME: str

    def refusal(self, variant: Variant) -> str | None: ...
    def setup(self, variant: Variant) -> tuple[int, int]: ...
    def opening(self, variant: Variant) -> list[str]: ...
    def opened(self, line: str, variant: Variant) -> bool: ...
    def after_opening(self, variant: Variant) -> list[str]: ...
    def request(self, state: State, told_ms: int, seed: int) -> list[str]: ...
    def answer(self, line: str, state: State) -> Cell | None: ...
    def closing(self) -> list[str]: ...


#: The protocols an engine may speak, by name.
PROTOCOLS: dict[str, Dialect] = {gomocup.NAME: gomocup, ttt.NAME: ttt}
#: How long a move may take when no clock says (milliseconds).
DEFAULT_THINK_MS = 5000
#: How long an engine may take to start and say it is ready (milliseconds).
DEFAULT_START_MS = 10_000
#: Engine processes kept at once (Gomocup: one a board size); the least used goes first.
MAX_PROCESSES = 4
#: Comment and chatter lines passed on to the log in one move; the rest are counted.
MAX_LOGGED = 20


def told_ms(budget_ms: int) -> int:
    """What the engine is told it may take of ``budget_ms``: 10% and 10 ms less, for the
    pipes and the scheduler, so an engine that uses all it is told still answers in time."""
    return max(1, budget_ms * 9 // 10 - 10)


class EngineStrategy:
    """The program ``command`` speaking ``protocol`` (``gomocup`` or ``ttt``).

    Args:
        command: the program and its arguments, as a list or a shell-like string
            (split with `shlex`, run without a shell).
        protocol: ``gomocup`` or ``ttt``.
        think_ms: the time a move may take when the clock allows more (the bot runner
            lowers it for a move as the clock requires, like minimax's).
        start_ms: the time the engine may take to start and answer the opening.
        log: where the engine's chatter goes (default: standard error).

    Raises:
        StrategyError: an unknown protocol, a bad time, or a program that cannot be found.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        protocol: str = gomocup.NAME,
        *,
        think_ms: int = DEFAULT_THINK_MS,
        start_ms: int = DEFAULT_START_MS,
        log: Callable[[str], None] | None = None,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise StrategyError("the engine command is empty")
        if protocol not in PROTOCOLS:
            raise StrategyError(f"no engine protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        for label, ms in (("think_ms", think_ms), ("start_ms", start_ms)):
            if isinstance(ms, bool) or not isinstance(ms, int) or ms < 1:
                raise StrategyError(f"{label} must be a positive int of milliseconds, not {ms!r}")
        if shutil.which(argv[0]) is None:
            raise StrategyError(f"no engine program {argv[0]!r} (not found, or not executable)")
        self.argv = argv
        self.protocol = protocol
        self.think_ms = think_ms
        self.start_ms = start_ms
        self.name = program_name(argv)
        self.log = log or _to_stderr
        #: The ``ABOUT`` answer or the ``ok`` line of the last engine started.
        self.about = ""
        self._speak = PROTOCOLS[protocol]
        self._engines: OrderedDict[tuple[int, int], EnginePipe] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EngineStrategy({shlex.join(self.argv)!r}, {self.protocol!r}, think_ms={self.think_ms})"

    def refusal(self, variant: Variant | str) -> str | None:
        """Why this engine's protocol cannot play ``variant``, or None: a bot runner may
        decline such a challenge instead of losing the game at its first move.

        Raises:
            UnknownVariant: no such variant.
        """
        return self._speak.refusal(find_variant(variant) if isinstance(variant, str) else variant)

    def choose(self, state: State, rng: random.Random) -> Cell:
        """The engine's move in ``state``, within ``think_ms``.

        Raises:
            EngineError: the engine's loss, with its reason as ``code``.
        """
        with self._lock:
            refusal = self.refusal(state.variant)
            if refusal is not None:
                raise EngineRefused(refusal)
            key = self._speak.setup(state.variant)
            try:
                engine = self._engine(key, state.variant)
                deadline = time.monotonic() + self.think_ms / 1000
                self._chatter(engine.drain())
                engine.send(*self._speak.request(state, told_ms(self.think_ms), rng.getrandbits(31)))
                return self._answer(engine, state, deadline)
            except EngineError:
                self._stop(key, polite=False)  # a fresh process for the next move, of whatever game
                raise

    def close(self) -> None:
        """Stop every engine process (the next move would start one again)."""
        with self._lock:
            for key in list(self._engines):
                self._stop(key, polite=True)

    def _engine(self, key: tuple[int, int], variant: Variant) -> EnginePipe:
        """The live engine for ``key``, started (and told the board) if there is none."""
        engine = self._engines.get(key)
        if engine is not None and engine.alive:
            self._engines.move_to_end(key)
            return engine
        self._stop(key, polite=False)
        while len(self._engines) >= MAX_PROCESSES:
            self._stop(next(iter(self._engines)), polite=True)
        engine = EnginePipe(self.argv, label=f"engine {self.name!r}")
        self._engines[key] = engine
        deadline = time.monotonic() + self.start_ms / 1000
        engine.send(*self._speak.opening(variant))
        while True:
            line = engine.read(deadline)
            if line.startswith(("name=", "ok ")):
                self.about = line
            if self._speak.opened(line, variant):
                break
            self._chatter([line])
        engine.send(*self._speak.after_opening(variant))
        return engine

    def _answer(self, engine: EnginePipe, state: State, deadline: float) -> Cell:
        chatter: list[str] = []
        more = 0
        try:
            while True:
                line = engine.read(deadline)
                cell = self._speak.answer(line, state)
                if cell is not None:
                    return cell
                if len(chatter) < MAX_LOGGED:
                    chatter.append(line)
                else:
                    more += 1
        finally:
            self._chatter(chatter, more)

    def _chatter(self, lines: list[str], more: int = 0) -> None:
        """Log the first `MAX_LOGGED` of ``lines`` and count the rest (and ``more``)."""
        for line in lines[:MAX_LOGGED]:
            self.log(f"{self.name}: {line}")
        more += max(0, len(lines) - MAX_LOGGED)
        if more:
            self.log(f"{self.name}: ... and {more} more lines")

    def _stop(self, key: tuple[int, int], polite: bool) -> None:
        """End the engine for ``key``: ``polite``, it is asked to quit first (half a second)."""
        engine = self._engines.pop(key, None)
        if engine is not None:
            engine.close(self._speak.closing() if polite and engine.alive else ())


#: Programs that run the engine rather than being it: the engine's name is their script's.
INTERPRETERS = re.compile(
    r"^(sh|bash|dash|zsh|ksh|env|python[0-9.]*|pypy[0-9.]*|node|ruby|perl|awk|gawk|mawk)$"
)


def program_name(argv: Sequence[str]) -> str:
    """The engine's name: its program's file name, or its script's after an interpreter
    (``python3 -u my_engine.py`` is ``my_engine.py``)."""
    program = argv[0] if argv else "engine"
    if INTERPRETERS.match(os.path.basename(program)):
        scripts = [word for word in argv[1:] if not word.startswith("-")]
        program = scripts[0] if scripts else program
    return os.path.basename(program) or "engine"


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
