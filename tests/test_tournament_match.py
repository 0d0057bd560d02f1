"""`play_match`: whole tournaments in process, reproducible from a seed, forfeits for bad moves."""

from __future__ import annotations

import random

import pytest

from bots.tournament.director import Format, TournamentConfig
from bots.tournament.match import Strategy, game_rng, play_game, play_match
from bots.tournament.pairing import GameSpec, TournamentError
from bots.tournament.stats import Sprt, SprtDecision
from protocol.rules import Cell, Mark, State


class RandomMover:
    def choose(self, state: State, rng: random.Random) -> Cell:
        return rng.choice(state.legal_moves())


class Greedy:
    """Wins at once when it can, else blocks, else plays randomly (a small honest strategy)."""

    def choose(self, state: State, rng: random.Random) -> Cell:
        moves = state.legal_moves()
        for cell in moves:
            if state.play(cell).outcome is not None and state.play(cell).outcome.winner is state.to_move:  # type: ignore[union-attr]
                return cell
        return rng.choice(moves)


class Illegal:
    def choose(self, state: State, rng: random.Random) -> Cell:
        return state.variant.cells  # off the board


class Crasher:
    def choose(self, state: State, rng: random.Random) -> Cell:
        raise RuntimeError("boom")


def _config(players: tuple[str, ...], games_per_pair: int = 4, **kw: object) -> TournamentConfig:
    return TournamentConfig("tactic-toe", players, Format.ROUND_ROBIN, games_per_pair, 4, **kw)  # type: ignore[arg-type]


def test_same_seed_same_games_and_every_game_replays() -> None:
    strategies: dict[str, Strategy] = {"r1": RandomMover(), "r2": RandomMover(), "g": Greedy()}
    config = _config(("r1", "r2", "g"), openings=((), (4,)))
    a = play_match(config, strategies, seed=7)
    b = play_match(config, strategies, seed=7)
    c = play_match(config, strategies, seed=8)
    assert [(r.moves, r.result) for r in a.records] == [(r.moves, r.result) for r in b.records]
    assert [r.moves for r in a.records] != [r.moves for r in c.records]
    assert len(a.records) == 12 and a.done
    for r in a.records:
        assert r.moves[: len(r.spec.opening)] == r.spec.opening
        end = State.replay("tactic-toe", r.moves)
        assert end.outcome is not None and end.outcome.result == r.result
        assert str(end.outcome.termination) == r.reason
    assert a.standings.total_points() == 12


def test_a_game_depends_only_on_seed_number_and_colour() -> None:
    strategies = {"r1": RandomMover(), "r2": RandomMover()}
    director = play_match(_config(("r1", "r2"), 6), strategies, seed=3)
    fifth = director.records[4]
    alone = play_game(fifth.spec, "tactic-toe", RandomMover(), RandomMover(), seed=3)
    assert (alone.moves, alone.result) == (fifth.moves, fifth.result)
    assert game_rng(3, 5, Mark.X).random() == game_rng(3, 5, Mark.X).random()
    assert game_rng(3, 5, Mark.X).random() != game_rng(3, 5, Mark.O).random()


def test_greedy_beats_random_mostly() -> None:
    director = play_match(_config(("g", "r"), 40), {"g": Greedy(), "r": RandomMover()}, seed=1)
    g = director.standings.rows["g"]
    assert g.points > 30 and g.as_x == g.as_o == 20
    est = director.standings.estimate("g", "r")
    assert est.games == 40 and est.elo > 100 and est.los > 0.99


@pytest.mark.parametrize(("bad", "reason"), [(Illegal(), "illegal_move"), (Crasher(), "crash")])
def test_bad_bots_forfeit_and_the_tournament_goes_on(bad: object, reason: str) -> None:
    director = play_match(_config(("bad", "r"), 4), {"bad": bad, "r": RandomMover()}, seed=0)  # type: ignore[dict-item]
    assert len(director.records) == 4 and director.done
    assert all(r.reason == reason and r.points("bad") == 0 for r in director.records)
    assert director.standings.rows["bad"].forfeits == 4


def test_missing_strategy_is_refused() -> None:
    with pytest.raises(TournamentError, match="no strategy for b"):
        play_match(_config(("a", "b")), {"a": RandomMover()})


def test_opening_moves_are_played_first() -> None:
    spec = GameSpec(1, 1, 0, "a", "b", (4, 0, 8))
    record = play_game(spec, "classic", Greedy(), Greedy(), seed=0)
    assert record.moves[:3] == (4, 0, 8)


def test_resumed_match_plays_the_same_games_as_an_uninterrupted_one() -> None:
    strategies: dict[str, Strategy] = {"r1": RandomMover(), "r2": RandomMover(), "g": Greedy()}
    config = _config(("r1", "r2", "g"), 4)
    whole = play_match(config, strategies, seed=11)
    resumed = play_match(config, strategies, seed=11, done_records=whole.records[:5])
    assert [(r.spec, r.moves, r.result) for r in resumed.records] == [
        (r.spec, r.moves, r.result) for r in whole.records
    ]


def test_sprt_accepts_the_stronger_bot_quickly_on_tactic_toe() -> None:
    config = TournamentConfig(
        "tactic-toe", ("greedy", "random"), Format.SPRT, concurrency=2, sprt=Sprt(0, 100), max_games=2000
    )
    director = play_match(config, {"greedy": Greedy(), "random": RandomMover()}, seed=4)
    status = director.sprt_status
    assert status is not None and status.decision is SprtDecision.ACCEPT_H1
    assert status.llr >= status.upper and len(director.records) < 200
    # and the other way round: the weaker one is shown not to be 100 Elo stronger
    flipped = TournamentConfig(
        "tactic-toe", ("random", "greedy"), Format.SPRT, concurrency=2, sprt=Sprt(0, 100), max_games=2000
    )
    against = play_match(flipped, {"greedy": Greedy(), "random": RandomMover()}, seed=4).sprt_status
    assert against is not None and against.decision is SprtDecision.ACCEPT_H0
