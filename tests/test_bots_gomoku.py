"""The `gomoku` strategy: it wins, blocks and forces where it must, is reproducible from a
seed, and plays only legal moves on every board it takes."""

from __future__ import annotations

import random

import pytest

import bots
from bots import StrategyError
from bots.strategies.base import passed
from bots.strategies.gomoku import GomokuStrategy
from protocol.rules import Mark, State


def _board(rows: list[str], to_move: Mark) -> State:
    """A 15x15 position drawn as text (``X``, ``O``, ``.``), rows from the top; only the
    rows given are drawn, the rest are empty."""
    x = o = 0
    for r, row in enumerate(rows):
        for c, mark in enumerate(row.replace(" ", "")):
            if mark == "X":
                x |= 1 << (r * 15 + c)
            elif mark == "O":
                o |= 1 << (r * 15 + c)
    state = State.start("15x15k5", draw_rules=False)
    return State(state.variant, x, o, ((), ()), to_move, 0, (), None, None, False)


def _winning_cells(state: State, mark: Mark) -> set[int]:
    """Cells where ``mark`` makes five now (through the rules, not the strategy's board)."""
    s = state if state.to_move == mark else passed(state)
    return {c for c in s.legal_moves() if (w := s._play_unchecked(c)).outcome and w.outcome.winner == mark}


def _vcf_by_rules(state: State, depth: int) -> bool:
    """Whether the side to move wins by fours within ``depth`` of its moves: a plain
    search through `State` (independent of the strategy's window counts)."""
    me = state.to_move
    for c in state.legal_moves():
        after = state._play_unchecked(c)
        if after.outcome is not None:
            return True
        wins = _winning_cells(after, me)
        if len(wins) >= 2:
            return True
        forced = len(wins) == 1 and depth > 1 and not _winning_cells(after, me.other)
        if forced and _vcf_by_rules(after._play_unchecked(wins.pop()), depth - 1):
            return True
    return False


EMPTY = "." * 15
# X to move: no five, no double four now, but a VCF: (7,8) or (10,8) makes a four, O's
# forced block, then the other makes two fours at once (row and column 8).
VCF_ROWS = [EMPTY] * 6 + [
    "........O......",
    "....OXXX.......",
    "........X......",
    "........X......",
    "....OXXX.......",
] + [EMPTY] * 4  # fmt: skip


def test_finds_five_in_a_row_in_any_shape() -> None:
    rng = random.Random(1)
    for rows, cell in (
        ([EMPTY] * 7 + ["....XXXX.......", "...OOO........."], (7, 3)),  # either end: both win
        ([EMPTY] * 7 + ["...OXX.XX......", "....OOO........"], (7, 6)),  # the gap
        (
            [EMPTY] * 3
            + ["...X...........", "....X..........", ".....X.........", "......X........", "....OOO........"],
            (2, 2),
        ),  # a diagonal
    ):
        s = _board(rows, Mark.X)
        move = GomokuStrategy(think_ms=200).choose(s, rng)
        outcome = s._play_unchecked(move).outcome
        assert outcome is not None and outcome.winner == Mark.X, (move, cell)


def test_blocks_a_four() -> None:
    # O has four in a row, one end blocked: X must take the other end (X has no five).
    s = _board([EMPTY] * 6 + ["...XOOOO.......", "....XX.........", "......X........"], Mark.X)
    player = GomokuStrategy(think_ms=200)
    assert player.choose(s, random.Random(2)) == 6 * 15 + 8 and player.reason == "block"


def test_stops_an_open_three() -> None:
    # O has an open three (.OOO.): unless X stops it, O makes an open four next move.
    s = _board([EMPTY] * 7 + ["....OOO........", ".....XX........", "..........X...."], Mark.X)
    move = GomokuStrategy(think_ms=300).choose(s, random.Random(3))
    after = s._play_unchecked(move)
    for reply in after.legal_moves():
        assert len(_winning_cells(after._play_unchecked(reply), Mark.O)) < 2, (move, reply)


def test_wins_a_vcf_position_against_every_block() -> None:
    s = _board(VCF_ROWS, Mark.X)
    assert not _winning_cells(s, Mark.X) and not _winning_cells(s, Mark.O)
    # and no move that makes two winning cells at once: the win takes fours in a row
    assert all(len(_winning_cells(s._play_unchecked(c), Mark.X)) < 2 for c in s.legal_moves())
    assert _vcf_by_rules(s, 2)
    player = GomokuStrategy(think_ms=500)
    rng = random.Random(4)
    move = player.choose(s, rng)
    assert player.reason == "vcf"
    for _ in range(4):  # the attacker's moves: four, four-four, five
        s = s._play_unchecked(move)
        if s.outcome is not None:
            break
        threats = _winning_cells(s, Mark.X)
        assert threats, "every move of a VCF makes a four"
        s = s._play_unchecked(min(threats))  # O blocks (one of them, if two)
        move = player.choose(s, rng)
    assert s.outcome is not None and s.outcome.winner == Mark.X


def test_same_seed_same_game_on_a_node_budget() -> None:
    def game(seed: int) -> tuple[int, ...]:
        rng = random.Random(seed)
        a, b = (bots.strategy("gomoku", nodes_budget=1500, think_ms=600_000) for _ in "ab")
        s = State.replay("15x15k5", [112, 113])
        while not s.is_over and s.ply < 24:
            s = s.play((a if s.ply % 2 == 0 else b).choose(s, rng))
        return s.moves

    first = game(5)
    assert first == game(5)
    assert len(first) > 12


BOARDS = ["15x15k5", "9x9k5", "7x7k6", "6x7k4", "5x5k4", "4x4k4", "3x12k5", "12x3k4"]


@pytest.mark.parametrize("variant", BOARDS)
def test_legal_to_the_end_on_every_board_it_takes(variant: str) -> None:
    player = bots.strategy("gomoku", nodes_budget=400)
    assert player.refusal(variant) is None  # type: ignore[attr-defined]
    opponent = bots.strategy("random")
    rng = random.Random(variant)
    for first in (0, 1):
        s = State.start(variant)
        while not s.is_over:
            mover = player if s.ply % 2 == first else opponent
            cell = mover.choose(s, rng)
            assert s.is_legal(cell), (variant, s.moves, cell)
            s = s.play(cell)


@pytest.mark.parametrize("variant", ["classic", "tactic-toe", "4x4k3", "15x15k3"])
def test_refuses_what_it_does_not_play_before_a_move(variant: str) -> None:
    player = GomokuStrategy()
    why = player.refusal(variant)
    assert why is not None and variant in why
    with pytest.raises(StrategyError, match="gomoku plays"):
        player.choose(State.start(variant), random.Random(0))


def test_bad_options_are_refused() -> None:
    with pytest.raises(StrategyError):
        bots.strategy("gomoku", depth=3)
    with pytest.raises(StrategyError):
        bots.strategy("gomoku", nodes_budget=0)


def test_stops_a_win_by_fours_it_sees_coming() -> None:
    # O to move. X threatens a four-three at (7,7): the four along row 7 forces O's block
    # at (7,8), then column 7 (8,7), (9,7) becomes an open four. O must spoil it now.
    rows = [
        "O.............O",
        EMPTY, EMPTY, EMPTY, EMPTY, EMPTY, EMPTY,
        "...OXXX........",
        ".......X.......",
        ".......X.......",
    ] + [EMPTY] * 4 + ["O.............."]  # fmt: skip
    s = _board(rows, Mark.O)
    assert _vcf_by_rules(passed(s), 2)
    player = GomokuStrategy(think_ms=600_000, nodes_budget=20_000)
    move = player.choose(s, random.Random(6))
    assert player.reason == "defence"
    assert not _vcf_by_rules(s._play_unchecked(move), 3), move


def test_keeps_what_it_learnt_between_moves_and_stays_reproducible() -> None:
    s = State.replay("15x15k5", [112, 113, 128, 144, 96])
    first = GomokuStrategy(think_ms=600_000, nodes_budget=3_000)
    move = first.choose(s, random.Random(1))
    assert first._table  # the transposition table outlives the move
    again = first.choose(s, random.Random(1))
    assert s.is_legal(again)
    fresh = GomokuStrategy(think_ms=600_000, nodes_budget=3_000)
    assert fresh.choose(s, random.Random(1)) == move


# A game `minimax` won as X (bench/strength.py, issue 18): plies 0-14 lead to the
# position where O had one move left, plies 15-23 to the one where X wins by threats.
LOST_AS_O = [112, 113, 98, 97, 126, 84, 81, 129, 145, 114, 99, 115, 96, 111, 80,
             128, 79, 78, 83, 82, 64, 48, 94, 109]  # fmt: skip


def test_a_four_in_reply_does_not_refute_a_win_by_threats() -> None:
    # X to move: (4,6) makes an open three on the anti-diagonal (6,4)-(4,6) beside the
    # half-open threes of column 4 and column 6; O's only other resource is a four on
    # row 7, which X blocks at (7,11) or (7,12) before going on. The VCT took that four
    # for a refutation and saw no win.
    s = State.replay("15x15k5", LOST_AS_O[:24])
    player = GomokuStrategy(think_ms=600_000, nodes_budget=50_000)
    player.choose(s, random.Random(0))
    assert player.reason in ("vcf", "vct"), player.reason


def test_out_of_time_it_plays_the_defence_not_shown_to_lose() -> None:
    # O to move: X wins by fours after every move but (8,8) and (4,4). After (8,8), the
    # alpha-beta favourite, X wins by threats 4 moves deep (the VCT check shows it); the
    # time ran out while (4,4) was being checked, and the favourite was played anyway.
    s = State.replay("15x15k5", LOST_AS_O[:15])
    player = GomokuStrategy(think_ms=600_000, nodes_budget=123_480)
    assert player.choose(s, random.Random(0)) == 64
    assert player.reason == "defence"


def test_blocks_the_end_of_an_open_three_that_leaves_no_deeper_win_by_threats() -> None:
    # O to move; X's open three (9,8)-(9,10) must be blocked at (9,7) or (9,11). After
    # (9,7), the alpha-beta favourite, X wins by threats five moves deep (from (9,11));
    # after (9,11) it has none. The VCT check looked four deep only, and too slowly.
    opening = [112, 111, 126, 127, 98, 140, 143, 95, 79, 110, 125, 109, 128, 113, 144, 160, 145]
    s = State.replay("15x15k5", opening)
    player = GomokuStrategy(think_ms=600_000, nodes_budget=107_000)
    assert player.choose(s, random.Random(0)) == 146


def test_a_four_that_only_delays_is_not_taken_for_a_defence() -> None:
    # O to move; X wins by threats after (9,11) (146), a four of O's on the diagonal
    # (6,8)-(8,10): X blocks at (10,12) and goes on. Checked as a root move, the four was
    # "safe" (X, facing a four, had no VCT) and, being the alpha-beta favourite, played.
    # (4,5) (65) holds out four moves deep (X wins five deep after every move here), and
    # so do some of the cells X's win after (9,11) is made of, checked next, such as (5,6).
    s = State.replay("15x15k5", [112, 98, 113, 114, 82, 130, 97, 67, 111])
    player = GomokuStrategy(think_ms=600_000, nodes_budget=112_000)
    player.choose(s, random.Random(0))  # sets up the strategy's board for the position
    player._deadline, player._limit = float("inf"), 1 << 62
    chosen = player._no_vct_after(1, [146, 65])
    assert chosen != 146
    player._vct_until = (float("inf"), 1 << 62)
    assert player._vct_after(1, 146, 4, {}) is not None
    assert player._vct_after(1, chosen, 4, {}) is None


def test_a_tournament_gives_it_a_node_budget_at_its_own_speed() -> None:
    """`ttt tournament` turns ``think_ms`` into a node budget; gomoku searches about 30 times
    as many positions a millisecond as minimax, so the budget follows its own rate (at
    minimax's it got a twentieth of its time: the strength bench caught it)."""
    from bots.strategies.base import NODES_PER_MS, reproducible

    bot = GomokuStrategy(think_ms=50)
    reproducible(bot)
    assert bot.nodes_budget == 50 * GomokuStrategy.nodes_per_ms > 10 * 50 * NODES_PER_MS


def test_defences_to_a_three_are_the_cells_that_stop_its_double() -> None:
    # X's open three on row 7 (7,5)-(7,7): the cells that stop X's next move making two
    # winning cells are its ends and the cells one further. X's three on row 2, blocked
    # by O at (2,2), and the lone pair on row 12 make no double: their windows' empty
    # cells are no defence (the VCT tried them all, and ran out of nodes).
    rows = [EMPTY, EMPTY, "..OXXX.........", EMPTY, EMPTY, EMPTY, EMPTY, ".....XXX.......",
            EMPTY, EMPTY, EMPTY, EMPTY, "..........XX..."]  # fmt: skip
    s = _board(rows, Mark.O)
    player = GomokuStrategy(think_ms=600_000, nodes_budget=10)
    player.choose(s, random.Random(0))  # sets up the strategy's board
    assert player._double_guards(0)[0] == {7 * 15 + c for c in (3, 4, 8, 9)}
    assert player._double_guards(1)[0] == set()


# A game `minimax` won as X: O's move 19 came after these; (7,10) (115) holds four
# threats deep but X wins five deep after it; after (11,7) (172) X wins four deep.
LOST_AS_O_2 = [112, 143, 113, 98, 114, 111, 127, 141, 142, 97, 128, 100, 96, 144, 125, 126, 156, 170, 99]


def _ready(moves: list[int]) -> GomokuStrategy:
    """A player with its board set up for the position after ``moves`` and no limit left."""
    player = GomokuStrategy(think_ms=600_000, nodes_budget=1000)
    player.choose(State.replay("15x15k5", moves), random.Random(0))
    player.nodes, player._deadline, player._limit = 0, float("inf"), 1 << 62
    player._vct_until = (float("inf"), 1 << 62)
    return player


def test_out_of_time_it_plays_the_move_that_held_not_one_never_checked() -> None:
    # The alpha-beta favourite (7,10) passes the check four deep and fails it five deep;
    # the time ran out while the next, (11,7), was being checked, and (11,7) was played:
    # not shown to lose, but never checked four deep, where X wins after it.
    checked = _ready(LOST_AS_O_2)
    failed: dict[int, int] = {}
    assert checked._vct_after(1, 172, 4, {}) is not None
    checked.nodes = 0
    assert checked._vct_after(1, 115, 4, failed) is None
    assert checked._vct_after(1, 115, 5, failed) is not None
    player = _ready(LOST_AS_O_2)
    player._limit = checked.nodes + 300  # both checks of (7,10), and a little of the next
    assert player._no_vct_after(1, [115, 172]) == 115


def test_the_checks_try_first_the_threat_the_other_side_has_with_a_free_move() -> None:
    # Scattered stones: X has no win by threats even with a move in hand.
    rows = [EMPTY] * 5 + ["...X......O....", EMPTY, ".....X.O.......", EMPTY, "..O.....X......"]
    player = GomokuStrategy(think_ms=600_000, nodes_budget=5_000)
    player.choose(_board(rows, Mark.O), random.Random(0))
    player.nodes, player._deadline, player._limit = 0, float("inf"), 100_000
    assert player._tempo_threat(1) == -1
    # X's open three on row 7: with a free move X makes an open four at either end.
    player.choose(_board([EMPTY] * 7 + ["....XXX...O....", "......O..O....."], Mark.O), random.Random(0))
    player.nodes, player._deadline, player._limit = 0, float("inf"), 100_000
    assert player._tempo_threat(1) in (7 * 15 + 3, 7 * 15 + 7)
    player.nodes, player._limit = 0, 3  # out of nodes: nothing to try first
    assert player._tempo_threat(1) == -1


# A game `minimax` won as X (bench/strength.py --fixed-openings --seed 3, game 6): O to
# move after these, X threatening a win by fours.
LOST_AS_O_3 = [112, 127, 128, 113, 96, 144, 141, 64, 156, 126, 142]


def test_the_checks_go_deeper_while_time_is_left() -> None:
    # O's defences: (7,9) (114) and (11,5) (170); after either, X has no win by threats
    # five deep. After (7,9) X wins six deep (from (11,5)); after (11,5) it has none six
    # deep. The checks stopped at five with a third of the budget left, and (7,9) was
    # played.
    checked = _ready(LOST_AS_O_3)
    assert checked._vct_after(1, 114, 5, {}) is None
    assert checked._vct_after(1, 114, 6, {}) is not None
    assert checked._vct_after(1, 170, 6, {}) is None
    player = GomokuStrategy(think_ms=600_000, nodes_budget=60_000)
    assert player.choose(State.replay("15x15k5", LOST_AS_O_3), random.Random(0)) == 170
    assert player.reason == "defence"


def test_a_win_by_threats_cut_short_is_not_remembered_as_none() -> None:
    # X to move after (7,9): X wins by threats six deep. Searched with too few nodes the
    # search finds nothing, and must not record the position as one where X has none:
    # what is recorded is kept from move to move and the next search would believe it.
    player = _ready([*LOST_AS_O_3, 114])
    assert player._lines is not None
    here = player._lines.hash
    failed: dict[int, int] = {}
    player._vct_until = (float("inf"), 100)
    assert player._vct(0, 6, failed) is None
    assert here not in failed
    player._vct_until = (float("inf"), 1 << 62)
    assert player._vct(0, 6, failed) is not None


# A game `minimax` won as X (bench/strength.py --seed 21 --openings 16, game 12); X to move.
LOST_AS_O_4 = [112, 96, 82, 126, 97, 127, 81, 125]


def test_a_threat_search_settles_a_position_in_few_nodes() -> None:
    # X has no win by threats four deep here. Searched in full, the proof took 29,895
    # nodes: a three at the last level (it cannot win there: the block leaves no level),
    # each four at the last level of a VCF made and blocked to find no double four, and
    # the defences tried in cell order. With those read from the windows, and the
    # defence that refuted a sibling's threat tried first, it takes under a third.
    player = _ready(LOST_AS_O_4)
    assert player._vct(0, 4, {}) is None
    assert player.nodes < 10_000, player.nodes
    # the same answers as before where X does win: after (7,6) (111) five deep
    player = _ready([*LOST_AS_O_4, 128, 111])
    assert player._vct(0, 5, {}) is not None


def test_the_last_level_of_a_vcf_reads_the_double_four_from_the_windows() -> None:
    # X's fours: (1,4) or (1,5) on row 1, each blocked at the other; (7,4) makes a four
    # on row 7 and one on column 4 at once: two winning cells, the win. Read from the
    # windows, the double four costs one node; made and blocked in cell order, the two
    # fours on row 1 came first (two nodes each).
    rows = [EMPTY, "OXXX...........", EMPTY, "....O..........", "....X..........", "....X..........",
            "....X..........", "OXXX...........", EMPTY]  # fmt: skip
    player = _ready([])
    player.choose(_board(rows, Mark.O), random.Random(0))
    player.nodes, player._deadline, player._limit = 0, float("inf"), 1 << 62
    assert player._vcf(0, 1) == 7 * 15 + 4
    assert player.nodes == 1
    # without the double four nothing wins at the last level, and nothing is made
    player._lines.pop(4 * 15 + 4)
    player.nodes = 0
    assert player._vcf(0, 1) is None
    assert player.nodes == 0


# A game `minimax` won as X (bench/strength.py --seed 21 --openings 16, game 20): O to move.
LOST_AS_O_5 = [112, 81, 142, 125, 127, 97, 111, 113, 129]


def test_it_takes_the_cell_the_other_sides_win_is_made_of() -> None:
    # X, were it to move, wins by threats from (10,7) (157) or from (6,5) (95); of the
    # cells near stones only (6,5) was shown to leave X no win by threats six deep (one
    # was left unsettled at 30,000 nodes; O's fours only delay). The checks went down the
    # moves by gain, and (10,7), the block of X's
    # three on column 7, was played: X won from (6,5). Now, after a check finds X's win,
    # the cells that win was made of are checked next.
    checked = _ready(LOST_AS_O_5)
    assert checked._vct_after(1, 157, 6, {}) is not None
    assert checked._vct_after(1, 95, 6, {}) is None
    player = GomokuStrategy(think_ms=600_000, nodes_budget=60_000)
    assert player.choose(State.replay("15x15k5", LOST_AS_O_5), random.Random(0)) == 95


def test_threat_win_finds_a_win_by_threats_for_either_side_and_says_when_it_ran_out() -> None:
    # The position of test_a_four_in_reply_does_not_refute_a_win_by_threats, X to move.
    s = State.replay("15x15k5", LOST_AS_O[:24])
    found, complete = GomokuStrategy().threat_win(s, 0, 3, 200_000)
    assert found is not None and complete and s.is_legal(found)
    assert GomokuStrategy().threat_win(s, 0, 3, 5) == (None, False)
    # O, were it to move instead, has no such win: a search that ended says so
    assert GomokuStrategy().threat_win(s, 1, 2, 200_000) == (None, True)
    with pytest.raises(StrategyError, match="gomoku plays"):
        GomokuStrategy().threat_win(State.start("classic"), 0, 2, 1_000)
