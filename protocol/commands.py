"""`ttt variants` and `ttt rules VARIANT`: the games, described in plain words."""

from __future__ import annotations

import argparse
import json
from typing import Any

from protocol.rules import FEATURED, VALID_FORMS, Variant, find_variant


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("variants", help="list the games this server plays")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_variants)
    p = subparsers.add_parser("rules", help="explain the rules of one variant")
    p.add_argument("variant", help=f"the variant: {VALID_FORMS}")
    p.set_defaults(handler=_rules)


def _variants(args: argparse.Namespace) -> int:
    variants = [find_variant(name) for name in FEATURED]
    if args.json:
        print(json.dumps([_describe(v) for v in variants], indent=2))
        return 0
    print(f"{'variant':<12} {'board':<7} {'line':<5} rules")
    for v in variants:
        print(f"{v.name:<12} {v.size:<7} {v.k:<5} {v.summary}")
    print(f"\nAny m,n,k board is also playable: {VALID_FORMS}.")
    return 0


def _describe(v: Variant) -> dict[str, Any]:
    return {
        "name": v.name,
        "rows": v.rows,
        "cols": v.cols,
        "k": v.k,
        "max_marks": v.max_marks,
        "default_ply_cap": v.default_ply_cap,
        "summary": v.summary,
    }


def _rules(args: argparse.Namespace) -> int:
    print(rules_text(find_variant(args.variant)))
    return 0


def rules_text(v: Variant) -> str:
    """The rules of ``v`` in plain words."""
    cells = f"Cells are numbered 0 to {v.cells - 1}, row by row from the top left."
    if v.name == "classic":
        return "\n".join(
            [
                "classic tic-tac-toe, on a 3x3 board.",
                "X moves first; the players take turns placing a mark on an empty cell.",
                "The first to have three marks in a row, a column or a diagonal wins.",
                "If the board fills up with no line, the game is a draw.",
                cells,
            ]
        )
    if v.name == "tactic-toe":
        return "\n".join(
            [
                "tactic-toe, on a 3x3 board: tic-tac-toe where each player keeps at most 3 marks.",
                "1. X moves first. A move places your mark on a cell that is empty before the move.",
                "2. If you already have 3 marks, your own oldest mark is removed as part of the"
                " same move. Your opponent's marks never change.",
                "3. So you may NOT place your mark on the cell your own oldest mark is leaving:"
                " it is not empty before the move. Your opponent may take that cell on the next"
                " move.",
                "4. The win is checked after the removal and the placement: three of your marks"
                " in a row wins. Only the player who moved can win.",
                "5. The rules alone never end, so there are two draw rules: the game is drawn when"
                " the same position occurs for the third time, and when it reaches the ply cap"
                " (200 moves by default; each game may set its own). The same position means the"
                " same player to move and, for each player, the same cells in the same order of"
                " age: the whole order in which that player's marks will vanish, not only which"
                " one is oldest.",
                "Clients show each player's next-to-vanish mark: the one that leaves when that"
                " player next moves.",
                cells,
            ]
        )
    return "\n".join(
        [
            f"{v.name}: an m,n,k-game on a {v.rows}-row by {v.cols}-column board.",
            "X moves first; the players take turns placing a mark on an empty cell.",
            f"The first to have {v.k} or more marks in an unbroken row, column or diagonal wins"
            " (freestyle: longer lines count too).",
            "If the board fills up with no such line, the game is a draw.",
            cells,
        ]
    )
