"""``ttt bot --engine CMD --engine-protocol P --engine-ms MS``: the flags become a strategy spec."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from engine_scripts import command

from protocol.cli import build_parser


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["bot", "--server", "ws://127.0.0.1:1", *argv])


@pytest.mark.parametrize(
    "argv",
    [
        ("--engine", "./pbrain-x -v", "--engine-protocol", "gomocup", "--engine-ms", "700"),
        ("--engine-ms", "700", "--engine-protocol", "gomocup", "--engine", "./pbrain-x -v"),
        ("--engine-protocol", "gomocup", "--engine", "./pbrain-x -v", "--engine-ms", "700"),
    ],
)
def test_the_flags_in_any_order_make_one_spec(argv: tuple[str, ...]) -> None:
    args = parse(*argv)
    assert args.strategy == "bots.engines:gomocup think_ms=700 ./pbrain-x -v"
    assert args.name == "pbrain-x"


def test_gomocup_is_the_default_protocol_and_the_clock_the_default_time() -> None:
    assert parse("--engine", "./pbrain-x").strategy == "bots.engines:gomocup ./pbrain-x"


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("python3 -u engines/my_engine.py --level 3", "my_engine.py"),
        ("sh ./pick.sh", "pick.sh"),
        ("/opt/engines/pbrain-rapfi", "pbrain-rapfi"),
        ("a-program-whose-name-is-far-too-long-for-a-player", "a-program-whose-name-is-"),
    ],
)
def test_the_name_comes_from_the_program_or_its_script(command: str, name: str) -> None:
    assert parse("--engine", command, "--engine-protocol", "ttt").name == name


def test_an_explicit_name_wins_before_or_after() -> None:
    assert parse("--name", "rapfi", "--engine", "./pbrain-x").name == "rapfi"
    assert parse("--engine", "./pbrain-x", "--name", "rapfi").name == "rapfi"


def test_strategy_or_engine_but_not_both_and_not_neither(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--strategy", "random", "--engine", "./pbrain-x")
    assert "--engine replaces --strategy" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse("--engine-protocol", "ttt")
    assert "--strategy" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse("--engine", "./x", "--engine-ms", "0")
    assert "--engine-ms must be at least 1" in capsys.readouterr().err
    assert parse("--strategy", "random").strategy == "random"


def test_a_missing_program_stops_ttt_bot_before_it_connects(capsys: pytest.CaptureFixture[str]) -> None:
    from protocol.cli import main

    assert main(["bot", "--server", "ws://127.0.0.1:1", "--engine", "./no-such-engine"]) == 2
    assert "no engine program './no-such-engine'" in capsys.readouterr().err


def test_variants_the_protocol_cannot_express_stop_ttt_bot_before_it_connects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from protocol.cli import main

    engine = command(tmp_path, "gomocup")
    argv = ["bot", "--server", "ws://127.0.0.1:1", "--engine", engine]
    assert main([*argv, "--variants", "15x15k5,tactic-toe"]) == 2
    assert "--variants tactic-toe: the Gomocup protocol cannot express tactic-toe" in capsys.readouterr().err
    assert (
        main(["bot", "--variants", "9x9k5,5x5k4", *argv[1:]]) == 2
    )  # --variants first: checked all the same
    assert "--variants 5x5k4: the Gomocup protocol plays five in a row, not 4" in capsys.readouterr().err
    assert main([*argv, "--engine-protocol", "ttt", "--variants", "tactic-toe,nonsense"]) == 2
    assert "unknown variant 'nonsense'" in capsys.readouterr().err
