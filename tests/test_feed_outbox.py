"""The outbox, sans-I/O: bounded events, coalesced retained state, reconnect order."""

from __future__ import annotations

from protocol.topics import Publication
from server.feed.outbox import Outbox


def event(n: int, room: str = "r1") -> Publication:
    return Publication(f"ttt/v1/rooms/{room}/events", b'{"seq":%d}' % n, 1, False)


def state(topic: str, value: bytes) -> Publication:
    return Publication(topic, value, 1, True)


def send_all(box: Outbox) -> list[Publication]:
    sent = box.take(10_000)
    for pub in sent:
        box.ack(pub)
    return sent


def test_events_go_out_in_order_and_are_acked() -> None:
    box = Outbox()
    box.on_connected()
    for n in range(5):
        box.offer(event(n))
    assert box.queued_events == 5
    assert send_all(box) == [event(n) for n in range(5)]
    assert (box.queued_events, box.published, len(box)) == (0, 5, 0)


def test_full_queue_drops_the_oldest_events_and_counts_them() -> None:
    box = Outbox(max_events=3)
    box.offer(state("ttt/v1/nodes/a", b"{}"))
    for n in range(7):
        box.offer(event(n))
    assert (box.queued_events, box.overflow) == (3, 4)
    box.on_connected()
    sent = send_all(box)
    assert sent == [state("ttt/v1/nodes/a", b"{}"), event(4), event(5), event(6)]


def test_retained_updates_coalesce_to_the_latest_value() -> None:
    box = Outbox()
    for n in range(50):
        box.offer(state("ttt/v1/lobby/rooms/r1", b"%d" % n))
    assert len(box) == 1
    box.on_connected()
    assert send_all(box) == [state("ttt/v1/lobby/rooms/r1", b"49")]


def test_reconnect_republishes_all_retained_state_before_waiting_events() -> None:
    box = Outbox()
    box.on_connected()
    box.offer(state("ttt/v1/nodes/a", b"on"))
    box.offer(event(1))
    box.offer(state("ttt/v1/players/p/rating", b"1500"))
    send_all(box)
    box.on_disconnected()
    box.offer(event(2))
    box.offer(state("ttt/v1/players/p/rating", b"1516"))
    box.on_connected()
    assert send_all(box) == [
        state("ttt/v1/nodes/a", b"on"),
        state("ttt/v1/players/p/rating", b"1516"),
        event(2),
    ]


def test_a_clear_is_kept_until_confirmed_then_forgotten() -> None:
    box = Outbox()
    box.offer(state("ttt/v1/lobby/rooms/r1", b"{}"))
    box.offer(state("ttt/v1/lobby/rooms/r1", b""))
    assert "ttt/v1/lobby/rooms/r1" in box.retained
    box.on_connected()
    (pub,) = box.take(10)
    box.nack(pub)  # the connection broke: the clear is still owed
    box.on_disconnected()
    box.on_connected()
    assert send_all(box) == [state("ttt/v1/lobby/rooms/r1", b"")]
    assert box.retained == {}
    box.on_disconnected()
    box.on_connected()
    assert send_all(box) == []


def test_nacked_events_go_back_to_the_front_in_order() -> None:
    box = Outbox()
    box.on_connected()
    for n in range(4):
        box.offer(event(n))
    batch = box.take(3)
    box.offer(event(4))
    box.ack(batch[0])
    for pub in reversed(batch[1:]):
        box.nack(pub)
    assert send_all(box) == [event(1), event(2), event(3), event(4)]


def test_a_newer_value_during_flight_is_sent_after() -> None:
    box = Outbox()
    box.on_connected()
    box.offer(state("ttt/v1/lobby/rooms/r1", b""))
    (pub,) = box.take(10)
    box.offer(state("ttt/v1/lobby/rooms/r1", b"reopened"))
    box.ack(pub)
    assert box.retained["ttt/v1/lobby/rooms/r1"].payload == b"reopened"
    assert send_all(box) == [state("ttt/v1/lobby/rooms/r1", b"reopened")]


def test_only_the_latest_game_results_are_remembered() -> None:
    box = Outbox(max_results=2)
    for g in range(4):
        box.offer(state(f"ttt/v1/games/g{g}/result", b"{}"))
    box.offer(state("ttt/v1/nodes/a", b"{}"))
    assert sorted(box.retained) == ["ttt/v1/games/g2/result", "ttt/v1/games/g3/result", "ttt/v1/nodes/a"]
    box.on_connected()
    assert [p.topic for p in send_all(box)] == sorted(box.retained)
