"""The arena's own work for a move, without sockets, store or event loop: what the server
does above the floor (`bench/floor.py`), measured alone, so a change to it shows.

Run: .venv/bin/python bench/arena_moves.py [--moves 300000] [--games 500]

``--games`` games of 15x15k5 (two players each, as `bench/load.py` plays them) play
random legal moves, a rematch after each game. Each move is timed (CPU time of this
thread) from its frame to the frames it makes, as the server's shell makes them: the
rate limit (`TokenBucket.take`), `protocol.frames.read_client` (the pydantic
validation), the decision (`server.moves.plain` for a plain move, else
`server.events.receive`: the room, the rules) and its delivery once stored
(`Arena.played` or `Arena.deliver`: the frames, the replay log, who hears what).
Not timed: making the client's frame, the rematches. Prints microseconds a move for
each tenth of the run (a rise would be the arena's own state growing), then the whole run's, and each phase's.
To compare two checkouts, run it from each (``cd DIR && python bench/arena_moves.py``:
the checkout in the current directory is imported first).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time

sys.path.insert(0, os.getcwd())

from protocol import messages as m
from protocol.bucket import TokenBucket
from protocol.frames import read_client
from protocol.rules import find_variant
from server import events, moves
from server.arena import Arena
from server.config import ServerConfig

VARIANT = "15x15k5"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=300_000)
    parser.add_argument("--games", type=int, default=500)
    args = parser.parse_args()
    arena = Arena(ServerConfig(signup_burst=10**9, signup_rate=1e9))
    now = 1000.0

    def settle(conn: int, message: m.ClientMessage) -> list[tuple[int, str]]:
        decision = events.receive(arena, conn, message, now)
        sent = [sent for item in decision.now for sent in arena.deliver(item, now)]
        return sent + [sent for item in decision.later for sent in arena.deliver(item, now)]

    rooms = []
    for game in range(args.games):
        x, o = 2 * game, 2 * game + 1
        for conn in (x, o):
            arena.connect(conn, "127.0.0.1")
            settle(conn, m.Hello(name=f"p{conn}", kind="bot"))
        settle(x, m.CreateRoom(variant=VARIANT, seat="x", rated=False))
        room = next(iter(arena.sessions[x].rooms))
        settle(o, m.Join(room=room))
        rooms.append(room)
    cells = find_variant(VARIANT).cells
    rng = random.Random(1)
    free = [set(range(cells)) for _ in rooms]
    to_move = [0] * len(rooms)  # 0: the game's first connection is to move
    buckets = [TokenBucket(1e9, 1e9, now) for _ in range(2 * len(rooms))]
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)  # as `ttt serve`
    clock = time.thread_time
    spent = {"bucket": 0.0, "read_client": 0.0, "decide": 0.0, "deliver": 0.0}
    tenth = max(1, args.moves // 10)
    done = 0
    timed = last = 0.0
    while done < args.moves:
        for game, room in enumerate(rooms):
            conn = 2 * game + to_move[game]
            cell = rng.choice(tuple(free[game]))
            frame = json.dumps({"type": "move", "room": room, "cell": cell})
            now += 0.0002
            t0 = clock()
            buckets[conn].take(now)
            t1 = clock()
            message = read_client(frame)
            t2 = clock()
            assert type(message) is m.Move
            played = moves.plain(arena, conn, message, now)
            if played is None:
                decision = events.receive(arena, conn, message, now)
            t3 = clock()
            if played is not None:
                sent = arena.played(played)
            else:
                sent = [sent for item in decision.later for sent in arena.deliver(item, now)]
            t4 = clock()
            spent["bucket"] += t1 - t0
            spent["read_client"] += t2 - t1
            spent["decide"] += t3 - t2
            spent["deliver"] += t4 - t3
            timed += t4 - t0
            done += 1
            free[game].discard(cell)
            to_move[game] ^= 1
            if not free[game] or any('"type":"game_over"' in text for _, text in sent):
                for player in (2 * game, 2 * game + 1):
                    settle(player, m.Rematch(room=room))
                free[game] = set(range(cells))
                x = arena.rooms[room].seats[0]
                first = arena.sessions[2 * game].player
                to_move[game] = 0 if first is not None and first.id == x else 1
            if done % tenth == 0:
                print(f"moves {done}: {(timed - last) / tenth * 1e6:.2f} us/move", flush=True)
                last = timed
            if done >= args.moves:
                break
    print(f"all {done} moves: {timed / done * 1e6:.2f} us/move")
    print("  " + ", ".join(f"{name} {seconds / done * 1e6:.2f}" for name, seconds in spent.items()))


if __name__ == "__main__":
    main()
