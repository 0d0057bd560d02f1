"""The writer: store operations from many rooms batched into one transaction, then announced.

A decision's announcements (the `then` callbacks) run only after its operations
are committed, in the order decisions were submitted, so a move is durable
before anyone hears of it and every room's events keep their order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from server.ops import StoreOp
from server.store import Store

log = logging.getLogger("ttt.server.writer")

#: Most operations written in one transaction.
MAX_BATCH = 5000

#: A failed transaction is tried again after these pauses (seconds) before giving up.
RETRIES = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0)


class Writer:
    """Batches `submit`ted operations; `run` is the task that writes them."""

    def __init__(self, store: Store, retries: tuple[float, ...] = RETRIES) -> None:
        self.store = store
        self.retries = retries
        #: Transactions that failed at least once, and those that never got written.
        self.retried = 0
        self._queue: asyncio.Queue[tuple[list[StoreOp], Callable[[], None] | None]] = asyncio.Queue()
        self.failures = 0
        self.batch_sizes: list[int] = []

    def submit(self, ops: list[StoreOp], then: Callable[[], None] | None = None) -> None:
        """Write ``ops`` (maybe none), then call ``then``. Never blocks."""
        self._queue.put_nowait((ops, then))

    @property
    def backlog(self) -> int:
        return self._queue.qsize()

    async def run(self) -> None:
        while True:
            items = [await self._queue.get()]
            count = len(items[0][0])
            while not self._queue.empty() and count < MAX_BATCH:
                item = self._queue.get_nowait()
                items.append(item)
                count += len(item[0])
            await self._write(items)

    async def checkpoints(self, every: float = 1.0) -> None:
        """Run WAL checkpoints beside the writer, every ``every`` seconds."""
        while True:
            await asyncio.sleep(every)
            try:
                await asyncio.to_thread(self.store.checkpoint)
            except Exception:
                log.exception("WAL checkpoint failed")

    async def flush(self) -> None:
        """Write and announce everything submitted so far (used at shutdown)."""
        items = []
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        if items:
            await self._write(items)

    async def _write(self, items: list[tuple[list[StoreOp], Callable[[], None] | None]]) -> None:
        ops = [op for batch, _ in items for op in batch]
        if ops:
            await self._write_ops(ops)
        for _, then in items:
            if then is not None:
                try:
                    then()
                except Exception:
                    log.exception("announcement failed")

    async def _write_ops(self, ops: list[StoreOp]) -> None:
        """Write ``ops``, trying again while the store fails (a locked or full disk often
        passes); announcements wait meanwhile, so nothing is announced before it is
        stored. After the last retry (about 10 s) the rooms, which have already
        decided, announce anyway rather than freeze, and the failure is counted."""
        for attempt, pause in enumerate((*self.retries, None)):
            try:
                await asyncio.to_thread(self.store.write, ops)
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
                await asyncio.sleep(pause)
