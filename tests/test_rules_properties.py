"""Hypothesis properties of the rules engine: symmetry and the safety of bad input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.rules import IllegalMove, State, find_variant

VARIANTS = ["classic", "tactic-toe", "4x4k4", "4x6k3", "15x15k5"]


@st.composite
def positions(draw: st.DrawFn) -> State:
    """A state reached by legal moves picked by hypothesis (game may be over)."""
    name = draw(st.sampled_from(VARIANTS))
    state = State.start(name)
    for _ in range(draw(st.integers(0, 30))):
        moves = state.legal_moves()
        if not moves:
            break
        state = state.play(moves[draw(st.integers(0, len(moves) - 1))])
    return state


def _position(state: State) -> tuple[object, ...]:
    outcome = state.outcome
    return (state.key(), None if outcome is None else (outcome.termination, outcome.winner, outcome.line))


@settings(max_examples=300, deadline=None)
@given(positions(), st.data())
def test_a_symmetry_commutes_with_play(state: State, data: st.DataObject) -> None:
    moves = state.legal_moves()
    if not moves:
        return
    cell = data.draw(st.sampled_from(moves))
    for sym in state.variant.symmetries:
        assert _position(state.transform(sym).play(sym[cell])) == _position(state.play(cell).transform(sym))


@settings(max_examples=300, deadline=None)
@given(positions())
def test_all_images_share_the_canonical_key(state: State) -> None:
    keys = {image.canonical_key() for image in state.images()}
    assert keys == {state.canonical_key()}
    assert state.canonical_key() == min(image.key() for image in state.images())
    # and the images are really different boards whenever the board is not symmetric
    assert len({image.key() for image in state.images()}) <= len(state.variant.symmetries)


@settings(max_examples=300, deadline=None)
@given(
    positions(), st.one_of(st.integers(-300, 300), st.text(max_size=3), st.none(), st.booleans(), st.floats())
)
def test_bad_input_never_changes_a_state(state: State, move: object) -> None:
    before = (state.x, state.o, state.queues, state.to_move, state.ply, state.moves, state.outcome)
    try:
        after = state.play(move)  # type: ignore[arg-type]
    except IllegalMove as exc:
        assert exc.code in {
            "malformed_move",
            "cell_out_of_range",
            "cell_occupied",
            "cell_vacating",
            "game_over",
        }
    else:
        assert move in state.legal_moves() and after.ply == state.ply + 1
    assert (state.x, state.o, state.queues, state.to_move, state.ply, state.moves, state.outcome) == before


def test_symmetry_counts() -> None:
    assert len(find_variant("classic").symmetries) == 8
    assert len(set(find_variant("5x3k3").symmetries)) == 4
