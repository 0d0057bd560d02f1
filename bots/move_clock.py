"""A bot's time per move, from its clock: pure arithmetic, time passed in.

`MoveClock` is the bot's own clock in one game as the server last reported it;
`move_budget` is how long the next search may take: what is left on the clock,
minus a reserve for the network and the event loops, spread over the moves to
come (Fischer clocks), and shared with the other timed games waiting for the
bot's one search worker. `Policy.clock_refusal` (in `bots.policy`) uses the
same arithmetic to decline clocks the bot cannot meet.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from protocol import messages as m
from protocol.errors import RulesError
from protocol.rules import State

#: Kept back from every move's time: the network both ways, the server's and this
#: bot's event loops, the search overrunning its deadline a little...
RESERVE_MS = 100
#: ...plus this share of the time left, for a loaded machine.
RESERVE_SHARE = 0.15
#: A Fischer clock's time is spread over this many moves at most (fewer when the
#: board fills up sooner).
MOVES_TO_GO = 20
#: The least search time a move needs: clocks that leave less are declined.
MIN_SEARCH_MS = 50
#: The smallest budget a search is given (a nearly flagged game still gets a quick look).
MIN_BUDGET_MS = 1


@dataclass(frozen=True, slots=True)
class MoveClock:
    """This bot's clock in one game, as the server last reported it.

    Attributes:
        left_ms: the time that was left on it at ``seen``.
        seen: when it was read, in seconds on the caller's monotonic clock.
        running: whether it runs since ``seen`` (this bot's turn).
        increment_ms: the time given back after each move (Fischer clock).
        per_move: the clock is reset after each move (a per-move time control).
        margin_ms: a tournament's time margin, already taken off ``left_ms``: the server's
            clock has it on top (a per-move clock is reset to its time less the margin).
    """

    left_ms: float
    seen: float
    running: bool = True
    increment_ms: int = 0
    per_move: bool = False
    margin_ms: int = 0

    def left(self, now: float) -> float:
        """Milliseconds left at ``now``."""
        return self.left_ms - ((now - self.seen) * 1000.0 if self.running else 0.0)

    def after_move(self, now: float, control: m.TimeControl | None) -> MoveClock:
        """The clock once this bot has moved at ``now``: stopped, reset or given its increment."""
        if self.per_move and isinstance(control, m.PerMove):
            return MoveClock(float(control.move_ms - self.margin_ms), now, False, 0, True, self.margin_ms)
        return replace(self, left_ms=self.left(now) + self.increment_ms, seen=now, running=False)


def usable_ms(left_ms: float) -> float:
    """What a move may spend of ``left_ms`` (may be negative): the reserve taken off."""
    return left_ms - RESERVE_MS - RESERVE_SHARE * max(0.0, left_ms)


def move_budget(
    clock: MoveClock | None,
    now: float,
    *,
    moves_to_go: int = 1,
    others: Iterable[MoveClock] = (),
    waiting: int = 0,
) -> int | None:
    """The search budget, in ms, for a move starting at ``now``; None when nothing limits it.

    Args:
        clock: this move's clock (None: the game has no clock).
        moves_to_go: the moves a Fischer clock's time must still last (ignored per move).
        others: the clocks of this bot's other timed games. The search holds the one
            worker, so it leaves each of them a share of its own usable time.
        waiting: moves queued for the worker behind this one.

    Per move, the whole usable time (the reserve taken off what is left); with an
    increment, the usable time over ``moves_to_go`` plus the increment, never more
    than the usable time. Then at most ``1 / (waiting + 2)`` of the tightest other
    game's usable time: the waiting moves, and one that may come in meanwhile,
    get as much. Never below `MIN_BUDGET_MS`.
    """
    limits: list[float] = []
    if clock is not None:
        usable = usable_ms(clock.left(now))
        share = usable if clock.per_move else usable / max(1, moves_to_go) + clock.increment_ms
        limits.append(min(usable, share))
    tightest = min((usable_ms(other.left(now)) for other in others), default=None)
    if tightest is not None:
        limits.append(tightest / (waiting + 2))
    if not limits:
        return None
    return max(MIN_BUDGET_MS, math.floor(min(limits)))


def moves_to_go(state: State) -> int:
    """How many more moves of the side to move a Fischer clock is planned over."""
    if state.variant.max_marks is None:  # the board fills up
        left = (len(state.legal_moves()) + 1) // 2
    elif state.ply_cap is not None:
        left = (state.ply_cap - state.ply + 1) // 2
    else:
        left = MOVES_TO_GO
    return max(1, min(MOVES_TO_GO, left))


def time_per_move(control: m.TimeControl, variant: str) -> float | None:
    """The time a move can count on under ``control`` over a whole game (None: no clock)."""
    if isinstance(control, m.PerMove):
        return float(control.move_ms)
    if isinstance(control, m.Increment):
        try:
            planned = moves_to_go(State.start(variant))
        except RulesError:
            planned = MOVES_TO_GO
        return control.base_ms / planned + control.increment_ms
    return None


def budgeted(strategy: object) -> Any | None:
    """The object holding ``strategy``'s search budget (an int ``think_ms``), looking
    through noise wrappers (``inner``, ``strategy``); None when it takes no budget."""
    seen = 0
    while strategy is not None and seen < 8:
        budget = getattr(strategy, "think_ms", None)
        if isinstance(budget, int) and not isinstance(budget, bool):
            return strategy
        strategy = getattr(strategy, "inner", None) or getattr(strategy, "strategy", None)
        seen += 1
    return None
