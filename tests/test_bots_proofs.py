"""Exhaustive proofs about the bots, no sampling unless the issue asks for a sample.

Classic: in every reachable position where it is to move, each of `rule`, `minimax`
and `table` plays a move that keeps the position's value, computed by a tiny solver
written here; so from the start none of them ever loses, as X or as O, and each of
them converts every won position it is given. The rule bot is checked on every move
its checklist allows, so the proof holds whatever its ``rng`` draws.

Tactic-toe: `table`'s move keeps the value in every reachable state and brings a win
(or a loss) one ply nearer; with the table's own consistency, checked alongside, that
proves it wins every won position against every defence within the solved distance
and never loses a drawn one. `minimax` keeps the value in a seeded sample of 1,000
states (``bench/solve.py`` checks all of them). The walker reports the shortest
opponent line that beats each bot.
"""

from __future__ import annotations

import functools
import random
from collections import deque

import pytest

import bots
from bots.solver import ENDLESS, solve
from bots.strategies.rules import RuleStrategy
from protocol.rules import Cell, State, find_variant, reachable

#: Deep enough for every tactic-toe position: the longest forced win is 17 plies.
TACTIC_DEPTH = 18
#: Generous enough never to cut a depth-18 search short, so the test is deterministic.
NO_CLOCK_MS = 600_000


@functools.cache
def _classic_value(x: int, o: int, to_move: int) -> int:
    """The value of a classic position for the side to move (+1, 0, -1): plain negamax,
    written here so that the proofs do not lean on the solver they also check."""
    lines = find_variant("classic").lines
    if any((o if to_move == 0 else x) & line == line for line in lines):
        return -1  # the player who just moved completed a line
    empty = [c for c in range(9) if not (x | o) >> c & 1]
    if not empty:
        return 0
    best = -1
    for c in empty:
        if to_move == 0:
            best = max(best, -_classic_value(x | 1 << c, o, 1))
        else:
            best = max(best, -_classic_value(x, o | 1 << c, 0))
        if best == 1:
            break
    return best


def _value(s: State) -> int:
    return _classic_value(s.x, s.o, int(s.to_move))


def _moves_to_check(name: str, s: State) -> list[Cell]:
    """The moves the bot may play in ``s``: all of them for the bots with a choice."""
    if name == "rule":
        return RuleStrategy().options(s)
    if name == "table":
        return solve(s.variant.name).best_moves(s)
    # minimax with the default budget (think_ms=1000) and a fresh table for each move
    return [bots.strategy(name).choose(s, random.Random(s.key()))]


@pytest.mark.parametrize("name", ["rule", "minimax", "table"])
def test_classic_every_position_keeps_its_value(name: str) -> None:
    positions = [s for s in reachable("classic") if not s.is_over]
    assert len(positions) == 4520
    won = drawn = 0
    bad: list[tuple[tuple[int, ...], tuple[int, ...], Cell]] = []
    for s in positions:
        value = _value(s)
        won += value == 1
        drawn += value == 0
        for m in _moves_to_check(name, s):
            if -_value(s._play_unchecked(m)) < value:
                bad.append((s.marks(s.to_move), s.marks(s.to_move.other), m))
    print(f"\n{name}: {won} won and {drawn} drawn classic positions to move in; {len(bad)} bad moves")
    assert (won, drawn) == (2836, 1052)
    assert bad == []


@pytest.mark.parametrize("name", ["rule", "minimax", "table"])
def test_classic_never_loses_against_any_opponent_line(name: str) -> None:
    """Every game the bot can play from the start (as X, as O, and as X with its first
    move forced to each cell, as tournament openings do), every opponent reply and
    every move the bot may choose followed to the end."""
    results = {"win": 0, "draw": 0, "loss": 0}

    def play(s: State, side: int) -> None:
        if s.outcome is not None:
            if s.outcome.winner is None:
                results["draw"] += 1
            else:
                results["win" if int(s.outcome.winner) == side else "loss"] += 1
            return
        moves = _moves_to_check(name, s) if int(s.to_move) == side else s.legal_moves()
        for m in moves:
            play(s._play_unchecked(m), side)

    start = State.start("classic", draw_rules=False)
    for side in (0, 1):
        play(start, side)
    for first in start.legal_moves():
        play(start._play_unchecked(first), 0)
    print(f"\n{name}: {sum(results.values())} games against every opponent line: {results}")
    assert results["loss"] == 0
    assert results["win"] > 0


def test_heuristic_is_not_perfect_on_classic() -> None:
    positions = [s for s in reachable("classic") if not s.is_over]
    player = bots.strategy("heuristic")
    bad = sum(
        -_value(s._play_unchecked(player.choose(s, random.Random(s.key())))) < _value(s) for s in positions
    )
    assert bad > 0  # the weaker bot can be beaten


def test_table_on_tactic_toe_keeps_every_value_and_brings_the_end_nearer() -> None:
    """Over all 128,170 states: the table's own values are consistent (a won state has a
    move to a lost one at distance d-1, a lost state only moves to won ones at distance
    at most d-1, a drawn state no move to a lost one), and every move `table` may play
    keeps the value and, won or lost, reaches distance d-1. By induction on d, `table`
    wins a won state within d plies whatever the defence, and from a drawn state it
    only ever reaches drawn or won states, so it never loses one."""
    table = solve("tactic-toe")
    states = reachable("tactic-toe")
    assert len(states) == 128_170
    player = bots.strategy("table")
    counts = {1: 0, 0: 0, -1: 0}
    bad: list[tuple[tuple[int, ...], tuple[int, ...], int, Cell]] = []
    for s in states:
        value, dist = table.lookup(s)
        if s.is_over:
            assert (value, dist) == (-1 if s.outcome.winner is not None else 0, 0)  # type: ignore[union-attr]
            continue
        counts[value] += 1
        after = table.move_values(s)  # move -> (value for the mover, distance counting the move)
        best = max(v for v, _ in after.values())
        assert best == value
        if value == 1:
            assert min(d for v, d in after.values() if v == 1) == dist
        elif value == -1:
            assert max(d for _, d in after.values()) == dist
        else:
            assert dist == ENDLESS
        chosen = player.choose(s, random.Random(s.key()))
        allowed = table.best_moves(s)
        assert chosen in allowed
        for m in allowed:
            v, d = after[m]
            if v != value or (value != 0 and d != dist):
                bad.append((*s.queues, int(s.to_move), m))
    print(f"\ntable on tactic-toe: {counts[1]} won, {counts[0]} drawn, {counts[-1]} lost states to move in; "
          f"{len(bad)} bad moves")  # fmt: skip
    assert bad == []
    assert counts[1] > 0 and counts[0] > 0 and counts[-1] > 0


def test_minimax_keeps_the_value_of_1000_sampled_tactic_toe_states() -> None:
    table = solve("tactic-toe")
    states = [s for s in reachable("tactic-toe") if not s.is_over]
    sample = random.Random(2024).sample(states, 1000)
    bad = []
    for i, s in enumerate(sample):
        player = bots.strategy("minimax", think_ms=NO_CLOCK_MS, depth=TACTIC_DEPTH)  # a fresh table each
        m = player.choose(s, random.Random(i))
        if -table.value(s._play_unchecked(m)) < table.value(s):
            bad.append((*s.queues, int(s.to_move), m))
    print(f"\nminimax (depth {TACTIC_DEPTH}) on 1000 sampled tactic-toe states: {len(bad)} bad moves")
    assert bad == []


def shortest_beating_line(name: str, side: int) -> tuple[int, ...] | None:
    """Tactic-toe: breadth-first over every opponent line (positions repeat, so each is
    visited once), the bot answering with an rng seeded by the position; the shortest
    move list that ends in the bot's loss, or None."""
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


#: The walker's findings: the shortest opponent line that beats each bot on tactic-toe
#: (the bot's rng seeded by the position's key). Pinned: a change to a bot shows here.
SHORTEST_BEATING_LINES = {
    ("heuristic", "X"): (4, 8, 0, 1, 2, 7, 5, 4),
    ("heuristic", "O"): (0, 4, 7, 1, 2, 3, 6, 0, 4),
    ("rule", "X"): (4, 2, 1, 7, 6, 0, 8, 5, 4, 1, 2, 6, 3, 8, 7, 5, 1, 2),
    ("rule", "O"): (1, 0, 4, 7, 3, 5, 6, 8, 0),
}


@pytest.mark.parametrize(("name", "side"), list(SHORTEST_BEATING_LINES))
def test_tactic_toe_walker_reports_the_shortest_beating_line(name: str, side: str) -> None:
    line = shortest_beating_line(name, "XO".index(side))
    print(f"\n{name} as {side}: beaten in {None if line is None else len(line)} plies by {line}")
    assert line == SHORTEST_BEATING_LINES[name, side]
    end = State.replay("tactic-toe", line)
    assert end.outcome is not None and end.outcome.winner is not None and end.outcome.winner.name != side
    # the bot lost on the last ply of the line: one ply shorter, the game was still on
    assert State.replay("tactic-toe", line[:-1]).outcome is None


def test_tactic_toe_walker_never_beats_table_as_x_and_only_after_an_edge_as_o() -> None:
    assert shortest_beating_line("table", 0) is None  # X wins with perfect play: never beaten
    beaten_o = shortest_beating_line("table", 1)
    print(f"\ntable as O: beaten in {None if beaten_o is None else len(beaten_o)} plies by {beaten_o}")
    assert beaten_o is not None and beaten_o[0] in (1, 3, 5, 7)  # only the winning edge openings
    assert len(beaten_o) == solve("tactic-toe").distance(State.start("tactic-toe"))  # 13: slowest loss
