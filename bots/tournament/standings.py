"""Finished games, standings and the crosstable. Pure: no I/O.

Points are counted from each game's result as chess counts them: 1 for a win, 1/2
for a draw. A bye (Swiss, odd player count) scores half the points of a round.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bots.tournament.pairing import GameSpec
from bots.tournament.stats import EloEstimate, Pentanomial, Trinomial, elo_estimate, pentanomial_estimate
from protocol.rules import Cell, points

RESULTS = ("1-0", "0-1", "1/2-1/2")


@dataclass(frozen=True, slots=True)
class PlayedGame:
    """One finished game.

    Attributes:
        spec: the scheduled game (players by colour, opening).
        result: ``1-0`` (X won), ``0-1`` (O won) or ``1/2-1/2``.
        reason: why it ended: a rules termination (``line``, ``full_board``,
            ``repetition``, ``ply_cap``) or a forfeit (``timeout``, ``abandoned``,
            ``resignation``, ``illegal_move``, ...).
        moves: every move from the empty board, the opening included.
        time_ms: thinking time used by X and by O, in milliseconds.
        game_id: the server's id of the game, when it was played on one.
    """

    spec: GameSpec
    result: str
    reason: str
    moves: tuple[Cell, ...] = ()
    time_ms: tuple[int, int] = (0, 0)
    game_id: str | None = None

    def __post_init__(self) -> None:
        if self.result not in RESULTS:
            raise ValueError(f"a result is one of {RESULTS}, not {self.result!r}")

    def points(self, player: str) -> float:
        """The points ``player`` scored in this game."""
        x_points = points({"1-0": "x", "0-1": "o"}.get(self.result), "x")
        if player == self.spec.x:
            return x_points
        if player == self.spec.o:
            return 1.0 - x_points
        raise ValueError(f"{player!r} did not play game {self.spec.number}")

    def to_json(self) -> dict[str, Any]:
        s = self.spec
        return {
            "number": s.number,
            "round": s.round,
            "pair": s.pair,
            "x": s.x,
            "o": s.o,
            "opening": list(s.opening),
            "moves": list(self.moves),
            "result": self.result,
            "reason": self.reason,
            "time_ms": {"x": self.time_ms[0], "o": self.time_ms[1]},
            "game_id": self.game_id,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlayedGame:
        spec = GameSpec(
            int(data["number"]),
            int(data["round"]),
            int(data["pair"]),
            str(data["x"]),
            str(data["o"]),
            tuple(int(c) for c in data["opening"]),
        )
        t = data.get("time_ms") or {"x": 0, "o": 0}
        return cls(
            spec,
            str(data["result"]),
            str(data["reason"]),
            tuple(int(c) for c in data["moves"]),
            (int(t["x"]), int(t["o"])),
            data.get("game_id"),
        )


@dataclass(slots=True)
class Row:
    """One player's line of the standings."""

    name: str
    points: float = 0.0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    as_x: int = 0
    as_o: int = 0
    byes: int = 0
    forfeits: int = 0
    #: Of the forfeits, the games lost on time (``timeout``).
    time_forfeits: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "points": self.points,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "as_x": self.as_x,
            "as_o": self.as_o,
            "byes": self.byes,
            "forfeits": self.forfeits,
            "time_forfeits": self.time_forfeits,
        }


#: Reasons that are decided by the rules; any other reason is a forfeit by the loser.
RULES_REASONS = frozenset({"line", "full_board", "repetition", "ply_cap"})


@dataclass
class Standings:
    """Standings and crosstable of ``players``, fed one finished game at a time."""

    players: Sequence[str]
    games_per_pair: int = 2
    rows: dict[str, Row] = field(init=False)
    #: (a, b) -> a's counts against b.
    cross: dict[tuple[str, str], Trinomial] = field(init=False)
    #: (a, b, round, pair) -> a's points in the games of that pair finished so far.
    _pairs: dict[tuple[str, str, int, int], list[float]] = field(init=False)

    def __post_init__(self) -> None:
        self.rows = {p: Row(p) for p in self.players}
        self.cross = {}
        self._pairs = {}

    def add(self, record: PlayedGame) -> None:
        s = record.spec
        for me, them in ((s.x, s.o), (s.o, s.x)):
            points = record.points(me)
            row = self.rows[me]
            row.points += points
            if points == 1:
                row.wins += 1
            elif points == 0:
                row.losses += 1
                if record.reason not in RULES_REASONS:
                    row.forfeits += 1
                    row.time_forfeits += record.reason == "timeout"
            else:
                row.draws += 1
            if me == s.x:
                row.as_x += 1
            else:
                row.as_o += 1
            self.cross[me, them] = self.cross.get((me, them), Trinomial()).add(points)
            self._pairs.setdefault((me, them, s.round, s.pair), []).append(points)

    def add_bye(self, player: str) -> None:
        row = self.rows[player]
        row.byes += 1
        row.points += self.games_per_pair / 2

    def extend(self, records: Iterable[PlayedGame]) -> None:
        for r in records:
            self.add(r)

    def ranked(self) -> list[Row]:
        """Rows best first: points, then wins, then entry order."""
        order = {p: i for i, p in enumerate(self.players)}
        return sorted(self.rows.values(), key=lambda r: (-r.points, -r.wins, order[r.name]))

    def _complete_pairs(self, a: str, b: str) -> list[tuple[float, float]]:
        return [
            (p[0], p[1])
            for (me, them, _, _), p in self._pairs.items()
            if (me, them) == (a, b) and len(p) == 2
        ]

    def pentanomial(self, a: str, b: str) -> Pentanomial:
        """``a``'s counts of complete pairs against ``b``."""
        return Pentanomial.from_pairs(self._complete_pairs(a, b))

    def model(self, a: str, b: str) -> str:
        """Which counts `estimate` uses for ``a`` against ``b``: ``pentanomial`` once a
        colour-swapped pair is complete, else ``trinomial`` (game counts)."""
        return "pentanomial" if self.pentanomial(a, b).pairs else "trinomial"

    def estimate(self, a: str, b: str) -> EloEstimate:
        """Elo of ``a`` against ``b``: from the complete pairs once there is one (a game
        whose partner is still running, or was called off, waits outside), else from
        the games. One model for a matchup, whatever order its games end in."""
        pairs = self._complete_pairs(a, b)
        if pairs:
            draws = sum((x == 0.5) + (y == 0.5) for x, y in pairs)
            return pentanomial_estimate(Pentanomial.from_pairs(pairs), draws=draws)
        return elo_estimate(self.cross.get((a, b), Trinomial()))

    def tie_breaks(self, player: str) -> tuple[float, float]:
        """Buchholz (the sum of the opponents' points, each opponent once) and
        Sonneborn-Berger (for each opponent, the points scored against it times its points)."""
        points = {name: row.points for name, row in self.rows.items()}
        buchholz = sonneborn_berger = 0.0
        for (me, them), counts in self.cross.items():
            if me == player:
                buchholz += points[them]
                sonneborn_berger += counts.points * points[them]
        return buchholz, sonneborn_berger

    def total_points(self) -> float:
        return sum(r.points for r in self.rows.values())

    def to_json(self) -> dict[str, Any]:
        matchups = []
        for i, a in enumerate(self.players):
            for b in self.players[i + 1 :]:
                counts = self.cross.get((a, b))
                if counts is None:
                    continue
                matchups.append(
                    {
                        "player": a,
                        "opponent": b,
                        "wins": counts.wins,
                        "draws": counts.draws,
                        "losses": counts.losses,
                        "pentanomial": list(self.pentanomial(a, b).counts),
                        "model": self.model(a, b),
                        **self.estimate(a, b).to_json(),
                    }
                )
        standings = []
        for row in self.ranked():
            buchholz, sonneborn_berger = self.tie_breaks(row.name)
            standings.append({**row.to_json(), "buchholz": buchholz, "sonneborn_berger": sonneborn_berger})
        return {"standings": standings, "matchups": matchups}

    def crosstable_rows(self) -> list[list[str]]:
        """The crosstable as text cells: a header, then one row per player, best first."""
        ranked = [r.name for r in self.ranked()]
        rows = [["player", *ranked, "points", "games"]]
        for a in ranked:
            cells = []
            for b in ranked:
                counts = self.cross.get((a, b))
                cells.append("" if a == b or counts is None else f"{counts.points:g}/{counts.games}")
            row = self.rows[a]
            rows.append([a, *cells, f"{row.points:g}", str(row.games)])
        return rows
