"""House bots: `ttt bot` processes started beside a server, so a newcomer can play at once.

For ``ttt serve --house-bots rule,minimax,table``: after the server listens, call
``house = await start_house_bots(server.url, "rule,minimax,table")``; on shutdown
``await house.stop()`` (each bot resigns its running games and exits).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from bots.tournament.pairing import TournamentError
from bots.tournament.runner import spawn_bot


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
        raise TournamentError("--house-bots needs at least one strategy")
    return bots


@dataclass
class HouseBots:
    """The running house bot processes, by name."""

    processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)

    async def stop(self, wait: float = 10.0) -> None:
        """SIGTERM every bot (they resign running games), then wait; kill what lingers."""
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


async def start_house_bots(url: str, spec: str, *extra: str) -> HouseBots:
    """Start one ``ttt bot`` per entry of ``spec`` against the server at ``url``."""
    house = HouseBots()
    for name, strategy in parse_house_bots(spec).items():
        house.processes[name] = await spawn_bot(url, strategy, name, *extra)
    return house
