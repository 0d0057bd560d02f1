"""`ttt tournament` and `ttt bot` from the command line (in process): openings, resume,
journals, SPRT flags, strategies that cannot play a variant, custom strategies, hostile
names and the figures' formatting (issue 17)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from bots.tournament.cli import load_strategy
from bots.tournament.director import Director, Format, TournamentConfig
from bots.tournament.match import play_match
from bots.tournament.report import matchup_lines, standings_table, write_standings
from bots.tournament.standings import Standings
from bots.tournament.stats import EloEstimate, Trinomial, elo_estimate
from protocol.cli import main
from protocol.rules import State

TESTS = Path(__file__).parent
RANDOM = "tournament_strategies:RandomMover"
GREEDY = "tournament_strategies:Greedy"
#: The ``ttt`` script (unlike ``python -m``, it puts no current directory on ``sys.path``).
TTT = str(Path(sys.executable).parent / "ttt")


@pytest.fixture(autouse=True)
def strategies_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["tournament", "--in-process", "--quiet", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _games(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]


# --- bug 1: --openings N --------------------------------------------------------------------


def test_openings_n_starts_from_n_balanced_positions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from bots.solver import solve

    code, _, err = _run(
        capsys, "--bots", f"a={GREEDY},b={RANDOM}", "--openings", "3", "--games-per-pair", "6",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 0, err
    openings = {tuple(g["opening"]) for g in _games(tmp_path)}  # type: ignore[arg-type]
    assert len(openings) == 3 and all(openings)
    table = solve("classic")
    assert all(table.value(State.replay("classic", o)) == 0 for o in openings)


# --- bug 2: --resume checks its flags ----------------------------------------------------------


def test_resume_refuses_changed_flags_and_names_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = [
        "--bots",
        f"a={GREEDY},b={RANDOM}",
        "--games-per-pair",
        "4",
        "--seed",
        "3",
        "--out",
        str(tmp_path),
    ]
    assert _run(capsys, *base)[0] == 0
    journal = (tmp_path / "games.jsonl").read_text().splitlines()
    (tmp_path / "games.jsonl").write_text("\n".join(journal[:2]) + "\n")
    for changed, flag in [
        (["--variant", "tactic-toe"], "--variant"),
        (["--seed", "4"], "--seed"),
        (["--games-per-pair", "6"], "--games-per-pair"),
    ]:
        code, _, err = _run(capsys, *base, *changed, "--resume")
        assert code == 2 and flag in err, err
    other = [f"a={GREEDY},c={RANDOM}" if a == f"a={GREEDY},b={RANDOM}" else a for a in base]
    code, _, err = _run(capsys, *other, "--resume")
    assert code == 2 and "--bots" in err
    # the journal was left alone, and the same flags resume it
    assert (tmp_path / "games.jsonl").read_text().splitlines() == journal[:2]
    code, _, err = _run(capsys, *base, "--resume")
    assert code == 0, err
    assert [g["moves"] for g in _games(tmp_path)] == [json.loads(line)["moves"] for line in journal]
    settings = json.loads((tmp_path / "standings.json").read_text())["settings"]
    assert settings["seed"] == 3 and settings["games_per_pair"] == 4 and settings["variant"] == "classic"


# --- bug 3: a torn last line ------------------------------------------------------------------


def test_a_torn_last_line_is_dropped_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = ["--bots", f"a={GREEDY},b={RANDOM}", "--games-per-pair", "4", "--out", str(tmp_path)]
    assert _run(capsys, *base)[0] == 0
    journal = (tmp_path / "games.jsonl").read_text().splitlines()
    (tmp_path / "games.jsonl").write_text("\n".join(journal[:2]) + "\n" + journal[2][:17])
    code, _, err = _run(capsys, *base, "--resume")
    assert code == 0, err
    assert "torn" in err
    assert [g["moves"] for g in _games(tmp_path)] == [json.loads(line)["moves"] for line in journal]


# --- bug 7: SPRT bounds below zero --------------------------------------------------------------


def test_sprt_bounds_take_negative_numbers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(
        capsys, "--bots", f"a={GREEDY},b={RANDOM}", "--format", "sprt", "--elo0", "-10", "--elo1", "10",
        "--alpha", "0.1", "--beta", "0.1", "--max-games", "40", "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 0, err
    sprt = json.loads((tmp_path / "standings.json").read_text())["sprt"]
    assert (sprt["elo0"], sprt["elo1"], sprt["alpha"], sprt["beta"]) == (-10, 10, 0.1, 0.1)
    assert sprt["model"] == "logistic"


# --- bug 9: a strategy that cannot play the variant --------------------------------------------


def test_a_strategy_that_cannot_play_the_variant_is_refused_before_any_game(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for mode in (["--in-process"], []):
        code = main(["tournament", "--quiet", *mode, "--bots", "table,random", "--variant", "5x5k4",
                     "--out", str(tmp_path)])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2 and "table" in err and "5x5k4" in err, err
        assert list(tmp_path.iterdir()) == []


# --- bug 13: custom strategies ----------------------------------------------------------------


MYMOD = """
import random
from protocol.rules import Cell, State

class MyStrategy:
    def choose(self, state: State, rng: random.Random) -> Cell:
        return min(state.legal_moves())
"""


def test_a_custom_strategy_loads_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mymod_t17.py").write_text(MYMOD)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [TTT, "tournament", "--in-process", "--quiet",  # the script: no current directory on sys.path
         "--bots", "a=mymod_t17:MyStrategy,b=mymod_t17:MyStrategy", "--games-per-pair", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(tmp_path)
    assert load_strategy("mymod_t17:MyStrategy").choose(State.start("classic"), None) == 0  # type: ignore[arg-type]
    # a bad name in `ttt bot` is the strategy's error, not a tournament's
    bad = subprocess.run(
        [TTT, "bot", "--server", "ws://127.0.0.1:9", "--strategy", "nosuch_t17:X"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "[bad_strategy]" in bad.stderr and "bad_tournament" not in bad.stderr


# --- bug 17: hostile names --------------------------------------------------------------------


HOSTILE = ("[/]tour", "[link=https://example.com]x[/link]", "+cmd|' /C calc'!A0", "=1+1", "@SUM(A1)", "\tx")


def _hostile_director() -> Director:
    config = TournamentConfig("classic", HOSTILE, Format.ROUND_ROBIN, 2, 4)
    from tournament_strategies import RandomMover

    return play_match(config, {p: RandomMover() for p in HOSTILE}, seed=1)


def test_hostile_names_are_plain_text_on_the_terminal() -> None:
    director = _hostile_director()
    console = Console(file=io.StringIO(), record=True, width=300, force_terminal=True)
    console.print(standings_table(director))
    for line in matchup_lines(director):
        console.print(line, markup=False)  # as the command prints them
    text = console.export_text()
    assert "[/]tour" in text and "[link=https://example.com]x[/link]" in text
    assert "\x1b]8;" not in console.file.getvalue()  # type: ignore[attr-defined]  # no terminal hyperlink


def test_hostile_names_cannot_run_in_a_spreadsheet(tmp_path: Path) -> None:
    director = _hostile_director()
    write_standings(tmp_path, director, {})
    rows = list(csv.reader((tmp_path / "crosstable.csv").open(encoding="utf-8")))
    cells = [cell for row in rows for cell in row]
    assert not any(cell[:1] in ("=", "+", "-", "@", "\t", "\r") for cell in cells if cell)
    assert "'+cmd|' /C calc'!A0" in cells and "'=1+1" in cells


def test_hostile_names_through_the_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bots = f"[/]tour={RANDOM},b={RANDOM}"
    code = main(
        ["tournament", "--in-process", "--bots", bots, "--games-per-pair", "2", "--out", str(tmp_path)]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "[/]tour" in out and (tmp_path / "crosstable.svg").exists()


# --- bug 18: which model, and how the figures print -------------------------------------------


def test_standings_name_the_model_of_each_matchup() -> None:
    s = Standings(("a", "b"))
    from bots.tournament.pairing import GameSpec
    from bots.tournament.standings import PlayedGame

    s.add(PlayedGame(GameSpec(1, 1, 0, "a", "b"), "1-0", "line"))
    s.add(PlayedGame(GameSpec(2, 1, 0, "b", "a"), "1/2-1/2", "full_board"))
    assert s.to_json()["matchups"][0]["model"] == "pentanomial"
    s.add(PlayedGame(GameSpec(3, 1, 1, "a", "b"), "1-0", "line"))  # half a pair: still pairs
    assert s.to_json()["matchups"][0]["model"] == "pentanomial"
    alone = Standings(("a", "b"))
    alone.add(PlayedGame(GameSpec(1, 1, 0, "a", "b"), "1-0", "line"))
    assert alone.to_json()["matchups"][0]["model"] == "trinomial"


def test_figures_print_without_minus_zero_or_infinity() -> None:
    even = elo_estimate(Trinomial(1, 0, 1))
    assert even.elo == 0.0 and "-0.0" not in str(EloEstimate(2, 0.5, -0.0, 100.0, 0.5, 0.0))
    unbounded = elo_estimate(Trinomial(3, 1, 0))
    assert unbounded.error95 == float("inf") and "inf" not in str(unbounded)
    assert "unbounded" in str(unbounded)


def test_write_standings_keeps_the_summary(tmp_path: Path) -> None:
    director = Director(TournamentConfig("classic", ("a", "b")))
    write_standings(tmp_path, director, {"x": 1})
    assert json.loads((tmp_path / "standings.json").read_text()) == {"x": 1}


# --- PGN ----------------------------------------------------------------------------------------

_TAG = re.compile(r'^\[([A-Za-z0-9_]+) "((?:[^"\\]|\\.)*)"\]$')
_ROSTER = ["Event", "Site", "Date", "Round", "White", "Black", "Result"]


def read_pgn(text: str) -> list[tuple[dict[str, str], list[str]]]:
    """A strict reader of export-format PGN: tag pairs (the seven-tag roster first, in
    order), one blank line, movetext ending in the result, one blank line; comments in
    braces. Returns each game's tags and its move tokens."""
    games = []
    lines = text.split("\n")
    i = 0
    while i < len(lines) and lines[i]:
        tags: dict[str, str] = {}
        while lines[i]:
            found = _TAG.match(lines[i])
            assert found, f"not a tag pair: {lines[i]!r}"
            tags[found[1]] = re.sub(r"\\(.)", r"\1", found[2])
            i += 1
        assert list(tags)[:7] == _ROSTER
        i += 1
        movetext = []
        while lines[i]:
            assert len(lines[i]) < 80
            movetext.append(lines[i])
            i += 1
        i += 1
        body = re.sub(r"\{[^}]*\}", " ", " ".join(movetext)).split()
        assert body[-1] == tags["Result"] in ("1-0", "0-1", "1/2-1/2")
        moves = [t for t in body[:-1] if not re.fullmatch(r"\d+\.", t)]
        assert all(re.fullmatch(r"[a-o]\d{1,2}", m) for m in moves), moves
        games.append((tags, moves))
    assert i >= len(lines) - 1
    return games


def test_games_pgn_is_read_back_by_a_strict_reader(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bots = f'a"q\\uote={GREEDY},b={RANDOM}'
    code, _, err = _run(
        capsys, "--bots", bots, "--games-per-pair", "4", "--opening-moves", "4", "--out", str(tmp_path)
    )
    assert code == 0, err
    games = read_pgn((tmp_path / "games.pgn").read_text(encoding="utf-8"))
    journal = _games(tmp_path)
    assert len(games) == len(journal) == 4
    for (tags, moves), g in zip(games, journal, strict=True):
        assert (tags["White"], tags["Black"], tags["Result"]) == (g["x"], g["o"], g["result"])
        assert (
            tags["Variant"] == "classic" and tags["TimeControl"] == "-" and tags["Round"] == str(g["number"])
        )
        assert re.fullmatch(r"\d{4}\.\d\d\.\d\d", tags["Date"]) and tags["PlyCount"] == str(len(moves))
        cells = [(int(m[1:]) - 1) * 3 + "abc".index(m[0]) for m in moves]
        assert cells == g["moves"] and moves[0] == "b2"
    assert {t["White"] for t, _ in games} == {'a"q\\uote', "b"}


def test_the_worked_strategy_example_in_the_docs_plays(tmp_path: Path) -> None:
    """Bug 13: docs/tournaments.md's worked example runs as written, from its own folder."""
    doc = (TESTS.parent / "docs" / "tournaments.md").read_text(encoding="utf-8")
    source = doc.split("Save this as `corners.py`", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "corners.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [TTT, "tournament", "--in-process", "--quiet", "--bots", "c=corners:Corners,rule,random",
               "--games-per-pair", "2", "--bot", "name=e,strategy=corners:Corners,prefer=edges"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "c " in done.stdout and "e " in done.stdout


def test_progress_in_a_pipe_is_a_line_per_game_and_a_report_every_n(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p),
    }
    bots = f"a={GREEDY},b={RANDOM},c={RANDOM}"
    command = [sys.executable, "-m", "protocol.cli", "tournament", "--in-process", "--bots", bots,
               "--games-per-pair", "2", "--rating-interval", "4"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    finished = [i for i, line in enumerate(lines) if line.startswith("Finished game ")]
    assert len(finished) == 6
    assert re.fullmatch(
        r"Finished game \d+ \(\w vs \w\): (1-0|0-1|1/2-1/2) \{\w+\} \[1 done\]", lines[finished[0]]
    )
    # a report after the 4th game: the table and an Elo line per matchup played (2 of 3 so far)
    report = lines[finished[3] + 1 : finished[4]]
    assert any("points" in line for line in report) and sum("Elo difference" in line for line in report) == 2


def test_opening_file_and_colours_from_the_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    suite = tmp_path / "suite.txt"
    suite.write_text("4\n0,4\n8 4\n")
    out = tmp_path / "out"
    code, _, err = _run(
        capsys, "--bots", f"a={GREEDY},b={RANDOM}", "--games-per-pair", "6", "--opening-file", str(suite),
        "--opening-start", "2", "--reverse", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    games = _games(out)
    assert [tuple(g["opening"]) for g in games[::2]] == [(0, 4), (8, 4), (0, 4)]  # type: ignore[arg-type]
    assert [g["x"] for g in games[:2]] == ["b", "a"]  # --reverse: the second entry is X first
    assert json.loads((out / "settings.json").read_text())["swap"] == "reverse"


@pytest.mark.parametrize("model", ["normalized", "bayesian"])
def test_sprt_model_is_chosen_and_named(
    model: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from bots.tournament.stats import Pentanomial, Trinomial, llr_bayesian, llr_normalized

    code, out, err = _run(
        capsys, "--bots", f"a={GREEDY},b={RANDOM}", "--format", "sprt", "--elo0", "0", "--elo1", "100",
        "--sprt-model", model, "--max-games", "60", "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 0, err
    sprt = json.loads((tmp_path / "standings.json").read_text())["sprt"]
    assert sprt["model"] == model and f"SPRT (0, 100) {model}: llr" in out
    games = [g for g in _games(tmp_path)]
    if model == "normalized":  # the verdict's LLR is the model's, over the complete pairs
        pairs: dict[int, list[float]] = {}
        for g in games:
            points = {"1-0": 1.0, "0-1": 0.0}.get(str(g["result"]), 0.5)
            pairs.setdefault(int(g["pair"]), []).append(points if g["x"] == "a" else 1 - points)  # type: ignore[call-overload]
        penta = Pentanomial.from_pairs((p[0], p[1]) for p in pairs.values() if len(p) == 2)
        assert sprt["llr"] == pytest.approx(llr_normalized(0, 100, penta.ascending()))
    else:
        counts = Trinomial()
        for g in games:
            points = {"1-0": 1.0, "0-1": 0.0}.get(str(g["result"]), 0.5)
            counts = counts.add(points if g["x"] == "a" else 1 - points)
        assert sprt["llr"] == pytest.approx(llr_bayesian(0, 100, counts.ascending()))


def test_max_plies_from_the_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bots = f"a={RANDOM},b={RANDOM}"
    code, _, err = _run(
        capsys, "--bots", bots, "--games-per-pair", "10", "--max-plies", "4", "--out", str(tmp_path)
    )
    assert code == 0, err
    games = _games(tmp_path)
    assert all(len(g["moves"]) <= 4 for g in games)  # type: ignore[arg-type]
    assert {g["reason"] for g in games} == {"adjudication"}  # no classic game ends in 4 plies
    assert json.loads((tmp_path / "settings.json").read_text())["max_plies"] == 4


def test_knockout_from_the_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bots = f"g={GREEDY},r1={RANDOM},r2={RANDOM}"
    code, out, err = _run(
        capsys, "--bots", bots, "--format", "knockout", "--games-per-pair", "2", "--out", str(tmp_path)
    )
    assert code == 0, err
    summary = json.loads((tmp_path / "standings.json").read_text())
    knockout = summary["knockout"]
    assert knockout["champion"] in ("g", "r1", "r2") and f"champion: {knockout['champion']}" in out
    assert [m["round"] for m in knockout["matches"]] == [1, 2]  # g has the bye
    assert summary["planned"] == 4 and summary["games"] >= 4


# --- time controls: --tc and --timemargin -------------------------------------------------------


def test_bad_clocks_are_refused_before_anything_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cases = [
        (["--tc", "40/60"], "moves per session"),
        (["--tc", "10+0.1", "--move-ms", "500"], "not allowed with argument"),
        (["--tc", "1+0", "--timemargin", "-5"], "--timemargin must be 0 or more"),
        (["--server", "ws://127.0.0.1:9", "--connected", "--timemargin", "100"], "--timemargin applies"),
    ]
    for flags, says in cases:
        with pytest.raises(SystemExit) if "not allowed" in says else contextlib.nullcontext():
            code = main(["tournament", "--quiet", "--bots", "a,b", *flags, "--out", str(tmp_path)])
            assert code == 2
        err = capsys.readouterr().err
        assert says in err, err
        assert list(tmp_path.iterdir()) == []
