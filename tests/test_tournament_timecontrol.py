"""Time controls of a tournament (``--tc``, ``--timemargin``), pure: parsing as cutechess-cli
writes them, the margin on the server's clock, and PGN's TimeControl."""

from __future__ import annotations

import pytest

from bots.tournament.pairing import TournamentError
from bots.tournament.timecontrol import parse_tc, per_move, tc_text, with_margin
from protocol import messages as m


@pytest.mark.parametrize(
    ("text", "control"),
    [
        ("10+0.1", m.Increment(base_ms=10_000, increment_ms=100)),
        ("1:30+1", m.Increment(base_ms=90_000, increment_ms=1000)),
        ("60", m.Increment(base_ms=60_000, increment_ms=0)),
        (".5+.05", m.Increment(base_ms=500, increment_ms=50)),
        ("inf", m.NoClock()),
    ],
)
def test_cutechess_time_controls(text: str, control: m.TimeControl) -> None:
    assert parse_tc(text) == control


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("40/60", "moves per session"),
        ("10+", "BASE+INCREMENT"),
        ("fast", "BASE+INCREMENT"),
        ("-5+1", "BASE+INCREMENT"),
        ("0.05+0", "0.1 s to 24 h"),
        ("10+4000", "at most 1 h"),
    ],
)
def test_bad_time_controls_are_refused_clearly(text: str, says: str) -> None:
    with pytest.raises(TournamentError) as err:
        parse_tc(text)
    assert says in err.value.message and text in err.value.message


def test_the_margin_is_on_the_servers_clock_once_or_per_move() -> None:
    assert with_margin(m.Increment(base_ms=10_000, increment_ms=100), 250) == m.Increment(
        base_ms=10_250, increment_ms=100
    )
    assert with_margin(m.PerMove(move_ms=1000), 250) == m.PerMove(move_ms=1250)
    assert with_margin(m.NoClock(), 250) == m.NoClock()
    with pytest.raises(TournamentError):
        with_margin(m.NoClock(), -1)


def test_pgn_time_control_tags() -> None:
    assert tc_text(parse_tc("10+0.1")) == "10+0.1"
    assert tc_text(parse_tc("1:30")) == "90+0"
    assert tc_text(per_move(5000)) == "1/5"
    assert tc_text(per_move(0)) == tc_text(parse_tc("inf")) == "-"
    with pytest.raises(TournamentError):
        per_move(50)
