"""The writer: a failing store is tried again and nothing is announced before it is
written; a store that never recovers is given up on after the retries."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from server.ops import PlayerSaved, StoreOp
from server.store import Store
from server.writer import Writer


class Flaky(Store):
    """A real store whose first ``failures`` transactions fail as a locked database does."""

    def __init__(self, path: str, failures: int) -> None:
        super().__init__(path)
        self.failures_left = failures

    def write(self, ops: list[StoreOp]) -> None:
        if self.failures_left > 0:
            self.failures_left -= 1
            raise sqlite3.OperationalError("database is locked")
        super().write(ops)


async def run(writer: Writer, ops: list[StoreOp]) -> list[list[tuple[str, str, str, str]]]:
    """Submit ``ops``; return what the store held each time the announcement ran."""
    seen: list[list[tuple[str, str, str, str]]] = []
    writer.submit(ops, then=lambda: seen.append(writer.store.players()))
    task = asyncio.create_task(writer.run())
    for _ in range(500):
        if seen:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    return seen


async def test_a_failing_write_is_retried_and_announced_only_once_stored(tmp_path: Path) -> None:
    store = Flaky(str(tmp_path / "a.db"), failures=2)
    writer = Writer(store, retries=(0.01, 0.01, 0.01))
    seen = await run(writer, [PlayerSaved("p1", "alice", "human", "h1")])
    assert seen == [[("p1", "alice", "human", "h1")]], "announced once, after the row was stored"
    assert (writer.retried, writer.failures) == (1, 0)


async def test_a_store_that_never_recovers_is_given_up_on(tmp_path: Path) -> None:
    store = Flaky(str(tmp_path / "a.db"), failures=10)
    writer = Writer(store, retries=(0.01, 0.01))
    seen = await run(writer, [PlayerSaved("p1", "alice", "human", "h1")])
    assert seen == [[]], "the rooms announce anyway rather than freeze"
    assert (writer.retried, writer.failures) == (1, 1) and store.failures_left == 7
