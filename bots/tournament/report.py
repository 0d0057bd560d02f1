"""A finished (or running) tournament written to a folder, and shown on a terminal.

Files: ``standings.json`` (standings, Elo figures per matchup, the SPRT's verdict),
``crosstable.csv``, ``games.jsonl`` (one game per line: players, colours, opening,
moves, result, reason, time used) and ``crosstable.svg``.
"""

from __future__ import annotations

import csv
import io
import json
from html import escape
from pathlib import Path
from typing import Any

from bots.tournament.director import Director
from bots.tournament.standings import Standings


def write_outputs(out: Path, director: Director, meta: dict[str, Any] | None = None) -> list[Path]:
    """Write the four files into ``out`` (created if missing); returns their paths."""
    paths = write_standings(out, director, standings_summary(director, meta, status="finished"))
    c = director.config
    paths.append(out / "games.jsonl")
    with paths[2].open("w", encoding="utf-8") as f:
        for record in sorted(director.records, key=lambda r: r.spec.number):
            f.write(json.dumps({"variant": c.variant, **record.to_json()}) + "\n")
    paths.append(out / "crosstable.svg")
    paths[3].write_text(crosstable_svg(director.standings), encoding="utf-8")
    return paths


def write_standings(out: Path, director: Director, summary: dict[str, Any]) -> list[Path]:
    """Write ``standings.json`` (``summary``, from `standings_summary`) and ``crosstable.csv``
    (after every game while the tournament runs, so ``ttt play --tournament DIR`` can
    show them live)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "standings.json", out / "crosstable.csv"]
    _replace(paths[0], json.dumps(summary, indent=2) + "\n")
    buffer = io.StringIO()
    csv.writer(buffer).writerows(director.standings.crosstable_rows())
    _replace(paths[1], buffer.getvalue())
    return paths


def standings_summary(
    director: Director, meta: dict[str, Any] | None = None, *, status: str = "running"
) -> dict[str, Any]:
    """What ``standings.json`` holds (and the MQTT feed's standings payload)."""
    c = director.config
    summary: dict[str, Any] = {
        "variant": c.variant,
        "format": str(c.format),
        "players": list(c.players),
        "games_per_pair": c.games_per_pair,
        "games": len(director.records),
        "status": status,
        **(meta or {}),
        **director.standings.to_json(),
    }
    if director.ended_early:
        summary["ended_early"] = director.ended_early
    if director.sprt_status is not None and c.sprt is not None:
        s = director.sprt_status
        summary["sprt"] = {
            "elo0": c.sprt.elo0,
            "elo1": c.sprt.elo1,
            "alpha": c.sprt.alpha,
            "beta": c.sprt.beta,
            "llr": s.llr,
            "lower": s.lower,
            "upper": s.upper,
            "decision": str(s.decision),
        }
    return summary


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` in one step: a reader never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def crosstable_svg(standings: Standings) -> str:
    """The crosstable as an SVG picture: each cell shaded from red (lost all) to green (won all)."""
    rows = standings.crosstable_rows()
    names = rows[0][1:-2]
    cell, name_w, pad = 64, 140, 10
    width = name_w + cell * (len(names) + 2) + 2 * pad
    height = cell // 2 * (len(names) + 1) + 2 * pad
    h = cell // 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    headers = [*names, "points", "games"]
    for j, title in enumerate(headers):
        x = pad + name_w + j * cell + cell // 2
        parts.append(f'<text x="{x}" y="{pad + h - 10}" text-anchor="middle">{escape(title[:8])}</text>')
    for i, row in enumerate(rows[1:]):
        y = pad + (i + 1) * h
        parts.append(f'<text x="{pad}" y="{y + h - 10}">{escape(row[0][:18])}</text>')
        for j, text in enumerate(row[1:]):
            x = pad + name_w + j * cell
            fill = "#eeeeee"
            if j < len(names) and text:
                points, games = (float(v) for v in text.split("/"))
                share = points / games if games else 0.5
                fill = f"rgb({round(230 - 130 * share)},{round(100 + 130 * share)},110)"
            elif j < len(names):
                fill = "#cccccc" if names[j] == row[0] else "#f8f8f8"
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{h}" fill="{fill}" stroke="#888"/>')
            parts.append(
                f'<text x="{x + cell // 2}" y="{y + h - 10}" text-anchor="middle">{escape(text)}</text>'
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def standings_table(director: Director) -> Any:
    """A rich `Table` of the standings so far (imported lazily: rich is only for terminals)."""
    from rich.table import Table

    s = director.standings
    table = Table(title=f"{director.config.variant} {director.config.format}: {len(director.records)} games")
    for title in ("#", "player", "points", "games", "W", "D", "L", "X/O", "forfeits"):
        table.add_column(title, justify="left" if title == "player" else "right")
    for rank, row in enumerate(s.ranked(), 1):
        table.add_row(
            str(rank),
            row.name,
            f"{row.points:g}",
            str(row.games),
            str(row.wins),
            str(row.draws),
            str(row.losses),
            f"{row.as_x}/{row.as_o}",
            str(row.forfeits),
        )
    return table


def matchup_lines(director: Director) -> list[str]:
    """One line per matchup: Elo difference with its 95% bar, LOS and draw ratio."""
    players = director.config.players
    lines = []
    for i, a in enumerate(players):
        for b in players[i + 1 :]:
            if (a, b) in director.standings.cross:
                lines.append(f"{a} vs {b}: {director.standings.estimate(a, b)}")
    if director.sprt_status is not None:
        s = director.sprt_status
        lines.append(f"SPRT: llr {s.llr:.2f} ({s.lower:.2f}, {s.upper:.2f}): {s.decision}")
    return lines
