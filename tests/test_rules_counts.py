"""The published facts about classic and tactic-toe, each computed by walking the game."""

from __future__ import annotations

from collections import Counter

from protocol.rules import Mark, State, reachable


def test_classic_complete_games_and_nodes_per_ply() -> None:
    outcomes: Counter[str] = Counter()
    per_ply = [0] * 10

    def walk(state: State) -> None:
        for cell in state.legal_moves():
            child = state.play(cell)
            per_ply[child.ply] += 1
            if child.outcome is None:
                walk(child)
            else:
                winner = child.outcome.winner
                outcomes["draw" if winner is None else winner.name] += 1

    walk(State.start("classic"))
    assert sum(outcomes.values()) == 255_168
    assert outcomes == {"X": 131_184, "O": 77_904, "draw": 46_080}
    assert per_ply[1:] == [9, 72, 504, 3_024, 15_120, 54_720, 148_176, 200_448, 127_872]


def test_classic_reachable_positions() -> None:
    positions = {s.key(): s for s in reachable("classic")}
    assert len(positions) == 5_478
    assert len({s.canonical_key() for s in positions.values()}) == 765
    terminal = Counter(
        "draw" if s.outcome.winner is None else s.outcome.winner.name
        for s in positions.values()
        if s.outcome is not None
    )
    assert sum(terminal.values()) == 958
    assert terminal == {"X": 626, "O": 316, "draw": 16}


def test_tactic_toe_reachable_states() -> None:
    states = {s.key(): s for s in reachable("tactic-toe")}
    assert len(states) == 128_170
    assert len({s.canonical_key() for s in states.values()}) == 16_030
    # Only the mover can win, and nobody ever has more than three marks.
    for s in states.values():
        assert len(s.marks(Mark.X)) <= 3 and len(s.marks(Mark.O)) <= 3
        if s.outcome is not None:
            assert s.outcome.winner is s.to_move.other
