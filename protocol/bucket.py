"""A token bucket, the one rate limit both ends use: the server to refuse a flood, a bot
to stay under the server's limit. Sans-I/O: the caller passes the time."""

from __future__ import annotations


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; a message costs one."""

    __slots__ = ("burst", "rate", "refilled", "tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.refilled = now

    def take(self, now: float) -> float:
        """Spend one token at ``now``: 0.0, or the seconds to wait until one is there
        (nothing is spent then)."""
        self.tokens = min(self.burst, self.tokens + (now - self.refilled) * self.rate)
        self.refilled = now
        if self.tokens >= 1.0 - 1e-9:  # a hair short after waiting exactly: rounding, not a wait
            self.tokens = max(0.0, self.tokens - 1.0)
            return 0.0
        return (1.0 - self.tokens) / self.rate
