"""``ttt play``: the terminal client."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "play",
        help="the terminal client: join, play, watch, challenge bots",
        description="Open the terminal client. With --name it connects at once, coming back as the "
        "same player (the token is remembered per server in the user config directory).",
    )
    p.add_argument("--server", default="ws://127.0.0.1:8765", help="server URL (default %(default)s)")
    p.add_argument("--name", default="", help="your player name (asked for when missing)")
    p.add_argument(
        "--tournament", metavar="DIR", help="show the live standings of `ttt tournament --out DIR`"
    )
    p.add_argument("--no-review", action="store_true", help="no post-game review against the solved table")
    p.set_defaults(handler=_play)


def _play(args: argparse.Namespace) -> int:
    from client_tui.app import ArenaApp

    folder = Path(args.tournament) if args.tournament else None
    ArenaApp(args.server, args.name, tournament=folder, review=not args.no_review).run()
    return 0
