"""An outside gomoku AI as a Gomocup engine: `GomokuAI` of the PyPI package
``gomoku-terminal`` (MIT; pure Python), behind the Gomocup ("piskvork") protocol.

Run: python bench/outside_gomoku.py [--level hard|medium|easy]

Its ``hard`` level (the default here) wins or blocks a five at once, else runs a
minimax with alpha-beta over the 20 cells near stones that its pattern score likes
best (live/dead fours, threes and twos along the four directions): two plies deep
for the first 10 stones, three after. It has no clock: it always searches that deep,
so the time it takes is its own (``bench/strength.py --outside`` prints it). The
package is an optional dependency (``pip install -e '.[bench]'``); it installs a
top-level package named ``gomoku``.

What this wrapper speaks (the subset `bots.engines` sends): ``ABOUT``, ``START n``
(``RECTSTART`` only for square boards), ``INFO`` (ignored), ``BEGIN``, ``TURN x,y``,
``BOARD`` ... ``DONE``, ``END``; ``x`` is the column, ``y`` the row.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _board(size: int) -> Any:
    from gomoku.board import Board

    class SizedBoard(Board):  # type: ignore[misc]
        SIZE = size

    return SizedBoard()


def _reply(ai: Any, board: Any) -> str:
    own = board.WHITE
    move = ai.get_move(board, own)
    if move is None:
        return "ERROR no move"
    row, col = move
    board.place_stone(row, col, own)
    return f"{col},{row}"


def serve(level: str) -> None:
    from gomoku.ai import GomokuAI

    ai = GomokuAI(level)
    board: Any = None
    size = 0
    rows: list[tuple[int, int, int]] = []
    reading_board = False

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    for raw in sys.stdin:
        line = raw.strip()
        word = line.split(" ", 1)[0].upper()
        if reading_board:
            if word == "DONE":
                reading_board = False
                board = _board(size)
                for x, y, field in rows:
                    board.place_stone(y, x, board.WHITE if field == 1 else board.BLACK)
                say(_reply(ai, board))
            else:
                x, y, field = (int(p) for p in line.split(","))
                rows.append((x, y, field))
            continue
        if word == "ABOUT":
            say(f'name="gomoku-terminal GomokuAI", version="1.0.2", level="{level}"')
        elif word in ("START", "RECTSTART"):
            dims = [int(p) for p in line.split(" ", 1)[1].replace(",", " ").split()]
            if len(set(dims)) != 1 or not 5 <= dims[0] <= 40:
                say("ERROR only square boards from 5 to 40")
                continue
            size = dims[0]
            board = _board(size)
            say("OK")
        elif word == "INFO":
            continue
        elif word == "BEGIN":
            board = _board(size)
            say(_reply(ai, board))
        elif word == "TURN":
            x, y = (int(p) for p in line.split(" ", 1)[1].split(","))
            board.place_stone(y, x, board.BLACK)
            say(_reply(ai, board))
        elif word == "BOARD":
            rows, reading_board = [], True
        elif word == "END":
            return
        else:
            say(f"UNKNOWN {word}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", choices=("easy", "medium", "hard"), default="hard")
    serve(parser.parse_args().level)


if __name__ == "__main__":
    main()
