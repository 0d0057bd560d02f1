"""``ttt bot --engine "CMD ARGS" --engine-protocol gomocup|ttt [--engine-ms MS]``.

The flags turn into a strategy spec (`bots.engines.spec`) as they are parsed:
``--strategy`` is then set (and no longer required) and ``--name`` defaults to
the program's name. ``ttt bot`` itself is registered by `bots.tournament.cli`,
after `bots.cli`; `extend_bot_command` adds these flags to it when it is made.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any

#: The protocol an engine speaks unless ``--engine-protocol`` says.
DEFAULT_PROTOCOL = "gomocup"


def extend_bot_command(subparsers: Any) -> None:
    """Have ``subparsers`` give the ``bot`` command, whenever it is added, the engine flags."""
    add_parser = subparsers.add_parser

    def add_parser_with_engine(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = add_parser(name, **kwargs)
        if name == "bot":
            add_engine_arguments(parser)
        return parser

    subparsers.add_parser = add_parser_with_engine


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--engine`` flags, for a command whose strategy is ``--strategy``."""
    group = parser.add_argument_group(
        "external engine", "play an external program instead of --strategy (see docs/engines.md)"
    )
    group.add_argument(
        "--engine", metavar="CMD", action=_EngineFlag, help='the engine\'s command line, e.g. "./pbrain-x -v"'
    )
    group.add_argument(
        "--engine-protocol",
        choices=("gomocup", "ttt"),
        action=_EngineFlag,
        help=f"what the engine speaks (default {DEFAULT_PROTOCOL}; ttt plays every variant)",
    )
    group.add_argument(
        "--engine-ms",
        type=int,
        metavar="MS",
        action=_EngineFlag,
        help="most time a move may take when the clock allows more (default 5000)",
    )


class _EngineFlag(argparse.Action):
    """Keeps ``--strategy`` in step with the engine flags, whatever their order."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from bots.engines import spec

        if self.dest == "engine" and getattr(namespace, "strategy", None) is not None:
            parser.error("--engine replaces --strategy: give one of them")
        setattr(namespace, self.dest, values)
        command = getattr(namespace, "engine", None)
        if not command:
            return
        think_ms = getattr(namespace, "engine_ms", None)
        if think_ms is not None and think_ms < 1:
            parser.error("--engine-ms must be at least 1")
        options = {"think_ms": think_ms} if think_ms is not None else {}
        namespace.strategy = spec(
            getattr(namespace, "engine_protocol", None) or DEFAULT_PROTOCOL, command, **options
        )
        for action in parser._actions:
            if action.dest == "strategy":
                action.required = False
        if getattr(namespace, "name", None) is None:
            namespace.name = _program_name(command)
        handler = getattr(namespace, "handler", None)
        if handler is not None and not isinstance(handler, _VariantsChecked):
            namespace.handler = _VariantsChecked(handler)


class _VariantsChecked:
    """The ``ttt bot`` handler, once ``--variants`` has been checked against the engine's
    protocol: a variant it cannot express stops the bot before it connects."""

    def __init__(self, handler: Callable[[argparse.Namespace], int | None]) -> None:
        self.handler = handler

    def __call__(self, args: argparse.Namespace) -> int | None:
        from bots.engines.strategy import PROTOCOLS
        from bots.strategies.base import StrategyError
        from protocol.rules import find_variant

        protocol = PROTOCOLS[args.engine_protocol or DEFAULT_PROTOCOL]
        variants = [v.strip() for v in (getattr(args, "variants", None) or "").split(",") if v.strip()]
        for name in variants:
            reason = protocol.refusal(find_variant(name))
            if reason is not None:
                raise StrategyError(f"--variants {name}: {reason}")
        if not variants and protocol.NAME == "gomocup":
            print(
                "ttt bot: a Gomocup engine plays RxCk5 variants only; it resigns any other game at its "
                "first move (give --variants to decline those challenges)",
                file=sys.stderr,
            )
        return self.handler(args)


def _program_name(command: str) -> str:
    """A player name from the engine's program (or script): at most 24 characters."""
    from bots.engines.strategy import program_name

    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    return program_name(words)[:24]
