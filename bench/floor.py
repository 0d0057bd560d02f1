"""The floor: the least a durable server of ttt-arena's protocol does for a move.

Run: python bench/floor.py PORT DB [--loop asyncio|uvloop] [--store none]

`bench/load.py` starts it as a baseline beside the arena. It speaks the subset of
the protocol the load clients use (hello, create_room, join, move, rematch) and
answers with the same frames, byte for byte (the ``moved`` and ``ok`` of a move
carry the same fields in the same order), over the same ``websockets`` library
with the same frame shortcut (`server.connection.ArenaConnection`) and the same
gathering of a connection's frames into one write.

Its moves are stored the way the arena stores them: a writer thread takes every
move submitted meanwhile and writes them as one statement into the arena's own
schema (``server.schema.migrate``), the statement of ``server.store.moves_sql``
(each move's row with its room's seq, and nothing else: schema version 5), in WAL
mode with ``synchronous=FULL`` and the arena's page size, and only then are the frames sent; a second
connection checkpoints the WAL every second, as the arena's does. What it leaves
out is everything the arena decides: no rooms beyond two connections and a
counter, no rules (a cell is taken on trust; a game ends when the board is full),
no clocks, no validation beyond ``json.loads``.

``--store none`` skips the writes (frames go out at once): the floor without
durability.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from protocol.rules import find_variant
from server.connection import ArenaConnection, send_texts
from server.schema import migrate
from server.store import MOVES_PER_STATEMENT, PAGE_SIZE, moves_sql

Sends = list[tuple[ServerConnection, str]]
#: A room row to store (or None), a move row to store (or None), and the frames to send after.
Item = tuple[tuple[Any, ...] | None, tuple[Any, ...] | None, Sends]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_NO_CLOCKS = {"x_ms": None, "o_ms": None, "running": None}
_NO_VANISH = {"x": None, "o": None}


def write_frames(sends: Sends) -> None:
    """Each connection's frames in one transport write, framed as the arena's outbox frames
    them (`server.connection.send_texts`)."""
    per: dict[ServerConnection, list[str]] = {}
    for ws, text in sends:
        per.setdefault(ws, []).append(text)
    for ws, texts in per.items():
        if ws.protocol.state is not State.OPEN:
            continue
        send_texts(ws, texts)


class Writer:
    """One thread: waits for an item, takes what else is pending, writes all of it in one
    transaction (one statement when it is only moves), then sends its frames on the loop."""

    def __init__(self, path: str | None, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self.db: sqlite3.Connection | None = None
        if path is not None:
            self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self.db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # as the arena makes a new file
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.execute("PRAGMA wal_autocheckpoint=0")  # as the arena: checkpoints beside the writer
            migrate(self.db, "sqlite")
            threading.Thread(target=self._run, daemon=True).start()
            threading.Thread(target=self._checkpoints, args=(path,), daemon=True).start()

    def submit(self, room: tuple[Any, ...] | None, move: tuple[Any, ...] | None, sends: Sends) -> None:
        if self.db is None:
            write_frames(sends)
        else:
            self.pending.put((room, move, sends))

    def _run(self) -> None:
        assert self.db is not None
        cur = self.db.cursor()
        while True:
            items = [self.pending.get()]
            while len(items) < 5000 and not self.pending.empty():
                items.append(self.pending.get_nowait())
            now = time.time()
            rooms = [r for r, _, _ in items if r is not None]
            moves = [mv for _, mv, _ in items if mv is not None]
            if rooms:
                cur.execute("BEGIN")
                cur.executemany("INSERT OR REPLACE INTO rooms VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rooms)
            for start in range(0, len(moves), MOVES_PER_STATEMENT):
                chunk = moves[start : start + MOVES_PER_STATEMENT]
                cur.execute(
                    moves_sql(len(chunk)),
                    [
                        v
                        for (game, ply, cell, x_ms, o_ms, seq) in chunk
                        for v in (game, ply, cell, x_ms, o_ms, now, seq)
                    ],
                )
            if rooms:
                cur.execute("COMMIT")
            self.loop.call_soon_threadsafe(self._send, items)

    @staticmethod
    def _checkpoints(path: str) -> None:
        """What the arena's writer does beside it: a PASSIVE checkpoint every second, on a
        connection of its own, so the WAL does not grow without end."""
        db = sqlite3.connect(path, check_same_thread=False)
        while True:
            time.sleep(1.0)
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    @staticmethod
    def _send(items: list[Item]) -> None:
        write_frames([s for _, _, sends in items for s in sends])


class Table:
    """Two connections and a counter: all the floor knows of a room."""

    def __init__(self, room: str, cells: int, creator: ServerConnection) -> None:
        self.room = room
        self.cells = cells
        self.seats: list[ServerConnection | None] = [creator, None]
        self.seq = 0
        self.number = 0
        self.ply = 0
        self.rematch: set[ServerConnection] = set()

    def game_started(self) -> str:
        self.number += 1
        self.ply = 0
        self.seq += 1
        return _dumps({"type": "game_started", "room": self.room, "seq": self.seq, "number": self.number})


class Floor:
    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.tables: dict[str, Table] = {}
        self.ids = 0

    def frame(self, ws: ServerConnection, text: str) -> None:
        msg = json.loads(text)
        kind = msg["type"]
        ref = msg.get("ref")
        if kind == "move":
            self.move(ws, msg["room"], msg["cell"], ref)
        elif kind == "hello":
            write_frames([(ws, _dumps({"type": "welcome", "player": {"name": msg["name"]}, "ref": ref}))])
        elif kind == "create_room":
            self.ids += 1
            room = f"r{self.ids:07d}"
            self.tables[room] = Table(room, find_variant(msg["variant"]).cells, ws)
            row = (room, msg["variant"], "{}", 0, 0, None, None, "[]", None, None, 0, 0, time.time(), 0.0)
            self.writer.submit(row, None, [(ws, _dumps({"type": "joined", "room": room, "ref": ref}))])
        elif kind == "join":
            table = self.tables[msg["room"]]
            table.seats[1] = ws
            started = table.game_started()
            sends = [(p, started) for p in table.seats if p is not None]
            self.writer.submit(None, None, [*sends, (ws, _dumps({"type": "joined", "room": table.room}))])
        elif kind == "rematch":
            table = self.tables[msg["room"]]
            table.rematch.add(ws)
            if len(table.rematch) < 2:
                write_frames([(ws, _dumps({"type": "ok", "ref": ref, "seq": None}))])
                return
            table.rematch.clear()
            table.seats.reverse()
            started = table.game_started()
            sends = [(p, started) for p in table.seats if p is not None]
            self.writer.submit(
                None, None, [*sends, (ws, _dumps({"type": "ok", "ref": ref, "seq": table.seq}))]
            )

    def move(self, ws: ServerConnection, room: str, cell: int, ref: str | None) -> None:
        table = self.tables[room]
        table.ply += 1
        table.seq += 1
        seq = table.seq
        game = f"{room}.{table.number}"
        moved = _dumps(
            {
                "type": "moved",
                "room": room,
                "seq": seq,
                "game": game,
                "ply": table.ply,
                "cell": cell,
                "mark": "x" if table.ply % 2 else "o",
                "vanished": None,
                "next_to_vanish": _NO_VANISH,
                "clocks": _NO_CLOCKS,
            }
        )
        sends = [(p, moved) for p in table.seats if p is not None]
        sends.append((ws, _dumps({"type": "ok", "ref": ref, "seq": seq})))
        if table.ply >= table.cells:  # the board is full: the game is over
            table.seq += 1
            over = _dumps({"type": "game_over", "room": room, "seq": table.seq, "game": game})
            sends += [(p, over) for p in table.seats if p is not None]
        self.writer.submit(None, (game, table.ply, cell, None, None, seq), sends)


async def main(port: int, db: str | None) -> None:
    floor = Floor(Writer(db, asyncio.get_running_loop()))

    async def handle(ws: ServerConnection) -> None:
        assert isinstance(ws, ArenaConnection)
        on_frame: Callable[[str], None] = lambda text: floor.frame(ws, text)  # noqa: E731
        ws.on_text = on_frame
        try:
            async for text in ws:
                floor.frame(ws, str(text))
        except ConnectionClosed:
            pass
        finally:
            ws.on_text = None

    async with serve(
        handle,
        "127.0.0.1",
        port,
        compression=None,
        ping_interval=None,
        max_queue=16,
        create_connection=ArenaConnection,
    ):
        await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("db")
    parser.add_argument("--loop", default="uvloop", choices=["asyncio", "uvloop"])
    parser.add_argument("--store", default="full", choices=["full", "none"])
    args = parser.parse_args()
    coro = main(args.port, None if args.store == "none" else args.db)
    if args.loop == "uvloop":
        import uvloop

        uvloop.run(coro)
    else:
        asyncio.run(coro)
