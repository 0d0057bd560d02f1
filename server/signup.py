"""How fast one client address may create players, sans-I/O: a token bucket per address.

A hello with no token creates a player (and stores it for good), so an address that
sends them flat out would fill the players table; each address gets
``config.signup_burst`` new players at once and ``config.signup_rate`` a second after
that, and is refused with ``too_many_accounts`` (and a ``retry_after``) beyond it.
A returning player (a token) is never counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol import messages as m
from protocol.bucket import TokenBucket
from protocol.errors import ErrorCode
from server.decision import Decision, Reply
from server.players import Session

if TYPE_CHECKING:
    from server.arena import Arena

#: Addresses remembered before full buckets (nothing to remember) are forgotten.
MAX_ADDRESSES = 10_000


def refused(arena: Arena, session: Session, message: m.ClientMessage, now: float) -> Decision | None:
    """The refusal of a new player's hello from an address over its budget (None: go ahead).
    Only a hello that will create a player (no token, a free name) spends from the bucket."""
    if not isinstance(message, m.Hello) or message.token is not None or session.player is not None:
        return None
    if message.protocol != m.PROTOCOL_VERSION or arena.players.named(message.name) is not None:
        return None  # refused anyway, for another reason
    cfg = arena.config
    bucket = arena.signups.get(session.ip)
    if bucket is None:
        if len(arena.signups) >= MAX_ADDRESSES:
            _forget_full(arena, now)
        bucket = arena.signups[session.ip] = TokenBucket(cfg.signup_rate, cfg.signup_burst, now)
    wait = bucket.take(now)
    if not wait:
        return None
    arena.errors[ErrorCode.TOO_MANY_ACCOUNTS] += 1
    error = m.Error(
        code=ErrorCode.TOO_MANY_ACCOUNTS,
        message="too many new players from your address; try again later or come back with a token",
        ref=message.ref,
        retry_after=round(max(wait, 0.001), 3),
    )
    return Decision(now=[Reply(session.conn, m.encode(error))])


def _forget_full(arena: Arena, now: float) -> None:
    """Drop the buckets that have refilled (an address seen again starts full anyway)."""
    for ip, bucket in list(arena.signups.items()):
        if bucket.tokens + (now - bucket.refilled) * bucket.rate >= bucket.burst:
            del arena.signups[ip]
