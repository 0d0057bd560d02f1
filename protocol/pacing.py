"""When a client may send: `Backoff` spaces reconnection attempts, `Pacer` keeps
a connection within the server's rate limit. Sans-I/O: time is passed in.

Bots and the terminal client both use them (through `protocol.reconnect` and
`protocol.client.ArenaClient`).
"""

from __future__ import annotations

import random

from protocol.bucket import TokenBucket

__all__ = ["Backoff", "Pacer"]


class Backoff:
    """Delays between reconnection attempts: doubling from ``first`` up to ``cap``, each
    cut by up to half at random, so clients dropped together do not all come back at once."""

    def __init__(self, first: float = 0.1, cap: float = 5.0, rng: random.Random | None = None) -> None:
        self.first, self.cap = first, cap
        self.rng = rng or random.Random()
        self.attempt = 0

    def next(self) -> float:
        delay = min(self.cap, self.first * 2.0**self.attempt)
        self.attempt += 1
        return delay * (0.5 + self.rng.random() / 2)

    def reset(self) -> None:
        self.attempt = 0


class Pacer(TokenBucket):
    """Keeps a client's sending within the server's rate limit (`Welcome.limits`): the
    server's `TokenBucket`, a little slower and smaller, so nothing sent is refused as
    ``rate_limited``."""

    __slots__ = ()

    def __init__(self, rate: float, burst: int, now: float) -> None:
        super().__init__(max(0.1, rate * 0.9), max(1.0, burst / 2), now)

    def wait(self, now: float) -> float:
        """Take one message's token at ``now``; 0, or seconds to wait first (then ask again)."""
        return self.take(now)
