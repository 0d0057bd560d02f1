"""The sans-I/O director: games out as results come in, within the concurrency; standings add up."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from collections.abc import Callable

import pytest

from bots.tournament.director import Director, Format, TournamentConfig
from bots.tournament.pairing import GameSpec, TournamentError
from bots.tournament.standings import PlayedGame
from bots.tournament.stats import Sprt, SprtDecision

Referee = Callable[[GameSpec], str]


def strongest_wins(spec: GameSpec) -> str:
    """The player whose name sorts first wins; equal names cannot meet."""
    return "1-0" if spec.x < spec.o else "0-1"


def drive(director: Director, referee: Referee, pick: Callable[[list[int]], int] = min) -> list[GameSpec]:
    """Finish running games one by one (``pick`` chooses which); every game started, in order."""
    started = director.start()
    seen = list(started)
    while director.running:
        assert len(director.running) <= director.config.concurrency
        number = pick(sorted(director.running))
        spec = director.running[number]
        new = director.finished(number, referee(spec), "line")
        seen.extend(new)
    assert director.done
    return seen


@pytest.mark.parametrize("concurrency", [1, 3, 50])
def test_round_robin_plays_every_game_once_and_points_add_up(concurrency: int) -> None:
    config = TournamentConfig("classic", ("a", "b", "c", "d"), Format.ROUND_ROBIN, 4, concurrency)
    d = Director(config)
    games = drive(d, strongest_wins, pick=max)
    assert sorted(g.number for g in games) == list(range(1, 6 * 4 + 1))
    assert len(d.records) == 24
    rows = {r.name: r for r in d.standings.ranked()}
    assert [r.name for r in d.standings.ranked()] == ["a", "b", "c", "d"]
    assert (rows["a"].points, rows["b"].points, rows["c"].points, rows["d"].points) == (12, 8, 4, 0)
    assert d.standings.total_points() == 24
    assert all(r.as_x == r.as_o == 6 for r in rows.values())
    # every pairing's games form complete colour-swapped pairs
    assert d.standings.pentanomial("a", "b").counts == (0, 0, 0, 0, 2)
    assert d.standings.pentanomial("d", "a").counts == (2, 0, 0, 0, 0)
    assert d.standings.crosstable_rows()[1] == ["a", "", "4/4", "4/4", "4/4", "12", "12"]
    json.dumps(d.standings.to_json())  # serialisable


def test_finished_refuses_unknown_games_and_changes_nothing() -> None:
    d = Director(TournamentConfig("classic", ("a", "b"), games_per_pair=2, concurrency=1))
    (first,) = d.start()
    with pytest.raises(TournamentError):
        d.finished(99, "1-0", "line")
    with pytest.raises(ValueError):
        d.finished(first.number, "2-0", "line")
    assert d.running == {first.number: first} and d.records == []
    d.finished(first.number, "1/2-1/2", "full_board")
    with pytest.raises(TournamentError):
        d.finished(first.number, "1-0", "line")
    assert len(d.records) == 1
    with pytest.raises(TournamentError):
        d.start()


@pytest.mark.parametrize(
    "config",
    [
        {"players": ("a",)},
        {"players": ("a", "b"), "games_per_pair": 3},
        {"players": ("a", "b"), "concurrency": 0},
        {"players": ("a", "b", "c"), "format": Format.SPRT, "sprt": Sprt(0, 10)},
        {"players": ("a", "b"), "format": Format.SPRT},
    ],
)
def test_bad_configs_are_refused(config: dict[str, object]) -> None:
    with pytest.raises(TournamentError):
        TournamentConfig("classic", **config)  # type: ignore[arg-type]


def test_gauntlet_only_involves_the_hero() -> None:
    d = Director(TournamentConfig("classic", ("z", "a", "b", "c"), Format.GAUNTLET, 2, 2))
    games = drive(d, strongest_wins)
    assert all("z" in g.players for g in games) and len(games) == 6
    assert d.standings.rows["z"].points == 0


def test_swiss_pairs_by_score_without_repeats_and_gives_byes() -> None:
    players = ("a", "b", "c", "d", "e")
    d = Director(TournamentConfig("classic", players, Format.SWISS, 2, concurrency=8, rounds=4))
    finished_rounds: set[int] = set()
    started = d.start()
    all_games = list(started)
    while d.running:
        running_rounds = {g.round for g in d.running.values()}
        assert len(running_rounds) == 1  # a round starts only when the last one is over
        assert not running_rounds & finished_rounds
        spec = d.running[min(d.running)]
        new = d.finished(spec.number, strongest_wins(spec), "line")
        if new and new[0].round != spec.round:
            finished_rounds.add(spec.round)
        all_games.extend(new)
    meetings = Counter(frozenset(g.players) for g in all_games)
    assert set(meetings.values()) == {2}  # each pairing once: one colour-swapped pair
    assert d.round == 4
    byes = {r.name: r.byes for r in d.standings.ranked()}
    assert sum(byes.values()) == 4 and max(byes.values()) == 1
    # points: 2 per pairing played + 1 per bye (half a round of 2 games)
    assert d.standings.total_points() == 2 * len(meetings) + 4
    # after round 1 (a-? pairs by seed), the leaders meet: round 2 pairs the 2-point players
    assert d.standings.ranked()[0].name == "a"


def test_swiss_repeats_a_pairing_only_as_a_last_resort() -> None:
    d = Director(TournamentConfig("classic", ("a", "b", "c", "d"), Format.SWISS, 2, 4, rounds=5))
    games = drive(d, strongest_wins)
    assert d.round == 5 and d.ended_early is None and len(d.records) == 20
    meetings = Counter(frozenset(g.players) for g in games)
    first_three = Counter(frozenset(g.players) for g in games[:12])
    assert set(first_three.values()) == {2}  # no repeat while a new pairing exists
    assert max(meetings.values()) == 4  # then each pairing at most twice


@pytest.mark.parametrize("n", [4, 5, 6, 7, 8, 10])
def test_swiss_plays_its_default_rounds(n: int) -> None:
    """Bug 10: 6 entries stopped after 3 of 4 rounds (round 4 could not be paired)."""
    players = tuple("abcdefghij"[:n])
    for seed in range(30):
        rng = random.Random(seed)  # results at random: some score groups cannot pair without a repeat
        d = Director(TournamentConfig("classic", players, Format.SWISS, 2, 8))
        drive(d, lambda g, rng=rng: rng.choice(["1-0", "0-1", "1/2-1/2"]))  # type: ignore[misc]
        assert d.ended_early is None and d.round == d.swiss_rounds
        assert len(d.records) == d.swiss_rounds * (n // 2) * 2


def test_swiss_reports_buchholz_and_sonneborn_berger() -> None:
    d = Director(TournamentConfig("classic", ("a", "b", "c", "d"), Format.SWISS, 2, 8, rounds=3))
    drive(d, strongest_wins)
    rows = {r["name"]: r for r in d.standings.to_json()["standings"]}
    points = {name: row["points"] for name, row in rows.items()}
    for name, row in rows.items():
        opponents = [b for (a, b) in d.standings.cross if a == name]
        assert row["buchholz"] == sum(points[o] for o in opponents)
        assert row["sonneborn_berger"] == sum(
            d.standings.cross[name, o].points * points[o] for o in opponents
        )


def test_sprt_match_stops_when_decided() -> None:
    config = TournamentConfig(
        "classic", ("a", "b"), Format.SPRT, concurrency=4, sprt=Sprt(0, 50), max_games=1000
    )
    d = Director(config)
    games = drive(d, strongest_wins)
    assert d.sprt_status is not None and d.sprt_status.decision is SprtDecision.ACCEPT_H1
    # about 22 won pairs pass the bound; the games still running then are not counted
    assert 40 <= len(d.records) <= 50 and len(games) > len(d.records)
    assert d.sprt_decided_at == len(d.records) and d.called_off and not d.running and d.done
    pairs = Counter(r.spec.pair for r in d.records)
    assert list(pairs.values()).count(1) <= 1  # at most a pair whose partner was called off
    assert d.standings.to_json()["matchups"][0]["model"] == "pentanomial"


def test_sprt_match_respects_max_games() -> None:
    config = TournamentConfig(
        "classic", ("a", "b"), Format.SPRT, concurrency=2, sprt=Sprt(0, 50), max_games=6
    )
    d = Director(config)
    games = drive(d, lambda g: "1/2-1/2")
    assert len(games) == 6 and d.sprt_status is not None
    assert d.sprt_status.decision is SprtDecision.CONTINUE


def test_sprt_max_games_counts_whole_pairs() -> None:
    """Bug 11: --max-games 5 played 6."""
    config = TournamentConfig(
        "classic", ("a", "b"), Format.SPRT, concurrency=8, sprt=Sprt(0, 50), max_games=5
    )
    d = Director(config)
    drive(d, lambda g: "1/2-1/2")
    assert len(d.records) == 4


def test_resume_continues_to_the_same_result() -> None:
    config = TournamentConfig("classic", ("a", "b", "c", "d", "e"), Format.SWISS, 4, 3, rounds=3)
    whole = Director(config)
    drive(whole, strongest_wins)
    # a director that saw the first 9 records (JSON round trip) picks up from there
    saved = [PlayedGame.from_json(json.loads(json.dumps(r.to_json()))) for r in whole.records[:9]]
    resumed, to_start = Director.resume(config, saved)
    assert to_start and len(to_start) <= config.concurrency
    assert all(g.number not in {r.spec.number for r in saved} for g in to_start)
    seen = list(to_start)
    while resumed.running:
        spec = resumed.running[min(resumed.running)]
        seen.extend(resumed.finished(spec.number, strongest_wins(spec), "line"))
    assert [r.to_json() for r in resumed.standings.ranked()] == [
        r.to_json() for r in whole.standings.ranked()
    ]
    assert len(resumed.records) == len(whole.records)


def test_resume_refuses_records_of_another_tournament() -> None:
    config = TournamentConfig("classic", ("a", "b"), games_per_pair=2)
    stranger = PlayedGame(GameSpec(7, 1, 0, "a", "b"), "1-0", "line")
    with pytest.raises(TournamentError):
        Director.resume(config, [stranger])
    wrong = PlayedGame(GameSpec(1, 1, 0, "b", "a", (4,)), "1-0", "line")
    with pytest.raises(TournamentError):
        Director.resume(config, [wrong])


def test_forfeits_are_counted() -> None:
    d = Director(TournamentConfig("classic", ("a", "b"), games_per_pair=2, concurrency=2))
    g1, g2 = d.start()
    d.finished(g1.number, "0-1", "abandoned")
    d.finished(g2.number, "1/2-1/2", "full_board")
    assert d.standings.rows[g1.x].forfeits == 1 and d.standings.rows[g1.o].forfeits == 0
    assert list(itertools.chain(d.standings.pentanomial("a", "b").counts)) in (
        [0, 1, 0, 0, 0],
        [0, 0, 0, 1, 0],
    )


def test_sprt_pairs_follow_the_colour_option() -> None:
    for colours, first_x in (("swap", ["a", "b"]), ("reverse", ["b", "a"]), ("noswap", ["a", "a"])):
        config = TournamentConfig(
            "classic", ("a", "b"), Format.SPRT, concurrency=2, sprt=Sprt(0, 50), max_games=4, colours=colours
        )
        d = Director(config)
        drive(d, lambda g: "1/2-1/2")
        assert [r.spec.x for r in d.records[:2]] == first_x


def test_knockout_bracket_seeds_byes_and_champion() -> None:
    from bots.tournament.knockout import TIEBREAK_PAIRS, bracket_order

    assert bracket_order(8) == [1, 8, 4, 5, 2, 7, 3, 6] and bracket_order(2) == [1, 2]
    players = ("a", "b", "c", "d", "e")  # seeds 1..5: a, b and c have a bye in round 1
    d = Director(TournamentConfig("classic", players, Format.KNOCKOUT, 2, 4))
    games = drive(d, strongest_wins)
    assert d.bracket is not None and d.bracket.champion == "a" and d.round == 3
    assert len(games) == 4 * 2  # n - 1 matches of 2 games
    assert [{g.x, g.o} for g in games[:2]] == [{"d", "e"}] * 2  # round 1: the only match
    final = [m for m in d.bracket.matches if m.round == 3]
    assert len(final) == 1 and {final[0].first, final[0].second} == {"a", "b"}
    # every match drawn: tie-break pairs, then the higher seed goes through
    drawn = Director(TournamentConfig("classic", players, Format.KNOCKOUT, 2, 4))
    games = drive(drawn, lambda g: "1/2-1/2")
    assert drawn.bracket is not None and drawn.bracket.champion == "a"
    assert len(games) == 4 * (2 + 2 * TIEBREAK_PAIRS)
    assert all(m.tiebreak_pairs == TIEBREAK_PAIRS for m in drawn.bracket.matches)
    pairs = Counter((r.spec.round, frozenset(r.spec.players), r.spec.pair) for r in drawn.records)
    assert set(pairs.values()) == {2}  # tie-break games are whole pairs of their own


def test_knockout_resumes_to_the_same_bracket() -> None:
    config = TournamentConfig("classic", ("a", "b", "c", "d"), Format.KNOCKOUT, 2, 2)
    whole = Director(config)
    drive(whole, lambda g: "1/2-1/2" if g.round == 1 else strongest_wins(g))
    resumed, _ = Director.resume(config, whole.records[:5])
    while resumed.running:
        spec = resumed.running[min(resumed.running)]
        resumed.finished(spec.number, "1/2-1/2" if spec.round == 1 else strongest_wins(spec), "line")
    assert resumed.bracket is not None and whole.bracket is not None
    assert resumed.bracket.to_json() == whole.bracket.to_json()
