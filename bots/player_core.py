"""The bot's decisions without sockets or clocks (sans-I/O): `BotCore`.

It takes server messages (and, when a tournament runner drives the bot, control
commands) and returns what to do: messages to send (`Send`), games whose turn it
is (`Think`), lines for the runner (`Report`). `bots.player` is the async shell.

Time is passed in (``now``, seconds on the caller's monotonic clock), never read.
Which challenges and rematches it takes is its `Policy` (`bots.policy`).
Each move's search budget comes from the game's clock (`bots.move_clock`):
what is left on it, minus a reserve for the network, shared with the other timed
games that wait for the bot's one search worker. `BotCore.plan` turns a `Think`
into a `Search`; the shell runs it off its event loop (`run_search`) and hands the
cell back to `BotCore.record`.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from bots.move_clock import (
    MIN_BUDGET_MS,
    MoveClock,
    budgeted,
    move_budget,
    moves_to_go,
    usable_ms,
)
from bots.policy import DEFAULT_LEVELS, Policy
from bots.tournament.match import Strategy, game_rng
from protocol import messages as m
from protocol import names
from protocol.rules import Cell, IllegalMove, Mark, State

__all__ = [
    "DEFAULT_LEVELS",
    "Action",
    "Assignment",
    "BotCore",
    "BotGame",
    "Policy",
    "Report",
    "Search",
    "Send",
    "Think",
    "run_search",
]


@dataclass(slots=True)
class Assignment:
    """What a tournament runner says about one game: its number and start moves."""

    number: int
    opening: tuple[Cell, ...] = ()
    #: The runner's time margin (``--timemargin``): on the server's clock, not to be planned on.
    margin_ms: int = 0


@dataclass(slots=True)
class BotGame:
    """A game this bot is seated in."""

    room: str
    mark: Mark
    variant: str
    ply_cap: int | None
    assignment: Assignment | None
    #: Moves the server played before the game (the challenge's start position).
    opening: tuple[Cell, ...] = ()
    #: The chance of a random move instead of the strategy's (the challenge's level).
    noise: float = 0.0
    game: str | None = None
    state: State | None = None
    rng: random.Random = field(default_factory=random.Random)
    used_ms: float = 0.0
    thinking: bool = False
    #: The (game, ply, cell) last answered, so a ply is never answered two ways.
    decided: tuple[str | None, int, Cell] | None = None
    #: The room's time control (None: not known, e.g. a game taken up after a restart).
    time_control: m.TimeControl | None = None
    #: This bot's clock, as last reported (None: no clock).
    clock: MoveClock | None = None
    #: The (game, ply) handed to the search worker and not recorded yet.
    planned: tuple[str | None, int] | None = None
    #: Keep the seat after the game, to answer a rematch like a person. A tournament's
    #: games (a runner's or a director's) are one each: the bot leaves after them.
    stay: bool = True
    #: Who challenged the bot to this game (`protocol.names.key` of the name), when it was
    #: a plain challenge: the policy limits games at once against one opponent.
    opponent: str | None = None

    def again(self) -> BotGame:
        """The next game in this room, a rematch: the same room, variant, opening and level."""
        rematch = BotGame(self.room, self.mark, self.variant, self.ply_cap, None, self.opening, self.noise)
        rematch.time_control = self.time_control
        rematch.opponent = self.opponent
        return rematch


@dataclass(frozen=True, slots=True)
class Send:
    message: m.ClientMessage


@dataclass(frozen=True, slots=True)
class Think:
    """It is this bot's turn in ``room``: think, then ask `BotCore.decide`."""

    room: str
    ply: int


@dataclass(frozen=True, slots=True)
class Search:
    """A move to find off the event loop (`run_search`), then to `BotCore.record`.

    Attributes:
        budget_ms: the search budget the clock allows (None: the strategy's own).
        cell: already chosen (a random move at the game's level): nothing to search.
    """

    room: str
    game: str | None
    ply: int
    state: State
    rng: random.Random
    budget_ms: int | None = None
    cell: Cell | None = None


def run_search(strategy: Strategy, search: Search) -> Cell:
    """``strategy.choose`` for ``search``, within its budget.

    A strategy that takes a budget (an int ``think_ms``, e.g. minimax, looked up
    through noise wrappers) gets the smaller of its own and the clock's for this
    call only. Calls must run one at a time: strategies keep state.
    """
    if search.cell is not None:
        return search.cell
    holder = budgeted(strategy) if search.budget_ms is not None else None
    if holder is None or search.budget_ms is None:
        return strategy.choose(search.state, search.rng)
    own: int = holder.think_ms
    holder.think_ms = max(MIN_BUDGET_MS, min(own, search.budget_ms))
    try:
        return strategy.choose(search.state, search.rng)
    finally:
        holder.think_ms = own


@dataclass(frozen=True, slots=True)
class Report:
    """A line for the runner (control mode)."""

    data: dict[str, Any]


Action = Send | Think | Report


class BotCore:
    """The bot's decisions, without sockets or clocks."""

    def __init__(self, name: str, strategy: Strategy, policy: Policy, seed: int = 0) -> None:
        self.name = name
        self.strategy = strategy
        self.policy = policy
        self.seed = seed
        self.games: dict[str, BotGame] = {}
        #: Rooms where this bot keeps its seat after a game, ready to answer a rematch.
        self.idle: dict[str, BotGame] = {}
        #: Runner's entrants: challenges from them wait for an `expect` (control mode).
        self.entrants: frozenset[str] = frozenset()
        self._expected: dict[str, deque[Assignment]] = {}
        self._parked: dict[str, deque[m.ChallengeReceived]] = {}
        #: Challenges accepted (by id) whose room is not joined yet: assignment, opening,
        #: level (noise) and whether to stay after the game.
        self._accepting: dict[str, tuple[Assignment | None, tuple[Cell, ...], float, bool]] = {}
        #: ...and who sent each of those that was a plain challenge (`BotGame.opponent`).
        self._accepting_from: dict[str, str] = {}
        #: Challenges this bot sent: ref -> assignment, then challenge id -> assignment.
        self._sent: dict[str, Assignment] = {}
        self._challenges: dict[str, Assignment] = {}
        self.stopping = False
        self.finished = 0
        #: Rooms the server says this player sits in from before this process (`Welcome.rooms`).
        self.seated_before: set[str] = set()
        #: The time of the message being handled (`receive`'s ``now``).
        self._now = 0.0

    @property
    def busy(self) -> int:
        """Games in progress or about to start."""
        return len(self.games) + len(self._accepting) + len(self._challenges) + len(self._sent)

    def games_with(self, opponent: str) -> int:
        """Games in progress or about to start that ``opponent`` challenged this bot to."""
        key = names.key(opponent)
        playing = sum(1 for game in self.games.values() if game.opponent == key)
        return playing + sum(1 for sender in self._accepting_from.values() if sender == key)

    # --- runner commands --------------------------------------------------------

    def command(self, cmd: dict[str, Any]) -> list[Action]:
        """Act on one runner command; a malformed one is reported back and changes nothing."""
        try:
            return self._command(cmd)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return [Report({"event": "error", "message": f"bad command {cmd!r}: {exc!r}"})]

    def _command(self, cmd: dict[str, Any]) -> list[Action]:
        kind = cmd.get("cmd")
        if kind == "entrants":
            self.entrants = frozenset(str(n) for n in cmd["names"])
            return []
        opening = tuple(int(c) for c in cmd.get("opening", ()))
        assignment = Assignment(int(cmd["number"]), opening, max(0, int(cmd.get("margin_ms") or 0)))
        if kind == "forget":  # the runner gave up on game N (its challenge failed): drop its expectation
            challenger = str(cmd["challenger"])
            queue = self._expected.get(challenger, deque())
            self._expected[challenger] = deque(x for x in queue if x.number != assignment.number)
            return []
        if kind == "expect":
            challenger = str(cmd["challenger"])
            parked = self._parked.get(challenger)
            if parked:
                return self._accept(parked.popleft(), assignment)
            self._expected.setdefault(challenger, deque()).append(assignment)
            return []
        if kind == "challenge":
            ref = f"ch-{assignment.number}"
            self._sent[ref] = assignment
            move_ms = cmd.get("move_ms")
            tc = cmd.get("time_control") or (m.PerMove(move_ms=int(move_ms)) if move_ms else m.NoClock())
            variant = str(cmd["variant"])
            challenge = m.Challenge(
                opponent=str(cmd["opponent"]),
                variant=variant,
                colour="x",
                time_control=tc,
                rated=False,
                opening=list(assignment.opening),
                ref=ref,
            )
            return [Send(challenge)]
        return [Report({"event": "error", "message": f"unknown command {kind!r}"})]

    # --- server messages ---------------------------------------------------------------

    def receive(self, message: m.ServerMessage, now: float = 0.0) -> list[Action]:
        """Act on one server message, received at ``now`` (seconds, the caller's monotonic clock)."""
        self._now = now
        handler = getattr(self, f"_on_{message.type}", None)
        return handler(message) if handler is not None else []

    def _on_challenge_received(self, msg: m.ChallengeReceived) -> list[Action]:
        """Take or decline a challenge. One a director arranged (``msg.opponent`` set: a
        tournament run against connected bots) is judged by the policy like any other;
        the `Joined` reply to the acceptance names the seat."""
        challenger = msg.challenger.name
        managed = challenger in self.entrants  # the runner schedules these: no policy applies
        against = 0 if managed or msg.opponent is not None else self.games_with(challenger)
        reason = (
            "shutting down"
            if self.stopping
            else None
            if managed
            else self.policy.refusal(msg, self.busy, against)
        )
        if reason is not None:
            return [Send(m.DeclineChallenge(challenge=msg.challenge, reason=reason))]
        if managed:
            expected = self._expected.get(challenger)
            if not expected:
                self._parked.setdefault(challenger, deque()).append(msg)
                return []
            return self._accept(msg, expected.popleft())
        return self._accept(msg, None)

    def _on_challenge_cancelled(self, msg: m.ChallengeCancelled) -> list[Action]:
        """A challenge withdrawn before this bot answered it: forget it if it was parked."""
        for queue in self._parked.values():
            for parked in [p for p in queue if p.challenge == msg.challenge]:
                queue.remove(parked)
        return []

    def _accept(self, msg: m.ChallengeReceived, assignment: Assignment | None) -> list[Action]:
        noise = self.policy.noise(msg.level)
        stay = assignment is None and msg.opponent is None  # not a tournament's game
        self._accepting[msg.challenge] = (assignment, tuple(msg.opening), noise, stay)
        if stay and msg.opponent is None:
            self._accepting_from[msg.challenge] = names.key(msg.challenger.name)
        return [Send(m.AcceptChallenge(challenge=msg.challenge, ref=f"acc-{msg.challenge}"))]

    def _on_challenge_sent(self, msg: m.ChallengeSent) -> list[Action]:
        assignment = self._sent.pop(msg.ref or "", None)
        if assignment is not None:
            self._challenges[msg.challenge] = assignment
        return []

    def _on_joined(self, msg: m.Joined) -> list[Action]:
        ref = msg.ref or ""
        if not ref.startswith("acc-") or msg.role == "spectator":
            return []
        assignment, opening, noise, stay = self._accepting.pop(ref[4:], (None, (), 0.0, True))
        opponent = self._accepting_from.pop(ref[4:], None)
        actions = self._seat(msg.room, msg.role, msg.snapshot, assignment, opening, noise, stay)
        game = self.games.get(msg.room)
        if game is not None:
            game.opponent = opponent
        return actions

    def _on_challenge_accepted(self, msg: m.ChallengeAccepted) -> list[Action]:
        assignment = self._challenges.pop(msg.challenge, None)
        opening = assignment.opening if assignment else ()
        return self._seat(msg.room, msg.role, msg.snapshot, assignment, opening)

    def _on_challenge_declined(self, msg: m.ChallengeDeclined) -> list[Action]:
        assignment = self._challenges.pop(msg.challenge, None)
        number = assignment.number if assignment else None
        return [Report({"event": "declined", "number": number, "by": msg.by, "reason": msg.reason})]

    def _on_error(self, msg: m.Error) -> list[Action]:
        ref = msg.ref or ""
        if ref.startswith("ch-"):
            assignment = self._sent.pop(ref, None)
            number = assignment.number if assignment else None
            return [Report({"event": "declined", "number": number, "by": None, "reason": msg.code})]
        if ref.startswith("acc-"):
            self._accepting.pop(ref[4:], None)
            self._accepting_from.pop(ref[4:], None)
        if ref.startswith("rm-"):  # the rematch fell through (the other player left meanwhile)
            room = ref[3:]
            game = self.games.get(room)
            if game is not None and game.game is None:
                del self.games[room]
                return [Send(m.Leave(room=room))]
        return []

    def _seat(
        self,
        room: str,
        role: str,
        snap: m.RoomSnapshot,
        assignment: Assignment | None,
        opening: tuple[Cell, ...],
        noise: float = 0.0,
        stay: bool = True,
    ) -> list[Action]:
        game = BotGame(
            room, m.mark_named(role), snap.room.variant, snap.room.ply_cap, assignment, opening, noise
        )
        game.time_control = snap.room.time_control
        game.stay = stay and assignment is None
        self.idle.pop(room, None)
        self.games[room] = game
        if snap.game is not None:
            return self._load(game, snap.game)
        return []

    def _load(self, game: BotGame, snap: m.GameSnapshot) -> list[Action]:
        """Take the game from a snapshot (on joining, or after a reconnect)."""
        if snap.result is not None:
            return self._ended(game, snap.result)
        if game.game != snap.game:
            self._start(game, snap.game, snap.x, snap.o)
        try:
            game.state = State.replay(game.variant, snap.moves, ply_cap=game.ply_cap)
        except IllegalMove:
            return []
        self._read_clock(game, snap.clocks)
        return self._maybe_think(game)

    def _start(self, game: BotGame, game_id: str, x: str, o: str) -> None:
        game.game = game_id
        game.mark = Mark.X if x == self.name else Mark.O
        game.state = State.replay(game.variant, game.opening, ply_cap=game.ply_cap)
        if game.assignment is not None:
            game.rng = game_rng(self.seed, game.assignment.number, game.mark)
        else:
            game.rng = random.Random(f"{self.seed}/{game_id}/{game.mark.name}")

    def _on_game_started(self, msg: m.GameStarted) -> list[Action]:
        game = self.games.get(msg.room)
        if game is None and (game := self._adopt(msg.room, msg.variant, None, msg.x, msg.o)) is not None:
            game.opening = tuple(msg.opening)
        if game is None or game.game == msg.game:
            return []  # not ours, or already known from the snapshot that seated us
        self._start(game, msg.game, msg.x, msg.o)
        self._read_clock(game, msg.clocks, msg.first_move_ms)
        return self._maybe_think(game)

    def _adopt(self, room: str, variant: str, ply_cap: int | None, x: str, o: str) -> BotGame | None:
        """A game this bot sits in but did not ask for: one from before this process
        started (its token found it seated), resumed from the start of the room."""
        if self.name not in (x, o) or room not in self.seated_before:
            return None
        game = BotGame(room, Mark.X if x == self.name else Mark.O, variant, ply_cap, None)
        self.games[room] = game
        return game

    def _read_clock(self, game: BotGame, clocks: m.Clocks, first_move_ms: int | None = None) -> None:
        """Keep this bot's time from ``clocks`` (read now). On its turn the clock is taken
        as running from now even before the first move, which has its own deadline."""
        left = clocks.x_ms if game.mark is Mark.X else clocks.o_ms
        if left is None:
            game.clock = None
            return
        margin = game.assignment.margin_ms if game.assignment is not None else 0
        left -= margin  # the runner's time margin is for overruns, not for thinking
        state = game.state
        my_turn = state is not None and not state.is_over and state.to_move is game.mark
        if my_turn and clocks.running is None and first_move_ms is not None:
            left = min(left, first_move_ms)
        control = game.time_control
        game.clock = MoveClock(
            left_ms=float(left),
            seen=self._now,
            running=my_turn,
            increment_ms=control.increment_ms if isinstance(control, m.Increment) else 0,
            per_move=isinstance(control, m.PerMove),
            margin_ms=margin,
        )

    def _on_moved(self, msg: m.Moved) -> list[Action]:
        game = self.games.get(msg.room)
        if game is None or game.state is None or msg.game != game.game or msg.ply != game.state.ply + 1:
            return []
        try:
            game.state = game.state.play(msg.cell)
        except IllegalMove:
            return []
        self._read_clock(game, msg.clocks)
        return self._maybe_think(game)

    def _on_game_over(self, msg: m.GameEnded) -> list[Action]:
        game = self.games.get(msg.room)
        if game is None or msg.game != game.game:
            return []
        return self._ended(game, msg.outcome)

    def _on_snapshot(self, msg: m.Snapshot) -> list[Action]:
        snap = msg.snapshot
        game = self.games.get(msg.room)
        if game is None and msg.room not in self.idle and snap.game is not None:
            game = self._adopt(msg.room, snap.room.variant, snap.room.ply_cap, snap.game.x, snap.game.o)
            if game is not None:
                game.time_control = snap.room.time_control
        actions: list[Action] = []
        if game is not None and snap.game is not None:
            actions = self._load(game, snap.game)
        idle = self.idle.get(msg.room)
        if idle is None:
            return actions
        seats = snap.room.seats
        if seats.x is None or seats.o is None:  # the other player left while this bot was away
            return actions + self._stand_up(msg.room)
        if idle.mark.other.name.lower() in snap.rematch:  # offered while this bot was away
            return actions + self._answer_rematch(idle)
        return actions

    def _on_room_closed(self, msg: m.RoomClosed) -> list[Action]:
        self.games.pop(msg.room, None)
        self.idle.pop(msg.room, None)
        return []

    # --- after a game: rematch or leave -------------------------------------------------

    def _on_rematch_offered(self, msg: m.RematchOffered) -> list[Action]:
        idle = self.idle.get(msg.room)
        if idle is None or msg.by == self.name:
            return []
        return self._answer_rematch(idle)

    def _answer_rematch(self, idle: BotGame) -> list[Action]:
        """Play again if free to (within ``max_games``, a variant it plays); else leave, saying why."""
        del self.idle[idle.room]
        reason = "shutting down" if self.stopping else self.policy.rematch_refusal(idle.variant, self.busy)
        if reason is not None:
            report = Report({"event": "rematch_declined", "room": idle.room, "reason": reason})
            return [report, Send(m.Leave(room=idle.room))]
        self.games[idle.room] = idle.again()
        return [Send(m.Rematch(room=idle.room, ref=f"rm-{idle.room}"))]

    def _on_seats(self, msg: m.SeatsChanged) -> list[Action]:
        """The other player stood up after the game (or before a rematch began): leave too."""
        if msg.seats.x is not None and msg.seats.o is not None:
            return []
        pending = self.games.get(msg.room)
        if msg.room in self.idle or (pending is not None and pending.game is None and pending.stay):
            return self._stand_up(msg.room)
        return []

    def _stand_up(self, room: str) -> list[Action]:
        self.idle.pop(room, None)
        self.games.pop(room, None)
        return [Send(m.Leave(room=room))]

    def _on_resumed(self, msg: m.Resumed) -> list[Action]:
        """Back after a drop (or a server restart): the server withdrew every challenge of
        the old connection, so the runner's games still waiting for one are reported
        ``lost`` (by X, who sent the challenge), as are its games whose room is gone."""
        lost = [*self._sent.values(), *self._challenges.values()]
        self._sent.clear()
        self._challenges.clear()
        self._parked.clear()
        self._accepting.clear()
        self._accepting_from.clear()
        # rooms this player sits in and this process has not seen: games from an earlier run
        self.seated_before.update(r for r, how in msg.rooms.items() if how != "gone" and r not in self.games)
        for room, how in msg.rooms.items():
            if how == "gone":
                self.idle.pop(room, None)
                gone = self.games.pop(room, None)
                if gone is not None and gone.assignment is not None and gone.mark is Mark.X:
                    lost.append(gone.assignment)
        actions: list[Action] = [
            Report({"event": "lost", "number": a.number, "reason": "connection lost"})
            for a in sorted(lost, key=lambda a: a.number)
        ]
        for game in self.games.values():
            game.thinking = False  # a move lost with the connection is made again
            actions += self._maybe_think(game)
        return actions

    def _ended(self, game: BotGame, outcome: m.Result) -> list[Action]:
        del self.games[game.room]
        self.finished += 1
        moves = list(game.state.moves) if game.state is not None else []
        report = {
            "event": "game_over",
            "number": game.assignment.number if game.assignment else None,
            "game": game.game,
            "room": game.room,
            "mark": game.mark.name.lower(),
            "moves": moves,
            "result": outcome.result,
            "reason": outcome.reason,
            "time_ms": round(game.used_ms),
        }
        if game.stay and not self.stopping:
            self.idle[game.room] = game  # keeps its seat: a rematch may be offered
            return [Report(report)]
        return [Report(report), Send(m.Leave(room=game.room))]

    def _maybe_think(self, game: BotGame) -> list[Action]:
        state = game.state
        if state is None or state.is_over or state.to_move is not game.mark or game.thinking:
            return []
        game.thinking = True
        return [Think(game.room, state.ply)]

    # --- moving -----------------------------------------------------------------------

    def plan(self, room: str, ply: int, now: float = 0.0, waiting: int = 0) -> Search | m.Move | None:
        """What to do for the `Think` (``room``, ``ply``) at ``now``, when the worker is free.

        Returns None if the game moved on meanwhile; the move already chosen for this
        ply if it was asked before (a resend after a drop: the same answer, without
        drawing random numbers again); else a `Search` with the budget the clock
        allows (``waiting``: moves queued behind it for the worker).
        """
        game = self.games.get(room)
        if game is None or game.state is None or game.state.ply != ply or game.state.is_over:
            return None
        if game.decided is not None and game.decided[:2] == (game.game, ply):
            game.thinking = False
            return m.Move(room=room, cell=game.decided[2])
        state = game.state
        game.planned = (game.game, ply)
        if game.noise and game.rng.random() < game.noise:
            return Search(room, game.game, ply, state, game.rng, cell=game.rng.choice(state.legal_moves()))
        others = [
            g.clock
            for g in self.games.values()
            if g is not game
            and g.clock is not None
            and g.state is not None
            and not g.state.is_over
            and g.planned != (g.game, g.state.ply)  # already searched, about to move
        ]
        budget = move_budget(game.clock, now, moves_to_go=moves_to_go(state), others=others, waiting=waiting)
        return Search(room, game.game, ply, state, game.rng, budget)

    def record(self, search: Search, cell: Cell, now: float = 0.0) -> m.Move | None:
        """The move to send for ``search``, whose answer is ``cell`` (found by ``now``);
        None if the game moved on meanwhile."""
        game = self.games.get(search.room)
        if game is None or game.game != search.game:
            return None
        game.thinking = False
        game.planned = None
        if game.state is None or game.state.ply != search.ply or game.state.is_over:
            return None
        game.decided = (game.game, search.ply, cell)
        if game.clock is not None:
            game.clock = game.clock.after_move(now, game.time_control)
        return m.Move(room=search.room, cell=cell)

    def decide(self, room: str, ply: int, now: float = 0.0) -> m.Move | None:
        """`plan`, `run_search` and `record` in one call: the move for ``room`` at ``ply``;
        None if the game moved on meanwhile."""
        job = self.plan(room, ply, now)
        if isinstance(job, Search):
            return self.record(job, run_search(self.strategy, job), now)
        return job

    def due(self, room: str) -> float:
        """When this bot's clock in ``room`` falls (``inf``: not running or no clock): the
        worker takes the most urgent move first."""
        game = self.games.get(room)
        clock = game.clock if game is not None else None
        if clock is None or not clock.running:
            return math.inf
        return clock.seen + clock.left_ms / 1000.0

    def pause_ms(self, room: str, began: float, now: float) -> float:
        """How much longer to wait before sending a move found at ``now`` for a turn that
        began at ``began``: up to the policy's ``think_ms``, never past the usable time."""
        wanted = self.policy.think_ms - (now - began) * 1000.0
        game = self.games.get(room)
        if wanted <= 0 or game is None:
            return 0.0
        if game.clock is not None:
            wanted = min(wanted, usable_ms(game.clock.left(now)))
        return max(0.0, wanted)

    def spent(self, room: str, ms: float) -> None:
        game = self.games.get(room)
        if game is not None:
            game.used_ms += ms

    def resign_all(self) -> list[Action]:
        """On shutdown: give up every game in progress and every seat kept for a rematch
        (opponents need not wait)."""
        self.stopping = True
        actions: list[Action] = [
            Send(m.Resign(room=room)) for room, g in self.games.items() if g.state and not g.state.is_over
        ]
        actions += [Send(m.Leave(room=room)) for room in self.idle]
        self.idle.clear()
        return actions
