"""The sans-I/O director: games out as results come in, within the concurrency; standings add up."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable

import pytest

from bots.tournament.director import Director, Format, TournamentConfig
from bots.tournament.pairing import GameSpec, TournamentError
from bots.tournament.standings import GameRecord
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


def test_swiss_stops_early_when_no_new_pairing_exists() -> None:
    d = Director(TournamentConfig("classic", ("a", "b", "c", "d"), Format.SWISS, 2, 4, rounds=5))
    drive(d, strongest_wins)
    assert d.round == 4 and d.ended_early is not None and "repeat" in d.ended_early
    assert len(d.records) == 12  # the 3 full rounds


def test_sprt_match_stops_when_decided() -> None:
    config = TournamentConfig(
        "classic", ("a", "b"), Format.SPRT, concurrency=4, sprt=Sprt(0, 50), max_games=1000
    )
    d = Director(config)
    games = drive(d, strongest_wins)
    assert d.sprt_status is not None and d.sprt_status.decision is SprtDecision.ACCEPT_H1
    # about 22 won pairs pass the bound; at most concurrency-1 games started past the decision
    assert 40 <= len(games) <= 60
    pairs = Counter(g.pair for g in games)
    assert all(c == 2 for p, c in pairs.items() if p < max(pairs))


def test_sprt_match_respects_max_games() -> None:
    config = TournamentConfig(
        "classic", ("a", "b"), Format.SPRT, concurrency=2, sprt=Sprt(0, 50), max_games=6
    )
    d = Director(config)
    games = drive(d, lambda g: "1/2-1/2")
    assert len(games) == 6 and d.sprt_status is not None
    assert d.sprt_status.decision is SprtDecision.CONTINUE


def test_resume_continues_to_the_same_result() -> None:
    config = TournamentConfig("classic", ("a", "b", "c", "d", "e"), Format.SWISS, 4, 3, rounds=3)
    whole = Director(config)
    drive(whole, strongest_wins)
    # a director that saw the first 9 records (JSON round trip) picks up from there
    saved = [GameRecord.from_json(json.loads(json.dumps(r.to_json()))) for r in whole.records[:9]]
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
    stranger = GameRecord(GameSpec(7, 1, 0, "a", "b"), "1-0", "line")
    with pytest.raises(TournamentError):
        Director.resume(config, [stranger])
    wrong = GameRecord(GameSpec(1, 1, 0, "b", "a", (4,)), "1-0", "line")
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
