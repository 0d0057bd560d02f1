"""The tournament director: a sans-I/O object that says which games to start next.

It is told when a game finishes (result and reason) and answers with the games to
start now, never more running at once than the concurrency allows. It keeps the
standings. It never reads a clock, a socket or a random source, so the same events
give the same tournament; the runners (`bots.tournament.match` in-process, the
networked runner through a server) only carry games out.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bots.tournament.knockout import Bracket
from bots.tournament.pairing import (
    GameSpec,
    Opening,
    Pairing,
    TournamentError,
    check_games_per_pair,
    check_players,
    expand,
    gauntlet,
    pair_colours,
    round_robin,
    swiss_round,
)
from bots.tournament.standings import PlayedGame, Standings
from bots.tournament.stats import Sprt, SprtDecision, SprtStatus, Trinomial
from protocol.rules import Cell


class Format(enum.StrEnum):
    ROUND_ROBIN = "round-robin"
    GAUNTLET = "gauntlet"
    SWISS = "swiss"
    SPRT = "sprt"  # two players, colour-swapped pairs until the SPRT decides
    KNOCKOUT = "knockout"  # seeded bracket; a tied match plays tie-break pairs


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """What a tournament is.

    Attributes:
        players: entry names; in a gauntlet the first is the one against the rest.
        games_per_pair: games each pairing plays (even: colour-swapped pairs).
        concurrency: games running at once, at most.
        openings: start positions; pair ``j`` of a pairing uses ``openings[j % len]``.
        rounds: Swiss rounds (default: one fewer than the players, rounded up to even).
        sprt: the test of an SPRT match; ``max_games`` caps it (whole pairs: 5 plays 4).
    """

    variant: str
    players: tuple[str, ...]
    format: Format = Format.ROUND_ROBIN
    games_per_pair: int = 2
    concurrency: int = 1
    openings: tuple[Opening, ...] = ((),)
    rounds: int | None = None
    sprt: Sprt | None = None
    max_games: int = 10_000
    #: The colours of a pair's two games: ``swap``, ``reverse`` or ``noswap`` (`pair_colours`).
    colours: str = "swap"
    #: Adjudication: a game still going after this many plies (the opening's included) is
    #: a draw, reason ``adjudication``, recorded as it stood at that ply (`adjudicate`).
    max_plies: int | None = None

    def __post_init__(self) -> None:
        check_players(self.players)
        if self.concurrency < 1:
            raise TournamentError(f"concurrency must be at least 1, not {self.concurrency}")
        if self.format is Format.SPRT:
            if len(self.players) != 2 or self.sprt is None:
                raise TournamentError("an SPRT match needs exactly 2 players and elo0/elo1")
            if self.max_games < 2:
                raise TournamentError(f"an SPRT match needs max_games of at least 2, not {self.max_games}")
        else:
            check_games_per_pair(self.games_per_pair)
        pair_colours("a", "b", self.colours)  # checks the name
        if self.max_plies is not None and self.max_plies < 1:
            raise TournamentError(f"max plies must be at least 1, not {self.max_plies}")
        if self.rounds is not None and self.rounds < 1:
            raise TournamentError(f"rounds must be at least 1, not {self.rounds}")


def adjudicate(
    max_plies: int | None, result: str, reason: str, moves: Sequence[Cell]
) -> tuple[str, str, Sequence[Cell]]:
    """A game that went past ``max_plies`` as adjudicated: a draw at that ply. A runner
    that cannot stop a game there (a server's game goes on) gets the same record as one
    that stops it (`play_match`), so both runners agree."""
    if max_plies is None or len(moves) <= max_plies:
        return result, reason, moves
    return "1/2-1/2", "adjudication", moves[:max_plies]


@dataclass
class Director:
    """Schedules the games of one tournament as they can run. Feed it `finished` events."""

    config: TournamentConfig
    standings: Standings = field(init=False)
    records: list[PlayedGame] = field(init=False, default_factory=list)
    running: dict[int, GameSpec] = field(init=False, default_factory=dict)
    sprt_status: SprtStatus | None = field(init=False, default=None)
    round: int = field(init=False, default=0)
    _pending: deque[GameSpec] = field(init=False, default_factory=deque)
    _scheduled: int = field(init=False, default=0)
    _round_left: int = field(init=False, default=0)
    _met: dict[str, set[str]] = field(init=False, default_factory=dict)
    _byes: dict[str, int] = field(init=False, default_factory=dict)
    _firsts: dict[str, int] = field(init=False, default_factory=dict)
    _met_counts: dict[tuple[str, str], int] = field(init=False, default_factory=dict)
    #: Pairings scheduled so far (the opening suite goes round by them).
    _pairings: int = field(init=False, default=0)
    _started: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        c = self.config
        self.standings = Standings(c.players, c.games_per_pair)
        self._met = {p: set() for p in c.players}
        if c.format is Format.ROUND_ROBIN:
            self._queue(round_robin(c.players))
        elif c.format is Format.GAUNTLET:
            self._queue(gauntlet(c.players[0], c.players[1:]))
        elif c.format is Format.SWISS:
            self._next_swiss_round()
        elif c.format is Format.KNOCKOUT:
            self.bracket = Bracket(c.players, c.games_per_pair)
            self._queue(self.bracket.next_round())
            self.round = self.bracket.round

    #: A knockout's bracket (None in other formats).
    bracket: Bracket | None = field(init=False, default=None)
    #: Why the tournament ended before its schedule did, if it did.
    ended_early: str | None = field(init=False, default=None)
    #: An SPRT match: the games recorded when the test decided (None while it runs).
    sprt_decided_at: int | None = field(init=False, default=None)
    #: Games running when an SPRT decided: called off, never recorded.
    called_off: list[GameSpec] = field(init=False, default_factory=list)

    @property
    def swiss_rounds(self) -> int:
        """Rounds of a Swiss: as asked, else ceil(log2 n) + 1, at most a full round-robin's."""
        n = len(self.config.players)
        full = n - 1 if n % 2 == 0 else n
        return self.config.rounds or min(full, (n - 1).bit_length() + 1)

    # --- events ---------------------------------------------------------------

    def start(self) -> list[GameSpec]:
        """The first games to start."""
        if self._started:
            raise TournamentError("the tournament has already started")
        self._started = True
        return self._fill()

    def finished(
        self,
        number: int,
        result: str,
        reason: str,
        moves: Sequence[Cell] = (),
        time_ms: tuple[int, int] = (0, 0),
        game_id: str | None = None,
    ) -> list[GameSpec]:
        """Record that game ``number`` ended; the games to start now.

        Raises:
            TournamentError: ``number`` is not a running game (unknown, or already
                finished). Nothing changes.
        """
        spec = self.running.get(number)
        if spec is None:
            raise TournamentError(f"game {number} is not running in this tournament")
        result, reason, moves = adjudicate(self.config.max_plies, result, reason, moves)
        record = PlayedGame(spec, result, reason, tuple(moves), time_ms, game_id)  # checks the result
        del self.running[number]
        self.records.append(record)
        self.standings.add(record)
        if self.config.format is Format.SWISS and spec.round == self.round:
            self._round_left -= 1
            if self._round_left == 0 and self.round < self.swiss_rounds:
                self._next_swiss_round()
        if self.config.format is Format.SPRT:
            self._judge()
        if self.bracket is not None:
            self._knockout(record)
        return self._fill()

    def _knockout(self, record: PlayedGame) -> None:
        assert self.bracket is not None
        tiebreak, round_over = self.bracket.finished(record)
        if tiebreak is not None:  # one more colour-swapped pair of the tied match
            c, s = self.config, record.spec
            pair = (
                max(
                    g.spec.pair
                    for g in self.records
                    if g.spec.round == s.round and set(g.spec.players) == {*s.players}
                )
                + 1
            )
            opening = tuple(c.openings[(self._pairings + pair) % len(c.openings)])
            n = self._scheduled
            (x1, o1), (x2, o2) = pair_colours(tiebreak.first, tiebreak.second, c.colours)
            self._pending.extend(
                [
                    GameSpec(n + 1, s.round, pair, x1, o1, opening),
                    GameSpec(n + 2, s.round, pair, x2, o2, opening),
                ]
            )
            self._scheduled += 2
        elif round_over and not self.bracket.over:
            self._queue(self.bracket.next_round())
            self.round = self.bracket.round

    @property
    def done(self) -> bool:
        """No game running and none left to start."""
        return self._started and not self.running and not self._pending and not self._more_sprt()

    @classmethod
    def resume(
        cls, config: TournamentConfig, records: Iterable[PlayedGame]
    ) -> tuple[Director, list[GameSpec]]:
        """A director that has seen ``records`` (in order), and the games to (re)start.

        Games that were running when the records were saved are started again.
        """
        director = cls(config)
        director._started = True
        for record in records:
            s = record.spec
            while s.number not in director.running:
                if not director._pending and not director._more_sprt():
                    raise TournamentError(f"game {s.number} is not part of this tournament")
                director._take()
            if director.running[s.number] != s:
                raise TournamentError(f"game {s.number} does not match the schedule")
            director.finished(
                s.number, record.result, record.reason, record.moves, record.time_ms, record.game_id
            )
        to_start = sorted(director.running.values(), key=lambda g: g.number)
        return director, to_start + director._fill()

    # --- scheduling -------------------------------------------------------------

    def _queue(self, pairings: Sequence[Pairing]) -> None:
        c = self.config
        games = expand(
            pairings,
            c.games_per_pair,
            c.openings,
            first_number=self._scheduled + 1,
            first_pairing=self._pairings,
            colours=c.colours,
        )
        self._scheduled += len(games)
        self._pairings += len(pairings)
        self._pending.extend(games)

    def _next_swiss_round(self) -> None:
        self.round += 1
        order = {p: i for i, p in enumerate(self.config.players)}
        ranking = sorted(self.config.players, key=lambda p: (-self.standings.rows[p].points, order[p]))
        pairings, bye = swiss_round(
            ranking, self._met, self._byes, self.round, self._firsts, self._met_counts
        )
        for p in pairings:
            self._met[p.first].add(p.second)
            self._met[p.second].add(p.first)
            for key in ((p.first, p.second), (p.second, p.first)):
                self._met_counts[key] = self._met_counts.get(key, 0) + 1
            self._firsts[p.first] = self._firsts.get(p.first, 0) + 1
        if bye is not None:
            self._byes[bye] = self._byes.get(bye, 0) + 1
            self.standings.add_bye(bye)
        self._round_left = len(pairings) * self.config.games_per_pair
        self._queue(pairings)

    def _more_sprt(self) -> bool:
        c = self.config
        return (
            c.format is Format.SPRT
            and self._scheduled + 2 <= c.max_games  # whole pairs only
            and (self.sprt_status is None or self.sprt_status.decision is SprtDecision.CONTINUE)
        )

    def _take(self) -> GameSpec:
        """Move the next game from the queue to running (an SPRT match makes its next pair here)."""
        if not self._pending:
            a, b = self.config.players
            pair = self._scheduled // 2
            first, second = (a, b) if pair % 2 == 0 else (b, a)
            (x1, o1), (x2, o2) = pair_colours(first, second, self.config.colours)
            opening = tuple(self.config.openings[pair % len(self.config.openings)])
            n = self._scheduled
            self._pending.extend(
                [GameSpec(n + 1, 1, pair, x1, o1, opening), GameSpec(n + 2, 1, pair, x2, o2, opening)]
            )
            self._scheduled += 2
        spec = self._pending.popleft()
        self.running[spec.number] = spec
        return spec

    def _fill(self) -> list[GameSpec]:
        started = []
        while len(self.running) < self.config.concurrency and (self._pending or self._more_sprt()):
            started.append(self._take())
        return started

    def _judge(self) -> None:
        sprt = self.config.sprt
        assert sprt is not None
        a, b = self.config.players
        # pairs (pentanomial), except for the BayesElo model, which counts games
        counts = self.standings.cross.get((a, b), Trinomial()) if sprt.model == "bayesian" else None
        self.sprt_status = sprt.status(counts or self.standings.pentanomial(a, b))
        if self.sprt_status.decision is not SprtDecision.CONTINUE:
            # decided: start nothing more, and call off the games still running (the
            # runners stop them), so the figures are those of the decision
            self.sprt_decided_at = len(self.records)
            self._pending.clear()
            self.called_off = sorted(self.running.values(), key=lambda g: g.number)
            self.running.clear()
