"""The board widget: draws a `RoomView` to fit its space, from 3x3 to 15x15.

Play with the mouse, the arrows (or ``hjkl``, ``yubn`` diagonals, shift+arrow
jumps 5, Home/End to the row's edges, ``.`` to the last move) and Enter; type a
cell (``h8``) to put the cursor there; on 3x3 boards the digits 1-9 play at
once, laid out like a numeric keypad (7 8 9 on top). Once the game is over the
left and right keys step through its positions with each move's review grade.
The widget only posts `Board.Picked`; the screen decides whether to send a move.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from client_tui.model import RoomView
from client_tui.words import LETTERS, cell_name, parse_cell

#: Keypad digit -> cell on a 3x3 board (7 8 9 is the top row).
KEYPAD = {"7": 0, "8": 1, "9": 2, "4": 3, "5": 4, "6": 5, "1": 6, "2": 7, "3": 8}

#: Cell sizes tried from the largest down: width, height and the gap between columns.
SIZES = ((7, 3, 1), (5, 3, 1), (5, 1, 1), (3, 1, 1), (2, 1, 0))

#: A colour-blind-safe pair (Okabe-Ito sky blue and orange); every mark and the empty
#: dot keep at least 4.5:1 against every background below (tests compute it).
INK = {"x": "#56b4e9", "o": "#e69f00", None: "#bcbcbc"}
GROUND = {
    "cell": "#1c1c1c",
    "last": "#14304f",
    "win": "#0f3d24",
    "cursor": "#3a3a3a",
    "optimal": "#0f3d24",
    "inaccuracy": "#3d3200",
    "blunder": "#5a1616",
}
BADGE = {1: "¹", 2: "²", 3: "³"}
GRADE_SIGN = {"optimal": "good", "inaccuracy": "?! inaccuracy", "blunder": "?? blunder"}


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


#: The letters that move the cursor (vi's ``hjkl``, ``yubn`` diagonals): row and column
#: steps. `Board` binds them, and moves at once itself for those that are also columns.
LETTER_STEPS = {
    "k": (-1, 0),
    "j": (1, 0),
    "h": (0, -1),
    "l": (0, 1),
    "y": (-1, -1),
    "u": (-1, 1),
    "b": (1, -1),
    "n": (1, 1),
}


class Board(Widget, can_focus=True):
    """A game board; read-only for spectators (``interactive`` False)."""

    DEFAULT_CSS = """
    Board { width: 1fr; height: 1fr; min-height: 5; border: round $panel-lighten-2; }
    Board:focus { border: double $accent; }
    """

    BINDINGS = [
        Binding("up", "cursor(-1, 0)", "up", show=False),
        Binding("down", "cursor(1, 0)", "down", show=False),
        Binding("left", "cursor(0, -1)", "left", show=False),
        Binding("right", "cursor(0, 1)", "right", show=False),
        *(Binding(letter, f"cursor({dr}, {dc})", show=False) for letter, (dr, dc) in LETTER_STEPS.items()),
        Binding("shift+up", "cursor(-5, 0)", show=False),
        Binding("shift+down", "cursor(5, 0)", show=False),
        Binding("shift+left", "cursor(0, -5)", show=False),
        Binding("shift+right", "cursor(0, 5)", show=False),
        Binding("home", "edge(-1)", show=False),
        Binding("end", "edge(1)", show=False),
        Binding("full_stop", "last_move", show=False),
        Binding("enter", "pick", "play"),
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
        #: A cell name being typed (``h``, ``h1``, ``h10``).
        self.typed = ""
        #: The ply shown when stepping through a finished game (None: the live board).
        self.ply: int | None = None
        #: The review of the finished game, one grade a ply (set by the screen).
        self.grades: list[Any] | None = None

    def show(self, view: RoomView) -> None:
        """Draw ``view`` (call again after it changes)."""
        if self._centred is not view or (self.view is view and view.playing and self.ply is not None):
            self.ply = None
        if self._centred is not view:
            self.view = self._centred = view
            self.cursor = centre(view.variant.rows, view.variant.cols)
        self.refresh()

    @property
    def stepping(self) -> bool:
        """Left and right step through plies (the game is over)."""
        return self.view is not None and self.view.game is not None and self.view.result is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "pick":
            return self.interactive and self.view is not None and self.view.playing
        return True

    # --- input ----------------------------------------------------------------------

    def action_cursor(self, d_row: int, d_col: int) -> None:
        if self.view is None:
            return
        if self.stepping and d_row == 0 and abs(d_col) == 1:
            self.step(d_col)
            return
        v = self.view.variant
        row, col = divmod(self.cursor, v.cols)
        if abs(d_row) > 1 or abs(d_col) > 1:  # jumps stop at the edge
            row, col = min(max(row + d_row, 0), v.rows - 1), min(max(col + d_col, 0), v.cols - 1)
        else:
            row, col = (row + d_row) % v.rows, (col + d_col) % v.cols
        self.cursor = row * v.cols + col

    def action_edge(self, side: int) -> None:
        if self.view is None:
            return
        if self.stepping:
            self.ply = 0 if side < 0 else None
            self.refresh()
            return
        cols = self.view.variant.cols
        row = self.cursor // cols
        self.cursor = row * cols + (0 if side < 0 else cols - 1)

    def action_last_move(self) -> None:
        if self.view is not None and self.view.last_move is not None:
            self.cursor = self.view.last_move

    def step(self, by: int) -> None:
        """Show the position ``by`` plies later (or earlier); past the end is live."""
        assert self.view is not None
        total = len(self.view.moves)
        ply = (total if self.ply is None else self.ply) + by
        self.ply = None if ply >= total else max(0, ply)
        self.refresh()

    def action_pick(self) -> None:
        if self.interactive and self.view is not None:
            self.post_message(self.Picked(self.cursor))

    def watch_cursor(self) -> None:
        self.refresh()

    def on_key(self, event: events.Key) -> None:
        if self.view is None:
            return
        v = self.view.variant
        ch = event.character or ""
        if len(ch) == 1 and ch in LETTERS[: v.cols]:
            self.typed = ch
            step = LETTER_STEPS.get(ch)
            if step is not None:  # h is still "left", moved now: its binding would run only
                event.stop()  # once the key has bubbled up, after a digit typed just behind it
                event.prevent_default()
                self.action_cursor(*step)
            return  # other letters bubble: g still asks to resign
        if ch.isdigit() and len(ch) == 1 and self.typed:
            event.stop()
            self.type_digit(ch)
            return
        self.typed = ""
        if self.interactive and v.rows == 3 and v.cols == 3 and ch in KEYPAD:
            event.stop()
            self.cursor = KEYPAD[ch]
            self.post_message(self.Picked(self.cursor))

    def type_digit(self, digit: str) -> None:
        """A digit after a column letter: the cursor goes to the cell typed so far."""
        assert self.view is not None
        cell = parse_cell(self.typed + digit, self.view.variant)
        self.typed = self.typed + digit if cell is not None else ""
        if cell is not None:
            self.cursor = cell

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
        room_w, room_h = max(self.size.width - 4, 1), max(self.size.height - 2, 1)
        for width, height, gap in SIZES:
            gap_y = 1 if height > 1 else 0
            need_w = 3 + v.cols * (width + gap)
            need_h = 1 + v.rows * (height + gap_y)
            if (need_w <= room_w and need_h <= room_h) or (width, height, gap) == SIZES[-1]:
                left = max(0, (self.size.width - need_w) // 2) + 3
                top = max(0, (self.size.height - 1 - need_h) // 2) + 1
                return Layout(left, top, width, height, gap, gap_y)
        raise AssertionError("unreachable")

    def _scene(self) -> tuple[list[str | None], dict[int, int], int | None, set[int]]:
        """Board, badges, the highlighted move and the winning line at the ply shown."""
        assert self.view is not None
        view = self.view
        replay = view.replay()
        if self.ply is not None and self.ply <= len(replay.plies):
            moved = replay.plies[self.ply - 1].cell if self.ply else None
            return list(replay.board(self.ply)), replay.badges(self.ply), moved, set()
        shown = len(replay.plies) if len(replay.plies) == len(view.moves) else None
        badges = replay.badges(shown) if shown is not None else {}
        win = set(view.result.line) if view.result is not None else set()
        return list(view.board), badges, view.last_move, win

    def vanish_preview(self) -> int | None:
        """Our mark that would leave if we played the cursor's cell now (tactic-toe)."""
        view = self.view
        if view is None or not view.my_turn or view.my_mark is None or self.ply is not None:
            return None
        leaving = view.next_to_vanish.get(view.my_mark)
        if leaving is None or leaving == self.cursor or view.board[self.cursor] is not None:
            return None
        return leaving

    def caption(self) -> Text:
        """The line under the board: the ply shown and its grade, or what a move would do."""
        view = self.view
        assert view is not None
        cols = view.variant.cols
        if self.ply is not None:
            text = Text(f"ply {self.ply}/{len(view.moves)}", "bold")
            if self.ply:
                ply = view.replay().plies[self.ply - 1]
                text.append(f" · {ply.mark.upper()} {cell_name(ply.cell, cols)}")
                grade = self.grades[self.ply - 1] if self.grades and self.ply <= len(self.grades) else None
                if grade is not None:
                    text.append(f" · {GRADE_SIGN[grade.grade]}")
                    if grade.grade != "optimal":
                        text.append(" (best " + " ".join(cell_name(b, cols) for b in grade.best) + ")")
            text.append("  ←/→ step, end: now", "italic")
            return text
        if self.stepping:
            return Text("←/→ step through the game", "italic")
        leaving = self.vanish_preview()
        if leaving is not None and self.has_focus:
            return Text(
                f"{cell_name(self.cursor, cols)} here: your {cell_name(leaving, cols)} vanishes", "italic"
            )
        return Text("")

    def render(self) -> Text:
        if self.view is None:
            return Text("no game")
        view, v = self.view, self.view.variant
        layout = self._layout = self._fit()
        board, badges, moved, win = self._scene()
        grade = None
        if self.ply and self.grades and self.ply <= len(self.grades):
            grade = self.grades[self.ply - 1].grade
        leaving = self.vanish_preview()
        lines: list[Text] = [Text() for _ in range(layout.top)]
        header = Text(" " * layout.left)
        for col in range(v.cols):
            header.append(LETTERS[col].center(layout.width) + " " * layout.gap, "#bcbcbc")
        lines[-1] = header
        for row in range(v.rows):
            band = [Text(" " * (layout.left - 3)) for _ in range(layout.height)]
            for i in range(layout.height):
                band[i].append(f"{row + 1:>2} " if i == layout.height // 2 else "   ", "#bcbcbc")
            for col in range(v.cols):
                cell = row * v.cols + col
                mark = board[cell] if cell < len(board) else None
                ground = "cell"
                if cell == moved:
                    ground = grade or "last"
                if cell in win:
                    ground = "win"
                cursor = self.has_focus and cell == self.cursor and self.interactive and view.playing
                if cursor:
                    ground = "cursor"
                style = cell_style(mark, ground, badges.get(cell) == 1 and view.playing, cell == leaving)
                glyph = "·" if mark is None else mark.upper()
                if mark is not None and cell in badges and layout.width >= 3:
                    glyph += BADGE[badges[cell]]
                if cursor and layout.width >= len(glyph) + 2:
                    glyph = f"[{glyph}]"
                for i in range(layout.height):
                    band[i].append((glyph if i == layout.height // 2 else "").center(layout.width), style)
                    band[i].append(" " * layout.gap)
            lines.extend(band)
            if row < v.rows - 1:
                lines.extend(Text() for _ in range(layout.gap_y))
        lines.append(Text(" " * max(0, layout.left - 3)) + self.caption())
        text = Text("\n").join(lines)
        text.no_wrap, text.overflow = True, "crop"
        return text


def cell_style(mark: str | None, ground: str, leaving: bool = False, preview: bool = False) -> str:
    """Ink on ground; the mark about to leave is underlined italic, the one a move
    would remove struck through: shape, not a dimmer colour, tells them apart."""
    parts = [INK[mark], "bold" if mark else ""]
    if leaving:
        parts.append("italic underline")
    if preview:
        parts.append("strike reverse")
    return " ".join([*filter(None, parts), f"on {GROUND[ground]}"])


def centre(rows: int, cols: int) -> int:
    """The middle cell (the upper-left of the middle four on even sides)."""
    return ((rows - 1) // 2) * cols + (cols - 1) // 2
