"""`server.moves`, the fast path of a plain move, decides what the general path decides.

Two arenas in the same state (one a deep copy of the other) are given the same requests
at the same times: one decides each through the general path only (`events.receive`),
the other as the server's shell does (`moves.plain` first, `events.receive` when that
says None). Every request must give the same frames, to the same connections, in the
same order, the same store operations and the same times to be woken; and the
operations, written to two real stores, the same rows. The games take in moves that are
refused (occupied, off the board, out of turn, by a spectator, in an unknown room), that
end games (a line, a full board), that come after a flag fell or too late for a first
move, and resignations and rematches, under every kind of clock, with a spectator who
came in mid-game.
"""

from __future__ import annotations

import copy
import random
import sqlite3
from pathlib import Path

import pytest

from protocol import messages as m
from server import events, moves
from server.arena import Arena
from server.config import ServerConfig
from server.decision import Decision
from server.ops import StoreOp
from server.storage import open_store

#: (conn, frame) sent, store operations, (due, key) wake-ups.
Outcome = tuple[list[tuple[int, str]], list[StoreOp], list[tuple[float, str]]]

#: Columns the store stamps with the wall clock.
WALL_CLOCK = ("at", "started", "ended", "created", "updated")

CONTROLS: list[m.NoClock | m.PerMove | m.Increment] = [
    m.NoClock(),
    m.PerMove(move_ms=2000),
    m.Increment(base_ms=3000, increment_ms=500),
]


def carried_out(arena: Arena, decision: Decision, now: float) -> Outcome:
    """What the shell sends for ``decision`` (``now`` at once, ``later`` once stored)."""
    sent = [s for item in decision.now for s in arena.deliver(item, now)]
    sent += [s for item in decision.later for s in arena.deliver(item, now)]
    return sent, list(decision.ops), list(decision.wake)


def general(arena: Arena, conn: int, message: m.ClientMessage, now: float) -> Outcome:
    return carried_out(arena, events.receive(arena, conn, message, now), now)


def shell(arena: Arena, conn: int, message: m.ClientMessage, now: float, used: list[bool]) -> Outcome:
    """As `ArenaServer.receive` decides a move: the fast path, else the general one."""
    played = moves.plain(arena, conn, message, now) if isinstance(message, m.Move) else None
    used.append(played is not None)
    if played is None:
        return general(arena, conn, message, now)
    wake = [] if played.due is None else [(played.due, played.room)]
    return arena.played(played), list(played.ops), wake


def opened(variant: str, control: m.NoClock | m.PerMove | m.Increment) -> tuple[Arena, str, list[StoreOp]]:
    """An arena with a game of ``variant`` going between connections 1 (X) and 2 (O); the
    room's id and the operations stored so far."""
    arena = Arena(ServerConfig(first_move=5.0))
    ops: list[StoreOp] = []
    for conn in (1, 2, 3, 4):
        arena.connect(conn, "127.0.0.1")
        ops += general(arena, conn, m.Hello(name=f"p{conn}", kind="bot"), 0.0)[1]
    create = m.CreateRoom(variant=variant, seat="x", rated=True, time_control=control)
    ops += general(arena, 1, create, 0.0)[1]
    room = next(iter(arena.sessions[1].rooms))
    ops += general(arena, 2, m.Join(room=room), 0.0)[1]
    return arena, room, ops


def to_move(arena: Arena, room: str) -> int | None:
    """The connection of the player to move in ``room`` (None: no game going)."""
    r = arena.rooms[room]
    game = r.game
    if game is None or game.state.is_over:
        return None
    pid = r.seats[game.state.to_move]
    assert pid is not None
    return arena.online[pid].conn


def rows(ops: list[StoreOp], path: Path) -> dict[str, list[tuple[object, ...]]]:
    """The rows ``ops`` leave in a real store, but for the wall-clock times it stamps."""
    store = open_store(str(path), "OFF")
    try:
        store.write(ops)
    finally:
        store.close()
    db = sqlite3.connect(path)
    tables = {}
    for table in ("players", "ratings", "rooms", "games", "moves"):
        cursor = db.execute(f"SELECT * FROM {table}")
        keep = [i for i, col in enumerate(cursor.description) if col[0] not in WALL_CLOCK]
        tables[table] = sorted(tuple(row[i] for i in keep) for row in cursor)
    db.close()
    return tables


def play(
    variant: str, control: m.NoClock | m.PerMove | m.Increment, seed: int, steps: int, tmp: Path
) -> list[bool]:
    """Play ``steps`` random requests through both paths; whether each took the fast one."""
    rng = random.Random(seed)
    slow, room, setup = opened(variant, control)
    fast = copy.deepcopy(slow)
    used: list[bool] = []
    stored: tuple[list[StoreOp], list[StoreOp]] = (list(setup), list(setup))
    cells = slow.rooms[room].variant.cells
    timed = not isinstance(control, m.NoClock)
    now = 0.0
    for step in range(steps):
        now += rng.choice((0.01, 0.05, 0.3, 1.0, 2.6)) if timed else 0.01
        game = slow.rooms[room].game
        mover = to_move(slow, room)
        roll = rng.random()
        conn: int
        message: m.ClientMessage
        if step == steps // 3:  # a spectator comes in mid-game
            conn, message = 3, m.Spectate(room=room)
        elif mover is None:
            conn, message = rng.choice((1, 2)), m.Rematch(room=room)
        elif roll < 0.75:
            assert game is not None
            conn, message = (
                mover,
                m.Move(room=room, cell=rng.choice(game.state.legal_moves()), ref=f"r{step}"),
            )
        elif roll < 0.82:  # most often an occupied cell
            conn, message = mover, m.Move(room=room, cell=rng.randrange(cells))
        elif roll < 0.85:
            conn, message = mover, m.Move(room=room, cell=cells + rng.randrange(3))
        elif roll < 0.89:  # out of turn
            conn, message = 3 - mover, m.Move(room=room, cell=rng.randrange(cells))
        elif roll < 0.93:  # a spectator, a stranger, an unknown room
            conn, message = rng.choice(
                (
                    (3, m.Move(room=room, cell=0)),
                    (4, m.Move(room=room, cell=0)),
                    (1, m.Move(room="r0", cell=0)),
                )
            )
        elif roll < 0.94:
            conn, message = rng.choice((1, 2)), m.Resign(room=room)
        else:  # a deadline passes first (the flag falls, the first move comes too late)
            assert game is not None
            now += 6.0
            conn, message = mover, m.Move(room=room, cell=rng.choice(game.state.legal_moves()))
        one = general(slow, conn, message, now)
        other = shell(fast, conn, message, now, used)
        assert other == one, (step, message)
        stored[0].extend(one[1])
        stored[1].extend(other[1])
    assert rows(stored[0], tmp / "general.db") == rows(stored[1], tmp / "fast.db")
    return used


@pytest.mark.parametrize("control", CONTROLS, ids=["untimed", "per-move", "increment"])
@pytest.mark.parametrize("variant", ["classic", "tactic-toe", "7x7k4"])
def test_a_plain_move_is_decided_the_same_by_both_paths(
    variant: str, control: m.NoClock | m.PerMove | m.Increment, tmp_path: Path
) -> None:
    used = play(variant, control, seed=len(variant) * 7 + len(str(control)), steps=600, tmp=tmp_path)
    # both paths were taken: the fast one for most moves, the general one for the rest
    assert sum(used) > len(used) // 3
    assert used.count(False) > 20


def test_the_fast_path_changes_nothing_when_it_declines() -> None:
    """A move it declines (here: out of turn, then one that wins) leaves the arena as it
    was, so the general path decides it from the same state."""
    arena, room, _ = opened("classic", m.NoClock())
    for conn, cell in ((1, 0), (2, 3), (1, 1), (2, 4)):
        assert moves.plain(arena, conn, m.Move(room=room, cell=cell), 0.1) is not None
    r = arena.rooms[room]
    assert r.game is not None
    state, seq, log = r.game.state, r.seq, r.replay_since(0)
    assert moves.plain(arena, 2, m.Move(room=room, cell=2), 0.2) is None  # X is to move
    assert moves.plain(arena, 1, m.Move(room=room, cell=2), 0.2) is None  # X wins: not plain
    assert r.game.state is state and r.seq == seq and r.replay_since(0) == log
    assert general(arena, 1, m.Move(room=room, cell=2), 0.2)[0]  # the general path decides it
    assert r.game.state.is_over
