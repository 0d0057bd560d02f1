"""Glicko-2 ratings per variant, sans-I/O, computed by the `glicko2` package (deepy/glicko2).

Each rated game is its own rating period for both players: the usual choice
for online play, where games are not batched into periods. Aborted games are
not rated.
"""

from __future__ import annotations

from dataclasses import dataclass

import glicko2  # type: ignore[import-untyped]

from server.ops import RatingSaved


@dataclass(frozen=True, slots=True)
class Rating:
    rating: float = 1500.0
    rd: float = 350.0
    vol: float = 0.06
    games: int = 0


class Ratings:
    """Every player's rating in every variant they have played rated games in."""

    def __init__(self) -> None:
        self.table: dict[tuple[str, str], Rating] = {}

    def get(self, player: str, variant: str) -> Rating:
        return self.table.get((player, variant), Rating())

    def load(self, player: str, variant: str, rating: Rating) -> None:
        self.table[player, variant] = rating

    def rate(self, variant: str, x: str, o: str, score_x: float) -> list[RatingSaved]:
        """Update both players after one game; ``score_x`` is 1, 0.5 or 0 for X."""
        before = {x: self.get(x, variant), o: self.get(o, variant)}
        saved = []
        for me, other, score in ((x, o, score_x), (o, x, 1.0 - score_x)):
            mine, theirs = before[me], before[other]
            player = glicko2.Player(rating=mine.rating, rd=mine.rd, vol=mine.vol)
            player.update_player([theirs.rating], [theirs.rd], [score])
            new = Rating(float(player.getRating()), float(player.getRd()), float(player.vol), mine.games + 1)
            self.table[me, variant] = new
            was = (mine.rating, mine.rd, mine.vol, mine.games)
            saved.append(RatingSaved(me, variant, new.rating, new.rd, new.vol, new.games, was))
        return saved

    def of_player(self, player: str) -> dict[str, int]:
        """Rounded rating per variant played."""
        return {v: round(r.rating) for (p, v), r in self.table.items() if p == player}

    def leaderboard(self, variant: str, limit: int) -> list[tuple[str, Rating]]:
        rows = [(p, r) for (p, v), r in self.table.items() if v == variant]
        rows.sort(key=lambda row: (-row[1].rating, row[1].rd, row[0]))
        return rows[:limit]
