"""The store's cost per move as the moves table grows: why a long run's CPU per move rises.

Run: .venv/bin/python bench/store_growth.py [--moves 500000] [--batch 20] [--games 500]

Writes moves of ``--games`` games at once (each ends after 100 plies and the room's next
game starts) through `server.store.Store.write`, ``--batch`` moves a transaction (about
what the writer's thread takes at 5,000 moves/s paced; flat out it is 100 to 200), with a
checkpoint every 5,000 moves and `Store.catch_up` after each transaction, as the writer
does, but ``synchronous=OFF``: the figures are the thread's CPU and the bytes it hands the
kernel, not the disk's flushes. Prints, for each tenth of the run, the CPU microseconds
and the KiB written (the WAL and the checkpoints' copies into the database) per move.

What it shows: each move adds an entry to the ``moves`` primary-key index (game, ply),
where the game's entries are; with hundreds of games going, a transaction's moves land
on as many leaf pages once the index has many more leaves than a transaction has moves,
and each such page is written whole to the WAL and copied back by the checkpoint. The
bytes per move, and the CPU with them, grow until the index is that large, then stay.
So what a move costs follows the page size (`server.store.PAGE_SIZE` for a new file)
and how many pages it dirties (one since schema version 5: before it, each move also
rewrote its room's row).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time

from server.ops import GameSaved, MoveSaved, RoomSaved, StoreOp
from server.store import Store

PLIES = 100
CONTROL = '{"kind":"none"}'


def written() -> int:
    """Bytes this process has handed to write calls so far."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


def game_saved(room: str, number: int) -> GameSaved:
    game = f"{room}.{number}"
    return GameSaved(game, room, number, "15x15k5", "a", "b", CONTROL, False, None, (), None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=20, help="moves a transaction")
    parser.add_argument("--games", type=int, default=500, help="games going at once")
    args = parser.parse_args()
    rng = random.Random(1)
    rooms = [f"{rng.getrandbits(32):08x}" for _ in range(args.games)]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(os.path.join(tmp, "growth.db"), "OFF")
        ops: list[StoreOp] = []
        for room in rooms:
            ops += [RoomSaved(room, "15x15k5", CONTROL, False, False, None, None, (), "a", "b", 1, False)]
            ops += [game_saved(room, 1)]
        store.write(ops)
        ply = dict.fromkeys(rooms, 0)
        number = dict.fromkeys(rooms, 1)
        seq = dict.fromkeys(rooms, 1)
        tenth = args.moves // 10
        done = transactions = 0
        cpu, wrote = time.process_time(), written()
        while done < args.moves:
            ops = []
            for _ in range(args.batch):
                room = rng.choice(rooms)
                ply[room] += 1
                seq[room] += 1
                if ply[room] > PLIES:
                    ply[room] = 1
                    number[room] += 1
                    ops.append(game_saved(room, number[room]))
                ops.append(MoveSaved(f"{room}.{number[room]}", ply[room], 7, None, None, room, seq[room]))
            store.write(ops)
            store.catch_up()
            transactions += 1
            if transactions % max(1, 5000 // args.batch) == 0:
                store.checkpoint()
            before = done
            done += args.batch
            if done // tenth > before // tenth:
                now_cpu, now_wrote = time.process_time(), written()
                pages = os.path.getsize(os.path.join(tmp, "growth.db")) // 4096
                print(
                    f"moves {done}: {(now_cpu - cpu) / tenth * 1e6:.1f} us CPU/move, "
                    f"{(now_wrote - wrote) / tenth / 1024:.1f} KiB written/move, database {pages} pages",
                    flush=True,
                )
                cpu, wrote = now_cpu, now_wrote
        store.close()


if __name__ == "__main__":
    main()
