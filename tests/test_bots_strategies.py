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
    if name == "table" and variant == "4x4k3":
        pytest.skip("only 3x3 boards are solved")
    options = {"think_ms": 50} if name == "minimax" else {}
    player = bots.strategy(name, **options)
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
