"""Tournaments through a real server with real bot processes (`ttt tournament`, `NetworkRunner`)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bots.tournament.cli import load_strategy
from bots.tournament.director import Director, Format, TournamentConfig
from bots.tournament.match import play_match
from bots.tournament.runner import NetworkRunner, free_port, start_server
from bots.tournament.standings import RULES_REASONS, GameRecord
from bots.tournament.stats import Sprt, SprtDecision
from protocol.rules import State

FAST_SERVER = ("--rate", "10000", "--burst", "10000")
TESTS = Path(__file__).parent
RANDOM = "tournament_strategies:RandomMover"
GREEDY = "tournament_strategies:Greedy"


@pytest.fixture(autouse=True)
def strategies_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bot processes find the test strategies (``tournament_strategies``) on their path."""
    paths = [str(TESTS), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    monkeypatch.syspath_prepend(str(TESTS))


def test_round_robin_through_the_server_is_consistent_and_matches_play_match(tmp_path: Path) -> None:
    out = tmp_path / "out"
    bots = f"greedy={GREEDY},random={RANDOM},chaos={RANDOM}"
    command = [
        sys.executable, "-m", "protocol.cli", "tournament", "--variant", "tactic-toe", "--bots", bots,
        "--format", "round-robin", "--games-per-pair", "4", "--concurrency", "4", "--seed", "3",
        "--opening-moves", "4 0", "--out", str(out), "--quiet",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "standings.json").read_text())
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(games) == summary["games"] == 12
    assert (out / "crosstable.csv").exists() and (out / "crosstable.svg").read_text().startswith("<svg")
    # points add up, colours are balanced
    assert sum(row["points"] for row in summary["standings"]) == 12
    assert all(row["as_x"] == row["as_o"] == 4 for row in summary["standings"])
    for g in games:
        # every game legal when replayed, and it ended the way the file says
        end = State.replay("tactic-toe", g["moves"])
        assert g["reason"] in RULES_REASONS and end.outcome is not None
        assert (end.outcome.result, str(end.outcome.termination)) == (g["result"], g["reason"])
        assert g["moves"][:1] == g["opening"] and g["game_id"]
    # the in-process runner, same seed, plays the very same games
    players = ("greedy", "random", "chaos")
    config = TournamentConfig("tactic-toe", players, Format.ROUND_ROBIN, 4, 4, openings=((4,), (0,)))
    strategies = {
        "greedy": load_strategy(GREEDY),
        "random": load_strategy(RANDOM),
        "chaos": load_strategy(RANDOM),
    }
    local = play_match(config, strategies, seed=3)
    assert [(r.spec.number, list(r.moves), r.result) for r in local.records] == [
        (g["number"], g["moves"], g["result"]) for g in games
    ]


async def test_a_killed_bot_forfeits_and_the_tournament_finishes() -> None:
    config = TournamentConfig("classic", ("greedy", "random", "victim"), Format.ROUND_ROBIN, 6, 2)
    killed: list[int] = []

    def kill_after_first(record: GameRecord, director: Director) -> None:
        if not killed:
            pid = runner.bots["victim"].process.pid
            os.kill(pid, signal.SIGKILL)
            killed.append(len(director.records))

    entries = {"greedy": GREEDY, "random": RANDOM, "victim": RANDOM}
    runner = NetworkRunner(config, entries, seed=1, server_args=FAST_SERVER, on_game=kill_after_first)
    director = await runner.run()
    assert len(director.records) == 18 and director.done
    victim = director.standings.rows["victim"]
    assert victim.forfeits > 0
    forfeited = [r for r in director.records if r.reason == "abandoned"]
    assert forfeited and all(r.points("victim") == 0 for r in forfeited)
    # every game not involving the victim was played out by the rules
    for r in director.records:
        if "victim" not in r.spec.players:
            assert r.reason in RULES_REASONS
    assert director.standings.total_points() == 18


def _tournament(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "protocol.cli", "tournament", "--variant", "classic",
        "--bots", f"greedy={GREEDY},random={RANDOM},chaos={RANDOM}", "--games-per-pair", "4",
        "--concurrency", "3", "--seed", "8", "--out", str(out), "--quiet", *extra,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=240)


def test_an_interrupted_tournament_resumes_from_its_journal(tmp_path: Path) -> None:
    whole = _tournament(tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr
    games = (tmp_path / "whole" / "games.jsonl").read_text().splitlines()
    # as if the runner had stopped after 5 games: only they are in the journal
    part = tmp_path / "part"
    part.mkdir()
    (part / "games.jsonl").write_text("\n".join(games[:5]) + "\n")
    resumed = _tournament(part, "--resume")
    assert resumed.returncode == 0, resumed.stderr

    def key(line: str) -> tuple[int, list[int], str]:
        g = json.loads(line)
        return g["number"], g["moves"], g["result"]

    assert [key(g) for g in (part / "games.jsonl").read_text().splitlines()] == [key(g) for g in games]
    assert (
        json.loads((part / "standings.json").read_text())["standings"]
        == json.loads((tmp_path / "whole" / "standings.json").read_text())["standings"]
    )
    # a journal from another tournament is refused with a clear error
    (part / "games.jsonl").write_text(games[0].replace('"x": "', '"x": "zz') + "\n")
    refused = _tournament(part, "--resume")
    assert refused.returncode == 2 and "bad_tournament" in refused.stderr


async def test_runner_uses_a_running_server(tmp_path: Path) -> None:
    server, url = await start_server(str(tmp_path / "a.db"), "--rate", "10000", "--burst", "10000")
    try:
        config = TournamentConfig(
            "classic", ("greedy", "random"), Format.SPRT, concurrency=4, sprt=Sprt(0, 150)
        )
        runner = NetworkRunner(config, {"greedy": GREEDY, "random": RANDOM}, seed=2, server=url)
        director = await runner.run()
        # an SPRT match through the server stops once it decides
        assert director.sprt_status is not None and director.sprt_status.decision is SprtDecision.ACCEPT_H1
        assert len(director.records) < config.max_games
        assert all(r.game_id for r in director.records)
    finally:
        server.terminate()
        assert await asyncio.wait_for(server.wait(), 20) == 0


async def test_a_bot_out_of_time_loses_with_its_own_reason() -> None:
    config = TournamentConfig("classic", ("sleeper", "random"), Format.ROUND_ROBIN, 2, 2)
    entries = {"sleeper": "tournament_strategies:Sleeper", "random": RANDOM}
    runner = NetworkRunner(config, entries, seed=1, move_ms=150)
    director = await runner.run()
    assert [r.reason for r in director.records] == ["timeout", "timeout"]
    assert all(r.points("sleeper") == 0 for r in director.records)
    assert director.standings.rows["sleeper"].forfeits == 2


async def _serve(db: Path, port: int) -> asyncio.subprocess.Process:
    """``ttt serve`` on ``port`` with ``db``, once it listens."""
    process, _ = await start_server(str(db), "--grace", "20", *FAST_SERVER, port=port, timeout=30)
    return process


async def test_the_tournament_survives_a_server_restart(tmp_path: Path) -> None:
    db, port = tmp_path / "arena.db", free_port()
    server = await _serve(db, port)
    config = TournamentConfig("classic", ("greedy", "random"), Format.ROUND_ROBIN, 12, 2)
    killed = asyncio.Event()
    restarted = asyncio.Event()

    def kill_after_two(record: GameRecord, director: Director) -> None:
        if len(director.records) == 2 and not killed.is_set():
            os.kill(server.pid, signal.SIGKILL)  # mid-tournament: games are in progress
            killed.set()

    async def restart() -> None:
        nonlocal server
        await killed.wait()
        await server.wait()
        await asyncio.sleep(0.5)  # the bots find the server gone and retry meanwhile
        server = await _serve(db, port)
        restarted.set()

    entries = {"greedy": GREEDY, "random": RANDOM}
    url = f"ws://127.0.0.1:{port}"
    runner = NetworkRunner(config, entries, seed=4, server=url, move_ms=None, on_game=kill_after_two)
    restarter = asyncio.create_task(restart())
    try:
        director = await asyncio.wait_for(runner.run(), 120)
        assert killed.is_set() and restarted.is_set()
        assert director.done and len(director.records) == 12
        assert sorted(r.spec.number for r in director.records) == list(range(1, 13))
        assert director.standings.total_points() == 12
        assert all(row.as_x == row.as_o == 6 for row in director.standings.rows.values())
        for r in director.records:
            # every game legal when replayed; played out by the rules, or lost with a stated reason
            end = State.replay("classic", r.moves)
            if r.reason in RULES_REASONS:
                assert end.outcome is not None
                assert (end.outcome.result, str(end.outcome.termination)) == (r.result, r.reason)
            else:
                assert r.reason.startswith("not played: ") and r.result == "1/2-1/2", r
        # the games after the restart were played for real
        assert all(r.reason in RULES_REASONS for r in director.records[-4:])
    finally:
        restarter.cancel()
        if server.returncode is None:
            server.terminate()
            await asyncio.wait_for(server.wait(), 20)
