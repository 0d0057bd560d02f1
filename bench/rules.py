"""Rules engine speed: random playouts per variant, and the full classic enumeration.

Run: .venv/bin/python bench/rules.py [--seconds S]

The baseline, measured in the same run, is a plain Python list-of-cells engine
(no bitboards) doing the same classic enumeration, so figures can be compared
as a ratio across machines.
"""

from __future__ import annotations

import argparse
import random
import time

from protocol.rules import State

VARIANTS = ("classic", "tactic-toe", "4x4k4", "6x7k4", "15x15k5")
LINES3 = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def playouts(variant: str, seconds: float, rng: random.Random) -> tuple[int, int, float]:
    """Play random games for about ``seconds``; return (games, positions, elapsed)."""
    games = positions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = State.start(variant)
        while not state.is_over:
            moves = state.legal_moves()
            state = state.play(moves[rng.randrange(len(moves))])
            positions += 1
        games += 1
    return games, positions, time.perf_counter() - start


def enumerate_classic() -> tuple[int, float]:
    start = time.perf_counter()
    count = 0

    def walk(state: State) -> None:
        nonlocal count
        for cell in state.legal_moves():
            child = state.play(cell)
            if child.is_over:
                count += 1
            else:
                walk(child)

    walk(State.start("classic"))
    return count, time.perf_counter() - start


def enumerate_classic_baseline() -> tuple[int, float]:
    """The same walk on a naive engine: a list board copied every move, lines scanned."""
    start = time.perf_counter()
    count = 0

    def walk(board: list[str], mark: str) -> None:
        nonlocal count
        for cell in range(9):
            if board[cell] == ".":
                child = board.copy()
                child[cell] = mark
                if any(all(child[c] == mark for c in line) for line in LINES3) or "." not in child:
                    count += 1
                else:
                    walk(child, "O" if mark == "X" else "X")

    walk(["."] * 9, "X")
    return count, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=1.0, help="playout time per variant")
    args = parser.parse_args()
    rng = random.Random(1)
    for variant in VARIANTS:
        games, positions, elapsed = playouts(variant, args.seconds, rng)
        print(f"playouts {variant}: {positions / elapsed:,.0f} positions/s ({games} games)")
    count, elapsed = enumerate_classic()
    base_count, base_elapsed = enumerate_classic_baseline()
    assert count == base_count == 255_168
    print(f"classic enumeration (255,168 games, checked moves): {elapsed:.2f} s")
    print(f"baseline naive list engine, same enumeration: {base_elapsed:.2f} s")
    print(f"ratio engine/baseline time: {elapsed / base_elapsed:.2f}")


if __name__ == "__main__":
    main()
