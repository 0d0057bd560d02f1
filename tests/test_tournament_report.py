"""The files a tournament writes, and the `ttt tournament` argument handling."""

from __future__ import annotations

import argparse
import csv
import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bots.tournament.cli import build_config, parse_entries, planned_games
from bots.tournament.director import Director, Format, TournamentConfig
from bots.tournament.match import play_match
from bots.tournament.pairing import TournamentError
from bots.tournament.report import crosstable_svg, matchup_lines, write_outputs
from bots.tournament.stats import Sprt
from protocol.rules import Cell, State


class RandomMover:
    def choose(self, state: State, rng: random.Random) -> Cell:
        return rng.choice(state.legal_moves())


def test_outputs_are_consistent_and_replayable(tmp_path: Path) -> None:
    config = TournamentConfig("classic", ("a", "b", "c"), Format.ROUND_ROBIN, 4, 2, openings=((4,), (0,)))
    director = play_match(config, {p: RandomMover() for p in "abc"}, seed=5)
    paths = write_outputs(tmp_path / "out", director, {"seed": 5})
    names = ["standings.json", "crosstable.csv", "games.jsonl", "crosstable.svg", "games.pgn"]
    assert [p.name for p in paths] == names
    summary = json.loads(paths[0].read_text())
    assert summary["seed"] == 5 and summary["games"] == 12
    assert sum(r["points"] for r in summary["standings"]) == 12
    assert {(mu["player"], mu["opponent"]) for mu in summary["matchups"]} == {
        ("a", "b"),
        ("a", "c"),
        ("b", "c"),
    }
    games = [json.loads(line) for line in paths[2].read_text().splitlines()]
    assert [g["number"] for g in games] == list(range(1, 13))
    for g in games:
        end = State.replay(g["variant"], g["moves"])
        assert (
            end.outcome is not None and end.outcome.result == g["result"] and g["moves"][:1] == g["opening"]
        )
    rows = list(csv.reader(paths[1].open()))
    assert rows[0][0] == "player" and len(rows) == 4
    # a player's row against b holds a's points over b's: the two cells add up to the games
    header = rows[0]
    for row in rows[1:]:
        for j, cell in enumerate(row[1:4], 1):
            if cell:
                other = next(r for r in rows[1:] if r[0] == header[j])
                mine, n = cell.split("/")
                theirs, _ = other[header.index(row[0])].split("/")
                assert float(mine) + float(theirs) == float(n) == 4
    svg = ET.fromstring(paths[3].read_text())
    assert svg.tag.endswith("svg") and "a" in paths[3].read_text()
    assert any("Elo difference" in line for line in matchup_lines(director))


def test_svg_escapes_names() -> None:
    director = Director(TournamentConfig("classic", ("<x>", "b&c"), games_per_pair=2))
    text = crosstable_svg(director.standings)
    ET.fromstring(text)  # well-formed despite the names
    assert "&lt;x&gt;" in text


def test_parse_entries() -> None:
    assert parse_entries("rule,random,random,fast=minimax") == {
        "rule": "rule",
        "random": "random",
        "random-2": "random",
        "fast": "minimax",
    }
    with pytest.raises(TournamentError):
        parse_entries("rule")
    with pytest.raises(TournamentError):
        parse_entries("a=rule,a=random")


def _args(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = {
        "variant": "classic",
        "format": "round-robin",
        "games_per_pair": 10,
        "concurrency": 8,
        "opening_moves": None,
        "openings": None,
        "rounds": None,
        "sprt": None,
        "alpha": 0.05,
        "beta": 0.05,
        "max_games": 500,
    }
    base.update(kw)
    return argparse.Namespace(**base)


def test_build_config_and_planned_games() -> None:
    config = build_config(_args(opening_moves="4 0"), ("a", "b", "c", "d"))
    assert config.openings == ((4,), (0,)) and planned_games(config) == 60
    sprt = build_config(_args(format="sprt", sprt="0,20"), ("a", "b"))
    assert sprt.sprt == Sprt(0, 20) and planned_games(sprt) == 500
    swiss = build_config(_args(format="swiss", rounds=3, games_per_pair=2), ("a", "b", "c", "d", "e"))
    assert planned_games(swiss) == 3 * 2 * 2
    with pytest.raises(TournamentError):
        build_config(_args(format="sprt", sprt="20,0"), ("a", "b"))
    with pytest.raises(TournamentError):
        build_config(_args(games_per_pair=3), ("a", "b"))
    with pytest.raises(TournamentError):
        build_config(_args(format="sprt"), ("a", "b", "c"))


def test_bad_tournament_requests_get_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from protocol.cli import main

    bad = [
        (["--bots", "a=nosuch:X,b=nosuch:Y"], "no strategy 'nosuch:X'"),
        (["--bots", "a=json:dumps,b=json:loads"], "could not be made"),
        (["--bots", "a=json:JSONDecoder,b=json:loads"], "no choose(state, rng)"),
        (["--bots", "a=json:dumps,b=json:loads", "--games-per-pair", "3", "--in-process"], "even"),
        (["--bots", "a=json:dumps,b=json:loads", "--variant", "9x9k12"], "unknown_variant"),
        (["--bots", "a=json:dumps,b=json:loads", "--resume", "--out", str(tmp_path)], "--resume needs"),
    ]
    for args, message in bad:
        assert main(["tournament", "--quiet", *args]) == 2
        assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_svg_has_a_title_full_names_wdl_elo_byes_and_a_legend() -> None:
    long = "a-remarkably-long-engine-name-v2"
    players = (long, "b", "c")
    config = TournamentConfig("classic", players, Format.SWISS, 2, 2, rounds=2)
    director = play_match(config, {p: RandomMover() for p in players}, seed=3)
    text = crosstable_svg(director.standings, title="classic swiss: 4 games")
    root = ET.fromstring(text)
    words = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "classic swiss: 4 games" in words and words.count(long) >= 1  # whole, not cut
    row = director.standings.rows[long]
    assert f"{row.wins}/{row.draws}/{row.losses}" in words
    assert any(w.startswith("Elo") for w in words) and any("±" in w or w == "n/a" for w in words)
    assert "byes" in words and sum(r.byes for r in director.standings.rows.values()) == 2
    assert any("lost all" in w for w in words) and any("won all" in w for w in words)  # the legend
    # no two header labels overlap: each name's column is at least as wide as its label
    width = int(root.get("width", "0"))
    assert width >= 8 * len(long)
