"""The example engines of docs/engines.md, taken from the page and played as written."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_scripts import example, write_examples

from bots.engines import EngineStrategy
from protocol.rules import State


@pytest.fixture
def engines(tmp_path: Path) -> Iterator[dict[str, EngineStrategy]]:
    made = {name: EngineStrategy(cmd, "ttt", think_ms=3000) for name, cmd in write_examples(tmp_path).items()}
    yield made
    for s in made.values():
        s.close()


def test_the_sh_example_is_about_twenty_lines() -> None:
    assert len(example("#!/bin/sh").splitlines()) <= 22


@pytest.mark.parametrize("variant", ["classic", "tactic-toe", "7x7k4", "15x15k5"])
def test_the_examples_play_each_other_to_the_end(engines: dict[str, EngineStrategy], variant: str) -> None:
    for x, o in (("sh", "python"), ("python", "sh")):
        state = State.start(variant)
        rng = random.Random(variant)
        while not state.is_over:
            state = state.play(engines[x if state.to_move == 0 else o].choose(state, rng))
        assert State.replay(variant, state.moves).outcome == state.outcome
    assert engines["sh"].about == "ok pick-sh 1.0" and engines["sh"].name == "pick.sh"


def test_the_sh_example_plays_the_seeded_empty_cell(engines: dict[str, EngineStrategy]) -> None:
    state = State.replay("classic", [0, 4])  # empty: 1 2 3 5 6 7 8
    seeds = [random.Random(s).getrandbits(31) for s in range(5)]
    got = [engines["sh"].choose(state, random.Random(s)) for s in range(5)]
    assert got == [[1, 2, 3, 5, 6, 7, 8][seed % 7] for seed in seeds]


def test_the_python_example_wins_then_blocks(engines: dict[str, EngineStrategy]) -> None:
    py = engines["python"]
    # X: 0 1, O: 4 5, X to move: 2 wins (and 3 would block)
    assert py.choose(State.replay("classic", [0, 4, 1, 5]), random.Random(0)) == 2
    # X: 0 8, O: 4 5, X to move: no win, block 3
    assert py.choose(State.replay("classic", [0, 4, 8, 5]), random.Random(0)) == 3
    # tactic-toe, X: 0 1 8 (0 oldest), O: 4 7 5 (4 oldest), X to move: 2 is no win (0 leaves),
    # and O's 3 is no threat (its 4 leaves as it plays): both would be chosen only by chance
    state = State.replay("tactic-toe", [0, 4, 1, 7, 8, 5])
    chosen = {py.choose(state, random.Random(s)) for s in range(12)}
    assert len(chosen) > 1
