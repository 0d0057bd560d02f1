"""The ``ttt`` line protocol: any variant, tactic-toe included. Lines in, lines out, no I/O.

    -> ttt 1
    <- ok [the engine's name]
    -> go VARIANT MARK MS SEED BOARD [MOVES...]
    <- CELL
    -> quit

``go`` asks for a move: the variant's name (``classic``, ``tactic-toe``,
``15x15k5``...), the mark to move (``x`` or ``o``), the milliseconds the engine
may take, a seed for its random choices, the board (one character a cell,
row-major: ``x``, ``o`` or ``.``) and every move of the game so far, opening
included. The answer is one line holding a cell number; any ``.`` on the board
is a legal cell. Lines starting with ``#`` are the engine's comments, read and
ignored. Docs and examples: ``docs/engines.md``.
"""

from __future__ import annotations

from bots.engines.errors import EngineIllegal
from protocol.messages import MARK_NAMES
from protocol.rules import Cell, Mark, State, Variant

NAME = "ttt"
VERSION = 1


def refusal(variant: Variant) -> str | None:
    """Every variant fits."""
    return None


def setup(variant: Variant) -> tuple[int, int]:
    """One process serves every variant."""
    return (0, 0)


def opening(variant: Variant) -> list[str]:
    return [f"ttt {VERSION}"]


def opened(line: str, variant: Variant) -> bool:
    """Whether ``line`` is the engine's ``ok``; False for a comment.

    Raises:
        EngineIllegal: anything else (not a ttt engine, or a broken one).
    """
    if line.startswith("#"):
        return False
    if line.split(maxsplit=1)[0] == "ok":
        return True
    raise EngineIllegal(f"the engine answered {line[:60]!r} to 'ttt {VERSION}', not 'ok'")


def after_opening(variant: Variant) -> list[str]:
    return []


def board(state: State) -> str:
    """The board as one character a cell: ``x``, ``o`` or ``.``."""
    marks = {Mark.X: "x", Mark.O: "o", None: "."}
    return "".join(marks[state.mark_at(c)] for c in range(state.variant.cells))


def request(state: State, told_ms: int, seed: int) -> list[str]:
    mark = MARK_NAMES[state.to_move]
    moves = "".join(f" {c}" for c in state.moves)
    return [f"go {state.variant.name} {mark} {told_ms} {seed} {board(state)}{moves}"]


def answer(line: str, state: State) -> Cell | None:
    """The cell ``line`` plays; None for a comment.

    Raises:
        EngineIllegal: not a cell number, or a cell that is not legal here.
    """
    if line.startswith("#"):
        return None
    if not line.isdigit() or not line.isascii():
        raise EngineIllegal(f"the engine answered {line[:60]!r}, not a cell number")
    cell = int(line)
    if not state.is_legal(cell):
        raise EngineIllegal(f"the engine played cell {cell}, which is not a legal move here")
    return cell


def closing() -> list[str]:
    return ["quit"]
