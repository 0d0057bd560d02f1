"""External engines as bots: any program speaking Gomocup's protocol or our ``ttt`` one.

`EngineStrategy` is a strategy like the others (``choose(state, rng)``) that asks
a child process for each move; see `bots.engines.strategy`, and `docs/engines.md`
for both protocols.

A strategy spec names an engine wherever a ``module:attribute`` strategy is taken
(``ttt bot --strategy``, ``ttt tournament --bots``)::

    bots.engines:PROTOCOL [think_ms=MS] [start_ms=MS] COMMAND [ARGS...]

e.g. ``bots.engines:gomocup ./pbrain-rapfi`` or ``bots.engines:ttt think_ms=200
python3 my_engine.py``. The part after the colon is read by this module's
``__getattr__`` (split like a shell line), so the spec needs no code of its own.
In a tournament's comma-separated ``--bots`` list the command holds no comma.
"""

from __future__ import annotations

import shlex
from typing import Any

from bots.engines.errors import EngineCrashed, EngineError, EngineIllegal, EngineRefused, EngineTimeout
from bots.engines.strategy import DEFAULT_START_MS, DEFAULT_THINK_MS, PROTOCOLS, EngineStrategy
from bots.strategies.base import StrategyError

#: The options a spec may give before the command.
SPEC_OPTIONS = ("think_ms", "start_ms")


def engine(protocol: str, command: str, **options: Any) -> EngineStrategy:
    """The engine ``command`` speaking ``protocol`` (see `EngineStrategy` for ``options``)."""
    return EngineStrategy(command, protocol, **options)


def spec(protocol: str, command: str, **options: int) -> str:
    """The strategy spec (``bots.engines:...``) of ``command`` speaking ``protocol``."""
    words = [protocol, *(f"{key}={value}" for key, value in options.items())]
    return f"{__name__}:{' '.join(words)} {command}"


def from_spec(text: str) -> EngineStrategy:
    """The engine a spec names, given the part after ``bots.engines:``.

    Raises:
        StrategyError: no protocol, a bad option, no command, or a program not found.
    """
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise StrategyError(f"engine spec {text!r}: {exc}") from None
    if not words or words[0] not in PROTOCOLS:
        raise StrategyError(
            f"engine spec {text!r}: start with the protocol ({', '.join(PROTOCOLS)}), then the command"
        )
    options: dict[str, int] = {}
    rest = words[1:]
    while rest and rest[0].partition("=")[0] in SPEC_OPTIONS:
        key, _, value = rest.pop(0).partition("=")
        if not value.isdigit():
            raise StrategyError(f"engine spec {text!r}: {key} takes whole milliseconds, not {value!r}")
        options[key] = int(value)
    if not rest:
        raise StrategyError(f"engine spec {text!r}: no command to run")
    return EngineStrategy(rest, words[0], think_ms=options.get("think_ms", DEFAULT_THINK_MS),
                          start_ms=options.get("start_ms", DEFAULT_START_MS))  # fmt: skip


def __getattr__(name: str) -> EngineStrategy:
    """``bots.engines:SPEC`` as a ``module:attribute`` strategy: the attribute is the spec."""
    if name.startswith("__") or name.split(maxsplit=1)[0] not in PROTOCOLS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return from_spec(name)
    except StrategyError as exc:
        raise AttributeError(exc.message) from None


__all__ = [
    "PROTOCOLS",
    "EngineCrashed",
    "EngineError",
    "EngineIllegal",
    "EngineRefused",
    "EngineStrategy",
    "EngineTimeout",
    "engine",
    "from_spec",
    "spec",
]
