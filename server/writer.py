"""The writer: store operations from many rooms batched into one transaction, then announced.

A decision's announcements (the `then` callbacks) run only after its operations
are committed, in the order decisions were submitted, so a move is durable
before anyone hears of it and every room's events keep their order.

The writes happen in a thread of the writer's own. While `run` runs, what is
submitted during one turn of the event loop is handed to the thread at once, at the
end of that turn (one ``call_soon`` and one queue put a turn, not one a decision): the
thread is woken once for everything the turn decided, rather than woken by the first
decision to fight the busy loop for the interpreter lock and write a batch of one or two.
It starts a transaction as soon as that hand-off comes (not when a writer task next gets
its turn), and hands each committed batch's announcements back to the loop with one
``call_soon_threadsafe``. Between two transactions (never inside one) it lets the store finish
what its checkpoints began (`Store.catch_up`), so SQLite's WAL starts over under a steady load.

A batch the store refuses (a full disk, a read-only file, a lock held too long) is
never announced: the thread tries it again, pausing longer each time (`BACKOFF`),
for as long as it takes. The loop hears ``failing(reason, stuck)`` at the first failure and
``recovered()`` once the batch is stored, just before its announcements (or once the
store answers it with a refusal retrying cannot mend, a constraint or a fence: the store
works, so changes are taken again); meanwhile the server refuses requests that would
need the store (`server.outage`).

A write that neither succeeds nor fails (another process holds the lock: SQLite waits
out its busy timeout; a disk that hangs) is found out by `watch`, from the loop: once
one try has not returned for ``stall`` seconds the store counts as failing too, so
requests that come meanwhile are refused rather than queued behind it. ``stuck`` says
how many seconds ago the failing write began (the clocks stop from then).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from server.ops import StoreOp
from server.store import Fenced, Store

log = logging.getLogger("ttt.server.writer")


class _Rejected(Exception):
    """The store will never take these operations (a constraint they break)."""


#: Most operations written in one transaction.
MAX_BATCH = 5000

#: Immediate tries of a transaction rolled back by a clash with another node's.
TRANSIENT_TRIES = 5

#: Pauses (seconds) before each new try of a failed transaction; the last repeats forever.
BACKOFF = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)

#: A decision's operations, what to run once they are stored, and what to run instead if
#: the store rejects them for good.
Item = tuple[list[StoreOp], Callable[[], None] | None, Callable[[], None] | None]


class Writer:
    """Batches `submit`ted operations; while `run` runs, a thread writes them."""

    def __init__(
        self,
        store: Store,
        retries: tuple[float, ...] = BACKOFF,
        announcing: Callable[[], AbstractContextManager[None]] = nullcontext,
        committed: Callable[[float], None] | None = None,
        failing: Callable[[str, float], None] | None = None,
        recovered: Callable[[], None] | None = None,
        fenced: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.store = store
        #: Told the seconds each committed transaction took (from the writer's thread).
        self.committed = committed
        #: Wraps the announcements of each batch (the server gathers their frames).
        self.announcing = announcing
        self.retries = retries
        #: Called on the loop when the store first fails, and once it stores again.
        self.failing = failing
        self.recovered = recovered
        #: Called on the loop with the rooms a write was refused for because another node
        #: owns them now (`store.Fenced`); those decisions are never announced.
        self.fenced = fenced
        #: Transactions that failed at least once, and those never written (left at shutdown).
        self.retried = 0
        self.failures = 0
        #: Why the store fails now (None: it works), as the writer's thread last saw it.
        self.down: str | None = None
        #: When (``time.monotonic``) the try being written began (None: none is).
        self.busy_since: float | None = None
        #: Guards ``down`` between the thread and `watch`, so ``failing`` and ``recovered``
        #: reach the loop once each, in that order.
        self._state = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Set when the server stops: a failing batch is then given up on, unannounced.
        self._stopping = threading.Event()
        #: Decisions to write, as handed over together (a loop turn's); None tells the thread to stop.
        self._pending: queue.SimpleQueue[list[Item] | None] = queue.SimpleQueue()
        #: While `run` runs: the decisions of this loop turn, handed over at its end (`_hand_over`).
        self._turn: list[Item] | None = None
        #: Decisions handed to the thread, and taken by it (for `backlog`; each is written by
        #: one thread only, the loop's and the writer's).
        self._given = 0
        self._taken = 0
        self._thread: threading.Thread | None = None

    def submit(
        self,
        ops: list[StoreOp],
        then: Callable[[], None] | None = None,
        rejected: Callable[[], None] | None = None,
    ) -> None:
        """Write ``ops`` (maybe none), then call ``then`` on the event loop; or ``rejected``
        instead (in the same order), if the store will never take them. Never blocks.
        Called on the loop's thread (or before `run`)."""
        turn = self._turn
        if turn is None:  # not running yet, or stopped: straight to the queue
            self._given += 1
            self._pending.put([(ops, then, rejected)])
            return
        if not turn:
            assert self._loop is not None
            self._loop.call_soon(self._hand_over)
        turn.append((ops, then, rejected))

    def _hand_over(self) -> None:
        """The end of a loop turn: what it submitted goes to the thread, in one put."""
        turn = self._turn
        if turn:
            self._turn = []
            self._given += len(turn)
            self._pending.put(turn)

    @property
    def backlog(self) -> int:
        """Decisions submitted and not yet being written (about: the thread counts them off)."""
        return self._given - self._taken + len(self._turn or ())

    async def run(self) -> None:
        """Write in the writer thread until cancelled (the thread stops after its batch)."""
        loop = self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._write_loop, args=(loop,), name="ttt-writer", daemon=True)
        self._thread.start()
        self._turn = []
        try:
            await loop.create_future()
        finally:
            self._hand_over()  # this turn's too, ahead of the stop
            self._turn = None
            self._stopping.set()
            self._pending.put(None)

    async def checkpoints(self, every: float = 1.0) -> None:
        """Run WAL checkpoints beside the writer, every ``every`` seconds."""
        while True:
            await asyncio.sleep(every)
            if self.down is not None:  # the writer's retries find out when it works again
                continue
            try:
                await asyncio.to_thread(self.store.checkpoint)
            except Exception:
                log.exception("WAL checkpoint failed")

    async def watch(self, stall: float) -> None:
        """Beside `run`: a try that has not returned for ``stall`` seconds makes the store
        count as failing (``failing`` is called), until that batch is stored."""
        every = min(0.25, stall / 4)
        while True:
            await asyncio.sleep(every)
            self.check_stall(stall)

    def check_stall(self, stall: float) -> None:
        """On the loop: call ``failing`` if the current try has been stuck ``stall`` seconds."""
        with self._state:
            since = self.busy_since
            if since is None or self.down is not None:
                return
            stuck = time.monotonic() - since
            if stuck < stall:
                return
            self.down = f"a store write has not returned for {stuck:.1f} s"
        log.error("%s; refusing changes until it works", self.down)
        if self.failing is not None:  # on the loop already: before any later `recovered`
            self.failing(self.down, stuck)

    async def flush(self) -> None:
        """Write and announce everything submitted so far (used at shutdown, after `run`)."""
        if self._thread is not None:  # its last batch first, and announced first
            await asyncio.to_thread(self._thread.join)
        self._hand_over()
        items: list[Item] = []
        while not self._pending.empty():
            handed = self._pending.get_nowait()
            if handed is not None:
                items += handed
        self._taken = self._given
        if not items:
            return
        stored = await asyncio.to_thread(self._store, items)
        if stored is not None:  # else a failing store: nothing of it is announced
            self._announce(stored)

    def _write_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """The writer thread: waits for a decision, takes what else is pending (up to about
        `MAX_BATCH` operations), writes it all in one transaction, hands the announcements
        to the loop; until told to stop."""
        while (first := self._pending.get()) is not None:
            items = first
            count = sum(len(item[0]) for item in items)
            stop = False
            while count < MAX_BATCH and not self._pending.empty():
                handed = self._pending.get_nowait()
                if handed is None:
                    stop = True
                    break
                items += handed
                count += sum(len(item[0]) for item in handed)
            self._taken += len(items)
            stored = self._store(items)
            if stored is None:
                return  # stopping while the store fails: nothing of it is announced
            try:
                loop.call_soon_threadsafe(self._announce, stored)
            except RuntimeError:  # the loop is closed: nobody is left to tell
                return
            if stop:
                return
            self._catch_up()

    def _catch_up(self) -> None:
        """Between two transactions, once the batch before is handed to the loop: let the
        store finish what its checkpoints began (`Store.catch_up`), never inside a commit."""
        try:
            self.store.catch_up()
        except Exception:  # the next write finds out (and retries) if the store fails
            log.exception("WAL catch-up failed")

    def _announce(self, items: list[Item]) -> None:
        with self.announcing():
            for _, then, _rejected in items:
                if then is not None:
                    try:
                        then()
                    except Exception:
                        log.exception("announcement failed")

    def _store(self, items: list[Item]) -> list[Item] | None:
        """Write the operations of ``items`` in one transaction; the items to announce, or
        None when the server stops first. A batch holding an operation the store can never
        take (a constraint it breaks, such as a name another node took meanwhile, or a room
        another node owns now) is written decision by decision; the decisions it refuses
        are not announced, and their ``rejected`` callbacks run in their place (a new player
        hears ``name_taken``); fenced rooms are handed to ``fenced``."""
        ops = [op for batch, _, _ in items for op in batch]
        try:
            return items if not ops or self._write_ops(ops) else None
        except _Rejected:
            kept: list[Item] = []
            for item in items:
                try:
                    if item[0] and not self._write_ops(item[0]):
                        return None
                except _Rejected as exc:
                    self.failures += 1
                    log.error("the store rejects a decision (%s): it is not announced", exc)
                    if isinstance(exc.__cause__, Fenced) and self.fenced is not None and self._loop:
                        with contextlib.suppress(RuntimeError):  # the loop is closed
                            self._loop.call_soon_threadsafe(self.fenced, exc.__cause__.rooms)
                    kept.append((item[0], item[2], None))  # told instead, in its turn
                    continue
                kept.append(item)
            return kept

    def _write_ops(self, ops: list[StoreOp]) -> bool:
        """Write ``ops``, trying again while the store fails, with growing pauses, until it
        works (True) or the server stops (False: the batch is neither stored nor announced).
        Announcements wait meanwhile, so nothing is announced before it is stored."""
        attempt = 0
        clashes = 0
        while True:
            try:
                started = time.perf_counter()
                self.busy_since = time.monotonic()
                self.store.write(ops)
            except self.store.rejected as exc:  # trying again cannot help (a constraint, a fence)
                # The store answered, so it works: after failed tries (a connection closed
                # under a write that is then fenced off), changes are taken again.
                self._works(attempt)
                raise _Rejected(str(exc)) from exc
            except self.store.transient as exc:
                # Another node's transaction crossed this one (a deadlock, a serialization
                # failure): the database rolled this one back; trying again at once works.
                clashes += 1
                if clashes <= TRANSIENT_TRIES:
                    self.retried += 1
                    continue
                self._failed(exc, ops, attempt)
                if not self._pause(attempt, ops):
                    return False
                attempt += 1
                continue
            except Exception as exc:
                self._failed(exc, ops, attempt)
                if not self._pause(attempt, ops):
                    return False
                attempt += 1
                continue
            if self.committed is not None:
                self.committed(time.perf_counter() - started)
            self._works(attempt)
            return True

    def _works(self, attempt: int) -> None:
        """The store answered a try: no longer busy, and no longer down if it was."""
        with self._state:
            self.busy_since = None
            if self.down is not None:
                log.warning("the store works again after %d tries", attempt + 1)
                self.down = None
                self._tell(self.recovered)

    def _failed(self, exc: Exception, ops: list[StoreOp], attempt: int) -> None:
        """A try failed: count it; the first failure (or the first error after `watch` saw
        the write stuck) tells the loop the store is down, and since when (``stuck``)."""
        if attempt == 0:
            self.retried += 1
        with self._state:
            stuck = time.monotonic() - (self.busy_since or time.monotonic())
            self.busy_since = None
            reason = f"{type(exc).__name__}: {exc}".strip()
            if self.down is None or (attempt == 0 and self.down != reason):
                self.down = reason  # first failure, or `watch` saw it stuck first
                log.error(
                    "store write failed (%d operations): %s; refusing changes until it works",
                    len(ops),
                    reason,
                )
                self._tell(self.failing, reason, stuck)

    def _pause(self, attempt: int, ops: list[StoreOp]) -> bool:
        """Wait before the next try (False: the server stops meanwhile; give up)."""
        if self._stopping.wait(self.retries[min(attempt, len(self.retries) - 1)]):
            self.failures += 1
            log.error("shutting down with %d operations not stored (never announced)", len(ops))
            return False
        return True

    def _tell(self, callback: Callable[..., None] | None, *args: object) -> None:
        """Run ``callback(*args)`` on the loop (if there is one still running)."""
        if callback is None or self._loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed
            self._loop.call_soon_threadsafe(callback, *args)
