"""``GET /metrics``: the server's figures in Prometheus's text format, through ``prometheus_client``.

Two histograms are observed as things happen: the time from a move's decision to its
broadcast (``ttt_move_broadcast_seconds``: the store write and the wait for the batch
included) and the time of each store transaction (``ttt_store_commit_seconds``, in the
writer's thread). They are `Timings`, a count per bucket, exposed in the histogram format
when scraped: ``prometheus_client``'s `Histogram` takes a lock per bucket and per sum on
each observation, about 2 µs a move on the event loop. Everything else is read from the
server when scraped, by a collector, so the move path pays nothing for it. Each server
has a registry of its own (tests run several servers in one process).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

#: Move-to-broadcast buckets, seconds: a durable write (FULL sync) takes a few ms.
_MOVE_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
_COMMIT_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0, 10.0)

#: The MQTT feed's figures (`Feed.stats`): name -> (counter or gauge, help). A counter
#: ``ttt_feed_x`` is exposed as ``ttt_feed_x_total``.
FEED_FIGURES: dict[str, tuple[str, str]] = {
    "feed_connected": ("gauge", "1 while connected to the MQTT broker."),
    "feed_queued": ("gauge", "Room events waiting for the broker."),
    "feed_retained": ("gauge", "Retained topics the node republishes after each reconnection."),
    "feed_nodes": ("gauge", "Other nodes heard within the presence timeout (their rooms are listed)."),
    "feed_published": ("counter", "Messages the broker confirmed (PUBACK)."),
    "feed_overflow": ("counter", "Room events dropped because the queue was full while the broker was away."),
    "feed_bus_dropped": ("counter", "Events the bus dropped because the MQTT bridge fell behind."),
    "feed_invalid": ("counter", "Events skipped because their key cannot be a topic level."),
    "feed_outages": ("counter", "Times the broker was lost."),
    "feed_reconnects": ("counter", "Times the broker was found again after an outage."),
    "feed_heartbeats": ("counter", "Republications of this node's presence (heartbeats, count changes)."),
    "feed_wills": ("counter", "Last wills of other nodes heard live (hints: a node goes only when silent)."),
    "feed_goodbyes": ("counter", "Other nodes that said offline themselves (a clean exit)."),
    "feed_nodes_expired": ("counter", "Other nodes dropped because their heartbeats stopped."),
}


class Timings(Collector):
    """A histogram of seconds, as ``prometheus_client.Histogram`` exposes it (``_bucket``
    per upper bound and ``+Inf``, ``_count``, ``_sum``), observed with one bisection and
    two additions and no lock. Observations come from one thread each (the event loop, or
    the writer's); a scrape from another may see one observation in the count and not yet
    in the sum, which a lock per observation is not worth on the move path."""

    def __init__(self, name: str, documentation: str, buckets: tuple[float, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.bounds = buckets
        #: Observations per bucket (not cumulative); the last is above every bound.
        self.counts = [0] * (len(buckets) + 1)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.sum += seconds

    def collect(self) -> Iterator[Metric]:
        total = 0
        buckets: list[tuple[str, float]] = []
        for bound, count in zip((*map(repr, map(float, self.bounds)), "+Inf"), self.counts, strict=True):
            total += count
            buckets.append((bound, total))
        yield HistogramMetricFamily(self.name, self.documentation, buckets=buckets, sum_value=self.sum)
        yield GaugeMetricFamily(f"{self.name}_created", self.documentation, value=self.created)


class ServerMetrics:
    """The registry of one server: its histograms, and a collector over ``server``."""

    def __init__(self, server: Any) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.move_broadcast = Timings(
            "ttt_move_broadcast_seconds",
            "From a move's decision to its broadcast (stored first).",
            _MOVE_BUCKETS,
        )
        self.store_commit = Timings(
            "ttt_store_commit_seconds",
            "Time of each store transaction (a batch of operations).",
            _COMMIT_BUCKETS,
        )
        for collector in (self.move_broadcast, self.store_commit, _Figures(server)):
            self.registry.register(collector)

    def text(self) -> bytes:
        return generate_latest(self.registry)


class _Figures(Collector):
    """Gauges and counters read from the server at scrape time."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        server = self.server
        arena = server.arena
        counts = arena.counts

        def gauge(name: str, help_text: str, value: float) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, help_text, value=value)

        def counter(name: str, help_text: str, value: float) -> CounterMetricFamily:
            return CounterMetricFamily(name, help_text, value=value)

        yield gauge("ttt_connections", "Open WebSocket connections.", len(server.conns))
        yield gauge("ttt_players_online", "Players who said hello and are connected.", len(arena.online))
        yield counter(
            "ttt_connections", "Connections accepted since start.", server.metrics.connections_total
        )
        yield gauge("ttt_rooms", "Open rooms on this node.", len(arena.rooms))
        yield gauge(
            "ttt_games_in_progress", "Games being played.", sum(1 for r in arena.rooms.values() if r.playing)
        )
        yield counter("ttt_games_started", "Games started.", counts["games_started"])
        yield counter("ttt_games_finished", "Games finished.", counts["games_finished"])
        yield counter("ttt_moves", "Moves played and announced.", counts["moves"])
        yield counter("ttt_frames", "Frames received.", server.metrics.frames)
        errors = CounterMetricFamily("ttt_errors", "Error replies and refusals, by code.", labels=["code"])
        for code, count in sorted(arena.errors.items()):
            errors.add_metric([code], count)
        yield errors
        yield gauge("ttt_challenges_pending", "Challenges waiting for an answer.", len(arena.challenges))
        yield counter("ttt_store_batches", "Store transactions committed.", server.store.batches)
        yield counter("ttt_store_writes", "Store operations written.", server.store.writes)
        yield counter("ttt_store_failures", "Store transactions given up on.", server.writer.failures)
        yield counter("ttt_store_retried", "Store transactions tried again.", server.writer.retried)
        yield gauge("ttt_writer_backlog", "Decisions waiting to be written.", server.writer.backlog)
        yield counter("ttt_bus_published", "Events published on the feed bus.", server.bus.published)
        cluster = getattr(server, "cluster", None)
        if cluster is not None:  # clustered nodes (server.cluster)
            yield gauge(
                "ttt_lease_epoch", "This node's lease epoch (0: none held).", cluster.lease.epoch or 0
            )
            yield counter(
                "ttt_rooms_adopted", "Rooms taken over from nodes whose lease ran out.", cluster.adopted
            )
            yield counter("ttt_rooms_dropped", "Rooms dropped: another node took them over.", cluster.dropped)
        feed = server.feed
        if feed is not None and hasattr(feed, "stats"):
            for key, value in sorted(feed.stats().items()):
                kind, help_text = FEED_FIGURES.get(key, ("gauge", f"Feed: {key}."))
                yield (counter if kind == "counter" else gauge)(f"ttt_{key}", help_text, value)
