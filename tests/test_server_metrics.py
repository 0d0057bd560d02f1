"""The move path's histograms: `Timings` reads as prometheus_client's `Histogram` does."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from server.metrics import Timings


def test_timings_expose_what_a_prometheus_histogram_does() -> None:
    buckets = (0.0005, 0.001, 0.01, 0.5, 10.0)
    theirs = CollectorRegistry(auto_describe=False)
    histogram = Histogram("ttt_x_seconds", "Doc.", buckets=buckets, registry=theirs)
    ours = CollectorRegistry(auto_describe=False)
    timings = Timings("ttt_x_seconds", "Doc.", buckets)
    ours.register(timings)
    for seconds in (0.0, 0.0001, 0.0005, 0.00051, 0.003, 0.5, 9.99, 10.0, 11.0, 250.0):
        histogram.observe(seconds)
        timings.observe(seconds)
    created = "ttt_x_seconds_created "

    def lines(registry: CollectorRegistry) -> list[str]:
        return [line for line in generate_latest(registry).decode().splitlines() if created not in line]

    assert lines(ours) == lines(theirs)
    assert any(line.startswith(created) for line in generate_latest(ours).decode().splitlines())
