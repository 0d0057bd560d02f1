"""The `ttt` command's foundation subcommands, run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys

from protocol import __version__


def ttt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "protocol.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_version() -> None:
    out = ttt("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"ttt-arena {__version__}"


def test_variants_lists_board_line_and_rules() -> None:
    out = ttt("variants")
    assert out.returncode == 0
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.strip()}
    assert "3x3" in lines["classic"] and "3x3" in lines["tactic-toe"] and "15x15" in lines["15x15k5"]
    data = json.loads(ttt("variants", "--json").stdout)
    by_name = {v["name"]: v for v in data}
    assert by_name["tactic-toe"]["max_marks"] == 3 and by_name["15x15k5"]["k"] == 5


def test_rules_tactic_toe_explains_vacated_cell_and_draw_rules() -> None:
    out = ttt("rules", "tactic-toe")
    assert out.returncode == 0
    text = out.stdout.lower()
    assert "oldest mark" in text and "not empty before the move" in text
    assert "third time" in text and "ply cap" in text and "200" in text


def test_rules_of_an_mnk_board_and_an_unknown_variant() -> None:
    assert "5 or more" in ttt("rules", "15x15k5").stdout
    bad = ttt("rules", "16x16k5")
    assert bad.returncode == 2 and "unknown_variant" in bad.stderr and "RxCkK" in bad.stderr


def test_help_everywhere() -> None:
    assert ttt("--help").returncode == 0
    for sub in ("variants", "rules"):
        out = ttt(sub, "--help")
        assert out.returncode == 0 and "usage" in out.stdout
