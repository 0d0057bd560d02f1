"""The writer: a failing store is tried again for as long as it fails, and nothing is
announced before it is written; the loop hears when the store fails and when it works."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from server.ops import GameSaved, MoveSaved, PlayerSaved, RoomSaved, StoreOp
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


def read_only(store: Store, on: bool) -> None:
    """Make SQLite itself refuse every write to ``store`` ("attempt to write a readonly database")."""
    with store.lock:
        store.db.execute(f"PRAGMA query_only={int(on)}")


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


async def test_a_store_that_keeps_failing_announces_nothing_until_it_works(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"))
    told: list[str] = []
    writer = Writer(
        store,
        retries=(0.01,),
        failing=lambda why, _stuck: told.append(f"failing: {why}"),
        recovered=lambda: told.append("ok"),
    )
    read_only(store, True)
    announced: list[int] = []
    writer.submit([PlayerSaved("p1", "alice", "human", "h1")], then=lambda: announced.append(1))
    writer.submit([PlayerSaved("p2", "bob", "human", "h2")], then=lambda: announced.append(2))
    task = asyncio.create_task(writer.run())
    for _ in range(200):  # far more tries than the old writer's ten seconds of retries
        await asyncio.sleep(0.01)
    assert announced == [] and store.query("SELECT count(*) FROM players") == [(0,)]
    assert len(told) == 1 and "readonly" in told[0] and writer.down is not None
    read_only(store, False)
    for _ in range(200):
        if len(announced) == 2:
            break
        await asyncio.sleep(0.01)
    assert announced == [1, 2], "in the order submitted, once stored"
    assert told[1:] == ["ok"] and writer.down is None and writer.failures == 0
    task.cancel()
    store.close()


async def test_stopping_while_the_store_fails_announces_nothing(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "a.db"))
    writer = Writer(store, retries=(0.01,))
    read_only(store, True)
    announced: list[int] = []
    writer.submit([PlayerSaved("p1", "alice", "human", "h1")], then=lambda: announced.append(1))
    task = asyncio.create_task(writer.run())
    await asyncio.sleep(0.1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    writer.submit([PlayerSaved("p2", "bob", "human", "h2")], then=lambda: announced.append(2))
    await writer.flush()
    assert announced == [] and writer.failures == 2
    store.close()


async def test_a_decision_the_store_rejects_is_dropped_and_the_others_go_on(tmp_path: Path) -> None:
    """A name taken meanwhile (another node on the same store) breaks a constraint: trying
    again cannot help, so that decision alone is neither stored nor announced; what it
    asked to run if rejected runs instead."""
    store = Store(str(tmp_path / "a.db"))
    store.write([PlayerSaved("p0", "Ann", "human", "h0")])
    writer = Writer(store, retries=(0.01,))
    announced: list[int] = []
    writer.submit([PlayerSaved("p1", "bob", "human", "h1")], then=lambda: announced.append(1))
    writer.submit(
        [PlayerSaved("p2", "ANN", "human", "h2")],
        then=lambda: announced.append(2),
        rejected=lambda: announced.append(-2),
    )
    writer.submit([PlayerSaved("p3", "cy", "human", "h3")], then=lambda: announced.append(3))
    task = asyncio.create_task(writer.run())
    for _ in range(300):
        if len(announced) == 3:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    assert announced == [1, -2, 3], "the rejected decision is told so, in its turn"
    assert writer.failures == 1 and writer.down is None
    assert [r[0] for r in store.players()] == ["p0", "p1", "p3"]
    store.close()


async def test_a_refusal_after_failed_tries_ends_the_outage(tmp_path: Path) -> None:
    """The store fails, then answers the same batch with a refusal (a constraint; on
    PostgreSQL, the fence turning away a node whose connection was closed under a
    write): it works again, so the loop hears it and changes are taken again, though
    nothing of that batch was stored."""
    store = Store(str(tmp_path / "a.db"))
    store.write([PlayerSaved("p0", "Ann", "human", "h0")])
    told: list[str] = []
    writer = Writer(
        store,
        retries=(0.01,),
        failing=lambda why, _stuck: told.append("failing"),
        recovered=lambda: told.append("ok"),
    )
    read_only(store, True)
    announced: list[int] = []
    writer.submit(
        [PlayerSaved("p2", "ANN", "human", "h2")],
        then=lambda: announced.append(2),
        rejected=lambda: announced.append(-2),
    )
    task = asyncio.create_task(writer.run())
    for _ in range(100):
        if told:
            break
        await asyncio.sleep(0.01)
    assert told == ["failing"] and writer.down is not None
    read_only(store, False)
    for _ in range(300):
        if announced:
            break
        await asyncio.sleep(0.01)
    task.cancel()  # the loop heard `recovered` before the refusal's callback (one queue)
    assert announced == [-2] and told == ["failing", "ok"] and writer.down is None
    assert [r[0] for r in store.players()] == ["p0"]
    store.close()


class Clash(Exception):
    """As PostgreSQL's deadlock_detected: another node's transaction crossed this one."""


class Crossed(Store):
    """A real store whose first ``clashes`` transactions are rolled back by a clash."""

    transient = (Clash,)

    def __init__(self, path: str, clashes: int) -> None:
        super().__init__(path)
        self.clashes_left = clashes

    def write(self, ops: list[StoreOp]) -> None:
        if self.clashes_left > 0:
            self.clashes_left -= 1
            raise Clash("deadlock detected")
        super().write(ops)


async def test_a_clash_with_another_node_is_tried_again_at_once_without_an_outage(tmp_path: Path) -> None:
    store = Crossed(str(tmp_path / "a.db"), clashes=3)
    told: list[str] = []
    writer = Writer(store, retries=(5.0,), failing=told.append)  # a pause would outlast the test
    seen = await run(writer, [PlayerSaved("p1", "alice", "human", "h1")])
    assert seen == [[("p1", "alice", "human", "h1")]] and told == [] and writer.down is None
    assert writer.retried == 3
    store.close()


async def test_what_one_loop_turn_submits_is_written_in_one_transaction(tmp_path: Path) -> None:
    """Decisions made in one turn of the event loop reach the thread together at its end:
    one transaction, not a first one of a decision or two taken while the loop was still
    deciding the rest (here the turn outlasts the interpreter's switch interval)."""
    store = Store(str(tmp_path / "a.db"))
    writer = Writer(store)
    task = asyncio.create_task(writer.run())
    await asyncio.sleep(0)  # the thread runs and waits
    announced: list[int] = []
    for n in range(100):  # one turn, longer than sys.getswitchinterval()
        writer.submit([PlayerSaved(f"p{n}", f"n{n}", "human", f"h{n}")], then=lambda n=n: announced.append(n))
        sum(range(20000))
    assert writer.backlog == 100
    for _ in range(500):
        if len(announced) == 100:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    assert announced == list(range(100)), "announced in order, once stored"
    assert store.batches == 1 and store.writes == 100
    assert writer.backlog == 0
    store.close()


def wal_restarts(path: str) -> int:
    """How many times SQLite has started the WAL of the database ``path`` over from its
    beginning (the checkpoint sequence number in the WAL's header)."""
    with open(path + "-wal", "rb") as f:
        header = f.read(16)
    return int.from_bytes(header[12:16], "big") if len(header) == 16 else 0


async def test_the_wal_starts_over_though_writes_came_during_the_checkpoint(tmp_path: Path) -> None:
    """SQLite starts the WAL over only when a transaction begins with all of it copied into
    the database. Under a steady load, the writer has always appended more by the time a
    checkpoint (on its own connection) ends, so the WAL grew without end. A reader's
    snapshot stands in for those writes here: the checkpoint cannot copy what came after
    it. Once a checkpoint has found the WAL past its cap, the writer copies the rest
    between two of its transactions, and the WAL starts over."""
    path = str(tmp_path / "a.db")
    store = Store(path)
    store.wal_cap = 1
    store.write(
        [
            RoomSaved("r1", "classic", "{}", False, False, None, None, (), "px", "po", 2, False),
            GameSaved("r1.1", "r1", 1, "classic", "px", "po", "{}", False, None, (), None, None),
        ]
    )
    writer = Writer(store)
    task = asyncio.create_task(writer.run())
    announced: list[int] = []
    ply = 0

    async def moves(count: int) -> None:
        nonlocal ply
        plies = range(ply + 1, ply + 1 + count)
        ops: list[StoreOp] = [MoveSaved("r1.1", p, p % 9, None, None, room="r1", seq=p + 2) for p in plies]
        ply += count
        writer.submit(ops, then=lambda: announced.append(ply))
        for _ in range(500):
            if announced and announced[-1] == ply:
                return
            await asyncio.sleep(0.01)

    await moves(100)
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM moves").fetchall()  # a snapshot: the checkpoint stops there
    await moves(100)
    await asyncio.to_thread(store.checkpoint)
    reader.execute("COMMIT")
    before = wal_restarts(path)
    for _ in range(3):
        await moves(100)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert len(announced) == 5 and store.query("SELECT count(*) FROM moves") == [(500,)]
    assert wal_restarts(path) > before, "the WAL goes on growing"
    reader.close()
    store.close()
