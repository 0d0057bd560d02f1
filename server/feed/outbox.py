"""What the bridge still owes the broker, sans-I/O: the bridge offers publications, takes
batches to send, and reports each one sent (`ack`) or failed (`nack`).

Two kinds of debt:

- **Retained state** (node, lobby, results, standings, ratings): only the latest value of a
  topic matters, so it is kept in `retained` and a topic is merely marked dirty. Many updates
  while the broker is away cost one message. After every (re)connection the whole retained
  state is sent again first: a restarted broker may have lost it. An empty payload (a closed
  room) is kept as a tombstone until the broker has confirmed the clear.
- **Events** (room events, QoS 1): every one matters and order matters, so they wait in a
  bounded FIFO. When it is full the oldest event is dropped and counted in `overflow`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from protocol.topics import Publication


@dataclass(slots=True)
class _Marker:
    """A place in the queue where the current value of a dirty retained topic goes out."""

    topic: str


@dataclass(slots=True)
class Outbox:
    """The bounded, reconnect-aware send queue of one feed.

    Args:
        max_events: at most this many events wait while the broker is away.
        max_results: at most this many ``games/+/result`` topics are remembered for
            republishing (the oldest are forgotten locally, not cleared on the broker).
    """

    max_events: int = 10_000
    max_results: int = 10_000
    #: topic -> latest retained payload (b"" = a clear the broker has not confirmed yet).
    retained: dict[str, Publication] = field(default_factory=dict)
    connected: bool = False
    #: Events dropped because the queue was full.
    overflow: int = 0
    #: Messages the broker confirmed.
    published: int = 0
    _queue: deque[Publication | _Marker] = field(default_factory=deque)
    _events: int = 0
    _dirty: set[str] = field(default_factory=set)
    _results: deque[str] = field(default_factory=deque)

    @property
    def queued_events(self) -> int:
        return self._events

    def __len__(self) -> int:
        """Items waiting (events and dirty retained topics)."""
        return len(self._queue)

    def offer(self, pub: Publication) -> None:
        """Take one publication; never blocks, never fails."""
        if pub.retain:
            self._remember(pub)
            if pub.topic not in self._dirty:
                self._dirty.add(pub.topic)
                self._queue.append(_Marker(pub.topic))
            return
        if self._events >= self.max_events:
            self._drop_oldest_event()
        self._queue.append(pub)
        self._events += 1

    def on_connected(self) -> None:
        """A new connection: all retained state goes first (the broker may have restarted
        empty), then the events still waiting, in order."""
        self.connected = True
        events = [item for item in self._queue if isinstance(item, Publication)]
        self._dirty = set(self.retained)
        self._queue = deque([_Marker(topic) for topic in self.retained])
        self._queue.extend(events)

    def on_disconnected(self) -> None:
        self.connected = False

    def take(self, limit: int) -> list[Publication]:
        """Up to ``limit`` publications to send now, oldest first; each must be reported
        back with `ack` or `nack` (nack in reverse order to keep the order)."""
        batch: list[Publication] = []
        while self._queue and len(batch) < limit:
            item = self._queue.popleft()
            if isinstance(item, _Marker):
                self._dirty.discard(item.topic)
                pub = self.retained.get(item.topic)
                if pub is not None:
                    batch.append(pub)
            else:
                self._events -= 1
                batch.append(item)
        return batch

    def ack(self, pub: Publication) -> None:
        """The broker confirmed ``pub``."""
        self.published += 1
        # A confirmed clear: forget the tombstone unless a newer value replaced it.
        if pub.retain and not pub.payload and self.retained.get(pub.topic) is pub:
            del self.retained[pub.topic]

    def nack(self, pub: Publication) -> None:
        """Sending ``pub`` failed (the connection broke): it goes back to the front."""
        if pub.retain:
            if pub.topic not in self._dirty and pub.topic in self.retained:
                self._dirty.add(pub.topic)
                self._queue.appendleft(_Marker(pub.topic))
            return
        if self._events >= self.max_events:
            self.overflow += 1
            return
        self._queue.appendleft(pub)
        self._events += 1

    def _remember(self, pub: Publication) -> None:
        fresh = pub.topic not in self.retained
        self.retained[pub.topic] = pub
        if fresh and pub.topic.endswith("/result") and "/games/" in pub.topic:
            self._results.append(pub.topic)
            if len(self._results) > self.max_results:
                old = self._results.popleft()
                self.retained.pop(old, None)
                self._dirty.discard(old)

    def _drop_oldest_event(self) -> None:
        markers: list[_Marker] = []
        while self._queue:
            item = self._queue.popleft()
            if isinstance(item, _Marker):
                markers.append(item)
                continue
            self._events -= 1
            self.overflow += 1
            break
        self._queue.extendleft(reversed(markers))
