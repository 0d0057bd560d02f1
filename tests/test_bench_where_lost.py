"""bench/where_lost.py: the O move that let X's win by threats in, and the moves that would not have."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import where_lost

from protocol.rules import State

#: X builds an open three on the centre row (112, 113, 114) while O plays on row 1; O's
#: third stone (ply 5, cell 20) ignores it, X makes an open four and wins.
GAME = [112, 16, 113, 18, 114, 20, 115, 111, 116]


def test_an_open_three_with_the_move_is_a_win_and_a_blocked_one_is_not() -> None:
    three = State.replay("15x15k5", GAME[:6])
    assert where_lost.x_wins(three, 2, 50_000) is True
    assert where_lost.x_wins(State.replay("15x15k5", GAME[:4]), 2, 50_000) is False
    assert where_lost.safe_after(State.replay("15x15k5", GAME[:5]), 111, 2, 50_000) is True
    assert where_lost.safe_after(State.replay("15x15k5", GAME[:5]), 20, 2, 50_000) is False


def test_the_move_that_let_the_win_in_and_the_safe_ones_are_found() -> None:
    assert State.replay("15x15k5", GAME).outcome is not None
    loss = where_lost.where_lost(GAME, 4, 2, 50_000)
    assert loss.ply == 5 and loss.played == 20 and not loss.from_opening
    assert {111, 115} <= set(loss.safe) and loss.unknown == []
    assert 20 not in loss.safe and 142 not in loss.safe and loss.cells > len(loss.safe)
    assert loss.played_nodes > 0 and len(loss.safe_nodes) == len(loss.safe)


def test_a_win_by_threats_from_the_opening_is_told_apart() -> None:
    # X has the open three and the move at the end of the "opening" (six stones here)
    loss = where_lost.where_lost(GAME, 6, 2, 50_000)
    assert loss.ply is None and loss.from_opening


def test_after_an_opening_of_odd_length_x_is_looked_at_from_its_first_move() -> None:
    # three stones: O moves first (ply 3); X's positions are plies 4, 6, ...
    loss = where_lost.where_lost(GAME, 3, 2, 50_000)
    assert loss.ply == 5 and loss.played == 20 and not loss.from_opening
    # five: X's first position (ply 6) is already won, and O's first move (ply 5) let it in
    first = where_lost.where_lost(GAME, 5, 2, 50_000)
    assert first.ply == 5 and first.played == 20 and not first.from_opening


def test_a_search_that_runs_out_is_no_answer() -> None:
    assert where_lost.x_wins(State.replay("15x15k5", GAME[:4]), 6, 5) is None


def test_a_file_that_is_not_as_os_games_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seed": 1}\n')
    for path in (bad, tmp_path / "missing.jsonl"):
        done = _run("where_lost.py", str(path))
        assert done.returncode == 2 and "not the games of bench/as_o.py --keep" in done.stderr
    done = _run("as_o.py", "--keep", str(tmp_path / "no" / "g.jsonl"))
    assert done.returncode == 2 and "no folder" in done.stderr


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = Path(where_lost.__file__).parent / script
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=60)
