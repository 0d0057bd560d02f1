"""Plain HTTP on the WebSocket port: ``GET /healthz`` and ``GET /metrics`` (Prometheus text)."""

from __future__ import annotations

import json
import time
from http import HTTPStatus
from typing import TYPE_CHECKING

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from protocol import __version__

if TYPE_CHECKING:
    from server.app import ArenaServer


def process_request(server: ArenaServer, connection: ServerConnection, request: Request) -> Response | None:
    """Answer the two HTTP paths; anything else goes on to the WebSocket handshake."""
    path = request.path.split("?", 1)[0]
    if path == "/healthz":
        body = json.dumps(
            {
                "status": "stopping" if server.stopping else "ok",
                "version": __version__,
                "node": server.config.node_id,
                "connections": len(server.conns),
                "rooms": len(server.rooms),
                "uptime_s": round(time.time() - server.started, 1),
            }
        )
        status = HTTPStatus.SERVICE_UNAVAILABLE if server.stopping else HTTPStatus.OK
        response = connection.respond(status, body + "\n")
        response.headers["Content-Type"] = "application/json"
        return response
    if path == "/metrics":
        response = connection.respond(HTTPStatus.OK, metrics_text(server))
        response.headers["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
        return response
    return None


def metrics_text(server: ArenaServer) -> str:
    """The Prometheus exposition of the server's counters and gauges."""
    mt = server.metrics
    lines: list[str] = []

    def metric(name: str, kind: str, help_text: str, value: float, labels: str = "") -> None:
        if not any(line.startswith(f"# HELP {name} ") for line in lines):
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
        lines.append(f"{name}{labels} {value:g}")

    metric("ttt_connections", "gauge", "Open WebSocket connections.", len(server.conns))
    metric("ttt_players_online", "gauge", "Players who said hello and are connected.", len(server.online))
    metric("ttt_connections_total", "counter", "Connections accepted since start.", mt.connections_total)
    metric("ttt_rooms", "gauge", "Open rooms on this node.", len(server.rooms))
    playing = sum(1 for r in server.rooms.values() if r.playing)
    metric("ttt_games_in_progress", "gauge", "Games being played.", playing)
    metric("ttt_games_started_total", "counter", "Games started.", mt.games_started)
    metric("ttt_games_finished_total", "counter", "Games finished.", mt.games_finished)
    metric("ttt_moves_total", "counter", "Moves played and announced.", mt.moves)
    metric("ttt_frames_total", "counter", "Frames received.", mt.frames)
    for code, count in sorted(mt.errors.items()):
        metric(
            "ttt_errors_total", "counter", "Error replies and refusals, by code.", count, f'{{code="{code}"}}'
        )
    if not mt.errors:
        metric("ttt_errors_total", "counter", "Error replies and refusals, by code.", 0, '{code="internal"}')
    metric("ttt_store_batches_total", "counter", "Store transactions committed.", server.store.batches)
    metric("ttt_store_writes_total", "counter", "Store operations written.", server.store.writes)
    metric(
        "ttt_store_failures_total", "counter", "Store transactions given up on.", server.writer.failures
    )
    metric("ttt_store_retried_total", "counter", "Store transactions tried again.", server.writer.retried)
    metric("ttt_writer_backlog", "gauge", "Decisions waiting to be written.", server.writer.backlog)
    metric("ttt_bus_published_total", "counter", "Events published on the feed bus.", server.bus.published)
    if server.feed is not None and hasattr(server.feed, "stats"):
        for key, value in sorted(server.feed.stats().items()):
            metric(f"ttt_{key}", "gauge", f"Feed: {key}.", value)
    return "\n".join(lines) + "\n"
