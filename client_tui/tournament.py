"""A tournament's live standings, read from the files ``ttt tournament --out DIR``
rewrites after each game (``standings.json``, ``crosstable.csv``)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Header, Input, Label, Static

from client_tui.text import plain


def number(value: object) -> Text:
    text = plain(value)
    text.justify = "right"
    return text


def matchup_line(mu: dict[str, Any]) -> str:
    """``table vs rule: +4 =2 -0  Elo +120 ± 95  LOS 97.7%``; the error bar and LOS only
    where they are defined (all draws, or too few games, give none)."""
    line = f"{mu['player']} vs {mu['opponent']}: +{mu['wins']} ={mu['draws']} -{mu['losses']}"
    elo = mu.get("elo")
    if elo is None or (isinstance(elo, float) and not math.isfinite(elo)):
        return line + "  Elo undefined"
    line += f"  Elo {round(elo):+d}"  # round() first: never "-0"
    error = mu.get("error95")
    line += (
        f" ± {error:.0f}" if isinstance(error, int | float) and math.isfinite(error) else " (no error bar)"
    )
    los = mu.get("los")
    if isinstance(los, int | float):
        line += f"  LOS {100 * los:.1f}%"
    return line


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
            yield Label("The --out folder of a ttt tournament (escape: back)")
            yield Input("", id="folder")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(Path(event.value.strip()) if event.value.strip() else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class TournamentScreen(Screen[None]):
    """Live standings and crosstable of a tournament. Escape goes back to the lobby,
    or quits when the client was started on this screen (``--tournament``)."""

    BINDINGS = [
        Binding("escape", "back", "back"),
        Binding("question_mark,f1", "help", "help"),
        Binding("q", "app.quit", "quit"),
    ]
    DEFAULT_CSS = """
    TournamentScreen #summary { height: auto; padding: 0 1; text-style: bold; }
    TournamentScreen DataTable { height: auto; max-height: 50%; margin: 1 0 0 0; }
    TournamentScreen #matchups { height: auto; padding: 1 1 0 1; }
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
                number(rank),
                plain(row.get("name", "?"), "bold"),
                number(f"{row.get('points', 0):g}"),
                *(number(row.get(k, "")) for k in ("games", "wins", "draws", "losses", "as_x", "as_o")),
            )
        table = self.query_one("#crosstable", DataTable)
        table.clear(columns=True)
        if cross:
            table.add_columns(*(plain(h) for h in cross[0]))
            for row in cross[1:]:
                table.add_row(plain(row[0], "bold"), *(number(c) for c in row[1:]))
        lines = [plain(matchup_line(mu)) for mu in data.get("matchups", [])]
        self.query_one("#matchups", Static).update(Text("\n").join(lines))

    def action_back(self) -> None:
        if len(self.app.screen_stack) <= 2:  # started on this screen: nothing to go back to
            self.app.exit()
        else:
            self.app.pop_screen()

    def action_help(self) -> None:
        from client_tui import dialogs

        self.app.push_screen(dialogs.Help())
