"""`ArenaApp`: the Textual terminal client of ttt-arena.

The app owns the models (`LobbyView`, one `RoomView` per room, the
`ChallengeBook`) and the `Link`. One worker reads server events and applies them
to the models, then asks the visible screens to redraw; requests go out in their
own workers so the screen never waits on the network. The connection's state is
always in the header. After a reconnection the app subscribes to the lobby again
and watches again every room it was watching, replacing its views with what the
server answers (a restarted server remembers neither).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App
from textual.binding import Binding
from websockets.exceptions import WebSocketException

from client_tui.challenges import ChallengeBook
from client_tui.link import Link
from client_tui.lobby import LobbyScreen
from client_tui.model import LobbyView, RoomView
from client_tui.screens import MIN_SIZE, ConnectScreen, GameScreen, TooSmall, TournamentScreen
from client_tui.text import printable
from client_tui.tokens import TokenStore
from client_tui.words import error_text, unreachable_text
from protocol import messages as m
from protocol.client import ConnectionLost, RemoteError

#: Variants the post-game review can grade (solved by retrograde analysis).
REVIEWED = ("classic", "tactic-toe")
#: The rating of a player's first rated game in a variant (the server's Glicko-2 start).
START_RATING = 1500.0
#: Room events kept, per room, while the room is not open here (`ArenaApp.early`).
EARLY_EVENTS = 100


class ArenaApp(App[None]):
    """``ttt play``: connect, then the lobby; games open as they start."""

    TITLE = "ttt-arena"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("ctrl+q", "quit", "quit", show=False, priority=True)]

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
        self.challenges = ChallengeBook()
        #: The last challenge sent to each opponent (a rematch against a bot repeats it).
        self.last_challenge: dict[str, m.Challenge] = {}
        #: Room events that came before their room was open here: room -> [(event, when)].
        #: The answer that opens a room (a join's snapshot) and the room's events come by
        #: two paths (the request's, the event pump's): a move just after the join, or the
        #: game's start, can be handled first. `open_room` applies those newer than its
        #: snapshot.
        self.early: dict[str, list[tuple[m.ServerMessage, float]]] = {}
        self.player_id: str | None = None
        self.status = "not connected"
        self.form_memory: dict[str, dict[str, object]] = {}

    # --- connecting ------------------------------------------------------------------

    def on_mount(self) -> None:
        self.begin()

    def begin(self) -> None:
        """The first screen: a tournament's standings, or connect (at once when named)."""
        self.sub_title = "not connected"
        if self.tournament is not None:
            self.push_screen(TournamentScreen(self.tournament))
            return
        known = self.store.get(self.url)
        self.push_screen(ConnectScreen(self.url, self.player_name, known.name if known else ""))
        if self.player_name and m.check_name(self.player_name) is None:
            self.start_connect(self.url, self.player_name)

    def on_resize(self, event: events.Resize) -> None:
        small = event.size.width < MIN_SIZE[0] or event.size.height < MIN_SIZE[1]
        shown = isinstance(self.screen, TooSmall)
        if small and not shown:
            self.push_screen(TooSmall())
        elif not small and shown:
            self.pop_screen()

    def start_connect(self, url: str, name: str) -> None:
        self.url, self.player_name = url, name
        self.run_worker(self._connect(), group="connect", exclusive=True)

    def _status(self, status: str) -> None:
        self.status = status
        self._title()

    def _title(self) -> None:
        where = self.link.url if self.link else self.url
        waiting = len(self.challenges.incoming)
        note = f" · {waiting} challenge{'s' if waiting > 1 else ''} for you" if waiting else ""
        self.sub_title = printable(f"{self.status} · {where} · {self.player_name}{note}")

    async def _connect(self) -> None:
        if self.link is not None:
            await self.link.close()
        link = self.link = Link(self.url, self.player_name, self.store, self._status)
        try:
            welcome = await link.connect()
        except RemoteError as exc:
            self._refused(error_text(exc.code, exc.message))
            return
        except (OSError, TimeoutError, ConnectionLost, WebSocketException):
            self._refused(f"{unreachable_text()}: is it running at {self.url}?")
            return
        self.player_id = welcome.player.id
        self.run_worker(self._pump(link), group="pump", exclusive=True)
        await self.switch_screen(LobbyScreen())
        await self._subscribe()
        if welcome.rooms:
            # Games this player sits in (a restart of the client): a snapshot of each.
            await self._ask(m.Resume(rooms=dict.fromkeys(welcome.rooms, 0)))

    def _refused(self, text: str) -> None:
        self._status("disconnected")
        if isinstance(self.screen, ConnectScreen):
            self.screen.show_error(f"could not connect: {text}")
        self.notify(printable(f"could not connect: {text}"), severity="error", markup=False)

    async def _subscribe(self) -> None:
        """The lobby and the leaderboard, fresh (at start and after every reconnection)."""
        self.lobby.subscribing()  # updates the pump handles before the answer are kept
        snapshot = await self._ask(m.LobbySubscribe())
        if isinstance(snapshot, m.LobbySnapshot):
            self.lobby.load(snapshot)
        else:
            self.lobby.since_subscribe = None
        await self._fetch_leaderboard()
        self._redraw_lobby()

    async def _fetch_leaderboard(self) -> None:
        variant = next((s.variant for s in self.screen_stack if isinstance(s, LobbyScreen)), "classic")
        board = await self._ask(m.GetLeaderboard(variant=variant))
        if isinstance(board, m.Leaderboard):
            self.lobby.leaderboard = board
            self._redraw_lobby()

    async def _resubscribe(self, resumed: m.Resumed) -> None:
        """After a reconnection: the lobby again, and every watched room again."""
        await self._subscribe()
        for room, view in list(self.rooms.items()):
            if view.role == "spectator":
                try:
                    reply = await self._request(m.Spectate(room=room))
                except RemoteError:
                    reply = None
                except (ConnectionLost, OSError, TimeoutError, WebSocketException):
                    return  # dropped again: the next reconnection subscribes again
                if isinstance(reply, m.Joined):
                    view.load(reply.snapshot, time.monotonic())
                else:
                    view.closed = "gone since the server restarted"
            elif resumed.rooms.get(room) == "gone":
                view.closed = "gone since the server restarted"
            self._redraw_room(view, ended=False)

    # --- requests ---------------------------------------------------------------------------

    def send(self, message: m.ClientMessage) -> None:
        """Send ``message`` in the background; its reply is handled like an event."""
        self.run_worker(self._send(message), group="send")

    def send_if_any(self, message: m.ClientMessage | None) -> None:
        if message is not None:
            self.send(message)

    async def _send(self, message: m.ClientMessage) -> None:
        outgoing = None
        if isinstance(message, m.Challenge):
            self.last_challenge[message.opponent] = message
            outgoing = self.challenges.sent(message, time.monotonic())
            self._redraw_lobby()
        reply = await self._ask(message)
        if isinstance(message, m.CancelChallenge) and isinstance(reply, m.Ok):
            self.challenges.closed(message.challenge)
            self.notify("challenge withdrawn")
            self._redraw_lobby()
        if outgoing is not None:
            if isinstance(reply, m.ChallengeSent):
                self.challenges.confirmed(outgoing, reply, time.monotonic())
            else:
                self.challenges.drop_outgoing(outgoing)
            self._redraw_lobby()
        if reply is not None:
            self.handle(reply)

    async def _request(self, message: m.ClientMessage) -> m.ServerMessage:
        if self.link is None:
            raise ConnectionLost("not connected")
        return await self.link.request(message)

    async def _ask(self, message: m.ClientMessage) -> m.ServerMessage | None:
        """The reply to ``message``, or None after telling the player what went wrong."""
        try:
            return await self._request(message)
        except RemoteError as exc:
            self.notify(printable(error_text(exc.code, exc.message)), severity="error", markup=False)
            if exc.code == "no_such_room" and isinstance(message, m.Join | m.Spectate):
                self.lobby.rooms.pop(message.room, None)  # a stale row: gone from the list
                self._redraw_lobby()
        except (ConnectionLost, TimeoutError, OSError, WebSocketException):
            self.notify("not sent: the connection is down, reconnecting", severity="error")
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

    def answer(self, challenge: str, accept: bool) -> None:
        """Accept or decline the incoming challenge ``challenge``."""
        self.challenges.closed(challenge)
        self._redraw_lobby()
        if accept:
            self.send(m.AcceptChallenge(challenge=challenge))
        else:
            self.send(m.DeclineChallenge(challenge=challenge))

    def rematch(self, view: RoomView) -> None:
        """Ask for a rematch; when the opponent left the room (bots do after a game), a
        new challenge with the same settings and the colours swapped."""
        mine = view.my_mark
        if mine is None:
            return
        theirs: m.MarkName = "o" if mine == "x" else "x"
        seat = view.summary.seats.o if mine == "x" else view.summary.seats.x
        if seat is not None:
            self.send(m.Rematch(room=view.room))
            return
        opponent = view.name_of(theirs)
        s = view.summary
        last = self.last_challenge.get(opponent)
        settings: dict[str, Any] = {
            "variant": s.variant, "time_control": s.time_control, "rated": s.rated,
            "ply_cap": s.ply_cap, "level": last.level if last is not None else None,
        }  # fmt: skip
        self.notify(printable(f"{opponent} left the room: challenging again with the same settings"))
        self.leave_room(view.room)
        self.send(m.Challenge(opponent=opponent, colour=theirs, **settings))

    def grace_seconds(self) -> float:
        client = self.link.client if self.link is not None else None
        if client is None or client.session.welcome is None:
            return 30.0
        return client.session.welcome.limits.grace_ms / 1000

    def exit_now(self) -> None:
        self.run_worker(self.action_quit(), group="quit")

    async def action_quit(self) -> None:
        if self.link is not None:
            await self.link.close()
        self.exit()

    # --- events -----------------------------------------------------------------------------

    async def _pump(self, link: Link) -> None:
        async for event in link.events():
            if isinstance(event, m.Resumed):  # the link came back: the lobby and watched rooms again
                self.run_worker(self._resubscribe(event), group="resubscribe", exclusive=True)
                continue
            self.handle(event)
        if link.status != "closed":
            self.notify(f"connection lost for good: {link.status}", severity="error")

    def handle(self, event: m.ServerMessage) -> None:
        """Apply one message from the server to the models and the screens."""
        now = time.monotonic()
        if isinstance(event, m.Joined):
            self.open_room(event.snapshot, event.invite)
        elif isinstance(event, m.ChallengeAccepted):
            self.challenges.closed(event.challenge)
            self.open_room(event.snapshot, None)
        elif isinstance(event, m.LobbyUpdate):
            self.lobby.apply(event)
            self._redraw_lobby()
        elif isinstance(event, m.LobbySnapshot):
            self.lobby.load(event)
            self._redraw_lobby()
        elif isinstance(event, m.Leaderboard):
            self.lobby.leaderboard = event
            self._redraw_lobby()
        elif isinstance(event, m.ChallengeReceived):
            first = not self.challenges.incoming
            self.challenges.received(event, now)
            if first:  # one notice, however many follow; the list is in the lobby
                self.notify(printable(f"{event.challenger.name} challenges you: answer in the lobby (a/d)"))
            self._title()
            self._redraw_lobby()
        elif isinstance(event, m.ChallengeDeclined):
            self.challenges.closed(event.challenge)
            why = {"gone": "left", "no_answer": "did not answer"}.get(event.cause, "declined your challenge")
            reason = f": {event.reason}" if event.reason and event.reason != "declined" else ""
            self.notify(printable(f"{event.by} {why}{reason}"), severity="warning", markup=False)
            self._redraw_lobby()
        elif isinstance(event, m.ChallengeCancelled):
            self.challenges.closed(event.challenge)
            why = f": {event.reason}" if event.reason else ""
            self.notify(printable(f"a challenge to you was withdrawn{why}"), severity="warning", markup=False)
            self._title()
            self._redraw_lobby()
        elif isinstance(event, m.ChallengeExpired):
            mine = self.challenges.closed(event.challenge)
            if mine is not None:
                self.notify(printable(f"your challenge to {mine.challenge.opponent} expired"), markup=False)
            self._title()
            self._redraw_lobby()
        elif isinstance(event, m.ChallengeSent):
            pass  # listed in the lobby's challenges pane with its countdown
        elif isinstance(event, m.Snapshot) and event.room not in self.rooms:
            self.open_room(event.snapshot, None)
        elif isinstance(event, m.Error):
            self.notify(printable(error_text(event.code, event.message)), severity="error", markup=False)
        elif isinstance(event, m.Goodbye):
            self.notify(printable(f"server: {event.reason}"), severity="warning", markup=False)
        elif event.type in m.ROOM_EVENT_TYPES:
            self._room_event(event, now)

    def _room_event(self, event: m.ServerMessage, now: float) -> None:
        room = getattr(event, "room", "")
        view = self.rooms.get(room)
        if view is None:
            kept = self.early.setdefault(room, [])
            kept.append((event, now))
            del kept[:-EARLY_EVENTS]  # a room left long ago: its stragglers are not kept forever
            return
        view.apply(event, now)
        if isinstance(event, m.GameStarted):
            self._know_players(view)
        if isinstance(event, m.GameEnded) and event.ratings:
            self.run_worker(self._fetch_leaderboard(), group="leaderboard")
        self._redraw_room(view, ended=isinstance(event, m.GameEnded))

    def _know_players(self, view: RoomView) -> None:
        """Who is a bot, and the ratings before the game (for the +12/-12 at its end)."""
        view.bots = {p.name for p in self.lobby.players.values() if p.kind == "bot"}
        view.ratings_before = {}
        for name in (view.x, view.o):
            player = self.lobby.player_named(name)
            if player is not None:  # a first rated game starts from the server's 1500
                view.ratings_before[name] = player.ratings.get(view.summary.variant, START_RATING)

    def open_room(self, snapshot: m.RoomSnapshot, invite: str | None) -> None:
        """Show the room of ``snapshot`` (a join, an accepted challenge, a resume)."""
        now = time.monotonic()
        view = RoomView.from_snapshot(snapshot, self.player_name, now, invite)
        old = self.rooms.get(view.room)
        if old is not None and old.invite and not invite:
            view.invite = old.invite
        early = self.early.pop(view.room, [])
        started = next((e for e in reversed(early) if isinstance(e[0], m.GameStarted)), None)
        if started is not None:
            event, when = started
            assert isinstance(event, m.GameStarted)
            if event.first_move_ms and event.game == view.game and view.playing:
                fresh = len(view.moves) == len(event.opening)  # no move yet: the countdown runs
                view.first_move_until = when + event.first_move_ms / 1000 if fresh else None
        for event, when in early:
            if getattr(event, "seq", -1) > view.seq:  # newer than the snapshot
                view.apply(event, when)
        self._know_players(view)
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
        self._title()
        for screen in self.screen_stack:
            if isinstance(screen, LobbyScreen) and screen.is_mounted:
                screen.refresh_lobby()
                screen.refresh_leaderboard()

    def _redraw_room(self, view: RoomView, ended: bool) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, GameScreen) and screen.view.room == view.room:
                screen.view = view
                screen.redraw()
                if ended:
                    self._review(view)

    # --- review --------------------------------------------------------------------------------

    def _review(self, view: RoomView) -> None:
        if view.result is not None and (view.result.reason == "aborted" or not view.moves):
            return  # nothing was played: nothing to review
        if not self.review or view.summary.variant not in REVIEWED:
            self._show_review(view, None, "no review: only classic and tactic-toe are solved")
            return
        self._show_review(view, None, "reviewing against the solved table ...")
        self.run_worker(lambda: self._grade(view, list(view.moves)), thread=True, group="review")

    def _grade(self, view: RoomView, moves: list[int]) -> None:
        game, variant = view.game, view.summary.variant
        from bots.analyse import grade_moves

        try:
            grades: list[Any] | None = grade_moves(variant, moves)
            why = ""
        except Exception as exc:  # a review must never take the client down
            grades, why = None, f"no review: {exc}"
        self.call_from_thread(self._show_review, view, grades, why, game)

    def _show_review(
        self, view: RoomView, grades: list[Any] | None, why: str, game: str | None = None
    ) -> None:
        if game is not None and view.game != game:
            return  # a new game began while the old one was being graded
        for screen in self.screen_stack:
            if isinstance(screen, GameScreen) and screen.view is view:
                screen.show_review(grades, why)
