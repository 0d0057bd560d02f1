"""The writer: store operations from many rooms batched into one transaction, then announced.

A decision's announcements (the `then` callbacks) run only after its operations
are committed, in the order decisions were submitted, so a move is durable
before anyone hears of it and every room's events keep their order.

The writes happen in a thread of the writer's own, fed straight from `submit`:
it starts a transaction as soon as there is something to write (not when the
event loop next gets round to a writer task), and hands each committed batch's
announcements back to the loop with one ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from server.ops import StoreOp
from server.store import Store

log = logging.getLogger("ttt.server.writer")

#: Most operations written in one transaction.
MAX_BATCH = 5000

#: A failed transaction is tried again after these pauses (seconds) before giving up.
RETRIES = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0)

Item = tuple[list[StoreOp], Callable[[], None] | None]


class Writer:
    """Batches `submit`ted operations; while `run` runs, a thread writes them."""

    def __init__(
        self,
        store: Store,
        retries: tuple[float, ...] = RETRIES,
        announcing: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        self.store = store
        #: Wraps the announcements of each batch (the server gathers their frames).
        self.announcing = announcing
        self.retries = retries
        #: Transactions that failed at least once, and those that never got written.
        self.retried = 0
        self.failures = 0
        #: Decisions to write; None tells the thread to stop.
        self._pending: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, ops: list[StoreOp], then: Callable[[], None] | None = None) -> None:
        """Write ``ops`` (maybe none), then call ``then`` on the event loop. Never blocks."""
        self._pending.put((ops, then))

    @property
    def backlog(self) -> int:
        return self._pending.qsize()

    async def run(self) -> None:
        """Write in the writer thread until cancelled (the thread stops after its batch)."""
        loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._write_loop, args=(loop,), name="ttt-writer", daemon=True)
        self._thread.start()
        try:
            await loop.create_future()
        finally:
            self._pending.put(None)

    async def checkpoints(self, every: float = 1.0) -> None:
        """Run WAL checkpoints beside the writer, every ``every`` seconds."""
        while True:
            await asyncio.sleep(every)
            try:
                await asyncio.to_thread(self.store.checkpoint)
            except Exception:
                log.exception("WAL checkpoint failed")

    async def flush(self) -> None:
        """Write and announce everything submitted so far (used at shutdown, after `run`)."""
        if self._thread is not None:  # its last batch first, and announced first
            await asyncio.to_thread(self._thread.join)
        items: list[Item] = []
        while not self._pending.empty():
            item = self._pending.get_nowait()
            if item is not None:
                items.append(item)
        if items:
            await asyncio.to_thread(self._write_ops, [op for ops, _ in items for op in ops])
            self._announce(items)

    def _write_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """The writer thread: waits for a decision, takes what else is pending (up to about
        `MAX_BATCH` operations), writes it all in one transaction, hands the announcements
        to the loop; until told to stop."""
        while (first := self._pending.get()) is not None:
            items = [first]
            count = len(first[0])
            stop = False
            while count < MAX_BATCH and not self._pending.empty():
                item = self._pending.get_nowait()
                if item is None:
                    stop = True
                    break
                items.append(item)
                count += len(item[0])
            ops = [op for batch, _ in items for op in batch]
            if ops:
                self._write_ops(ops)
            try:
                loop.call_soon_threadsafe(self._announce, items)
            except RuntimeError:  # the loop is closed: nobody is left to tell
                return
            if stop:
                return

    def _announce(self, items: list[Item]) -> None:
        with self.announcing():
            for _, then in items:
                if then is not None:
                    try:
                        then()
                    except Exception:
                        log.exception("announcement failed")

    def _write_ops(self, ops: list[StoreOp]) -> None:
        """Write ``ops``, trying again while the store fails (a locked or full disk often
        passes); announcements wait meanwhile, so nothing is announced before it is
        stored. After the last retry (about 10 s) the rooms, which have already
        decided, announce anyway rather than freeze, and the failure is counted."""
        for attempt, pause in enumerate((*self.retries, None)):
            try:
                self.store.write(ops)
                return
            except Exception:
                if attempt == 0:
                    self.retried += 1
                if pause is None:
                    self.failures += 1
                    log.exception("store write failed (%d operations); announcing anyway", len(ops))
                    return
                if attempt == 0:
                    log.warning("store write failed (%d operations); trying again", len(ops), exc_info=True)
                time.sleep(pause)
