"""The `gomoku` C core (`bots/strategies/_gomoku_core.c`) against the Python strategy it
ports: the same move, reason, nodes, depth and score on the same positions and budgets
(budgets small enough to run out at every step, and the lost games' positions where the
defences, the checks and the proof cells decide), the same games move for move with the
tables kept between moves, the same threat searches; and what a caller can do wrong to it
changes nothing and crashes nothing."""

from __future__ import annotations

import os
import random
import threading
import time

import pytest
from test_bots_gomoku import LOST_AS_O, LOST_AS_O_2, LOST_AS_O_3, LOST_AS_O_4, LOST_AS_O_5

import bots
from bots import StrategyError
from bots.strategies.gomoku import GomokuStrategy
from bots.strategies.gomoku_core import CoreGomoku, available, board, engine
from protocol.rules import State, find_variant

# CI installs a compiler, so there the core must have been built; elsewhere it may not be.
pytestmark = pytest.mark.skipif(
    not available() and not os.environ.get("CI"), reason="the gomoku C core was not built (no C compiler)"
)

NO_CLOCK = 600_000  # ms: the node budgets stop the searches, never the clock


def _scattered(variant: str, count: int, seed: int) -> list[State]:
    """``count`` positions of 2 to 30 random stones near the centre (no game over)."""
    v = find_variant(variant)
    rng = random.Random(seed)
    out: list[State] = []
    while len(out) < count:
        s = State.start(variant)
        for _ in range(rng.randrange(2, 31)):
            near = [
                c
                for c in s.legal_moves()
                if abs(c // v.cols - v.rows // 2) <= 4 and abs(c % v.cols - v.cols // 2) <= 4
            ]
            s = s.play(rng.choice(near))
            if s.outcome is not None:
                break
        if s.outcome is None:
            out.append(s)
    return out


def _choice(player: GomokuStrategy, state: State, seed: int) -> tuple[object, ...]:
    move = player.choose(state, random.Random(seed))
    return move, player.reason, player.nodes, player.scored, player.reached, player.value


@pytest.mark.parametrize("budget", [7, 60, 500, 4_000, 30_000])
def test_the_core_chooses_as_the_python_strategy_node_for_node(budget: int) -> None:
    for i, s in enumerate(_scattered("15x15k5", 25, budget)):
        python = _choice(GomokuStrategy(NO_CLOCK, budget), s, i)
        assert _choice(CoreGomoku(NO_CLOCK, budget), s, i) == python, (i, s.moves)


@pytest.mark.parametrize(
    ("moves", "budget"),
    [(LOST_AS_O[:15], 123_480), (LOST_AS_O[:24], 50_000), (LOST_AS_O_2, 60_000), (LOST_AS_O_3, 60_000),
     (LOST_AS_O_4, 60_000), (LOST_AS_O_5, 60_000), ([112, 98, 113, 114, 82, 130, 97, 67, 111], 112_000)],
)  # fmt: skip
def test_the_core_decides_the_lost_games_positions_as_the_python_strategy(
    moves: list[int], budget: int
) -> None:
    # where the defences, the VCT checks at every depth and the proof's cells decide
    s = State.replay("15x15k5", moves)
    python = _choice(GomokuStrategy(NO_CLOCK, budget), s, 0)
    assert python[1] in ("defence", "search", "vct", "vcf")
    assert _choice(CoreGomoku(NO_CLOCK, budget), s, 0) == python


@pytest.mark.parametrize(
    ("variant", "budget"), [("15x15k5", 2_000), ("9x9k4", 3_000), ("10x12k5", 2_500), ("15x15k4", 1_500)]
)
def test_a_game_between_cores_is_the_game_between_python_strategies(variant: str, budget: int) -> None:
    """Whole games, each side keeping its tables (alpha-beta, refuted VCFs and VCTs) from
    move to move: every move and every node count the same."""
    games = []
    for make in (GomokuStrategy, CoreGomoku):
        sides = [make(NO_CLOCK, budget), make(NO_CLOCK, budget)]
        s, rng, record = State.start(variant), random.Random(f"{variant}/game"), []
        while s.outcome is None:
            player = sides[int(s.to_move)]
            move = player.choose(s, rng)
            record.append((move, player.reason, player.nodes, player.reached, player.value))
            s = s.play(move)
        games.append((record, s.outcome))
    assert games[1] == games[0]
    assert len(games[0][0]) > 8


def test_the_core_on_other_boards_chooses_as_the_python_strategy() -> None:
    for variant in ("9x9k4", "10x12k5", "15x15k4", "7x7k4"):
        for i, s in enumerate(_scattered(variant, 8, 3)):
            python = _choice(GomokuStrategy(NO_CLOCK, 3_000), s, i)
            assert _choice(CoreGomoku(NO_CLOCK, 3_000), s, i) == python, (variant, i)


def test_threat_win_is_the_python_strategys() -> None:
    cases = [(LOST_AS_O[:24], 0, 3, 200_000, -1), (LOST_AS_O[:24], 0, 3, 5, -1),
             (LOST_AS_O[:24], 1, 2, 200_000, -1), (LOST_AS_O_5, 0, 6, 300_000, 157),
             (LOST_AS_O_5, 0, 6, 300_000, 95),
             (LOST_AS_O_3, 0, 6, 300_000, 114), (LOST_AS_O_4, 0, 4, 100_000, -1)]  # fmt: skip
    seen = set()
    for moves, side, depth, nodes, after in cases:
        s = State.replay("15x15k5", moves)
        python, core = GomokuStrategy(), CoreGomoku()
        found = python.threat_win(s, side, depth, nodes, after)
        assert core.threat_win(s, side, depth, nodes, after) == found
        assert core.nodes == python.nodes
        seen.add(found[0] is not None)
    assert seen == {True, False}
    with pytest.raises(StrategyError, match="gomoku plays"):
        CoreGomoku().threat_win(State.start("classic"), 0, 2, 1_000)


def test_bots_strategy_plays_on_the_core_where_it_was_built() -> None:
    made = bots.strategy("gomoku", think_ms=50)
    assert isinstance(made, CoreGomoku)
    for variant in ("classic", "tactic-toe", "3x3k3"):
        with pytest.raises(StrategyError) as refused:
            made.choose(State.start(variant), random.Random(0))
        assert str(refused.value) == GomokuStrategy().refusal(variant)


def test_on_the_clock_the_core_lets_other_threads_run() -> None:
    """With no node budget the core searches until its time is up, without the GIL: a
    Python thread beside it keeps counting (holding the GIL, it could not)."""
    s = _scattered("15x15k5", 1, 11)[0]
    player = CoreGomoku(think_ms=300)
    counted, searching = [0], threading.Event()

    def count() -> None:
        while not searching.is_set():
            time.sleep(0)
        while searching.is_set():
            counted[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    searching.set()
    before = counted[0]
    move = player.choose(s, random.Random(0))
    during = counted[0] - before
    searching.clear()
    counter.join()
    assert s.is_legal(move)
    assert player.nodes > 1_000 and player.reason == "search"
    assert during > 1_000, during


def test_what_a_caller_gets_wrong_is_refused_and_changes_nothing() -> None:
    v = find_variant("15x15k5")
    core = engine(v)
    s = State.replay("15x15k5", LOST_AS_O_4)
    stones = board(s)
    for bad in (b"", stones[:-1], stones + b"\0", b"\3" * v.cells, "x" * v.cells):
        with pytest.raises(ValueError):
            core.decide(bad, 0, 100, 1_000, random.Random(0).shuffle)
    with pytest.raises(ValueError, match="side"):
        core.decide(stones, 2, 100, 1_000, random.Random(0).shuffle)
    with pytest.raises(ValueError, match="full"):
        core.decide(b"\1\2" * (v.cells // 2) + b"\1", 0, 100, 1_000, random.Random(0).shuffle)
    taken = s.moves[0]
    for side, depth, after, what in (
        (2, 3, -1, "side"),
        (0, 10, -1, "depth"),
        (0, -1, -1, "depth"),
        (0, 3, taken, "after"),
        (0, 3, v.cells, "after"),
        (0, 3, -2, "after"),
    ):
        with pytest.raises(ValueError, match=what):
            core.threat_win(stones, side, depth, 1_000, after, True)
    with pytest.raises(RuntimeError, match="made once"):
        core.__init__(5, 15, 15, [], [], [], [], [], [])
    unmade = type(core).__new__(type(core))  # __init__ never called
    with pytest.raises(RuntimeError, match="not made"):
        unmade.decide(b"", 0, 100, 1_000, random.Random(0).shuffle)
    with pytest.raises(RuntimeError, match="not made"):
        unmade.threat_win(b"", 0, 3, 1_000, -1, True)

    def failing(moves: list[int]) -> None:
        raise KeyError("the rng broke")

    def shrinking(moves: list[int]) -> None:
        moves.pop()

    def reentering(moves: list[int]) -> None:
        core.decide(stones, 0, 100, 1_000, random.Random(0).shuffle)

    twin = engine(v)  # the same calls, the shuffles that fail aside
    for shuffle, error in ((failing, KeyError), (shrinking, ValueError), (reentering, RuntimeError)):
        with pytest.raises(error):
            core.decide(stones, 0, 100, 1_000, shuffle)
        with pytest.raises(KeyError):
            twin.decide(stones, 0, 100, 1_000, failing)
    # free again (not left searching), and it chooses as the twin does
    got = core.decide(stones, 0, NO_CLOCK, 5_000, random.Random(1).shuffle)
    assert got == twin.decide(stones, 0, NO_CLOCK, 5_000, random.Random(1).shuffle)
    assert s.is_legal(got[0]) and got[2] > 0
