"""Tournaments among bots already connected to a server (`ttt tournament --connected`,
`ConnectedRunner`): a real ``ttt serve`` and real ``ttt bot`` processes started as ordinary
bots (no control channel); the runner only arranges their games."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bots.tournament.connected import ConnectedRunner
from bots.tournament.director import Director, Format, TournamentConfig
from bots.tournament.pairing import TournamentError
from bots.tournament.runner import spawn_bot, start_server
from bots.tournament.standings import RULES_REASONS, PlayedGame
from protocol import messages as m
from protocol.client import connect
from protocol.rules import State

TESTS = Path(__file__).parent
RANDOM = "tournament_strategies:RandomMover"
GREEDY = "tournament_strategies:Greedy"
#: A server for tests: no rate limits, a dropped player loses half a second later.
SERVER = (
    "--rate",
    "10000",
    "--burst",
    "10000",
    "--ip-rate",  # every bot and the director share this machine's address
    "1000000",
    "--ip-burst",
    "1000000",
    "--grace",
    "0.5",
    "--answer-timeout",
    "5",
    "--sync",
    "NORMAL",
)


@pytest.fixture(autouse=True)
def strategies_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bot processes find the test strategies (``tournament_strategies``) on their path."""
    paths = [str(TESTS), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


@asynccontextmanager
async def arena(
    tmp_path: Path, bots: Mapping[str, tuple[str, ...]], *server_args: str
) -> AsyncIterator[tuple[str, dict[str, asyncio.subprocess.Process]]]:
    """A ``ttt serve`` and one ``ttt bot`` per entry (name -> strategy and flags), all online."""
    server, url = await start_server(str(tmp_path / "arena.db"), *SERVER, *server_args)
    processes: dict[str, asyncio.subprocess.Process] = {}
    try:
        for name, (strategy, *extra) in bots.items():
            processes[name] = await spawn_bot(url, strategy, name, "--seed", "5", *extra)
        await _wait_online(url, set(bots))
        yield url, processes
    finally:
        for process in processes.values():
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in processes.values():
            await asyncio.wait_for(process.wait(), 20)
        server.terminate()
        assert await asyncio.wait_for(server.wait(), 20) == 0


async def _wait_online(url: str, names: set[str], timeout: float = 60.0) -> None:
    watcher = await connect(url, "watcher", timeout=10)
    try:
        async with asyncio.timeout(timeout):
            while True:
                snapshot = await watcher.request(m.LobbySubscribe())
                await watcher.request(m.LobbyUnsubscribe())
                assert isinstance(snapshot, m.LobbySnapshot)
                if names <= {p.name for p in snapshot.players}:
                    return
                await asyncio.sleep(0.1)
    finally:
        await watcher.close()


def _check_legal(variant: str, games: list[dict[str, object]]) -> None:
    for g in games:
        moves = g["moves"]
        assert isinstance(moves, list)
        end = State.replay(variant, moves)
        assert g["reason"] in RULES_REASONS and end.outcome is not None
        assert (end.outcome.result, str(end.outcome.termination)) == (g["result"], g["reason"])
        assert g["game_id"]


async def test_a_round_robin_of_connected_bots_through_the_command(tmp_path: Path) -> None:
    bots = {"rule-bot": ("rule",), "random-bot": ("random",), "table-bot": ("table",)}
    async with arena(tmp_path, bots) as (url, processes):
        out = tmp_path / "out"
        command = [
            sys.executable, "-m", "protocol.cli", "tournament", "--server", url, "--connected",
            "--bots", ",".join(bots), "--variant", "classic", "--games-per-pair", "2",
            "--concurrency", "4", "--move-ms", "5000", "--out", str(out), "--quiet",
        ]  # fmt: skip
        done = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        _, stderr = await asyncio.wait_for(done.communicate(), 240)
        assert done.returncode == 0, stderr.decode()
        assert all(p.returncode is None for p in processes.values()), "the runner stops no bot"
    summary = json.loads((out / "standings.json").read_text())
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(games) == summary["games"] == 6
    assert summary["server"] == url and summary["entries"] == dict.fromkeys(bots, "connected")
    assert (out / "crosstable.csv").exists() and (out / "crosstable.svg").read_text().startswith("<svg")
    # points add up, colours are balanced, every game is legal and ended as recorded
    assert sum(row["points"] for row in summary["standings"]) == 6
    assert all(row["as_x"] == row["as_o"] == 2 for row in summary["standings"])
    _check_legal("classic", games)
    pairs = {frozenset((g["x"], g["o"])) for g in games}
    assert pairs == {frozenset(p) for p in [("rule-bot", "random-bot"), ("rule-bot", "table-bot"),
                                           ("random-bot", "table-bot")]}  # fmt: skip
    # the perfect player never loses
    table = next(row for row in summary["standings"] if row["name"] == "table-bot")
    assert table["losses"] == 0


async def test_a_declining_bot_loses_its_games_and_the_rest_goes_on(tmp_path: Path) -> None:
    bots = {"greedy": (GREEDY,), "random": (RANDOM,), "picky": (RANDOM, "--variants", "tactic-toe")}
    async with arena(tmp_path, bots) as (url, _):
        config = TournamentConfig("classic", tuple(bots), Format.ROUND_ROBIN, 2, 3)
        seen: list[PlayedGame] = []
        runner = ConnectedRunner(config, url, move_ms=3000, on_game=lambda r, d: seen.append(r))
        director = await runner.run()
    assert director.done and len(director.records) == 6 and seen == director.records
    for record in director.records:
        if "picky" in record.spec.players:
            assert record.reason == "declined: I play tactic-toe, not classic"
            assert record.points("picky") == 0 and record.game_id is None
        else:
            assert record.reason in RULES_REASONS and record.game_id
            assert State.replay("classic", record.moves).outcome is not None
    assert director.standings.rows["picky"].forfeits == 4
    assert director.standings.total_points() == 6


async def test_a_bot_that_drops_loses_its_games_and_the_tournament_finishes(tmp_path: Path) -> None:
    bots = {"greedy": (GREEDY,), "random": (RANDOM,), "victim": (RANDOM,)}
    async with arena(tmp_path, bots) as (url, processes):
        config = TournamentConfig("classic", tuple(bots), Format.ROUND_ROBIN, 4, 2)

        def kill_after_first(record: PlayedGame, director: Director) -> None:
            if processes["victim"].returncode is None and len(director.records) == 1:
                processes["victim"].kill()

        runner = ConnectedRunner(config, url, move_ms=3000, on_game=kill_after_first)
        director = await runner.run()
    assert director.done and len(director.records) == 12
    forfeited = [r for r in director.records if r.reason == "abandoned"]
    assert forfeited and all(r.points("victim") == 0 for r in forfeited)
    for record in director.records:
        if "victim" not in record.spec.players:
            assert record.reason in RULES_REASONS
    assert director.standings.total_points() == 12


async def test_entries_must_be_online(tmp_path: Path) -> None:
    async with arena(tmp_path, {"greedy": (GREEDY,)}) as (url, _):
        config = TournamentConfig("classic", ("greedy", "ghost"), Format.ROUND_ROBIN, 2, 1)
        with pytest.raises(TournamentError, match=r"not online.*ghost"):
            await ConnectedRunner(config, url).run()


async def test_a_server_restart_stops_the_director_and_resume_finishes(tmp_path: Path) -> None:
    from bots.tournament.runner import free_port

    db, port = tmp_path / "arena.db", free_port()
    url = f"ws://127.0.0.1:{port}"

    async def serve() -> asyncio.subprocess.Process:
        process, _ = await start_server(str(db), *SERVER, port=port, timeout=30)
        return process

    server = await serve()
    bots = [await spawn_bot(url, GREEDY, "greedy"), await spawn_bot(url, RANDOM, "random")]
    config = TournamentConfig("classic", ("greedy", "random"), Format.ROUND_ROBIN, 10, 2)

    def kill_after_two(record: PlayedGame, director: Director) -> None:
        if len(director.records) == 2:
            os.kill(server.pid, signal.SIGKILL)

    try:
        first = ConnectedRunner(config, url, move_ms=None, on_game=kill_after_two)
        for _ in range(100):  # until the bots are online
            try:
                await asyncio.wait_for(first.run(), 60)
            except TournamentError as exc:
                if "not online" in str(exc):
                    first = ConnectedRunner(config, url, move_ms=None, on_game=kill_after_two)
                    await asyncio.sleep(0.2)
                    continue
                assert "--resume" in str(exc)  # the director's connection went with the server
                break
        else:
            raise AssertionError("the bots never came online")
        done = list(first.director.records)
        assert len(done) >= 2
        await server.wait()
        server = await serve()
        director: Director | None = None
        for _ in range(100):  # until the bots are back (they reconnect with backoff)
            try:
                second = ConnectedRunner(config, url, move_ms=None, done_records=done)
                director = await asyncio.wait_for(second.run(), 60)
                break
            except TournamentError as exc:
                assert "not online" in str(exc)
                await asyncio.sleep(0.2)
        assert director is not None and director.done and len(director.records) == 10
        assert sorted(r.spec.number for r in director.records) == list(range(1, 11))
        assert director.standings.total_points() == 10
        for r in director.records:
            end = State.replay("classic", r.moves)
            assert r.reason in RULES_REASONS and end.outcome is not None
            assert (end.outcome.result, str(end.outcome.termination)) == (r.result, r.reason)
    finally:
        for bot in bots:
            bot.terminate()
            await asyncio.wait_for(bot.wait(), 20)
        if server.returncode is None:
            server.terminate()
            await asyncio.wait_for(server.wait(), 20)


async def test_a_busy_bot_is_waited_for_not_forfeited(tmp_path: Path) -> None:
    """Bug 15: a concurrency above the bots' --max-games forfeited games as `declined: busy`."""
    bots = {name: (RANDOM, "--max-games", "1") for name in ("a", "b", "c")}
    async with arena(tmp_path, bots) as (url, _):
        config = TournamentConfig("classic", tuple(bots), Format.ROUND_ROBIN, 2, 3)
        director = await asyncio.wait_for(ConnectedRunner(config, url, move_ms=3000).run(), 120)
    assert director.done and len(director.records) == 6
    assert all(r.reason in RULES_REASONS and r.game_id for r in director.records), director.records


async def test_more_games_at_once_than_the_server_allows_rooms_wait(tmp_path: Path) -> None:
    """Bug 15: --concurrency 40 aborted the tournament with too_many_rooms after 32 games."""
    bots = {name: (RANDOM, "--max-games", "64") for name in ("a", "b")}
    async with arena(tmp_path, bots) as (url, _):
        config = TournamentConfig("classic", tuple(bots), Format.ROUND_ROBIN, 48, 40)
        director = await asyncio.wait_for(ConnectedRunner(config, url, move_ms=None).run(), 180)
    assert director.done and len(director.records) == 48
    assert all(r.reason in RULES_REASONS for r in director.records)


async def test_a_bot_that_never_makes_its_first_move_loses(tmp_path: Path) -> None:
    """Bug 6, connected: a game the server aborts for want of a first move (an illegal one
    is refused) is lost by the side to move, not drawn."""
    bots = {"bad": ("tournament_strategies:Illegal",), "random": (RANDOM,)}
    async with arena(tmp_path, bots, "--first-move", "1") as (url, _):
        config = TournamentConfig("classic", tuple(bots), Format.ROUND_ROBIN, 2, 2)
        director = await asyncio.wait_for(ConnectedRunner(config, url, move_ms=1000).run(), 120)
    assert len(director.records) == 2
    assert all(r.points("bad") == 0 for r in director.records), director.records
    assert [r.reason for r in director.records if r.spec.x == "bad"] == ["aborted"]


async def test_a_named_director_comes_back_as_itself_and_is_not_throttled(tmp_path: Path) -> None:
    """``--director-name`` with ``--director-token-file``: the operator names the director
    (``ttt serve --director``) and each run is the same player (no ``name_taken``)."""
    bots = {"rule-bot": ("rule",), "random-bot": ("random",)}
    async with arena(tmp_path, bots, "--director", "td-house") as (url, _):
        for run in range(2):
            out = tmp_path / f"out{run}"
            command = [
                sys.executable, "-m", "protocol.cli", "tournament", "--server", url, "--connected",
                "--bots", ",".join(bots), "--variant", "classic", "--games-per-pair", "2",
                "--director-name", "td-house", "--director-token-file", str(tmp_path / "td.token"),
                "--move-ms", "5000", "--out", str(out), "--quiet",
            ]  # fmt: skip
            done = await asyncio.create_subprocess_exec(
                *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
            _, stderr = await asyncio.wait_for(done.communicate(), 120)
            assert done.returncode == 0, stderr.decode()
            assert json.loads((out / "standings.json").read_text())["games"] == 2
    assert (tmp_path / "td.token").read_text().strip()
