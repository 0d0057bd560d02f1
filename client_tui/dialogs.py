"""Modal dialogs: create a room, challenge a player, join by invite, and the help
screen. Each returns a wire message (or None when cancelled); the
app sends it. Form checks happen here so a bad value never reaches the server."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from client_tui.text import plain, printable
from protocol import messages as m
from protocol.errors import ArenaError
from protocol.rules import FEATURED, find_variant

CLOCKS = [("no clock", "none"), ("seconds per move", "per_move"), ("minutes + increment", "increment")]


def time_control(kind: str, first: str, second: str) -> m.NoClock | m.PerMove | m.Increment:
    """The time control from the form's fields: seconds per move, or minutes and seconds.

    Raises:
        ValueError: a field is not a positive number.
    """
    if kind == "none":
        return m.NoClock()
    a = float(first)
    if kind == "per_move":
        if not 0.1 <= a <= 86_400:
            raise ValueError("seconds per move must be between 0.1 and 86400")
        return m.PerMove(move_ms=int(a * 1000))
    b = float(second or 0)
    if not 0 < a <= 1440 or not 0 <= b <= 3600:
        raise ValueError("base minutes must be 0 to 1440, increment 0 to 3600 seconds")
    return m.Increment(base_ms=int(a * 60_000), increment_ms=int(b * 1000))


class _Form(ModalScreen[m.ClientMessage | None]):
    """Shared frame: a title, the fields (one line each, so the form fits 80x24), an
    error line, OK and Cancel. Fields that don't apply to the current choices hide."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    _Form { align: center middle; }
    _Form > Vertical {
        width: 66; height: auto; max-height: 100%; border: thick $accent; background: $surface;
        padding: 0 1; overflow-y: auto;
    }
    _Form Grid { grid-size: 2; grid-columns: 20 1fr; height: auto; grid-gutter: 0 1; grid-rows: 1; }
    _Form .title { text-style: bold; margin-bottom: 1; }
    _Form #error { color: $error; height: auto; }
    _Form #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    _Form .-hidden { display: none; }
    """
    TITLE_TEXT = ""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.TITLE_TEXT + " (tab: next field, enter: OK, escape: cancel)", classes="title")
            with Grid():
                yield from self.fields()
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("OK", variant="primary", id="ok", compact=True)
                yield Label(" ")
                yield Button("Cancel", id="cancel", compact=True)

    def fields(self) -> ComposeResult:
        raise NotImplementedError

    def build(self) -> m.ClientMessage:
        raise NotImplementedError

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self.action_ok()
        else:
            self.action_cancel()

    def on_input_submitted(self) -> None:
        self.action_ok()

    def action_ok(self) -> None:
        try:
            message = self.build()
        except (ValueError, ArenaError) as exc:
            self.query_one("#error", Static).update(plain(getattr(exc, "message", None) or exc))
            return
        self.remember()
        self.dismiss(message)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def value(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value.strip()

    def chosen(self, widget_id: str) -> str:
        value = self.query_one(f"#{widget_id}", Select).value
        return "" if value is Select.NULL else str(value)

    def row(self, label: str, widget: Widget) -> ComposeResult:
        """A labelled field; both hide together (the label is ``<id>-label``)."""
        yield Label(label, id=f"{widget.id}-label")
        yield widget

    def show_field(self, widget_id: str, shown: bool) -> None:
        for node in (self.query_one(f"#{widget_id}"), self.query_one(f"#{widget_id}-label")):
            node.set_class(not shown, "-hidden")

    def game_fields(self) -> ComposeResult:
        yield from self.row(
            "variant",
            Input("classic", id="variant", placeholder="classic, tactic-toe, 15x15k5", compact=True),
        )
        yield from self.row(
            "clock", Select(CLOCKS, value="none", allow_blank=False, id="clock", compact=True)
        )
        yield from self.row(
            "seconds / minutes", Input("", id="first", placeholder="per move: s; or base min", compact=True)
        )
        yield from self.row(
            "increment (s)", Input("", id="second", placeholder="increment seconds", compact=True)
        )
        yield from self.row("ply cap", Input("", id="ply_cap", placeholder="default 200", compact=True))
        yield from self.row("rated", Checkbox(YES_NO[True], True, id="rated", compact=True))

    def on_mount(self) -> None:
        self.restore()
        self.fit_fields()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.fit_fields()

    def on_select_changed(self, event: Select.Changed) -> None:
        self.fit_fields()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.checkbox.label = YES_NO[event.value]

    def fit_fields(self) -> None:
        """Hide the fields the current choices make meaningless."""
        if not self.query("#clock"):
            return
        clock = self.chosen("clock")
        self.show_field("first", clock != "none")
        self.show_field("second", clock == "increment")
        try:
            tactic = find_variant(self.value("variant")).max_marks is not None
        except ArenaError:
            tactic = False
        self.show_field("ply_cap", tactic)

    @property
    def memory(self) -> dict[str, dict[str, object]]:
        """The last values of every form, by form and field (kept by the app, so a new
        form starts from them)."""
        memory: dict[str, dict[str, object]] = self.app.__dict__.setdefault("form_memory", {})
        return memory

    def remember(self) -> None:
        saved = self.memory.setdefault(type(self).__name__, {})
        for widget in self.query("Input, Select, Checkbox"):
            if widget.id and widget.id not in self.FORGET:
                saved[widget.id] = widget.value  # type: ignore[attr-defined]

    #: Fields never carried to the next form.
    FORGET: ClassVar[frozenset[str]] = frozenset({"opponent", "room", "invite"})

    def restore(self) -> None:
        for key, value in self.memory.get(type(self).__name__, {}).items():
            for widget in self.query(f"#{key}"):
                with contextlib.suppress(Exception):  # an option gone since: keep the default
                    widget.value = value  # type: ignore[attr-defined]
                if isinstance(widget, Checkbox):
                    widget.label = YES_NO[bool(value)]

    def game_options(self) -> dict[str, object]:
        variant = find_variant(self.value("variant"))  # raises UnknownVariant with the valid forms
        cap_text = self.value("ply_cap") if variant.max_marks is not None else ""
        ply_cap = None
        if cap_text:
            ply_cap = int(cap_text)
            if not 1 <= ply_cap <= 10_000:
                raise ValueError("the ply cap must be 1 to 10000")
        return {
            "variant": variant.name,
            "time_control": time_control(self.chosen("clock"), self.value("first"), self.value("second")),
            "ply_cap": ply_cap,
            "rated": self.query_one("#rated", Checkbox).value,
        }


YES_NO = {True: "yes", False: "no"}


class CreateRoom(_Form):
    """A new room: variant (any m,n,k size), clock, private with invite, rated, seat."""

    TITLE_TEXT = "Create a room"

    def fields(self) -> ComposeResult:
        yield from self.game_fields()
        yield from self.row("private (invite)", Checkbox(YES_NO[False], False, id="private", compact=True))
        seats = [("random", "random"), ("X", "x"), ("O", "o")]
        yield from self.row("seat", Select(seats, value="random", allow_blank=False, id="seat", compact=True))

    def build(self) -> m.ClientMessage:
        return m.CreateRoom(
            private=self.query_one("#private", Checkbox).value,
            seat=self.chosen("seat"),  # type: ignore[arg-type]
            **self.game_options(),  # type: ignore[arg-type]
        )


class ChallengePlayer(_Form):
    """Challenge a player or bot by name: variant, colour, clock, rated, and the bot's
    level of play where it offers levels (``levels_of`` says which, by name). The
    settings of the last challenge are offered again."""

    TITLE_TEXT = "Challenge"

    def __init__(self, opponent: str = "", levels_of: Callable[[str], list[str]] = lambda name: []) -> None:
        super().__init__()
        self.opponent = opponent
        self.levels_of = levels_of

    def fields(self) -> ComposeResult:
        yield from self.row(
            "opponent", Input(self.opponent, id="opponent", placeholder="a player or bot name", compact=True)
        )
        yield from self.game_fields()
        colours = [("random", "random"), ("X (first)", "x"), ("O", "o")]
        yield from self.row(
            "your colour", Select(colours, value="random", allow_blank=False, id="colour", compact=True)
        )
        yield from self.row("level", Select([], prompt="its default", id="level", compact=True))

    def fit_fields(self) -> None:
        super().fit_fields()
        if not self.query("#level"):
            return
        select = self.query_one("#level", Select)
        levels = self.levels_of(self.value("opponent"))
        if [value for _, value in select._options[1:]] != levels:
            select.set_options([(printable(level), level) for level in levels])
        select.disabled = not levels
        self.show_field("level", bool(levels))

    def build(self) -> m.ClientMessage:
        opponent = self.query_one("#opponent", Input).value
        if not opponent.strip():
            raise ValueError("name the player or bot to challenge")
        level = self.chosen("level") or None
        return m.Challenge(
            opponent=opponent,
            level=level,
            colour=self.chosen("colour"),  # type: ignore[arg-type]
            **self.game_options(),  # type: ignore[arg-type]
        )


class JoinPrivate(_Form):
    """Take a seat (or watch) in a room by id, with its invite code if private."""

    TITLE_TEXT = "Join a room by id"

    def fields(self) -> ComposeResult:
        yield from self.row("room id", Input("", id="room", compact=True))
        yield from self.row(
            "invite code", Input("", id="invite", placeholder="for a private room", compact=True)
        )
        yield from self.row("watch only", Checkbox(YES_NO[False], False, id="watch", compact=True))

    def build(self) -> m.ClientMessage:
        room = self.value("room")
        if not room:
            raise ValueError("enter the room id")
        invite = self.value("invite") or None
        if self.query_one("#watch", Checkbox).value:
            return m.Spectate(room=room, invite=invite)
        return m.Join(room=room, invite=invite)


def describe_clock(tc: m.NoClock | m.PerMove | m.Increment, short: bool = False) -> str:
    """``5 s per move``, ``3 min + 2 s``, ``no clock``; short: ``5s/mv``, ``3+2``, ``-``."""
    if isinstance(tc, m.PerMove):
        return f"{tc.move_ms / 1000:g}s/mv" if short else f"{tc.move_ms / 1000:g} s per move"
    if isinstance(tc, m.Increment):
        if short:
            return f"{tc.base_ms / 60_000:g}+{tc.increment_ms / 1000:g}"
        return f"{tc.base_ms / 60_000:g} min + {tc.increment_ms / 1000:g} s"
    return "-" if short else "no clock"


HELP = f"""\
ttt play: keys            (escape, q, ? or F1 closes; arrows scroll)

Anywhere
  ? or F1    this help               ctrl+q   quit at once
  tab        next pane or field (a game's board keeps the keyboard)

Lobby (panes: 1 rooms, 2 online, 3 challenges, 4 leaderboard)
  enter      on a room: sit; on a player: challenge;
             on a challenge to you: accept
  w          watch the selected room       c   create a room
  b          challenge the selected player or bot (last settings kept)
  a / d      accept / decline the selected (or newest) challenge
  j          join a room by id and invite  t   a tournament's standings
  v          leaderboard of the next variant
  q          quit

Game
  arrows, hjkl, yubn   move the cursor (yubn: diagonals)
  shift+arrow          jump 5         home / end   the row's ends
  .                    the last move  enter        play the cursor's cell
  h8                   a letter, then the row: the cursor goes to h8
  :h8 enter            play h8 at once
  1-9                  3x3 boards: play, keypad layout (7 8 9 on top)
  mouse                click a cell
  g          resign (asks: g or y confirms)
  r          rematch (colours swap; a bot that left is challenged again)
  escape     back to the lobby (while your game runs: resign first)
  q          quit (during your game it asks: you forfeit after the grace)
  ← / →      after a game: step through it, each move with its grade

Tactic-toe: each player keeps at most 3 marks. The small number on a mark
is how many of its owner's moves it has left; the underlined one leaves
next. With the cursor on a free cell, the mark your move would remove is
struck through. You may not play on your own leaving mark.

Variants: {", ".join(FEATURED)},
and any RxCkK up to 15x15.
"""


class Help(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss_help", "close")]
    DEFAULT_CSS = """
    Help { align: center middle; }
    Help > VerticalScroll {
        width: 78; max-width: 100%; height: auto; max-height: 100%; border: round $accent;
        background: $surface; padding: 0 1;
    }
    Help Static { width: auto; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP, markup=False)

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
