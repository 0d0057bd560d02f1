"""Figures for the bot brains: table build time, table and rule move time, minimax nodes.

Baseline, measured in the same run: the time to play every move of every classic
position once with `State._play_unchecked` (plain rules work), and for the tactic-toe
build, a plain BFS that only enumerates its states through `State` objects.
"""

from __future__ import annotations

import random
import time
from typing import Any

import bots
from bots.solver import build, solve
from protocol.rules import State, find_variant


def _enumerate_with_states(name: str) -> float:
    started = time.perf_counter()
    start = State.start(name, draw_rules=False)
    seen = {start.key()}
    frontier = [start]
    while frontier:
        nxt = []
        for s in frontier:
            if s.is_over:
                continue
            for m in s.legal_moves():
                c = s._play_unchecked(m)
                k = c.key()
                if k not in seen:
                    seen.add(k)
                    nxt.append(c)
        frontier = nxt
    return time.perf_counter() - started


def _positions(name: str, count: int, rng: random.Random) -> list[State]:
    out = []
    while len(out) < count:
        s = State.start(name, draw_rules=False)
        for _ in range(rng.randrange(2, 8)):
            if s.is_over:
                break
            s = s._play_unchecked(rng.choice(s.legal_moves()))
        if not s.is_over:
            out.append(s)
    return out


def main() -> None:
    rng = random.Random(1)
    for name in ("classic", "tactic-toe"):
        base = _enumerate_with_states(name)
        table = build(find_variant(name))
        print(f"table build {name}: {table.seconds:.3f} s ({len(table.values)} states); "
              f"baseline BFS via State {base:.3f} s; ratio {table.seconds / base:.2f}")  # fmt: skip
        solve(name)
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
        play = (time.perf_counter() - started) / len(positions) * 1e6
        print(f"table move {name}: {per:.1f} us; baseline play every legal move once {play:.1f} us; "
              f"ratio {per / play:.2f}")  # fmt: skip
        rule = bots.strategy("rule")
        started = time.perf_counter()
        for s in positions:
            rule.choose(s, rng)
        rper = (time.perf_counter() - started) / len(positions) * 1e6
        print(f"rule move {name}: {rper:.1f} us; ratio to baseline {rper / play:.1f}")
    for name in ("classic", "tactic-toe", "15x15k5"):
        mm: Any = bots.strategy("minimax")
        s = State.start(name, draw_rules=False)
        started = time.perf_counter()
        mm.choose(s, rng)
        took = time.perf_counter() - started
        print(f"minimax empty {name}: {mm.nodes} nodes (of the last, deepest iteration), {took:.3f} s")
        nodes, took = 0, 0.0
        for s in _positions(name, 10, rng):
            started = time.perf_counter()
            mm.choose(s, rng)
            took += time.perf_counter() - started
            nodes += mm.nodes
        print(f"minimax 10 mid-game {name}: {nodes} nodes, {took:.3f} s total")


if __name__ == "__main__":
    main()
