"""The screens: connect, plus where the others live (lobby, game, tournament), and
the notice shown when the terminal is too small to draw them.

Screens draw what the app's models hold and turn keys into calls on the app
(`ArenaApp.send`, `ArenaApp.open_room`, ...); they never talk to the socket.
Every string from the server is drawn through `client_tui.text.plain`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, Input, Label, Static

from client_tui.game import GameScreen
from client_tui.lobby import LobbyScreen
from client_tui.text import plain
from client_tui.tournament import TournamentFolder, TournamentScreen
from client_tui.words import cell_name
from protocol import messages as m

if TYPE_CHECKING:
    from client_tui.app import ArenaApp

__all__ = [
    "ArenaScreen",
    "ConnectScreen",
    "GameScreen",
    "LobbyScreen",
    "TooSmall",
    "TournamentFolder",
    "TournamentScreen",
    "cell_name",
]

#: Below this size the screens can't be drawn legibly (columns, rows).
MIN_SIZE = (80, 24)


class ArenaScreen(Screen[None]):
    """A screen of this app (typed access to it)."""

    @property
    def arena(self) -> ArenaApp:
        return self.app  # type: ignore[return-value]


class TooSmall(Screen[None]):
    """Shown instead of a garbled screen while the terminal is under `MIN_SIZE`."""

    BINDINGS = [Binding("q", "app.quit", "quit")]
    DEFAULT_CSS = """
    TooSmall { align: center middle; }
    TooSmall > Static { width: auto; height: auto; text-style: bold; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="too-small")

    def on_mount(self) -> None:
        self.on_resize()

    def on_resize(self) -> None:
        w, h = self.app.size
        self.query_one(Static).update(
            f"terminal too small: {w}x{h}\nttt play needs {MIN_SIZE[0]}x{MIN_SIZE[1]}\n"
            "make the window larger · q quits"
        )


class ConnectScreen(ArenaScreen):
    """Server URL and name; the token for that server is remembered."""

    BINDINGS = [Binding("escape", "app.quit", "quit")]
    DEFAULT_CSS = """
    ConnectScreen { align: center middle; }
    ConnectScreen > Vertical { width: 60; height: auto; border: thick $accent; padding: 1 2; }
    ConnectScreen #error { color: $error; height: auto; }
    """

    def __init__(self, url: str, name: str, known: str = "") -> None:
        super().__init__()
        self.url, self.name_ = url, name
        #: The name last used on this server, offered when none was given.
        self.known = known
        #: The last error, kept for compose: a refusal can come before the screen is composed.
        self.error = plain("")

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield Label("server")
            yield Input(self.url, id="url")
            yield Label("your name (1-24 characters)")
            yield Input(self.name_ or self.known, id="name")
            if self.known and not self.name_:
                yield Label(plain(f"last time on this server you were {self.known}"))
            yield Static(self.error, id="error")
            yield Button("Connect", variant="primary", id="connect")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#name" if self.url else "#url", Input).focus()

    def on_button_pressed(self) -> None:
        self._go()

    def on_input_submitted(self) -> None:
        self._go()

    def _go(self) -> None:
        url, name = self.query_one("#url", Input).value.strip(), self.query_one("#name", Input).value.strip()
        problem = m.check_name(name) if name else "enter a name"
        if problem:
            self.show_error(problem)
            return
        self.arena.start_connect(url, name)

    def show_error(self, message: str) -> None:
        self.error = plain(message)
        for widget in self.query("#error").results(Static):  # none yet: compose shows it
            widget.update(self.error)
