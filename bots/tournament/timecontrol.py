"""A tournament's clock, written as cutechess-cli and fastchess write it (``--tc 10+0.1``),
and the time margin (``--timemargin MS``). Pure: text in, the wire's `TimeControl` out.

The server keeps the clocks and flags a player out of time (reason ``timeout``). A time
margin is cutechess-cli's leniency: a player may go that far over its time before it
loses. Here the server's clock gets the margin (added to a Fischer clock's base once, as
cutechess-cli counts it against the whole clock; to each move of a per-move clock), and
the runner tells its own bots to plan without it, so they play the announced clock and
the margin only absorbs overruns.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from bots.tournament.pairing import TournamentError
from protocol import messages as m

__all__ = ["parse_tc", "per_move", "tc_text", "with_margin"]

#: ``[moves/]time[+increment]``, time as seconds or ``minutes:seconds``.
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_TC = re.compile(rf"(?:(?P<moves>\d+)/)?(?P<base>(?:\d+:)?{_NUMBER})(?:\+(?P<inc>{_NUMBER}))?")


def _seconds(text: str) -> float:
    minutes, _, seconds = text.rpartition(":")
    return (int(minutes) * 60 if minutes else 0) + float(seconds)


def parse_tc(text: str) -> m.TimeControl:
    """``10+0.1`` (10 s each and 0.1 s a move), ``1:30+1``, ``60`` (no increment) or
    ``inf`` (no clock).

    Raises:
        TournamentError: anything else, a moves-per-session clock (``40/60``: the server
            has Fischer and per-move clocks only), or times the server does not take.
    """
    spec = text.strip().lower()
    if spec in ("inf", "infinite", "-"):
        return m.NoClock()
    match = _TC.fullmatch(spec)
    if match is None:
        raise TournamentError(f"--tc {text!r}: expected BASE+INCREMENT in seconds, e.g. 10+0.1 or 1:30+1")
    if match["moves"]:
        raise TournamentError(
            f"--tc {text!r}: moves per session ({match['moves']}/...) is not a clock the server keeps; "
            "use BASE+INCREMENT, or --move-ms for a time per move"
        )
    base_ms = round(_seconds(match["base"]) * 1000)
    increment_ms = round(float(match["inc"] or 0) * 1000)
    try:
        return m.Increment(base_ms=base_ms, increment_ms=increment_ms)
    except ValidationError:
        raise TournamentError(
            f"--tc {text!r}: the base must be 0.1 s to 24 h and the increment at most 1 h"
        ) from None


def per_move(move_ms: int | None) -> m.TimeControl:
    """``--move-ms``: that long for each move (None or 0: no clock)."""
    if not move_ms:
        return m.NoClock()
    try:
        return m.PerMove(move_ms=move_ms)
    except ValidationError:
        raise TournamentError(f"--move-ms {move_ms}: a move takes 100 ms to 24 h (0: no clock)") from None


def with_margin(control: m.TimeControl, margin_ms: int) -> m.TimeControl:
    """The clock the server keeps for ``control`` with a time margin of ``margin_ms``."""
    if margin_ms < 0:
        raise TournamentError("--timemargin must be 0 or more")
    if isinstance(control, m.Increment):
        return control.model_copy(update={"base_ms": control.base_ms + margin_ms})
    if isinstance(control, m.PerMove):
        return control.model_copy(update={"move_ms": control.move_ms + margin_ms})
    return control


def tc_text(control: m.TimeControl) -> str:
    """PGN's TimeControl tag (and cutechess-cli's ``tc=``): ``10+0.1``, ``1/5`` for 5 s a
    move, ``-`` for no clock. Seconds."""
    if isinstance(control, m.Increment):
        return f"{control.base_ms / 1000:g}+{control.increment_ms / 1000:g}"
    if isinstance(control, m.PerMove):
        return f"1/{control.move_ms / 1000:g}"
    return "-"
