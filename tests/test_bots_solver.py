"""The retrograde solver against published facts and a tiny independent solver."""

from __future__ import annotations

import functools
import random

import pytest

import bots
from bots.solver import ENDLESS, Unsolvable, build, refusal, solve
from protocol.rules import State, find_variant


def _tiny_negamax(s: State) -> int:
    """Plain recursive negamax over classic (a tree: no cycles), memoised on the key."""

    @functools.cache
    def value(key: int, x: int, o: int, to_move: int) -> int:
        st = State(s.variant, x, o, (), s.to_move.__class__(to_move), 0, (), None, None, False)
        best = -2
        for m in st.legal_moves():
            child = st._play_unchecked(m)
            if child.outcome is not None:
                v = 1 if child.outcome.winner is not None else 0
            else:
                v = -value(child.key(), child.x, child.o, int(child.to_move))
            best = max(best, v)
        return best

    return value(s.key(), s.x, s.o, int(s.to_move))


def test_classic_matches_an_independent_negamax_everywhere() -> None:
    table = build(find_variant("classic"))
    assert len(table) == 5478
    for (xq, oq, tm), (v, d) in table.entries():
        x = sum(1 << c for c in xq)
        o = sum(1 << c for c in oq)
        s = State(find_variant("classic"), x, o, (), s_mark(tm), 0, (), None, None, False)
        won = any(mask & (o if tm == 0 else x) == mask for mask in s.variant.lines)
        if won:
            assert (v, d) == (-1, 0)
        elif x | o == s.variant.full:
            assert (v, d) == (0, 0)
        else:
            assert v == _tiny_negamax(s)


def s_mark(tm: int):  # type: ignore[no-untyped-def]
    from protocol.rules import Mark

    return Mark(tm)


def test_tactic_toe_facts() -> None:
    table = solve("tactic-toe")
    assert len(table) == 128_170
    start = State.start("tactic-toe", draw_rules=False)
    assert table.value(start) == 1
    values = table.move_values(start)
    assert {m for m, (v, _) in values.items() if v == 1} == {1, 3, 5, 7}
    assert all(values[m] == (0, ENDLESS) for m in (0, 2, 4, 6, 8))


def test_tactic_toe_agrees_with_value_iteration() -> None:
    """A second solver: repeat 'a position is won if a move reaches a lost one, lost if
    every move reaches a won one' until nothing changes, on a seeded sample's graph."""
    table = solve("tactic-toe")
    entries = dict(table.entries())
    nodes = list(entries)
    val = {n: (-1 if d == 0 and v == -1 else 0) for n, (v, d) in entries.items()}
    full = find_variant("tactic-toe")

    def kids(n):  # type: ignore[no-untyped-def]
        xq, oq, tm = n
        own = xq if tm == 0 else oq
        taken = set(xq + oq)
        for c in range(9):
            if c not in taken:
                q = (*own[1:], c) if len(own) >= 3 else (*own, c)
                yield (q, oq, 1) if tm == 0 else (xq, q, 0)

    terminal = {n for n, (v, d) in entries.items() if d == 0}
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if n in terminal or val[n] != 0:
                continue
            ks = [val[k] for k in kids(n)]
            new = 1 if -1 in ks else (-1 if all(k == 1 for k in ks) else 0)
            if new:
                val[n] = new
                changed = True
    assert full.name == "tactic-toe"
    assert all(val[n] == entries[n][0] for n in nodes)


def test_table_wins_every_won_tactic_toe_position_sampled_by_seed() -> None:
    table = solve("tactic-toe")
    player = bots.strategy("table")
    rng = random.Random(11)
    won = [n for n, (v, d) in table.entries() if v == 1]
    for xq, oq, tm in rng.sample(won, 300):
        s = State(find_variant("tactic-toe"), sum(1 << c for c in xq), sum(1 << c for c in oq), (xq, oq),
                  s_mark(tm), 0, (), None, None, False)  # fmt: skip
        limit = table.distance(s)
        for _ in range(limit):
            s = s._play_unchecked(player.choose(s, rng) if s.to_move == tm else rng.choice(s.legal_moves()))
            if s.is_over:
                break
        assert s.outcome is not None and s.outcome.winner == tm


def test_unsolvable_and_unknown_variants_are_refused() -> None:
    for name in ("5x5k4", "15x15k5", "4x5k4"):
        with pytest.raises(Unsolvable) as refused:
            solve(name)
        assert name in refused.value.message and "up to 16 cells" in refused.value.message
        assert refusal(name) == refused.value.message
    assert refusal("4x4k4") is None and refusal("tactic-toe") is None
    with pytest.raises(Exception) as info:
        solve("nope")
    assert getattr(info.value, "code", "") == "unknown_variant"


def test_disk_cache_round_trip(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import bots.solver as solver

    monkeypatch.setattr(solver, "cache_path", lambda v: tmp_path / f"{v.name}.npz")
    monkeypatch.setattr(solver, "_TABLES", {})
    first = solver.solve("classic")
    assert not first.from_cache and (tmp_path / "classic.npz").exists()
    monkeypatch.setattr(solver, "_TABLES", {})
    again = solver.solve("classic")
    assert again.from_cache and list(again.entries()) == list(first.entries())


def _negamax_with_distance(s: State) -> tuple[int, int]:
    """Plain negamax through `State`: (value, plies to the end), fastest win, slowest loss."""
    best: tuple[int, int] | None = None
    for m in s.legal_moves():
        child = s._play_unchecked(m)
        if child.outcome is not None:
            v, d = (1 if child.outcome.winner is not None else 0), 1
        else:
            cv, cd = _negamax_with_distance(child)
            v, d = -cv, cd + 1
        if v == 0:
            d = s.variant.cells - (s.x | s.o).bit_count()
        if best is None or (v, -d if v == 1 else d) > (best[0], -best[1] if best[0] == 1 else best[1]):
            best = (v, d)
    assert best is not None
    return best


@pytest.fixture(scope="module")
def table_4x4k4():  # type: ignore[no-untyped-def]
    return solve("4x4k4")


def test_4x4k4_every_reachable_position_and_the_known_draw(table_4x4k4) -> None:  # type: ignore[no-untyped-def]
    assert len(table_4x4k4) == 9_722_011
    start = State.start("4x4k4", draw_rules=False)
    assert table_4x4k4.lookup(start) == (0, 16)
    assert all(v == 0 for v, _ in table_4x4k4.move_values(start).values())


def test_4x4k4_agrees_with_plain_negamax_on_seeded_late_positions(table_4x4k4) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(7)
    seen = {1: 0, 0: 0, -1: 0}
    checked = 0
    while checked < 60:
        s = State.start("4x4k4", draw_rules=False)
        for _ in range(rng.randrange(8, 11)):
            if s.is_over:
                break
            s = s._play_unchecked(rng.choice(s.legal_moves()))
        if s.is_over:
            won = s.outcome is not None and s.outcome.winner is not None
            assert table_4x4k4.lookup(s) == ((-1, 0) if won else (0, 0))
            continue
        expected = _negamax_with_distance(s)
        assert table_4x4k4.lookup(s) == expected, s.render()
        seen[expected[0]] += 1
        checked += 1
    assert all(seen.values())  # wins, draws and losses all checked


def test_table_strategy_wins_won_4x4k4_positions_against_random(table_4x4k4) -> None:  # type: ignore[no-untyped-def]
    player = bots.strategy("table")
    rng = random.Random(5)
    won = 0
    while won < 30:
        s = State.start("4x4k4", draw_rules=False)
        for _ in range(rng.randrange(3, 9)):
            if s.is_over:
                break
            s = s._play_unchecked(rng.choice(s.legal_moves()))
        if s.is_over or table_4x4k4.value(s) != 1:
            continue
        won += 1
        side = s.to_move
        while not s.is_over:
            s = s._play_unchecked(player.choose(s, rng) if s.to_move == side else rng.choice(s.legal_moves()))
        assert s.outcome is not None and s.outcome.winner == side


def test_ttt_solve_4x4k4_reports_the_draw(table_4x4k4) -> None:  # type: ignore[no-untyped-def]
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "protocol.cli", "solve", "4x4k4", "--json"],
                          capture_output=True, text=True, timeout=240, check=True)  # fmt: skip
    report = json.loads(done.stdout)
    assert report["states"] == 9_722_011 and report["start_value"] == 0
    assert report["wins"] + report["draws"] + report["losses"] == 9_722_011
    assert len(report["first_moves"]) == 16
    refused = subprocess.run([sys.executable, "-m", "protocol.cli", "solve", "5x5k4"],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert refused.returncode != 0 and "too many positions" in refused.stderr
