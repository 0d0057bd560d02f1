"""`minimax`: exact scores, sound transposition-table entries, node counts, cycles, and
the time budget read afresh at every move."""

from __future__ import annotations

import functools
import itertools
import random

import pytest

import bots
from bots.solver import solve
from bots.strategies.minimax import EXACT, LOWER, MATE, UPPER, WIN, MinimaxStrategy
from protocol.rules import State, find_variant, reachable

#: Published node counts for the empty classic board.
PLAIN_MINIMAX_NODES = 549_945
ALPHA_BETA_WITH_TABLE_NODES = 3_120


@functools.cache
def _exact(x: int, o: int, to_move: int) -> int:
    """The exact negamax score of a classic position, by plain recursion: ``WIN - d`` for a
    win in ``d`` plies (fastest), ``-(WIN - d)`` for a loss in ``d`` (slowest), 0 a draw."""
    lines = find_variant("classic").lines
    if any((o if to_move == 0 else x) & line == line for line in lines):
        return -WIN  # the player who just moved has won
    empty = [c for c in range(9) if not (x | o) >> c & 1]
    if not empty:
        return 0
    best = -WIN - 1
    for c in empty:
        child = _exact(x | 1 << c, o, 1) if to_move == 0 else _exact(x, o | 1 << c, 0)
        best = max(best, -child + 1 if child > 0 else -child - 1 if child < 0 else 0)
    return best


#: Every classic position with a move to make.
CLASSIC_POSITIONS = [s for s in reachable("classic") if not s.is_over]


def test_one_complete_search_of_the_empty_board_is_a_draw_in_few_nodes() -> None:
    mm = MinimaxStrategy()
    move, score = mm.search(State.start("classic"))
    print(f"\none complete search of the empty classic board: {mm.nodes} nodes, score {score}, move {move}")
    assert score == 0
    assert mm.nodes < ALPHA_BETA_WITH_TABLE_NODES // 10
    mm = MinimaxStrategy()
    mm.choose(State.start("classic"), random.Random(1))
    print(f"iterative deepening: {mm.nodes} nodes, per iteration {mm.iterations}")
    assert mm.nodes < ALPHA_BETA_WITH_TABLE_NODES
    assert len(mm.iterations) == 9  # the ninth ply is the first to reach every line's end


def test_after_a_corner_the_only_drawing_reply_is_the_centre() -> None:
    """The audit's case: the old table stored upper bounds as exact and sent O to 1."""
    move, score = MinimaxStrategy().search(State.replay("classic", [0]))
    assert (move, score) == (4, 0)


@pytest.mark.parametrize("shared", [False, True])
def test_every_classic_position_gets_its_exact_score(shared: bool) -> None:
    """A fresh table for each position, or one table for all of them (entries then meet
    other plies and windows: mate distances must be counted from the position)."""
    table = solve("classic")
    one = MinimaxStrategy()
    wrong = []
    for s in CLASSIC_POSITIONS:
        mm = one if shared else MinimaxStrategy()
        move, score = mm.search(s)
        exact = _exact(s.x, s.o, int(s.to_move))
        if score != exact or -table.value(s._play_unchecked(move)) != table.value(s):
            wrong.append((s.x, s.o, int(s.to_move), move, score, exact))
    assert wrong == []


def test_table_entries_are_sound_bounds() -> None:
    """Every settled entry left by complete searches is exact, a lower or an upper bound
    of the true score as its kind says, with mate distances counted from its position."""
    mm = MinimaxStrategy()
    for s in CLASSIC_POSITIONS[:400]:
        mm.search(s)
    kinds = {EXACT: 0, LOWER: 0, UPPER: 0}
    checked = 0
    for key, (depth, score, kind, _) in mm._tt.items():
        kinds[kind] += 1
        x, o, to_move = key >> 1 & 511, key >> 10, key & 1
        true = _exact(x, o, to_move)
        if depth >= 9:  # searched to the end
            checked += 1
            assert (true == score) if kind == EXACT else (true >= score) if kind == LOWER else (true <= score)
    assert checked > 100 and all(kinds.values())


def test_fastest_win_and_slowest_loss() -> None:
    won = State.replay("classic", [0, 3, 1, 8])  # X wins now on 2, or later (4 forks)
    assert MinimaxStrategy().search(won) == (2, WIN - 1)
    lost = State.replay("classic", [0, 1, 4, 8, 6])  # O faces threats on 2 and 3
    move, score = MinimaxStrategy().search(lost)
    assert score == -(WIN - 2)
    slow = State.replay("classic", [0, 1, 4])  # O must block 8, then X forks: lost in 4
    move, score = MinimaxStrategy().search(slow)
    assert (move, score) == (8, -(WIN - 4))


def test_tactic_toe_cycles_score_as_draws_without_recursion_errors() -> None:
    table = solve("tactic-toe")
    drawn = State.replay("tactic-toe", [4])  # the centre opening draws
    mm = MinimaxStrategy()
    move, score = mm.search(drawn, 64)
    assert abs(score) < MATE and table.value(drawn._play_unchecked(move)) == 0
    won = State.start("tactic-toe")
    move, score = MinimaxStrategy().search(won, 18)
    assert move in (1, 3, 5, 7) and score == WIN - table.distance(won)


def test_think_ms_is_read_at_every_choose(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a clock that advances 1 ms per reading, the budget decides how far it gets."""
    ticks = itertools.count()
    monkeypatch.setattr("bots.strategies.minimax.time.perf_counter", lambda: next(ticks) / 1000)
    s = State.replay("15x15k5", [112, 113, 127])
    mm = bots.strategy("minimax", think_ms=2)
    assert isinstance(mm, MinimaxStrategy)
    mm.choose(s, random.Random(1))
    short = mm.nodes
    mm.think_ms = 200  # another engineer sets this per move from the bot's clock
    mm.choose(s, random.Random(1))
    assert s.is_legal(mm.choose(s, random.Random(1)))
    assert mm.nodes > 10 * short


def test_depth_caps_iterative_deepening() -> None:
    mm = MinimaxStrategy(depth=3)
    mm.choose(State.start("4x4k4"), random.Random(0))
    assert len(mm.iterations) == 3


def test_wins_and_blocks_come_first_even_without_time(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = itertools.count()
    monkeypatch.setattr("bots.strategies.minimax.time.perf_counter", lambda: next(ticks) * 10.0)
    mm = MinimaxStrategy(think_ms=1)
    assert mm.choose(State.replay("classic", [0, 3, 1, 4]), random.Random(0)) == 2  # win
    assert mm.choose(State.replay("classic", [0, 4, 8, 2]), random.Random(0)) == 6  # block


def test_a_node_budget_makes_each_move_depend_on_the_position_alone() -> None:
    """Issue 17, bug 12: with ``nodes_budget`` a search stops on its count, not the clock,
    and starts from an empty table, so what was searched before changes nothing."""
    positions = [State.replay("4x4k4", moves) for moves in ([], [5], [5, 6], [0, 5, 10])]
    fresh = [MinimaxStrategy(nodes_budget=3000).choose(p, random.Random(3)) for p in positions]
    used = MinimaxStrategy(nodes_budget=3000)
    for p in reversed(positions):  # another history: other entries in its table
        used.choose(p, random.Random(9))
    again = []
    for p in positions:
        again.append(used.choose(p, random.Random(3)))
        assert used.nodes <= 3000 + 8, "the count bounds the search"
    assert again == fresh


def test_a_tournament_turns_a_time_budget_into_a_node_budget() -> None:
    from bots.strategies.base import NODES_PER_MS, Noisy, RandomStrategy, reproducible

    mm = MinimaxStrategy(think_ms=50)
    reproducible(Noisy(mm, 0.1))
    assert mm.nodes_budget == 50 * NODES_PER_MS and mm.think_ms == 50
    own = MinimaxStrategy(nodes_budget=7)
    reproducible(own)
    assert own.nodes_budget == 7, "a budget of its own is kept"
    reproducible(RandomStrategy())  # nothing to do, no error
    named = bots.strategy("minimax", nodes_budget=500)  # --bot ...,strategy=minimax,nodes_budget=500
    assert isinstance(named, MinimaxStrategy) and named.nodes_budget == 500
    with pytest.raises(bots.strategies.base.StrategyError):
        MinimaxStrategy(nodes_budget=0)
