"""Pictures of the terminal client's screens (pytest-textual-snapshot): the lobby and a
3x3 and a 15x15 game at 80x24 and 120x40, tactic-toe's badges, a game over with its
review, and a tournament's standings.

The screens are fed fixed models (games played through the server's own `Room`),
so the pictures do not depend on a socket, a clock or random room ids. Each picture
is taken once the screen shows what it is about (`drawn`): the plugin's own waits are
"the process looks idle", which a loaded machine fools. Update them after a deliberate
change with ``pytest --snapshot-update``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from test_tui_app import screen_text, until
from textual.pilot import Pilot
from textual.screen import Screen

from bots.analyse import grade_moves
from client_tui.app import ArenaApp
from client_tui.board import Board
from client_tui.model import RoomView
from client_tui.screens import GameScreen, LobbyScreen, TournamentScreen
from client_tui.tokens import TokenStore
from protocol import messages as m
from protocol.rules import Mark, find_variant
from server.room import Room, RoomRules

SIZE = (110, 34)


class Still(ArenaApp):
    """The app showing one screen, with no connection."""

    def __init__(self, make: Callable[[ArenaApp], Screen[Any]], tmp: Path) -> None:
        super().__init__("ws://127.0.0.1:8765", "alice", store=TokenStore(tmp / "tokens.json"))
        self.make = make

    def begin(self) -> None:
        self.sub_title = "connected · ws://127.0.0.1:8765 · alice"
        self.push_screen(self.make(self))


def drawn(kind: type[Screen[Any]], *texts: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A ``run_before`` that waits until a ``kind`` screen is mounted, its board (if any)
    focused, and ``texts`` are on the terminal (the footer last of all: it is drawn again
    once the focus settles)."""

    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await until(pilot, lambda: isinstance(app.screen, kind) and app.screen.is_mounted)
        for board in app.screen.query(Board):
            await until(pilot, lambda: board.has_focus)  # noqa: B023
        await until(pilot, lambda: all(text in screen_text(app) for text in texts))  # type: ignore[arg-type]

    return run_before


#: The footer of a game in play, with the board focused.
PLAYING = ("⏎ play", "g resign", "q quit")


def played(variant: str, moves: list[int], me: str = "alice", **kw: Any) -> tuple[Room, RoomView]:
    room = Room("5e1f0c2a", find_variant(variant), kw.pop("control", m.NoClock()), rules=RoomRules(), **kw)
    room.sit("a", "alice", Mark.X, 0.0)
    room.sit("b", "rulebot", Mark.O, 0.0)
    for ply, cell in enumerate(moves):
        room.play("a" if ply % 2 == 0 else "b", cell, 1.0 + ply)
    return room, RoomView.from_snapshot(room.snapshot(10.0), me, 10.0)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_lobby(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    def make(app: ArenaApp) -> Screen[Any]:
        waiting, _ = played("tactic-toe", [])
        summary = waiting.summary().model_copy(
            update={"seats": m.Seats(x="[red]x[/red]"), "status": "waiting"}
        )
        busy, _ = played("15x15k5", [112, 113])
        app.lobby.load(
            m.LobbySnapshot(
                rooms=[summary, busy.summary().model_copy(update={"id": "77aa01bc", "spectators": 2})],
                players=[
                    m.PlayerInfo(id="p1", name="alice", kind="human", ratings={"classic": 1540}),
                    m.PlayerInfo(id="p2", name="rulebot", kind="bot", ratings={"classic": 1712}),
                    m.PlayerInfo(id="p3", name="[red]x[/red]", kind="human"),
                ],
            )
        )
        app.lobby.leaderboard = m.Leaderboard(
            variant="classic",
            entries=[
                m.LeaderboardEntry(
                    rank=1, player="p2", name="rulebot", kind="bot", rating=1712, rd=60, games=40
                ),
                m.LeaderboardEntry(
                    rank=2, player="p1", name="alice", kind="human", rating=1540, rd=90, games=12
                ),
            ],
        )
        app.player_id = "p1"
        return LobbyScreen()

    ready = drawn(LobbyScreen, "[red]x[/red]", "rulebot", "b challenge", "q quit")
    assert snap_compare(Still(make, tmp_path), terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_classic_game_in_progress(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    _, view = played("classic", [4, 0, 8])
    ready = drawn(GameScreen, *PLAYING)
    assert snap_compare(Still(lambda app: GameScreen(view), tmp_path), terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_gomoku_game_in_progress(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    _, view = played("15x15k5", [112, 113, 97, 98, 127, 128])
    ready = drawn(GameScreen, *PLAYING)
    assert snap_compare(Still(lambda app: GameScreen(view), tmp_path), terminal_size=size, run_before=ready)


def test_tactic_toe_shows_the_marks_about_to_vanish(snap_compare: Any, tmp_path: Path) -> None:
    _, view = played("tactic-toe", [0, 4, 1, 2, 6, 3], me="rulebot")
    assert view.next_to_vanish == {"x": 0, "o": 4}
    ready = drawn(GameScreen, "X³", "O³", *PLAYING)
    assert snap_compare(Still(lambda app: GameScreen(view), tmp_path), terminal_size=SIZE, run_before=ready)


def test_gomoku_board_fits(snap_compare: Any, tmp_path: Path) -> None:
    _, view = played("15x15k5", [112, 113, 97, 98, 127, 128, 0, 224])
    ready = drawn(GameScreen, *PLAYING)
    assert snap_compare(Still(lambda app: GameScreen(view), tmp_path), terminal_size=SIZE, run_before=ready)


def test_game_over_with_review(snap_compare: Any, tmp_path: Path) -> None:
    _, view = played("classic", [1, 4, 0, 2, 6, 3, 8, 5])  # X's 8 misses O's 3-4-5
    assert view.result is not None and view.result.winner == "o"
    grades = grade_moves("classic", view.moves)
    assert [g.grade for g in grades].count("blunder") >= 1

    async def review(pilot: Pilot[Any]) -> None:
        await drawn(GameScreen, "r rematch", "q quit")(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, GameScreen)
        screen.show_review(grades)
        await until(pilot, lambda: all(t in screen_text(screen.arena) for t in ("Review (", "blunder")))

    assert snap_compare(Still(lambda app: GameScreen(view), tmp_path), terminal_size=SIZE, run_before=review)


def test_tournament_standings(snap_compare: Any, tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    keys = ("name", "points", "games", "wins", "draws", "losses", "as_x", "as_o")
    rows = [
        dict(zip(keys, ("table", 7.0, 8, 6, 2, 0, 4, 4), strict=True)),
        dict(zip(keys, ("rule", 5.0, 8, 3, 4, 1, 4, 4), strict=True)),
        dict(zip(keys, ("random", 0.0, 8, 0, 0, 8, 4, 4), strict=True)),
    ]
    matchup = {"player": "table", "opponent": "random", "wins": 4, "draws": 0, "losses": 0}
    data = {
        "variant": "tactic-toe",
        "format": "round-robin",
        "games": 12,
        "planned": 12,
        "status": "running",
        "standings": rows,
        "matchups": [{**matchup, "elo": 240.8, "error95": 180.2, "los": 0.977}],
    }
    (folder / "standings.json").write_text(json.dumps(data))
    (folder / "crosstable.csv").write_text(
        "player,table,rule,random,points,games\ntable,,3/4,4/4,7,8\nrule,1/4,,4/4,5,8\nrandom,0/4,0/4,,0,8\n"
    )
    ready = drawn(TournamentScreen, "random", "LOS 97.7%", "esc back", "q quit")
    assert snap_compare(
        Still(lambda app: TournamentScreen(folder), tmp_path), terminal_size=SIZE, run_before=ready
    )
