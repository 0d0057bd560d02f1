"""`ArenaApp`: the Textual terminal client of ttt-arena.

The app owns the models (`LobbyView`, one `RoomView` per room) and the `Link`.
One worker reads server events and applies them to the models, then asks the
visible screen to redraw; requests go out in their own workers so the screen
never waits on the network. The connection's state is always in the header.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from textual.app import App
from textual.binding import Binding

from client_tui import dialogs
from client_tui.link import Link
from client_tui.model import LobbyView, RoomView
from client_tui.screens import ConnectScreen, GameScreen, LobbyScreen, TournamentScreen
from client_tui.text import printable
from client_tui.tokens import TokenStore
from protocol import messages as m
from protocol.client import ConnectionLost, RemoteError

#: Variants the post-game review can grade (solved by retrograde analysis).
REVIEWED = ("classic", "tactic-toe")


class ArenaApp(App[None]):
    """``ttt play``: connect, then the lobby; games open as they start."""

    TITLE = "ttt-arena"
    BINDINGS = [Binding("ctrl+q", "quit", "quit", show=False)]

    def __init__(
        self,
        url: str = "ws://127.0.0.1:8765",
        name: str = "",
        *,
        store: TokenStore | None = None,
        tournament: Path | None = None,
        review: bool = True,
    ) -> None:
        super().__init__()
        self.url, self.player_name = url, name
        self.store = store or TokenStore()
        self.tournament = tournament
        self.review = review
        self.link: Link | None = None
        self.lobby = LobbyView()
        self.rooms: dict[str, RoomView] = {}
        self.player_id: str | None = None

    # --- connecting ------------------------------------------------------------------

    def on_mount(self) -> None:
        self.begin()

    def begin(self) -> None:
        """The first screen: a tournament's standings, or connect (at once when named)."""
        self.sub_title = "not connected"
        if self.tournament is not None:
            self.push_screen(TournamentScreen(self.tournament))
            return
        if not self.player_name:
            known = self.store.get(self.url)
            self.player_name = known.name if known else ""
        self.push_screen(ConnectScreen(self.url, self.player_name))
        if self.player_name and m.check_name(self.player_name) is None:
            self.start_connect(self.url, self.player_name)

    def start_connect(self, url: str, name: str) -> None:
        self.url, self.player_name = url, name
        self.run_worker(self._connect(), group="connect", exclusive=True)

    def _status(self, status: str) -> None:
        where = self.link.url if self.link else self.url
        self.sub_title = printable(f"{status} · {where} · {self.player_name}")

    async def _connect(self) -> None:
        if self.link is not None:
            await self.link.close()
        link = self.link = Link(self.url, self.player_name, self.store, self._status)
        try:
            welcome = await link.connect()
        except (RemoteError, OSError, TimeoutError, ConnectionLost) as exc:
            text = str(exc) or type(exc).__name__
            self._status("disconnected")
            if isinstance(self.screen, ConnectScreen):
                self.screen.show_error(f"could not connect: {text}")
            self.notify(printable(f"could not connect: {text}"), severity="error", markup=False)
            return
        self.player_id = welcome.player.id
        self.run_worker(self._pump(link), group="pump", exclusive=True)
        await self.switch_screen(LobbyScreen())
        snapshot = await self._ask(m.LobbySubscribe())
        if isinstance(snapshot, m.LobbySnapshot):
            self.lobby.load(snapshot)
        board = await self._ask(m.GetLeaderboard(variant="classic"))
        if isinstance(board, m.Leaderboard):
            self.lobby.leaderboard = board
        self._redraw_lobby()
        if welcome.rooms:
            # Games this player sits in (a restart of the client): a snapshot of each.
            await self._ask(m.Resume(rooms=dict.fromkeys(welcome.rooms, 0)))

    # --- requests ---------------------------------------------------------------------------

    def send(self, message: m.ClientMessage) -> None:
        """Send ``message`` in the background; its reply is handled like an event."""
        self.run_worker(self._send(message), group="send")

    def send_if_any(self, message: m.ClientMessage | None) -> None:
        if message is not None:
            self.send(message)

    async def _send(self, message: m.ClientMessage) -> None:
        reply = await self._ask(message)
        if reply is not None:
            self.handle(reply)

    async def _ask(self, message: m.ClientMessage) -> m.ServerMessage | None:
        """The reply to ``message``, or None after telling the player what went wrong."""
        if self.link is None:
            self.notify("not connected", severity="error")
            return None
        try:
            return await self.link.request(message)
        except RemoteError as exc:
            self.notify(printable(exc.message), title=exc.code, severity="error", markup=False)
        except (ConnectionLost, TimeoutError, OSError) as exc:
            self.notify(printable(f"not sent: {exc or 'timed out'}"), severity="error", markup=False)
        return None

    def leave_room(self, room: str) -> None:
        self.rooms.pop(room, None)
        if self.link is not None and self.link.client is not None:
            self.link.client.session.left(room)
        self.send(m.Leave(room=room))
        self._show_lobby()

    def open_tournament(self, folder: Path | None) -> None:
        if folder is not None:
            self.push_screen(TournamentScreen(folder))

    # --- events -----------------------------------------------------------------------------

    async def _pump(self, link: Link) -> None:
        async for event in link.events():
            self.handle(event)
        if link.status != "closed":
            self.notify(f"connection lost for good: {link.status}", severity="error")

    def handle(self, event: m.ServerMessage) -> None:
        """Apply one message from the server to the models and the screens."""
        now = time.monotonic()
        if isinstance(event, m.Joined):
            self.open_room(event.snapshot, event.invite)
        elif isinstance(event, m.ChallengeAccepted):
            self.open_room(event.snapshot, None)
        elif isinstance(event, m.LobbyUpdate):
            self.lobby.apply(event)
            self._redraw_lobby()
        elif isinstance(event, m.LobbySnapshot):
            self.lobby.load(event)
            self._redraw_lobby()
        elif isinstance(event, m.Leaderboard):
            self.lobby.leaderboard = event
            if isinstance(self.screen, LobbyScreen):
                self.screen.refresh_leaderboard()
        elif isinstance(event, m.ChallengeReceived):
            self.push_screen(dialogs.ChallengeOffer(event), lambda yes: self._answer(event, bool(yes)))
        elif isinstance(event, m.ChallengeDeclined):
            why = f": {event.reason}" if event.reason else ""
            self.notify(
                printable(f"{event.by} declined your challenge{why}"), severity="warning", markup=False
            )
        elif isinstance(event, m.ChallengeCancelled):
            why = f": {event.reason}" if event.reason else ""
            self.notify(printable(f"a challenge to you was withdrawn{why}"), severity="warning", markup=False)
        elif isinstance(event, m.ChallengeSent):
            self.notify("challenge sent; waiting for an answer")
        elif isinstance(event, m.Snapshot) and event.room not in self.rooms:
            self.open_room(event.snapshot, None)
        elif isinstance(event, m.Error):
            self.notify(printable(event.message), title=event.code, severity="error", markup=False)
        elif isinstance(event, m.Goodbye):
            self.notify(printable(f"server: {event.reason}"), severity="warning", markup=False)
        elif event.type in m.ROOM_EVENT_TYPES:
            view = self.rooms.get(getattr(event, "room", ""))
            if view is not None:
                view.apply(event, now)
                self._redraw_room(view, ended=isinstance(event, m.GameEnded))

    def _answer(self, offer: m.ChallengeReceived, accept: bool) -> None:
        if accept:
            self.send(m.AcceptChallenge(challenge=offer.challenge))
        else:
            self.send(m.DeclineChallenge(challenge=offer.challenge, reason="declined"))

    def open_room(self, snapshot: m.RoomSnapshot, invite: str | None) -> None:
        """Show the room of ``snapshot`` (a join, an accepted challenge, a resume)."""
        view = RoomView.from_snapshot(snapshot, self.player_name, time.monotonic(), invite)
        old = self.rooms.get(view.room)
        if old is not None and old.invite and not invite:
            view.invite = old.invite
        self.rooms[view.room] = view
        if invite:
            self.notify(
                printable(f"private room {view.room}: invite code {invite}"), markup=False, timeout=15
            )
        game = GameScreen(view)
        if isinstance(self.screen, GameScreen):
            self.switch_screen(game)
        else:
            self.push_screen(game)
        if view.result is not None:
            self._review(view)

    def _show_lobby(self) -> None:
        while isinstance(self.screen, GameScreen) and len(self.screen_stack) > 1:
            self.pop_screen()
        self._redraw_lobby()

    def _redraw_lobby(self) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, LobbyScreen) and screen.is_mounted:
                screen.refresh_lobby()

    def _redraw_room(self, view: RoomView, ended: bool) -> None:
        screen = self.screen
        if isinstance(screen, GameScreen) and screen.view.room == view.room:
            screen.view = view
            screen.redraw()
            if ended:
                self._review(view)

    # --- review --------------------------------------------------------------------------------

    def _review(self, view: RoomView) -> None:
        if not self.review or view.summary.variant not in REVIEWED:
            self._show_review(view, None, "no review: only classic and tactic-toe are solved")
            return
        moves, variant = list(view.moves), view.summary.variant
        self._show_review(view, None, "reviewing against the solved table ...")
        self.run_worker(lambda: self._grade(view, variant, moves), thread=True, group="review")

    def _grade(self, view: RoomView, variant: str, moves: list[int]) -> None:
        from bots.analyse import grade_moves

        try:
            grades: list[Any] | None = grade_moves(variant, moves)
            why = ""
        except Exception as exc:  # a review must never take the client down
            grades, why = None, f"no review: {exc}"
        self.call_from_thread(self._show_review, view, grades, why)

    def _show_review(self, view: RoomView, grades: list[Any] | None, why: str) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, GameScreen) and screen.view is view:
                screen.show_review(grades, why)

    async def action_quit(self) -> None:
        if self.link is not None:
            await self.link.close()
        self.exit()
