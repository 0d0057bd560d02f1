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
from bots.tournament.standings import RULES_REASONS, PlayedGame
from bots.tournament.stats import Sprt, SprtDecision
from protocol.rules import State

FAST_SERVER = ("--rate", "10000", "--burst", "10000", "--ip-rate", "1000000", "--ip-burst", "1000000")
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

    def kill_after_first(record: PlayedGame, director: Director) -> None:
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


@pytest.mark.parametrize(("variant", "games_per_pair"), [("classic", 10), ("tactic-toe", 4)])
async def test_minimax_same_games_networked_and_in_process(variant: str, games_per_pair: int) -> None:
    """Issue 17, bug 12: minimax kept its table from move to move and game to game, and a
    bot process plays its games interleaved, so 3 of these 30 classic games differed. In a
    tournament it searches a node budget from an empty table each move."""
    entries = {"mm": "minimax", "heuristic": "heuristic", "random": "random"}
    config = TournamentConfig(variant, tuple(entries), Format.ROUND_ROBIN, games_per_pair, 4)
    networked = await NetworkRunner(config, entries, seed=7, server_args=FAST_SERVER).run()
    local = play_match(config, {name: load_strategy(s) for name, s in entries.items()}, seed=7)
    played = {r.spec.number: (r.moves, r.result, r.reason) for r in networked.records}
    assert len(played) == len(local.records) == 3 * games_per_pair
    assert played == {r.spec.number: (r.moves, r.result, r.reason) for r in local.records}


async def test_a_bot_out_of_time_loses_with_its_own_reason() -> None:
    config = TournamentConfig("classic", ("sleeper", "random"), Format.ROUND_ROBIN, 2, 2)
    entries = {"sleeper": "tournament_strategies:Sleeper", "random": RANDOM}
    runner = NetworkRunner(config, entries, seed=1, move_ms=150)
    director = await runner.run()
    assert [r.reason for r in director.records] == ["timeout", "timeout"]
    assert all(r.points("sleeper") == 0 for r in director.records)
    assert director.standings.rows["sleeper"].forfeits == 2


def test_base_plus_increment_and_losses_on_time_reported_as_such(tmp_path: Path) -> None:
    """``--tc 0.3+0`` (cutechess-cli's ``tc=``): a bot that thinks 0.5 s a move loses on
    time, and every output says so: ``games.jsonl`` (``timeout``), ``games.pgn``
    (``TimeControl "0.3+0"``, ``Termination "time forfeit"``), ``standings.json``
    (``time_forfeits``) and the line per game (``{sleeper loses on time}``)."""
    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "protocol.cli", "tournament", "--bots",
        f"sleeper=tournament_strategies:Sleeper,random={RANDOM}", "--games-per-pair", "2",
        "--tc", "0.3+0", "--timemargin", "50", "--seed", "1", "--out", str(out), "--rating-interval", "0",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert [g["reason"] for g in games] == ["timeout", "timeout"]
    assert done.stdout.count("{sleeper loses on time}") == 2
    pgn = (out / "games.pgn").read_text()
    assert pgn.count('[TimeControl "0.3+0"]') == 2 and pgn.count('[Termination "time forfeit"]') == 2
    summary = json.loads((out / "standings.json").read_text())
    (sleeper,) = [row for row in summary["standings"] if row["name"] == "sleeper"]
    assert (sleeper["losses"], sleeper["forfeits"], sleeper["time_forfeits"]) == (2, 2, 2)
    settings = json.loads((out / "settings.json").read_text())
    assert (settings["time_control"], settings["time_margin_ms"], settings["move_ms"]) == ("0.3+0", 50, None)


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

    def kill_after_two(record: PlayedGame, director: Director) -> None:
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


async def test_each_game_is_journaled_with_both_thinking_times() -> None:
    """Bug 4: the times came at the end of the run only; a killed run lost them."""
    config = TournamentConfig("classic", ("a", "b"), Format.ROUND_ROBIN, 4, 2)
    slow = "tournament_strategies:Slow"
    seen: list[tuple[int, int]] = []
    runner = NetworkRunner(
        config, {"a": slow, "b": slow}, seed=1, server_args=FAST_SERVER,
        on_game=lambda record, director: seen.append(record.time_ms),
    )  # fmt: skip
    director = await runner.run()
    assert len(seen) == 4 and all(x >= 20 and o >= 20 for x, o in seen), seen
    assert [r.time_ms for r in director.records] == seen


async def test_an_illegal_or_missing_first_move_loses_as_in_process() -> None:
    """Bug 6: networked, an illegal first move was aborted by the first-move timer and drawn."""
    config = TournamentConfig("classic", ("bad", "random"), Format.ROUND_ROBIN, 2, 2)
    entries = {"bad": "tournament_strategies:Illegal", "random": RANDOM}
    runner = NetworkRunner(
        config, entries, seed=1, move_ms=1000, server_args=(*FAST_SERVER, "--first-move", "1")
    )
    director = await asyncio.wait_for(runner.run(), 120)
    assert len(director.records) == 2
    assert all(r.points("bad") == 0 for r in director.records), director.records
    assert director.standings.rows["bad"].forfeits == 2
    local = play_match(
        config, {"bad": load_strategy(entries["bad"]), "random": load_strategy(RANDOM)}, seed=1
    )
    assert [r.result for r in local.records] == [r.result for r in director.records]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux")
def test_a_killed_runner_takes_its_server_bots_and_temp_folder_with_it(tmp_path: Path) -> None:
    """Bug 5: kill -9 of the runner orphaned the embedded server and left /tmp/ttt-tournament-*."""
    import time

    temp = tmp_path / "tmp"
    temp.mkdir()
    out = tmp_path / "out"
    slow = "tournament_strategies:Slow"
    command = [
        sys.executable, "-m", "protocol.cli", "tournament", "--bots", f"a={slow},b={slow}",
        "--games-per-pair", "400", "--concurrency", "2", "--out", str(out), "--quiet",
    ]  # fmt: skip
    runner = subprocess.Popen(command, env={**os.environ, "TMPDIR": str(temp)})
    children: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not (out / "games.jsonl").exists() or not (out / "games.jsonl").read_text():
            assert time.monotonic() < deadline and runner.poll() is None
            time.sleep(0.2)
        children = _children(runner.pid)
        assert len(children) >= 3 and list(temp.glob("ttt-tournament-*"))  # the server, 2 bots (+ reaper)
        runner.kill()
        runner.wait(10)
        deadline = time.monotonic() + 30
        while any(_alive(c) for c in children) or list(temp.glob("ttt-tournament-*")):
            if time.monotonic() > deadline:
                left = [c for c in children if _alive(c)]
                pytest.fail(f"still running: {left}; left behind: {list(temp.iterdir())}")
            time.sleep(0.2)
    finally:
        if runner.poll() is None:
            runner.kill()
        for child in children or _children(runner.pid):  # orphans, if the test failed
            if _alive(child):
                os.kill(child, signal.SIGKILL)


async def test_max_plies_adjudicates_the_same_games_everywhere(tmp_path: Path) -> None:
    """--max-plies: a game still going after N plies is a draw (``adjudication``), cut at
    ply N, in process and through the server alike."""
    config = TournamentConfig("classic", ("greedy", "random"), Format.ROUND_ROBIN, 8, 4, max_plies=5)
    entries = {"greedy": GREEDY, "random": RANDOM}
    network = await NetworkRunner(config, entries, seed=5, server_args=FAST_SERVER).run()
    local = play_match(config, {n: load_strategy(s) for n, s in entries.items()}, seed=5)
    key = [(r.spec.number, r.moves, r.result, r.reason) for r in local.records]
    assert key == [
        (r.spec.number, r.moves, r.result, r.reason)
        for r in sorted(network.records, key=lambda r: r.spec.number)
    ]
    cut = [r for r in local.records if r.reason == "adjudication"]
    assert cut and all(len(r.moves) == 5 and r.result == "1/2-1/2" for r in cut)
    assert all(len(r.moves) <= 5 for r in local.records)


async def test_recover_restarts_a_crashed_bot_and_only_its_running_games_are_lost() -> None:
    """--recover (cutechess-cli's -recover): the killed bot process is started again; it
    loses the games it was playing, and plays the rest."""
    config = TournamentConfig("classic", ("greedy", "random", "victim"), Format.ROUND_ROBIN, 6, 2)
    killed: list[int] = []

    def kill_after_first(record: PlayedGame, director: Director) -> None:
        if not killed:
            running = [g for g in director.running.values() if "victim" in g.players]
            os.kill(runner.bots["victim"].process.pid, signal.SIGKILL)
            killed.extend(g.number for g in running)

    entries = {"greedy": GREEDY, "random": RANDOM, "victim": RANDOM}
    runner = NetworkRunner(
        config, entries, seed=1, server_args=FAST_SERVER, on_game=kill_after_first, recover=True
    )
    director = await asyncio.wait_for(runner.run(), 120)
    assert len(director.records) == 18 and director.done and runner.restarts == {"victim": 1}
    lost = {r.spec.number for r in director.records if r.reason not in RULES_REASONS}
    # only games it was playing when it died (one may have started as it died: no more
    # than the concurrency), each lost by the dead bot
    records = {r.spec.number: r for r in director.records}
    assert all("victim" in records[n].spec.players for n in lost), lost
    assert len(lost) <= config.concurrency, (lost, killed)
    assert all(r.points("victim") == 0 for r in director.records if r.spec.number in lost)
    assert sum(1 for r in director.records if "victim" in r.spec.players and r.reason in RULES_REASONS) >= 8
