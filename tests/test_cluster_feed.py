"""Two clustered nodes on a real Mosquitto: the MQTT last will is a hint, the lease table is
the proof. A node marked offline on the feed while its lease is live keeps its rooms: no
other node takes them over, and requests for them are still sent to it (on a SQLite file the
nodes share, then on PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import aiomqtt
import pytest
from cluster_nodes import until
from mosquitto import Broker, running_broker
from server_harness import player

from protocol import messages as m
from server.app import ArenaServer
from server.config import ServerConfig
from server.feed import start_feed
from server.feed.bridge import Backoff, origin_props

#: No renewal (nor look for orphaned rooms) happens by itself: the test calls `Cluster.beat`.
STILL = {"lease": 120.0, "lease_renew": 60.0}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path) as b:
        yield b


async def start_node(db: str, broker: Broker, node: str) -> ArenaServer:
    config = ServerConfig(host="127.0.0.1", port=0, db=db, node_id=node, **STILL)
    server = ArenaServer(config)
    server.feed = await start_feed(server, server.bus, broker.url, node)
    server.feed.backoff = Backoff(0.05, 0.5)
    await server.start()
    return server


async def test_a_node_marked_offline_by_a_will_keeps_its_rooms_while_its_lease_lives(
    any_db: str, broker: Broker
) -> None:
    a = await start_node(any_db, broker, "a")
    b = await start_node(any_db, broker, "b")
    try:
        ann = await player(a.url, "ann")
        joined = await ann.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined)
        await until(lambda: "a" in b.arena.remote_nodes, 10, "b hearing of a on the feed")
        # What the broker sends when it thinks a is gone (its last will): a is offline.
        offline = {"node": "a", "url": a.url, "status": "offline"}
        async with aiomqtt.Client(broker.host, broker.port, protocol=aiomqtt.ProtocolVersion.V5) as mqtt:
            await mqtt.publish(
                "ttt/v1/nodes/a", json.dumps(offline), qos=1, retain=True, properties=origin_props("a")
            )
        await until(lambda: "a" not in b.arena.remote_nodes, 10, "b taking a for offline")
        assert b.cluster is not None
        await b.cluster.beat()  # a's lease is live: nothing of a's is an orphan
        assert joined.room not in b.rooms and b.cluster.adopted == 0
        guest = await player(b.url, "guest")
        seated = await guest.request(m.Join(room=joined.room))  # sent to a by the lease table
        assert isinstance(seated, m.Joined) and guest.url == a.url and seated.role == "o"
        await ann.close()
        await guest.close()
    finally:
        await b.stop()
        await a.stop()
