"""`read_client`: each kind of bad frame gets its own code, and the ref comes back."""

from __future__ import annotations

import json

import pytest

from protocol import messages as m
from protocol.errors import ErrorCode, ProtocolError
from protocol.frames import read_client, ref_of


def _refused(frame: str | bytes) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        read_client(frame)
    return caught.value


def _move(cell: str, **extra: object) -> str:
    fields = "".join(f', "{k}": {json.dumps(v)}' for k, v in extra.items())
    return f'{{"type": "move", "room": "r1", "cell": {cell}, "ref": "m1"{fields}}}'


def _create(**fields: object) -> str:
    return json.dumps({"type": "create_room", "ref": "c1", **fields})


@pytest.mark.parametrize(
    "frame", ["not json", '{"type": "ping"', "[1,2]", "42", '"ping"', "null", b"\xff\xfe"]
)
def test_not_a_json_object_is_bad_json(frame: str | bytes) -> None:
    err = _refused(frame)
    assert (err.code, err.ref) == (ErrorCode.BAD_JSON, None)


@pytest.mark.parametrize(
    "frame", ['{"ref": "p"}', '{"type": "dance", "ref": "p"}', '{"type": 5, "ref": "p"}']
)
def test_a_type_that_names_no_message_is_unknown_type(frame: str) -> None:
    err = _refused(frame)
    assert (err.code, err.ref) == (ErrorCode.UNKNOWN_TYPE, "p")


@pytest.mark.parametrize("cell", ['"4"', "4.0", "true", "null", "[4]", '{"cell": 4}'])
def test_a_cell_that_is_not_an_int_is_malformed_move(cell: str) -> None:
    err = _refused(_move(cell))
    assert (err.code, err.ref) == (ErrorCode.MALFORMED_MOVE, "m1")
    assert "cell" in err.message


@pytest.mark.parametrize("cell", [-1, 9, 225, 10**9, 10**30])
def test_any_int_cell_reaches_the_room(cell: int) -> None:
    assert read_client(_move(str(cell))) == m.Move(room="r1", cell=cell, ref="m1")


@pytest.mark.parametrize(
    "control",
    [
        {"kind": "per_move", "move_ms": 50},
        {"kind": "per_move"},
        {"kind": "increment", "base_ms": 60_000, "increment_ms": -1},
        {"kind": "increment", "base_ms": 10**12},
        {"kind": "blitz"},
        {"kind": "per_move", "move_ms": "5000"},
        "none",
    ],
)
def test_time_controls_out_of_range_are_bad_time_control(control: object) -> None:
    for frame in (
        _create(time_control=control),
        json.dumps({"type": "challenge", "opponent": "bob", "time_control": control, "ref": "c1"}),
        json.dumps({"type": "arrange_game", "x": "a", "o": "b", "time_control": control, "ref": "c1"}),
    ):
        err = _refused(frame)
        assert (err.code, err.ref) == (ErrorCode.BAD_TIME_CONTROL, "c1"), frame


@pytest.mark.parametrize("cap", [0, -5, 10_001, "3", 2.5, True])
def test_ply_caps_out_of_range_are_bad_ply_cap(cap: object) -> None:
    err = _refused(_create(variant="tactic-toe", ply_cap=cap))
    assert (err.code, err.ref) == (ErrorCode.BAD_PLY_CAP, "c1")


@pytest.mark.parametrize("opening", [[225], [-1], ["4"], 4, [4] * 226])
def test_openings_that_are_not_cells_are_bad_opening(opening: object) -> None:
    assert _refused(_create(opening=opening)).code == ErrorCode.BAD_OPENING


@pytest.mark.parametrize("name", ["", " al", "al ", "a\u001bb", "a\nb", "n" * 25, 7, None])
def test_bad_names_in_hello_are_bad_name(name: object) -> None:
    err = _refused(json.dumps({"type": "hello", "name": name, "ref": "h"}))
    assert (err.code, err.ref) == (ErrorCode.BAD_NAME, "h")


def test_a_hello_without_a_name_is_bad_name() -> None:
    assert _refused('{"type": "hello"}').code == ErrorCode.BAD_NAME


@pytest.mark.parametrize(
    "frame",
    [
        '{"type": "move", "cell": 4, "ref": "x"}',  # no room
        '{"type": "move", "room": "r1", "cell": 4, "extra": 1, "ref": "x"}',
        '{"type": "join", "room": "", "ref": "x"}',
        '{"type": "hello", "name": "al", "kind": "robot", "ref": "x"}',
        '{"type": "create_room", "rated": "no", "ref": "x"}',
        '{"type": "get_leaderboard", "limit": 0, "ref": "x"}',
    ],
)
def test_other_faults_are_bad_message(frame: str) -> None:
    err = _refused(frame)
    assert (err.code, err.ref) == (ErrorCode.BAD_MESSAGE, "x")


def test_the_first_fault_with_a_code_decides() -> None:
    # the missing room comes first but has no code of its own; the cell has one
    assert _refused('{"type": "move", "cell": "4"}').code == ErrorCode.MALFORMED_MOVE
    both = _create(time_control={"kind": "per_move", "move_ms": 50}, ply_cap=0)
    err = _refused(both)
    assert err.code == ErrorCode.BAD_TIME_CONTROL
    assert "move_ms" in err.message and "ply_cap" in err.message


@pytest.mark.parametrize(
    ("frame", "ref"),
    [
        ('{"type": "nope", "ref": "r"}', "r"),
        ('{"type": "nope", "ref": "' + "r" * 64 + '"}', "r" * 64),
        ('{"type": "nope", "ref": "' + "r" * 65 + '"}', None),  # not a valid ref: nothing to echo
        ('{"type": "nope", "ref": 7}', None),
        ('{"type": "nope"}', None),
        ("[1]", None),
    ],
)
def test_the_ref_is_recovered_when_it_is_a_valid_ref(frame: str, ref: str | None) -> None:
    assert _refused(frame).ref == ref == ref_of(frame)


def test_valid_frames_read_as_parse_client_reads_them() -> None:
    for message in [
        m.Hello(name="al ice", token="t", ref="1"),
        m.CreateRoom(variant="tactic-toe", ply_cap=10_000, time_control=m.PerMove(move_ms=100), seat=None),
        m.Move(room="r1", cell=8, ref="2"),
    ]:
        frame = m.encode(message)
        assert read_client(frame) == m.parse_client(frame) == message
        assert read_client(frame.encode()) == message


def test_every_code_is_an_error_code_with_a_meaning() -> None:
    assert all(isinstance(code, ErrorCode) and code.meaning for code in ErrorCode)
    err = _refused("[]")
    assert m.Error(code=err.code, message=err.message, ref=err.ref).code is ErrorCode.BAD_JSON
