"""`EngineStrategy` with real engine processes: whole games in both protocols, and every way
an engine can fail a move (slow, illegal, garbage, crashing, deaf, chatty, refusing) ends
in its typed error, never a hang, with a fresh process for the next move."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from engine_scripts import command

from bots.engines import EngineStrategy, from_spec, spec
from bots.engines.errors import EngineCrashed, EngineError, EngineIllegal, EngineRefused, EngineTimeout
from bots.strategies.base import StrategyError
from protocol.rules import State


@pytest.fixture
def made() -> Iterator[list[EngineStrategy]]:
    """Strategies made by a test, closed after it."""
    strategies: list[EngineStrategy] = []
    yield strategies
    for s in strategies:
        s.close()


def engine(
    made: list[EngineStrategy],
    tmp_path: Path,
    protocol: str,
    mode: str = "good",
    *args: str,
    think_ms: int = 2000,
    start_ms: int = 10_000,
    log: Callable[[str], None] = lambda line: None,
) -> EngineStrategy:
    """The test engine speaking ``protocol`` in ``mode``, its chatter to ``log``."""
    s = EngineStrategy(
        command(tmp_path, protocol, mode, *args), protocol, think_ms=think_ms, start_ms=start_ms, log=log
    )
    made.append(s)
    return s


def play_out(variant: str, x: EngineStrategy, o: EngineStrategy, seed: int = 0) -> State:
    state = State.start(variant)
    rng = random.Random(seed)
    while not state.is_over:
        state = state.play((x if state.to_move == 0 else o).choose(state, rng))
    return state


@pytest.mark.parametrize(
    ("protocol", "variant"),
    [("ttt", "tactic-toe"), ("ttt", "5x5k4"), ("gomocup", "7x7k5"), ("gomocup", "6x9k5")],
)
def test_two_engines_play_a_whole_game(
    made: list[EngineStrategy], tmp_path: Path, protocol: str, variant: str
) -> None:
    x, o = engine(made, tmp_path, protocol), engine(made, tmp_path, protocol)
    end = play_out(variant, x, o)
    assert end.outcome is not None and len(end.moves) >= 5
    assert State.replay(variant, end.moves).outcome == end.outcome
    assert x.about and ("ok test-engine" in x.about or 'name="test-good"' in x.about)


def test_one_gomocup_engine_serves_games_on_two_boards_and_in_any_order(
    made: list[EngineStrategy], tmp_path: Path
) -> None:
    s = engine(made, tmp_path, "gomocup")
    rng = random.Random(1)
    games = {"15x15k5": State.start("15x15k5"), "5x8k5": State.replay("5x8k5", [0, 39])}
    for _ in range(6):
        for name, state in games.items():
            games[name] = state.play(s.choose(state, rng))
            opponent = rng.choice(games[name].legal_moves())
            games[name] = games[name].play(opponent)
    assert all(len(g.moves) >= 12 for g in games.values())


def test_the_ttt_engine_draws_from_the_seed_it_is_given(made: list[EngineStrategy], tmp_path: Path) -> None:
    a, b = engine(made, tmp_path, "ttt"), engine(made, tmp_path, "ttt")
    assert play_out("9x9k5", a, b, seed=3).moves == play_out("9x9k5", a, b, seed=3).moves
    assert play_out("9x9k5", a, b, seed=3).moves != play_out("9x9k5", a, b, seed=4).moves


@pytest.mark.parametrize("protocol", ["ttt", "gomocup"])
@pytest.mark.parametrize(
    ("mode", "error", "words"),
    [
        ("slow", EngineTimeout, "did not answer in time"),
        ("deaf", EngineTimeout, "did not answer in time"),
        ("illegal", EngineIllegal, "taken|not a legal move"),
        ("garbage", EngineIllegal, "not a"),
        ("crash", EngineCrashed, "exit code 3"),
    ],
)
def test_a_failing_engine_loses_with_its_reason(
    made: list[EngineStrategy], tmp_path: Path, protocol: str, mode: str, error: type[EngineError], words: str
) -> None:
    variant = "classic" if protocol == "ttt" else "9x9k5"
    s = engine(made, tmp_path, protocol, mode, think_ms=300, start_ms=1000)
    with pytest.raises(error, match=words) as caught:
        s.choose(State.replay(variant, [4]), random.Random(0))
    assert (
        caught.value.code
        == {
            "slow": "engine_timeout",
            "deaf": "engine_timeout",
            "illegal": "engine_illegal",
            "garbage": "engine_illegal",
            "crash": "engine_crashed",
        }[mode]
    )


@pytest.mark.parametrize("protocol", ["ttt", "gomocup"])
@pytest.mark.parametrize(("mode", "error"), [("crash-once", EngineCrashed), ("slow-once", EngineTimeout)])
def test_after_a_failure_the_next_move_gets_a_fresh_engine(
    made: list[EngineStrategy], tmp_path: Path, protocol: str, mode: str, error: type[EngineError]
) -> None:
    variant = "classic" if protocol == "ttt" else "9x9k5"
    s = engine(made, tmp_path, protocol, mode, str(tmp_path / "failed"), think_ms=500)
    with pytest.raises(error):
        s.choose(State.start(variant), random.Random(0))
    # a timed-out engine that lived on would still be asleep: only a new one answers in time
    assert s.choose(State.start(variant), random.Random(0)) in State.start(variant).legal_moves()


@pytest.mark.parametrize("protocol", ["ttt", "gomocup"])
def test_a_chatty_engine_still_plays_and_its_chatter_is_logged_in_moderation(
    made: list[EngineStrategy], tmp_path: Path, protocol: str
) -> None:
    logged: list[str] = []
    s = engine(made, tmp_path, protocol, "chatty", log=logged.append)
    variant = "classic" if protocol == "ttt" else "9x9k5"
    end = play_out(variant, s, s)
    assert end.outcome is not None
    assert any("thinking" in line for line in logged)
    # each move logs at most 20 lines and a count, for the lines before its answer and
    # for those left over from the move before
    assert len(logged) <= len(end.moves) * 2 * 21
    assert any("more lines" in line for line in logged)


def test_gomocup_refuses_tactic_toe_and_four_in_a_row_before_starting_anything(
    made: list[EngineStrategy], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("ENGINE_PIDS", str(pids))
    s = engine(made, tmp_path, "gomocup")
    with pytest.raises(EngineRefused, match="tactic-toe: marks vanish there; use --engine-protocol ttt"):
        s.choose(State.start("tactic-toe"), random.Random(0))
    with pytest.raises(EngineRefused, match="five in a row, not 4"):
        s.choose(State.start("6x6k4"), random.Random(0))
    assert not pids.exists(), "no engine was started"
    assert s.refusal(State.start("15x15k5").variant) is None
    assert s.refusal("15x15k5") is None and s.refusal("tactic-toe") is not None


def test_an_engine_that_turns_the_board_down_is_refused_with_its_words(
    made: list[EngineStrategy], tmp_path: Path
) -> None:
    with pytest.raises(EngineRefused, match="unsupported size") as caught:
        engine(made, tmp_path, "gomocup", "refuse").choose(State.start("9x9k5"), random.Random(0))
    assert caught.value.code == "engine_refused"


def test_a_ttt_engine_that_never_says_ok_times_out_at_start(
    made: list[EngineStrategy], tmp_path: Path
) -> None:
    s = engine(made, tmp_path, "ttt", "mute", start_ms=300)
    with pytest.raises(EngineTimeout):
        s.choose(State.start("classic"), random.Random(0))


def test_a_gomocup_engine_is_not_a_ttt_engine(made: list[EngineStrategy], tmp_path: Path) -> None:
    s = EngineStrategy(command(tmp_path, "gomocup"), "ttt", start_ms=2000)
    made.append(s)
    with pytest.raises((EngineIllegal, EngineTimeout)):
        s.choose(State.start("classic"), random.Random(0))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead too: reaped by no one yet (its parent, the shell, was killed)
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


def _wait_gone(pids: list[int]) -> list[int]:
    for _ in range(100):
        if not any(_alive(p) for p in pids):
            break
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def test_a_timed_out_engine_is_killed_with_the_children_it_started(
    made: list[EngineStrategy], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("ENGINE_PIDS", str(pids))
    s = EngineStrategy(command(tmp_path, "ttt", "spawner"), "ttt", think_ms=300, start_ms=3000)
    made.append(s)
    with pytest.raises(EngineTimeout):
        s.choose(State.start("classic"), random.Random(0))
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 1
    assert _wait_gone(started) == []


def test_close_ends_every_engine(
    made: list[EngineStrategy], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("ENGINE_PIDS", str(pids))
    s = engine(made, tmp_path, "gomocup")
    for variant in ("9x9k5", "10x10k5", "5x9k5"):
        s.choose(State.start(variant), random.Random(0))
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 3 and all(_alive(p) for p in started)
    s.close()
    assert _wait_gone(started) == []


def test_specs_name_engines(made: list[EngineStrategy], tmp_path: Path) -> None:
    cmd = command(tmp_path, "ttt")
    s = from_spec(f"ttt think_ms=250 start_ms=900 {cmd}")
    made.append(s)
    assert (s.protocol, s.think_ms, s.start_ms) == ("ttt", 250, 900)
    assert spec("gomocup", "./pbrain-x -v", think_ms=100) == "bots.engines:gomocup think_ms=100 ./pbrain-x -v"
    for bad, words in [
        ("uci ./x", "start with the protocol"),
        ("ttt", "no command"),
        ("ttt think_ms=fast ./x", "whole milliseconds"),
        ("ttt ./no-such-engine", "no engine program"),
        ("ttt 'unclosed", "closing quotation"),
    ]:
        with pytest.raises(StrategyError, match=words):
            from_spec(bad)


def test_the_tournament_loader_resolves_an_engine_spec(made: list[EngineStrategy], tmp_path: Path) -> None:
    from bots.strategies.base import StrategyError
    from bots.tournament.cli import load_strategy

    s = load_strategy(f"bots.engines:ttt think_ms=400 {command(tmp_path, 'ttt')}")
    assert isinstance(s, EngineStrategy)
    made.append(s)
    assert s.choose(State.start("classic"), random.Random(0)) in range(9)
    with pytest.raises(StrategyError, match="no engine program"):
        load_strategy("bots.engines:gomocup ./no-such-engine")
