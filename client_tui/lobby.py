"""The lobby: rooms, players online, challenges both ways and the leaderboard.

Its panes are numbered (``1`` rooms, ``2`` online, ``3`` challenges, ``4``
leaderboard) and the focused one has a bright border. Incoming challenges wait in
pane 3, newest on top; nothing pops up over a game.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Label

from client_tui import dialogs
from client_tui.challenges import offer_text
from client_tui.text import plain
from protocol import messages as m
from protocol.rules import FEATURED

if TYPE_CHECKING:
    from client_tui.app import ArenaApp


#: Room states in the narrow rooms table (c: casual, p: private).
SHORT_STATE = {"waiting": "open", "playing": "live", "finished": "over", "closed": "shut"}


def number(value: object) -> Text:
    """A right-aligned number cell."""
    text = plain(value)
    text.justify = "right"
    return text


class LobbyScreen(Screen[None]):
    """Rooms, players and bots online, the leaderboard; create, join, watch, challenge."""

    BINDINGS = [
        Binding("c", "create", "create"),
        Binding("b", "challenge", "challenge"),
        Binding("w", "watch", "watch"),
        Binding("a", "answer(True)", "accept", show=False),
        Binding("d", "answer(False)", "decline", show=False),
        Binding("x", "cancel_challenge", "withdraw", show=False),
        Binding("j", "join_by_id", "join by id", show=False),
        Binding("v", "next_variant", "variant", show=False),
        Binding("t", "tournament", "tournament", show=False),
        Binding("1", "pane('rooms')", show=False),
        Binding("2", "pane('players')", show=False),
        Binding("3", "pane('challenges')", show=False),
        Binding("4", "pane('leaderboard')", show=False),
        Binding("question_mark,f1", "help", "help"),
        Binding("q", "quit", "quit"),
    ]
    DEFAULT_CSS = """
    LobbyScreen #left { width: 3fr; }
    LobbyScreen #right { width: 2fr; }
    LobbyScreen .heading { text-style: bold; width: 100%; height: 1; }
    LobbyScreen DataTable { height: 1fr; border: round $panel-lighten-2; }
    LobbyScreen DataTable:focus { border: double $accent; }
    LobbyScreen #challenges { height: auto; max-height: 8; min-height: 3; }
    """

    variant = "classic"
    compact = False

    @property
    def arena(self) -> ArenaApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal():
            with Vertical(id="left"):
                yield Label("1 Rooms · enter: sit, w: watch", classes="heading")
                yield DataTable(id="rooms", cursor_type="row", zebra_stripes=True)
                yield Label("", id="challenges-title", classes="heading")
                yield DataTable(id="challenges", cursor_type="row")
            with Vertical(id="right"):
                yield Label("", id="players-title", classes="heading")
                yield DataTable(id="players", cursor_type="row")
                yield Label("", id="board-title", classes="heading")
                yield DataTable(id="leaderboard", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#players", DataTable).add_columns("name", "kind", "rating")
        self.query_one("#challenges", DataTable).add_columns("", "challenge", "left")
        self.query_one("#leaderboard", DataTable).add_columns("#", "name", "rating", "games")
        self.refresh_lobby()
        self.refresh_leaderboard()
        self.set_interval(1.0, self.refresh_challenges)
        self.query_one("#rooms", DataTable).focus()

    def on_resize(self) -> None:
        self.refresh_lobby()

    @property
    def composed(self) -> bool:
        """Whether the panes exist: events can come before compose or after unmount starts
        (``is_mounted`` is no guide: it turns true only after ``on_mount``, which draws)."""
        return bool(self.query("#rooms"))

    def refresh_lobby(self) -> None:
        if not self.composed:
            return
        lobby = self.arena.lobby
        rooms = self.query_one("#rooms", DataTable)
        keep = rooms.cursor_row
        # Under 110 columns the rooms pane is too narrow for every column: players share
        # one, and the room id and the watcher count go (enter and w still use the row).
        compact = self.app.size.width < 110
        if compact != self.compact or not rooms.columns:
            self.compact = compact
            rooms.clear(columns=True)
            if compact:
                rooms.add_columns("game", "players", "state", "clock")
            else:
                rooms.add_columns("room", "game", "X", "O", "state", "clock", "eyes")
        rooms.clear()
        for r in lobby.open_rooms():
            flags = ("private " if r.private else "") + ("" if r.rated else "casual")
            clock = dialogs.describe_clock(r.time_control, short=compact)
            if compact:
                who = f"{(r.seats.x or '-')[:8]} v {(r.seats.o or '-')[:8]}"
                state = SHORT_STATE[r.status] + (" c" if not r.rated else "") + (" p" if r.private else "")
                rooms.add_row(plain(r.variant), plain(who), plain(state), plain(clock), key=r.id)
                continue
            rooms.add_row(
                plain(r.id),
                plain(r.variant),
                plain(r.seats.x or "-"),
                plain(r.seats.o or "-"),
                plain(f"{r.status} {flags}".strip()),
                plain(clock),
                number(r.spectators),
                key=r.id,
            )
        if rooms.row_count:
            rooms.move_cursor(row=min(keep, rooms.row_count - 1))
        self.query_one("#players-title", Label).update(plain(f"2 Online · rating: {self.variant}"))
        players = self.query_one("#players", DataTable)
        keep = players.cursor_row
        players.clear()
        me = self.arena.player_id
        for p in sorted(lobby.players.values(), key=lambda p: (p.kind, p.name.lower())):
            rating = p.ratings.get(self.variant)
            players.add_row(
                plain(p.name + (" (you)" if p.id == me else ""), "bold" if p.id == me else ""),
                plain(p.kind + (" (levels)" if p.levels else "")),
                number("" if rating is None else rating),
                key=p.id,
            )
        if players.row_count:
            players.move_cursor(row=min(keep, players.row_count - 1))
        self.refresh_challenges()

    def refresh_challenges(self) -> None:
        if not self.composed:
            return
        now = time.monotonic()
        book = self.arena.challenges
        book.expire(now)
        table = self.query_one("#challenges", DataTable)
        keep = table.cursor_row
        table.clear()
        incoming = book.newest_first(now)
        for i in incoming:
            clock = dialogs.describe_clock(i.offer.time_control)
            table.add_row(
                plain("in", "bold"),
                plain(offer_text(i.offer, clock)),
                number(f"{i.until - now:.0f}s"),
                key=i.offer.challenge,
            )
        for o in book.outgoing:
            c = o.challenge
            table.add_row(
                plain("out"),
                plain(f"to {c.opponent}: {c.variant}, {dialogs.describe_clock(c.time_control)}"),
                number(f"{o.until - now:.0f}s"),
                key=f"out:{o.id}" if o.id is not None else None,
            )
        if table.row_count:
            table.move_cursor(row=min(keep, table.row_count - 1))
        self.query_one("#challenges-title", Label).update(
            plain(f"3 Challenges · {len(incoming)} for you · a/d: accept/decline · x: withdraw")
        )

    def refresh_leaderboard(self) -> None:
        if not self.composed:
            return
        self.query_one("#board-title", Label).update(plain(f"4 Leaderboard: {self.variant} · v: next"))
        table = self.query_one("#leaderboard", DataTable)
        table.clear()
        board = self.arena.lobby.leaderboard
        if board is None or board.variant != self.variant:
            return
        for e in board.entries:
            table.add_row(
                number(e.rank), plain(e.name), number(f"{e.rating:.0f} ±{2 * e.rd:.0f}"), number(e.games)
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
        elif event.data_table.id == "challenges":
            self.action_answer(True)

    def action_pane(self, pane: str) -> None:
        self.query_one(f"#{pane}", DataTable).focus()

    def action_answer(self, accept: bool) -> None:
        book = self.arena.challenges
        chosen = self._selected("challenges") if self.focused is self.query_one("#challenges") else None
        if chosen is None or chosen not in book.incoming:
            newest = book.newest_first(time.monotonic())
            chosen = newest[0].offer.challenge if newest else None
        if chosen is None:
            self.notify("no challenge waiting for you", severity="warning")
            return
        self.arena.answer(chosen, accept)

    def action_cancel_challenge(self) -> None:
        """Withdraw the outgoing challenge selected (or the newest one sent)."""
        book = self.arena.challenges
        chosen = self._selected("challenges") if self.focused is self.query_one("#challenges") else None
        ids = [o.id for o in book.outgoing if o.id is not None]
        target = chosen.removeprefix("out:") if chosen is not None and chosen.startswith("out:") else None
        if target not in ids:
            target = ids[-1] if ids else None
        if target is None:
            self.notify("you have no challenge waiting for an answer", severity="warning")
            return
        self.arena.send(m.CancelChallenge(challenge=target))

    def action_create(self) -> None:
        self.app.push_screen(dialogs.CreateRoom(), self.arena.send_if_any)

    def action_challenge(self) -> None:
        player_id = self._selected("players")
        player = self.arena.lobby.players.get(player_id or "")
        name = player.name if player is not None and player.id != self.arena.player_id else ""
        self.app.push_screen(
            dialogs.ChallengePlayer(name, self.levels_of),
            self.arena.send_if_any,
        )

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
        from client_tui.tournament import TournamentFolder

        self.app.push_screen(TournamentFolder(), self.arena.open_tournament)

    def action_help(self) -> None:
        self.app.push_screen(dialogs.Help())

    def action_quit(self) -> None:
        self.arena.exit_now()
