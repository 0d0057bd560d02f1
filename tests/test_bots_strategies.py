"""The registry and the simple strategies: legal moves everywhere, clear errors, noise."""

from __future__ import annotations

import random

import pytest

import bots
from bots import StrategyError
from protocol.rules import State


@pytest.mark.parametrize("name", bots.STRATEGIES)
@pytest.mark.parametrize("variant", ["classic", "tactic-toe", "4x4k3"])
def test_every_strategy_plays_legal_moves_to_the_end(name: str, variant: str) -> None:
    options = {"think_ms": 50} if name in ("minimax", "gomoku") else {}
    player = bots.strategy(name, **options)
    refusal = getattr(player, "refusal", None)
    if refusal is not None and refusal(variant) is not None:
        pytest.skip(refusal(variant))
    opponent = bots.strategy("random")
    rng = random.Random(7)
    state = State.start(variant, ply_cap=40)
    while not state.is_over:
        mover = player if state.ply % 2 == 0 else opponent
        cell = mover.choose(state, rng)
        assert state.is_legal(cell), (name, state.moves, cell)
        state = state.play(cell)


def test_same_seed_same_game() -> None:
    def game(seed: int) -> tuple[int, ...]:
        rng = random.Random(seed)
        s = State.start("tactic-toe", ply_cap=30)
        a, b = bots.strategy("rule", noise=0.3), bots.strategy("heuristic", noise=0.3)
        while not s.is_over:
            s = s.play((a if s.ply % 2 == 0 else b).choose(s, rng))
        return s.moves

    assert game(3) == game(3)


@pytest.mark.parametrize(
    ("name", "options"),
    [("nope", {}), ("rule", {"think_ms": 5}), ("minimax", {"think_ms": 0}), ("minimax", {"depth": "x"}),
     ("random", {"noise": 1.5}), ("table", {"noise": -0.1})],
)  # fmt: skip
def test_bad_names_and_options_are_refused(name: str, options: dict[str, object]) -> None:
    with pytest.raises(StrategyError):
        bots.strategy(name, **options)


def test_noise_one_is_random_and_noise_zero_is_the_strategy() -> None:
    s = State.replay("classic", [0, 4, 8])  # O must block nothing yet; rule plays an edge
    full = bots.strategy("rule", noise=1.0)
    seen = {full.choose(s, random.Random(i)) for i in range(200)}
    assert seen == set(s.legal_moves())
    plain = bots.strategy("rule", noise=0.0)
    assert {plain.choose(s, random.Random(i)) for i in range(50)} <= {1, 3, 5, 7}


def test_rule_wins_and_blocks() -> None:
    rule = bots.strategy("rule")
    assert rule.choose(State.replay("classic", [0, 3, 1, 4]), random.Random(0)) == 2
    assert rule.choose(State.replay("classic", [0, 4, 8, 2]), random.Random(0)) == 6


def test_rule_follows_the_opening_book_on_classic() -> None:
    rule = bots.strategy("rule")
    start = State.start("classic")
    assert {rule.choose(start, random.Random(i)) for i in range(40)} == {0, 2, 6, 8}  # X: a corner
    assert rule.choose(State.replay("classic", [0]), random.Random(0)) == 4  # O: the centre
    assert rule.choose(State.replay("classic", [4]), random.Random(0)) in (0, 2, 6, 8)  # O: a corner


@pytest.mark.parametrize(
    "moves", [(8, 1), (8, 3), (8, 5), (8, 7), (0, 1), (3, 2), (0, 2, 1), (1, 0, 5)]
)  # fmt: skip
def test_rule_converts_wins_the_old_checklist_threw_away(moves: tuple[int, ...]) -> None:
    """After a weak reply (8 then 1, ...) the win needs a forcing line: a two-in-a-row
    whose forced block lets the rule bot fork. X on 3, O on 2 wins only by 0: it threatens
    6, O's block there threatens 4, and X's block on 4 forks."""
    from bots.solver import solve
    from bots.strategies.rules import RuleStrategy

    s = State.replay("classic", moves)
    table = solve("classic")
    assert table.value(s) == 1
    options = RuleStrategy().options(s)
    assert options and all(-table.value(s.play(m)) == 1 for m in options)


def test_rule_on_tactic_toe_cannot_complete_a_line_through_its_leaving_mark() -> None:
    from bots.strategies.base import bare
    from bots.strategies.rules import winning_cells

    # X holds 0 (oldest), 2 and 4; O holds 1, 3 and 5. 8 would finish 0-4-8, but the mark
    # on 0 leaves as the mark on 8 arrives; 6 finishes 2-4-6.
    s = State.replay("tactic-toe", [0, 1, 2, 3, 4, 5])
    assert s.next_to_vanish(s.to_move) == 0
    assert winning_cells(bare(s)) == [6]
    assert bots.strategy("rule").choose(s, random.Random(0)) == 6


def test_rule_on_tactic_toe_sees_a_line_the_opponents_leaving_mark_opens() -> None:
    from bots.strategies.base import bare
    from bots.strategies.rules import next_wins, threats_after

    # X holds 0 (oldest), 2 and 7; O holds 1 and 3, to move. O on 6 makes 0-3-6 wait only
    # for X's mark on 0, which leaves when X moves: X may not place there, so it cannot
    # be blocked. It counts as a fork, and it wins (the table agrees).
    s = State.replay("tactic-toe", [0, 1, 2, 3, 7])
    child = bare(s)._play_unchecked(6)
    assert child.next_to_vanish(child.to_move) == 0
    assert next_wins(child) == [0] and threats_after(child) == 2
    assert bots.strategy("rule").choose(s, random.Random(0)) == 6
    s = s.play(6)
    s = s.play(bots.strategy("random").choose(s, random.Random(0)))
    end = s.play(0).outcome
    assert end is not None and end.winner == s.to_move
