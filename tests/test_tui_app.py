"""The real Textual app, driven by its test pilot, against a real server on a free port:
a whole game against a real bot process played by keys, watching, reconnecting after
the server drops the connection, coming back after a restart, hostile text, and the
live tournament screen."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from server_harness import player, running_server, seated_pair, url_of
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable, Input, Select, Static

from client_tui import dialogs
from client_tui.app import ArenaApp
from client_tui.board import KEYPAD, Board
from client_tui.screens import ConnectScreen, GameScreen, LobbyScreen, TournamentScreen
from client_tui.text import printable
from client_tui.tokens import TokenStore
from protocol import messages as m
from protocol.client import connect
from server.app import ArenaServer

CELL_KEY = {cell: key for key, cell in KEYPAD.items()}
SIZE = (120, 40)


async def until(
    pilot: Pilot[Any],
    predicate: Callable[[], object],
    timeout: float = 15.0,
    shows: Callable[[], object] = lambda: "",
) -> None:
    """Until ``predicate()`` holds. What comes from the server, a new screen, a redraw or a
    focus change comes when it comes: a fixed ``pilot.pause(x)`` before an assert is a bet
    that a loaded machine (CI: 2 cores, the whole suite) loses now and then. ``shows``: what
    to print if it times out (the screen, say)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting\n{shows()}"
        await pilot.pause(0.05)


async def settled(pilot: Pilot[Any], timeout: float = 15.0) -> None:
    """Until every message queued in the app and its screen is handled, and the ones those
    handlers queued in turn (a key goes from the app to the focused widget and bubbles up to
    the app's bindings, one queue at a time): for a check that something did NOT happen."""
    deadline = time.monotonic() + timeout
    while True:
        await pilot._wait_for_screen()  # each pump handled what it held when this began
        pumps = [pilot.app, *pilot.app.screen.walk_children(with_self=True)]
        if all(pump._message_queue.empty() for pump in pumps):
            return
        assert time.monotonic() < deadline, "timed out waiting for the app to settle"


async def all_sent(app: ArenaApp, pilot: Pilot[Any]) -> None:
    """Until every request the app sent (`ArenaApp.send`, a worker each) has its answer: the
    server has handled them all, so its state shows what a key did or did not send."""
    await settled(pilot)
    await until(pilot, lambda: not any(w.group == "send" and not w.is_finished for w in app.workers))


def laid_out(app: ArenaApp, kind: type[Screen[Any]], widget: str) -> bool:
    """The top screen is a ``kind``, mounted, with ``widget`` laid out (a click can hit it,
    keys reach the screen): a pushed screen is composed and drawn a few frames later."""
    screen = app.screen
    if not isinstance(screen, kind) or not screen.is_mounted:
        return False
    found = screen.query(widget)
    return bool(found) and found.first().region.area > 0


def game_shown(app: ArenaApp) -> bool:
    """A game screen is on top, mounted and drawn, its board focused (keys reach it)."""
    screen = app.screen
    return isinstance(screen, GameScreen) and screen.ready and screen.query_one(Board).has_focus


def lobby_shown(app: ArenaApp) -> bool:
    """The lobby is the top screen, mounted (its tables filled, the rooms table focused)."""
    screen = app.screen
    return isinstance(screen, LobbyScreen) and screen.is_mounted and screen.query_one("#rooms").has_focus


def room_row(app: ArenaApp, room: str) -> bool:
    """The lobby is drawn, focused on its rooms table, with ``room`` selected (enter sits,
    w watches: both read the selected row, which a lobby event draws when it comes)."""
    if not lobby_shown(app):
        return False
    rooms = app.screen.query_one("#rooms", DataTable)
    if not rooms.row_count:
        return False
    return rooms.coordinate_to_cell_key(rooms.cursor_coordinate).row_key.value == room


def screen_text(app: ArenaApp) -> str:
    """What the terminal shows, line by line."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def shown(widget: Static) -> str:
    content = widget.content
    return content.plain if isinstance(content, Text) else str(content)


def make_app(tmp_path: Path, server: ArenaServer, name: str, **kw: Any) -> ArenaApp:
    return ArenaApp(url_of(server), name, store=TokenStore(tmp_path / f"{name}-tokens.json"), **kw)


async def take_the_seat(app: ArenaApp, pilot: Pilot[Any], room: str) -> GameScreen:
    """From the lobby, take the free seat of ``room`` by keys (it is the only room listed)."""
    await until(pilot, lambda: room_row(app, room))
    await pilot.press("enter")  # take a seat in the selected room
    await until(pilot, lambda: isinstance(app.screen, GameScreen) and app.screen.view.playing)
    screen = app.screen
    assert isinstance(screen, GameScreen)
    return screen


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ArenaServer]:
    async with running_server(tmp_path, grace=30.0, rate=1000, burst=1000) as s:
        yield s


async def start_bot(url: str, name: str, strategy: str = "rule") -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "protocol.cli", "bot", "--server", url, "--strategy", strategy, "--name", name,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip


async def test_whole_game_against_a_bot_process_by_keys(tmp_path: Path, server: ArenaServer) -> None:
    bot = await start_bot(url_of(server), "rulebot")
    try:
        app = make_app(tmp_path, server, "alice")
        async with app.run_test(size=SIZE) as pilot:
            # A bot process starting on a loaded machine: a minute, not the usual 15 s.
            await until(pilot, lambda: app.lobby.player_named("rulebot") is not None and lobby_shown(app), 60)
            players = app.screen.query_one("#players", DataTable)
            await until(pilot, lambda: players.row_count == 2)
            players.move_cursor(row=0)  # bots sort first
            await pilot.press("b")
            await until(pilot, lambda: laid_out(app, dialogs.ChallengePlayer, "#ok"))
            assert app.screen.query_one("#opponent", Input).value == "rulebot"
            await pilot.click("#ok")
            await until(pilot, lambda: game_shown(app))
            screen = app.screen
            assert isinstance(screen, GameScreen)
            view = screen.view
            used_arrows = used_mouse = False
            while view.result is None:
                await until(pilot, lambda: view.my_turn or view.result is not None)
                if view.result is not None:
                    break
                cell = next(c for c, mark in enumerate(view.board) if mark is None)
                before = len(view.moves)
                if not used_arrows:
                    # Arrow keys and Enter: walk the cursor from the centre to the cell.
                    board = screen.query_one(Board)
                    row, col = divmod(cell, 3)
                    keys = (
                        ["up"] * (1 - row)
                        + ["down"] * (row - 1)
                        + ["left"] * (1 - col)
                        + ["right"] * (col - 1)
                    )
                    await pilot.press(*keys, "enter")
                    assert board.cursor == cell
                    used_arrows = True
                elif not used_mouse:
                    board = screen.query_one(Board)
                    layout = board._layout
                    assert layout is not None
                    row, col = divmod(cell, 3)
                    x = layout.left + col * (layout.width + layout.gap) + layout.width // 2
                    y = layout.top + row * (layout.height + layout.gap_y) + layout.height // 2
                    assert layout.cell_at(x, y, 3, 3) == cell
                    await pilot.click(Board, offset=(x, y))
                    used_mouse = True
                else:
                    await pilot.press(CELL_KEY[cell])  # keypad layout: 7 8 9 on top
                await until(pilot, lambda: len(view.moves) > before or view.result is not None)  # noqa: B023
                assert view.board[cell] is not None
            assert used_mouse, "the game lasted long enough to use arrows, the mouse and digits"
            assert "Game over" in shown(screen.query_one("#banner", Static))
            bot_mark = "x" if view.x == "rulebot" else "o"
            assert view.result.winner in (None, bot_mark), "rule never loses on classic"
            await until(pilot, lambda: "Review" in shown(screen.query_one("#review-text", Static)))
            review = shown(screen.query_one("#review-text", Static))
            assert review.count("\n") == len(view.moves) + 1  # a heading, then one line a ply
            assert "blunder" in review or view.result.winner is None
            game = server.rooms[view.room].game
            assert game is not None and list(game.state.moves) == view.moves
    finally:
        bot.terminate()
        await bot.wait()


async def test_watching_is_live_and_read_only(tmp_path: Path, server: ArenaServer) -> None:
    x, o, room, _ = await seated_pair(server)
    app = make_app(tmp_path, server, "carol")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: room_row(app, room))
        await pilot.press("w")
        await until(pilot, lambda: game_shown(app))
        screen = app.screen
        assert isinstance(screen, GameScreen) and screen.view.role == "spectator"
        assert "watching" in shown(screen.query_one("#banner", Static))
        await x.request(m.Move(room=room, cell=4))
        await until(pilot, lambda: screen.view.board[4] == "x")
        await o.request(m.Move(room=room, cell=0))
        await until(pilot, lambda: screen.view.board[0] == "o")
        await pilot.press("9", "enter", "g")  # a spectator's keys send nothing
        await all_sent(app, pilot)  # had they sent a move, the server has it now
        game = server.rooms[room].game
        assert game is not None and list(game.state.moves) == [4, 0]
        assert server.rooms[room].summary().spectators == 1
    await x.close()
    await o.close()


async def test_reconnects_after_the_server_drops_it_and_the_game_goes_on(
    tmp_path: Path, server: ArenaServer
) -> None:
    bob = await player(server, "bob")
    joined = await bob.request(m.CreateRoom(seat="o"))
    assert isinstance(joined, m.Joined)
    room = joined.room
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        screen = await take_the_seat(app, pilot, room)
        assert screen.view.role == "x"
        await pilot.press("5")
        await until(pilot, lambda: screen.view.board[4] == "x")
        conn = next(c for c in server.conns.values() if c.player is not None and c.player.name == "alice")
        await conn.ws.close(1011, "dropped by the test")
        # Made while alice is away (a closing connection carries no more events): she can
        # only learn of it from the replay the server sends when she resumes.
        await bob.request(m.Move(room=room, cell=0))
        link = app.link
        assert link is not None
        await until(pilot, lambda: link.attempts >= 1 and link.status == "connected")
        assert "connected" in app.sub_title
        assert link.resumed is not None and link.resumed.rooms == {room: "replay"}
        await until(pilot, lambda: screen.view.board[0] == "o")
        assert app.screen is screen, "the same game screen, board kept"
        await pilot.press("9")
        await until(pilot, lambda: screen.view.board[2] == "x")
        game = server.rooms[room].game
        assert game is not None and list(game.state.moves) == [4, 0, 2]
    await bob.close()


async def test_a_restarted_client_comes_back_as_the_same_player_in_its_game(
    tmp_path: Path, server: ArenaServer
) -> None:
    bob = await player(server, "bob")
    joined = await bob.request(m.CreateRoom(seat="o"))
    assert isinstance(joined, m.Joined)
    first = make_app(tmp_path, server, "alice")
    async with first.run_test(size=SIZE) as pilot:
        await take_the_seat(first, pilot, joined.room)
        await pilot.press("5")
        await until(pilot, lambda: first.rooms[joined.room].board[4] == "x")
        player_id = first.player_id
    await bob.request(m.Move(room=joined.room, cell=8))
    # Same config file, no name given: the name and token come from it.
    again = ArenaApp(url_of(server), "", store=TokenStore(tmp_path / "alice-tokens.json"))
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: laid_out(again, ConnectScreen, "#name"))
        name = again.screen.query_one("#name", Input)
        await until(pilot, lambda: name.has_focus)
        assert name.value == "alice", "the saved name is offered"
        await pilot.press("enter")
        await until(pilot, lambda: game_shown(again))
        assert again.player_id == player_id
        view = again.rooms[joined.room]
        assert view.board[4] == "x" and view.board[8] == "o" and view.my_turn
        await pilot.press("7")
        await until(pilot, lambda: view.board[0] == "x")
    await bob.close()


async def test_hostile_text_is_shown_literally(tmp_path: Path, server: ArenaServer) -> None:
    mallory = await player(server, "[red]x[/red]")
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.lobby.player_named("[red]x[/red]") is not None and lobby_shown(app))
        players = app.screen.query_one("#players", DataTable)
        names = [players.get_row_at(i)[0].plain for i in range(players.row_count)]
        assert "[red]x[/red]" in names
        # The table may be drawn a frame after its rows change (a loaded CI machine): wait for
        # the drawing. Markup read as markup would draw a red "x" and never these brackets.
        # Once in some ten loaded runs (twice seen in CI, the second on 28 November) every
        # cell of the players table stayed cut at its column header's width ("[re…",
        # "hum…", no rating) for the whole 15 s, as if the rows had been drawn before their
        # widths were measured and the drawing kept (not reproduced). The
        # bracket drawn there is the literal text all the same, so a cut name counts.
        await until(pilot, lambda: "[re" in screen_text(app), shows=lambda: screen_text(app))
        app.send(m.Challenge(opponent="[red]x[/red]", rated=False))
        offer = await mallory.expect(m.ChallengeReceived)
        reason = "\x1b[2J[bold]gotcha"
        await mallory.request(m.DeclineChallenge(challenge=offer.challenge, reason=reason))
        await until(pilot, lambda: any("gotcha" in n.message for n in app._notifications))
        note = next(n for n in app._notifications if "gotcha" in n.message)
        assert printable(reason) in note.message and "\x1b" not in note.message and not note.markup
    await mallory.close()


async def test_tournament_screen_shows_live_standings(tmp_path: Path) -> None:
    out = tmp_path / "t"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "protocol.cli", "tournament", "--in-process", "--bots", "rule,random",
        "--variant", "classic", "--games-per-pair", "4", "--seed", "3", "--out", str(out), "--quiet",
        env=env, stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert await proc.wait() == 0
    data = json.loads((out / "standings.json").read_text())
    app = ArenaApp(tournament=out, store=TokenStore(tmp_path / "tokens.json"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TournamentScreen))
        screen = app.screen
        table = screen.query_one("#standings", DataTable)
        await until(pilot, lambda: table.row_count == 2)
        top = table.get_row_at(0)
        assert top[1].plain == data["standings"][0]["name"] == "rule"
        assert float(top[2].plain) == data["standings"][0]["points"]
        cross = screen.query_one("#crosstable", DataTable)
        assert cross.row_count == 2
        assert "games 4/4" in shown(screen.query_one("#summary", Static))
        # The runner rewrites the file after each game: the screen follows.
        data["standings"][0]["points"] = 99
        (out / "standings.json").write_text(json.dumps(data))
        await until(pilot, lambda: table.get_row_at(0)[2].plain == "99")


async def test_challenge_dialog_offers_the_bots_levels(tmp_path: Path, server: ArenaServer) -> None:

    bot = await connect(url_of(server), "levelbot", "bot", levels=["easy", "best"], timeout=5)
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.lobby.player_named("levelbot") is not None and lobby_shown(app))
        players = app.screen.query_one("#players", DataTable)
        await until(pilot, lambda: players.row_count == 2)
        players.move_cursor(row=0)
        await pilot.press("b")
        await until(pilot, lambda: laid_out(app, dialogs.ChallengePlayer, "#ok"))
        dialog = app.screen
        level = dialog.query_one("#level", Select)
        await until(pilot, lambda: not level.disabled)
        assert [str(option[0]) for option in level._options[1:]] == ["easy", "best"]
        level.value = "easy"
        opponent = dialog.query_one("#opponent", Input)
        opponent.value = "nobody"  # a name with no levels: nothing to choose
        await until(pilot, lambda: level.disabled)
        opponent.value = "levelbot"
        await until(pilot, lambda: not level.disabled)
        level.value = "easy"
        await pilot.click("#ok")
        offer = await bot.expect(m.ChallengeReceived)
        assert offer.level == "easy" and offer.challenger.name == "alice"
    await bot.close()


async def test_answering_a_challenge_refusals_resign_and_rematch(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: lobby_shown(app))
        bob = await player(server, "bob")
        await bob.request(m.Challenge(opponent="alice", colour="o", rated=False))
        await until(pilot, lambda: app.challenges.incoming)
        table = app.screen.query_one("#challenges", DataTable)
        await until(pilot, lambda: table.row_count == 1)
        assert "bob (human): classic, they play O" in table.get_row_at(0)[1].plain
        await pilot.press("a")
        accepted = await bob.expect(m.ChallengeAccepted)
        await until(pilot, lambda: game_shown(app))
        screen = app.screen
        assert isinstance(screen, GameScreen)
        view = screen.view
        assert view.room == accepted.room and view.role == "x"
        await pilot.press("5")
        await until(pilot, lambda: view.board[4] == "x")
        await bob.request(m.Move(room=view.room, cell=0))
        await until(pilot, lambda: view.my_turn)
        await pilot.press("7")  # cell 0 holds O's mark: refused before it is sent
        await until(pilot, lambda: any(n.message == "a1 is taken" for n in app._notifications))
        assert view.moves == [4, 0] and view.my_turn
        await pilot.press("escape")  # refused while the game runs
        assert app.screen is screen
        await pilot.press("g", "g")  # resign, and yes
        await until(pilot, lambda: view.result is not None)
        assert view.result.reason == "resignation" and view.result.winner == "o"
        assert "resignation" in shown(screen.query_one("#banner", Static))
        await pilot.press("r")
        await until(pilot, lambda: "x" in view.rematch)
        await bob.request(m.Rematch(room=view.room))
        await until(pilot, lambda: view.number == 2 and view.playing)
        assert view.role == "o" and not view.my_turn, "colours swapped: bob is X now"
        assert view.score == {"alice": 0.0, "bob": 1.0}
        await bob.close()


async def test_private_room_by_invite(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: lobby_shown(app))
        await pilot.press("c")
        await until(pilot, lambda: laid_out(app, dialogs.CreateRoom, "#ok"))
        dialog = app.screen
        variant = dialog.query_one("#variant", Input)
        variant.value = "9x9k9x"
        await pilot.click("#ok")
        assert app.screen is dialog, "a bad variant stays in the form"
        assert "9x9k9x" in shown(dialog.query_one("#error", Static))
        variant.value = "5x5k4"
        await pilot.click("#private")
        await pilot.click("#ok")
        await until(pilot, lambda: game_shown(app))
        view = app.screen.view  # type: ignore[attr-defined]
        assert view.invite and view.summary.private and view.summary.variant == "5x5k4"
        bob = await player(server, "bob")
        lobby = await bob.request(m.LobbySubscribe())
        assert isinstance(lobby, m.LobbySnapshot) and lobby.rooms == [], "private rooms are not listed"
        await bob.request(m.Join(room=view.room, invite=view.invite))
        await until(pilot, lambda: view.playing)
        assert view.variant.cells == 25 and len(view.board) == 25
        await bob.close()


async def test_declining_a_challenge(tmp_path: Path, server: ArenaServer) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: lobby_shown(app))
        bob = await player(server, "bob")
        await bob.request(m.Challenge(opponent="alice", variant="tactic-toe"))
        await until(pilot, lambda: app.challenges.incoming)
        await pilot.press("d")
        declined = await bob.expect(m.ChallengeDeclined)
        assert declined.by == "alice"
        await until(pilot, lambda: lobby_shown(app))
        assert app.rooms == {} and server.challenges == {}
        await bob.close()


async def test_events_that_come_while_the_game_screen_is_composed(
    tmp_path: Path, server: ArenaServer
) -> None:
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: lobby_shown(app))
        bob = await player(server, "bob")
        await bob.request(m.Challenge(opponent="alice", colour="x", rated=False))
        await until(pilot, lambda: app.challenges.incoming)
        await pilot.press("a")
        accepted = await bob.expect(m.ChallengeAccepted)
        await bob.request(m.Move(room=accepted.room, cell=8))  # at once, as a bot would
        await until(pilot, lambda: isinstance(app.screen, GameScreen) and app.screen.ready)
        screen = app.screen
        assert isinstance(screen, GameScreen)
        await until(pilot, lambda: screen.view.board[8] == "x" and screen.view.my_turn)
        status = screen.query_one("#status", Static)
        await until(pilot, lambda: "your move" in shown(status))  # drawn: not stuck on "bob to move"
        await bob.close()
