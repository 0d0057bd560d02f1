"""The wire models: strictness, unions, round trips, the session's refs and seqs."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from protocol import messages as m
from protocol.session import ClientSession, Event, MoveRefused, RateLimited, Reply, error_for


def test_strict_types_refuse_strings_for_ints() -> None:
    assert m.parse_client('{"type":"move","room":"r1","cell":3}') == m.Move(room="r1", cell=3)
    with pytest.raises(ValidationError):
        m.parse_client('{"type":"move","room":"r1","cell":"3"}')
    with pytest.raises(ValidationError):
        m.parse_client('{"type":"move","room":"r1","cell":true}')


@pytest.mark.parametrize(
    "frame",
    [
        "{}",
        '{"type":"nope"}',
        '{"type":"move","room":"r1","cell":3,"extra":1}',
        '{"type":"move","room":"r1"}',
        '{"type":"move","room":"r1","cell":-1}',
        '{"type":"hello","name":""}',
        '{"type":"hello","name":"a\\u001bb"}',
        '{"type":"hello","name":"' + "n" * 25 + '"}',
        '{"type":"hello","name":"ok","kind":"robot"}',
        '{"type":"create_room","time_control":{"kind":"per_move"}}',
        '{"type":"arrange_game","x":"a"}',
        '{"type":"arrange_game","x":"a","o":"","variant":"classic"}',
        '{"type":"arrange_game","x":"a","o":"b","rated":"no"}',
        '{"type":"arrange_game","x":"a","o":"b","opening":[225]}',
        "[1,2]",
        "not json",
    ],
)
def test_bad_frames_are_refused(frame: str) -> None:
    with pytest.raises(ValidationError):
        m.parse_client(frame)


def test_every_message_round_trips_through_json() -> None:
    snap = m.RoomSnapshot(
        room=m.RoomSummary(
            id="r1",
            variant="classic",
            time_control=m.PerMove(move_ms=1000),
            rated=True,
            private=False,
            ply_cap=None,
            seats=m.Seats(x="a"),
            status="waiting",
            spectators=0,
            games=0,
        ),
        seq=3,
        games=[],
    )
    for msg in [
        m.Joined(room="r1", role="x", snapshot=snap, ref="7"),
        m.Error(code="rate_limited", message="slow down", retry_after=0.5),
        m.GameArranged(room="r1", x="a", o="b", ref="g1"),
        m.ChallengeDeclined(challenge="c1", by="b", reason="offline", room="r1", cause="gone"),
        m.ChallengeCancelled(challenge="c1", reason="called off"),
        m.Moved(
            room="r1", seq=4, game="g1", ply=1, cell=4, mark="x", clocks=m.Clocks(x_ms=1, o_ms=2, running="o")
        ),
    ]:
        assert m.parse_server(m.encode(msg)) == msg
    for cmsg in [
        m.CreateRoom(time_control=m.Increment(base_ms=60_000, increment_ms=1000)),
        m.Hello(name="al ice"),
        m.ArrangeGame(x="a", o="b", time_control=m.PerMove(move_ms=500), opening=[4, 0]),
    ]:
        assert m.parse_client(m.encode(cmsg)) == cmsg


def test_schema_names_every_message_type() -> None:
    text = json.dumps(m.json_schema())
    for name in ["hello", "move", "welcome", "moved", "game_over", "redirect", "challenge_received"]:
        assert f'"{name}"' in text


def test_session_matches_replies_by_ref_and_drops_repeated_events() -> None:
    session = ClientSession()
    ref, frame = session.request(m.Ping())
    assert json.loads(frame) == {"type": "ping", "ref": ref}
    assert session.receive(m.encode(m.Pong(ref=ref))) == Reply(ref, m.Pong(ref=ref))
    # a second pong with the same ref is no longer a reply
    assert isinstance(session.receive(m.encode(m.Pong(ref=ref))), Event)
    ev = m.RematchOffered(room="r1", seq=5, by="a", mark="x")
    assert isinstance(session.receive(m.encode(ev)), Event)
    assert session.last_seq == {"r1": 5}
    assert session.receive(m.encode(ev)) is None  # seen already
    assert session.resume_message() == m.Resume(rooms={"r1": 5})


def test_error_replies_become_exceptions_with_the_code() -> None:
    err = error_for(m.Error(code="rate_limited", message="x", retry_after=1.5))
    assert isinstance(err, RateLimited) and err.retry_after == 1.5 and err.code == "rate_limited"
    assert isinstance(error_for(m.Error(code="cell_occupied", message="x")), MoveRefused)
    assert "bad_json" in m.ERROR_CODES
