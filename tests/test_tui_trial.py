"""The defects a user trial found in the terminal client (issue 16), each replayed
against the real app, driven by its pilot, on a real server on a free port."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server_harness import free_port, player, running_server, seated_pair, url_of
from test_tui_app import (
    all_sent,
    game_shown,
    laid_out,
    lobby_shown,
    make_app,
    room_row,
    screen_text,
    settled,
    shown,
    start_bot,
    until,
)
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from client_tui import dialogs
from client_tui.app import ArenaApp
from client_tui.board import Board
from client_tui.screens import ConnectScreen, GameScreen, LobbyScreen
from client_tui.tokens import TokenStore
from protocol import messages as m
from server.app import ArenaServer
from server.config import ServerConfig

SIZE = (120, 40)


def notes(app: ArenaApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ArenaServer]:
    async with running_server(tmp_path, grace=30.0, rate=1000, burst=1000) as s:
        yield s


async def in_lobby(app: ArenaApp, pilot: Pilot[Any]) -> LobbyScreen:
    await until(pilot, lambda: app.lobby.players and lobby_shown(app))
    assert isinstance(app.screen, LobbyScreen)
    return app.screen


def no_review_pending(app: ArenaApp) -> bool:
    """No review is being graded (a worker thread): one that was has been shown or dropped."""
    return not any(w.group == "review" and not w.is_finished for w in app.workers)


def footer_line(app: ArenaApp) -> str:
    return screen_text(app).splitlines()[-1]


async def challenged_by(app: ArenaApp, pilot: Pilot[Any], server: ArenaServer, **kw: Any) -> Any:
    """A game against a protocol client ``bob``: we challenge, bob accepts. ``colour`` is
    bob's (as when he challenges)."""
    bob = await player(server, "bob")
    theirs = kw.pop("colour", "random")
    mine = {"x": "o", "o": "x"}.get(theirs, "random")
    app.send(m.Challenge(opponent="bob", colour=mine, **kw))
    offer = await bob.expect(m.ChallengeReceived)
    await bob.request(m.AcceptChallenge(challenge=offer.challenge))
    await until(pilot, lambda: game_shown(app))
    return bob


async def in_a_casual_game(app: ArenaApp, pilot: Pilot[Any], server: ArenaServer) -> tuple[Any, GameScreen]:
    """From the start: in the lobby, then an unrated game as X against ``bob``, on its screen."""
    await in_lobby(app, pilot)
    bob = await challenged_by(app, pilot, server, colour="o", rated=False)
    screen = app.screen
    assert isinstance(screen, GameScreen)
    return bob, screen


# --- 1 quit ----------------------------------------------------------------------------------


async def test_q_quits_from_the_lobby(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        await pilot.press("q")
        await until(pilot, lambda: app._exit)


async def test_q_in_a_running_game_asks_first(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        bob, screen = await in_a_casual_game(app, pilot, server)
        await pilot.press("q")
        asked = "30 s grace, then you forfeit: quit? y/n"
        await until(pilot, lambda: asked in screen_text(app))  # on the screen, not under the footer
        await pilot.press("5")  # not yes: nothing is played, nothing quits
        await all_sent(app, pilot)  # a move it had sent has its answer by now
        game = server.rooms[screen.view.room].game
        assert game is not None and list(game.state.moves) == []
        assert not app._exit and screen.view.moves == []
        await pilot.press("5")
        await until(pilot, lambda: screen.view.moves == [4])
        await pilot.press("q", "y")
        await until(pilot, lambda: app._exit)
    await bob.close()


# --- 2 reconnect --------------------------------------------------------------------------------


async def test_after_a_server_restart_the_lobby_and_a_watched_board_are_live(tmp_path: Path) -> None:
    db, port = str(tmp_path / "arena.db"), free_port()
    settings: dict[str, Any] = {"port": port, "db": db, "grace": 30.0, "ping_interval": None}
    first = ArenaServer(ServerConfig(**settings))
    await first.start()
    x, o, room, _ = await seated_pair(first)
    await x.request(m.Move(room=room, cell=4))
    app = ArenaApp(url_of(first), "carol", store=TokenStore(tmp_path / "carol.json"))
    second = None
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: room_row(app, room))
            await pilot.press("w")
            await until(pilot, lambda: isinstance(app.screen, GameScreen) and app.screen.view.board[4] == "x")
            view = app.rooms[room]
            await first.stop()
            second = ArenaServer(ServerConfig(**settings))
            await second.start()
            await x.reconnect()
            await o.reconnect()
            link = app.link
            assert link is not None
            await until(pilot, lambda: link.status == "connected" and link.attempts >= 1, 30)
            await o.request(m.Move(room=room, cell=0))
            await until(pilot, lambda: app.rooms[room].board[0] == "o", 20)
            assert app.screen.view is app.rooms[room] or app.screen.view.board[0] == "o"  # type: ignore[attr-defined]
            del view
            dave = await player(second, "dave")
            await until(pilot, lambda: app.lobby.player_named("dave") is not None, 20)
            await dave.close()
    finally:
        await x.close()
        await o.close()
        if second is not None:
            await second.stop()


async def test_a_stale_room_row_goes_when_the_server_says_it_is_gone(
    tmp_path: Path, server: ArenaServer
) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        lobby = await in_lobby(app, pilot)
        app.lobby.rooms["deadbeef"] = m.RoomSummary(
            id="deadbeef", variant="classic", time_control=m.NoClock(), rated=True, private=False,
            ply_cap=None, seats=m.Seats(x="ghost"), status="waiting", spectators=0, games=0,
        )  # fmt: skip
        lobby.refresh_lobby()
        rooms = lobby.query_one("#rooms", DataTable)
        assert rooms.row_count == 1
        rooms.focus()
        await pilot.press("enter")
        await until(pilot, lambda: rooms.row_count == 0 and "deadbeef" not in app.lobby.rooms)
        assert "that room is gone (or the invite code is wrong)" in notes(app)


# --- 3 resign ---------------------------------------------------------------------------------


async def test_resigning_asks_for_a_second_key(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        bob = await challenged_by(app, pilot, server, colour="o")
        screen = app.screen
        assert isinstance(screen, GameScreen)
        await pilot.press("g")
        await until(pilot, lambda: "resign this rated game?" in screen_text(app))
        await all_sent(app, pilot)  # a resignation it had sent has its answer by now
        assert server.rooms[screen.view.room].playing and screen.view.playing, "one key never resigns"
        await pilot.press("n")
        board = screen.query_one(Board)
        await until(pilot, lambda: board.has_focus)  # given back once the question goes
        await all_sent(app, pilot)
        assert server.rooms[screen.view.room].playing and screen.view.playing
        await pilot.press("g", "y")
        await until(pilot, lambda: screen.view.result is not None)
        assert screen.view.result is not None and screen.view.result.reason == "resignation"
    await bob.close()


# --- 4 words, not codes ----------------------------------------------------------------------------


async def test_a_move_onto_your_leaving_mark_is_refused_in_board_words(
    tmp_path: Path, server: ArenaServer
) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        bob = await challenged_by(app, pilot, server, colour="o", variant="tactic-toe", rated=False)
        screen = app.screen
        assert isinstance(screen, GameScreen)
        view = screen.view
        for mine, theirs in ((0, 4), (1, 5), (6, 8)):
            await pilot.click(Board)  # any click: the focus stays on the board
            board = screen.query_one(Board)
            board.cursor = mine
            await pilot.press("enter")
            await until(pilot, lambda: len(view.moves) % 2 == 1 and view.moves[-1] == mine)  # noqa: B023
            await bob.request(m.Move(room=view.room, cell=theirs))
            await until(pilot, lambda: view.my_turn)
        screen.query_one(Board).cursor = 0
        await pilot.press("enter")
        said = "a1 is your oldest mark: it leaves as you move, so you can't play there"
        await until(pilot, lambda: said in notes(app))
        assert not any(n.title for n in app._notifications), "no error codes as titles"
        await all_sent(app, pilot)
        game = server.rooms[view.room].game
        assert game is not None and len(game.state.moves) == 6 and len(view.moves) == 6, "nothing was sent"
        app.send(m.Join(room="nosuchroom"))
        await until(pilot, lambda: any("room is gone" in n for n in notes(app)))
    await bob.close()


async def test_a_down_server_is_called_unreachable(tmp_path: Path) -> None:
    app = ArenaApp(f"ws://127.0.0.1:{free_port()}", "alice", store=TokenStore(tmp_path / "t.json"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: notes(app))
        assert "server unreachable" in notes(app)[0] and "Errno" not in notes(app)[0]


async def test_a_refusal_that_comes_before_the_connect_screen_is_composed_is_shown(tmp_path: Path) -> None:
    """Connecting runs in a worker that races the connect screen's compose: a refusal
    (a port that is down answers at once) can come first. It is shown once the screen is
    composed, not lost in a crash (the error line did not exist yet)."""

    class Early(ArenaApp):
        def begin(self) -> None:
            super().begin()  # no name given: the connect screen, pushed, not composed yet
            self._refused("nothing there")  # the race, forced

    app = Early(f"ws://127.0.0.1:{free_port()}", "", store=TokenStore(tmp_path / "t.json"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "could not connect: nothing there" in screen_text(app))
        assert isinstance(app.screen, ConnectScreen)


# --- 5 challenges --------------------------------------------------------------------------------


async def test_a_challenge_game_shows_the_first_move_countdown(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        bob, screen = await in_a_casual_game(app, pilot, server)
        await until(pilot, lambda: "first move within" in shown(screen.query_one("#status", Static)))
    await bob.close()


async def test_outgoing_challenges_are_listed_with_a_countdown(tmp_path: Path, server: ArenaServer) -> None:
    bob = await player(server, "bob")
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        lobby = await in_lobby(app, pilot)
        app.send(m.Challenge(opponent="bob", variant="tactic-toe"))
        await bob.expect(m.ChallengeReceived)
        table = lobby.query_one("#challenges", DataTable)
        await until(pilot, lambda: table.row_count == 1 and app.challenges.outgoing[0].id)
        row = [cell.plain for cell in table.get_row_at(0)]
        # The pane counts down every second: a loaded machine may read it a few seconds on.
        assert row[0] == "out" and "to bob: tactic-toe" in row[1]
        assert row[2] in {f"{left}s" for left in range(50, 61)}, row
    await bob.close()


async def test_a_sent_challenge_can_be_withdrawn_with_x(tmp_path: Path, server: ArenaServer) -> None:
    bob = await player(server, "bob")
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        lobby = await in_lobby(app, pilot)
        app.send(m.Challenge(opponent="bob", variant="tactic-toe"))
        offer = await bob.expect(m.ChallengeReceived)
        table = lobby.query_one("#challenges", DataTable)
        await until(pilot, lambda: table.row_count == 1 and app.challenges.outgoing[0].id)
        await pilot.press("3", "x")
        cancelled = await bob.expect(m.ChallengeCancelled)
        assert cancelled.challenge == offer.challenge
        await until(pilot, lambda: table.row_count == 0 and not app.challenges.outgoing)
        assert server.challenges == {}
    await bob.close()


async def test_challenges_expire_on_both_sides_with_the_servers_time(tmp_path: Path) -> None:
    # 2 s: both challenges must be listed at once before either runs out (1 s was tight
    # for a loaded machine), and it is still far from the client's own 60 s.
    async with running_server(tmp_path, challenge_ttl=2.0) as server:
        bob = await player(server, "bob")
        carol = await player(server, "carol")
        app = make_app(tmp_path, server, "alice")
        async with app.run_test(size=SIZE) as pilot:
            lobby = await in_lobby(app, pilot)
            app.send(m.Challenge(opponent="bob"))
            await carol.request(m.Challenge(opponent="alice"))
            table = lobby.query_one("#challenges", DataTable)
            book = app.challenges
            await until(pilot, lambda: table.row_count == 2 and all(o.id for o in book.outgoing))
            rows = [[cell.plain for cell in table.get_row_at(i)] for i in range(2)]
            assert all(row[2] in ("2s", "1s", "0s") for row in rows), rows  # the server's 2 s, not 60 s
            await until(pilot, lambda: table.row_count == 0)
            # The countdown here and the server's ChallengeExpired race: told either way.
            await until(pilot, lambda: any("your challenge to bob expired" in n for n in notes(app)))
        await bob.close()
        await carol.close()


# --- 6 rematch with a bot ---------------------------------------------------------------------------


async def test_rematch_with_a_bot_plays_again_with_colours_swapped(
    tmp_path: Path, server: ArenaServer
) -> None:
    """A bot keeps its seat after the game and answers a rematch like a person (it used to
    leave, and `r` got ``no_game: the other seat is empty``)."""
    bot = await start_bot(url_of(server), "rulebot")
    try:
        app = make_app(tmp_path, server, "alice")
        async with app.run_test(size=SIZE) as pilot:
            # A bot process starting on a loaded machine: a minute, not the usual 15 s.
            await until(pilot, lambda: app.lobby.player_named("rulebot") is not None, 60)
            app.send(m.Challenge(opponent="rulebot", variant="tactic-toe", colour="x", rated=False))
            await until(pilot, lambda: game_shown(app) and app.screen.view.my_turn)  # type: ignore[attr-defined]
            first = app.screen
            assert isinstance(first, GameScreen)
            first_game = first.view.game
            await pilot.press("g", "g")
            await until(pilot, lambda: first.view.result is not None)
            await pilot.press("r")

            def next_game() -> bool:
                screen = app.screen
                return (  # ready: composed and mounted (leaving mid-mount trips Textual's Header)
                    isinstance(screen, GameScreen)
                    and screen.view.game != first_game
                    and screen.view.playing
                    and screen.ready
                )

            await until(pilot, next_game)
            again = app.screen.view  # type: ignore[attr-defined]
            assert again.summary.variant == "tactic-toe"
            assert again.role == "o" and not again.summary.rated, "same settings, colours swapped"
            assert not any("no_game" in n or "seat is empty" in n for n in notes(app))
    finally:
        bot.terminate()
        await bot.wait()


# --- 7 review ------------------------------------------------------------------------------------


async def test_the_old_review_goes_when_the_next_game_starts(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        bob, screen = await in_a_casual_game(app, pilot, server)
        await pilot.press("5")
        await until(pilot, lambda: screen.view.moves == [4])
        await bob.request(m.Resign(room=screen.view.room))
        review = screen.query_one("#review-text", Static)
        await until(pilot, lambda: "Review" in shown(review))
        await pilot.press("r")
        await bob.request(m.Rematch(room=screen.view.room))
        await until(pilot, lambda: screen.view.number == 2 and screen.view.playing)
        await until(pilot, lambda: no_review_pending(app))  # a late review of game 1 came, or none
        assert "Review" not in shown(review) and "optimal" not in shown(review)
    await bob.close()


async def test_an_aborted_game_has_no_review_heading(tmp_path: Path) -> None:
    async with running_server(tmp_path, first_move=0.5) as server:
        app = make_app(tmp_path, server, "alice")
        async with app.run_test(size=SIZE) as pilot:
            bob, screen = await in_a_casual_game(app, pilot, server)
            await until(pilot, lambda: screen.view.result is not None)
            await until(pilot, lambda: no_review_pending(app))  # none started, or it is done
            assert "Review" not in shown(screen.query_one("#review-text", Static))
            await bob.close()


# --- 8 focus -------------------------------------------------------------------------------------


async def test_tab_never_takes_the_keyboard_from_the_board(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        bob, screen = await in_a_casual_game(app, pilot, server)
        await pilot.press("tab", "tab")
        board = screen.query_one(Board)
        await until(pilot, lambda: board.has_focus)  # taken back (after a refresh) if tab moved it
        await pilot.press("5")
        await until(pilot, lambda: screen.view.moves == [4])
    await bob.close()


async def test_lobby_panes_are_numbered_and_the_focused_one_is_framed(
    tmp_path: Path, server: ArenaServer
) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        lobby = await in_lobby(app, pilot)
        await pilot.press("2")
        players, rooms = lobby.query_one("#players", DataTable), lobby.query_one("#rooms", DataTable)
        assert players.has_focus
        await until(pilot, lambda: players.styles.border_top != rooms.styles.border_top)  # restyled
        headings = ("1 Rooms", "2 Online", "3 Challenges", "4 Leaderboard")
        await until(pilot, lambda: all(heading in screen_text(app) for heading in headings))


# --- 9 80x24 ---------------------------------------------------------------------------------------


async def test_the_lobby_and_the_challenge_form_fit_80x24(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=(80, 24)) as pilot:
        await in_lobby(app, pilot)
        await until(pilot, lambda: "quit" in footer_line(app))  # the footer is drawn
        footer = footer_line(app)
        assert "help" in footer and "quit" in footer, footer
        await until(pilot, lambda: "rating" in screen_text(app))
        await pilot.press("b")
        await until(pilot, lambda: laid_out(app, dialogs.ChallengePlayer, "#ok"))
        await until(pilot, lambda: "no clock" in screen_text(app))  # the form is drawn
        form = app.screen.query_one("Vertical")
        assert form.region.bottom <= 24 and form.region.y >= 0
        assert "no clock" in screen_text(app) and "random" in screen_text(app), "the choices show"
        assert app.screen.query_one("#ok").region.bottom <= 24
        await pilot.press("escape", "question_mark")
        await until(pilot, lambda: laid_out(app, dialogs.Help, "VerticalScroll"))
        await until(pilot, lambda: "ctrl+q" in screen_text(app))  # the help is drawn
        assert "(last settings kept)" in screen_text(app), "help lines are not cut at 80 columns"
        assert app.screen.query_one("VerticalScroll").region.bottom <= 24


async def test_a_terminal_too_small_says_so(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        await pilot.resize_terminal(60, 20)
        await until(pilot, lambda: "terminal too small" in screen_text(app))
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: lobby_shown(app))


# --- 10 leaderboard -----------------------------------------------------------------------------------


async def test_the_leaderboard_shows_at_once_and_after_a_rated_game(
    tmp_path: Path, server: ArenaServer
) -> None:
    x, o, room, _ = await seated_pair(server, "xena", "otto")
    await x.request(m.Resign(room=room))
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        lobby = await in_lobby(app, pilot)
        board = lobby.query_one("#leaderboard", DataTable)
        await until(pilot, lambda: board.row_count == 2)
        bob = await challenged_by(app, pilot, server, colour="o")
        screen = app.screen
        assert isinstance(screen, GameScreen)
        await bob.request(m.Resign(room=screen.view.room))
        await until(pilot, lambda: screen.view.result is not None)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, LobbyScreen) and board.row_count == 4)
    for c in (x, o, bob):
        await c.close()


# --- 12 help, 13 footers ----------------------------------------------------------------------------


async def test_f1_opens_a_help_that_matches_the_app(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        await pilot.press("f1")
        await until(pilot, lambda: laid_out(app, dialogs.Help, "VerticalScroll"))
        await until(pilot, lambda: "ctrl+q" in screen_text(app))  # the help is drawn
        text = screen_text(app)
        assert "ctrl+q" in text and "tab" in text and "a / d" in text and "escape" in text
        assert "resigns it" not in text
        await pilot.press("escape")
        await until(pilot, lambda: lobby_shown(app))


async def drawn_footer(app: ArenaApp, pilot: Pilot[Any], *offered: str) -> str:
    """The footer line once it offers the keys ``offered`` (a footer is drawn again a frame
    or more after the keys that work change: until then it can be blank, or the old one)."""
    await until(pilot, lambda: all(key in footer_line(app) for key in offered))
    return footer_line(app)


async def test_footers_offer_only_keys_that_work(tmp_path: Path, server: ArenaServer) -> None:
    x, o, room, _ = await seated_pair(server, "xena", "otto", rated=False)
    app = make_app(tmp_path, server, "carol")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: room_row(app, room))
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, GameScreen) and app.screen.ready)
        footer = await drawn_footer(app, pilot, "lobby", "help", "quit")
        assert "rematch" not in footer and "resign" not in footer and "play" not in footer, footer
    app = make_app(tmp_path, server, "alice2")
    async with app.run_test(size=SIZE) as pilot:
        bob, screen = await in_a_casual_game(app, pilot, server)
        footer = await drawn_footer(app, pilot, "resign", "play")
        assert "resign" in footer and "play" in footer and "rematch" not in footer, footer
        await bob.request(m.Resign(room=screen.view.room))
        await until(pilot, lambda: screen.view.result is not None)
        footer = await drawn_footer(app, pilot, "rematch")
        assert "resign" not in footer and "play" not in footer and "rematch" in footer, footer
        assert not any("challenge sent" in n for n in notes(app))
    for c in (x, o, bob):
        await c.close()


# --- 15 centre, 16 spam ----------------------------------------------------------------------------


async def test_the_cursor_starts_in_the_centre(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        app.send(m.CreateRoom(variant="6x7k4", rated=False))
        await until(pilot, lambda: isinstance(app.screen, GameScreen) and app.screen.ready)
        board = app.screen.query_one(Board)
        row, col = divmod(board.cursor, 7)
        assert row in (2, 3) and col == 3, (row, col)


async def test_a_burst_of_challenges_never_takes_the_board(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        bob, screen = await in_a_casual_game(app, pilot, server)
        carol = await player(server, "carol")
        for _ in range(8):  # as many as the server lets one challenger have pending
            await carol.send(m.Challenge(opponent="alice", rated=False))
        await carol.request(m.Ping())  # answered after the challenges went out
        await until(pilot, lambda: len(app.challenges.incoming) == 8)  # all came, all handled
        await settled(pilot)
        assert app.screen is screen and screen.query_one(Board).has_focus
        await pilot.press("5")
        await until(pilot, lambda: screen.view.moves == [4])
        assert sum("carol challenges you" in n for n in notes(app)) == 1, "one notice"
        await pilot.press("g", "g")
        await until(pilot, lambda: screen.view.result is not None)
        await pilot.press("escape")
        await until(pilot, lambda: lobby_shown(app))
        challenges = app.screen.query_one("#challenges", DataTable)
        await until(pilot, lambda: challenges.row_count == 8)
        await carol.close()
    await bob.close()


# --- 17 smaller ------------------------------------------------------------------------------------


async def test_a_decline_reads_as_a_sentence(tmp_path: Path, server: ArenaServer) -> None:
    bob = await player(server, "bob")
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        app.send(m.Challenge(opponent="bob"))
        offer = await bob.expect(m.ChallengeReceived)
        await bob.request(m.DeclineChallenge(challenge=offer.challenge, reason="declined"))
        await until(pilot, lambda: any("declined" in n for n in notes(app)))
        assert "bob declined your challenge" in notes(app)
        await all_sent(app, pilot)  # the answer to the challenge (its id) is in as well
        assert app.challenges.outgoing == []
    await bob.close()


async def test_without_a_name_the_client_asks(tmp_path: Path, server: ArenaServer) -> None:
    store = TokenStore(tmp_path / "alice-tokens.json")
    app = ArenaApp(url_of(server), "alice", store=store)
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
    again = ArenaApp(url_of(server), "", store=store)
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "you were alice" in screen_text(again))
        assert again.link is None, "it asks before connecting"
        assert not isinstance(again.screen, LobbyScreen)


async def test_the_challenge_form_keeps_the_last_settings_and_shows_what_applies(
    tmp_path: Path, server: ArenaServer
) -> None:
    bob = await player(server, "bob")
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        await pilot.press("b")
        await until(pilot, lambda: laid_out(app, dialogs.ChallengePlayer, "#ok"))
        form = app.screen
        assert not form.query_one("#ply_cap").display or form.query_one("#ply_cap").has_class("-hidden")
        assert form.query_one("#level").has_class("-hidden"), "no level for a human"
        form.query_one("#opponent").value = "bob"  # type: ignore[attr-defined]
        form.query_one("#variant").value = "tactic-toe"  # type: ignore[attr-defined]
        await until(pilot, lambda: not form.query_one("#ply_cap").has_class("-hidden"))  # on Changed
        await until(pilot, lambda: "ply cap" in screen_text(app))  # laid out again: #rated moved down
        await pilot.click("#rated")
        await until(pilot, lambda: "no" in str(form.query_one("#rated").label))  # type: ignore[attr-defined]
        await pilot.click("#ok")
        offer = await bob.expect(m.ChallengeReceived)
        assert offer.variant == "tactic-toe" and not offer.rated
        await pilot.press("b")
        await until(pilot, lambda: laid_out(app, dialogs.ChallengePlayer, "#ok") and app.screen is not form)
        assert app.screen.query_one("#variant").value == "tactic-toe"  # type: ignore[attr-defined]
        assert app.screen.query_one("#rated").value is False  # type: ignore[attr-defined]
    await bob.close()


async def test_the_banner_shows_the_rating_change(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        bob = await challenged_by(app, pilot, server, colour="o")
        screen = app.screen
        assert isinstance(screen, GameScreen)
        await bob.request(m.Resign(room=screen.view.room))
        await until(pilot, lambda: screen.view.ratings)
        banner = screen.query_one("#banner", Static)
        await until(pilot, lambda: "Game over" in shown(banner))  # drawn
        assert "(+" in shown(banner) and "(-" in shown(banner), shown(banner)
    await bob.close()


# --- 11 tournament view, 17 review --------------------------------------------------------------------


async def test_the_tournament_view_lines_numbers_and_undefined_errors(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    row = {
        "name": "rule",
        "points": 2.5,
        "games": 4,
        "wins": 1,
        "draws": 3,
        "losses": 0,
        "as_x": 2,
        "as_o": 2,
    }
    draws = {"player": "rule", "opponent": "table", "wins": 0, "draws": 4, "losses": 0}
    data = {
        "variant": "classic",
        "format": "round-robin",
        "games": 8,
        "standings": [row, {**row, "name": "table", "points": 2.0}],
        "matchups": [
            {**draws, "elo": -0.0, "error95": None, "los": 0.5},
            {
                **draws,
                "opponent": "random",
                "wins": 4,
                "draws": 0,
                "elo": 240.8,
                "error95": 180.2,
                "los": 0.98,
            },
        ],
    }
    (folder / "standings.json").write_text(json.dumps(data))
    (folder / "crosstable.csv").write_text("player,rule,table,points\nrule,,2/4,2.5\ntable,2/4,,2\n")
    app = ArenaApp(tournament=folder, store=TokenStore(tmp_path / "tokens.json"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "rule vs" in screen_text(app))
        text = screen_text(app)
        assert "\\n" not in text
        assert "rule vs table: +0 =4 -0  Elo +0 (no error bar)" in text
        assert "rule vs random: +4 =0 -0  Elo +241 ± 180  LOS 98.0%" in text
        assert "Elo -0" not in text
        points = app.screen.query_one("#standings", DataTable).get_row_at(0)[2]
        assert points.justify == "right"
        await pilot.press("escape")  # started on this screen: escape leaves the app
        await until(pilot, lambda: app._exit)


async def test_the_review_lists_every_best_move_and_the_value_change(tmp_path: Path) -> None:
    from test_tui_snapshots import Still, played

    from bots.analyse import grade_moves

    _, view = played("classic", [4, 1])  # O's edge reply loses; the four corners draw
    grades = grade_moves("classic", view.moves)
    app = Still(lambda app: GameScreen(view), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, GameScreen) and app.screen.ready)
        app.screen.show_review(grades)
        widget = app.screen.query_one("#review-text", Static)
        await until(pilot, lambda: "Review" in shown(widget))
        review = shown(widget)
        assert "blunder" in review and "draw→loss" in review and "best a1 c1 a3 c3" in review, review


async def test_reconnecting_survives_a_port_that_hangs_up_during_the_handshake(tmp_path: Path) -> None:
    """Found in the tmux trial: a server coming up again accepted TCP and closed it
    before answering; websockets raised InvalidMessage and the client crashed."""
    from client_tui.link import Link

    db, port = str(tmp_path / "arena.db"), free_port()
    settings: dict[str, Any] = {"port": port, "db": db, "grace": 30.0, "ping_interval": None}
    first = ArenaServer(ServerConfig(**settings))
    await first.start()
    link = Link(url_of(first), "alice", TokenStore(tmp_path / "t.json"), backoff=(0.05, 0.1))
    await link.connect()

    async def until_resumed() -> m.Resumed:
        async for event in link.events():
            if isinstance(event, m.Resumed):
                return event
        raise AssertionError(f"the link gave up: {link.status}")

    waiting = asyncio.ensure_future(until_resumed())
    await first.stop()

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    rude = await asyncio.start_server(hang_up, "127.0.0.1", port)
    while link.attempts < 3:
        assert not waiting.done(), f"the link gave up or crashed: {waiting.exception()!r}"
        await asyncio.sleep(0.05)
    rude.close()
    await rude.wait_closed()
    second = ArenaServer(ServerConfig(**settings))
    await second.start()
    try:
        resumed = await asyncio.wait_for(waiting, 20)
        assert isinstance(resumed, m.Resumed) and link.status == "connected"
    finally:
        await link.close()
        await second.stop()
