"""A WebSocket server connection that hands whole text frames straight to the server.

``websockets`` queues each incoming message for the connection's handler task to
``recv``: a future, a task wake-up and a loop iteration per frame. With hundreds
of games in flight that is a large share of the server's time for a frame that
is handled in microseconds, so once a player has said hello the server sets
`ArenaConnection.on_text` and each complete text frame is handled as it is parsed.

Everything else (fragmented and binary messages, invalid UTF-8, frames arriving
while earlier ones still wait in the queue) takes the ordinary path to ``recv``,
so the order of a connection's messages never changes.
"""

from __future__ import annotations

from collections.abc import Callable

from websockets.asyncio.server import ServerConnection
from websockets.frames import Frame, Opcode
from websockets.protocol import Event


class ArenaConnection(ServerConnection):
    #: Called with each complete text frame while set (the connection's handler still runs).
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
