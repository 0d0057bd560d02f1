"""A game clock, sans-I/O: every method takes the time ``now`` (seconds, monotonic).

Three kinds, from the wire's `TimeControl`: none; a limit per move (the clock
resets after each move); and base plus increment (Fischer). The clock does not
run before the first move is made; the first move has its own abort deadline,
kept by the room.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.rules import Mark


class Clock:
    """Time left for X and O, and whose time is running since when."""

    def __init__(self, control: m.NoClock | m.PerMove | m.Increment, left_ms: tuple[int, int] | None = None):
        self.control = control
        if isinstance(control, m.PerMove):
            start = control.move_ms
        elif isinstance(control, m.Increment):
            start = control.base_ms
        else:
            start = 0
        self.left: list[float] = [float(v) for v in left_ms] if left_ms else [float(start), float(start)]
        self.running: Mark | None = None
        self.since = 0.0
        #: Whether time runs at all (asked twice a move: an attribute, not a property).
        self.timed = not isinstance(control, m.NoClock)

    def start(self, mark: Mark, now: float) -> None:
        """Start ``mark``'s time (after the first move, or when a recovered game resumes)."""
        if self.timed:
            self.running = mark
            self.since = now

    def stop(self) -> None:
        self.running = None

    def left_ms(self, mark: Mark, now: float) -> float:
        if self.running is mark:
            return self.left[mark] - (now - self.since) * 1000.0
        return self.left[mark]

    def press(self, mark: Mark, now: float) -> bool:
        """``mark`` has moved: charge its time, add the increment, start the other side.

        Returns False (and charges nothing) when ``mark`` had already run out of time.
        """
        if not self.timed:
            return True
        if self.running is mark:
            used = (now - self.since) * 1000.0
            if used >= self.left[mark]:
                return False
            self.left[mark] -= used
        if isinstance(self.control, m.PerMove):
            self.left[mark] = float(self.control.move_ms)
        elif isinstance(self.control, m.Increment):
            self.left[mark] += self.control.increment_ms
        self.start(mark.other, now)
        return True

    def flag_time(self) -> float | None:
        """When the running side runs out (None when no time runs)."""
        if self.running is None:
            return None
        return self.since + self.left[self.running] / 1000.0

    def flagged(self, now: float) -> Mark | None:
        """The side whose time ran out at ``now``, if any."""
        due = self.flag_time()
        if due is not None and now >= due:
            return self.running
        return None

    def snapshot(self, now: float) -> m.Clocks:
        if not self.timed:
            return m.Clocks(x_ms=None, o_ms=None, running=None)
        x, o = (max(0, int(self.left_ms(mk, now))) for mk in (Mark.X, Mark.O))
        return m.Clocks(
            x_ms=x, o_ms=o, running=m.MARK_NAMES[self.running] if self.running is not None else None
        )
