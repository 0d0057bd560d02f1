"""This node's lease on its rooms, sans-I/O: when to renew, and what a renewal's answer means.

Each clustered node (``--node-id``) holds a lease in the shared database: a row with an
``epoch`` and an expiry time (wall-clock milliseconds). The shell (`server.cluster`)
renews it every ``renew_every`` seconds for ``duration`` seconds more, and on the same
beat looks for rooms whose owner's lease ran out and takes them over. Every write to a
room checks in its transaction that this node's (node, epoch) still owns the room
(`server.store.Store._check_fence`), so a node that was paused or cut off past its
lease writes nothing more to rooms another node took: the database, not this object,
is the proof. This object only keeps the rhythm and says what to do next.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LeaseRules:
    """How long a lease lasts and how often it is renewed (seconds).

    A node is taken for dead ``duration`` seconds after its last renewal, so failover
    takes about ``duration + renew_every``. ``duration`` must leave room for a few
    missed renewals (a busy database, a pause of the process) and for the clocks of
    the hosts to differ."""

    duration: float = 4.0
    renew_every: float = 1.0

    def __post_init__(self) -> None:
        if self.renew_every <= 0:
            raise ValueError("the lease must be renewed at a positive interval")
        if self.duration < 2 * self.renew_every:
            raise ValueError(
                f"a lease of {self.duration:g} s renewed every {self.renew_every:g} s could run out "
                "between two renewals: make it at least twice as long"
            )


class Verdict(enum.Enum):
    """What the shell does after a renewal."""

    #: The lease is ours for ``duration`` more: carry on (and look for orphaned rooms).
    HELD = "held"
    #: Another node fenced this incarnation off: drop every room, register a new epoch.
    LOST = "lost"
    #: The renewal failed (the database is unreachable): keep trying; another node may
    #: take the rooms over once the lease runs out, and then this node's writes fail.
    UNKNOWN = "unknown"


class Lease:
    """The rhythm of one node's lease. Times: ``now`` is the loop's monotonic clock,
    ``wall`` the wall clock (what the database compares, across hosts)."""

    def __init__(self, node: str, rules: LeaseRules) -> None:
        self.node = node
        self.rules = rules
        #: The epoch of this incarnation (None until registered).
        self.epoch: int | None = None
        #: When the lease was last renewed (monotonic), or registered.
        self.renewed_at: float | None = None
        #: Renewals that failed in a row.
        self.failures = 0
        #: Not before this time (monotonic) may the node take rooms over: see `may_adopt`.
        self.adopt_from = 0.0

    def expires_ms(self, wall: float) -> int:
        """The expiry to write when renewing at wall-clock time ``wall``."""
        return int((wall + self.rules.duration) * 1000)

    def registered(self, epoch: int, now: float) -> None:
        self._back(now)
        self.epoch = epoch
        self.renewed_at = now
        self.failures = 0

    def _back(self, now: float) -> None:
        """The database answers again after ``failures`` failed tries: wait a lease."""
        if self.failures:
            self.adopt_from = now + self.rules.duration

    def due(self, now: float) -> float:
        """When to renew next."""
        if self.renewed_at is None:
            return now
        return self.renewed_at + self.rules.renew_every

    def renewed(self, ok: bool | None, now: float) -> Verdict:
        """The answer of a renewal: True (renewed), False (this epoch is no longer ours) or
        None (the database could not be asked)."""
        if ok is None:
            self.failures += 1
            return Verdict.UNKNOWN
        if not ok:
            self.epoch = None
            self.renewed_at = None
            return Verdict.LOST
        self._back(now)
        self.renewed_at = now
        self.failures = 0
        return Verdict.HELD

    def may_adopt(self, now: float) -> bool:
        """Whether the node may take orphaned rooms over at ``now``: not for ``duration``
        after its renewals failed. When the database was down (or out of reach) for
        longer than a lease, every lease in it has run out when it comes back, the live
        ones too; the first node to get through must not take the others' rooms, so it
        gives them one lease to renew theirs. A node that is really dead is taken over
        after that wait."""
        return now >= self.adopt_from

    def held(self, now: float) -> bool:
        """Whether the lease is surely still ours at ``now`` (renewed less than ``duration``
        ago): past that, another node may be taking the rooms over."""
        return self.renewed_at is not None and now < self.renewed_at + self.rules.duration
