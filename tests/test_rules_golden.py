"""Golden transcripts: whole games per variant, replayed ply by ply (tests/data/golden_games.json).

Each transcript was checked by hand when it was written; a change in the engine
that alters any board, next-to-vanish mark or outcome fails here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol.rules import Mark, State

GOLDEN = json.loads((Path(__file__).parent / "data" / "golden_games.json").read_text())


@pytest.mark.parametrize("game", GOLDEN, ids=lambda g: f"{g['variant']}-{len(g['moves'])}")
def test_golden_transcript(game: dict[str, Any]) -> None:
    state = State.start(game["variant"])
    for ply in game["plies"]:
        assert not state.is_over
        state = state.play(ply["move"])
        assert state.render().split("\n") == ply["board"]
        if ply["next_to_vanish"] is not None:
            assert state.next_to_vanish(Mark.X) == ply["next_to_vanish"]["X"]
            assert state.next_to_vanish(Mark.O) == ply["next_to_vanish"]["O"]
    expected = game["outcome"]
    assert state.outcome is not None and expected is not None, "golden games are whole games"
    winner = None if state.outcome.winner is None else state.outcome.winner.name
    assert (str(state.outcome.termination), winner, list(state.outcome.line)) == (
        expected["termination"],
        expected["winner"],
        expected["line"],
    )


def test_every_featured_kind_has_a_golden_game() -> None:
    assert {g["variant"] for g in GOLDEN} >= {"classic", "tactic-toe", "4x4k4", "15x15k5"}
