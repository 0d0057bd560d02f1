"""The board widget: draws a `RoomView` to fit its space, from 3x3 to 15x15.

Play with the mouse (click a cell), with the arrow keys and Enter, or on 3x3
boards with the digits 1-9 laid out like a numeric keypad (7 8 9 on top). The
widget only posts `Board.Picked`; the screen decides whether to send a move.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from client_tui.model import RoomView

#: Keypad digit -> cell on a 3x3 board (7 8 9 is the top row).
KEYPAD = {"7": 0, "8": 1, "9": 2, "4": 3, "5": 4, "6": 5, "1": 6, "2": 7, "3": 8}

#: Cell sizes tried from the largest down: width, height and the gap between columns.
SIZES = ((7, 3, 1), (5, 3, 1), (5, 1, 1), (3, 1, 1), (2, 1, 0))

MARK_STYLE = {"x": "bold bright_cyan", "o": "bold bright_magenta"}


@dataclass(frozen=True)
class Layout:
    """Where the cells are in the widget: top-left corner, cell size, gap between cells."""

    left: int
    top: int
    width: int
    height: int
    gap: int
    #: Blank lines between rows: one around tall cells, none when cells are one line high.
    gap_y: int

    def cell_at(self, x: int, y: int, rows: int, cols: int) -> int | None:
        step_x, step_y = self.width + self.gap, self.height + self.gap_y
        col, dx = divmod(x - self.left, step_x)
        row, dy = divmod(y - self.top, step_y)
        if x < self.left or y < self.top or dx >= self.width or dy >= self.height:
            return None
        if 0 <= row < rows and 0 <= col < cols:
            return row * cols + col
        return None


class Board(Widget, can_focus=True):
    """A game board; read-only for spectators (``interactive`` False)."""

    DEFAULT_CSS = """
    Board { width: 1fr; height: 1fr; min-height: 5; }
    Board:focus { background: $boost; }
    """

    BINDINGS = [
        Binding("up", "cursor(-1, 0)", "up", show=False),
        Binding("down", "cursor(1, 0)", "down", show=False),
        Binding("left", "cursor(0, -1)", "left", show=False),
        Binding("right", "cursor(0, 1)", "right", show=False),
        Binding("enter", "pick", "play", show=True),
    ]

    cursor: reactive[int] = reactive(0)

    class Picked(Message):
        """The player chose ``cell`` (by click, Enter or keypad digit)."""

        def __init__(self, cell: int) -> None:
            super().__init__()
            self.cell = cell

    def __init__(
        self, view: RoomView | None = None, *, interactive: bool = True, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.view = view
        self.interactive = interactive
        self._layout: Layout | None = None
        self._centred: RoomView | None = None

    def show(self, view: RoomView) -> None:
        """Draw ``view`` (call again after it changes)."""
        if self._centred is not view:
            self.view = self._centred = view
            self.cursor = view.variant.cells // 2
        self.refresh()

    # --- input ----------------------------------------------------------------------

    def action_cursor(self, d_row: int, d_col: int) -> None:
        if self.view is None:
            return
        v = self.view.variant
        row, col = divmod(self.cursor, v.cols)
        row, col = (row + d_row) % v.rows, (col + d_col) % v.cols
        self.cursor = row * v.cols + col

    def action_pick(self) -> None:
        if self.interactive and self.view is not None:
            self.post_message(self.Picked(self.cursor))

    def on_key(self, event: events.Key) -> None:
        if self.view is None or not self.interactive:
            return
        v = self.view.variant
        if v.rows == 3 and v.cols == 3 and event.character in KEYPAD:
            event.stop()
            self.cursor = KEYPAD[event.character]
            self.post_message(self.Picked(self.cursor))

    def on_click(self, event: events.Click) -> None:
        if self.view is None or self._layout is None:
            return
        v = self.view.variant
        cell = self._layout.cell_at(event.x, event.y, v.rows, v.cols)
        if cell is not None:
            self.cursor = cell
            if self.interactive:
                self.post_message(self.Picked(cell))

    # --- drawing ----------------------------------------------------------------------

    def _fit(self) -> Layout:
        assert self.view is not None
        v = self.view.variant
        room_w, room_h = max(self.size.width - 4, 1), max(self.size.height - 1, 1)
        for width, height, gap in SIZES:
            gap_y = 1 if height > 1 else 0
            need_w = 3 + v.cols * (width + gap)
            need_h = 1 + v.rows * (height + gap_y)
            if (need_w <= room_w and need_h <= room_h) or (width, height, gap) == SIZES[-1]:
                left = max(0, (self.size.width - need_w) // 2) + 3
                top = max(0, (self.size.height - need_h) // 2) + 1
                return Layout(left, top, width, height, gap, gap_y)
        raise AssertionError("unreachable")

    def render(self) -> Text:
        if self.view is None:
            return Text("no game")
        view, v = self.view, self.view.variant
        layout = self._layout = self._fit()
        win = set(view.result.line) if view.result is not None else set()
        vanish = (
            {cell for cell in view.next_to_vanish.values() if cell is not None} if view.playing else set()
        )
        lines: list[Text] = [Text() for _ in range(layout.top)]
        header = Text(" " * layout.left)
        for col in range(v.cols):
            header.append(_column_name(col).center(layout.width) + " " * layout.gap, "dim")
        lines[-1] = header
        for row in range(v.rows):
            band = [Text(" " * (layout.left - 3)) for _ in range(layout.height)]
            band[layout.height // 2].append(f"{row + 1:>2} ", "dim")
            for other in range(layout.height):
                if other != layout.height // 2:
                    band[other].append("   ")
            for col in range(v.cols):
                cell = row * v.cols + col
                mark = view.board[cell] if cell < len(view.board) else None
                style = self._cell_style(cell, mark, win, vanish)
                glyph = "·" if mark is None else mark.upper()
                if cell in vanish and mark is not None:
                    glyph = mark  # lower case: the mark that leaves on its owner's next move
                for i in range(layout.height):
                    text = glyph if i == layout.height // 2 else ""
                    band[i].append(text.center(layout.width), style)
                    band[i].append(" " * layout.gap)
            lines.extend(band)
            if row < v.rows - 1:
                lines.extend(Text() for _ in range(layout.gap_y))
        board = Text("\n").join(lines)
        board.no_wrap, board.overflow = True, "crop"
        return board

    def _cell_style(self, cell: int, mark: str | None, win: set[int], vanish: set[int]) -> str:
        assert self.view is not None
        parts = [MARK_STYLE[mark] if mark else "grey50"]
        if cell in vanish:
            parts = ["italic dim " + MARK_STYLE[mark or "x"].replace("bold ", "")]
        background = "on grey23"
        if cell == self.view.last_move:
            background = "on dark_blue"
        if cell in win:
            background = "on dark_green"
        if self.has_focus and cell == self.cursor and self.interactive:
            background = "on yellow4"
        return " ".join([*parts, background])


def _column_name(col: int) -> str:
    return "abcdefghijklmno"[col]
