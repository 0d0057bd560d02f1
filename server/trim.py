"""Memory housekeeping: the C allocator's free memory given back to the system once a
burst is over, and the youngest generation of Python's garbage collector collected every second
(an older one when the collector's own schedule says it is due).

The collector: a busy server replaces objects about as fast as it makes them (each
move a new game state, a frame kept for replays in place of the oldest), so the
collector's count of new objects (allocations less deallocations, against a threshold of
20,000 set at start-up by ``ttt serve``) grows slowly and its automatic collections of the
youngest generation come every few seconds or less often, each walking whatever piled up
meanwhile: the longer the wait, the longer the pause of the event loop (10 to 20 ms of
CPU each, and growing, measured at about 4,000 moves/s on the shared 2-core machine).
`collect_young` collects that generation every second instead (about 6 ms of CPU each at
that rate: the games in flight and a second's survivors), so no pause grows with how
long the server has run.

The allocator:

A burst of connections (thousands of hellos at once) leaves free memory in the C
allocator's heaps: frames parsed, replies encoded, rows read, all freed since, but glibc
keeps the pages, between the chunks the connections still hold. `malloc_trim` hands
them back, so what stays resident is about what the connections hold (issue 14: an
idle connection under 10 KiB). Trimming walks the free lists and costs page faults
when the memory is used again, so it is done once after a burst, never while the
server stays busy. Where the C library has no ``malloc_trim`` (not glibc) it is not
done at all.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("ttt.server")

#: Events (connections opened, frames received) since the last trim that make a burst.
BURST = 2000
#: At most this many events in a tick: the burst is over.
QUIET = 100
#: Seconds between two looks at the count of events.
EVERY = 0.25
#: Seconds between two collections of the youngest generation.
YOUNG_EVERY = 1.0


@dataclass(slots=True)
class Settling:
    """Says when a burst is over (sans-I/O: fed the server's count of events)."""

    burst: int = BURST
    quiet: int = QUIET
    last: int | None = None
    #: Events since the last trim.
    since: int = 0

    def tick(self, events: int) -> bool:
        """``events``: how many the server has had so far; True: trim now."""
        new = 0 if self.last is None else max(0, events - self.last)
        self.last = events
        self.since += new
        if new <= self.quiet and self.since >= self.burst:
            self.since = 0
            return True
        return False


def malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim``, or None where it has none.

    Looked up among the symbols the process already has (the C library's among them),
    not with ``ctypes.util.find_library``: that runs ``ldconfig -p``, a child process,
    on the event loop at start (a test counting `ttt serve`'s children caught it)."""
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


async def trim_after_bursts(events: Callable[[], int], every: float = EVERY) -> None:
    """Trim the C heap each time a burst of ``events`` is over, until cancelled."""
    trim = malloc_trim()
    if trim is None:
        return
    settling = Settling()
    while True:
        await asyncio.sleep(every)
        if settling.tick(events()):
            await asyncio.to_thread(trim, 0)  # it holds the heap's lock, not the loop


async def collect_young(every: float = YOUNG_EVERY) -> None:
    """Collect the garbage collector's youngest generation every ``every`` seconds (while
    the collector is enabled), and an older one when it is due, until cancelled."""
    while True:
        await asyncio.sleep(every)
        if gc.isenabled():
            gc.collect(due_generation())


def due_generation() -> int:
    """The oldest generation the collector's own schedule says is due: one whose count
    (collections of the generation below it since its last) is past its threshold.

    The automatic collections that would otherwise collect the older generations never
    come on a busy server (`collect_young` keeps the youngest's count under its
    threshold), so without this the middle generation gathered every survivor since
    start-up, never walked (its cyclic garbage never freed) until some burst set off an
    automatic collection that walked all of it at once. (CPython's extra condition for a
    full collection, that the survivors since the last grew by a quarter, cannot be read
    from Python: a full one comes every threshold[1] * threshold[2] seconds instead.)"""
    counts, thresholds = gc.get_count(), gc.get_threshold()
    for generation in (2, 1):
        if counts[generation] > thresholds[generation]:
            return generation
    return 0
