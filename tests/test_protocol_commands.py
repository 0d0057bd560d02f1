"""`ttt rules`: the words agree with what the engine does."""

from __future__ import annotations

from protocol.commands import rules_text
from protocol.rules import State, find_variant

TACTIC = find_variant("tactic-toe")


def _after(*cells: int) -> State:
    return State.replay(TACTIC, cells)


def test_repetition_compares_the_whole_order_of_vanishing() -> None:
    # X holds 0, 1, 5 in both games, 0 oldest in both; only the order of 1 and 5 differs.
    a = _after(0, 3, 1, 6, 5)
    b = _after(0, 3, 5, 6, 1)
    assert a.marks(a.to_move.other) != b.marks(b.to_move.other)
    assert sorted(a.marks(a.to_move.other)) == sorted(b.marks(b.to_move.other))
    assert a.next_to_vanish(a.to_move.other) == b.next_to_vanish(b.to_move.other) == 0
    assert a.key() != b.key(), "the engine tells these positions apart"
    assert a.key() == _after(0, 3, 1, 6, 5).key()

    text = " ".join(rules_text(TACTIC).split())
    assert "which of them is oldest" not in text
    assert "the whole order in which that player's marks will vanish" in text
    assert "same player to move" in text
