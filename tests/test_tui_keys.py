"""Playing fast: cursor keys, typed cells, stepping through a finished game,
tactic-toe's countdown badges and vanish preview, the move list, the ply count,
"thinking…", and the board's colours (contrast and colour blindness, computed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rich.color import Color
from rich.style import Style
from server_harness import player, running_server
from test_tui_app import make_app, settled, shown, until
from test_tui_snapshots import Still, played
from test_tui_trial import in_lobby, screen_text
from textual import events

from bots.analyse import grade_moves
from client_tui.board import Board
from client_tui.model import RoomView
from client_tui.screens import GameScreen
from protocol import messages as m
from protocol.rules import State
from server.app import ArenaServer

SIZE = (120, 40)


async def showing(tmp_path: Path, view: RoomView, pilot_size: tuple[int, int] = SIZE) -> Any:
    return Still(lambda app: GameScreen(view), tmp_path).run_test(size=pilot_size)


async def board_of(app: Any, pilot: Any) -> Board:
    await until(pilot, lambda: isinstance(app.screen, GameScreen) and app.screen.ready)
    board: Board = app.screen.query_one(Board)
    await until(pilot, lambda: board.has_focus)  # given once the screen is drawn (call_after_refresh)
    return board


async def test_cursor_keys_jump_and_typed_cells(tmp_path: Path) -> None:
    _, view = played("15x15k5", [112, 113, 97, 98])
    app = Still(lambda app: GameScreen(view), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        board = await board_of(app, pilot)
        assert board.cursor == 112, "h8, the centre"
        await pilot.press("a", "1")
        assert board.cursor == 0, "a1 in two keys"
        await pilot.press("o", "1", "5")
        assert board.cursor == 224
        await pilot.press("h", "8", "shift+left")
        assert board.cursor == 107, "c8: five to the left"
        await pilot.press("shift+up")
        assert board.cursor == 107 - 5 * 15, "c3"
        await pilot.press("shift+up")
        assert board.cursor == 2, "a jump stops at the edge: c1"
        await pilot.press("home")
        assert board.cursor == 0
        await pilot.press("end")
        assert board.cursor == 14
        await pilot.press("full_stop")
        assert board.cursor == 98, "the last move"
        await pilot.press("j", "l", "k", "h")
        assert board.cursor == 98
        await pilot.press("n", "y", "u", "b")
        assert board.cursor == 98


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ArenaServer]:
    async with running_server(tmp_path, grace=30.0, rate=1000, burst=1000) as s:
        yield s


async def test_typed_moves_are_played(tmp_path: Path, server: ArenaServer) -> None:
    bob = await player(server, "bob")
    app = make_app(tmp_path, server, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await in_lobby(app, pilot)
        app.send(m.Challenge(opponent="bob", variant="15x15k5", colour="x", rated=False))
        offer = await bob.expect(m.ChallengeReceived)
        await bob.request(m.AcceptChallenge(challenge=offer.challenge))
        screen = app.screen
        await until(pilot, lambda: isinstance(app.screen, GameScreen) and app.screen.ready)
        screen = app.screen
        assert isinstance(screen, GameScreen)
        view = screen.view
        await pilot.press("h", "8", "enter")
        await until(pilot, lambda: view.moves == [112])
        await bob.request(m.Move(room=view.room, cell=113))
        await until(pilot, lambda: view.my_turn)
        await pilot.press("a", "1", "enter")  # from h8 to a1: three keys
        await until(pilot, lambda: view.moves[-1:] == [0])
        await bob.request(m.Move(room=view.room, cell=114))
        await until(pilot, lambda: view.my_turn)
        await pilot.press("colon")
        await until(pilot, lambda: "a cell, like b2" in screen_text(app))  # the line to type in shows
        await pilot.press("o", "1", "5", "enter")
        await until(pilot, lambda: view.moves[-1:] == [224])
        assert screen.query_one(Board).has_focus
    await bob.close()


async def test_left_and_right_step_through_a_finished_game_with_grades(tmp_path: Path) -> None:
    _, view = played("classic", [1, 4, 0, 2, 6, 3, 8, 5])  # X's 8 misses O's 3-4-5
    grades = grade_moves("classic", view.moves)
    app = Still(lambda app: GameScreen(view), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        board = await board_of(app, pilot)
        app.screen.show_review(grades)
        await pilot.press("left")
        assert board.ply == 7
        await until(pilot, lambda: "ply 7/8 · X c3 · ?? blunder (best" in screen_text(app))
        assert board._scene()[0][7] is None and board._scene()[0][8] == "x", "the board at ply 7"
        await pilot.press("home")
        assert board.ply == 0 and set(board._scene()[0]) == {None}
        await pilot.press("right")
        await until(pilot, lambda: "ply 1/8 · X b1 · " in screen_text(app))
        await pilot.press("end")
        assert board.ply is None


async def test_tactic_toe_badges_preview_and_move_list(tmp_path: Path) -> None:
    _, view = played("tactic-toe", [0, 4, 1, 2, 6, 3])  # alice (X) to move, with three marks
    app = Still(lambda app: GameScreen(view), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        board = await board_of(app, pilot)
        badges = ("X¹", "X²", "X³", "O¹", "O²", "O³")
        await until(pilot, lambda: all(badge in screen_text(app) for badge in badges))
        await pilot.press("l")  # from the centre to c2, a free cell
        assert board.cursor == 5
        await until(pilot, lambda: "c2 here: your a1 vanishes" in screen_text(app))
        from client_tui.board import cell_style

        assert "strike" in cell_style("x", "cell", preview=True)
        assert "ply 6/200" in shown(app.screen.query_one("#move-list"))
    _, later = played("tactic-toe", [0, 4, 1, 2, 6, 3, 5])
    app = Still(lambda app: GameScreen(later), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await board_of(app, pilot)
        moves = shown(app.screen.query_one("#move-list"))
        assert "c2 (−a1)" in moves and "ply 7/200" in moves


async def test_a_second_repetition_is_announced(tmp_path: Path) -> None:
    moves = [7, 4, 2, 1, 0, 3, 6, 8, 5, 4, 2, 1, 0, 3, 6]
    state = State.replay("tactic-toe", moves)
    assert not state.is_over and state.history.count(state.key()) == 1, "the position stands twice"
    _, view = played("tactic-toe", moves)
    app = Still(lambda app: GameScreen(view), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await board_of(app, pilot)
        assert "has stood 2 times: a third is a draw" in shown(app.screen.query_one("#move-list"))


async def test_thinking_while_a_bot_is_to_move(tmp_path: Path) -> None:
    _, view = played("classic", [4])
    view.bots = {"rulebot"}
    assert view.thinking
    app = Still(lambda app: GameScreen(view), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await board_of(app, pilot)
        assert "rulebot thinking" in shown(app.screen.query_one("#status"))


async def test_a_move_handled_before_the_join_answer_is_not_lost(tmp_path: Path) -> None:
    """The answer to a join (its snapshot) and the room's events reach the app by two
    paths: a bot's first move, sent just after, can be handled first. It used to be
    dropped (no room open yet): the board lacked it and the player never had the move."""
    from protocol.rules import Mark, find_variant
    from server.room import Room, RoomRules

    room = Room("5e1f0c2a", find_variant("classic"), m.NoClock(), rules=RoomRules())
    room.sit("b", "rulebot", Mark.X, 0.0)
    room.sit("a", "alice", Mark.O, 1.0)
    joined = m.Joined(room=room.id, role="o", snapshot=room.snapshot(1.0))  # the game has begun
    moved = [m.parse_server(m.encode(e)) for e in room.play("b", 4, 2.0).events]  # at once
    app = Still(lambda app: GameScreen(played("classic", [])[1]), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, GameScreen) and app.screen.ready)
        for event in moved:  # the pump was quicker than the join's answer
            app.handle(event)
        app.handle(joined)
        view = app.rooms[room.id]
        assert view.board[4] == "x" and view.moves == [4] and view.my_turn
        screen = app.screen
        await until(pilot, lambda: isinstance(screen, GameScreen) and screen.view is view and screen.ready)
        assert "your move" in shown(screen.query_one("#status"))


# --- colours -----------------------------------------------------------------------------------


def luminance(color: Color) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = color.get_truecolor()
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: Color, b: Color) -> float:
    """WCAG 2 contrast ratio."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_every_mark_and_state_has_at_least_4_5_to_1_contrast() -> None:
    from client_tui.board import GROUND, INK, cell_style

    for mark in INK:
        for ground in GROUND:
            for leaving in (False, True):
                style = Style.parse(cell_style(mark, ground, leaving))
                assert style.color is not None and style.bgcolor is not None
                ratio = contrast(style.color, style.bgcolor)
                assert ratio >= 4.5, f"{mark} on {ground}: {ratio:.2f}"
                assert not style.dim, "dimming is what made the leaving mark unreadable"
    old = contrast(Color.parse("color(125)"), Color.parse("color(237)"))
    assert old < 4.5, "the measure catches the trial's 1.6:1"


#: Viénot et al. (1999) dichromat simulation, on linear RGB.
DICHROMATS = {
    "protan": (
        (0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)
    ),
    "deutan": (
        (0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)
    ),
    "tritan": (
        (1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)
    ),
}  # fmt: skip


def seen_by(color: str, matrix: tuple[tuple[float, ...], ...]) -> list[float]:
    r, g, b = Color.parse(color).get_truecolor()
    lin = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return [min(1.0, max(0.0, sum(row[j] * lin[j] for j in range(3)))) for row in matrix]


def apart(a: str, b: str, matrix: tuple[tuple[float, ...], ...]) -> float:
    return float(
        sum((p - q) ** 2 for p, q in zip(seen_by(a, matrix), seen_by(b, matrix), strict=True)) ** 0.5
    )


def test_x_and_o_stay_apart_for_colour_blind_eyes() -> None:
    from client_tui.board import INK

    for name, matrix in DICHROMATS.items():
        assert apart(INK["x"], INK["o"], matrix) >= 0.5, name
    assert apart("#00ff00", "#ffaa00", DICHROMATS["deutan"]) < 0.5, "a red-green pair fails the measure"


def test_docs_name_every_key_the_screens_bind() -> None:
    from client_tui.board import Board
    from client_tui.game import GameScreen
    from client_tui.lobby import LobbyScreen
    from client_tui.tournament import TournamentScreen

    docs = (Path(__file__).parent.parent / "docs" / "client.md").read_text()
    words = {
        "question_mark": "`?`", "f1": "F1", "full_stop": "`.`", "colon": "`:`", "escape": "escape",
        "enter": "enter", "home": "home", "end": "end", "up": "arrows", "down": "arrows",
        "left": "arrows", "right": "arrows", "ctrl+q": "ctrl+q",
    }  # fmt: skip
    for screen in (LobbyScreen, GameScreen, Board, TournamentScreen):
        for binding in screen.BINDINGS:
            for key in binding.key.split(","):  # type: ignore[union-attr]
                if key.startswith("shift+"):
                    word = "shift+arrow"
                elif len(key) == 1:
                    word = f"`{key}`" if key not in "hjklyubn" else key
                else:
                    word = words[key]
                assert word in docs, f"{screen.__name__}: {key} is not in docs/client.md"


@pytest.mark.parametrize(
    "variant, keys, cell", [("classic", "b2", 4), ("15x15k5", "h8", 112), ("15x15k5", "n1", 13)]
)
async def test_a_cell_typed_in_one_burst_lands_where_it_is_named(
    tmp_path: Path, variant: str, keys: str, cell: int
) -> None:
    """A real terminal hands a burst of keys (``b2`` typed fast, or pasted) to the app at
    once: a letter that also moves the cursor (``hjkl``, ``yubn``) must move it before the
    digit after it names the cell, not after (a tmux trial played a3 for ``b2``)."""
    _, view = played(variant, [])
    app = Still(lambda app: GameScreen(view), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        board = await board_of(app, pilot)
        board.cursor = 0 if cell else 1
        for key in keys:  # as the driver posts them: no wait between the keys
            app.post_message(events.Key(key, key))
        await settled(pilot)  # every key handled, the bindings they bubble to as well
        assert board.cursor == cell
