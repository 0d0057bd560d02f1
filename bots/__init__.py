"""Bots: strategies that choose a move from a position, and the solver behind `table`.

Build one with `strategy(name, **options)`; every strategy has ``name`` and
``choose(state, rng) -> cell`` with an injected `random.Random`, so a game is
reproducible from a seed.
"""

from __future__ import annotations

from typing import Any

from bots.strategies.base import Noisy, RandomStrategy, Strategy, StrategyError

#: The names `strategy` accepts.
STRATEGIES = ("random", "rule", "heuristic", "minimax", "table", "gomoku")


def strategy(name: str, **options: Any) -> Strategy:
    """The strategy called ``name``.

    Args:
        name: one of `STRATEGIES`.
        **options: ``noise=p`` (all: the chance of a random move); ``think_ms``,
            ``depth`` and ``nodes_budget`` (minimax); ``think_ms`` and ``nodes_budget`` (gomoku).

    Raises:
        StrategyError: unknown name, an option the strategy does not take, or a bad value.
    """
    noise = options.pop("noise", 0.0)
    made: Strategy
    if name == "minimax":
        from bots.strategies.minimax import MinimaxStrategy

        unknown = set(options) - {"think_ms", "depth", "nodes_budget"}
        if not unknown:
            made = MinimaxStrategy(**options)
    elif name == "gomoku":
        from bots.strategies.gomoku import GomokuStrategy
        from bots.strategies.gomoku_core import CoreGomoku, available

        unknown = set(options) - {"think_ms", "nodes_budget"}
        if not unknown:
            # the same moves either way; the C core, where it was built, 25 to 30 times faster
            made = CoreGomoku(**options) if available() else GomokuStrategy(**options)
    else:
        unknown = set(options)
        if name == "random":
            made = RandomStrategy()
        elif name in ("rule", "heuristic"):
            from bots.strategies.rules import HeuristicStrategy, RuleStrategy

            made = RuleStrategy() if name == "rule" else HeuristicStrategy()
        elif name == "table":
            from bots.strategies.table import TableStrategy

            made = TableStrategy()
        else:
            raise StrategyError(f"no strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    if unknown:
        raise StrategyError(f"strategy {name!r} takes no option {', '.join(sorted(unknown))}")
    return Noisy(made, noise) if noise else made


__all__ = ["STRATEGIES", "Noisy", "Strategy", "StrategyError", "strategy"]
