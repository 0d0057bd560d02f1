"""The room and the clock without sockets: time is passed in, so no test sleeps."""

from __future__ import annotations

import pytest

from protocol import messages as m
from protocol.rules import Mark, find_variant
from server.clock import Clock
from server.frames import MovedEvent, encode
from server.ops import GameFinished, MoveSaved
from server.room import Changes, Refused, Room, RoomRules

RULES = RoomRules(grace=30.0, first_move=20.0, replay_events=100)


UNTIMED = m.NoClock()


def room(control: m.NoClock | m.PerMove | m.Increment = UNTIMED, variant: str = "classic") -> Room:
    r = Room("r1", find_variant(variant), control, rules=RULES)
    r.sit("a", "alice", Mark.X, 0.0)
    r.sit("b", "bob", Mark.O, 0.0)
    return r


def test_clock_increment_and_flag() -> None:
    clock = Clock(m.Increment(base_ms=1000, increment_ms=500))
    clock.start(Mark.X, 10.0)
    assert clock.press(Mark.X, 10.4)  # 400 ms used, 500 added
    assert clock.left[Mark.X] == pytest.approx(1100)
    assert clock.flag_time() == pytest.approx(11.4)  # O's 1000 ms from 10.4
    assert clock.flagged(11.3) is None and clock.flagged(11.4) is Mark.O
    assert not clock.press(Mark.O, 11.5)  # too late: refused, nothing charged


def test_per_move_clock_resets() -> None:
    clock = Clock(m.PerMove(move_ms=2000))
    clock.start(Mark.X, 0.0)
    assert clock.press(Mark.X, 1.9)
    assert clock.snapshot(1.9) == m.Clocks(x_ms=2000, o_ms=2000, running="o")


def test_moves_store_before_they_are_announced_in_order() -> None:
    r = room()
    changes = r.play("a", 4, 1.0)
    (event,) = changes.events
    assert isinstance(event, MovedEvent) and event.seq == r.seq and event.cell == 4
    assert any(isinstance(op, MoveSaved) and op.cell == 4 and op.seq == event.seq for op in changes.ops)
    with pytest.raises(Refused) as info:
        r.play("a", 0, 1.1)
    assert info.value.code == "not_your_turn"
    seq = r.seq
    with pytest.raises(Refused) as info:
        r.play("b", 4, 1.2)
    assert info.value.code == "cell_occupied" and r.seq == seq  # nothing changed


def test_abort_flag_and_abandon_happen_in_tick() -> None:
    r = room(m.PerMove(move_ms=5000))
    assert r.next_deadline() == pytest.approx(20.0)  # the first move's deadline
    changes = r.tick(20.0)
    assert [type(e) for e in changes.events] == [m.GameEnded]
    assert changes.events[0].outcome.reason == "aborted"  # type: ignore[union-attr]
    r = room(m.PerMove(move_ms=5000))
    r.play("a", 4, 1.0)
    assert r.next_deadline() == pytest.approx(6.0)
    assert r.tick(5.9).events == []
    ended = r.tick(6.0)
    assert ended.events[0].outcome.reason == "timeout" and ended.events[0].outcome.winner == "x"  # type: ignore[union-attr]
    assert any(isinstance(op, GameFinished) for op in ended.ops)
    r = room()
    r.play("a", 4, 1.0)
    r.drop("b", 2.0)
    assert r.next_deadline() == pytest.approx(32.0)
    r.back("b", "bob")
    assert r.next_deadline() is None and r.tick(40.0).events == []
    r.drop("b", 50.0)
    gone = r.tick(80.0)
    over = [e for e in gone.events if isinstance(e, m.GameEnded)]
    assert over[0].outcome.reason == "abandoned" and r.seats[Mark.O] is None


def test_replay_since_and_snapshot_fallback() -> None:
    r = Room("r1", find_variant("classic"), m.NoClock(), rules=RoomRules(replay_events=3))

    def announce(changes: Changes) -> None:  # as the shell does once the changes are stored
        for event in changes.events:
            r.announced(event.seq, encode(event))

    announce(r.sit("a", "alice", Mark.X, 0.0))
    announce(r.sit("b", "bob", Mark.O, 0.0))  # seats, seats, game_started
    announce(r.play("a", 0, 0.0))
    announce(r.play("b", 1, 0.0))
    assert [n for n, _ in r.replay_since(3) or []] == [4, 5]
    assert r.can_replay(3) and not r.can_replay(1) and r.can_replay(5)
    assert r.replay_since(1) is None  # event 2 is no longer kept
    assert r.replay_since(5) == []
    pending = r.play("a", 4, 0.0)  # decided, not yet stored nor announced
    assert r.replay_since(5) == [], "only announced events are replayed"
    announce(pending)
    assert [m.parse_server(f).seq for _, f in r.replay_since(5) or []] == [6]  # type: ignore[union-attr]


def test_spectators_and_strangers_cannot_play_or_rematch() -> None:
    r = room()
    r.watch("c", "carol")
    for who, code in [("c", "not_seated"), ("z", "not_in_room")]:
        with pytest.raises(Refused) as info:
            r.play(who, 0, 1.0)
        assert info.value.code == code
    with pytest.raises(Refused) as info:
        r.ask_rematch("a", 1.0)
    assert info.value.code == "game_in_progress"
    with pytest.raises(Refused) as info:
        r.sit("c", "carol", None, 1.0)
    assert info.value.code == "room_full"


def test_reserved_seats_are_kept_until_the_game_starts() -> None:
    r = Room("r9", find_variant("classic"), UNTIMED, rules=RULES)
    r.reserve("a", "b")
    r.watch("d", "director")
    for seat in (Mark.X, Mark.O, None):
        with pytest.raises(Refused) as info:
            r.sit("m", "mallory", seat, 0.0)
        assert info.value.code == "seat_taken"
    r.sit("b", "bob", None, 0.0)  # the free seat kept for bob is O
    assert r.seats == [None, "b"] and r.game is None
    changes = r.sit("a", "alice", Mark.X, 1.0)
    assert any(isinstance(e, m.GameStarted) for e in changes.events)
    assert r.reserved == [None, None]  # an ordinary room from now on


def test_an_arranged_room_is_called_off_before_its_game_only() -> None:
    r = Room("r9", find_variant("classic"), UNTIMED, rules=RULES)
    r.reserve("a", "b")
    r.watch("d", "director")
    r.sit("a", "alice", Mark.X, 0.0)
    changes = r.cancel("bob declined")
    (closed,) = changes.events
    assert isinstance(closed, m.RoomClosed) and closed.reason == "bob declined" and closed.seq == r.seq
    assert r.closed and changes.ops[-1].closed
    assert r.members() == {"a", "d"}  # still listed, so the closing reaches them
    assert r.cancel("again").events == []
    with pytest.raises(Refused):
        r.sit("b", "bob", Mark.O, 0.0)
    with pytest.raises(Refused) as info:
        room().cancel("too late")
    assert info.value.code == "game_in_progress"
