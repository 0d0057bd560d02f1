"""What every strategy shares: the `Strategy` protocol, the noise wrapper and errors."""

from __future__ import annotations

import random
from typing import Protocol

from protocol.errors import ArenaError
from protocol.rules import Cell, State


class StrategyError(ArenaError):
    """A strategy name or option the registry refuses."""

    code = "bad_strategy"


class Strategy(Protocol):
    """A bot's brain: a pure function of the position and an injected random source.

    The registry's strategies also carry a ``name``; a strategy of your own
    (``module:attribute``) needs only `choose`. The one copy of this protocol: the
    tournament runners and the bot player import it from here.
    """

    def choose(self, state: State, rng: random.Random) -> Cell: ...


class Noisy:
    """``inner``, except that with chance ``noise`` it plays a uniformly random legal move."""

    def __init__(self, inner: Strategy, noise: float) -> None:
        if isinstance(noise, bool) or not isinstance(noise, int | float) or not 0.0 <= noise <= 1.0:
            raise StrategyError(f"noise is a chance between 0 and 1, not {noise!r}")
        self.inner = inner
        self.noise = float(noise)
        self.name: str = getattr(inner, "name", type(inner).__name__)

    def choose(self, state: State, rng: random.Random) -> Cell:
        if self.noise and rng.random() < self.noise:
            return rng.choice(state.legal_moves())
        return self.inner.choose(state, rng)


#: Positions a millisecond of ``think_ms`` is worth when a tournament turns a time budget
#: into a node budget (`reproducible`), for a searcher that names no rate of its own (a
#: ``nodes_per_ms`` attribute): well under what `minimax` enters on the machines this runs
#: on (95 to 140 a millisecond measured), so the count is reached before the time runs out.
NODES_PER_MS = 20


def reproducible(strategy: object) -> None:
    """Make ``strategy`` choose from the position and its random source alone, as a
    tournament's games must replay from its seed: a searcher that stops on the wall clock
    (an int ``think_ms`` beside a ``nodes_budget`` of None, looked up through noise
    wrappers) gets a node budget of ``think_ms`` times its own ``nodes_per_ms`` (else
    `NODES_PER_MS`: a faster searcher must not be cut to a slower one's count). Its ``think_ms``
    stays a hard limit (a bot's clock sets it per move): a move is reproducible as long as
    the count is reached first. Strategies without a budget are left as they are."""
    seen = 0
    while strategy is not None and seen < 8:
        think_ms = getattr(strategy, "think_ms", None)
        if isinstance(think_ms, int) and hasattr(strategy, "nodes_budget"):
            if strategy.nodes_budget is None:
                rate = getattr(strategy, "nodes_per_ms", NODES_PER_MS)
                strategy.nodes_budget = max(1, round(think_ms * rate))
            return
        strategy = getattr(strategy, "inner", None) or getattr(strategy, "strategy", None)
        seen += 1


class RandomStrategy:
    """Uniform over the legal moves."""

    name = "random"

    def choose(self, state: State, rng: random.Random) -> Cell:
        return rng.choice(state.legal_moves())


def bare(state: State) -> State:
    """``state`` as a bare search position (no history, no cap, no move list)."""
    if not state.draw_rules:
        return state
    return State(state.variant, state.x, state.o, state.queues, state.to_move, state.ply, (), state.outcome,
                 None, False)  # fmt: skip


def passed(state: State) -> State:
    """The same marks with the other side to move: where would the opponent strike?"""
    return State(state.variant, state.x, state.o, state.queues, state.to_move.other, state.ply, (), None,
                 None, False)  # fmt: skip
