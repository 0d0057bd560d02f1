"""The MQTT bridge: an async shell that drains an `EventBus` into a broker.

Game logic never waits on it: the bus hands events over without blocking, the
`Outbox` keeps what the broker has not confirmed, and one background task
connects, publishes, and reconnects with backoff when the broker goes away.
The same connection can carry subscriptions (the relay between nodes uses them).

A node's presence (``nodes/{node}``, retained) is published when the server says so, again
every heartbeat and whenever its counts change (a tick reads them from the server), and
``offline`` once on a clean exit. Its last will carries the user property ``will`` so that
the others can tell it from a goodbye (`server.feed.presence`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from protocol.pacing import Backoff
from protocol.topics import (
    PREFIX,
    BadTopicKey,
    encode,
    node_offline,
    parse_mqtt_url,
    publication_for,
    topic_for,
)
from server.bus import EventBus, FeedEvent, Subscription
from server.feed.outbox import Outbox
from server.feed.relay import RemoteRooms

log = logging.getLogger("ttt.feed")

#: Called for every message received on the feed's subscriptions:
#: (topic, payload, retained, origin node or None).
MessageHandler = Callable[[str, bytes, bool, str | None], None]

#: MQTT 5 user property naming the node that published a message (the will included).
ORIGIN = "node"
#: MQTT 5 user property that only a node's last will carries.
WILL = "will"

#: Reads the server's current counts for its presence (``connections``, ``rooms``).
Counts = Callable[[], dict[str, int]]


def origin_props(node_id: str, packet_type: int = PacketTypes.PUBLISH) -> Properties:
    props = Properties(packet_type)  # type: ignore[no-untyped-call]
    # (paho appends on each assignment to UserProperty: one assignment)
    will = packet_type == PacketTypes.WILLMESSAGE
    props.UserProperty = [(ORIGIN, node_id), (WILL, "1")] if will else [(ORIGIN, node_id)]
    return props


def _property(message: aiomqtt.Message, key: str) -> str | None:
    pairs = getattr(message.properties, "UserProperty", None) or []
    for name, value in pairs:
        if name == key:
            return str(value)
    return None


def origin_of(message: aiomqtt.Message) -> str | None:
    """The node that published ``message``, from its MQTT 5 user property."""
    return _property(message, ORIGIN)


class Feed:
    """Publishes a bus's events under ``ttt/v1/...`` for one node.

    Args:
        bus: the server's event bus; the feed subscribes at construction, so nothing
            published after that is missed.
        url: ``mqtt://HOST[:PORT]``.
        node_id: this node; the last will marks ``nodes/{node_id}`` offline.
        max_events: room events that may wait while the broker is away.
        backoff: reconnect delays.
        batch: publications in flight at once.
        subscriptions: topic filters to subscribe to on every connection.
        on_message: receives those messages (called in the event loop; must not block).
        remote: the view of the other nodes to keep up to date (subscribes to its filters).
        wait_for_node: seconds the first connection waits for this node's own ``node`` event,
            so that the last will carries its full presence (URL included).
        heartbeat: seconds between two republications of this node's presence.
        presence_timeout: seconds without a heartbeat after which another node is gone.
        counts: reads the server's current counts for the presence (None: none).

    Raises:
        BadMqttUrl: ``url`` is not an MQTT URL.
        BadTopicKey: ``node_id`` cannot be a topic level.
    """

    def __init__(
        self,
        bus: EventBus,
        url: str,
        node_id: str,
        *,
        prefix: str = PREFIX,
        max_events: int = 10_000,
        backoff: Backoff | None = None,
        batch: int = 100,
        subscriptions: Sequence[str] = (),
        on_message: MessageHandler | None = None,
        remote: RemoteRooms | None = None,
        wait_for_node: float = 0.0,
        heartbeat: float = 5.0,
        presence_timeout: float = 20.0,
        counts: Counts | None = None,
    ) -> None:
        self.address = parse_mqtt_url(url)
        self.node_id = node_id
        self.prefix = prefix
        self.node_topic = topic_for("node", node_id, prefix)
        self.outbox = Outbox(max_events=max_events)
        self.backoff = backoff or Backoff(0.25, 10.0)
        self.batch = batch
        self.remote = remote
        self.subscriptions = tuple(subscriptions) + tuple(remote.filters if remote else ())
        self.on_message = on_message
        self.heartbeat = heartbeat
        self.counts = counts
        if remote is not None:
            presence = remote.presence
            presence.heartbeat, presence.timeout = heartbeat, presence_timeout
            # After a reconnection the others come back within their backoff's cap.
            presence.rejoin = max(presence_timeout, self.backoff.cap + 2 * heartbeat)
        #: Presence publications after the first: heartbeats and count changes.
        self.heartbeats = 0
        #: When the presence now held was last published (None: not by a tick yet).
        self._beaten: float | None = None
        #: Events the bus gave that have no topic (a bad key); logged and skipped.
        self.invalid = 0
        self.outages = 0
        self.reconnects = 0
        #: Connection attempts so far, and those that failed or whose connection was lost.
        self.attempts = 0
        self.failures = 0
        self._subscription: Subscription = bus.subscribe()
        self._node_payload: dict[str, Any] | None = None
        self._wakeup = asyncio.Event()
        self._client: aiomqtt.Client | None = None
        self._outage_since: float | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._ever_connected = False
        self._in_flight = 0
        self._props = origin_props(node_id)
        self._node_seen = asyncio.Event()
        self._retry = asyncio.Event()
        self._wait_for_node = wait_for_node

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background tasks; returns at once, whether the broker is up or not."""
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._consume(), name="feed-consume"),
                asyncio.create_task(self._run(), name="feed-connection"),
                asyncio.create_task(self._tick(), name="feed-heartbeat"),
            ]

    async def close(self, timeout: float = 2.0) -> None:
        """Mark the node offline (once: the server's own ``offline`` if it said it, else here),
        send what is waiting (up to ``timeout``), disconnect (cleanly: no last will)."""
        for task in self._tasks:  # the consumer and the heartbeat: nothing new from here on
            if task.get_name() != "feed-connection":
                task.cancel()
        for event in self._subscription.pending():
            self.offer(event)
        if self._tasks and (self._node_payload or {}).get("status") != "offline":
            self.offer(FeedEvent("node", self.node_id, node_offline(self.node_id, self._node_payload)))
        if self._client is not None and self.outbox.connected:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._drained(), timeout)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, timeout)
        self._tasks = []
        self._subscription.close()

    def retry_now(self) -> None:
        """Cut the current backoff delay short: try the broker again at once."""
        self._retry.set()

    @property
    def connected(self) -> bool:
        return self.outbox.connected

    @property
    def idle(self) -> bool:
        """Nothing waits and nothing is in flight: the broker has confirmed everything."""
        return len(self.outbox) == 0 and self._in_flight == 0

    def stats(self) -> dict[str, int]:
        """Counters for ``/metrics``."""
        return {
            "feed_connected": int(self.outbox.connected),
            "feed_published": self.outbox.published,
            "feed_queued": self.outbox.queued_events,
            "feed_overflow": self.outbox.overflow,
            "feed_retained": len(self.outbox.retained),
            "feed_outages": self.outages,
            "feed_reconnects": self.reconnects,
            "feed_invalid": self.invalid,
            "feed_bus_dropped": self._subscription.dropped,
            "feed_heartbeats": self.heartbeats,
            **self._presence_stats(),
        }

    def _presence_stats(self) -> dict[str, int]:
        if self.remote is None:
            return {}
        presence = self.remote.presence
        return {
            "feed_nodes": len(presence.nodes),
            "feed_wills": presence.wills,
            "feed_goodbyes": presence.goodbyes,
            "feed_nodes_expired": presence.expired,
        }

    # -- bus side ----------------------------------------------------------------------------

    def offer(self, event: FeedEvent) -> None:
        """Queue one event for the broker (what the bus consumer does for each event)."""
        try:
            pub = publication_for(event, self.prefix)
        except (BadTopicKey, KeyError) as exc:
            self.invalid += 1
            log.warning("feed: skipped a %s event with key %r: %s", event.kind, event.key, exc)
            return
        if event.kind == "node" and event.key == self.node_id:
            self._node_payload = event.payload
            self._node_seen.set()
            self._beaten = None
        self.outbox.offer(pub)
        self._wakeup.set()

    async def _consume(self) -> None:
        while True:
            self.offer(await self._subscription.get())

    async def _tick(self) -> None:
        """Every second (or heartbeat, if shorter): forget the nodes gone silent, and
        republish this node's presence when a heartbeat is due or its counts changed."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(1.0, self.heartbeat))
            now = loop.time()
            if self.remote is not None:
                self.remote.tick(now)
            self.beat(now)

    def beat(self, now: float) -> bool:
        """Republish this node's presence if a heartbeat is due at ``now`` or its counts
        changed; only while connected and online. Returns whether it did."""
        payload = self._node_payload
        if payload is None or payload.get("status") != "online" or not self.outbox.connected:
            return False
        if self._beaten is None:
            self._beaten = now  # the server's own publication, or a reconnection's
        fresh = {**payload, **(self.counts() if self.counts is not None else {})}
        if fresh == payload and now < self._beaten + self.heartbeat:
            return False
        self.heartbeats += 1
        self.offer(FeedEvent("node", self.node_id, fresh))
        self._beaten = now
        return True

    async def _drained(self) -> None:
        while not self.idle:
            await asyncio.sleep(0.01)

    # -- broker side -------------------------------------------------------------------------

    async def _run(self) -> None:
        if self._wait_for_node > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._node_seen.wait(), self._wait_for_node)
        while True:
            self._retry.clear()  # a retry_now() from here on cuts the next delay short
            self.attempts += 1
            will = aiomqtt.Will(
                self.node_topic,
                encode(node_offline(self.node_id, self._node_payload)),
                1,
                True,
                origin_props(self.node_id, PacketTypes.WILLMESSAGE),
            )
            client = aiomqtt.Client(
                self.address.host,
                self.address.port,
                username=self.address.username,
                password=self.address.password,
                # A stable id: a new connection takes over a half-open old one at once.
                identifier=f"ttt-node-{self.node_id}",
                protocol=aiomqtt.ProtocolVersion.V5,
                will=will,
                keepalive=15,
                timeout=10,
                max_inflight_messages=self.batch,
            )
            # aiomqtt warns above 10 pending publishes; a full window is normal here.
            client.pending_calls_threshold = self.batch + 10
            try:
                async with client:
                    try:
                        self._on_connected(client)
                        if self.remote is not None:
                            self.remote.resync_started()
                        for topic in self.subscriptions:
                            # noLocal: the broker does not echo this node's own messages back.
                            await client.subscribe(topic, options=SubscribeOptions(qos=1, noLocal=True))
                        async with asyncio.TaskGroup() as group:
                            group.create_task(self._pump(client))
                            group.create_task(self._listen(client))
                    finally:
                        self._link_down()  # at once: leaving the client may take a while
            except Exception as exc:  # any failure means: reconnect later
                self.failures += 1
                self._on_lost(exc)
            finally:
                self._link_down()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._retry.wait(), self.backoff.next())

    def _on_connected(self, client: aiomqtt.Client) -> None:
        self._client = client
        self.outbox.on_connected()
        self.backoff.reset()
        self._beaten = None  # the presence goes out again now, with the retained state
        if self.remote is not None:
            self.remote.link_up(asyncio.get_running_loop().time())
        if self._ever_connected:
            self.reconnects += 1
        self._ever_connected = True
        if self._outage_since is not None:
            log.warning(
                "feed: MQTT broker %s is back after %.1f s; republishing %d retained topics, "
                "%d events waiting, %d dropped so far",
                self.address,
                time.monotonic() - self._outage_since,
                len(self.outbox.retained),
                self.outbox.queued_events,
                self.outbox.overflow,
            )
            self._outage_since = None
        else:
            log.info("feed: connected to MQTT broker %s as node %s", self.address, self.node_id)
        self._wakeup.set()

    def _link_down(self) -> None:
        self._client = None
        self.outbox.on_disconnected()
        if self.remote is not None:
            self.remote.link_down()

    def _on_lost(self, exc: BaseException) -> None:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if self._outage_since is not None:
            log.debug("feed: still no MQTT broker at %s: %s", self.address, exc)
            return
        self._outage_since = time.monotonic()
        self.outages += 1
        if not isinstance(exc, aiomqtt.MqttError | OSError):
            log.error("feed: unexpected error in the MQTT bridge", exc_info=exc)
        log.warning(
            "feed: MQTT broker %s unreachable (%s); games go on, up to %d events wait, "
            "retrying with backoff (logged once per outage)",
            self.address,
            exc or type(exc).__name__,
            self.outbox.max_events,
        )

    async def _pump(self, client: aiomqtt.Client) -> None:
        while True:
            batch = self.outbox.take(self.batch)
            if not batch:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            self._in_flight = len(batch)
            try:
                results = await asyncio.gather(
                    *(client.publish(p.topic, p.payload, p.qos, p.retain, self._props) for p in batch),
                    return_exceptions=True,
                )
            except BaseException:
                for pub in reversed(batch):
                    self.outbox.nack(pub)
                raise
            finally:
                self._in_flight = 0
            failure: BaseException | None = None
            for pub, result in zip(batch, results, strict=True):
                if isinstance(result, BaseException):
                    failure = failure or result
                else:
                    self.outbox.ack(pub)
            for pub, result in reversed(list(zip(batch, results, strict=True))):
                if isinstance(result, BaseException):
                    self.outbox.nack(pub)
            if failure is not None:
                raise failure

    async def _listen(self, client: aiomqtt.Client) -> None:
        loop = asyncio.get_running_loop()
        async for message in client.messages:
            payload = message.payload
            data = payload if isinstance(payload, bytes) else str(payload or "").encode()
            topic, origin = str(message.topic), origin_of(message)
            try:
                if self.remote is not None:
                    will = _property(message, WILL) is not None
                    self.remote.receive(topic, data, message.retain, origin, now=loop.time(), will=will)
                if self.on_message is not None:
                    self.on_message(topic, data, message.retain, origin)
            except Exception:
                log.exception("feed: handler failed on %s", message.topic)
