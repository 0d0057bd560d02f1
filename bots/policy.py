"""Which challenges and rematches a bot takes, and the levels of play it offers: `Policy`.

Pure: a challenge and a count in, a reason (or None, to play) out. The clock
arithmetic behind `Policy.clock_refusal` is `bots.move_clock`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bots.move_clock import MIN_SEARCH_MS, RESERVE_MS, RESERVE_SHARE, time_per_move, usable_ms
from protocol import messages as m

__all__ = ["DEFAULT_LEVELS", "Policy"]

#: Levels a bot offers by default: name -> the chance of a random move instead of its own.
DEFAULT_LEVELS: tuple[tuple[str, float], ...] = (
    ("easy", 0.5),
    ("medium", 0.25),
    ("hard", 0.1),
    ("best", 0.0),
)


@dataclass(frozen=True, slots=True)
class Policy:
    """Which challenges a bot takes.

    Attributes:
        variants: variant names it plays (None: any).
        max_games: games at once, at most.
        max_per_opponent: games at once against one challenger, at most (so a few
            accounts cannot take every one of a house bot's ``max_games``); games a
            tournament director arranges are not counted.
        think_ms: the least time it takes over a move (it pretends to think that
            long, never past what the clock allows).
        levels: the levels of play it offers, weakest first, each with its chance of
            a random move (a challenge names one to make the bot easier to beat).
        refuses: the strategy's own word on a variant (``table`` beyond 16 cells, an
            engine whose protocol cannot say it): a reason, or None when it plays it.
    """

    variants: frozenset[str] | None = None
    max_games: int = 16
    max_per_opponent: int = 2
    think_ms: int = 0
    levels: tuple[tuple[str, float], ...] = DEFAULT_LEVELS
    refuses: Callable[[str], str | None] | None = None

    def noise(self, level: str | None) -> float:
        """The chance of a random move at ``level`` (0 for none or an unknown one)."""
        return dict(self.levels).get(level or "", 0.0)

    def refusal(self, challenge: m.ChallengeReceived, busy: int, against: int = 0) -> str | None:
        """Why ``challenge`` is declined, or None to accept it (``against``: games at once
        already against its challenger)."""
        if self.variants is not None and challenge.variant not in self.variants:
            return f"I play {', '.join(sorted(self.variants))}, not {challenge.variant}"
        if (reason := self._strategy_refusal(challenge.variant)) is not None:
            return reason
        if busy >= self.max_games:
            return f"busy: already {busy} games (at most {self.max_games} at once)"
        if against >= self.max_per_opponent:
            return f"busy: already {against} games with you (at most {self.max_per_opponent} at once)"
        return self.clock_refusal(challenge.time_control, challenge.variant)

    def rematch_refusal(self, variant: str, busy: int) -> str | None:
        """Why a rematch in ``variant`` is declined, or None to play it (the clock was met
        already, in the game before)."""
        if self.variants is not None and variant not in self.variants:
            return f"I play {', '.join(sorted(self.variants))}, not {variant}"
        if (reason := self._strategy_refusal(variant)) is not None:
            return reason
        if busy >= self.max_games:
            return f"busy: already {busy} games (at most {self.max_games} at once)"
        return None

    def _strategy_refusal(self, variant: str) -> str | None:
        if self.refuses is None:
            return None
        try:
            reason = self.refuses(variant)
        except Exception as exc:  # an unknown variant, say: the strategy cannot play it
            return str(exc)[:200]
        return None if reason is None else reason[:200]  # a decline's reason is at most 200

    def clock_refusal(self, control: m.TimeControl, variant: str) -> str | None:
        """Why this bot cannot meet ``control`` in ``variant``, or None when it can.

        A move needs `RESERVE_MS` plus `RESERVE_SHARE` of its time for the network,
        and then `MIN_SEARCH_MS` to search, or ``think_ms`` if that is longer. A
        Fischer clock counts ``base / moves + increment`` a move, over at most
        `MOVES_TO_GO` moves.
        """
        per_move = time_per_move(control, variant)
        need = max(self.think_ms, MIN_SEARCH_MS)
        if per_move is None or usable_ms(per_move) >= need:
            return None
        least = math.ceil((need + RESERVE_MS) / (1 - RESERVE_SHARE))
        if isinstance(control, m.Increment):
            return (
                f"too fast for me: {control.base_ms} ms + {control.increment_ms} ms a move gives about "
                f"{per_move:.0f} ms a move in {variant}; I need at least {least} ms a move"
            )
        return f"too fast for me: I need at least {least} ms a move"
