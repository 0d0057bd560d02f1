"""Moves, errors and outcomes of the rules engine, variant by variant."""

from __future__ import annotations

import dataclasses

import pytest

from protocol.errors import ArenaError
from protocol.rules import (
    CellOccupied,
    CellOutOfRange,
    CellVacating,
    GameOver,
    IllegalMove,
    MalformedMove,
    Mark,
    State,
    Termination,
    UnknownVariant,
    find_variant,
)

# A tactic-toe cycle: X rotates over {0, 2, 3, 7} and O over {1, 5, 6, 8}; no three
# of either set make a line, so nobody wins and the position after ply 6 recurs
# every 8 plies.
CYCLE_OPENING = [0, 1, 2, 5, 3, 6]
CYCLE = [7, 8, 0, 1, 2, 5, 3, 6]


def test_variant_registry() -> None:
    assert find_variant("classic") is find_variant("classic")
    v = find_variant("15x15k5")
    assert (v.rows, v.cols, v.k, v.cells) == (15, 15, 5, 225)
    assert len(v.symmetries) == 8
    assert len(find_variant("4x6k4").symmetries) == 4
    assert find_variant("tactic-toe").max_marks == 3
    assert find_variant("3x5k5").k == 5


@pytest.mark.parametrize(
    "name", ["", "3x3", "16x15k5", "2x3k3", "5x5k6", "5x5k2", "05x5k4", "gomoku", "CLASSIC"]
)
def test_unknown_variants_list_the_valid_forms(name: str) -> None:
    with pytest.raises(UnknownVariant) as info:
        find_variant(name)
    assert info.value.code == "unknown_variant"
    assert "RxCkK" in info.value.message and "tactic-toe" in info.value.message


def test_state_is_immutable_and_hashable() -> None:
    s = State.start("classic").play(4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.x = 0  # type: ignore[misc]
    assert {s, State.replay("classic", [4])} == {s}
    assert s != State.start("classic").play(0)


@pytest.mark.parametrize(
    ("moves", "cell", "error", "code"),
    [
        ([], 9, CellOutOfRange, "cell_out_of_range"),
        ([], -1, CellOutOfRange, "cell_out_of_range"),
        ([4], 4, CellOccupied, "cell_occupied"),
        ([], "4", MalformedMove, "malformed_move"),
        ([], True, MalformedMove, "malformed_move"),
        ([], 4.0, MalformedMove, "malformed_move"),
        ([], None, MalformedMove, "malformed_move"),
        ([0, 3, 1, 4, 2], 5, GameOver, "game_over"),
    ],
)
def test_bad_moves_raise_one_documented_error_and_change_nothing(
    moves: list[int], cell: object, error: type[IllegalMove], code: str
) -> None:
    state = State.replay("classic", moves)
    before = (state.x, state.o, state.to_move, state.ply, state.moves, state.outcome)
    with pytest.raises(error) as info:
        state.play(cell)  # type: ignore[arg-type]
    assert info.value.code == code
    assert isinstance(info.value, IllegalMove) and isinstance(info.value, ArenaError)
    assert (state.x, state.o, state.to_move, state.ply, state.moves, state.outcome) == before
    assert not state.is_legal(cell)


def test_classic_win_and_full_board() -> None:
    won = State.replay("classic", [0, 3, 1, 4, 2])
    assert won.outcome is not None
    assert (won.outcome.termination, won.outcome.winner, won.outcome.line) == (
        Termination.LINE,
        Mark.X,
        (0, 1, 2),
    )
    assert won.outcome.result == "1-0" and won.legal_moves() == ()
    o_wins = State.replay("classic", [0, 2, 1, 4, 8, 6])
    assert o_wins.outcome is not None and o_wins.outcome.winner is Mark.O and o_wins.outcome.line == (2, 4, 6)
    drawn = State.replay("classic", [4, 0, 8, 2, 1, 7, 6, 3, 5])
    assert drawn.outcome is not None
    assert (drawn.outcome.termination, drawn.outcome.winner, drawn.outcome.result) == (
        Termination.FULL_BOARD,
        None,
        "1/2-1/2",
    )


def test_tactic_toe_oldest_mark_vanishes_and_cannot_be_retaken() -> None:
    s = State.replay("tactic-toe", [0, 4, 1, 2, 6, 3])
    assert s.marks(Mark.X) == (0, 1, 6) and s.marks(Mark.O) == (4, 2, 3)
    assert s.next_to_vanish(Mark.X) == 0 and s.next_to_vanish(Mark.O) == 4
    with pytest.raises(CellVacating) as info:
        s.play(0)
    assert info.value.code == "cell_vacating" and isinstance(info.value, CellOccupied)
    assert 0 not in s.legal_moves() and 4 not in s.legal_moves()
    s = s.play(5)  # X blocks 3-4-5; X's mark on 0 vanishes
    assert s.mark_at(0) is None and s.marks(Mark.X) == (1, 6, 5)
    assert s.next_to_vanish(Mark.X) == 1
    with pytest.raises(CellVacating):
        s.play(4)  # O's own oldest mark
    s = s.play(0)  # the opponent may take the vacated cell at once
    assert s.mark_at(0) is Mark.O and s.mark_at(4) is None and s.marks(Mark.O) == (2, 3, 0)


def test_tactic_toe_win_is_checked_after_the_removal() -> None:
    # X holds 0, 1, 4 with 0 oldest. Playing 2 would complete 0-1-2, but 0 leaves
    # as 2 arrives, so it is no win.
    s = State.replay("tactic-toe", [0, 3, 1, 5, 4, 8])
    assert s.marks(Mark.X) == (0, 1, 4) and s.is_over is False
    after = s.play(2)
    assert after.outcome is None and after.marks(Mark.X) == (1, 4, 2)
    # Playing 7 completes 1-4-7 with the marks that stay: a win.
    won = s.play(7)
    assert won.outcome is not None
    assert (won.outcome.winner, won.outcome.line) == (Mark.X, (1, 4, 7))


def test_tactic_toe_threefold_repetition_is_a_draw() -> None:
    s = State.replay("tactic-toe", CYCLE_OPENING)
    first = s.key()
    for _ in range(8):
        s = s.play(CYCLE[(s.ply - 6) % 8])
    assert s.key() == first and s.outcome is None  # second occurrence: play goes on
    for _ in range(7):
        s = s.play(CYCLE[(s.ply - 6) % 8])
        assert s.outcome is None
    s = s.play(CYCLE[(s.ply - 6) % 8])
    assert s.ply == 22 and s.key() == first
    assert s.outcome is not None
    assert (s.outcome.termination, s.outcome.winner) == (Termination.REPETITION, None)


def test_tactic_toe_ply_cap() -> None:
    moves = CYCLE_OPENING + CYCLE
    s = State.replay("tactic-toe", moves[:10], ply_cap=10)
    assert s.outcome is not None and s.outcome.termination is Termination.PLY_CAP
    assert State.replay("tactic-toe", moves[:9], ply_cap=10).outcome is None
    assert State.start("tactic-toe").ply_cap == 200
    assert State.start("classic").ply_cap is None
    with pytest.raises(ValueError):
        State.start("tactic-toe", ply_cap=0)


def _windows(rows: int, cols: int, k: int) -> list[tuple[int, ...]]:
    """Every K-window, computed from coordinates (independently of the engine's masks)."""
    out = []
    for r in range(rows):
        for c in range(cols):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + dr * i, c + dc * i) for i in range(k)]
                if all(0 <= rr < rows and 0 <= cc < cols for rr, cc in cells):
                    out.append(tuple(rr * cols + cc for rr, cc in cells))
    return out


@pytest.mark.parametrize("name", ["4x4k4", "15x15k5", "5x7k4"])
def test_mnk_wins_on_lines_touching_every_edge(name: str) -> None:
    v = find_variant(name)
    edge_windows = [
        w
        for w in _windows(v.rows, v.cols, v.k)
        if any(c // v.cols in (0, v.rows - 1) or c % v.cols in (0, v.cols - 1) for c in w)
    ]
    kinds = set()
    for window in edge_windows:
        rows = {c // v.cols for c in window}
        cols = {c % v.cols for c in window}
        kind = "row" if len(rows) == 1 else "col" if len(cols) == 1 else "diag"
        if kind == "diag":
            kind = "diag" if (window[1] - window[0]) == v.cols + 1 else "anti"
        kinds.add((kind, frozenset(e for e, hit in _edges(v, window).items() if hit)))
        # O has K-1 marks when X completes the window, too few for a line of its own.
        filler = [c for c in range(v.cells) if c not in window]
        moves = []
        for i, cell in enumerate(window):
            moves.append(cell)
            if i < len(window) - 1:
                moves.append(filler[i])
        s = State.replay(name, moves)
        assert s.outcome is not None, (name, window)
        assert (s.outcome.winner, s.outcome.line) == (Mark.X, tuple(sorted(window)))
        assert s.ply == len(moves)
    touched = {edge for _, edges in kinds for edge in edges}
    assert touched == {"top", "bottom", "left", "right"}
    assert {kind for kind, _ in kinds} == {"row", "col", "diag", "anti"}


def _edges(v: object, window: tuple[int, ...]) -> dict[str, bool]:
    cols: int = v.cols  # type: ignore[attr-defined]
    rows: int = v.rows  # type: ignore[attr-defined]
    return {
        "top": any(c // cols == 0 for c in window),
        "bottom": any(c // cols == rows - 1 for c in window),
        "left": any(c % cols == 0 for c in window),
        "right": any(c % cols == cols - 1 for c in window),
    }


def test_freestyle_overline_wins_and_is_reported_whole() -> None:
    o_moves = [100, 130, 160, 190, 220, 104]
    x_moves = [0, 1, 5, 6, 2, 3, 4]
    moves = [m for pair in zip(x_moves, o_moves, strict=False) for m in pair] + [x_moves[-1]]
    s = State.replay("15x15k5", moves)
    assert s.outcome is not None
    assert (s.outcome.winner, s.outcome.line) == (Mark.X, (0, 1, 2, 3, 4, 5, 6))
    assert State.replay("15x15k5", moves[:-1]).outcome is None


def test_full_board_draw_on_mnk() -> None:
    # 3x4k4: only the four columns-long rows of 4 can win; fill it without any.
    moves = [0, 1, 2, 3, 5, 4, 7, 6, 8, 9, 10, 11]
    s = State.replay("3x4k4", moves)
    assert s.outcome is not None and s.outcome.termination is Termination.FULL_BOARD
