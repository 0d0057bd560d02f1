"""The game screen: one room, played or watched.

The board keeps the focus for the whole game (nothing else on the screen can
take it). Keys that would lose a game ask first: ``g`` (resign) and ``q`` during
a game show a y/n line; any other key answers no. The footer offers only the
keys that do something now.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static

from client_tui import dialogs
from client_tui.board import Board
from client_tui.model import RoomView, clock_text, result_text
from client_tui.text import plain
from client_tui.words import cell_name, move_problem, parse_cell
from protocol import messages as m

if TYPE_CHECKING:
    from client_tui.app import ArenaApp

VALUE = {1: "win", 0: "draw", -1: "loss"}


class Question(Static, can_focus=True):
    """The y/n line. It takes the keyboard while it asks, so no key meant as an
    answer can play a move; ``y`` (or the asking key again) says yes, any other no."""

    question: str | None = None

    class Answered(Message):
        def __init__(self, question: str, yes: bool, key: str) -> None:
            super().__init__()
            self.question, self.yes, self.key = question, yes, key

    def ask(self, question: str, text: str) -> None:
        self.question = question
        self.update(plain(text))
        self.add_class("on")
        self.focus()

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        question, self.question = self.question, None
        self.remove_class("on")
        if question is not None:
            again = {"resign": "g", "quit": "q"}[question]
            self.post_message(self.Answered(question, event.key in ("y", again), event.character or ""))


class GameScreen(Screen[None]):
    """One room: the board, both players and their clocks, the moves, the result and
    its review. Read-only when watching."""

    BINDINGS = [
        Binding("r", "rematch", "rematch"),
        Binding("g", "resign", "resign"),
        Binding("colon", "type_move", "type a cell", show=False),
        Binding("escape", "back", "lobby"),
        Binding("question_mark,f1", "help", "help"),
        Binding("q", "quit", "quit"),
    ]
    DEFAULT_CSS = """
    GameScreen #side { width: 36; padding: 0 1; }
    GameScreen .player { height: 1; }
    GameScreen #banner { height: auto; text-style: bold; padding: 0 1; }
    GameScreen #banner.over { background: $success-darken-2; }
    GameScreen #moves { height: auto; max-height: 8; border-top: solid $primary; }
    GameScreen #review { height: 1fr; border-top: solid $primary; }
    GameScreen #play { height: 1fr; }
    GameScreen #ask { height: 1; background: $warning; color: $text; display: none; }
    GameScreen #ask.on { display: block; }
    GameScreen #typed { display: none; }
    GameScreen #typed.on { display: block; }
    """

    def __init__(self, view: RoomView) -> None:
        super().__init__()
        self.view = view
        #: The latest review (grades or why there are none), kept to draw once composed.
        self.review: tuple[list[Any] | None, str] | None = None
        #: The game the review belongs to: a new game clears it.
        self.reviewed: str | None = None
        #: Set once mounted: events that come while the screen is being composed only
        #: change the view, and on_mount draws the latest.
        self.ready = False

    @property
    def arena(self) -> ArenaApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="banner")
        with Horizontal(id="play"):
            yield Board(self.view, interactive=self.view.role != "spectator", id="board")
            with Vertical(id="side"):
                yield Static("", id="room-line")
                yield Static("", id="player-x", classes="player")
                yield Static("", id="player-o", classes="player")
                yield Static("", id="status")
                with VerticalScroll(id="moves", can_focus=False):
                    yield Static("", id="move-list")
                with VerticalScroll(id="review", can_focus=False):
                    yield Static("", id="review-text")
        yield Question("", id="ask")
        yield Input("", id="typed", placeholder="a cell, like b2 or h8; enter plays it, escape closes")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#review").display = False  # until there is a review to show
        self.ready = True
        self.set_interval(0.1, self.tick)
        self.redraw()
        self.call_after_refresh(self._focus_board)
        if self.review is not None:
            self.show_review(*self.review)

    def _focus_board(self) -> None:
        for board in self.query(Board):
            board.focus()

    def on_descendant_blur(self) -> None:
        # Keep the board focused while playing: a stray Tab must never leave the
        # digits and arrows silently doing nothing.
        if not self.query_one("#typed", Input).has_class("on") and self.asking is None:
            self.call_after_refresh(self._focus_board)

    def tick(self) -> None:
        """Clocks and grace countdowns move between events."""
        view = self.view
        running = view.clocks is not None and view.clocks.running is not None and view.result is None
        moving = running or view.disconnected or view.first_move_until or view.thinking
        if moving and self.ready:
            with contextlib.suppress(NoMatches):
                self._players(time.monotonic())

    def redraw(self) -> None:
        if not self.ready:
            return  # not composed yet: on_mount draws the latest
        try:
            self._redraw()
        except NoMatches:  # still being composed: drawn again once it is
            self.call_after_refresh(self.redraw)

    def _redraw(self) -> None:
        view, now = self.view, time.monotonic()
        board = self.query_one(Board)
        board.interactive = view.role != "spectator"
        if self.reviewed is not None and self.reviewed != view.game:
            self.review, self.reviewed, board.grades = None, None, None
            self.query_one("#review-text", Static).update("")
            self.query_one("#review").display = False
        board.show(view)
        s = view.summary
        line = Text()
        line.append_text(plain(f"room {view.room} · {s.variant} · {dialogs.describe_clock(s.time_control)}"))
        line.append_text(plain(" · rated" if s.rated else " · casual"))
        if view.invite:
            line.append_text(plain(f" · invite {view.invite}", "bold"))
        line.append_text(plain(f" · {s.spectators} watching"))
        self.query_one("#room-line", Static).update(line)
        self._players(now)
        self._moves()
        self._banner()
        self.refresh_bindings()
        if self.asking == "resign" and not view.playing:
            self._ask(None)

    @property
    def asking(self) -> str | None:
        """The question on the y/n line: "resign" or "quit" (None: no question)."""
        with contextlib.suppress(NoMatches):
            return self.query_one(Question).question
        return None

    def _players(self, now: float) -> None:
        view = self.view
        for mark in ("x", "o"):
            text = Text()
            turn = view.playing and view.to_move == mark
            text.append("▶ " if turn else "  ", "bold")
            text.append(mark.upper(), "bold #56b4e9" if mark == "x" else "bold #e69f00")
            text.append(" ")
            name = view.name_of(mark)
            text.append_text(
                plain(name[:18] + (" (you)" if name == view.me and view.role == mark else ""), "bold")
            )
            score = view.score.get(name)
            if score is not None:
                text.append(f" {score:g}")
            text.append(f"  {clock_text(view.clock_ms(mark, now))}", "reverse" if turn else "")
            grace = view.grace_left(mark, now)
            if grace is not None:
                text.append(f"  gone, {grace:.0f}s left", "bold red")
            self.query_one(f"#player-{mark}", Static).update(text)
        self.query_one("#status", Static).update(self._status(now))

    def _status(self, now: float) -> Text:
        view = self.view
        if view.closed:
            return plain(f"room closed: {view.closed}", "bold red")
        if view.game is None:
            return plain("waiting for a second player" if not all(_seats(view)) else "waiting for the game")
        if view.result is not None:
            asks = ", ".join(view.name_of(k) for k in sorted(view.rematch))
            if view.role == "spectator":
                return plain(f"rematch asked by {asks}" if asks else "game over · escape: lobby")
            return plain(f"rematch asked by {asks} (r)" if asks else "r: rematch · escape: lobby")
        if view.my_turn:
            who = "your move"
        elif view.thinking:
            who = f"{view.name_of(view.to_move)} thinking" + "." * (1 + int(now * 2) % 3)
        else:
            who = f"{view.name_of(view.to_move)} to move"
        if view.first_move_until is not None:
            who += f" · first move within {max(0.0, view.first_move_until - now):.0f}s or it is aborted"
        text = plain(who, "bold" if view.my_turn else "")
        if view.variant.max_marks is not None:
            text.append("\nsmall number: moves a mark has left; underlined: leaves next", "italic")
        return text

    def _moves(self) -> None:
        view, cols = self.view, self.view.variant.cols
        replay = view.replay()
        names = [cell_name(c, cols) for c in view.moves]
        for i, ply in enumerate(replay.plies):
            if ply.vanished is not None:
                names[i] += f" (−{cell_name(ply.vanished, cols)})"
        width = max((len(n) for n in names), default=4)
        text = Text()
        cap = view.ply_cap
        if cap is not None:
            text.append(f"ply {len(view.moves)}/{cap}", "bold")
            seen = replay.seen(len(replay.plies)) if view.playing else 1
            if seen >= 2:
                text.append(f" · this position has stood {seen} times: a third is a draw", "bold")
            text.append("\n")
        for i in range(0, len(names), 2):
            text.append(f"{i // 2 + 1:>3}. ")
            text.append("  ".join(f"{p:<{width}}" for p in names[i : i + 2]) + "\n")
        self.query_one("#move-list", Static).update(text)

    def _banner(self) -> None:
        banner = self.query_one("#banner", Static)
        view = self.view
        if view.result is None:
            banner.update(plain("you are watching" if view.role == "spectator" else ""))
            banner.remove_class("over")
            return
        text = plain(f"Game over: {result_text(view.result, view.x, view.o)}", "bold")
        if view.ratings:
            parts = []
            for name, rating in view.ratings.items():
                before = view.ratings_before.get(name)
                change = f" ({rating - before:+.0f})" if before is not None else ""
                parts.append(f"{name} {rating:.0f}{change}")
            text.append_text(plain("  ·  " + ", ".join(parts)))
        banner.update(text)
        banner.add_class("over")

    def show_review(self, grades: list[Any] | None, why: str = "") -> None:
        """The post-game review: each move graded against the solved table."""
        self.review = (grades, why)
        self.reviewed = self.view.game
        if not self.ready:
            return  # drawn by on_mount
        if not self.query("#review-text"):
            self.call_after_refresh(self.show_review, grades, why)  # still being composed
            return
        widget = self.query_one("#review-text", Static)
        self.query_one("#review").display = bool(grades or why)
        self.query_one(Board).grades = grades
        if grades is None:
            widget.update(plain(why))
            return
        cols = self.view.variant.cols
        text = Text("Review (←/→ on the board)\n", "bold")
        style = {"optimal": "green", "inaccuracy": "yellow", "blunder": "bold red"}
        for g in grades:
            mover = "X" if g.ply % 2 else "O"
            text.append(f"{g.ply:>2}. {mover} {cell_name(g.move, cols):<4}")
            text.append(f"{g.grade:<10}", style[g.grade])
            if g.value_before != g.value_after:
                text.append(f" {VALUE[g.value_before]}→{VALUE[g.value_after]}")
            if g.grade != "optimal":
                text.append(" best " + " ".join(cell_name(b, cols) for b in g.best))
            text.append("\n")
        widget.update(text)

    # --- keys ------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        view = self.view
        seated = view.role != "spectator"
        if action == "rematch":
            return seated and view.result is not None and not view.closed
        if action == "resign":
            return seated and view.playing
        return True

    def on_question_answered(self, event: Question.Answered) -> None:
        self._focus_board()
        board = self.query_one(Board)
        if not event.yes:
            if event.key.isdigit() and len(event.key) == 1 and board.typed:
                board.type_digit(event.key)  # "g5" on a wide board: a cell, not a resignation
            return
        if event.question == "resign" and self.view.playing:
            self.arena.send(m.Resign(room=self.view.room))
        elif event.question == "quit":
            self.arena.exit_now()

    def _ask(self, question: str | None, text: str = "") -> None:
        ask = self.query_one(Question)
        if question is None:
            ask.question = None
            ask.remove_class("on")
            self._focus_board()
        else:
            ask.ask(question, text)

    def on_board_picked(self, event: Board.Picked) -> None:
        problem = move_problem(self.view, event.cell)
        if problem is not None:
            self.notify(problem, severity="warning", markup=False)
            return
        self.arena.send(m.Move(room=self.view.room, cell=event.cell))

    def action_type_move(self) -> None:
        if self.view.role == "spectator":
            return
        typed = self.query_one("#typed", Input)
        typed.value = ""
        typed.add_class("on")
        typed.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "typed":
            return
        event.input.remove_class("on")
        board = self.query_one(Board)
        board.focus()
        cell = parse_cell(event.value, self.view.variant)
        if cell is None:
            if event.value.strip():
                self.notify(f"{event.value.strip()!r} is not a cell of this board", severity="warning")
            return
        board.cursor = cell
        board.action_pick()

    def on_input_blurred(self, event: Input.Blurred) -> None:
        event.input.remove_class("on")

    def action_rematch(self) -> None:
        if self.view.role != "spectator" and self.view.result is not None:
            self.arena.rematch(self.view)

    def action_resign(self) -> None:
        if self.view.playing and self.view.role != "spectator":
            rated = "rated " if self.view.summary.rated else ""
            self._ask("resign", f" resign this {rated}game? g or y: yes · any other key: no")

    def action_back(self) -> None:
        typed = self.query_one("#typed", Input)
        if typed.has_class("on"):
            typed.remove_class("on")
            self._focus_board()
            return
        if self.view.playing and self.view.role != "spectator":
            self.notify("the game is still going: resign (g) first, or play on", severity="warning")
            return
        self.arena.leave_room(self.view.room)

    def action_quit(self) -> None:
        if self.view.playing and self.view.role != "spectator":
            grace = self.arena.grace_seconds()
            self._ask("quit", f" leaving starts a {grace:.0f} s grace, then you forfeit: quit? y/n")
            return
        self.arena.exit_now()

    def action_help(self) -> None:
        self.app.push_screen(dialogs.Help())


def _seats(view: RoomView) -> tuple[str | None, str | None]:
    return view.summary.seats.x, view.summary.seats.o
