"""`ttt solve` and `ttt analyse`: the solved table, seen from the command line; and the
house bots of ``ttt serve`` (a hook on its parser: the server never imports the bots)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: Any) -> None:
    serve = subparsers.choices.get("serve")
    if serve is not None:  # `ttt serve --house-bots`: the server cannot import the bots; they plug in
        serve.set_defaults(house_bots_hook=_house_bots)
    p = subparsers.add_parser("solve", help="solve a small variant: values and distances of the first moves")
    p.add_argument("variant", help="classic, tactic-toe or an m,n,k board of up to 16 cells (e.g. 4x4k4)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_solve)
    p = subparsers.add_parser("analyse", help="grade each move of a game against the solved table")
    p.add_argument("variant", help="classic, tactic-toe or an m,n,k board of up to 16 cells")
    p.add_argument("--moves", required=True, help="cells played, comma-separated, e.g. 4,0,8")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_analyse)
    from bots.engines.cli import extend_bot_command

    extend_bot_command(subparsers)  # --engine for `ttt bot`, which bots.tournament.cli adds next


_WORD = {1: "win", 0: "draw", -1: "loss"}


async def _house_bots(url: str, spec: str, db: str, state_dir: str | None) -> Any:
    from bots.tournament.house import serve_house_bots

    return await serve_house_bots(url, spec, db, state_dir)


def _solve(args: argparse.Namespace) -> int:
    import time

    from bots.solver import solve
    from protocol.rules import State

    started = time.perf_counter()
    table = solve(args.variant)
    seconds = time.perf_counter() - started
    start = State.start(args.variant, draw_rules=False)
    wins, draws, losses = table.counts()
    firsts = table.move_values(start)
    longest = table.longest_win()
    report = {
        "variant": table.variant.name,
        "states": len(table),
        "wins": wins,
        "draws": draws,
        "losses": losses,
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
