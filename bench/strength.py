"""How well `gomoku` plays 15x15k5, measured: nodes a second beside `minimax`'s, and a
match against `minimax` at equal thinking time through `ttt tournament --in-process`.

Run: .venv/bin/python bench/strength.py [--think-ms 500] [--openings 10] [--positions 12]
                                         [--seed 1] [--fixed-openings] [--skip-match]
                                         [--skip-nodes] [--outside] [--keep DIR]

Nodes a second: both strategies choose a move in the same seeded mid-game positions
(random moves near the centre), each with ``--think-ms``; a node is a position the
search enters, as `minimax` counts them (for `gomoku`: alpha-beta and threat-search
positions; a leaf scored from its parent's gains without making the move counts too,
being the same position with the same value). The baseline is `minimax` in the same
run. `gomoku` plays on its C core where it was built; the Python strategy, which makes
the same moves node for node, is then measured too, and the core's speed over it printed.

The match: colour-swapped pairs (each opening once with each side first) from short
openings around the centre (drawn from ``--seed``, see `drawn_openings`; the 24 of
`OPENINGS` with ``--fixed-openings``), both strategies thinking ``--think-ms`` a move; the score
and the Elo difference with its 95 % error come from the tournament's standings. The
strategies are given to the tournament as ``module:attribute`` factories from this file
(the think time travels in the environment variable ``TTT_STRENGTH_MS``). A tournament
plays on node budgets so that its games replay from the seed; each side gets the budget
of ``--think-ms`` at its own nodes a millisecond, measured above in the same run (so the
nodes figure is always measured; ``--skip-nodes`` only keeps it quiet), and the mean time
each side took a move, read from the games, is printed beside the score.

With ``--outside``: the same match against an outside gomoku AI, the PyPI package
``gomoku-terminal`` behind the Gomocup protocol (``bench/outside_gomoku.py``, run as an
engine by `bots.engines`); see `outside` for how the thinking time is made equal.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VARIANT = "15x15k5"
#: Short openings around the centre (row 7, col 7 = cell 112); each is played twice,
#: colours swapped, so what an opening gives the first player cancels out.
OPENINGS = (
    "112,113", "112,128", "112,127", "112,142", "112,98,113", "112,97,127",
    "112,111,128", "112,114,98", "112,126,96", "112,143,128", "112,82,97", "112,113,127,98",
    "112,111", "112,96", "112,126", "112,82", "112,113,98", "112,128,113",
    "112,127,97", "112,97,111", "112,99,127", "112,114,128", "112,143,113,98", "112,111,97,127",
)  # fmt: skip


#: Drawn openings: stones within this many cells of the centre (row and column).
_RADIUS = 2
#: ... and at most this far apart in static score (`Lines.score` at `OPENING_BASE`: 1 a
#: live window with one stone, 6 with two), so that neither side starts with more shape
#: than the other.
_BALANCE = 16
#: The window worths the openings are balanced by (`weights` at this base, x6 a stone):
#: those `gomoku` used when the seeds were first drawn, kept so that a seed keeps its
#: openings whatever `gomoku` weighs now.
OPENING_BASE = 6


def drawn_openings(count: int, seed: int) -> list[tuple[int, ...]]:
    """``count`` openings drawn from ``seed``: the first stone at the centre, then one of
    each side's in turn (two or four stones, X to move, as at the start) on the 5x5
    around it; none with three of a side's stones in a K-window (no threat to answer at
    once), none whose static scores differ by more than `_BALANCE`, no two the same up to
    the board's symmetries. Balanced in that sense; each is played with both colours,
    so what is left of an edge cancels out. A different seed, different openings: the
    fixed suite's games repeat move for move from seed to seed (the strategies' random
    choices only break ties), these do not."""
    from bots.strategies.gomoku_lines import Lines, weights
    from protocol.rules import find_variant

    v = find_variant(VARIANT)
    balance = weights(v.k, OPENING_BASE)
    centre = (v.rows // 2) * v.cols + v.cols // 2
    row, col = divmod(centre, v.cols)
    around = [r * v.cols + c for r in range(row - _RADIUS, row + _RADIUS + 1)
              for c in range(col - _RADIUS, col + _RADIUS + 1) if (r, c) != (row, col)]  # fmt: skip
    rng = random.Random(f"strength/openings/{seed}")
    seen: set[tuple[tuple[int, int], ...]] = set()
    out: list[tuple[int, ...]] = []
    for _ in range(10_000 * count):
        if len(out) == count:
            break
        moves = (centre, *rng.sample(around, rng.choice((1, 3))))
        lines = Lines(v, balance)
        for i, c in enumerate(moves):
            lines.place(c, i % 2)
        if lines.threes[0] or lines.threes[1] or abs(lines.score[0] - lines.score[1]) > _BALANCE:
            continue
        shape = min(tuple(sorted((p[c], i % 2) for i, c in enumerate(moves))) for p in v.symmetries)
        if shape not in seen:
            seen.add(shape)
            out.append(moves)
    return out


#: The wall-clock limit a move, in multiples of ``--think-ms``: the node budgets (CPU time at
#: each side's own rate) are what stop the searches.
_SLACK = 4


def _at_think_time(name: str) -> Any:
    """``name`` thinking ``TTT_STRENGTH_MS`` a move, with the node budget that takes it that
    long: ``TTT_STRENGTH_RATES`` (``name=nodes_a_ms,...``, measured by `nodes_per_second`
    in the same run). A tournament plays on node budgets, not the clock, so its games
    replay from the seed; left to it (`base.reproducible`: 20 nodes a millisecond for
    every searcher) the faster searcher would get the slower one's count, not its time.
    ``think_ms`` stays a hard limit."""
    think_ms = int(os.environ.get("TTT_STRENGTH_MS", "500"))
    rates = parse_rates(os.environ.get("TTT_STRENGTH_RATES", ""))
    if name not in rates:
        raise RuntimeError(f"no nodes a millisecond measured for {name} (TTT_STRENGTH_RATES)")
    return at_rate(name, think_ms, rates[name])


def at_rate(name: str, think_ms: int, rate: float) -> Any:
    """The strategy ``name`` with the node budget of ``think_ms`` at ``rate`` nodes a
    millisecond; ``think_ms`` (times `_SLACK`) stays a hard limit."""
    import bots

    budget = max(1, round(think_ms * rate))
    # the budget is the limit: the clock's (wall time) only stops a search the machine's
    # load slows down that much, which would make the games depend on it
    return bots.strategy(name, think_ms=_SLACK * think_ms, nodes_budget=budget)


def parse_rates(text: str) -> dict[str, float]:
    """``name=R,name=R``: nodes a millisecond by strategy name."""
    return {name: float(rate) for name, rate in (pair.split("=") for pair in text.split(",") if pair)}


def gomoku() -> Any:
    """The `gomoku` strategy at the bench's think time (a factory for `ttt tournament`)."""
    return _at_think_time("gomoku")


def minimax() -> Any:
    """The `minimax` strategy at the bench's think time."""
    return _at_think_time("minimax")


def _positions(count: int, rng: random.Random) -> list[Any]:
    from protocol.rules import State

    out = []
    while len(out) < count:
        s = State.start(VARIANT, draw_rules=False)
        for _ in range(rng.randrange(6, 16)):
            near = [c for c in s.legal_moves() if abs(c // 15 - 7) <= 3 and abs(c % 15 - 7) <= 3]
            s = s._play_unchecked(rng.choice(near))
            if s.is_over:
                break
        if not s.is_over:
            out.append(s)
    return out


def nodes_per_second(think_ms: int, count: int, seed: int, quiet: bool = False) -> dict[str, float]:
    """Nodes a millisecond of `minimax` and `gomoku` (printed with the ratio unless
    ``quiet``): the match gives each side the budget of its own speed."""
    import bots

    def say(line: str) -> None:
        if not quiet:
            print(line)

    from bots.strategies.gomoku import GomokuStrategy
    from bots.strategies.gomoku_core import available

    positions = _positions(count, random.Random(seed))
    rates = {}
    # `gomoku` on its C core where it was built; then the Python strategy too, which makes
    # the same moves node for node (the baseline of the core's speed)
    for name in ("minimax", "gomoku", *(("gomoku-python",) if available() else ())):
        player = (
            GomokuStrategy(think_ms) if name == "gomoku-python" else bots.strategy(name, think_ms=think_ms)
        )
        core = " (C core)" if name == "gomoku" and available() else ""
        nodes, scored, took = 0, 0, 0.0
        for i, s in enumerate(positions):
            started = time.process_time()  # the CPU time: other processes' load does not count
            player.choose(s, random.Random(i))
            took += time.process_time() - started
            nodes += player.nodes  # type: ignore[attr-defined]
            scored += getattr(player, "scored", 0)
        rates[name] = nodes / took
        say(f"{name}{core} 15x15k5, {count} mid-game positions at {think_ms} ms: {nodes} nodes in "
            f"{took:.2f} s of CPU, {rates[name]:.0f} nodes/s")  # fmt: skip
        if scored and name == "gomoku":
            rates["entered"] = (nodes - scored) / took
            say(f"  of which {scored} leaves scored from their parent's gains without making the move; "
                  f"the rest, positions made on the board: {rates['entered']:.0f} a second")  # fmt: skip
    ratio = rates["gomoku"] / rates["minimax"]
    made = ""
    if "entered" in rates:
        made = f" (positions made alone: {rates['entered'] / rates['minimax']:.1f}x)"
    say(f"gomoku nodes/s over minimax nodes/s (the baseline, same run): {ratio:.1f}x{made}")
    if "gomoku-python" in rates:
        say(f"gomoku's C core over the Python strategy (same moves, same run): "
            f"{rates['gomoku'] / rates['gomoku-python']:.1f}x")  # fmt: skip
    return {name: rates[name] / 1000 for name in ("minimax", "gomoku")}


def _elo(score: float) -> float:
    return -400 * math.log10(1 / score - 1)


def match(
    opponent: str,
    entry: str,
    think_ms: int,
    openings: int,
    seed: int,
    rates: dict[str, float],
    note: str = "",
    keep: str | None = None,
    fixed: bool = False,
) -> None:
    """`gomoku` (thinking ``think_ms`` a move) against ``entry`` (a `ttt tournament --bots`
    strategy) named ``opponent``: colour-swapped pairs from ``openings`` openings, drawn
    from ``seed`` (the first of `OPENINGS` if ``fixed``). The
    strategies of this file get node budgets from ``rates`` (nodes a millisecond, see
    `_at_think_time`); the time each side took a move is printed from the games."""
    here = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, TTT_STRENGTH_MS=str(think_ms))
        env["TTT_STRENGTH_RATES"] = ",".join(f"{name}={rate:.3f}" for name, rate in rates.items())
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(here), env.get("PYTHONPATH", "")) if p)
        drawn = (
            OPENINGS[:openings] if fixed else [",".join(map(str, o)) for o in drawn_openings(openings, seed)]
        )
        suite = " ".join(drawn)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "protocol.cli", "tournament", "--in-process", "--quiet",
             "--variant", VARIANT, "--bots", f"gomoku=strength:gomoku,{opponent}={entry}",
             "--games-per-pair", str(2 * openings), "--opening-moves", suite, "--seed", str(seed),
             "--out", out],
            check=True, env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        took = time.perf_counter() - started
        summary = json.loads((Path(out) / "standings.json").read_text())
        games_file = Path(out) / "games.jsonl"
        games_played = [json.loads(line) for line in games_file.read_text().splitlines()]
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / f"{opponent}-games.jsonl").write_text(games_file.read_text())
    m = next(x for x in summary["matchups"] if x["player"] == "gomoku")
    games = m["games"]
    record = f"+{m['wins']} ={m['draws']} -{m['losses']}"
    kind = "fixed" if fixed else f"drawn from seed {seed}"
    print(f"gomoku vs {opponent}, 15x15k5, {games} games ({openings} openings {kind} x 2 colours), {note}"
          f"{took:.0f} s: {record}, score {100 * m['score']:.1f} %")  # fmt: skip
    used = _ms_a_move(games_played)
    print("time a move, mean over the match: "
          + ", ".join(f"{name} {ms:.0f} ms" for name, ms in sorted(used.items())))  # fmt: skip
    if m["elo"] is not None and math.isfinite(m["elo"]) and m["error95"] is not None:
        print(f"Elo difference {m['elo']:+.0f} +/- {m['error95']:.0f} (95 %), LOS {100 * m['los']:.1f} %")
    elif m["elo"] is not None and math.isfinite(m["elo"]):
        # The standings give no error here (too few lost pairs to estimate one): quote the
        # Elo of the ends of the score's 95 % Wilson interval instead.
        p, z = m["score"], 1.96
        mid = p + z * z / (2 * games)
        half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games))
        low, high = (mid - half) / (1 + z * z / games), (mid + half) / (1 + z * z / games)
        print(f"Elo difference {m['elo']:+.0f}, 95 % interval {_elo(low):+.0f} to "
              f"{_elo(high) if high < 1 else math.inf:+.0f} (Wilson, from the score)")  # fmt: skip
    else:
        # Every game won (or lost): the tournament's Elo is infinite. Quote the bound that
        # the one-sided 95 % Clopper-Pearson bound on the score gives.
        lower = 0.05 ** (1 / games)
        side = ">" if m["score"] == 1 else "<"
        bound = _elo(lower) if m["score"] == 1 else -_elo(lower)
        print(f"Elo difference {side} {bound:+.0f} (95 % one-sided bound: a score of "
              f"{100 * m['score']:.0f} % in {games} games)")  # fmt: skip


def _ms_a_move(games: list[dict[str, Any]]) -> dict[str, float]:
    """Each player's mean thinking time a move, from the games' ``time_ms`` (the opening's
    moves are not thought)."""
    spent: dict[str, list[float]] = {}
    for g in games:
        for mark, index in (("x", 0), ("o", 1)):
            thought = sum(1 for ply in range(len(g["opening"]), len(g["moves"])) if ply % 2 == index)
            total = spent.setdefault(g[mark], [0.0, 0.0])
            total[0] += g["time_ms"][mark]
            total[1] += thought
    return {name: ms / max(1.0, moves) for name, (ms, moves) in spent.items()}


def _outside_command() -> str:
    return f"{sys.executable} {Path(__file__).resolve().parent / 'outside_gomoku.py'}"


def outside(openings: int, positions: int, seed: int, rates: dict[str, float], keep: str | None,
            fixed: bool = False) -> None:  # fmt: skip
    """`gomoku` against the outside AI (``bench/outside_gomoku.py``) at equal thinking
    time: the outside AI has no clock (it searches to a fixed depth), so its time a move
    is measured first on the nodes/s positions, and `gomoku` gets that mean."""
    try:
        import gomoku.ai  # noqa: F401  (the package that bench/outside_gomoku.py wraps)
    except ImportError:
        print("outside AI: not installed (pip install -e '.[bench]' brings gomoku-terminal)")
        return
    import bots.engines

    player = bots.engines.engine("gomocup", _outside_command(), think_ms=60_000)
    took = []
    try:
        for i, s in enumerate(_positions(positions, random.Random(seed))):
            started = time.perf_counter()
            player.choose(s, random.Random(i))
            took.append(time.perf_counter() - started)
    finally:
        player.close()
    mean_ms = max(1, round(1000 * sum(took) / len(took)))
    print(f"outside AI (gomoku-terminal 1.0.2, level hard, via the Gomocup protocol): {mean_ms} ms a "
          f"move on {positions} mid-game positions (max {1000 * max(took):.0f} ms); gomoku gets {mean_ms} ms "
          "a move")  # fmt: skip
    limit = max(5_000, 20 * mean_ms)  # the outside AI is never hurried: it has no clock to heed
    entry = f"bots.engines:gomocup think_ms={limit} {_outside_command()}"
    note = f"gomoku {mean_ms} ms a move, outside AI unhurried, "
    match(
        "outside",
        entry,
        mean_ms,
        openings,
        seed,
        {"gomoku": rates["gomoku"]},
        note=note,
        keep=keep,
        fixed=fixed,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--think-ms", type=int, default=500, help="thinking time a move, both sides")
    parser.add_argument(
        "--openings",
        type=int,
        default=10,
        help=f"openings (drawn from --seed; with --fixed-openings at most {len(OPENINGS)})",
    )
    parser.add_argument("--fixed-openings", action="store_true",
                        help="the 24 fixed openings of earlier measurements, not drawn ones")  # fmt: skip
    parser.add_argument("--positions", type=int, default=12, help="positions for the nodes/s figure")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-match", action="store_true")
    parser.add_argument("--skip-nodes", action="store_true")
    parser.add_argument("--outside", action="store_true", help="also play the outside AI (the bench extra)")
    parser.add_argument("--keep", metavar="DIR", help="keep each match's games.jsonl in DIR")
    parser.add_argument("--rates", metavar="minimax=R,gomoku=R",
                        help="nodes a millisecond of CPU time for each side, instead of measuring them "
                             "(to compare two versions at the same budgets)")  # fmt: skip
    args = parser.parse_args()
    rates: dict[str, float] = {}
    if args.rates:
        rates = parse_rates(args.rates)
        print("nodes a millisecond given: " + ", ".join(f"{n} {r:g}" for n, r in sorted(rates.items())))
    elif not args.skip_nodes or not args.skip_match or args.outside:  # the matches need the rates
        rates = nodes_per_second(args.think_ms, args.positions, args.seed, quiet=args.skip_nodes)
    openings = min(args.openings, len(OPENINGS)) if args.fixed_openings else args.openings
    if not args.skip_match:
        note = f"{args.think_ms} ms a move each, "
        entry = "strength:minimax"
        match("minimax", entry, args.think_ms, openings, args.seed, rates, note=note, keep=args.keep,
              fixed=args.fixed_openings)  # fmt: skip
    if args.outside:
        outside(openings, args.positions, args.seed, rates, keep=args.keep, fixed=args.fixed_openings)


if __name__ == "__main__":
    main()
