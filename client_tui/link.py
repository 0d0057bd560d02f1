"""The terminal client's connection: connect with the remembered token, pass events
on, and come back after a drop.

`Link` wraps one `protocol.client.ArenaClient` (the same client bots and tests
use). `events` yields every pushed message; when the connection drops it
reports ``reconnecting``, tries again with backoff, resumes every room from the
last seq seen (the server replays what was missed, or sends a snapshot) and
carries on, so the screens keep their boards; the server's `Resumed` answer is
then yielded too, as the cue to subscribe again to what a new connection lacks.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from client_tui.tokens import TokenStore
from client_tui.words import error_text, unreachable_text
from protocol import messages as m
from protocol.client import ArenaClient, ConnectionLost, RemoteError
from protocol.pacing import Backoff
from protocol.reconnect import Reconnector

#: Codes after which trying again cannot help.
FATAL = frozenset({"bad_token", "bad_name", "name_taken", "protocol_version"})


class Link:
    """One player's connection to one server, as the terminal client keeps it."""

    def __init__(
        self,
        url: str,
        name: str,
        store: TokenStore,
        on_status: Callable[[str], None] = lambda status: None,
        *,
        backoff: tuple[float, float] = (0.2, 5.0),
    ) -> None:
        self.url = url
        self.name = name
        self.store = store
        self.on_status = on_status
        self.backoff = backoff
        self.client: ArenaClient | None = None
        self.status = "disconnected"
        self.attempts = 0
        #: The server's answer to the last resume: per room, replayed, snapshot or gone.
        self.resumed: m.Resumed | None = None
        self._closed = asyncio.Event()

    def _set(self, status: str) -> None:
        self.status = status
        self.on_status(status)

    async def connect(self) -> m.Welcome:
        """Connect and say hello, with the token remembered for this server and name.

        Raises:
            RemoteError: the server refused the hello (the code says why).
            OSError, TimeoutError, WebSocketException: the server could not be reached
                (or hung up before the WebSocket handshake was done).
        """
        self._set("connecting")
        known = self.store.get(self.url)
        token = known.token if known is not None and known.name == self.name else None
        client = ArenaClient(self.url, self.name, "human", token, timeout=10)
        try:
            welcome = await client.open()
        except BaseException:
            self._set("disconnected")
            raise
        self.client = client
        self._remember()
        self._set("connected")
        return welcome

    def _remember(self) -> None:
        assert self.client is not None and self.client.token is not None
        self.url = self.client.url
        self.store.put(self.client.url, self.name, self.client.token)

    async def request(self, message: m.ClientMessage) -> m.ServerMessage:
        """Send ``message`` and return its reply (a `Redirect` is followed)."""
        if self.client is None or self.client.closed:
            raise ConnectionLost("not connected; reconnecting")
        reply = await self.client.request(message)
        if self.client.url != self.url:
            self._remember()
        return reply

    async def events(self) -> AsyncIterator[m.ServerMessage]:
        """Every pushed message, across reconnections. Ends when the link is closed or
        the server will not take the player back."""
        while self.client is not None:
            try:
                yield await self.client.next_event()
            except ConnectionLost:
                if self.status == "closed" or not await self._come_back():
                    return
                if self.resumed is not None:
                    # The caller's cue to subscribe again: a new connection (and maybe a
                    # restarted server) knows nothing of the lobby or the rooms watched.
                    yield self.resumed

    async def _come_back(self) -> bool:
        """Reconnect with backoff until it works; False when it never can (or the link closed)."""
        assert self.client is not None
        self.attempts = 0

        def attempt() -> None:
            self.attempts += 1
            self._set("reconnecting")

        backoff = Backoff(*self.backoff)

        def failed(error: Exception, delay: float) -> None:
            if self.attempts > 1:
                self._set(unreachable_text(delay))

        again = Reconnector(
            self.client,
            backoff=backoff,
            fatal=FATAL,
            stop=self._closed,
            on_attempt=attempt,
            on_failure=failed,
        )
        try:
            self.resumed = await again.come_back()
        except RemoteError as exc:
            self._set(f"refused: {error_text(exc.code, exc.message)}")
            return False
        except ConnectionLost:
            return False  # closed meanwhile
        self._remember()
        self._set("connected")
        return True

    async def close(self) -> None:
        self._set("closed")
        self._closed.set()
        if self.client is not None:
            await self.client.close()
