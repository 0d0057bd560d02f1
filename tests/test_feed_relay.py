"""`RemoteRooms`, the view of the other nodes: fed with the real events of a real
`server.room.Room`, first directly (sans-I/O), then through two feeds on a real broker."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mosquitto import Broker, running_broker

from protocol import messages as m
from protocol.rules import Mark, find_variant
from protocol.topics import encode, parse_topic
from server.bus import EventBus, FeedEvent
from server.feed.bridge import Backoff, Feed
from server.feed.relay import RemoteRooms
from server.room import Changes, Room

NODE_A = {"node": "A", "url": "ws://127.0.0.1:9001", "status": "online"}


class Host:
    """Node A's side: a real room whose events become feed messages."""

    def __init__(self, variant: str = "classic", room_id: str = "ra1", **kw: Any) -> None:
        self.room = Room(room_id, find_variant(variant), m.NoClock(), node="A", **kw)
        self.messages: list[tuple[str, bytes]] = []

    def apply(self, changes: Changes) -> None:
        for event in changes.events:
            self.messages.append(
                (f"ttt/v1/rooms/{self.room.id}/events", encode(event.model_dump(mode="json")))
            )
        summary = None if self.room.closed else self.room.summary().model_dump(mode="json")
        self.messages.append((f"ttt/v1/lobby/rooms/{self.room.id}", encode(summary)))

    def play_game(self, cells: list[int], players: tuple[str, str] = ("p1", "p2")) -> None:
        self.apply(self.room.sit("p1", "ann", Mark.X, 0.0))
        self.apply(self.room.sit("p2", "bob", Mark.O, 0.0))
        for ply, cell in enumerate(cells):
            self.apply(self.room.play(players[ply % 2], cell, 1.0 + ply))


def deliver(view: RemoteRooms, messages: list[tuple[str, bytes]], origin: str | None = "A") -> None:
    for topic, payload in messages:
        view.receive(topic, payload, False, origin)


def online(view: RemoteRooms, payload: dict[str, Any] = NODE_A, now: float = 0.0, **kw: Any) -> None:
    """A live ``nodes/A`` message (a heartbeat, or with status offline a goodbye or a will)."""
    view.receive("ttt/v1/nodes/A", encode(payload), kw.pop("retained", False), "A", now=now, **kw)


def expected_snapshot(room: Room) -> dict[str, Any]:
    snap = room.snapshot(100.0).model_dump(mode="json")
    del snap["disconnected"], snap["rematch"]
    return snap


@pytest.mark.parametrize(
    ("variant", "cells"),
    [
        ("classic", [4, 0, 8, 2, 1, 7, 6, 3, 5]),
        ("classic", [0, 3, 1, 4, 2]),
        ("tactic-toe", [0, 4, 8, 2, 6, 3, 5]),
    ],
)
def test_snapshot_of_a_remote_room_equals_the_hosts_own(variant: str, cells: list[int]) -> None:
    host, view = Host(variant), RemoteRooms("B")
    online(view)
    host.play_game(cells)
    deliver(view, host.messages)
    snap = view.snapshot("ra1")
    assert snap == expected_snapshot(host.room)
    assert m.RoomSnapshot.model_validate(snap) == m.RoomSnapshot.model_validate(expected_snapshot(host.room))


def test_game_in_progress_snapshot_and_watchers_get_each_later_event_once() -> None:
    host, view = Host(), RemoteRooms("B")
    online(view)
    host.play_game([4, 0])
    deliver(view, host.messages)
    assert view.snapshot("ra1") == expected_snapshot(host.room)
    got: list[str] = []
    unwatch = view.watch("ra1", got.append)
    before = len(host.messages)
    host.apply(host.room.play("p1", 8, 5.0))
    fresh = host.messages[before:]
    deliver(view, fresh)
    deliver(view, fresh)  # QoS 1 repeats are dropped by seq
    assert [json.loads(frame)["type"] for frame in got] == ["moved"]
    assert m.parse_server(got[0]) == m.parse_server(fresh[0][1])
    unwatch()
    host.apply(host.room.play("p2", 2, 6.0))
    deliver(view, host.messages)
    assert len(got) == 1, "no events after unwatch"
    unwatch = view.watch("ra1", got.append)
    view.receive("ttt/v1/lobby/rooms/ra1", b"", False, "A")  # closed while watched
    assert view.node_of("ra1") == "A", "kept while someone watches"
    unwatch()
    assert view.node_of("ra1") is None, "forgotten after the last spectator left"


def test_lobby_lists_rooms_of_online_nodes_only_and_tells_listeners() -> None:
    host, view = Host(), RemoteRooms("B")
    told: list[tuple[str, Any]] = []
    view.on_lobby(lambda room, summary: told.append((room, summary and summary["status"])))
    host.apply(host.room.sit("p1", "ann", Mark.X, 0.0))
    deliver(view, host.messages)
    assert view.summaries() == [] and view.owner_url("ra1") is None, "node A not heard of yet"
    online(view)
    assert [s["id"] for s in view.summaries()] == ["ra1"]
    assert view.owner_url("ra1") == "ws://127.0.0.1:9001"
    online(view, {**NODE_A, "status": "offline"})  # A's goodbye (a clean exit)
    assert view.summaries() == [] and view.snapshot("ra1") is None
    online(view)
    assert told == [("ra1", "waiting"), ("ra1", None), ("ra1", "waiting")]
    view.receive("ttt/v1/lobby/rooms/ra1", b"", False, "A")  # the room closed
    assert view.summaries() == [] and told[-1] == ("ra1", None)


def test_server_hooks_hear_nodes_and_every_remote_event() -> None:
    host, view = Host(), RemoteRooms("B")
    nodes: list[tuple[str, str | None]] = []
    events: list[tuple[str, int]] = []
    view.on_node(lambda node, url: nodes.append((node, url)))
    view.on_event(lambda room, event: events.append((room, event["seq"])))
    online(view)
    online(view)  # the same again: nothing new
    online(view, {**NODE_A, "url": "ws://elsewhere:1"})
    online(view, {**NODE_A, "status": "offline"})
    assert nodes == [("A", NODE_A["url"]), ("A", "ws://elsewhere:1"), ("A", None)]
    host.play_game([4])
    deliver(view, host.messages)
    deliver(view, host.messages)
    assert events == [("ra1", seq) for seq in range(1, host.room.seq + 1)]
    assert view.node_of("ra1") == "A"


def test_rooms_that_closed_while_disconnected_go_after_a_resync() -> None:
    view = RemoteRooms("B")
    told: list[tuple[str, Any]] = []
    view.on_lobby(lambda room, summary: told.append((room, summary and summary["status"])))
    view.link_up(0.0)
    online(view)
    hosts = [Host(room_id=rid) for rid in ("ra1", "ra2")]
    for host in hosts:
        host.apply(host.room.sit("p1", "ann", Mark.X, 0.0))
        deliver(view, host.messages)
    view.link_down()
    view.link_up(10.0)
    view.resync_started()  # the broker restarted empty: nothing retained comes
    assert view.tick(30.0) == [] and len(view.summaries()) == 2, "A not heard again: nothing to judge"
    online(view, now=31.0)  # A is back and republishes its retained state: ra2 closed meanwhile
    view.receive("ttt/v1/lobby/rooms/ra1", hosts[0].messages[-1][1], False, "A", now=31.0)
    view.tick(32.9)
    assert len(view.summaries()) == 2, "its summaries have resync_delay to arrive"
    view.tick(33.0)
    assert [s["id"] for s in view.summaries()] == ["ra1"]
    assert told[-1] == ("ra2", None)


def test_own_messages_and_garbage_are_ignored() -> None:
    host, view = Host(), RemoteRooms("A")
    online(view)
    host.play_game([4, 0])
    deliver(view, host.messages, origin="A")
    assert view.summaries() == [] and view.nodes == {}
    view.receive("ttt/v1/nodes/C", b"not json", True, "C")
    view.receive("ttt/v1/rooms/x/events", b'{"no":"seq"}', False, "C")
    view.receive("elsewhere/nodes/C", encode(NODE_A), True, "C")
    assert view.nodes == {} and view.snapshot("x") is None


def test_origin_falls_back_to_the_summary_node_field() -> None:
    host, view = Host(), RemoteRooms("B")
    online(view)
    host.apply(host.room.sit("p1", "ann", Mark.X, 0.0))
    deliver(view, host.messages, origin=None)  # e.g. an MQTT 3.1.1 publisher
    assert view.owner_url("ra1") == NODE_A["url"]


def test_a_game_seen_from_the_middle_has_no_game_in_the_snapshot() -> None:
    host, view = Host(), RemoteRooms("B")
    online(view)
    host.play_game([4, 0])
    start = next(i for i, (t, p) in enumerate(host.messages) if b'"game_started"' in p)
    deliver(view, host.messages[start + 1 :])
    snap = view.snapshot("ra1")
    assert snap is not None and snap["game"] is None and snap["seq"] == host.room.seq


def test_a_game_from_an_opening_is_not_guessed() -> None:
    host, view = Host(opening=(4,)), RemoteRooms("B")
    online(view)
    host.play_game([0], players=("p2", "p1"))  # X's 4 was the opening: O moves first
    deliver(view, host.messages)
    snap = view.snapshot("ra1")
    assert snap is not None and snap["game"] is None


# -- two feeds on a real broker ---------------------------------------------------------------


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with running_broker(tmp_path) as b:
        yield b


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def publish(bus: EventBus, host: Host, start: int) -> int:
    for topic, payload in host.messages[start:]:
        parsed = parse_topic(topic)
        assert parsed is not None
        bus.publish(FeedEvent(parsed[0], parsed[1], json.loads(payload) if payload else None))
    return len(host.messages)


async def test_two_nodes_share_lobby_and_game_through_the_broker(broker: Broker) -> None:
    bus_a, bus_b = EventBus(), EventBus()
    a = Feed(bus_a, broker.url, "A", remote=RemoteRooms("A"), backoff=Backoff(0.05, 0.3))
    b = Feed(bus_b, broker.url, "B", remote=RemoteRooms("B"), backoff=Backoff(0.05, 0.3))
    assert a.remote is not None and b.remote is not None
    view = b.remote
    told: list[tuple[str, Any]] = []
    view.on_lobby(lambda room, summary: told.append((room, summary and summary["status"])))
    a.start()
    b.start()
    try:
        bus_a.publish(FeedEvent("node", "A", NODE_A))
        bus_b.publish(FeedEvent("node", "B", {"node": "B", "url": "ws://127.0.0.1:9002", "status": "online"}))
        host = Host()
        host.apply(host.room.sit("p1", "ann", Mark.X, 0.0))
        sent = publish(bus_a, host, 0)
        await until(lambda: view.owner_url("ra1") == NODE_A["url"])
        await until(lambda: a.remote is not None and "B" in a.remote.nodes)
        assert a.remote.summaries() == [], "B hosts no room; A does not list its own"
        # the lobby and the room's events are topics of their own, not ordered between them:
        # the first seat's event may come after the summary; watch once it has come
        await until(lambda: (view.snapshot("ra1") or {}).get("seq") == host.room.seq)

        frames: list[str] = []
        view.watch("ra1", frames.append)
        host.apply(host.room.sit("p2", "bob", Mark.O, 0.0))
        for ply, cell in enumerate([4, 1, 0, 2, 8]):  # X wins on the diagonal
            host.apply(host.room.play(["p1", "p2"][ply % 2], cell, 1.0 + ply))
            sent = publish(bus_a, host, sent)
            if ply == 2:
                await until(lambda: (view.snapshot("ra1") or {}).get("seq") == host.room.seq)
                assert view.snapshot("ra1") == expected_snapshot(host.room), "mid-game"
        await until(lambda: bool(frames) and json.loads(frames[-1])["type"] == "game_over")
        types = [json.loads(f)["type"] for f in frames]
        assert types == ["seats", "game_started", *["moved"] * 5, "game_over"]
        assert [json.loads(f)["seq"] for f in frames] == list(range(2, host.room.seq + 1))
        await until(lambda: (view.snapshot("ra1") or {}).get("room", {}).get("status") == "finished")
        assert view.snapshot("ra1") == expected_snapshot(host.room)

        await a.close()  # A goes offline: its rooms leave B's lobby
        await until(lambda: view.summaries() == [])
        assert told[0] == ("ra1", "waiting") and told[-1] == ("ra1", None)
        assert view.nodes["A"]["status"] == "offline"
    finally:
        await a.close()
        await b.close()


# -- presence: heartbeats, wills and goodbyes (sans-I/O, times passed in) -----------------------

OFFLINE_A = {**NODE_A, "status": "offline"}


def listed_view() -> tuple[RemoteRooms, list[tuple[str, Any]]]:
    """B's view with A online at t=0 hosting ra1 (heartbeat 5 s, timeout 20 s, rejoin 20 s)."""
    host, view = Host(), RemoteRooms("B")
    told: list[tuple[str, Any]] = []
    view.on_lobby(lambda room, summary: told.append((room, summary and summary["status"])))
    view.link_up(0.0)
    online(view, now=0.0)
    host.apply(host.room.sit("p1", "ann", Mark.X, 0.0))
    deliver(view, host.messages)
    assert [s["id"] for s in view.summaries()] == ["ra1"]
    return view, told


def test_a_node_goes_when_its_heartbeats_stop_not_before() -> None:
    view, told = listed_view()
    for t in (5.0, 10.0, 15.0):
        online(view, now=t)  # heartbeats
        assert view.tick(t + 19.0) == []
    assert view.summaries() != [], "heard 19 s ago: still there"
    assert view.tick(35.1) == ["A"]
    assert view.summaries() == [] and told[-1] == ("ra1", None)
    online(view, now=40.0)  # it comes back: its rooms with it
    assert [s["id"] for s in view.summaries()] == ["ra1"]


def test_a_will_is_only_a_hint() -> None:
    view, _ = listed_view()
    online(view, now=4.0)
    online(view, OFFLINE_A, now=4.5, will=True)  # e.g. its connection to the broker broke
    assert [s["id"] for s in view.summaries()] == ["ra1"], "a will alone removes nothing"
    online(view, now=5.0)  # it reconnected and beat again: the will is forgotten
    assert view.tick(24.0) == []
    online(view, now=20.0)
    online(view, OFFLINE_A, now=22.0, will=True)  # now it really died (last beat at 20.0)
    assert view.tick(29.9) == [], "two heartbeats of silence first"
    assert view.tick(30.1) == ["A"]
    online(view, now=40.0)
    online(view, OFFLINE_A, now=46.0, will=True)  # a will well after its last beat (at 40)
    assert view.tick(50.9) == [], "one heartbeat of silence after the will first"
    assert view.tick(51.1) == ["A"]
    assert view.presence.wills == 3 and view.presence.expired == 2


def test_a_node_whose_lease_is_live_is_not_removed_for_a_will_or_silence() -> None:
    """The broker stops and sends A's will, and B notices its own link dropped only later
    (a busy process): A's live lease in the database keeps it listed; a node that really
    died goes once its lease has run out too."""
    view, told = listed_view()
    online(view, now=4.0)
    view.presence.leased({"A": 12.0})  # from B's last beat: A's lease runs to 12.0
    online(view, OFFLINE_A, now=4.5, will=True)
    assert view.tick(11.9) == [], "the will and the silence are past a heartbeat: the lease holds"
    view.presence.leased({"A": 13.0})
    assert view.tick(12.5) == []
    view.presence.leased({})  # A's lease ran out (no renewal): it is dead
    assert view.tick(13.9) == [], "two heartbeats since its last (at 4.0) are not over yet"
    assert view.tick(14.1) == ["A"] and ("ra1", None) in told
    online(view, now=20.0)  # back, with a new lease; its heartbeats rule again
    view.presence.leased({"A": 25.0})
    assert view.tick(39.9) == [] and view.tick(40.1) == ["A"], "a lease does not outlive itself"


def test_a_goodbye_removes_the_node_at_once_a_retained_offline_does_not() -> None:
    view, _ = listed_view()
    online(view, OFFLINE_A, now=1.0, retained=True)  # old news, e.g. on resubscribing
    online(view, OFFLINE_A, now=1.0, retained=True, will=True)
    assert view.summaries() != []
    online(view, OFFLINE_A, now=2.0)  # its own goodbye: a clean exit
    assert view.summaries() == [] and view.presence.goodbyes == 1


def test_silence_while_this_node_is_cut_off_counts_for_nothing() -> None:
    """The broker stops: it sends every node's will, then every connection drops. Nothing is
    removed while nobody can be heard; after reconnecting the others have `rejoin` to be heard."""
    view, told = listed_view()
    online(view, OFFLINE_A, now=3.0, will=True)  # the broker stopping sends A's will...
    view.link_down()  # ...and drops B too
    assert view.tick(60.0) == [] and view.summaries() != []
    view.link_up(60.0)  # the broker is back; A reconnects later, with its own backoff
    assert view.tick(79.0) == [], "the will heard before the outage does not count"
    online(view, OFFLINE_A, now=61.0, retained=True, will=True)  # the broker kept the will
    assert view.tick(79.9) == []
    online(view, now=72.0)  # A is back
    assert view.tick(91.0) == [] and [s["id"] for s in view.summaries()] == ["ra1"]
    assert ("ra1", None) not in told, "A's rooms never left the lobby"


def test_a_retained_online_lists_a_node_until_a_timeout_without_a_live_beat() -> None:
    host, view = Host(), RemoteRooms("B")
    view.link_up(0.0)
    online(view, now=0.0, retained=True)  # e.g. a node that died while the broker was away
    host.apply(host.room.sit("p1", "ann", Mark.X, 0.0))
    deliver(view, host.messages)
    assert view.summaries() != []
    online(view, now=10.0, retained=True)  # retained again (a resubscription): no beat
    assert view.tick(20.1) == ["A"] and view.summaries() == []
