"""The wire models: strictness, unions, round trips, the session's refs and seqs."""

from __future__ import annotations

import json
import unicodedata

import pytest
from pydantic import ValidationError

from protocol import messages as m
from protocol import names
from protocol.errors import ErrorCode
from protocol.session import ClientSession, Event, MoveRefused, RateLimited, Reply, error_for


def test_strict_types_refuse_strings_for_ints() -> None:
    assert m.parse_client('{"type":"move","room":"r1","cell":3}') == m.Move(room="r1", cell=3)
    with pytest.raises(ValidationError):
        m.parse_client('{"type":"move","room":"r1","cell":"3"}')
    with pytest.raises(ValidationError):
        m.parse_client('{"type":"move","room":"r1","cell":true}')
    # any int is a well-formed cell: the room, which knows its board, refuses one off it
    assert m.parse_client('{"type":"move","room":"r1","cell":-1}') == m.Move(room="r1", cell=-1)


@pytest.mark.parametrize(
    "frame",
    [
        "{}",
        '{"type":"nope"}',
        '{"type":"move","room":"r1","cell":3,"extra":1}',
        '{"type":"move","room":"r1"}',
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
    err = error_for(m.Error(code=ErrorCode.NOT_YOUR_TURN, message="x"))
    assert isinstance(err, MoveRefused) and err.code == "not_your_turn"


def test_error_codes_are_the_registry() -> None:
    assert m.Error(code="bad_json", message="x").code is ErrorCode.BAD_JSON  # a server may pass the string
    assert m.parse_server('{"type":"error","code":"seat_taken","message":"x"}').code is ErrorCode.SEAT_TAKEN
    with pytest.raises(ValidationError):
        m.parse_server('{"type":"error","code":"no_such_code","message":"x"}')
    schema = m.SERVER_ADAPTER.json_schema()["$defs"]["ErrorCode"]
    assert schema["enum"] == [code.value for code in ErrorCode]


def test_schema_and_server_agree_on_the_name_length() -> None:
    name = m.CLIENT_ADAPTER.json_schema()["$defs"]["Hello"]["properties"]["name"]
    assert (name["minLength"], name["maxLength"]) == (1, 24)
    assert m.check_name("n" * 24) is None and m.check_name("n" * 25) is not None


@pytest.mark.parametrize(
    "name",
    [
        "\u3164",  # Hangul filler: a letter that shows nothing
        "\u2800",  # braille blank
        "a\u200bb",  # zero-width space
        "al\u00adice",  # soft hyphen
        "bob\u200d",  # zero-width joiner
        "x\ufe0f",  # variation selector
        "\u202eecila",  # right-to-left override
        "z\u0301\u0302\u0303a",  # zalgo: three marks on one letter (one composes with NFKC)
        "e\u0301\u0301",  # the same mark twice
        "\u0301abc",  # a name that begins with a mark
        "\u0430lice",  # Cyrillic a in a Latin name: mixed scripts
        "bob\u03bf",  # Greek omicron in a Latin name
        "\u0430\u0441\u0435",  # Cyrillic "ace": every letter looks Latin
        "\u0391\u0392\u0395",  # Greek "ABE"
        "a\u00a0\u00a0b",  # no-break spaces become U+0020 (NFKC): two in a row
        "two  spaces",
        " outer",
    ],
)
def test_invisible_confusable_and_zalgo_names_are_refused(name: str) -> None:
    assert m.check_name(name) is not None
    with pytest.raises(ValidationError) as info:
        m.Hello(name=name)
    assert info.value.errors()[0]["loc"] == ("name",)


@pytest.mark.parametrize(
    "name",
    ["alice", "Nguyễn Văn", "प्रियंका", "山田たろう", "홍길동", "Сева", "Ελένη", "user_1", "O'Brien", "ΑΛΦΑ"],
)
def test_names_in_one_script_with_their_own_marks_are_accepted(name: str) -> None:
    assert m.check_name(name) is None
    assert m.Hello(name=name).name == unicodedata.normalize("NFKC", name)


def test_a_name_is_kept_in_its_nfkc_form_and_keyed_by_its_skeleton() -> None:
    assert m.Hello(name="\uff41\uff4c\uff49\uff43\uff45").name == "alice"  # fullwidth
    assert m.Hello(name="\ufb01sh").name == "fish"  # the fi ligature
    assert names.key("ALICE") == names.key("\uff41lice") == names.key("a1ice") == "alice"
    assert names.key("\u0430lice") == "alice"  # what a store comparing skeletons would catch
    assert m.check_name("n" * 23 + "\ufb01") is not None  # 25 characters once normalised
