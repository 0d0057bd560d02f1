"""`ArenaClient`: the one asyncio client every party uses (bots, the terminal client, tests).

A thin shell over `protocol.session.ClientSession`: a reader task feeds every
frame to the session; replies complete the `request` waiting on their ``ref``,
everything else goes to an event queue read with `next_event`, `expect` or
``async for``. `reconnect` comes back with the token and resumes every room
from the last ``seq`` seen. A `Redirect` reply is followed: the client moves to
the given URL (same name and token) and sends the request again there.

Example::

    client = await connect("ws://127.0.0.1:8765", "alice")
    joined = await client.request(m.CreateRoom(variant="classic"))
    async for event in client:
        ...
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from protocol import messages as m
from protocol.pacing import Pacer
from protocol.session import ClientSession, ConnectionLost, Event, RemoteError, Reply, error_for

__all__ = ["ArenaClient", "ConnectionLost", "RemoteError", "connect"]

T = TypeVar("T")
_CLOSED: Any = object()  # queue sentinel: the connection is gone
#: What a paced client sends before anything else waiting (the clock is running).
_URGENT = (m.Move, m.Resign)
_MAX_REDIRECTS = 3


async def connect(
    url: str,
    name: str,
    kind: str = "human",
    token: str | None = None,
    *,
    timeout: float = 10.0,
    levels: Sequence[str] = (),
    paced: bool = False,
) -> ArenaClient:
    """Open a connection and say hello; the `Welcome` is in ``client.welcome``.

    Raises:
        RemoteError: the server refused the hello (``bad_name``, ``name_taken``, ``bad_token``...).
        OSError, TimeoutError: the server could not be reached.
    """
    client = ArenaClient(url, name, kind, token, timeout=timeout, levels=levels, paced=paced)
    await client.open()
    return client


class ArenaClient:
    """One player's connection. Create it with `connect`."""

    def __init__(
        self,
        url: str,
        name: str,
        kind: str = "human",
        token: str | None = None,
        *,
        timeout: float = 10.0,
        levels: Sequence[str] = (),
        paced: bool = False,
    ) -> None:
        if kind not in ("human", "bot"):
            raise ValueError(f"kind must be 'human' or 'bot', not {kind!r}")
        self.url = url
        #: The URL first given: where `protocol.reconnect` goes back to when the node a
        #: redirect led to cannot be reached (it died; another node took its rooms over).
        self.home = url
        self.name = name
        self.kind = kind
        self.token = token
        self.timeout = timeout
        #: Levels of play this player offers (bots), sent in every hello.
        self.levels = tuple(levels)
        #: Keep within the server's rate limit: each send waits for its turn (`Pacer`).
        self.paced = paced
        self._pacer: Pacer | None = None
        #: Moves and resignations waiting for the pacer: everything else waits behind them.
        self._urgent = 0
        self.session = ClientSession()
        self.events: asyncio.Queue[m.ServerMessage] = asyncio.Queue()
        self._waiters: dict[str, asyncio.Future[m.ServerMessage]] = {}
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self.closed = True

    # --- connection -----------------------------------------------------------

    @property
    def welcome(self) -> m.Welcome:
        assert self.session.welcome is not None, "not connected"
        return self.session.welcome

    @property
    def player_id(self) -> str:
        return self.welcome.player.id

    @property
    def last_seq(self) -> dict[str, int]:
        """Last room-event seq seen per room (what `reconnect` resumes from)."""
        return self.session.last_seq

    async def open(self) -> m.Welcome:
        """Connect to ``self.url`` and say hello (with the token, if one is known); a
        connection still open is closed first."""
        if self._ws is not None:
            await self._drop()
        self._pacer = None  # a new connection starts with a full bucket on the server
        self._ws = await ws_connect(
            self.url, compression=None, open_timeout=self.timeout, max_size=2**20, ping_interval=20
        )
        self.closed = False
        kept = [e for e in self.drain_all() if e is not _CLOSED]
        for event in kept:
            self.events.put_nowait(event)
        self._reader = asyncio.create_task(self._read(self._ws))
        kind: Any = self.kind
        hello = m.Hello(name=self.name, kind=kind, token=self.token, levels=list(self.levels))
        reply = await self.request(hello)
        assert isinstance(reply, m.Welcome)
        self.token = reply.token
        if self.paced:
            limits = reply.limits
            self._pacer = Pacer(limits.rate_per_s, limits.burst, asyncio.get_running_loop().time())
        return reply

    async def reconnect(self, url: str | None = None, *, adopt: bool = False) -> m.Resumed:
        """Drop the current connection (if any), connect again as the same player and
        resume every room from its last seq (with ``adopt``, also the rooms the welcome
        lists that this client has not seen, from the start: see
        `ClientSession.resume_message`). Missed events then arrive as events."""
        await self._drop()
        if url is not None:
            self.url = url
        await self.open()
        return await self.resume(adopt=adopt)

    async def resume(self, *, adopt: bool = False) -> m.Resumed:
        """Ask for every room's events since the last seq seen (see `reconnect`)."""
        reply = await self.request(self.session.resume_message(adopt))
        assert isinstance(reply, m.Resumed)
        return reply

    async def close(self) -> None:
        """Close the connection (code 1000)."""
        await self._drop()

    async def _drop(self) -> None:
        ws, reader = self._ws, self._reader
        self._ws = self._reader = None
        if ws is not None:
            await ws.close()
        if reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        self.closed = True

    async def __aenter__(self) -> ArenaClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- requests -------------------------------------------------------------------

    async def send(self, message: m.ClientMessage) -> str:
        """Send without waiting for the reply; returns the ref (the reply becomes an event)."""
        ref, frame = self.session.request(message)
        self.session.forget(ref)
        await self._send(frame, urgent=isinstance(message, _URGENT))
        return ref

    async def send_raw(self, frame: str | bytes) -> None:
        """Send any frame as is (for tests of bad input)."""
        await self._send(frame)

    async def request(self, message: m.ClientMessage, timeout: float | None = None) -> m.ServerMessage:
        """Send ``message`` and return its reply.

        Raises:
            RemoteError: the reply was an `Error` (a subclass per kind, e.g. `RateLimited`).
            ConnectionLost: the connection closed first.
            TimeoutError: no reply within ``timeout`` (default: the client's).
        """
        for _ in range(_MAX_REDIRECTS + 1):
            reply = await self._request_once(message, timeout)
            if isinstance(reply, m.Redirect) and not isinstance(message, m.Hello):
                await self._drop()
                self.url = reply.url
                await self.open()
                continue
            return reply
        raise RemoteError("redirect_loop", "too many redirects")

    async def _request_once(self, message: m.ClientMessage, timeout: float | None) -> m.ServerMessage:
        ref, frame = self.session.request(message)
        waiter: asyncio.Future[m.ServerMessage] = asyncio.get_running_loop().create_future()
        self._waiters[ref] = waiter
        try:
            await self._send(frame, urgent=isinstance(message, _URGENT))
            reply = await asyncio.wait_for(waiter, timeout or self.timeout)
        finally:
            self._waiters.pop(ref, None)
            self.session.forget(ref)
        if isinstance(reply, m.Error):
            raise error_for(reply)
        return reply

    async def _send(self, frame: str | bytes, urgent: bool = False) -> None:
        """Send ``frame`` when the pacer allows; an ``urgent`` one (a move, a resignation)
        goes before the others waiting, so a flood of challenges to answer never costs a
        game on time."""
        if self._ws is None:
            raise ConnectionLost("not connected")
        if self._pacer is not None:
            loop = asyncio.get_running_loop()
            self._urgent += urgent
            try:
                while True:
                    if not urgent and self._urgent:
                        await asyncio.sleep(0.002)  # a move is waiting: it goes first
                        continue
                    delay = self._pacer.wait(loop.time())
                    if delay <= 0:
                        break
                    await asyncio.sleep(delay)
            finally:
                self._urgent -= urgent
            if self._ws is None:
                raise ConnectionLost("not connected")
        try:
            await self._ws.send(frame)
        except ConnectionClosed as exc:
            raise ConnectionLost(f"connection closed: {exc}") from exc

    # --- events -------------------------------------------------------------------------

    async def next_event(self, timeout: float | None = None) -> m.ServerMessage:
        """The next pushed message. Raises `ConnectionLost` once the connection is gone
        and every earlier event was read, `TimeoutError` after ``timeout`` seconds."""
        event = await asyncio.wait_for(self.events.get(), timeout)
        if event is _CLOSED:
            self.events.put_nowait(_CLOSED)  # keep telling later readers
            raise ConnectionLost("connection closed")
        return event

    async def expect(self, kind: type[T], timeout: float | None = None, **fields: Any) -> T:
        """Skip events until one of type ``kind`` whose attributes equal ``fields``.

        Events skipped on the way are dropped (meant for scripted clients and tests).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout or self.timeout)
        while True:
            event = await self.next_event(max(0.0, deadline - loop.time()))
            if isinstance(event, kind) and all(getattr(event, k, None) == v for k, v in fields.items()):
                return event

    def drain(self) -> list[m.ServerMessage]:
        """Every event already received, without waiting."""
        out = []
        while not self.events.empty():
            event = self.events.get_nowait()
            if event is _CLOSED:
                self.events.put_nowait(_CLOSED)
                break
            out.append(event)
        return out

    def drain_all(self) -> list[Any]:
        """Everything queued, the closed marker included (for `open`)."""
        out: list[Any] = []
        while not self.events.empty():
            out.append(self.events.get_nowait())
        return out

    async def __aiter__(self) -> AsyncIterator[m.ServerMessage]:
        while True:
            try:
                yield await self.next_event()
            except ConnectionLost:
                return

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                try:
                    item = self.session.receive(frame)
                except ValidationError:
                    continue  # a newer server's message this client does not know
                if isinstance(item, Reply):
                    waiter = self._waiters.get(item.ref)
                    if waiter is not None and not waiter.done():
                        waiter.set_result(item.message)
                    else:
                        self.events.put_nowait(item.message)
                elif isinstance(item, Event):
                    self.events.put_nowait(item.message)
        except ConnectionClosed:
            pass
        finally:
            if ws is self._ws or self._ws is None:
                self.closed = True
                for waiter in self._waiters.values():
                    if not waiter.done():
                        waiter.set_exception(ConnectionLost("connection closed"))
                self.events.put_nowait(_CLOSED)
