"""The in-process event bus: game logic publishes, side effects (the MQTT feed,
metrics, cross-node relays) consume. Publishing never blocks and never fails.

Each subscriber has its own bounded queue; when it is full the oldest event is
dropped and counted, so a slow consumer can never stall a room.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from protocol.topics import EventKind

__all__ = ["EventBus", "EventKind", "FeedEvent", "Subscription"]


@dataclass(frozen=True, slots=True)
class FeedEvent:
    """One thing that happened.

    Attributes:
        kind: what it is about (see `EventKind`).
        key: the id it is about: node id, room id, game id, tournament id or player id.
        payload: the JSON-able wire message (a pydantic model's ``model_dump(mode="json")``),
            or None when the thing is gone (a closed room: its retained summary is cleared).
    """

    kind: EventKind
    key: str
    payload: dict[str, Any] | None


class Subscription:
    """A bounded queue of events for one consumer; iterate it with ``async for``."""

    def __init__(self, bus: EventBus, maxsize: int) -> None:
        self._bus = bus
        self._queue: asyncio.Queue[FeedEvent] = asyncio.Queue(maxsize)
        #: Events dropped because this consumer fell behind.
        self.dropped = 0

    def _offer(self, event: FeedEvent) -> None:
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
        self._queue.put_nowait(event)

    async def get(self) -> FeedEvent:
        return await self._queue.get()

    def pending(self) -> list[FeedEvent]:
        """Take every event waiting, without waiting (a consumer closing takes the last ones)."""
        events: list[FeedEvent] = []
        while not self._queue.empty():
            events.append(self._queue.get_nowait())
        return events

    def close(self) -> None:
        self._bus._subscriptions.discard(self)

    async def __aiter__(self) -> AsyncIterator[FeedEvent]:
        while True:
            yield await self._queue.get()


class EventBus:
    """Fan-out of `FeedEvent`s to every current `Subscription`."""

    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()
        self.published = 0

    @property
    def listened(self) -> bool:
        """Whether anyone subscribes (what nobody would hear need not be built)."""
        return bool(self._subscriptions)

    def publish(self, event: FeedEvent) -> None:
        """Hand ``event`` to every subscriber. Never blocks, never raises."""
        self.published += 1
        for sub in self._subscriptions:
            sub._offer(event)

    def subscribe(self, maxsize: int = 10_000) -> Subscription:
        sub = Subscription(self, maxsize)
        self._subscriptions.add(sub)
        return sub
