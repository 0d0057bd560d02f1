"""Figures for the bot brains: table build and move time, rule move time, minimax nodes,
and whether rule, minimax and table keep the value of every position.

Run: .venv/bin/python bench/solve.py [--scan fresh|shared|none] [--jobs N] [--build-only]

Baselines, measured in the same run: the time to play every move of each sampled
position once with `State._play_unchecked` (plain rules work); for the table build, a
plain BFS that only enumerates the states through `State` objects, and the solver as it
was before the array build (bench/solve_tuples.py: successors as tuples, a dict entry a
position), both cold; 4x4k4 (9,722,011 states) is quoted beside the same baselines
(tactic-toe's, as the tuple solver cannot hold 4x4k4 in memory); for minimax on the
empty classic board, plain minimax (no pruning, no table), which visits 549,945
positions, and the published ~3,120 for alpha-beta with a table.

A minimax node is a position the search enters (one call of its search function):
terminal positions, table hits and cut-off positions count; a position looked at
only through the lines of its parent (an immediate win, an unstoppable threat) does
not.

The tactic-toe scan runs `minimax` at depth 18 (the longest forced win, 17 plies,
plus one) on every reachable tactic-toe state with a move to make, and counts the
moves that lose value against the solved table. ``fresh`` gives every state a new
strategy and so a new transposition table (the strongest check: nothing carries
over); ``shared`` keeps one strategy, and its table, for all states, as a bot keeps
its table from move to move.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from solve_tuples import build as build_tuples

import bots
from bots.solver import build, solve
from bots.strategies.minimax import MinimaxStrategy
from bots.strategies.rules import RuleStrategy
from protocol.rules import State, find_variant, reachable

#: Published node counts for the empty classic board.
PUBLISHED_PLAIN = 549_945
PUBLISHED_ALPHA_BETA_TABLE = 3_120
#: Minimax depth for the tactic-toe scan: the longest forced win is 17 plies.
TACTIC_DEPTH = 18


def _enumerate_with_states(name: str) -> float:
    """Seconds to walk every reachable state with `State` (the table build's baseline)."""
    started = time.perf_counter()
    reachable(name)
    return time.perf_counter() - started


def _positions(name: str, count: int, rng: random.Random) -> list[State]:
    out: list[State] = []
    while len(out) < count:
        s = State.start(name, draw_rules=False)
        for _ in range(rng.randrange(2, 8)):
            if s.is_over:
                break
            s = s._play_unchecked(rng.choice(s.legal_moves()))
        if not s.is_over:
            out.append(s)
    return out


def _plain_minimax(s: State) -> tuple[int, int]:
    """Plain negamax over the whole tree: (value, positions entered below ``s``)."""
    best, nodes = -2, 0
    for m in s.legal_moves():
        child = s._play_unchecked(m)
        nodes += 1
        if child.outcome is not None:
            value = 1 if child.outcome.winner is not None else 0
        else:
            v, n = _plain_minimax(child)
            value, nodes = -v, nodes + n
        best = max(best, value)
    return best, nodes


def _classic_minimax_figures() -> None:
    empty = State.start("classic", draw_rules=False)
    started = time.perf_counter()
    value, plain = _plain_minimax(empty)
    plain_s = time.perf_counter() - started
    print(f"baseline plain minimax empty classic: {plain} nodes (published {PUBLISHED_PLAIN}), "
          f"value {value}, {plain_s:.3f} s")  # fmt: skip
    mm = MinimaxStrategy()
    started = time.perf_counter()
    move, score = mm.search(empty)
    took = time.perf_counter() - started
    print(f"minimax empty classic, one complete search: {mm.nodes} nodes (published alpha-beta with a table "
          f"~{PUBLISHED_ALPHA_BETA_TABLE}), score {score}, move {move}, {took * 1000:.1f} ms; "
          f"nodes/plain {mm.nodes / plain:.5f}, time/plain {took / plain_s:.5f}")  # fmt: skip
    mm = MinimaxStrategy()
    started = time.perf_counter()
    mm.choose(empty, random.Random(1))
    took = time.perf_counter() - started
    print(f"minimax empty classic, iterative deepening (choose): {mm.nodes} nodes over all "
          f"{len(mm.iterations)} iterations {mm.iterations}, {took * 1000:.1f} ms; "
          f"time/plain {took / plain_s:.5f}")  # fmt: skip


def _classic_scan() -> None:
    """Every reachable classic position: does each bot keep its value?"""
    table = solve("classic")
    positions = [s for s in reachable("classic") if not s.is_over]
    for name in ("rule", "minimax", "table"):
        started = time.perf_counter()
        bad = moves = 0
        for s in positions:
            if name == "rule":
                allowed = RuleStrategy().options(s)  # every move the checklist allows
            elif name == "table":
                allowed = table.best_moves(s)
            else:
                allowed = [bots.strategy("minimax").choose(s, random.Random(s.key()))]
            moves += len(allowed)
            bad += sum(-table.value(s._play_unchecked(m)) < table.value(s) for m in allowed)
        print(f"classic, every reachable position ({len(positions)}): {name} {bad} bad moves of {moves} "
              f"it may play, {time.perf_counter() - started:.2f} s")  # fmt: skip


def _scan_part(part: int, parts: int, shared: bool) -> tuple[int, int, list[tuple[Any, ...]]]:
    """One worker's share of the tactic-toe scan: (states, nodes, bad moves)."""
    table = solve("tactic-toe")
    states = [s for s in reachable("tactic-toe") if not s.is_over][part::parts]
    one = MinimaxStrategy(think_ms=600_000, depth=TACTIC_DEPTH)
    nodes, bad = 0, []
    for i, s in enumerate(states):
        mm = one if shared else MinimaxStrategy(think_ms=600_000, depth=TACTIC_DEPTH)
        m = mm.choose(s, random.Random(i))
        nodes += mm.nodes
        if -table.value(s._play_unchecked(m)) < table.value(s):
            bad.append((s.queues, int(s.to_move), m))
    return len(states), nodes, bad


def _tactic_toe_scan(mode: str, jobs: int, play_us: float) -> None:
    shared = mode == "shared"
    parts = 1 if shared else jobs  # a shared table lives in one process
    started = time.perf_counter()
    with ProcessPoolExecutor(parts) as pool:
        results = list(pool.map(_scan_part, range(parts), [parts] * parts, [shared] * parts))
    took = time.perf_counter() - started
    states = sum(r[0] for r in results)
    nodes = sum(r[1] for r in results)
    bad = [b for r in results for b in r[2]]
    per = took * parts / states * 1e6
    processes = f"{parts} process{'es' if parts > 1 else ''}"
    print(f"minimax tactic-toe scan, every reachable state with a move ({mode} table, depth {TACTIC_DEPTH}, "
          f"{processes}): {states} states, {len(bad)} bad moves, {nodes} nodes, {took:.1f} s; "
          f"{per:.0f} us of one process per state, ratio to baseline {per / play_us:.0f}")  # fmt: skip
    for b in bad[:10]:
        print(f"  bad: queues {b[0]}, to move {'XO'[b[1]]}, played {b[2]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scan", choices=("fresh", "shared", "none"), default="fresh",
                        help="the minimax scan of every tactic-toe state (default: fresh)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for a fresh scan")
    parser.add_argument("--build-only", action="store_true", help="only the table build figures")
    args = parser.parse_args()
    rng = random.Random(1)
    play_us = {}
    for name in ("classic", "tactic-toe", "4x4k4"):
        if name != "4x4k4":
            base = _enumerate_with_states(name)
            started = time.perf_counter()
            build_tuples(find_variant(name))
            tuples = time.perf_counter() - started
        table = build(find_variant(name))
        print(f"table build {name} (cold): {table.seconds:.3f} s ({len(table)} states); baseline BFS via "
              f"State {base:.3f} s, ratio {table.seconds / base:.3f}; baseline tuple solver {tuples:.3f} s, "
              f"ratio {table.seconds / tuples:.3f}")  # fmt: skip
        solve(name)
        if name == "4x4k4" or args.build_only:
            continue  # the move figures below are for the 3x3 games
        player = bots.strategy("table")
        positions = _positions(name, 200, rng)
        started = time.perf_counter()
        for s in positions:
            player.choose(s, rng)
        per = (time.perf_counter() - started) / len(positions) * 1e6
        started = time.perf_counter()
        for s in positions:
            for m in s.legal_moves():
                s._play_unchecked(m)
        play = play_us[name] = (time.perf_counter() - started) / len(positions) * 1e6
        print(f"table move {name}: {per:.1f} us; baseline play every legal move once {play:.1f} us; "
              f"ratio {per / play:.2f}")  # fmt: skip
        rule = bots.strategy("rule")
        started = time.perf_counter()
        for s in positions:
            rule.choose(s, rng)
        rper = (time.perf_counter() - started) / len(positions) * 1e6
        print(f"rule move {name}: {rper:.1f} us; ratio to baseline {rper / play:.1f}")
    if args.build_only:
        return
    _classic_minimax_figures()
    _classic_scan()
    for name in ("classic", "tactic-toe", "15x15k5"):
        mm = MinimaxStrategy()  # the default budget, think_ms=1000
        s = State.start(name, draw_rules=False)
        started = time.perf_counter()
        mm.choose(s, rng)
        took = time.perf_counter() - started
        if mm.iterations:
            print(f"minimax empty {name}: {mm.nodes} nodes over all {len(mm.iterations)} iterations "
                  f"(deepest completed: {mm.reached}), {took:.3f} s")  # fmt: skip
        else:
            print(f"minimax empty {name}: one candidate move (the centre), no search, {took:.3f} s")
        nodes, took = 0, 0.0
        for s in _positions(name, 10, rng):
            started = time.perf_counter()
            mm.choose(s, rng)
            took += time.perf_counter() - started
            nodes += mm.nodes
        print(f"minimax 10 mid-game {name}: {nodes} nodes, {took:.3f} s total")
    if args.scan != "none":
        _tactic_toe_scan(args.scan, max(1, args.jobs), play_us["tactic-toe"])


if __name__ == "__main__":
    main()
