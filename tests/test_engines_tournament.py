"""Engines in ``ttt tournament`` through their strategy spec (``bots.engines:PROTOCOL CMD``):
in process and with a bot process an entry on an embedded server. An engine that fails
forfeits each game; a good one plays them all to the end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from engine_scripts import command, write_examples

from protocol.rules import State

RULES = {"line", "full_board", "repetition", "ply_cap"}


def tournament(out: Path, bots: str, *extra: str) -> list[dict[str, Any]]:
    """Run ``ttt tournament`` to the end; its games (games.jsonl)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "protocol.cli",
            "tournament",
            "--quiet",
            "--bots",
            bots,
            "--out",
            str(out),
            "--seed",
            "2",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]


def loser(game: dict[str, Any]) -> str | None:
    return {"1-0": game["o"], "0-1": game["x"]}.get(game["result"])


@pytest.mark.parametrize("mode", ["slow", "garbage", "crash"])
def test_in_process_a_failing_engine_forfeits_every_game(tmp_path: Path, mode: str) -> None:
    pick = write_examples(tmp_path)["sh"]
    broken = command(tmp_path, "ttt", mode)
    bots = f"pick=bots.engines:ttt {pick},broken=bots.engines:ttt think_ms=300 {broken},rule"
    games = tournament(
        tmp_path / "out", bots, "--in-process", "--variant", "tactic-toe", "--games-per-pair", "2"
    )
    assert len(games) == 6
    for g in games:
        end = State.replay("tactic-toe", g["moves"])
        if "broken" in (g["x"], g["o"]):
            assert loser(g) == "broken" and g["reason"] not in RULES
            assert end.outcome is None  # stopped where the engine failed
        else:
            assert g["reason"] in RULES and end.outcome is not None


def test_through_the_server_engines_are_bot_processes(tmp_path: Path) -> None:
    pick = write_examples(tmp_path)["python"]
    crash = command(tmp_path, "gomocup", "crash")
    gomoku = command(tmp_path, "gomocup")
    bots = (
        f"pick=bots.engines:ttt {pick},pbrain=bots.engines:gomocup think_ms=2000 {gomoku},"
        f"crashy=bots.engines:gomocup {crash}"
    )
    games = tournament(
        tmp_path / "out",
        bots,
        "--variant",
        "9x9k5",
        "--games-per-pair",
        "2",
        "--move-ms",
        "3000",
        "--concurrency",
        "2",
    )
    assert len(games) == 6
    for g in games:
        if "crashy" in (g["x"], g["o"]):
            assert loser(g) == "crashy" and g["reason"] == "resignation"
        else:
            assert g["reason"] in RULES
            assert State.replay("9x9k5", g["moves"]).outcome is not None
