"""Tournaments with the real strategies of `bots.strategy` (issue 3); skipped until the registry exists.

What the tournament issue asks of them: perfect bots never lose on classic (in process
and through the server), `table` beats `random` on tactic-toe in at least 99% of games,
and an SPRT accepts "table is stronger than random" on tactic-toe quickly.
"""

from __future__ import annotations

import importlib

import pytest

from bots.tournament.cli import load_strategy
from bots.tournament.director import Format, TournamentConfig
from bots.tournament.match import play_match
from bots.tournament.runner import NetworkRunner
from bots.tournament.stats import Sprt, SprtDecision

pytestmark = pytest.mark.skipif(
    getattr(importlib.import_module("bots"), "strategy", None) is None,
    reason="needs the strategy registry bots.strategy (issue 3)",
)

PERFECT = ("rule", "table")


def test_perfect_bots_never_lose_on_classic_in_process() -> None:
    players = ("rule", "table", "heuristic", "random")
    config = TournamentConfig("classic", players, Format.ROUND_ROBIN, 20, 8, openings=((), (4,), (0,), (1,)))
    director = play_match(config, {p: load_strategy(p) for p in players}, seed=5)
    for record in director.records:
        for perfect in PERFECT:
            if perfect in record.spec.players:
                assert record.points(perfect) > 0, record


async def test_perfect_bots_never_lose_on_classic_through_the_server() -> None:
    players = ("rule", "table", "random")
    config = TournamentConfig("classic", players, Format.ROUND_ROBIN, 6, 6)
    director = await NetworkRunner(config, {p: p for p in players}, seed=6).run()
    assert len(director.records) == 18
    for record in director.records:
        for perfect in PERFECT:
            if perfect in record.spec.players:
                assert record.points(perfect) > 0, record


def test_table_beats_random_on_tactic_toe_in_99_percent_of_games() -> None:
    config = TournamentConfig("tactic-toe", ("table", "random"), Format.ROUND_ROBIN, 200, 8)
    director = play_match(config, {p: load_strategy(p) for p in config.players}, seed=7)
    assert director.standings.rows["table"].wins >= 0.99 * 200


def test_sprt_accepts_table_stronger_than_random_on_tactic_toe_quickly() -> None:
    sprt = Sprt(elo0=0, elo1=200)
    config = TournamentConfig("tactic-toe", ("table", "random"), Format.SPRT, concurrency=2, sprt=sprt)
    director = play_match(config, {p: load_strategy(p) for p in config.players}, seed=8)
    assert director.sprt_status is not None and director.sprt_status.decision is SprtDecision.ACCEPT_H1
    assert len(director.records) <= 60


async def test_strategies_without_state_or_clock_replay_the_same_games_everywhere() -> None:
    """Issue 17, bug 12 (what is reproducible, docs/tournaments.md): the registry's
    stateless strategies, noise included, play the same games through the server as in
    process with the same seed."""
    players = ("rule", "heuristic", "table", "noisy")
    config = TournamentConfig("tactic-toe", players, Format.ROUND_ROBIN, 4, 6, openings=((), (4,), (1,)))
    entries = {"rule": "rule", "heuristic": "heuristic", "table": "table", "noisy": "rule"}
    runner = NetworkRunner(config, entries, seed=9, entry_args={"noisy": ("--noise", "0.3")})
    network = await runner.run()
    strategies = {name: load_strategy(s, 0.3 if name == "noisy" else 0.0) for name, s in entries.items()}
    local = play_match(config, strategies, seed=9)
    assert len(local.records) == 24
    assert [
        (r.spec.number, r.moves, r.result) for r in sorted(network.records, key=lambda r: r.spec.number)
    ] == [(r.spec.number, r.moves, r.result) for r in local.records]
