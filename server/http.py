"""Plain HTTP on the WebSocket port: ``GET /healthz`` and ``GET /metrics`` (Prometheus text).

What each request gets (the query string is ignored):

- ``/healthz``, ``/metrics``: ``GET`` and ``HEAD`` (the same headers, no body); any
  other method (``POST``, ``TRACE``, ``GETX`` ...) is 405 with ``Allow: GET, HEAD``;
- ``/``: the WebSocket handshake, for ``GET`` only (405 with ``Allow: GET`` otherwise);
- any other path: 404, whatever the method.
"""

from __future__ import annotations

import json
import time
from http import HTTPStatus
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from protocol import __version__

#: The paths served, and the methods each allows.
_READ_ONLY = ("GET", "HEAD")
_ALLOWED = {"/healthz": _READ_ONLY, "/metrics": _READ_ONLY, "/": ("GET",)}


def process_request(server: Any, connection: ServerConnection, request: Request) -> Response | None:
    """Refuse unknown paths (404) and methods (405), answer the two HTTP paths; a
    ``GET /`` goes on to the WebSocket handshake."""
    allowed = _ALLOWED.get(request.path.split("?", 1)[0])
    if allowed is None:
        return connection.respond(HTTPStatus.NOT_FOUND, "not found: play at /; see /healthz and /metrics\n")
    if request.method not in allowed:
        refusal = connection.respond(HTTPStatus.METHOD_NOT_ALLOWED, "method not allowed\n")
        refusal.headers["Allow"] = ", ".join(allowed)
        return refusal
    response = _answer(server, connection, request)
    if response is not None and request.method == "HEAD":  # GET's headers (Content-Length too), no body
        response.body = b""
    return response


def _answer(server: Any, connection: ServerConnection, request: Request) -> Response | None:
    """Answer the two HTTP paths; ``/`` goes on to the WebSocket handshake."""
    path = request.path.split("?", 1)[0]
    if path == "/healthz":
        down = server.arena.outage
        status = "stopping" if server.stopping else "store_unavailable" if down is not None else "ok"
        body = json.dumps(
            {
                "status": status,
                **({"reason": down.reason} if down is not None else {}),
                "version": __version__,
                "node": server.config.node_id,
                "connections": len(server.conns),
                "rooms": len(server.rooms),
                **({"epoch": server.cluster.lease.epoch} if getattr(server, "cluster", None) else {}),
                "uptime_s": round(time.time() - server.started, 1),
            }
        )
        code = HTTPStatus.OK if status == "ok" else HTTPStatus.SERVICE_UNAVAILABLE
        return _typed(connection.respond(code, body + "\n"), "application/json")
    if path == "/metrics":
        response = connection.respond(HTTPStatus.OK, server.prometheus.text().decode())
        return _typed(response, CONTENT_TYPE_LATEST)
    return None


def _typed(response: Response, content_type: str) -> Response:
    """One Content-Type header (``respond`` sets text/plain; setting another adds a second)."""
    del response.headers["Content-Type"]
    response.headers["Content-Type"] = content_type
    return response
