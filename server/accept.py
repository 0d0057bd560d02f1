"""Before the handshake: a cap on open connections, and quiet logs when accepting fails.

Every accepted TCP connection costs a file descriptor from the moment it is accepted,
handshake or not. `ConnectionCap` counts them from accept to close and closes any
connection over its limit at once, so a flood of idle sockets can never use up the
process's open-file limit (`default_limit` keeps headroom under ``RLIMIT_NOFILE`` for
the database, its WAL, the logs and the feed). Connections that do get in still have
``open_timeout`` for their handshake and ``hello_timeout`` for their hello.

If ``accept()`` fails all the same (the cap set above the file limit, or descriptors
used elsewhere), asyncio reports each failure, with a traceback, up to a hundred times
per loop iteration. `AcceptErrors` replaces that with one line per `Throttle` period
saying how many failures it stands for.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import time
from typing import Any, cast

from websockets.asyncio.server import ServerConnection

log = logging.getLogger("ttt.server")

#: Descriptors kept free under the open-file limit for everything but client sockets.
HEADROOM = 64


def default_limit(nofile: int | None = None) -> int:
    """The connection cap when none is configured: the soft ``RLIMIT_NOFILE`` less
    the larger of `HEADROOM` and an eighth of it, at least 1."""
    if nofile is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        nofile = 1_000_000 if soft == resource.RLIM_INFINITY else soft
    return max(1, nofile - max(HEADROOM, nofile // 8))


class Throttle:
    """Sans-I/O: of repeated events, which to report. `hit` returns None (stay quiet) or
    how many events the report stands for (this one and those kept quiet before it)."""

    def __init__(self, period: float) -> None:
        self.period = period
        self.quiet = 0
        self._next = float("-inf")

    def hit(self, now: float) -> int | None:
        self.quiet += 1
        if now < self._next:
            return None
        count, self.quiet, self._next = self.quiet, 0, now + self.period
        return count


class ConnectionCap:
    """Open connections, counted from accept to close (by file descriptor); those over
    `limit` are closed at once.

    With asyncio's own loop the cap is applied in ``accept()`` itself (`listen` makes the
    listening socket): a connection over the cap is closed before asyncio sees it, since
    asyncio accepts up to a hundred sockets per loop iteration and creates their
    transports only later. Elsewhere (uvloop accepts in C) it is applied when the
    connection is made (`connection_class`), which closes the surplus a moment later.
    """

    #: Connections over the cap closed in one ``accept()`` call, at most (the loop goes on).
    DRAIN = 64

    def __init__(self, limit: int, period: float = 10.0) -> None:
        self.limit = limit
        #: Descriptors of the connections counted, each with its connection once it is
        #: made (None before: asyncio counts at accept). Kept here rather than on each
        #: connection, whose attributes websockets' own already fill (see `server.connection`).
        self.fds: dict[int, ServerConnection | None] = {}
        #: Connections closed at accept because the cap was reached.
        self.refused = 0
        self._warn = Throttle(period)

    @property
    def open(self) -> int:
        return len(self.fds)

    def full(self, fd: int) -> bool:
        """Whether a new connection on ``fd`` is over the cap (one that is counted is not)."""
        return fd not in self.fds and len(self.fds) >= self.limit

    def refuse(self, now: float) -> None:
        self.refused += 1
        count = self._warn.hit(now)
        if count is not None:
            log.warning("connection cap %d reached: closed %d new connection(s)", self.limit, count)

    def forget(self, conn: ServerConnection, fd: int) -> None:
        """``conn`` closed; ``fd`` is its descriptor (both loops close the socket only after
        ``connection_lost``), else it is looked for."""
        if self.fds.get(fd) is not conn:
            fd = next((d for d, c in self.fds.items() if c is conn), -1)
        self.fds.pop(fd, None)

    def listen(self, host: str, port: int) -> socket.socket:
        """The listening socket (``serve(sock=...)``), bound to ``host`` (an address, or a
        name: its first address) and ``port``."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = _CappedSocket(family, socket.SOCK_STREAM)
        sock.cap = self
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
        except BaseException:
            sock.close()
            raise
        return sock

    def connection_class(self, base: type[ServerConnection]) -> type[ServerConnection]:
        """``base`` (what ``serve(create_connection=...)`` takes), counted by this cap."""
        cap = self

        class Capped(base):  # type: ignore[valid-type,misc]
            _turned_away = False

            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                fd = _descriptor(transport)
                if cap.full(fd):
                    cap.refuse(self.loop.time())
                    self._turned_away = True
                    # nothing read, no handler task: the descriptor is freed now
                    cast(asyncio.Transport, transport).abort()
                    return
                cap.fds[fd] = self
                super().connection_made(transport)

            def connection_lost(self, exc: Exception | None) -> None:
                if self._turned_away:
                    return  # websockets never saw it
                cap.forget(self, _descriptor(self.transport))
                super().connection_lost(exc)

        Capped.__name__ = Capped.__qualname__ = f"Capped{base.__name__}"
        return Capped


def _descriptor(transport: asyncio.BaseTransport) -> int:
    sock = transport.get_extra_info("socket")
    return -1 if sock is None else int(sock.fileno())


class _CappedSocket(socket.socket):
    """A listening socket whose ``accept()`` closes connections over its cap at once."""

    cap: ConnectionCap

    def accept(self) -> tuple[socket.socket, Any]:
        for _ in range(ConnectionCap.DRAIN):
            conn, addr = super().accept()
            fd = conn.fileno()
            if not self.cap.full(fd):
                self.cap.fds[fd] = None  # counted now: asyncio makes its transport later
                return conn, addr
            conn.close()
            self.cap.refuse(time.monotonic())
        raise BlockingIOError  # asyncio's signal to try again when the socket is readable


class AcceptErrors:
    """An event-loop exception handler: the same ``accept()`` failure logged as one line
    per period, with a count; every other report goes to the handler it replaced."""

    MESSAGE = "socket.accept() out of system resource"

    def __init__(self, loop: asyncio.AbstractEventLoop, period: float = 10.0) -> None:
        self.loop = loop
        self.previous = loop.get_exception_handler()
        self.throttle = Throttle(period)
        self.failures = 0

    def install(self) -> None:
        self.loop.set_exception_handler(self)

    def uninstall(self) -> None:
        if self.loop.get_exception_handler() is self:
            self.loop.set_exception_handler(self.previous)

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != self.MESSAGE:
            if self.previous is not None:
                self.previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        self.failures += 1
        count = self.throttle.hit(loop.time())
        if count is not None:
            log.error(
                "accepting connections failed %d time(s): %s; retrying (next report in %g s at most)",
                count,
                context.get("exception"),
                self.throttle.period,
            )
