"""A knockout bracket (cutechess-cli's ``-tournament knockout``). Pure: no I/O.

Entries are seeded in entry order. The bracket has the next power of two of places,
laid out so that seeds 1 and 2 can meet only in the final (1 v 8, 4 v 5, 2 v 7, 3 v 6
for eight); the top seeds get the byes of a field that does not fill it. A match is
``games_per_pair`` games in colour-swapped pairs; the one with more points goes
through. A tied match plays one more pair, up to `TIEBREAK_PAIRS` of them, and is then
won by the higher seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bots.tournament.pairing import Pairing
from bots.tournament.standings import PlayedGame

#: Extra colour-swapped pairs a tied match plays before the higher seed goes through.
TIEBREAK_PAIRS = 3


def bracket_order(size: int) -> list[int]:
    """Seeds (1-based) in bracket order for ``size`` places (a power of two): neighbours meet
    first, and seed s meets seed ``size + 1 - s`` in the first round."""
    order = [1]
    while len(order) < size:
        n = 2 * len(order)
        order = [seed for s in order for seed in (s, n + 1 - s)]
    return order


@dataclass
class Match:
    """Two entries of one round, and how their games went so far."""

    round: int
    first: str
    second: str
    games_left: int
    points: dict[str, float] = field(default_factory=dict)
    tiebreak_pairs: int = 0
    winner: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "players": [self.first, self.second],
            "points": [self.points.get(self.first, 0.0), self.points.get(self.second, 0.0)],
            "tiebreak_pairs": self.tiebreak_pairs,
            "winner": self.winner,
        }


@dataclass
class Bracket:
    """The knockout of ``players`` (seeded in order), fed finished games."""

    players: tuple[str, ...]
    games_per_pair: int
    round: int = 0
    matches: list[Match] = field(default_factory=list)
    #: Entries still in, in bracket order (None: an empty place, a bye for its neighbour).
    field_: list[str | None] = field(default_factory=list)
    champion: str | None = None

    def __post_init__(self) -> None:
        size = 1 << (len(self.players) - 1).bit_length()
        self.field_ = [self.players[s - 1] if s <= len(self.players) else None for s in bracket_order(size)]
        self._seed = {p: i for i, p in enumerate(self.players)}

    def next_round(self) -> list[Pairing]:
        """The pairings of the next round (a bye goes through without a game)."""
        self.round += 1
        pairings = []
        for i in range(0, len(self.field_), 2):
            a, b = self.field_[i], self.field_[i + 1]
            if a is not None and b is not None:
                first, second = (a, b) if self._seed[a] < self._seed[b] else (b, a)
                self.matches.append(Match(self.round, first, second, self.games_per_pair))
                pairings.append(Pairing(self.round, first, second))
        return pairings

    def finished(self, record: PlayedGame) -> tuple[Pairing | None, bool]:
        """Count ``record``: (a tie-break pair to play, whether the round is over)."""
        s = record.spec
        match = next(
            m
            for m in self.matches
            if m.round == s.round and {m.first, m.second} == {s.x, s.o} and not m.winner
        )
        for player in (s.x, s.o):
            match.points[player] = match.points.get(player, 0.0) + record.points(player)
        match.games_left -= 1
        if match.games_left == 0:
            a, b = match.points.get(match.first, 0.0), match.points.get(match.second, 0.0)
            if a == b and match.tiebreak_pairs < TIEBREAK_PAIRS:
                match.tiebreak_pairs += 1
                match.games_left = 2
                return Pairing(match.round, match.first, match.second), False
            match.winner = match.first if a >= b else match.second  # a tie: the higher seed
        round_over = all(m.winner for m in self.matches if m.round == self.round)
        if round_over:
            self._advance()
        return None, round_over

    def _advance(self) -> None:
        winners = {m.winner for m in self.matches if m.round == self.round}
        survivors: list[str | None] = []
        for i in range(0, len(self.field_), 2):
            a, b = self.field_[i], self.field_[i + 1]
            survivors.append(a if a in winners or b is None else b)
        self.field_ = survivors
        if len(survivors) == 1:
            self.champion = survivors[0]

    @property
    def over(self) -> bool:
        return self.champion is not None

    def to_json(self) -> dict[str, Any]:
        return {"champion": self.champion, "matches": [m.to_json() for m in self.matches]}
