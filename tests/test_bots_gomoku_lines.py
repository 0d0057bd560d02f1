"""`Lines`, the gomoku board: every count it keeps by increments equals the count made
from scratch, after seeded random sequences of placing and taking stones."""

from __future__ import annotations

import random

import pytest

from bots.strategies.gomoku_lines import Lines, weights
from protocol.rules import find_variant


def _from_scratch(lines: Lines) -> dict[str, object]:
    """What `Lines` should hold, recomputed from the stones alone by the definitions."""
    k, w = lines.k, lines.weight
    counts = []
    for cells in lines.window_cells:
        counts.append(tuple(sum(lines.stone[e] == side for e in cells) for side in (0, 1)))
    score = [sum(w[c[s]] for c in counts if c[1 - s] == 0) for s in (0, 1)]
    fours = [{i for i, c in enumerate(counts) if c[s] == k - 1 and c[1 - s] == 0} for s in (0, 1)]
    threes = [{i for i, c in enumerate(counts) if c[s] == k - 2 and c[1 - s] == 0} for s in (0, 1)]
    gains = {}
    for cell in range(lines.cells):
        if lines.stone[cell] >= 0:
            continue
        per_side = []
        for s in (0, 1):
            after = []
            for i, cells in enumerate(lines.window_cells):
                a, b = counts[i][s], counts[i][1 - s]
                after.append((a + 1, b) if cell in cells else (a, b))
            mine = sum(w[a] for a, b in after if b == 0) - score[s]
            theirs = score[1 - s] - sum(w[b] for a, b in after if a == 0)
            per_side.append(mine + theirs)
        gains[cell] = tuple(per_side)
    near = [sum(lines.stone[e] >= 0 for e in lines.around[c]) for c in range(lines.cells)]
    return {"score": score, "fours": fours, "threes": threes, "gains": gains, "near": near}


def _held(lines: Lines) -> dict[str, object]:
    gains = {c: lines.gains(c) for c in range(lines.cells) if lines.stone[c] < 0}
    return {"score": list(lines.score), "fours": [set(f) for f in lines.fours],
            "threes": [set(t) for t in lines.threes], "gains": gains, "near": list(lines.near)}  # fmt: skip


@pytest.mark.parametrize("base", [None, 6])  # gomoku's worths, and others given
@pytest.mark.parametrize("variant", ["15x15k5", "9x9k5", "6x7k4", "5x5k4"])
def test_increments_match_a_recount(variant: str, base: int | None) -> None:
    v = find_variant(variant)
    rng = random.Random(variant)
    weight = weights(v.k, base) if base else None
    lines = Lines(v, weight)
    assert lines.weight == (weight or weights(v.k))
    placed: list[int] = []
    for step in range(60):
        empty = [c for c in range(v.cells) if lines.stone[c] < 0]
        if placed and (rng.random() < 0.3 or not empty):
            lines.take(placed.pop(rng.randrange(len(placed))))
        else:
            cell = rng.choice(empty)
            lines.place(cell, step % 2)
            placed.append(cell)
        if step % 7 == 0:
            assert _held(lines) == _from_scratch(lines)
    start_hash = Lines(v).hash
    for c in reversed(placed):
        lines.take(c)
    assert _held(lines) == _from_scratch(Lines(v, weight)) and lines.hash == start_hash


@pytest.mark.parametrize("variant", ["15x15k5", "6x7k4"])
def test_push_keeps_the_threat_sets_and_pop_restores_everything(variant: str) -> None:
    v = find_variant(variant)
    rng = random.Random(variant)
    lines = Lines(v)
    for step in range(12):
        lines.place(rng.choice([c for c in range(v.cells) if lines.stone[c] < 0]), step % 2)
    before = _held(lines), list(lines.code), lines.hash
    pushed = []
    for step in range(8):
        cell = rng.choice([c for c in range(v.cells) if lines.stone[c] < 0])
        lines.push(cell, step % 2)
        pushed.append(cell)
        expected = _from_scratch(lines)
        assert [set(f) for f in lines.fours] == expected["fours"]
        assert [set(t) for t in lines.threes] == expected["threes"]
    for cell in reversed(pushed):
        lines.pop(cell)
    assert (_held(lines), list(lines.code), lines.hash) == before
