"""The `gomoku` search in C (`_gomoku_core.c`); see `bots.strategies.gomoku_core`."""

from collections.abc import Callable
from typing import Any

class Engine:
    """The search on one variant's board, and what it keeps from move to move."""

    def __init__(
        self,
        k: int,
        rows: int,
        cols: int,
        window_cells: list[tuple[int, ...]],
        through: list[list[int]],
        around: list[list[int]],
        zobrist: list[list[int]],
        steps: list[list[Any]],
        gains: list[tuple[int, int]],
        /,
    ) -> None: ...
    def decide(
        self,
        board: bytes,
        side: int,
        think_ms: int,
        nodes_budget: int,
        shuffle: Callable[[list[int]], None],
        /,
    ) -> tuple[int, str, int, int, int, int]: ...
    def threat_win(
        self, board: bytes, side: int, depth: int, nodes: int, after: int, by_nodes: bool, /
    ) -> tuple[int, bool, int]: ...
    def kept(self) -> int: ...
    def forget(self) -> None: ...
