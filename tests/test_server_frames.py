"""The hand-built frames of the move path (`server.frames`) are the pydantic models' JSON,
byte for byte: ``moved`` (with its ``clocks``) and ``ok``, over generated values and
over whole games of every featured variant under every kind of clock."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import messages as m
from protocol.rules import FEATURED, Mark, find_variant
from server.clock import Clock
from server.frames import MovedEvent, clocks_json, encode, is_moved, ok
from server.ops import MoveSaved
from server.room import Room, RoomRules

#: Any text pydantic accepts: unicode of every plane, quotes, backslashes, control
#: characters (escaped), U+2028 and the like (not escaped).
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
SPECIAL = st.sampled_from(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", "é", "名前", "🂡", "/", "</"])
NAMES = st.one_of(TEXT, st.lists(SPECIAL, max_size=6).map("".join))
INTS = st.one_of(st.integers(-(2**63), 2**63), st.integers(-5, 300))
MAYBE_INT = st.one_of(st.none(), INTS)
MARK = st.sampled_from([Mark.X, Mark.O])
CONTROLS = st.one_of(
    st.just(m.NoClock()),
    st.builds(m.PerMove, move_ms=st.integers(100, 86_400_000)),
    st.builds(m.Increment, base_ms=st.integers(100, 86_400_000), increment_ms=st.integers(0, 3_600_000)),
)


def model_of(event: MovedEvent, clocks: m.Clocks) -> m.Moved:
    """The pydantic model of the same data, built and validated the ordinary way."""
    nx, no = event.next_to_vanish
    return m.Moved(
        room=event.room,
        seq=event.seq,
        game=event.game,
        ply=event.ply,
        cell=event.cell,
        mark=m.MARK_NAMES[event.mark],
        vanished=event.vanished,
        next_to_vanish={"x": nx, "o": no},
        clocks=clocks,
    )


@settings(max_examples=400)
@given(
    room=NAMES.filter(lambda s: 1 <= len(s) <= 32),
    seq=INTS,
    game=NAMES,
    ply=INTS,
    cell=INTS,
    mark=MARK,
    vanished=MAYBE_INT,
    nx=MAYBE_INT,
    no=MAYBE_INT,
    x_ms=MAYBE_INT,
    o_ms=MAYBE_INT,
    running=st.sampled_from([None, "x", "o"]),
)
def test_moved_frame_is_the_models_json(
    room: str,
    seq: int,
    game: str,
    ply: int,
    cell: int,
    mark: Mark,
    vanished: int | None,
    nx: int | None,
    no: int | None,
    x_ms: int | None,
    o_ms: int | None,
    running: m.MarkName | None,
) -> None:
    clocks = m.Clocks(x_ms=x_ms, o_ms=o_ms, running=running)
    event = MovedEvent(room, seq, game, ply, cell, mark, vanished, (nx, no), m.encode(clocks))
    model = model_of(event, clocks)
    assert event.encode() == m.encode(model)
    assert encode(event) == m.encode(model)
    assert event.model() == model
    assert event.model_dump(mode="json") == model.model_dump(mode="json")
    assert is_moved(event) and is_moved(model) and not is_moved(clocks)


@settings(max_examples=300)
@given(ref=st.one_of(st.none(), NAMES.filter(lambda s: len(s) <= 64)), seq=MAYBE_INT)
def test_ok_frame_is_the_models_json(ref: str | None, seq: int | None) -> None:
    assert ok(ref, seq) == m.encode(m.Ok(ref=ref, seq=seq))


@settings(max_examples=300)
@given(
    control=CONTROLS,
    presses=st.lists(st.floats(0.0, 100.0), max_size=8),
    first=MARK,
    later=st.floats(0.0, 200.0),
)
def test_clocks_json_is_the_snapshots_json(
    control: m.NoClock | m.PerMove | m.Increment, presses: list[float], first: Mark, later: float
) -> None:
    """Untimed, per move and Fischer; before the first move, running and stopped; time
    run out (clamped at 0)."""
    clock = Clock(control)
    now, mark = 0.0, first
    for step in presses:
        now += step
        if clock.running is None:
            clock.start(mark, now)
        elif not clock.press(mark, now):
            break
        mark = mark.other
    for at in (now, now + later):
        snapshot = clock.snapshot(at)
        assert clocks_json(clock, at) == (m.encode(snapshot), snapshot.x_ms, snapshot.o_ms)
    clock.stop()
    snapshot = clock.snapshot(now + later)
    assert clocks_json(clock, now + later) == (m.encode(snapshot), snapshot.x_ms, snapshot.o_ms)


def test_every_move_of_real_games_in_every_variant_under_every_clock() -> None:
    """Rooms play random games to their end (tactic-toe's marks vanish, so ``vanished``
    and ``next_to_vanish`` take values); each `moved` frame equals the model built from
    the room's own state, and the store gets the same clocks the frame shows."""
    rng = random.Random(14)
    controls: list[m.NoClock | m.PerMove | m.Increment] = [
        m.NoClock(),
        m.PerMove(move_ms=60_000),
        m.Increment(base_ms=300_000, increment_ms=2_000),
    ]
    names = ("ünïcødé 名前", 'quo"te\\', "bob")
    checked = vanished = 0
    for variant in FEATURED:
        for control in controls:
            room = Room("r-" + variant, find_variant(variant), control, rules=RoomRules(first_move=600))
            room.sit("a", names[0], Mark.X, 0.0)
            room.sit("b", rng.choice(names[1:]), Mark.O, 0.0)
            now = 0.0
            for _game in range(2):
                game = room.game
                assert game is not None
                while not game.state.is_over:
                    now += rng.random() * 3
                    mover = game.state.to_move
                    changes = room.play(game.player(mover), rng.choice(game.state.legal_moves()), now)
                    event = changes.events[0]
                    assert isinstance(event, MovedEvent)
                    clocks = game.clock.snapshot(now)
                    if game.state.is_over and game.clock.timed:  # stopped after the move was made
                        clocks = clocks.model_copy(update={"running": m.MARK_NAMES[mover.other]})
                    model = model_of(event, clocks)
                    assert model.next_to_vanish == {
                        "x": game.state.next_to_vanish(Mark.X),
                        "o": game.state.next_to_vanish(Mark.O),
                    }
                    assert encode(event) == m.encode(model)
                    assert event.model() == model
                    (saved,) = [op for op in changes.ops if isinstance(op, MoveSaved)]
                    assert (saved.x_ms, saved.o_ms, saved.seq) == (clocks.x_ms, clocks.o_ms, event.seq)
                    checked += 1
                    vanished += event.vanished is not None
                room.ask_rematch("a", now)
                room.ask_rematch("b", now)
    assert checked > 200 and vanished > 0
