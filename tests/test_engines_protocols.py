"""The two engine protocols as lines in and lines out (`bots.engines.gomocup`, `bots.engines.ttt`)."""

from __future__ import annotations

import pytest

from bots.engines import gomocup, ttt
from bots.engines.errors import EngineIllegal, EngineRefused
from protocol.rules import State, find_variant

# --- gomocup --------------------------------------------------------------------------------


def test_gomocup_plays_freestyle_five_and_refuses_the_rest() -> None:
    assert gomocup.refusal(find_variant("15x15k5")) is None
    assert gomocup.refusal(find_variant("7x9k5")) is None
    tactic = gomocup.refusal(find_variant("tactic-toe"))
    assert tactic is not None and "tactic-toe" in tactic and "ttt" in tactic
    four = gomocup.refusal(find_variant("4x4k4"))
    assert four is not None and "five" in four
    assert gomocup.refusal(find_variant("classic")) is not None


def test_gomocup_starts_square_and_rectangular_boards() -> None:
    assert gomocup.opening(find_variant("15x15k5")) == ["ABOUT", "START 15"]
    # width (columns) first, then height (rows)
    assert gomocup.opening(find_variant("7x9k5")) == ["ABOUT", "RECTSTART 9,7"]
    assert gomocup.setup(find_variant("7x9k5")) != gomocup.setup(find_variant("9x7k5"))
    assert "INFO rule 0" in gomocup.after_opening(find_variant("15x15k5"))


def test_gomocup_start_answers() -> None:
    v = find_variant("15x15k5")
    assert gomocup.opened("OK", v) and gomocup.opened("ok - everything is good", v)
    assert not gomocup.opened('name="x", version="1"', v)
    assert not gomocup.opened("MESSAGE hello", v)
    with pytest.raises(EngineRefused, match="unsupported size"):
        gomocup.opened("ERROR unsupported size", v)


def test_gomocup_asks_begin_on_an_empty_board_and_board_otherwise() -> None:
    empty = State.start("15x15k5")
    assert gomocup.request(empty, 900, 1)[-1] == "BEGIN"
    assert "INFO timeout_turn 900" in gomocup.request(empty, 900, 1)
    # 7 rows, 9 columns: cell 10 is row 1, column 1; cell 17 is row 1, column 8
    state = State.replay("7x9k5", [10, 17, 0])
    lines = gomocup.request(state, 500, 1)
    board = lines[lines.index("BOARD") + 1 : lines.index("DONE")]
    # O to move: O's stone is its own (1), X's are the opponent's (2); in the order played
    assert board == ["1,1,2", "8,1,1", "0,0,2"]
    assert lines[-1] == "DONE" and f"INFO time_left {gomocup.UNLIMITED}" in lines


def test_gomocup_moves_are_column_then_row() -> None:
    state = State.replay("7x9k5", [10])
    assert gomocup.answer("8,1", state) == 17
    assert gomocup.answer(" 3 , 6 ", state) == 6 * 9 + 3
    assert gomocup.answer("SUGGEST 0,0", state) == 0


@pytest.mark.parametrize("line", ["MESSAGE thinking", "DEBUG depth 4", "UNKNOWN command", 'name="pbrain"'])
def test_gomocup_chatter_is_not_a_move(line: str) -> None:
    assert gomocup.answer(line, State.start("15x15k5")) is None


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("1,1", "taken"),
        ("9,0", "off the 9x7 board"),
        ("0,7", "off the 9x7 board"),
        ("hello there", "not a move"),
        ("ERROR no idea", "not a move"),
        ("-1,2", "not a move"),
        ("3", "not a move"),
    ],
)
def test_gomocup_illegal_answers(line: str, why: str) -> None:
    with pytest.raises(EngineIllegal, match=why):
        gomocup.answer(line, State.replay("7x9k5", [10]))


# --- ttt --------------------------------------------------------------------------------------


def test_ttt_plays_every_variant() -> None:
    for name in ("classic", "tactic-toe", "4x4k4", "15x15k5"):
        assert ttt.refusal(find_variant(name)) is None
    assert ttt.opening(find_variant("classic")) == ["ttt 1"]
    assert ttt.opened("ok", find_variant("classic")) and ttt.opened(
        "ok my engine 1.0", find_variant("classic")
    )
    assert not ttt.opened("# starting", find_variant("classic"))
    with pytest.raises(EngineIllegal, match="not 'ok'"):
        ttt.opened("OK", find_variant("classic"))


def test_ttt_go_line_in_tactic_toe_shows_the_board_after_marks_vanish() -> None:
    # each player keeps 3 marks: X's first (0) leaves as X plays its fourth (1)
    state = State.replay("tactic-toe", [0, 4, 8, 2, 6, 3, 1])
    assert ttt.request(state, 250, 42) == ["go tactic-toe o 250 42 .xooo.x.x 0 4 8 2 6 3 1"]
    # O's oldest mark (4) leaves only as O moves: not a legal answer; the cell X's left is
    with pytest.raises(EngineIllegal, match="not a legal move"):
        ttt.answer("4", state)
    assert ttt.answer("0", state) == 0


def test_ttt_go_line_on_the_empty_board() -> None:
    assert ttt.request(State.start("classic"), 100, 0) == ["go classic x 100 0 ........."]


@pytest.mark.parametrize("line", ["9", "4", "move 4", "four", "-1", "4,0", "²"])
def test_ttt_answers_that_are_not_a_legal_cell(line: str) -> None:
    with pytest.raises(EngineIllegal):
        ttt.answer(line, State.replay("classic", [4]))


def test_ttt_comments_are_not_moves() -> None:
    assert ttt.answer("# thinking", State.start("classic")) is None
    assert ttt.answer("0", State.start("classic")) == 0
