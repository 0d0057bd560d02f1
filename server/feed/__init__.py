"""The MQTT event feed: the server's events published under ``ttt/v1/...`` on a broker,
and the relay that lets several server nodes on one broker form one arena.

Importing this package is cheap (``ttt watch`` and ``ttt serve`` import it); aiomqtt is
imported only when a feed starts. The topic tree is documented in docs/mqtt.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.bus import EventBus
    from server.feed.bridge import Feed
    from server.feed.relay import RemoteRooms


async def start_feed(server: object, bus: EventBus, url: str, node_id: str) -> Feed:
    """Start publishing ``bus`` to the broker at ``url`` as node ``node_id``.

    Returns at once: the broker may be down, the feed connects in the background and
    never makes the caller wait. Call it before publishing the node's first event.

    Args:
        server: the running server; used for the cross-node hooks it offers (see
            docs/mqtt.md, "Several nodes"); anything without them gets a plain feed.
        bus: the server's event bus.
        url: ``mqtt://HOST[:PORT]``.
        node_id: this node's id (one MQTT topic level).

    Raises:
        BadMqttUrl: ``url`` is not an MQTT URL.
        BadTopicKey: ``node_id`` cannot be a topic level.
    """
    from server.feed.bridge import Feed
    from server.feed.relay import RemoteRooms

    remote = RemoteRooms(node_id)
    connect_server(remote, server)
    config = getattr(server, "config", None)
    feed = Feed(
        bus,
        url,
        node_id,
        remote=remote,
        wait_for_node=2.0,
        heartbeat=getattr(config, "mqtt_heartbeat", 5.0),
        presence_timeout=getattr(config, "mqtt_presence_timeout", 20.0),
        counts=counts_of(server),
    )
    feed.start()
    return feed


def counts_of(server: object) -> Callable[[], dict[str, int]] | None:
    """What the node's presence counts, read from the server when the feed asks: open
    WebSocket connections (house bots included) and the rooms it hosts."""
    conns: Any = getattr(server, "conns", None)
    arena: Any = getattr(server, "arena", None)
    if conns is None or arena is None:
        return None
    return lambda: {"connections": len(conns), "rooms": len(arena.rooms)}


def connect_server(remote: RemoteRooms, server: object) -> None:
    """Hand what the broker says about other nodes to the server's hooks, those it has:
    ``remote_node(node_id, url | None)``, ``remote_room(room_id, summary | None, node_id)``
    and ``relay_room_event(room_id, event)`` (see server/app.py)."""
    remote_node: Any = getattr(server, "remote_node", None)
    remote_room: Any = getattr(server, "remote_room", None)
    relay_room_event: Any = getattr(server, "relay_room_event", None)
    if callable(remote_node):
        remote.on_node(remote_node)
    if callable(remote_room):
        remote.on_lobby(lambda room_id, summary: remote_room(room_id, summary, remote.node_of(room_id) or ""))
    if callable(relay_room_event):
        remote.on_event(relay_room_event)
