"""WebSocket connections that hand whole text frames straight to a callback.

``websockets`` queues each incoming message for the connection's handler task to
``recv``: a future, a task wake-up and a loop iteration per frame. With hundreds
of games in flight that is a large share of the server's time for a frame that
is handled in microseconds, so once a player has said hello the server sets
`ArenaConnection.on_text` and each complete text frame is handled as it is parsed.

Everything else (fragmented and binary messages, invalid UTF-8, frames arriving
while earlier ones still wait in the queue) takes the ordinary path to ``recv``,
so the order of a connection's messages never changes.

`TextShortcut` is the mechanism, for either end: `ArenaConnection` is the
server's; ``bench/load.py`` puts it on its load clients.
"""

from __future__ import annotations

from collections.abc import Callable

from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.frames import Frame, Opcode
from websockets.protocol import Event


class TextShortcut(Connection):
    """Mixed into a client or server connection class, ahead of it."""

    #: Called with each complete text frame while set (``recv`` still gets the rest).
    on_text: Callable[[str], None] | None = None

    def process_event(self, event: Event) -> None:
        handle = self.on_text
        if (
            handle is not None
            and isinstance(event, Frame)
            and event.opcode is Opcode.TEXT
            and event.fin
            and not len(self.recv_messages.frames)  # nothing queued ahead of it
        ):
            try:
                text = bytes(event.data).decode()
            except UnicodeDecodeError:
                pass  # recv raises it and the connection closes, as without this shortcut
            else:
                handle(text)
                return
        super().process_event(event)


class ArenaConnection(TextShortcut, ServerConnection):
    """The server's connections (``serve(create_connection=ArenaConnection)``)."""
