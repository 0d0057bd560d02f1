"""`ttt solve` and `ttt analyse`: the solved table, seen from the command line."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("solve", help="solve a 3x3 variant: values and distances of the first moves")
    p.add_argument("variant", help="classic or tactic-toe")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_solve)
    p = subparsers.add_parser("analyse", help="grade each move of a game against the solved table")
    p.add_argument("variant", help="classic or tactic-toe")
    p.add_argument("--moves", required=True, help="cells played, comma-separated, e.g. 4,0,8")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_analyse)


_WORD = {1: "win", 0: "draw", -1: "loss"}


def _solve(args: argparse.Namespace) -> int:
    import time

    from bots.solver import solve
    from protocol.rules import State

    started = time.perf_counter()
    table = solve(args.variant)
    seconds = time.perf_counter() - started
    start = State.start(args.variant, draw_rules=False)
    values = [v for v, _ in table.values.values()]
    firsts = table.move_values(start)
    longest = max((d for v, d in table.values.values() if v == 1), default=0)
    report = {
        "variant": table.variant.name,
        "states": len(values),
        "wins": values.count(1),
        "draws": values.count(0),
        "losses": values.count(-1),
        "start_value": table.value(start),
        "first_moves": {str(m): {"value": v, "distance": d} for m, (v, d) in firsts.items()},
        "longest_forced_win": longest,
        "seconds": round(seconds, 3),
        "from_cache": table.from_cache,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['variant']}: {report['states']} states ({report['wins']} won, {report['draws']} drawn, "
          f"{report['losses']} lost for the side to move)")  # fmt: skip
    print(f"start: {_WORD[table.value(start)]} for X")
    for m, (v, d) in table.move_values(start).items():
        print(f"  X plays {m}: {_WORD[v]}" + (f" in {d} plies" if d >= 0 else ""))
    print(f"longest forced win: {longest} plies")
    print(f"time: {seconds:.3f} s" + (" (from the cache)" if table.from_cache else ""))
    return 0


def _analyse(args: argparse.Namespace) -> int:
    from bots.analyse import BadMoveList, grade_moves

    try:
        moves = [int(m) for m in args.moves.split(",") if m.strip()]
    except ValueError:
        raise BadMoveList(f"--moves must be cell numbers separated by commas, not {args.moves!r}") from None
    grades = grade_moves(args.variant, moves)
    if args.json:
        print(json.dumps([g.to_dict() for g in grades], indent=2))
        return 0
    for g in grades:
        print(f"ply {g.ply:>3}: {g.move}  {_WORD[g.value_before]} -> {_WORD[g.value_after]}  {g.grade:<10}"
              f" best: {','.join(map(str, g.best))}")  # fmt: skip
    return 0
