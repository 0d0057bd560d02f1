"""The Gomocup ("piskvork") protocol, as the manager speaks it: lines in, lines out, no I/O.

What we send: ``ABOUT``, then ``START n`` (square boards) or ``RECTSTART w,h``,
then ``INFO rule 0`` (freestyle: five or more in a row wins), ``INFO game_type 1``
and ``INFO timeout_match 0``; before each move ``INFO timeout_turn T`` and
``INFO time_left 2147483647`` (no match clock: we time each move), then
``BEGIN`` on an empty board, else ``BOARD``, one ``x,y,field`` line a stone in
the order played (field 1: the engine's own, 2: the opponent's) and ``DONE``.
``END`` closes it. ``x`` is the column and ``y`` the row, from 0.

What we accept: ``OK`` or ``ERROR msg`` to the start, ``x,y`` (or ``SUGGEST
x,y``) for a move; ``MESSAGE``, ``DEBUG``, ``UNKNOWN`` and the ``ABOUT`` line
are chatter. Anything else where a move is due is garbage, and so is
``ERROR`` there.

Only freestyle gomoku fits: a line of exactly 5 and marks that stay. Other
variants (tactic-toe, k other than 5) are refused before any line is sent.
"""

from __future__ import annotations

import re

from bots.engines.errors import EngineIllegal, EngineRefused
from protocol.rules import Cell, State, Variant

NAME = "gomocup"
#: ``time_left`` when the match has no clock, as the protocol says.
UNLIMITED = 2147483647

_MOVE = re.compile(r"^(?:SUGGEST\s+)?(\d+)\s*,\s*(\d+)$", re.IGNORECASE)
_CHATTER = ("MESSAGE", "DEBUG", "UNKNOWN")


def refusal(variant: Variant) -> str | None:
    """Why the protocol cannot express ``variant``, or None when it can."""
    if variant.max_marks is not None:
        return (
            f"the Gomocup protocol cannot express {variant.name}: marks vanish there; "
            "use --engine-protocol ttt"
        )
    if variant.k != 5:
        return (
            f"the Gomocup protocol plays five in a row, not {variant.k} ({variant.name}); "
            "use --engine-protocol ttt"
        )
    return None


def setup(variant: Variant) -> tuple[int, int]:
    """What one engine process is started for: the board size (START is once a process)."""
    return (variant.rows, variant.cols)


def opening(variant: Variant) -> list[str]:
    """The lines that start an engine for ``variant``'s board."""
    if variant.rows == variant.cols:
        return ["ABOUT", f"START {variant.cols}"]
    return ["ABOUT", f"RECTSTART {variant.cols},{variant.rows}"]


def opened(line: str, variant: Variant) -> bool:
    """Whether ``line`` (an answer to `opening`) says the engine is ready; False: chatter.

    Raises:
        EngineRefused: the engine answered ``ERROR`` (say, it does not play this size).
    """
    word = line.split(maxsplit=1)[0].upper() if line else ""
    if word == "OK":
        return True
    if word == "ERROR":
        raise EngineRefused(f"the engine refused the {variant.size} board: {line[5:].strip() or 'ERROR'}")
    return False


def after_opening(variant: Variant) -> list[str]:
    """The lines sent once the engine said OK: the rule and the kind of match."""
    return ["INFO rule 0", "INFO game_type 1", "INFO timeout_match 0"]


def request(state: State, told_ms: int, seed: int) -> list[str]:
    """The lines asking for a move in ``state`` within ``told_ms`` (``seed``: unused here)."""
    lines = [f"INFO timeout_turn {told_ms}", f"INFO time_left {UNLIMITED}"]
    if not state.moves and not state.x and not state.o:
        return [*lines, "BEGIN"]
    cols = state.variant.cols
    mover = state.to_move
    lines.append("BOARD")
    for cell in _stones(state):
        row, col = divmod(cell, cols)
        lines.append(f"{col},{row},{1 if state.mark_at(cell) is mover else 2}")
    return [*lines, "DONE"]


def _stones(state: State) -> list[Cell]:
    """The stones on the board, in the order they were played when the move list has them."""
    on_board = {c for c in range(state.variant.cells) if state.mark_at(c) is not None}
    ordered = [c for c in state.moves if c in on_board]
    return ordered + sorted(on_board - set(ordered))


def answer(line: str, state: State) -> Cell | None:
    """The cell ``line`` plays in ``state``; None for chatter.

    Raises:
        EngineIllegal: garbage, ``ERROR``, a cell off the board or taken.
    """
    line = line.strip()
    move = _MOVE.match(line)
    if move is None:
        if (line.split() or [""])[0].upper() in _CHATTER or line.startswith("name="):
            return None
        raise EngineIllegal(f"the engine answered {_shown(line)}, not a move x,y")
    col, row = int(move.group(1)), int(move.group(2))
    v = state.variant
    if not (0 <= col < v.cols and 0 <= row < v.rows):
        raise EngineIllegal(f"the engine played {col},{row}, off the {v.cols}x{v.rows} board")
    cell = row * v.cols + col
    if not state.is_legal(cell):
        raise EngineIllegal(f"the engine played {col},{row} (cell {cell}), which is taken")
    return cell


def closing() -> list[str]:
    return ["END"]


def _shown(line: str) -> str:
    return repr(line if len(line) <= 60 else line[:57] + "...")
