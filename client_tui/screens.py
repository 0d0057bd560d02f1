"""The screens: connect, lobby, game (played or watched) and a tournament's standings.

Screens draw what the app's models hold and turn keys into calls on the app
(`ArenaApp.send`, `ArenaApp.open_room`, ...); they never talk to the socket.
Every string from the server is drawn through `client_tui.text.plain`.
"""

from __future__ import annotations

import contextlib
import csv
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Footer, Header, Input, Label, Static

from client_tui import dialogs
from client_tui.board import Board
from client_tui.model import RoomView, clock_text, result_text
from client_tui.text import plain
from protocol import messages as m
from protocol.rules import FEATURED

if TYPE_CHECKING:
    from client_tui.app import ArenaApp


def cell_name(cell: int, cols: int) -> str:
    """``b2``-style name of ``cell``: column letter, row number from 1."""
    row, col = divmod(cell, cols)
    return f"{'abcdefghijklmno'[col]}{row + 1}"


class ArenaScreen(Screen[None]):
    """A screen of this app (typed access to it)."""

    @property
    def arena(self) -> ArenaApp:
        return self.app  # type: ignore[return-value]


class ConnectScreen(ArenaScreen):
    """Server URL and name; the token for that server is remembered."""

    DEFAULT_CSS = """
    ConnectScreen { align: center middle; }
    ConnectScreen > Vertical { width: 60; height: auto; border: thick $accent; padding: 1 2; }
    ConnectScreen #error { color: $error; height: auto; }
    """

    def __init__(self, url: str, name: str) -> None:
        super().__init__()
        self.url, self.name_ = url, name

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield Label("server")
            yield Input(self.url, id="url")
            yield Label("your name (1-24 characters)")
            yield Input(self.name_, id="name")
            yield Static("", id="error")
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
        self.query_one("#error", Static).update(plain(message))


class LobbyScreen(ArenaScreen):
    """Rooms, players and bots online, the leaderboard; create, join, watch, challenge."""

    BINDINGS = [
        Binding("c", "create", "create room"),
        Binding("b", "challenge", "challenge"),
        Binding("w", "watch", "watch"),
        Binding("j", "join_by_id", "join by id"),
        Binding("v", "next_variant", "leaderboard variant"),
        Binding("t", "tournament", "tournament"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
    ]
    DEFAULT_CSS = """
    LobbyScreen #left { width: 3fr; }
    LobbyScreen #right { width: 2fr; }
    LobbyScreen .heading { text-style: bold; background: $primary-background; width: 100%; }
    LobbyScreen DataTable { height: 1fr; }
    """

    variant = "classic"

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="left"):
                yield Label("Rooms (enter: take a seat, w: watch)", classes="heading")
                yield DataTable(id="rooms", cursor_type="row", zebra_stripes=True)
            with Vertical(id="right"):
                yield Label("Online (enter or b: challenge)", classes="heading")
                yield DataTable(id="players", cursor_type="row")
                yield Label("", id="board-title", classes="heading")
                yield DataTable(id="leaderboard", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#rooms", DataTable).add_columns(
            "room", "variant", "X", "O", "status", "clock", "watching"
        )
        self.query_one("#players", DataTable).add_columns("name", "kind", "rating")
        self.query_one("#leaderboard", DataTable).add_columns("#", "name", "rating", "games")
        self.refresh_lobby()
        self.refresh_leaderboard()

    def refresh_lobby(self) -> None:
        lobby = self.arena.lobby
        rooms = self.query_one("#rooms", DataTable)
        keep = rooms.cursor_row
        rooms.clear()
        for r in lobby.open_rooms():
            flags = ("private " if r.private else "") + ("" if r.rated else "casual")
            rooms.add_row(
                plain(r.id),
                plain(r.variant),
                plain(r.seats.x or "-"),
                plain(r.seats.o or "-"),
                plain(f"{r.status} {flags}".strip()),
                plain(dialogs.describe_clock(r.time_control)),
                plain(r.spectators),
                key=r.id,
            )
        if rooms.row_count:
            rooms.move_cursor(row=min(keep, rooms.row_count - 1))
        players = self.query_one("#players", DataTable)
        keep = players.cursor_row
        players.clear()
        me = self.arena.player_id
        for p in sorted(lobby.players.values(), key=lambda p: (p.kind, p.name.lower())):
            rating = p.ratings.get(self.variant)
            style = "bold" if p.id == me else ""
            players.add_row(
                plain(p.name + (" (you)" if p.id == me else ""), style),
                plain(p.kind + (" (levels)" if p.levels else "")),
                plain("" if rating is None else rating),
                key=p.id,
            )
        if players.row_count:
            players.move_cursor(row=min(keep, players.row_count - 1))

    def refresh_leaderboard(self) -> None:
        self.query_one("#board-title", Label).update(plain(f"Leaderboard: {self.variant} (v: next)"))
        table = self.query_one("#leaderboard", DataTable)
        table.clear()
        board = self.arena.lobby.leaderboard
        if board is None or board.variant != self.variant:
            return
        for e in board.entries:
            table.add_row(
                plain(e.rank), plain(e.name), plain(f"{e.rating:.0f} ±{2 * e.rd:.0f}"), plain(e.games)
            )

    def _selected(self, table_id: str) -> str | None:
        table = self.query_one(f"#{table_id}", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(key) if key is not None else None

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is None:
            return
        if event.data_table.id == "rooms":
            self.arena.send(m.Join(room=str(key)))
        elif event.data_table.id == "players":
            self.action_challenge()

    def action_create(self) -> None:
        self.app.push_screen(dialogs.CreateRoom(), self.arena.send_if_any)

    def action_challenge(self) -> None:
        player_id = self._selected("players")
        player = self.arena.lobby.players.get(player_id or "")
        name = player.name if player is not None and player.id != self.arena.player_id else ""
        self.app.push_screen(dialogs.ChallengePlayer(name, self.levels_of), self.arena.send_if_any)

    def levels_of(self, name: str) -> list[str]:
        """The levels of play the player called ``name`` offers (bots), weakest first."""
        player = self.arena.lobby.player_named(name)
        return list(player.levels) if player is not None else []

    def action_watch(self) -> None:
        room = self._selected("rooms")
        if room is None:
            self.notify("no room selected", severity="warning")
            return
        self.arena.send(m.Spectate(room=room))

    def action_join_by_id(self) -> None:
        self.app.push_screen(dialogs.JoinPrivate(), self.arena.send_if_any)

    def action_next_variant(self) -> None:
        names = list(FEATURED)
        self.variant = (
            names[(names.index(self.variant) + 1) % len(names)] if self.variant in names else names[0]
        )
        self.arena.send(m.GetLeaderboard(variant=self.variant))
        self.refresh_leaderboard()
        self.refresh_lobby()

    def action_tournament(self) -> None:
        self.app.push_screen(TournamentFolder(), self.arena.open_tournament)

    def action_help(self) -> None:
        self.app.push_screen(dialogs.Help())


class GameScreen(ArenaScreen):
    """One room: the board, both players and their clocks, the moves, the result and
    its review. Read-only when watching."""

    BINDINGS = [
        Binding("r", "rematch", "rematch"),
        Binding("g", "resign", "resign"),
        Binding("escape", "back", "lobby"),
        Binding("question_mark", "help", "help"),
    ]
    DEFAULT_CSS = """
    GameScreen #side { width: 36; padding: 0 1; }
    GameScreen .player { height: 1; }
    GameScreen #banner { height: auto; text-style: bold; padding: 0 1; }
    GameScreen #banner.over { background: $success-darken-2; }
    GameScreen #moves { height: auto; max-height: 8; border-top: solid $primary; }
    GameScreen #review { height: 1fr; border-top: solid $primary; }
    """

    def __init__(self, view: RoomView) -> None:
        super().__init__()
        self.view = view
        #: The latest review (grades or why there are none), kept to draw once composed.
        self.review: tuple[list[Any] | None, str] | None = None
        #: Set once mounted: events that come while the screen is being composed only
        #: change the view, and on_mount draws the latest.
        self.ready = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="banner")
        with Horizontal():
            yield Board(self.view, interactive=self.view.role != "spectator", id="board")
            with Vertical(id="side"):
                yield Static("", id="room-line")
                yield Static("", id="player-x", classes="player")
                yield Static("", id="player-o", classes="player")
                yield Static("", id="status")
                with VerticalScroll(id="moves"):
                    yield Static("", id="move-list")
                with VerticalScroll(id="review"):
                    yield Static("", id="review-text")
        yield Footer()

    def on_mount(self) -> None:
        self.ready = True
        self.set_interval(0.1, self.tick)
        self.redraw()
        self.call_after_refresh(self._focus_board)
        if self.review is not None:
            self.show_review(*self.review)

    def _focus_board(self) -> None:
        for board in self.query(Board):
            board.focus()

    def tick(self) -> None:
        """Clocks and grace countdowns move between events."""
        view = self.view
        running = view.clocks is not None and view.clocks.running is not None and view.result is None
        moving = running or view.disconnected or view.first_move_until
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

    def _players(self, now: float) -> None:
        view = self.view
        for mark in ("x", "o"):
            text = Text()
            turn = view.playing and view.to_move == mark
            text.append("▶ " if turn else "  ", "bold yellow")
            text.append(mark.upper(), "bold bright_cyan" if mark == "x" else "bold bright_magenta")
            text.append(" ")
            name = view.name_of(mark)
            text.append_text(
                plain(name[:18] + (" (you)" if name == view.me and view.role == mark else ""), "bold")
            )
            score = view.score.get(name)
            if score is not None:
                text.append(f" {score:g}", "dim")
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
            return plain(f"rematch asked by {asks} (r)" if asks else "r: rematch, escape: lobby")
        who = "your move" if view.my_turn else f"{view.name_of(view.to_move)} to move"
        if view.first_move_until is not None:
            who += f" (first move within {max(0.0, view.first_move_until - now):.0f}s)"
        text = plain(who, "bold" if view.my_turn else "")
        if view.variant.max_marks is not None:
            text.append("\nlower case: the mark that leaves on its owner's next move", "dim italic")
        return text

    def _moves(self) -> None:
        view, cols = self.view, self.view.variant.cols
        text = Text()
        for i in range(0, len(view.moves), 2):
            pair = [cell_name(c, cols) for c in view.moves[i : i + 2]]
            text.append(f"{i // 2 + 1:>3}. ", "dim")
            text.append("  ".join(f"{p:<4}" for p in pair) + "\n")
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
            text.append_text(plain("  ·  " + ", ".join(f"{n} {r:.0f}" for n, r in view.ratings.items())))
        banner.update(text)
        banner.add_class("over")

    def show_review(self, grades: list[Any] | None, why: str = "") -> None:
        """The post-game review: each move graded against the solved table."""
        self.review = (grades, why)
        if not self.ready:
            return  # drawn by on_mount
        if not self.query("#review-text"):
            self.call_after_refresh(self.show_review, grades, why)  # still being composed
            return
        widget = self.query_one("#review-text", Static)
        if grades is None:
            widget.update(plain(why, "dim"))
            return
        cols = self.view.variant.cols
        text = Text("Review\n", "bold")
        style = {"optimal": "green", "inaccuracy": "yellow", "blunder": "bold red"}
        for g in grades:
            mover = "X" if g.ply % 2 else "O"
            text.append(f"{g.ply:>2}. {mover} {cell_name(g.move, cols):<4}")
            text.append(f"{g.grade:<10}", style[g.grade])
            if g.grade != "optimal":
                text.append(" best " + " ".join(cell_name(b, cols) for b in g.best[:3]), "dim")
            text.append("\n")
        widget.update(text)

    def on_board_picked(self, event: Board.Picked) -> None:
        view = self.view
        if view.role == "spectator":
            self.notify("you are watching this game", severity="warning")
        elif not view.playing:
            self.notify("no game in progress: r asks for a rematch", severity="warning")
        elif not view.my_turn:
            self.notify("it is not your turn", severity="warning")
        else:
            self.arena.send(m.Move(room=view.room, cell=event.cell))

    def action_rematch(self) -> None:
        if self.view.role != "spectator":
            self.arena.send(m.Rematch(room=self.view.room))

    def action_resign(self) -> None:
        if self.view.playing and self.view.role != "spectator":
            self.arena.send(m.Resign(room=self.view.room))

    def action_back(self) -> None:
        if self.view.playing and self.view.role != "spectator":
            self.notify("the game is still going: resign (g) first, or play on", severity="warning")
            return
        self.arena.leave_room(self.view.room)

    def action_help(self) -> None:
        self.app.push_screen(dialogs.Help())


def _seats(view: RoomView) -> tuple[str | None, str | None]:
    return view.summary.seats.x, view.summary.seats.o


class TournamentFolder(ModalScreen[Path | None]):
    """Ask for the ``--out`` folder of a running ``ttt tournament``."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    TournamentFolder { align: center middle; }
    TournamentFolder > Vertical {
        width: 64; height: auto; border: thick $accent; background: $surface; padding: 1 2;
    }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("The --out folder of a ttt tournament")
            yield Input("", id="folder")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(Path(event.value.strip()) if event.value.strip() else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class TournamentScreen(ArenaScreen):
    """Live standings and crosstable of a tournament, read from the ``standings.json``
    and ``crosstable.csv`` that ``ttt tournament --out DIR`` rewrites after each game."""

    BINDINGS = [Binding("escape", "back", "back")]
    DEFAULT_CSS = """
    TournamentScreen #summary { height: auto; padding: 0 1; text-style: bold; }
    TournamentScreen DataTable { height: auto; max-height: 50%; margin: 1 0; }
    """

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.seen: float | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="summary")
        yield DataTable(id="standings", cursor_type="none", zebra_stripes=True)
        yield DataTable(id="crosstable", cursor_type="none")
        yield Static("", id="matchups")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#standings", DataTable).add_columns(
            "#", "player", "points", "games", "won", "drawn", "lost", "as X", "as O"
        )
        self.load()
        self.set_interval(0.5, self.load)

    def load(self) -> None:
        path = self.folder / "standings.json"
        try:
            stamp = path.stat().st_mtime
            if stamp == self.seen:
                return
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = list(csv.reader((self.folder / "crosstable.csv").read_text(encoding="utf-8").splitlines()))
        except (OSError, ValueError) as exc:
            self.query_one("#summary", Static).update(plain(f"no standings in {self.folder} yet ({exc})"))
            return
        self.seen = stamp
        self.show(data, rows)

    def show(self, data: dict[str, Any], cross: list[list[str]]) -> None:
        planned = data.get("planned")
        played = f"{data.get('games', 0)}" + (f"/{planned}" if planned else "")
        self.query_one("#summary", Static).update(
            plain(
                f"{data.get('format', '?')} · {data.get('variant', '?')} · games {played} · "
                f"{data.get('status', 'finished')}"
            )
        )
        standings = self.query_one("#standings", DataTable)
        standings.clear()
        for rank, row in enumerate(data.get("standings", []), start=1):
            standings.add_row(
                plain(rank),
                plain(row.get("name", "?"), "bold"),
                plain(f"{row.get('points', 0):g}"),
                *(plain(row.get(k, "")) for k in ("games", "wins", "draws", "losses", "as_x", "as_o")),
            )
        table = self.query_one("#crosstable", DataTable)
        table.clear(columns=True)
        if cross:
            table.add_columns(*(plain(h) for h in cross[0]))
            for row in cross[1:]:
                table.add_row(*(plain(c) for c in row))
        lines = Text()
        for mu in data.get("matchups", []):
            elo = mu.get("elo")
            if elo is None:
                continue
            lines.append_text(
                plain(
                    f"{mu['player']} vs {mu['opponent']}: +{mu['wins']} ={mu['draws']} -{mu['losses']}  "
                    f"Elo {elo:+.0f} ± {mu.get('error95') or 0:.0f}  LOS {100 * (mu.get('los') or 0):.1f}%\n"
                )
            )
        self.query_one("#matchups", Static).update(lines)

    def action_back(self) -> None:
        self.app.pop_screen()
