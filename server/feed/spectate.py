"""Watching a room hosted on another node, through the broker: the two calls the server's
``spectate`` and ``leave`` handlers make for a room that is not local.

A spectator here gets the room's snapshot as this node's feed folded it, then every later
event relayed from the broker. Seats stay on the host: seat-taking is redirected there.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from protocol import messages as m

#: conn -> {room id: unwatch}: the remote rooms each local connection watches.
_WATCHING: weakref.WeakKeyDictionary[Any, dict[str, Callable[[], None]]] = weakref.WeakKeyDictionary()


def _remote(server: Any) -> Any:
    feed = getattr(server, "feed", None)
    return getattr(feed, "remote", None)


def spectate_remote(server: Any, conn: Any, msg: m.Spectate) -> bool:
    """Answer ``Spectate`` of a remote room with ``Joined`` (role spectator) and start relaying
    its events to ``conn``. Returns False (and does nothing) when this node cannot: no feed, the
    room is unknown, private (the invite is checked by its host only) or its node offline."""
    remote = _remote(server)
    snapshot = remote.snapshot(msg.room) if remote is not None else None
    if snapshot is None or snapshot["room"].get("private"):
        return False
    joined = m.Joined(
        room=msg.room,
        role="spectator",
        snapshot=m.RoomSnapshot.model_validate(snapshot, strict=False),
        ref=msg.ref,
    )
    rooms = _WATCHING.setdefault(conn, {})
    if msg.room in rooms:
        rooms.pop(msg.room)()

    def send(frame: str) -> None:
        ws = getattr(conn, "ws", None)
        if getattr(conn, "closing", False) or getattr(ws, "close_code", None) is not None:
            stop_watching(conn, msg.room)  # the connection is gone
            return
        conn.send(frame)

    conn.send(m.encode(joined))
    rooms[msg.room] = remote.watch(msg.room, send)
    return True


def stop_watching(conn: Any, room_id: str) -> bool:
    """``Leave`` of a remote room ``conn`` watches: stop relaying. False if it watched none."""
    unwatch = _WATCHING.get(conn, {}).pop(room_id, None)
    if unwatch is None:
        return False
    unwatch()
    return True


def stop_all(conn: Any) -> None:
    """``conn`` is gone: stop relaying every remote room it watched."""
    for unwatch in _WATCHING.pop(conn, {}).values():
        unwatch()
