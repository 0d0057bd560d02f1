"""House bots: `ttt bot` processes started beside a server, so a newcomer can play at once.

`ttt serve` starts them (``--house-bots``, by default `DEFAULT_HOUSE_BOTS`) through
the hook `bots.cli` puts on its command line: the server never imports the bots.
Each bot keeps its token in the server's state folder (``DB.house/NAME.token``),
so after a restart, or a ``kill -9`` of the server, the same players come back
and take their games up again. They never resign because the server stops:
stopped (`HouseBots.stop`) they just go, their seats get the server's grace
period; and a bot whose server died unannounced sees its stdin close and goes
too (``--lifeline``), so the next server's bots are the only ones with its token.
A bot that dies while its server runs is started again (`HouseBots.keep`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bots.tournament.pairing import TournamentError
from bots.tournament.runner import TTT
from protocol.pacing import Backoff

#: What ``ttt serve`` starts with no ``--house-bots``: one bot per strategy, each
#: offering its levels of play.
DEFAULT_HOUSE_BOTS = "rule,minimax,table"
#: Flags per strategy: the solved table knows only the 3x3 boards.
STRATEGY_FLAGS: dict[str, tuple[str, ...]] = {"table": ("--variants", "classic,tactic-toe")}


def parse_house_bots(spec: str) -> dict[str, str]:
    """``rule,table,fast=minimax`` -> bot name -> strategy (names default to ``STRATEGY-bot``)."""
    bots: dict[str, str] = {}
    for item in (i.strip() for i in spec.split(",")):
        if not item:
            continue
        name, _, strategy = item.partition("=")
        if not strategy:
            name, strategy = f"{item}-bot", item
        if name in bots:
            raise TournamentError(f"two house bots are named {name!r}")
        bots[name] = strategy
    if not bots:
        raise TournamentError("--house-bots needs at least one strategy (or 'none')")
    return bots


def state_dir_for(db: str) -> Path:
    """The folder beside the database file ``db`` where the house bots keep their tokens;
    for a database URL (PostgreSQL), ``ttt-arena.house`` in the current folder."""
    if "://" in db:
        return Path("ttt-arena.house")
    return Path(f"{db}.house")


#: Exit code of a bot that must not be started again: the server refused its name (or
#: its command line is wrong).
REFUSED = 2
#: A bot that ran this long (seconds) before it exited starts its backoff over.
STEADY_S = 60.0


@dataclass
class HouseBots:
    """The running house bot processes, by name. A bot that exits while the server runs
    (a crash, a ``kill -9``) is started again after a pause (`Backoff`), with the same
    token: the same player, back in its games. One whose name was refused is not."""

    processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    #: How many times a bot was started again.
    restarts: int = 0
    stopping: bool = False
    _keepers: list[asyncio.Task[None]] = field(default_factory=list)

    async def keep(self, name: str, args: list[str], backoff: Backoff) -> None:
        """Start the bot ``name`` (``args``) again each time it ends, until `stop`."""
        loop = asyncio.get_running_loop()
        while True:
            began = loop.time()
            code = await self.processes[name].wait()
            if self.stopping or code == REFUSED:
                return
            if loop.time() - began > STEADY_S:
                backoff.reset()  # it ran well for a while: this is a new failure, not a loop
            delay = backoff.next()
            print(f"ttt serve: house bot {name} exited ({code}); again in {delay:.1f} s", file=sys.stderr)
            await asyncio.sleep(delay)
            if self.stopping:
                return
            self.processes[name] = await _spawn(args)
            self.restarts += 1

    async def stop(self, wait: float = 10.0) -> None:
        """SIGTERM every bot (it just goes: its games wait out their grace period), then
        wait; kill what lingers."""
        self.stopping = True
        for keeper in self._keepers:
            keeper.cancel()
        await asyncio.gather(*self._keepers, return_exceptions=True)
        for process in self.processes.values():
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.terminate()
        for process in self.processes.values():
            try:
                await asyncio.wait_for(process.wait(), wait)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()


async def start_house_bots(
    url: str, spec: str, state_dir: str | os.PathLike[str], *extra: str, restart_after: float = 1.0
) -> HouseBots:
    """Start one ``ttt bot`` per entry of ``spec`` against the server at ``url``, each
    with its token file in ``state_dir``; ``extra``: more ``ttt bot`` flags for each.
    A bot that exits is started again after ``restart_after`` seconds (doubling up to 30
    while it keeps exiting)."""
    folder = Path(state_dir)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    house = HouseBots()
    for name, strategy in parse_house_bots(spec).items():
        args = [
            *TTT, "bot", "--server", url, "--strategy", strategy, "--name", name,
            "--token-file", str(folder / f"{name}.token"), "--keep-games", "--lifeline",
            *STRATEGY_FLAGS.get(strategy, ()), *extra,
        ]  # fmt: skip
        house.processes[name] = await _spawn(args)
        backoff = Backoff(first=restart_after, cap=max(30.0, restart_after))
        house._keepers.append(asyncio.create_task(house.keep(name, args, backoff)))
    return house


async def _spawn(args: list[str]) -> asyncio.subprocess.Process:
    # stdin: a pipe nobody writes to; it closes when this process ends, however it ends
    return await asyncio.create_subprocess_exec(
        *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL
    )


async def serve_house_bots(url: str, spec: str, db: str, state_dir: str | None) -> HouseBots | None:
    """The hook ``ttt serve`` calls once it listens (see `bots.cli`): the house bots of
    ``spec`` (None for ``none``), their tokens in ``state_dir`` (default: beside ``db``)."""
    if spec.strip().lower() == "none":
        return None
    return await start_house_bots(url, spec, state_dir or state_dir_for(db))
