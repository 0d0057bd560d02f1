"""Exhaustive proofs on classic: against every opponent line, the perfect bots keep the
value of every position they are given (so they never lose and convert every win);
`rule` never loses. X's first move is also forced to each cell (tournament openings).

The bots break ties with ``rng``; here each position gets its own seeded ``rng`` so the
walk is deterministic and covers every opponent line.
"""

from __future__ import annotations

import random

import pytest

import bots
from bots.solver import solve
from protocol.rules import State


def _walk(name: str, variant: str, strict: bool = True) -> tuple[int, list[tuple[int, ...]]]:
    """Every position the bot meets (either side, any opponent line): how many, and
    the move lists where the bot's move lowered the value."""
    table = solve(variant)
    player = bots.strategy(name, think_ms=10_000) if name == "minimax" else bots.strategy(name)
    seen: set[int] = set()
    failures: list[tuple[int, ...]] = []

    def visit(s: State, moves: tuple[int, ...], bot_side: int) -> None:
        if s.is_over:
            return
        if s.to_move == bot_side:
            key = s.key()
            if key in seen:
                return
            seen.add(key)
            cell = player.choose(s, random.Random(key))
            after, before = -table.value(s._play_unchecked(cell)), table.value(s)
            if after < before and (strict or after < 0):
                failures.append((*moves, cell))
                return
            visit(s._play_unchecked(cell), (*moves, cell), bot_side)
        else:
            for m in s.legal_moves():
                visit(s._play_unchecked(m), (*moves, m), bot_side)

    start = State.start(variant, draw_rules=False)
    for side in (0, 1):
        visit(start, (), side)
    for first in start.legal_moves():  # opening suites force X's first move
        visit(start._play_unchecked(first), (first,), 0)
    return len(seen), failures


@pytest.mark.parametrize("name", ["table", "minimax"])
def test_perfect_bots_never_lose_a_value_on_classic(name: str) -> None:
    count, failures = _walk(name, "classic")
    assert count > 100
    assert failures == []


def test_rule_never_loses_on_classic() -> None:
    count, failures = _walk("rule", "classic", strict=False)
    assert count > 100
    assert failures == []


def test_heuristic_is_not_perfect_on_classic() -> None:
    _, failures = _walk("heuristic", "classic")
    assert failures  # the weaker bot can be beaten: the walker finds a line


def shortest_beating_line(name: str, side: int) -> tuple[int, ...] | None:
    """Tactic-toe: breadth-first over every opponent line (positions repeat, so each is
    visited once), the bot answering with an rng seeded by the position; the shortest
    move list that ends in the bot's loss, or None."""
    from collections import deque

    player = bots.strategy(name)
    start = State.start("tactic-toe", draw_rules=False)
    seen = {start.key()}
    queue: deque[tuple[State, tuple[int, ...]]] = deque([(start, ())])
    while queue:
        s, moves = queue.popleft()
        if s.outcome is not None:
            if s.outcome.winner is not None and int(s.outcome.winner) != side:
                return moves
            continue
        mine = int(s.to_move) == side
        for m in [player.choose(s, random.Random(s.key()))] if mine else s.legal_moves():
            child = s._play_unchecked(m)
            if child.key() not in seen:
                seen.add(child.key())
                queue.append((child, (*moves, m)))
    return None


def test_tactic_toe_walker() -> None:
    assert shortest_beating_line("table", 0) is None  # X wins with perfect play: never beaten
    beaten_o = shortest_beating_line("table", 1)
    assert beaten_o is not None and beaten_o[0] in (1, 3, 5, 7)  # only the winning edge openings
    for name in ("heuristic", "rule"):
        for side in (0, 1):
            line = shortest_beating_line(name, side)
            assert line is not None
            assert State.replay("tactic-toe", line).outcome.winner != side  # type: ignore[union-attr]
