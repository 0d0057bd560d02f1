"""`grade_moves` and the `ttt solve` / `ttt analyse` commands."""

from __future__ import annotations

import json

import pytest

from bots.analyse import BadMoveList, grade_moves
from protocol.cli import main


def test_a_known_blunder_and_a_known_optimal_line() -> None:
    grades = grade_moves("classic", [4, 1])  # an edge reply to the centre loses
    assert [g.grade for g in grades] == ["optimal", "blunder"]
    assert grades[1].best == (0, 2, 6, 8)
    line = grade_moves("classic", [4, 0, 2, 6, 3, 5, 8, 1, 7])  # drawn all the way
    assert {g.grade for g in line} == {"optimal"}
    assert [g.value_after for g in line] == [0] * 9


def test_a_slower_win_is_an_inaccuracy() -> None:
    grades = grade_moves("tactic-toe", [1])  # an edge opening wins for X
    assert grades[0].value_after == 1 and grades[0].grade == "optimal"
    assert grade_moves("tactic-toe", [4])[0].grade == "blunder"
    fast, slow = grade_moves("tactic-toe", [1, 0, 4])[2], grade_moves("tactic-toe", [1, 0, 7])[2]
    assert (fast.grade, slow.grade) == ("optimal", "inaccuracy")
    assert slow.value_after == 1 and 7 not in slow.best


def test_illegal_move_lists_name_the_ply() -> None:
    with pytest.raises(BadMoveList, match="ply 3"):
        grade_moves("classic", [4, 0, 4])


def test_solve_and_analyse_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "tactic-toe", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["states"] == 128_170 and report["start_value"] == 1
    assert {m for m, r in report["first_moves"].items() if r["value"] == 1} == {"1", "3", "5", "7"}
    assert main(["analyse", "classic", "--moves", "4,1", "--json"]) == 0
    assert [g["grade"] for g in json.loads(capsys.readouterr().out)] == ["optimal", "blunder"]
    assert main(["analyse", "classic", "--moves", "4,x"]) == 2
    assert "bad_move_list" in capsys.readouterr().err
    assert main(["solve", "15x15k5"]) == 2
    assert "unsolvable_variant" in capsys.readouterr().err
