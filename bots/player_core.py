"""The bot's decisions without sockets or clocks (sans-I/O): `BotCore`.

It takes server messages (and, when a tournament runner drives the bot, control
commands) and returns what to do: messages to send (`Send`), games whose turn it
is (`Think`), lines for the runner (`Report`). `bots.player` is the async shell.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from bots.tournament.match import Strategy, game_rng
from protocol import messages as m
from protocol.rules import Cell, IllegalMove, Mark, State

_MARKS = {"x": Mark.X, "o": Mark.O}

#: Levels a bot offers by default: name -> the chance of a random move instead of its own.
DEFAULT_LEVELS: tuple[tuple[str, float], ...] = (
    ("easy", 0.5),
    ("medium", 0.25),
    ("hard", 0.1),
    ("best", 0.0),
)


@dataclass(frozen=True, slots=True)
class Policy:
    """Which challenges a bot takes.

    Attributes:
        variants: variant names it plays (None: any).
        max_games: games at once, at most.
        think_ms: how long it pretends to think before each move.
        levels: the levels of play it offers, weakest first, each with its chance of
            a random move (a challenge names one to make the bot easier to beat).
    """

    variants: frozenset[str] | None = None
    max_games: int = 16
    think_ms: int = 0
    levels: tuple[tuple[str, float], ...] = DEFAULT_LEVELS

    def noise(self, level: str | None) -> float:
        """The chance of a random move at ``level`` (0 for none or an unknown one)."""
        return dict(self.levels).get(level or "", 0.0)

    def refusal(self, challenge: m.ChallengeReceived, busy: int) -> str | None:
        """Why ``challenge`` is declined, or None to accept it."""
        if self.variants is not None and challenge.variant not in self.variants:
            return f"I play {', '.join(sorted(self.variants))}, not {challenge.variant}"
        if busy >= self.max_games:
            return f"busy: already {busy} games (at most {self.max_games} at once)"
        tc = challenge.time_control
        margin = self.think_ms + 100
        if isinstance(tc, m.PerMove) and tc.move_ms < margin:
            return f"too fast for me: I need at least {margin} ms a move"
        if isinstance(tc, m.Increment) and tc.base_ms + tc.increment_ms < margin:
            return f"too fast for me: I need at least {margin} ms for a move"
        return None


@dataclass(slots=True)
class Assignment:
    """What a tournament runner says about one game: its number and start moves."""

    number: int
    opening: tuple[Cell, ...] = ()


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


@dataclass(frozen=True, slots=True)
class Send:
    message: m.ClientMessage


@dataclass(frozen=True, slots=True)
class Think:
    """It is this bot's turn in ``room``: think, then ask `BotCore.decide`."""

    room: str
    ply: int


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
        #: Runner's entrants: challenges from them wait for an `expect` (control mode).
        self.entrants: frozenset[str] = frozenset()
        self._expected: dict[str, deque[Assignment]] = {}
        self._parked: dict[str, deque[m.ChallengeReceived]] = {}
        #: Challenges accepted (by id) whose room is not joined yet, with their assignment.
        self._accepting: dict[str, tuple[Assignment | None, tuple[Cell, ...], float]] = {}
        #: Challenges this bot sent: ref -> assignment, then challenge id -> assignment.
        self._sent: dict[str, Assignment] = {}
        self._challenges: dict[str, Assignment] = {}
        self.stopping = False
        self.finished = 0
        #: Rooms the server says this player sits in from before this process (`Welcome.rooms`).
        self.seated_before: set[str] = set()

    @property
    def busy(self) -> int:
        """Games in progress or about to start."""
        return len(self.games) + len(self._accepting) + len(self._challenges) + len(self._sent)

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
        assignment = Assignment(int(cmd["number"]), tuple(int(c) for c in cmd.get("opening", ())))
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
            tc: m.TimeControl = m.PerMove(move_ms=int(move_ms)) if move_ms else m.NoClock()
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

    def receive(self, message: m.ServerMessage) -> list[Action]:
        handler = getattr(self, f"_on_{message.type}", None)
        return handler(message) if handler is not None else []

    def _on_challenge_received(self, msg: m.ChallengeReceived) -> list[Action]:
        challenger = msg.challenger.name
        managed = challenger in self.entrants  # the runner schedules these: no policy applies
        reason = (
            "shutting down" if self.stopping else None if managed else self.policy.refusal(msg, self.busy)
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

    def _accept(self, msg: m.ChallengeReceived, assignment: Assignment | None) -> list[Action]:
        noise = self.policy.noise(msg.level)
        self._accepting[msg.challenge] = (assignment, tuple(msg.opening), noise)
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
        assignment, opening, noise = self._accepting.pop(ref[4:], (None, (), 0.0))
        return self._seat(msg.room, msg.role, msg.snapshot, assignment, opening, noise)

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
        return []

    def _seat(
        self,
        room: str,
        role: str,
        snap: m.RoomSnapshot,
        assignment: Assignment | None,
        opening: tuple[Cell, ...],
        noise: float = 0.0,
    ) -> list[Action]:
        game = BotGame(room, _MARKS[role], snap.room.variant, snap.room.ply_cap, assignment, opening, noise)
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
        game = self.games.get(msg.room) or self._adopt(msg.room, msg.variant, None, msg.x, msg.o)
        if game is None or game.game == msg.game:
            return []  # not ours, or already known from the snapshot that seated us
        self._start(game, msg.game, msg.x, msg.o)
        return self._maybe_think(game)

    def _adopt(self, room: str, variant: str, ply_cap: int | None, x: str, o: str) -> BotGame | None:
        """A game this bot sits in but did not ask for: one from before this process
        started (its token found it seated), resumed from the start of the room."""
        if self.name not in (x, o) or room not in self.seated_before:
            return None
        game = BotGame(room, Mark.X if x == self.name else Mark.O, variant, ply_cap, None)
        self.games[room] = game
        return game

    def _on_moved(self, msg: m.Moved) -> list[Action]:
        game = self.games.get(msg.room)
        if game is None or game.state is None or msg.game != game.game or msg.ply != game.state.ply + 1:
            return []
        try:
            game.state = game.state.play(msg.cell)
        except IllegalMove:
            return []
        return self._maybe_think(game)

    def _on_game_over(self, msg: m.GameEnded) -> list[Action]:
        game = self.games.get(msg.room)
        if game is None or msg.game != game.game:
            return []
        return self._ended(game, msg.outcome)

    def _on_snapshot(self, msg: m.Snapshot) -> list[Action]:
        snap = msg.snapshot
        game = self.games.get(msg.room)
        if game is None and snap.game is not None:
            game = self._adopt(msg.room, snap.room.variant, snap.room.ply_cap, snap.game.x, snap.game.o)
        if game is None or snap.game is None:
            return []
        return self._load(game, snap.game)

    def _on_room_closed(self, msg: m.RoomClosed) -> list[Action]:
        self.games.pop(msg.room, None)
        return []

    def _on_resumed(self, msg: m.Resumed) -> list[Action]:
        actions: list[Action] = []
        for room, how in msg.rooms.items():
            if how == "gone":
                self.games.pop(room, None)
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
        return [Report(report), Send(m.Leave(room=game.room))]

    def _maybe_think(self, game: BotGame) -> list[Action]:
        state = game.state
        if state is None or state.is_over or state.to_move is not game.mark or game.thinking:
            return []
        game.thinking = True
        return [Think(game.room, state.ply)]

    # --- moving -----------------------------------------------------------------------

    def decide(self, room: str, ply: int) -> m.Move | None:
        """The move for ``room`` at ``ply``; None if the game moved on meanwhile."""
        game = self.games.get(room)
        if game is None or game.state is None or game.state.ply != ply or game.state.is_over:
            return None
        game.thinking = False
        if game.decided is not None and game.decided[:2] == (game.game, ply):
            # asked again for a ply already answered (the move may have been lost with the
            # connection): the same answer, without drawing random numbers again
            return m.Move(room=room, cell=game.decided[2])
        state = game.state
        if game.noise and game.rng.random() < game.noise:
            cell = game.rng.choice(state.legal_moves())
        else:
            cell = self.strategy.choose(state, game.rng)
        game.decided = (game.game, ply, cell)
        return m.Move(room=room, cell=cell)

    def spent(self, room: str, ms: float) -> None:
        game = self.games.get(room)
        if game is not None:
            game.used_ms += ms

    def resign_all(self) -> list[Action]:
        """On shutdown: give up every game in progress (opponents need not wait)."""
        self.stopping = True
        return [
            Send(m.Resign(room=room)) for room, g in self.games.items() if g.state and not g.state.is_over
        ]
