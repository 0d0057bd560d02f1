"""Coming back after a drop, for every client: `Reconnector`.

Connect, say hello with the player's token, resume every room from the last
seq seen; if that fails, wait out a `Backoff` and try again, until it works, a
refusal says it never will, or the caller stops it. A node a redirect led to that
cannot be reached any more is given up for the URL the client started with. A token file (optional)
keeps the token across processes. Bots (`bots.player`) and the terminal client
(`client_tui.link`) both come back this way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from websockets.exceptions import WebSocketException

from protocol import messages as m
from protocol.client import ArenaClient
from protocol.pacing import Backoff
from protocol.session import ConnectionLost, RemoteError
from protocol.tokens import TokenFile

__all__ = ["REFUSALS", "Reconnector"]

#: Refusals of a hello after which trying again cannot help.
REFUSALS = frozenset({"bad_name", "name_taken", "bad_token", "protocol_version"})


class Reconnector:
    """Brings one `ArenaClient` back, again and again.

    Args:
        client: the client to connect; its token (if none is set, the token file's)
            says which player it is.
        backoff: the delays between attempts.
        fatal: codes of refusals that end the attempts (raised to the caller).
        adopt: also resume the rooms the welcome lists that the client has not seen
            (games from before this process, found by its token), from their start.
        token_file: where the token is kept; written after each connection.
        stop: once set, no further attempt is made.
        on_attempt: called before each attempt.
        on_failure: called after a failed attempt with the error and the delay before the next.
    """

    def __init__(
        self,
        client: ArenaClient,
        *,
        backoff: Backoff | None = None,
        fatal: frozenset[str] = REFUSALS,
        adopt: bool = False,
        token_file: TokenFile | None = None,
        stop: asyncio.Event | None = None,
        on_attempt: Callable[[], None] | None = None,
        on_failure: Callable[[Exception, float], None] | None = None,
    ) -> None:
        self.client = client
        self.backoff = backoff or Backoff()
        self.fatal = fatal
        self.adopt = adopt
        self.token_file = token_file
        self.stop = stop or asyncio.Event()
        self.on_attempt = on_attempt
        self.on_failure = on_failure
        if client.token is None and token_file is not None:
            client.token = token_file.read()

    async def come_back(self, *, first: bool = False) -> m.Resumed | None:
        """Connect until it works; the server's answer to the resume.

        ``first``: the first connection of this client, which resumes only when it
        has rooms to resume (with ``adopt``: those the welcome lists), so None may
        come back. Later connections always resume: the `Resumed` also says that
        whatever was pending on the old connection (challenges) is gone.

        Raises:
            RemoteError: the server refused the player with a code in ``fatal``.
            ConnectionLost: ``stop`` was set before a connection worked.
        """
        while not self.stop.is_set():
            if self.on_attempt is not None:
                self.on_attempt()
            try:
                resumed = await self._attempt(first)
            except RemoteError as exc:
                if exc.code in self.fatal:
                    raise
                error: Exception = exc
            except (OSError, TimeoutError, ConnectionLost, WebSocketException) as exc:
                # WebSocketException: e.g. a server still starting (or dying) closes the handshake
                error = exc
                if isinstance(exc, OSError) and self.client.url != self.client.home:
                    # the node a redirect led to is gone: the first node sends us on to
                    # whichever node hosts the rooms now
                    self.client.url = self.client.home
            else:
                if self.token_file is not None and self.client.token is not None:
                    self.token_file.write(self.client.token)
                self.backoff.reset()
                return resumed
            delay = self.backoff.next()
            if self.on_failure is not None:
                self.on_failure(error, delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), delay)
        raise ConnectionLost("stopped before the connection came back")

    async def _attempt(self, first: bool) -> m.Resumed | None:
        client = self.client
        await client.open()
        if first and not client.session.resume_message(self.adopt).rooms:
            return None
        return await client.resume(adopt=self.adopt)
