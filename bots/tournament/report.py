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
from bots.tournament.pgn import games_pgn
from bots.tournament.standings import PlayedGame, Standings
from bots.tournament.stats import EloEstimate, Trinomial, elo_estimate


def write_outputs(out: Path, director: Director, meta: dict[str, Any] | None = None) -> list[Path]:
    """Write the five files into ``out`` (created if missing); returns their paths.

    ``games.pgn`` takes its Date, Site and TimeControl from ``meta`` (``date``,
    ``site``, ``settings.time_control``)."""
    paths = write_standings(out, director, standings_summary(director, meta, status="finished"))
    c = director.config
    paths.append(out / "games.jsonl")
    with paths[2].open("w", encoding="utf-8") as f:
        for record in sorted(director.records, key=lambda r: r.spec.number):
            f.write(json.dumps({"variant": c.variant, **record.to_json()}) + "\n")
    paths.append(out / "crosstable.svg")
    title = f"{c.variant} {c.format}: {len(director.records)} games"
    paths[3].write_text(crosstable_svg(director.standings, title), encoding="utf-8")
    paths.append(out / "games.pgn")
    m = meta or {}
    pgn = games_pgn(
        director.records,
        c.variant,
        site=m.get("site", "?"),
        date=m.get("date", "????.??.??"),
        time_control=_tc_tag(m.get("settings", {})),
    )
    paths[4].write_text(pgn, encoding="utf-8")
    return paths


def _tc_tag(settings: dict[str, Any]) -> str:
    """PGN's TimeControl from the settings (older ones have ``move_ms`` only)."""
    if "time_control" in settings:
        return str(settings["time_control"] or "-")
    move_ms = settings.get("move_ms")
    return f"1/{move_ms / 1000:g}" if move_ms else "-"


def write_standings(out: Path, director: Director, summary: dict[str, Any]) -> list[Path]:
    """Write ``standings.json`` (``summary``, from `standings_summary`) and ``crosstable.csv``
    (after every game while the tournament runs, so ``ttt play --tournament DIR`` can
    show them live)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "standings.json", out / "crosstable.csv"]
    _replace(paths[0], json.dumps(summary, indent=2) + "\n")
    buffer = io.StringIO()
    rows = [[spreadsheet_safe(cell) for cell in row] for row in director.standings.crosstable_rows()]
    csv.writer(buffer).writerows(rows)
    _replace(paths[1], buffer.getvalue())
    return paths


#: What a spreadsheet reads as the start of a formula (CSV injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell: str) -> str:
    """``cell``, with a ``'`` in front if a spreadsheet would run it as a formula (OWASP's
    advice for CSV files); numbers stay numbers."""
    if cell.startswith(_FORMULA_STARTS):
        try:
            float(cell)
        except ValueError:
            return "'" + cell
    return cell


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
    if director.bracket is not None:
        summary["knockout"] = director.bracket.to_json()
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
            "model": c.sprt.model,
            "decided_after_games": director.sprt_decided_at,
            "called_off": [g.number for g in director.called_off],
        }
    return summary


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` in one step: a reader never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def crosstable_svg(standings: Standings, title: str = "crosstable") -> str:
    """The crosstable as an SVG picture: a title; each cell the row player's points out of
    the games against the column player, shaded on a colour-blind-safe scale from
    orange (lost all) through white (even) to blue (won all), with a legend; then points,
    games, W/D/L, byes, and the Elo against the field with its 95% bar (cutechess's
    formula over the player's games). Names are written whole: the name column is as
    wide as the longest, and the column headers are slanted."""
    rows = standings.crosstable_rows()
    names = rows[0][1:-2]
    char = 8  # px a monospace character takes at font-size 13
    cell, pad, h = 56, 10, 28
    name_w = char * max([len(n) for n in names] + [6]) + 12
    head_h = char * max([len(n) for n in names] + [6]) * 3 // 4 + 20
    extra = [("points", 56), ("games", 56), ("W/D/L", 88), ("byes", 48), ("Elo", 136)]
    table_w = name_w + cell * len(names) + sum(w for _, w in extra)
    width = table_w + 2 * pad
    top = pad + 24 + head_h
    height = top + h * len(names) + 60
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{pad}" y="{pad + 16}" font-size="16" font-weight="bold">{escape(title)}</text>',
    ]
    # headers: player names slanted, so long names never run into each other
    for j, name in enumerate(names):
        x = pad + name_w + j * cell + cell // 2
        y = top - 6
        parts.append(f'<text x="{x}" y="{y}" transform="rotate(-45 {x} {y})">{escape(name)}</text>')
    x = pad + name_w + cell * len(names)
    for label, w in extra:
        parts.append(f'<text x="{x + w // 2}" y="{top - 6}" text-anchor="middle">{label}</text>')
        x += w
    for i, row in enumerate(rows[1:]):
        name, y = row[0], top + i * h
        record = standings.rows[name]
        parts.append(f'<text x="{pad}" y="{y + h - 9}">{escape(name)}</text>')
        for j, text in enumerate(row[1 : 1 + len(names)]):
            x = pad + name_w + j * cell
            if names[j] == name:
                fill = "#bbbbbb"
            elif text:
                points, games = (float(v) for v in text.split("/"))
                fill = _shade(points / games if games else 0.5)
            else:
                fill = "#f4f4f4"
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{h}" fill="{fill}" stroke="#888"/>')
            parts.append(
                f'<text x="{x + cell // 2}" y="{y + h - 9}" text-anchor="middle">{escape(text)}</text>'
            )
        estimate = elo_estimate(Trinomial(record.wins, record.draws, record.losses))
        cells = [
            row[-2],
            row[-1],
            f"{record.wins}/{record.draws}/{record.losses}",
            str(record.byes),
            _elo(estimate),
        ]
        x = pad + name_w + cell * len(names)
        for (_, w), text in zip(extra, cells, strict=True):
            parts.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="#f8f8f8" stroke="#888"/>')
            parts.append(f'<text x="{x + w // 2}" y="{y + h - 9}" text-anchor="middle">{escape(text)}</text>')
            x += w
    # legend: the colour scale, with what its ends and middle mean
    y = top + h * len(names) + 16
    steps = 10
    for k in range(steps + 1):
        x, fill = pad + 120 + 16 * k, _shade(k / steps)
        parts.append(f'<rect x="{x}" y="{y}" width="16" height="14" fill="{fill}" stroke="#888"/>')
    parts.append(f'<text x="{pad}" y="{y + 12}">score vs them:</text>')
    parts.append(f'<text x="{pad + 120}" y="{y + 30}">lost all</text>')
    parts.append(f'<text x="{pad + 120 + 8 * steps}" y="{y + 30}" text-anchor="middle">even</text>')
    parts.append(f'<text x="{pad + 136 + 16 * steps}" y="{y + 30}" text-anchor="end">won all</text>')
    parts.append(
        f'<text x="{pad + 160 + 16 * steps}" y="{y + 12}">Elo: vs the field, ± 95%; grey: no game</text>'
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _shade(share: float) -> str:
    """Orange (0) through white (1/2) to blue (1): readable, and safe for red-green blindness."""
    low, mid, high = (230, 97, 1), (255, 255, 255), (33, 102, 172)
    a, b, t = (low, mid, share * 2) if share < 0.5 else (mid, high, share * 2 - 1)
    r, g, bl = (round(x + (y - x) * t) for x, y in zip(a, b, strict=True))
    return f"rgb({r},{g},{bl})"


def _elo(estimate: EloEstimate) -> str:
    if estimate.games == 0:
        return "n/a"
    text = str(estimate).split(",")[0].removeprefix("Elo difference: ")
    return text.replace(" +/- ", " ± ").replace("unbounded", "∞")


def standings_table(director: Director) -> Any:
    """A rich `Table` of the standings so far (imported lazily: rich is only for terminals)."""
    from rich.table import Table
    from rich.text import Text

    s = director.standings
    table = Table(
        title=f"{director.config.variant} {director.config.format}: {len(director.records)} games",
        caption=sprt_line(director),  # the live LLR and its bounds
    )
    for title in ("#", "player", "points", "games", "W", "D", "L", "X/O", "forfeits"):
        table.add_column(title, justify="left" if title == "player" else "right")
    for rank, row in enumerate(s.ranked(), 1):
        table.add_row(
            str(rank),
            Text(row.name),  # a name is text, never markup
            f"{row.points:g}",
            str(row.games),
            str(row.wins),
            str(row.draws),
            str(row.losses),
            f"{row.as_x}/{row.as_o}",
            f"{row.forfeits} ({row.time_forfeits} on time)" if row.time_forfeits else str(row.forfeits),
        )
    return table


def game_line(record: PlayedGame, finished: int) -> str:
    """One finished game as cutechess-cli prints it: ``Finished game 3 (a vs b): 1-0 {line}``,
    ``{b loses on time}`` for a game lost on time."""
    s = record.spec
    reason = record.reason
    if reason == "timeout" and record.result != "1/2-1/2":  # as cutechess-cli says it
        reason = f"{s.x if record.result == '0-1' else s.o} loses on time"
    return f"Finished game {s.number} ({s.x} vs {s.o}): {record.result} {{{reason}}} [{finished} done]"


def matchup_lines(director: Director) -> list[str]:
    """One line per matchup: Elo difference with its 95% bar, LOS and draw ratio (plain
    text: print it with markup off)."""
    players = director.config.players
    lines = []
    for i, a in enumerate(players):
        for b in players[i + 1 :]:
            if (a, b) in director.standings.cross:
                model = director.standings.model(a, b)
                lines.append(f"{a} vs {b}: {director.standings.estimate(a, b)} ({model})")
    sprt = sprt_line(director)
    if sprt is not None:
        lines.append(sprt)
    return lines


def sprt_line(director: Director) -> str | None:
    """The SPRT so far: model, bounds in Elo, LLR and its bounds, the decision (None: no SPRT)."""
    if director.sprt_status is None or director.config.sprt is None:
        return None
    s, t = director.sprt_status, director.config.sprt
    decided = "" if director.sprt_decided_at is None else f" after {director.sprt_decided_at} games"
    return (
        f"SPRT ({t.elo0:g}, {t.elo1:g}) {t.model}: llr {s.llr:.2f} ({s.lower:.2f}, {s.upper:.2f}): "
        f"{s.decision}{decided}"
    )
