"""The peer most people start from: a server written like the ``websockets`` tutorial's
Connect Four (a handler per connection, ``async for message in websocket``,
``json.loads``, a game object, ``broadcast``), playing k-in-a-row. It stores nothing.

Run: python bench/tutorial.py PORT [--loop asyncio|uvloop]

`bench/load.py` starts it as a baseline: it speaks the subset of the protocol the
load clients use and sends the same ``moved`` and ``ok`` frames as the arena.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
from typing import Any

from websockets.asyncio.server import ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed

from protocol.rules import find_variant

JOIN: dict[str, tuple[Game, set[ServerConnection]]] = {}


class Game:
    """The tutorial's ``Connect4``, for a board of rows x cols and k in a row."""

    def __init__(self, rows: int, cols: int, k: int) -> None:
        self.rows, self.cols, self.k = rows, cols, k
        self.board: list[str | None] = [None] * (rows * cols)
        self.moves: list[int] = []
        self.winner: str | None = None

    @property
    def last_player(self) -> str:
        return "x" if len(self.moves) % 2 else "o"

    def play(self, player: str, cell: int) -> None:
        if player == self.last_player:
            raise ValueError("It isn't your turn.")
        if not 0 <= cell < len(self.board) or self.board[cell] is not None:
            raise ValueError("This cell is taken.")
        self.board[cell] = player
        self.moves.append(cell)
        if self.last_player_won(cell):
            self.winner = player

    def last_player_won(self, cell: int) -> bool:
        player = self.board[cell]
        row, col = divmod(cell, self.cols)
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            count = 1
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < self.rows and 0 <= c < self.cols and self.board[r * self.cols + c] == player:
                    count += 1
                    r, c = r + sign * dr, c + sign * dc
            if count >= self.k:
                return True
        return False

    @property
    def over(self) -> bool:
        return self.winner is not None or len(self.moves) == len(self.board)


def dumps(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


async def error(websocket: ServerConnection, message: str) -> None:
    await websocket.send(dumps({"type": "error", "message": message}))


class Table:
    def __init__(self, key: str, variant: str) -> None:
        self.key = key
        self.variant = find_variant(variant)
        self.players: list[ServerConnection] = []
        self.number = 0
        self.seq = 0
        self.game = self.new_game()
        self.rematch: set[ServerConnection] = set()

    def new_game(self) -> Game:
        self.number += 1
        return Game(self.variant.rows, self.variant.cols, self.variant.k)


async def play(websocket: ServerConnection, table: Table, connected: set[ServerConnection]) -> None:
    async for message in websocket:
        event = json.loads(message)
        if event["type"] == "rematch":
            table.rematch.add(websocket)
            if len(table.rematch) == 2:
                table.rematch.clear()
                table.players.reverse()
                table.game = table.new_game()
                table.seq += 1
                broadcast(connected, dumps({"type": "game_started", "room": table.key, "seq": table.seq}))
            await websocket.send(dumps({"type": "ok", "ref": event.get("ref"), "seq": table.seq}))
            continue
        ref = event.get("ref")
        game = table.game
        player = "x" if websocket is table.players[0] else "o"
        cell = event["cell"]
        try:
            game.play(player, cell)
        except ValueError as exc:
            await error(websocket, str(exc))
            continue
        table.seq += 1
        seq = table.seq
        event = {
            "type": "moved",
            "room": table.key,
            "seq": seq,
            "game": f"{table.key}.{table.number}",
            "ply": len(game.moves),
            "cell": cell,
            "mark": player,
            "vanished": None,
            "next_to_vanish": {"x": None, "o": None},
            "clocks": {"x_ms": None, "o_ms": None, "running": None},
        }
        broadcast(connected, dumps(event))
        await websocket.send(dumps({"type": "ok", "ref": ref, "seq": seq}))
        if game.over:
            table.seq += 1
            broadcast(connected, dumps({"type": "game_over", "room": table.key, "seq": table.seq}))


async def handler(websocket: ServerConnection) -> None:
    message = await websocket.recv()
    event = json.loads(message)
    assert event["type"] == "hello"
    await websocket.send(dumps({"type": "welcome", "player": {"name": event["name"]}}))
    message = await websocket.recv()
    event = json.loads(message)
    try:
        if event["type"] == "create_room":
            key = secrets.token_hex(4)
            table = Table(key, event["variant"])
            connected = {websocket}
            table.players.append(websocket)
            JOIN[key] = table, connected
            await websocket.send(dumps({"type": "joined", "room": key}))
            await play(websocket, table, connected)
        elif event["type"] == "join":
            table, connected = JOIN[event["room"]]
            connected.add(websocket)
            table.players.append(websocket)
            table.seq += 1
            broadcast(connected, dumps({"type": "game_started", "room": table.key, "seq": table.seq}))
            await websocket.send(dumps({"type": "joined", "room": table.key}))
            await play(websocket, table, connected)
    except ConnectionClosed:
        pass


async def main(port: int) -> None:
    async with serve(handler, "127.0.0.1", port, compression=None, ping_interval=None):
        await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--loop", default="uvloop", choices=["asyncio", "uvloop"])
    args = parser.parse_args()
    if args.loop == "uvloop":
        import uvloop

        uvloop.run(main(args.port))
    else:
        asyncio.run(main(args.port))
