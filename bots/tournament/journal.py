"""``games.jsonl`` and ``settings.json`` in the output folder: the record a stopped
tournament is resumed from (``--resume``).

Each game is appended as one complete line when it ends. ``settings.json`` holds every
flag that decides which games are played; a resume whose flags differ is refused,
naming the flag, so games of one tournament are never counted in another. A runner
killed mid-write leaves a torn last line: it is dropped with a warning (that game is
played again).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bots.tournament.pairing import TournamentError
from bots.tournament.standings import PlayedGame

#: Setting -> the flag(s) that set it, for the message of a refused resume.
FLAGS = {
    "variant": "--variant",
    "format": "--format",
    "entries": "--bots/--bot",
    "games_per_pair": "--games-per-pair",
    "seed": "--seed",
    "openings": "--openings/--opening-moves/--opening-file",
    "rounds": "--rounds",
    "sprt": "--elo0/--elo1/--alpha/--beta/--sprt-model",
    "max_games": "--max-games",
    "move_ms": "--move-ms",
    "time_control": "--tc/--move-ms",
    "time_margin_ms": "--timemargin",
    "mode": "--in-process/--connected",
    "swap": "--noswap/--reverse",
    "max_plies": "--max-plies",
}


def check_resume(saved: Mapping[str, Any], now: Mapping[str, Any]) -> None:
    """Raises `TournamentError` naming each flag whose setting differs from the saved one."""
    changed = [key for key in FLAGS if key in saved and saved.get(key) != now.get(key)]
    if changed:
        details = "; ".join(
            f"{FLAGS[k]}: was {_show(saved.get(k))}, now {_show(now.get(k))}" for k in changed
        )
        raise TournamentError(f"--resume with other settings than the journal's ({details})")


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


class Journal:
    """The games of a tournament as they end, in ``out/games.jsonl`` (None: kept in memory only)."""

    def __init__(self, out: Path | None, resume: bool, settings: Mapping[str, Any], variant: str) -> None:
        self.path = out / "games.jsonl" if out else None
        self.records: list[PlayedGame] = []
        if resume:
            if out is None or self.path is None or not self.path.exists():
                raise TournamentError("--resume needs --out DIR holding the games.jsonl of the tournament")
            saved_path = out / "settings.json"
            if saved_path.exists():
                check_resume(json.loads(saved_path.read_text(encoding="utf-8")), settings)
            self.records = self._read(variant)
        elif out is not None and self.path is not None:
            out.mkdir(parents=True, exist_ok=True)
            self.path.write_text("", encoding="utf-8")
        if out is not None:
            (out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")

    def _read(self, variant: str) -> list[PlayedGame]:
        assert self.path is not None
        text = self.path.read_text(encoding="utf-8")
        lines = text.splitlines()
        records = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                if i < len(lines) - 1:
                    raise TournamentError(f"{self.path}: line {i + 1} is not a game record") from None
                print(f"{self.path}: dropped a torn last line (the runner stopped mid-write); "
                      "that game is played again", file=sys.stderr)  # fmt: skip
                kept = "".join(f"{kept_line}\n" for kept_line in lines[:i])
                self.path.write_text(kept, encoding="utf-8")
                break
            if data.get("variant", variant) != variant:
                raise TournamentError(
                    f"--resume: the journal's games are {data.get('variant')}, not {variant}"
                )
            records.append(PlayedGame.from_json(data))
        if (
            text
            and not text.endswith("\n")
            and records
            and len(records) == len([x for x in lines if x.strip()])
        ):
            with self.path.open("a", encoding="utf-8") as f:
                f.write("\n")  # a whole last line without its newline: the next one starts fresh
        return records

    def add(self, record: PlayedGame, variant: str) -> None:
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"variant": variant, **record.to_json()}) + "\n")
