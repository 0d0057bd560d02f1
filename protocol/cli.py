"""The `ttt` command. Each package adds its own subcommands through a `register`
function in its `cli` module, imported by name so `protocol` depends on no layer
above it and a missing layer only hides its commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from protocol import __version__
from protocol.errors import ArenaError

#: Modules that each define ``register(subparsers)``; order is the order in --help.
COMMAND_MODULES = (
    "protocol.commands",
    "server.cli",
    "server.feed.cli",
    "bots.cli",
    "bots.tournament.cli",
    "client_tui.cli",
)

Handler = Callable[[argparse.Namespace], int | None]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ttt",
        description="ttt-arena: a server for the tic-tac-toe family of games, with bots, "
        "a terminal client and tournaments.",
    )
    parser.add_argument("--version", action="version", version=f"ttt-arena {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name):
                continue  # that layer is not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args) or 0
    except ArenaError as exc:
        print(f"ttt: error [{exc.code}]: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
