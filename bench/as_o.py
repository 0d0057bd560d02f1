"""How `gomoku` holds as O, second to move, in the openings where it loses its games
against `minimax`: the four-stone openings `strength.drawn_openings` draws (X to move),
or with ``--fixed N`` the fixed openings of `strength.OPENINGS` (two to four stones, each
played N times, its random tie-breaks seeded by the repetition).

Run: .venv/bin/python bench/as_o.py [--seeds 21,22,23,24] [--openings 64] [--think-ms 300]
                                     [--rates minimax=5.3,gomoku=200] [--jobs 2] [--keep FILE]
                                     [--fixed N]

Two matches on the same openings, one game an opening, played in-process by worker
processes (no tournament: quicker than bench/strength.py, for tuning on seeds that bench
holds out):

- `gomoku` as O against `minimax` as X;
- the baseline: `gomoku` against itself. How much these openings give X between equal
  players: what `gomoku` as O can be expected to hold against a player as strong as it.
  Then how often `minimax` won as X the openings O held against itself, and those X
  won: what a suite balanced by play (kept only where equal players split) would give.

Both sides get the strength bench's node budgets: ``--think-ms`` times each side's nodes
a millisecond (``--rates``, by default those of the figures in docs/engines.md), with
the wall clock a limit at 4 times ``--think-ms`` only. A game's random choices (they
break ties) are seeded by its seed and opening, so a run replays move for move. `gomoku`
plays on its C core where it was built: the same moves at the same budget, sooner; to
play it at the core's own speed, give ``--rates`` what bench/strength.py measures.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from strength import OPENINGS, VARIANT, at_rate, drawn_openings, parse_rates

#: (seed, index of the opening in its seed's draw, the opening's moves); with ``--fixed``,
#: (repetition, index in `strength.OPENINGS`, the opening's moves)
Job = tuple[int, int, tuple[int, ...]]


def four_stone_openings(seeds: list[int], count: int) -> list[Job]:
    """The four-stone openings among the first ``count`` drawn from each seed."""
    return [(seed, i, o) for seed in seeds for i, o in enumerate(drawn_openings(count, seed)) if len(o) == 4]


def fixed_openings(repeats: int) -> list[Job]:
    """Each of `strength.OPENINGS` ``repeats`` times (X or O to move after it, by its length),
    read as `ttt tournament` reads them when bench/strength.py plays them."""
    from bots.tournament.pairing import parse_openings

    suite = parse_openings(" ".join(OPENINGS), VARIANT)
    return [(r, i, o) for r in range(repeats) for i, o in enumerate(suite)]


def by_stones(results: dict[Job, str]) -> str:
    """Games X won, by the opening's stones: ``won of played (n stones)``, fewest first."""
    played = Counter(len(job[2]) for job in results)
    won = Counter(len(job[2]) for job, r in results.items() if r == "1-0")
    return ", ".join(f"{won[n]} of {played[n]} ({n} stones)" for n in sorted(played))


def by_balance(against: dict[Job, str], itself: dict[Job, str]) -> str:
    """Of the openings O held against itself (won or drawn), and of those X won against
    itself, how many X won in ``against``."""
    parts = []
    for label, held in (("O held against itself", True), ("X won against itself", False)):
        jobs = [job for job, r in itself.items() if (r != "1-0") == held and job in against]
        won = sum(against[job] == "1-0" for job in jobs)
        share = f" ({100 * won / len(jobs):.1f} %)" if jobs else ""
        parts.append(f"{won} of the {len(jobs)} openings {label}{share}")
    return "minimax as X won " + ", ".join(parts)


def play(job: Job, x: str, rates: dict[str, float], think_ms: int) -> tuple[str, list[int]]:
    """One game from ``job``'s opening: ``x`` (`minimax` or `gomoku`) as X, a fresh
    `gomoku` as O, each at its node budget (`strength.at_rate`); the result (``1-0``: X
    won) and every move, the opening's included (after an odd one, `gomoku` moves
    first). Each side keeps its strategy object for the game, as a bot does."""
    from protocol.rules import State

    seed, index, opening = job
    state = State.replay(VARIANT, opening)
    sides = [at_rate(name, think_ms, rates[name]) for name in (x, "gomoku")]
    rng = random.Random(f"as_o/{seed}/{index}")
    moves = list(opening)
    while state.outcome is None:
        move = sides[int(state.to_move)].choose(state, rng)
        moves.append(move)
        state = state.play(move)
    return state.outcome.result, moves


def _play(args: tuple[Job, str, dict[str, float], int]) -> tuple[Job, tuple[str, list[int]]]:
    job, x, rates, think_ms = args
    return job, play(job, x, rates, think_ms)


def match(jobs: list[Job], x: str, rates: dict[str, float], think_ms: int, workers: int
          ) -> dict[Job, tuple[str, list[int]]]:  # fmt: skip
    """Every opening of ``jobs`` played once, ``x`` as X and `gomoku` as O: each game's
    result and moves."""
    with Pool(workers) as pool:
        return dict(pool.imap_unordered(_play, [(job, x, rates, think_ms) for job in jobs]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="21,22,23,24", help="the drawn openings' seeds, comma-separated")
    parser.add_argument(
        "--openings", type=int, default=64, help="openings drawn a seed (the four-stone ones are played)"
    )
    parser.add_argument("--think-ms", type=int, default=300)
    parser.add_argument("--rates", default="minimax=5.3,gomoku=200", metavar="minimax=R,gomoku=R",
                        help="nodes a millisecond, each side (bench/strength.py measures them)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=2, help="games played at once")
    parser.add_argument("--keep", type=Path, metavar="FILE",
                        help="write the games against minimax there, one JSON object a line "
                             "(bench/where_lost.py reads them)")  # fmt: skip
    parser.add_argument("--fixed", type=int, default=0, metavar="N",
                        help="play the fixed openings of bench/strength.py N times each instead")  # fmt: skip
    args = parser.parse_args()
    if args.keep and not args.keep.parent.is_dir():
        parser.error(f"--keep {args.keep}: no folder {args.keep.parent}")
    rates = parse_rates(args.rates)
    if set(rates) != {"minimax", "gomoku"}:
        parser.error(f"--rates names minimax and gomoku, not {', '.join(sorted(rates))}")
    budgets = {name: at_rate(name, args.think_ms, rate).nodes_budget for name, rate in rates.items()}
    if args.fixed < 0:
        parser.error(f"--fixed {args.fixed}: a number of times, 0 or more")
    if args.fixed:
        jobs = fixed_openings(args.fixed)
        suite = f"the {len(OPENINGS)} fixed openings x {args.fixed}"
    else:
        jobs = four_stone_openings([int(s) for s in args.seeds.split(",")], args.openings)
        suite = f"four-stone openings (seeds {args.seeds}), X to move"
        if not jobs:
            parser.error(f"no four-stone opening among the first {args.openings} of seeds {args.seeds}")
    print(f"{len(jobs)} games, {suite}; node budgets a move: "
          + ", ".join(f"{n} {b}" for n, b in sorted(budgets.items())))  # fmt: skip
    ended: dict[str, dict[Job, str]] = {}
    for x in ("minimax", "gomoku"):
        started = time.perf_counter()
        games = match(jobs, x, rates, args.think_ms, args.jobs)
        results = {job: result for job, (result, _) in games.items()}
        count = Counter(results.values())
        if x == "minimax" and args.keep:
            with args.keep.open("w") as out:
                for (seed, i, opening), (result, moves) in sorted(games.items()):
                    game = {"seed": seed, "opening": i, "stones": len(opening), "result": result,
                            "moves": moves}  # fmt: skip
                    out.write(json.dumps(game) + "\n")
        label = "gomoku as O vs minimax" if x == "minimax" else "baseline, gomoku vs itself"
        took = time.perf_counter() - started
        print(f"{label}: X won {count['1-0']}, O won {count['0-1']}, drawn {count['1/2-1/2']} "
              f"({100 * count['1-0'] / len(jobs):.1f} % won by X), {took:.0f} s")  # fmt: skip
        lost = [f"{seed}/{i}" for (seed, i, _), r in sorted(results.items()) if r == "1-0"]
        print(f"  won by X ({'repetition' if args.fixed else 'seed'}/opening): " + " ".join(lost))
        print("  won by X, by the opening's stones: " + by_stones(results))
        ended[x] = results
    print(by_balance(ended["minimax"], ended["gomoku"]))


if __name__ == "__main__":
    main()
