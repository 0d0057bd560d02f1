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

from bots.tournament.pairing import (
    GameSpec,
    Opening,
    Pairing,
    TournamentError,
    check_games_per_pair,
    check_players,
    expand,
    gauntlet,
    round_robin,
    swiss_round,
)
from bots.tournament.standings import GameRecord, Standings
from bots.tournament.stats import Sprt, SprtDecision, SprtStatus
from protocol.rules import Cell


class Format(enum.StrEnum):
    ROUND_ROBIN = "round-robin"
    GAUNTLET = "gauntlet"
    SWISS = "swiss"
    SPRT = "sprt"  # two players, colour-swapped pairs until the SPRT decides


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """What a tournament is.

    Attributes:
        players: entry names; in a gauntlet the first is the one against the rest.
        games_per_pair: games each pairing plays (even: colour-swapped pairs).
        concurrency: games running at once, at most.
        openings: start positions; pair ``j`` of a pairing uses ``openings[j % len]``.
        rounds: Swiss rounds (default: one fewer than the players, rounded up to even).
        sprt: the test of an SPRT match; ``max_games`` caps it.
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
        if self.rounds is not None and self.rounds < 1:
            raise TournamentError(f"rounds must be at least 1, not {self.rounds}")


@dataclass
class Director:
    """Schedules the games of one tournament as they can run. Feed it `finished` events."""

    config: TournamentConfig
    standings: Standings = field(init=False)
    records: list[GameRecord] = field(init=False, default_factory=list)
    running: dict[int, GameSpec] = field(init=False, default_factory=dict)
    sprt_status: SprtStatus | None = field(init=False, default=None)
    round: int = field(init=False, default=0)
    _pending: deque[GameSpec] = field(init=False, default_factory=deque)
    _scheduled: int = field(init=False, default=0)
    _round_left: int = field(init=False, default=0)
    _met: dict[str, set[str]] = field(init=False, default_factory=dict)
    _byes: dict[str, int] = field(init=False, default_factory=dict)
    _firsts: dict[str, int] = field(init=False, default_factory=dict)
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

    #: Why the tournament ended before its schedule did, if it did.
    ended_early: str | None = field(init=False, default=None)

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
        record = GameRecord(spec, result, reason, tuple(moves), time_ms, game_id)  # checks the result
        del self.running[number]
        self.records.append(record)
        self.standings.add(record)
        if self.config.format is Format.SWISS and spec.round == self.round:
            self._round_left -= 1
            if self._round_left == 0 and self.round < self.swiss_rounds:
                self._next_swiss_round()
        if self.config.format is Format.SPRT:
            self._judge()
        return self._fill()

    @property
    def done(self) -> bool:
        """No game running and none left to start."""
        return self._started and not self.running and not self._pending and not self._more_sprt()

    @classmethod
    def resume(
        cls, config: TournamentConfig, records: Iterable[GameRecord]
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
        games = expand(pairings, c.games_per_pair, c.openings, first_number=self._scheduled + 1)
        self._scheduled += len(games)
        self._pending.extend(games)

    def _next_swiss_round(self) -> None:
        self.round += 1
        order = {p: i for i, p in enumerate(self.config.players)}
        ranking = sorted(self.config.players, key=lambda p: (-self.standings.rows[p].points, order[p]))
        try:
            pairings, bye = swiss_round(ranking, self._met, self._byes, self.round, self._firsts)
        except TournamentError as exc:
            self.ended_early = exc.message  # too many rounds for these players: stop here
            return
        for p in pairings:
            self._met[p.first].add(p.second)
            self._met[p.second].add(p.first)
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
            and self._scheduled < c.max_games
            and (self.sprt_status is None or self.sprt_status.decision is SprtDecision.CONTINUE)
        )

    def _take(self) -> GameSpec:
        """Move the next game from the queue to running (an SPRT match makes its next pair here)."""
        if not self._pending:
            a, b = self.config.players
            pair = self._scheduled // 2
            x, o = (a, b) if pair % 2 == 0 else (b, a)
            opening = tuple(self.config.openings[pair % len(self.config.openings)])
            n = self._scheduled
            self._pending.extend(
                [GameSpec(n + 1, 1, pair, x, o, opening), GameSpec(n + 2, 1, pair, o, x, opening)]
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
        self.sprt_status = sprt.status(self.standings.pentanomial(a, b))
        if self.sprt_status.decision is not SprtDecision.CONTINUE:
            self._pending.clear()  # decided: start nothing more; running games still count
