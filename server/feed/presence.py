"""`Presence`: which other nodes are alive, judged from their heartbeats. Sans-I/O: the relay
tells it what the broker said and when (``now``, the loop's clock), the bridge tells it when
this node's own link to the broker comes and goes, and a periodic tick asks who has gone.

Every node republishes its retained ``nodes/{node}`` (``status: online``) every heartbeat.
A node is listed while it has been heard within ``timeout``. What is *not* proof:

- **A last will** (``status: offline`` published by the broker on the node's behalf) is a
  hint. When the broker itself stops, Mosquitto sends every client's will, healthy or not.
  A will only shortens the wait: the node goes once it has been silent for two heartbeats
  (a dead node's last beat is at most one heartbeat old when its will comes), and for one
  heartbeat after the will (when the broker stops, the observer's own connection drops just
  after the wills: that must be seen first).
- **Silence while this node is cut off from the broker** says nothing about the others:
  nobody can be heard then. The clock stops while the link is down, and when it comes back
  every known node gets ``rejoin`` seconds to be heard again (the others reconnect with
  their own backoff, up to its cap).
- **Retained messages** received on (re)subscribing are old news: a retained ``online``
  lists a node for one timeout (a live heartbeat must follow), a retained ``offline``
  changes nothing.

Only a node's own goodbye (a live ``offline`` that is not a will: a clean exit) removes it
at once.

What *is* proof besides a heartbeat: with leases (``--node-id``, one shared database), a
node whose lease the database holds live (`leased`, told by `server.cluster` on each of
its beats) is not removed for silence or a will until that lease runs out. The broker's
timing then matters no more: when the broker stops, a will can come more than a
heartbeat before this node notices that its own link dropped (a busy process), and the
lease keeps the node listed meanwhile. A node killed is removed once both its heartbeats
and its lease have run out.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Presence:
    """The heartbeat clocks of the other nodes, as one node sees them.

    Args:
        heartbeat: seconds between two heartbeats of a node.
        timeout: seconds of silence (while this node is connected) after which a node is gone.
        rejoin: seconds each known node has to be heard after this node reconnects.
    """

    heartbeat: float = 5.0
    timeout: float = 20.0
    rejoin: float = 20.0
    #: Whether this node's own link to the broker is up (the clocks run only then).
    linked: bool = False
    #: Live wills heard, nodes removed for silence, goodbyes heard.
    wills: int = 0
    expired: int = 0
    goodbyes: int = 0
    #: node -> when it was last heard (or given a fresh start on reconnection).
    _heard: dict[str, float] = field(default_factory=dict)
    #: node -> when its will came (after its last heartbeat).
    _suspect: dict[str, float] = field(default_factory=dict)
    #: node -> until when its lease in the database is live (this clock's time).
    _leased: dict[str, float] = field(default_factory=dict)

    def listed(self, node: str) -> bool:
        return node in self._heard

    @property
    def nodes(self) -> list[str]:
        return sorted(self._heard)

    def online(self, node: str, now: float, retained: bool) -> None:
        """``nodes/{node}`` said ``online``: a heartbeat (or, retained, a presumption of one)."""
        if retained and node in self._heard:
            return  # old news: only a live beat moves the clock of a node already listed
        self._heard[node] = now
        self._suspect.pop(node, None)

    def offline(self, node: str, now: float, retained: bool, will: bool) -> bool:
        """``nodes/{node}`` said ``offline``. Returns True when the node is gone at once
        (its own live goodbye); a will or a retained offline is only a hint."""
        if retained or node not in self._heard:
            return False
        if not will:
            del self._heard[node]
            self._suspect.pop(node, None)
            self.goodbyes += 1
            return True
        self.wills += 1
        self._suspect.setdefault(node, now)
        return False

    def link_up(self, now: float) -> None:
        """This node (re)connected: nobody could be heard meanwhile, so every known node
        starts again with ``rejoin`` seconds to be heard, and no will heard before counts."""
        self.linked = True
        start = now + self.rejoin - self.timeout  # so that `due` is now + rejoin
        for node, heard in self._heard.items():
            self._heard[node] = max(heard, start)
        self._suspect.clear()

    def link_down(self) -> None:
        self.linked = False

    def leased(self, until: dict[str, float]) -> None:
        """The nodes whose lease the database holds live, each with the time (this clock's)
        it runs out at; replaces what was told before."""
        self._leased = dict(until)

    def due(self, node: str) -> float:
        """When ``node`` is gone unless heard before (only while linked)."""
        heard = self._heard[node]
        will = self._suspect.get(node)
        if will is None:
            due = heard + self.timeout
        else:
            due = min(heard + self.timeout, max(heard + 2 * self.heartbeat, will + self.heartbeat))
        return max(due, self._leased.get(node, due))

    def gone(self, now: float) -> list[str]:
        """The nodes silent for too long, now removed; none while this node's link is down."""
        if not self.linked:
            return []
        gone = [node for node in self._heard if now > self.due(node)]
        for node in gone:
            del self._heard[node]
            self._suspect.pop(node, None)
        self.expired += len(gone)
        return gone
