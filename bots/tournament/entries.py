"""A tournament's entries: who plays, with which strategy and options, and whether it can.

``--bots rule,random,fast=minimax`` names strategies (repeats get ``-2``, ``-3`` ...);
``--bot name=fast,strategy=minimax,think_ms=50,noise=0.1,depth=4`` gives one entry its
own options, as cutechess-cli's ``-engine name=... option.X=...`` does. ``noise`` and
``think_ms`` are the bot's (`Noisy`, and the least time a ``ttt bot`` takes over a move);
any other key is an option of the strategy (``bots.strategy(name, **options)``, or the
keyword arguments of your own class).
"""

from __future__ import annotations

import importlib
import os
import random
import sys
from dataclasses import dataclass, field
from typing import Any

from bots.strategies.base import Noisy, Strategy, StrategyError
from bots.tournament.pairing import TournamentError

Option = int | float | str


@dataclass(frozen=True)
class Entry:
    """One entry: a strategy name (registry name or ``module:attribute``) and its options."""

    strategy: str
    noise: float = 0.0
    think_ms: int = 0
    options: dict[str, Option] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "noise": self.noise, "think_ms": self.think_ms, **self.options}

    def bot_args(self) -> list[str]:
        """The ``ttt bot`` flags that play this entry."""
        args = ["--noise", str(self.noise)] if self.noise else []
        if self.think_ms:
            args += ["--think-ms", str(self.think_ms)]
        for key, value in self.options.items():
            args += ["--option", f"{key}={value}"]
        return args


def parse_entries(text: str) -> dict[str, str]:
    """``rule,random,random,fast=minimax`` -> player name -> strategy (repeats get -2, -3 ...)."""
    entries: dict[str, str] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        name, _, strategy = item.partition("=")
        if not strategy:
            strategy = name
            k = 2
            while name in entries:
                name, k = f"{strategy}-{k}", k + 1
        if name in entries:
            raise TournamentError(f"two entries are named {name!r}")
        entries[name] = strategy
    if len(entries) < 2:
        raise TournamentError("--bots needs at least two entries")
    return entries


def parse_value(text: str) -> Option:
    """``50`` -> 50, ``0.1`` -> 0.1, anything else stays text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_bot(text: str) -> tuple[str, Entry]:
    """``name=fast,strategy=minimax,think_ms=50,noise=0.1,depth=4`` -> (name, entry)."""
    fields: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or key.strip() in fields:
            raise TournamentError(f"--bot {text!r}: {part!r} is not KEY=VALUE (each key once)")
        fields[key.strip()] = value.strip()
    strategy = fields.pop("strategy", "")
    name = fields.pop("name", strategy)
    if not strategy or not name:
        raise TournamentError(f"--bot {text!r} needs strategy=NAME (and name=, default the strategy)")
    try:
        noise = float(fields.pop("noise", "0"))
        think_ms = int(fields.pop("think_ms", "0"))
    except ValueError as exc:
        raise TournamentError(f"--bot {text!r}: {exc}") from None
    if not 0.0 <= noise <= 1.0 or think_ms < 0:
        raise TournamentError(f"--bot {text!r}: noise is a chance from 0 to 1, think_ms at least 0")
    return name, Entry(strategy, noise, think_ms, {k: parse_value(v) for k, v in fields.items()})


def build_entries(
    bots: str | None, bot: list[str] | None, noise: float = 0.0, think_ms: int = 0
) -> dict[str, Entry]:
    """The entries of ``--bots`` (with the tournament's ``--noise``/``--think-ms``) and ``--bot``."""
    entries: dict[str, Entry] = {}
    if bots:
        listed = parse_entries(bots) if not bot else _listed(bots)
        entries = {name: Entry(strategy, noise, think_ms) for name, strategy in listed.items()}
    for text in bot or ():
        name, entry = parse_bot(text)
        if name in entries:
            raise TournamentError(f"two entries are named {name!r}")
        entries[name] = entry
    if len(entries) < 2:
        raise TournamentError("a tournament needs at least two entries (--bots, --bot)")
    return entries


def _listed(text: str) -> dict[str, str]:
    try:
        return parse_entries(text)
    except TournamentError as exc:
        if "at least two" not in exc.message:
            raise
        # one entry in --bots, the others from --bot
        name, _, strategy = text.strip().partition("=")
        return {name: strategy or name} if name else {}


def load_strategy(name: str, noise: float = 0.0, options: dict[str, Option] | None = None) -> Strategy:
    """The strategy ``name``, wrapped in `Noisy` when ``noise`` > 0.

    ``name`` is a name in the `bots.strategy` registry, or ``module:attribute`` for
    a strategy of your own (a class or factory called with ``options`` as keyword
    arguments, or an object with ``choose(state, rng)``). The current directory is
    searched for ``module`` too, as ``python -m`` would.

    Raises:
        StrategyError: no such strategy, it could not be made, or it has no ``choose``.
    """
    options = dict(options or {})
    chosen: Strategy
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.append(os.getcwd())
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise StrategyError(f"no strategy {name!r}: {exc}") from None
        is_factory = isinstance(found, type) or (callable(found) and not hasattr(found, "choose"))
        if options and not is_factory:
            raise StrategyError(f"strategy {name!r} is an object: it takes no options")
        try:
            chosen = found(**options) if is_factory else found
        except Exception as exc:
            raise StrategyError(f"strategy {name!r} could not be made: {exc!r}") from None
        if not callable(getattr(chosen, "choose", None)):
            raise StrategyError(f"{name!r} is not a strategy: it has no choose(state, rng)")
    else:
        make = getattr(importlib.import_module("bots"), "strategy", None)
        if make is None:
            raise StrategyError("the strategies (bots.strategy) are not available")
        chosen = make(name, **options)
    return Noisy(chosen, noise) if noise else chosen


def check_plays(label: str, strategy: Strategy, variant: str) -> None:
    """Refuse, before any game, a strategy that cannot play ``variant``: it is asked for a
    move from the empty board (with a 1 ms budget if it takes one) and must not raise.

    Pass a fresh strategy: the probe may leave state behind (a search table).

    Raises:
        StrategyError: the strategy raised; its message says why (e.g. ``table`` on 4x4k4).
    """
    from bots.move_clock import budgeted
    from protocol.rules import State

    inner = getattr(strategy, "inner", strategy)  # under Noisy
    refusal = getattr(inner, "refusal", None)
    if callable(refusal):  # an external engine says so without a move: its failures are its losses
        reason = refusal(variant)
        if reason:
            raise StrategyError(f"entry {label!r} cannot play {variant}: {reason}")
        return
    state = State.start(variant)
    holder = budgeted(strategy)
    own = holder.think_ms if holder is not None else 0
    if holder is not None:
        holder.think_ms = 1
    try:
        strategy.choose(state, random.Random(0))
    except Exception as exc:
        raise StrategyError(f"entry {label!r} cannot play {variant}: {exc}") from None
    finally:
        if holder is not None:
            holder.think_ms = own
