"""The games of a tournament as PGN (``games.pgn``), for the tools engine testers use
(Ordo, BayesElo, any PGN reader). Pure: text in, text out.

X plays White and O Black, as the side that moves first. Each game has the seven-tag
roster (``Event Site Date Round White Black Result``), then ``Variant`` (our variant id),
``TimeControl`` (PGN's forms: ``-`` for none, ``1/S`` for S seconds a move, ``B+I`` for a
base of B seconds and I a move: `bots.tournament.timecontrol.tc_text`), ``Termination``
(PGN's words, ``time forfeit`` for a loss on time; the exact reason is in a ``{comment}``
after the result) and ``PlyCount``.
Moves are cell names as the client shows them: column letter, then row number from 1
at the top (``b2`` is the centre of 3x3); the opening's moves carry ``{book}`` as
cutechess-cli marks them.
"""

from __future__ import annotations

from collections.abc import Iterable

from bots.tournament.standings import RULES_REASONS, PlayedGame
from protocol.rules import cell_name, find_variant

#: Our reasons, as PGN's Termination tag says them.
_TERMINATION = {
    "timeout": "time forfeit",
    "illegal_move": "rules infraction",
    "crash": "rules infraction",
    "aborted": "rules infraction",
    "abandoned": "abandoned",
    "resignation": "normal",
}


def _tag(name: str, value: object) -> str:
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    text = "".join(c if c.isprintable() else " " for c in text)
    return f'[{name} "{text}"]'


def game_pgn(
    record: PlayedGame, variant: str, *, event: str = "ttt-arena tournament", site: str = "?",
    date: str = "????.??.??", time_control: str = "-",
) -> str:  # fmt: skip
    """One game as PGN text (tags, a blank line, the movetext, a blank line)."""
    s = record.spec
    cols = find_variant(variant).cols
    reason = record.reason
    termination = "normal" if reason in RULES_REASONS else _TERMINATION.get(reason, "adjudication")
    tags = [
        _tag("Event", event),
        _tag("Site", site),
        _tag("Date", date),
        _tag("Round", s.number),
        _tag("White", s.x),
        _tag("Black", s.o),
        _tag("Result", record.result),
        _tag("Variant", variant),
        _tag("TimeControl", time_control),
        _tag("Termination", termination),
        _tag("PlyCount", len(record.moves)),
    ]
    words: list[str] = []
    for ply, cell in enumerate(record.moves):
        if ply % 2 == 0:
            words.append(f"{ply // 2 + 1}.")
        words.append(cell_name(cell, cols))
        if ply == len(s.opening) - 1:
            words.append("{book}")
    words += [f"{{{reason}}}", record.result]
    lines: list[str] = []
    line = ""
    for word in words:  # PGN lines stay under 80 characters
        if line and len(line) + 1 + len(word) > 79:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n".join(tags) + "\n\n" + "\n".join(lines) + "\n\n"


def games_pgn(records: Iterable[PlayedGame], variant: str, **tags: object) -> str:
    """Every game of ``records``, in game-number order."""
    return "".join(
        game_pgn(r, variant, **tags)  # type: ignore[arg-type]
        for r in sorted(records, key=lambda r: r.spec.number)
    )
