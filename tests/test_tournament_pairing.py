"""Pairings: round-robin, gauntlet, Swiss rounds, colour-swapped pairs, opening suites."""

from __future__ import annotations

import functools
import itertools
from collections import Counter

import pytest

from bots.tournament.pairing import (
    Pairing,
    TournamentError,
    expand,
    gauntlet,
    opening_suite,
    parse_openings,
    read_opening_file,
    round_robin,
    swiss_round,
)
from protocol.errors import ArenaError, CellOccupied
from protocol.rules import State

NAMES = ["a", "b", "c", "d", "e", "f", "g"]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7])
def test_round_robin_meets_everyone_once_in_rounds(n: int) -> None:
    players = NAMES[:n]
    pairings = round_robin(players)
    met = Counter(frozenset((p.first, p.second)) for p in pairings)
    assert set(met) == {frozenset(c) for c in itertools.combinations(players, 2)}
    assert set(met.values()) == {1}
    rounds: dict[int, list[str]] = {}
    for p in pairings:
        rounds.setdefault(p.round, []).extend([p.first, p.second])
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    for seated in rounds.values():
        assert len(seated) == len(set(seated))  # nobody twice in a round


def test_gauntlet_meets_each_other_once() -> None:
    pairings = gauntlet("hero", ["a", "b", "c"])
    assert [{p.first, p.second} for p in pairings] == [{"hero", "a"}, {"hero", "b"}, {"hero", "c"}]


@pytest.mark.parametrize("players", [[], ["a"], ["a", "a"], ["a", ""]])
def test_bad_players_are_refused(players: list[str]) -> None:
    with pytest.raises(TournamentError):
        round_robin(players)


def test_expand_plays_colour_swapped_pairs_on_each_opening() -> None:
    openings = [(4,), (0,), (1,)]
    pairings = round_robin(["a", "b", "c", "d"])
    games = expand(pairings, 6, openings)
    assert [g.number for g in games] == list(range(1, 6 * 6 + 1))
    by_pair: dict[tuple[frozenset[str], int], list[tuple[str, str, tuple[int, ...]]]] = {}
    for g in games:
        by_pair.setdefault((frozenset(g.players), g.pair), []).append((g.x, g.o, g.opening))
    assert len(by_pair) == 6 * 3
    order = [frozenset((p.first, p.second)) for p in pairings]
    for (players, j), ((x1, o1, op1), (x2, o2, op2)) in by_pair.items():
        # pair j of the k-th pairing: opening (k + j) mod 3, so each pairing plays each once
        assert (x1, o1) == (o2, x2) and op1 == op2 == openings[(order.index(players) + j) % 3]
    colours: Counter[tuple[str, str]] = Counter()
    for g in games:
        colours[g.x, "x"] += 1
        colours[g.o, "o"] += 1
    assert all(colours[p, "x"] == colours[p, "o"] == 9 for p in "abcd")
    # interleaved: the first 12 games (pair 0) cover all 6 pairings
    assert {frozenset(g.players) for g in games[:12]} == {
        frozenset(c) for c in itertools.combinations("abcd", 2)
    }


@pytest.mark.parametrize("games_per_pair", [0, 1, 3])
def test_expand_refuses_odd_games_per_pair(games_per_pair: int) -> None:
    with pytest.raises(TournamentError, match="even"):
        expand([Pairing(1, "a", "b")], games_per_pair)


def test_swiss_round_pairs_neighbours_without_repeats() -> None:
    ranking = ["a", "b", "c", "d", "e"]
    met = {"a": {"b"}, "b": {"a"}, "c": set(), "d": set(), "e": set()}
    pairings, bye = swiss_round(ranking, met, {}, 2)
    # the lowest ranked gets the bye; a has met b, so a-c, then b-d
    assert bye == "e"
    assert [{p.first, p.second} for p in pairings] == [{"a", "c"}, {"b", "d"}]
    # e already had a bye: it goes to the next lowest
    _, bye = swiss_round(ranking, met, {"e": 1}, 2)
    assert bye == "d"


def test_swiss_round_backtracks_and_gives_up_cleanly() -> None:
    # a met b and c: the greedy a-? must take d, leaving b-c
    met = {"a": {"b", "c"}, "b": {"a"}, "c": {"a"}, "d": set()}
    pairings, bye = swiss_round(["a", "b", "c", "d"], met, {}, 3)
    assert bye is None and [{p.first, p.second} for p in pairings] == [{"a", "d"}, {"b", "c"}]
    # everyone has met everyone: a repeat as a last resort, the fewest repeats first
    everyone = {p: set("abcd") - {p} for p in "abcd"}
    pairings, _ = swiss_round(
        ["a", "b", "c", "d"], everyone, {}, 4, met_counts={("a", "b"): 2, ("b", "a"): 2}
    )
    assert len(pairings) == 2 and {"a", "b"} not in [{p.first, p.second} for p in pairings]


def test_openings_advance_per_pair_across_pairings() -> None:
    """Bug 8: with one pair per pairing and 4 openings, the suite still goes round."""
    openings = [(4,), (0,), (1,), (2,)]
    games = expand(round_robin(["a", "b", "c", "d"]), 2, openings)
    used = [g.opening for g in games]
    assert used[::2] == [openings[k % 4] for k in range(6)]
    assert all(used[i] == used[i + 1] for i in range(0, len(used), 2))  # a colour-swapped pair
    later = expand(round_robin(["a", "b"]), 2, openings, first_pairing=5)
    assert {g.opening for g in later} == {openings[1]}


def test_swiss_round_lets_the_less_often_first_start() -> None:
    pairings, _ = swiss_round(["a", "b"], {}, {}, 1, {"a": 2, "b": 1})
    assert (pairings[0].first, pairings[0].second) == ("b", "a")


@functools.cache
def _classic_value(key: int, x: int, o: int) -> int:
    """Negamax value of a classic position for the side to move (an independent little solver)."""
    state = _STATES[key]
    if state.is_over:
        return 0 if state.outcome is None or state.outcome.winner is None else -1
    best = -1
    for cell in state.legal_moves():
        child = state.play(cell)
        _STATES[child.key()] = child
        best = max(best, -_classic_value(child.key(), child.x, child.o))
    return best


_STATES: dict[int, State] = {}


def classic_value(state: State) -> int:
    _STATES[state.key()] = state
    return _classic_value(state.key(), state.x, state.o)


def test_opening_suite_is_distinct_balanced_and_reproducible() -> None:
    suite = opening_suite("classic", 8, value=classic_value)
    assert len(suite) == 8 and suite == opening_suite("classic", 8, value=classic_value)
    keys = {State.replay("classic", moves).canonical_key() for moves in suite}
    assert len(keys) == 8
    assert all(classic_value(State.replay("classic", m)) == 0 for m in suite)
    # two plies give 12 positions up to symmetry; of those, the balanced ones are kept
    two_ply = opening_suite("classic", 1, value=None, plies=2, balanced=False)
    assert len(two_ply[0]) == 2
    everything = opening_suite("classic", 12, plies=2, balanced=False)
    assert len({State.replay("classic", m).canonical_key() for m in everything}) == 12
    balanced = [m for m in everything if classic_value(State.replay("classic", m)) == 0]
    assert opening_suite("classic", len(balanced), value=classic_value, plies=2) == balanced
    assert len(balanced) < 12  # some two-ply positions are lost for O, and were left out


def test_opening_suite_refuses_what_it_cannot_give() -> None:
    with pytest.raises(TournamentError, match="solved"):
        opening_suite("classic", 3)
    with pytest.raises(TournamentError, match="fewer than"):
        opening_suite("classic", 4, plies=1, balanced=False)
    with pytest.raises(TournamentError):
        opening_suite("classic", 0, balanced=False)


def test_parse_openings() -> None:
    assert parse_openings("4,0 4,1;8", "classic") == [(4, 0), (4, 1), (8,)]
    with pytest.raises(CellOccupied):
        parse_openings("4,4", "classic")
    with pytest.raises(TournamentError, match="commas"):
        parse_openings("4,x", "classic")
    with pytest.raises(TournamentError, match="ends"):
        parse_openings("0,3,1,4,2", "classic")
    with pytest.raises(TournamentError):
        parse_openings("  ", "classic")


@pytest.mark.parametrize(
    ("colours", "expected"),
    [
        ("swap", [("a", "b"), ("b", "a")]),
        ("reverse", [("b", "a"), ("a", "b")]),
        ("noswap", [("a", "b"), ("a", "b")]),
    ],
)
def test_pair_colours_swap_reverse_noswap(colours: str, expected: list[tuple[str, str]]) -> None:
    games = expand([Pairing(1, "a", "b")], 4, colours=colours)
    assert [(g.x, g.o) for g in games] == expected * 2
    with pytest.raises(TournamentError):
        expand([Pairing(1, "a", "b")], 2, colours="sideways")


def test_opening_file_order_start_and_plies() -> None:
    text = "# a suite\n4,0,8\n\n0 4  # the corner\n1,4\n2\n"
    assert read_opening_file(text, "classic") == [(4, 0, 8), (0, 4), (1, 4), (2,)]
    assert read_opening_file(text, "classic", start=2, plies=1) == [(0,), (1,), (2,)]
    shuffled = read_opening_file(text, "classic", order="random", seed=3)
    assert sorted(shuffled) == sorted(read_opening_file(text, "classic"))
    assert shuffled == read_opening_file(text, "classic", order="random", seed=3)
    for bad in ({"start": 5}, {"plies": 0}, {"order": "backwards"}):
        with pytest.raises(TournamentError):
            read_opening_file(text, "classic", **bad)  # type: ignore[arg-type]
    with pytest.raises(ArenaError):
        read_opening_file("4,4\n", "classic")  # illegal: checked like --opening-moves
