"""What the terminal client knows, kept apart from the widgets that draw it.

`RoomView` follows one room from a snapshot and the room events that come
after it; `LobbyView` follows the lobby. Both are plain objects: they take a
server message and the time it arrived (``now``, from a monotonic clock the
caller reads) and change themselves. Widgets only read them, so every rule of
what the client shows is testable without a terminal or a socket.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from client_tui.replay import Replay
from protocol import messages as m
from protocol.rules import Mark, State, Variant, find_variant
from protocol.rules import points as score_of

Role = str  # "x", "o" or "spectator"


def other(mark: m.MarkName) -> m.MarkName:
    return "o" if mark == "x" else "x"


@dataclass
class RoomView:
    """One room as a member sees it: seats, the current game, its clocks and result."""

    room: str
    #: Our own player name: our seat (and so our colour) follows it across a series.
    me: str
    summary: m.RoomSummary
    seq: int = 0
    invite: str | None = None
    game: str | None = None
    number: int = 0
    x: str = ""
    o: str = ""
    board: list[m.MarkName | None] = field(default_factory=list)
    moves: list[int] = field(default_factory=list)
    to_move: m.MarkName = "x"
    next_to_vanish: dict[m.MarkName, int | None] = field(default_factory=dict)
    clocks: m.Clocks | None = None
    #: When ``clocks`` arrived (the caller's monotonic time): running clocks count from it.
    clocks_at: float = 0.0
    #: Until when X may make the first move before the game is aborted.
    first_move_until: float | None = None
    result: m.Result | None = None
    #: Per seat whose player dropped: when their grace period ends.
    disconnected: dict[m.MarkName, float] = field(default_factory=dict)
    rematch: set[m.MarkName] = field(default_factory=set)
    score: dict[str, float] = field(default_factory=dict)
    closed: str | None = None
    ratings: dict[str, float] = field(default_factory=dict)
    #: Ratings in this variant when the game started, per player name (for +12/-12).
    ratings_before: dict[str, float] = field(default_factory=dict)
    #: Names of the bots among the players (the app knows them from the lobby).
    bots: set[str] = field(default_factory=set)
    _replay: Replay | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_snapshot(
        cls, snapshot: m.RoomSnapshot, me: str, now: float, invite: str | None = None
    ) -> RoomView:
        view = cls(room=snapshot.room.id, me=me, summary=snapshot.room, invite=invite)
        view.load(snapshot, now)
        return view

    @property
    def role(self) -> Role:
        """``x`` or ``o`` where we sit, else ``spectator``."""
        seats = self.summary.seats
        return "x" if seats.x == self.me else "o" if seats.o == self.me else "spectator"

    @property
    def variant(self) -> Variant:
        return find_variant(self.summary.variant)

    @property
    def playing(self) -> bool:
        return self.game is not None and self.result is None

    @property
    def my_mark(self) -> m.MarkName | None:
        return self.role if self.role in ("x", "o") else None  # type: ignore[return-value]

    @property
    def my_turn(self) -> bool:
        return self.playing and self.my_mark == self.to_move

    @property
    def last_move(self) -> int | None:
        return self.moves[-1] if self.moves else None

    @property
    def thinking(self) -> bool:
        """A bot is to move (the screen says "thinking…")."""
        return self.playing and not self.my_turn and self.name_of(self.to_move) in self.bots

    @property
    def ply_cap(self) -> int | None:
        return self.summary.ply_cap if self.summary.ply_cap is not None else self.variant.default_ply_cap

    def replay(self) -> Replay:
        """Every position of the current game (rebuilt when the move list changes)."""
        replay = self._replay
        if replay is None or [p.cell for p in replay.plies] != self.moves:
            replay = self._replay = Replay(self.variant, self.moves, self.summary.ply_cap)
        return replay

    def position(self) -> State | None:
        """The current position by the rules (None when the move list can't be replayed)."""
        replay = self.replay()
        return replay.last if len(replay.plies) == len(self.moves) else None

    def name_of(self, mark: m.MarkName) -> str:
        game_name = self.x if mark == "x" else self.o
        seat_name = self.summary.seats.x if mark == "x" else self.summary.seats.o
        return game_name or seat_name or "(free)"

    def load(self, snapshot: m.RoomSnapshot, now: float) -> None:
        """Replace everything with ``snapshot`` (a join, or a resume that could not replay)."""
        self.summary = snapshot.room
        self.seq = snapshot.seq
        self.score = dict(snapshot.score)
        self.rematch = set(snapshot.rematch)
        self.disconnected = {mark: now + ms / 1000 for mark, ms in snapshot.disconnected.items()}
        self.closed = "closed" if snapshot.room.status == "closed" else None
        game = snapshot.game
        if game is None:
            self.game = None
            self.board = [None] * self.variant.cells
            self.moves = []
            self.result = None
            self.clocks = None
            return
        self.game, self.number, self.x, self.o = game.game, game.number, game.x, game.o
        self.board = list(game.board)
        self.moves = list(game.moves)
        self.to_move = game.to_move
        self.next_to_vanish = dict(game.next_to_vanish)
        self.clocks, self.clocks_at = game.clocks, now
        self.result = game.result
        # The snapshot says how long the first move may still take (the game_started it
        # covers is not sent again).
        self.first_move_until = now + game.first_move_ms / 1000 if game.first_move_ms else None

    def apply(self, event: m.ServerMessage, now: float) -> None:
        """Take one room event of this room (others are ignored)."""
        if getattr(event, "room", None) != self.room:
            return
        seq = getattr(event, "seq", None)
        if isinstance(event, m.Snapshot):
            self.load(event.snapshot, now)
            return
        if seq is not None:
            self.seq = max(self.seq, seq)
        if isinstance(event, m.SeatsChanged):
            self.summary = self.summary.model_copy(
                update={"seats": event.seats, "spectators": event.spectators}
            )
        elif isinstance(event, m.GameStarted):
            self._start(event, now)
        elif isinstance(event, m.Moved):
            self._moved(event, now)
        elif isinstance(event, m.GameEnded):
            if self.clocks is not None:
                self.clocks, self.clocks_at = self._stopped(now), now
            self.result = event.outcome
            self.rematch.clear()
            self.first_move_until = None
            if event.moves:
                self.moves = list(event.moves)
            self.ratings = dict(event.ratings)
            self._score(event.outcome)
        elif isinstance(event, m.PlayerDisconnected):
            self.disconnected[event.mark] = now + event.grace_ms / 1000
        elif isinstance(event, m.PlayerReconnected):
            self.disconnected.pop(event.mark, None)
        elif isinstance(event, m.RematchOffered):
            self.rematch.add(event.mark)
        elif isinstance(event, m.RoomClosed):
            self.closed = event.reason

    def _start(self, event: m.GameStarted, now: float) -> None:
        self.game, self.number, self.x, self.o = event.game, event.number, event.x, event.o
        self.summary = self.summary.model_copy(update={"variant": event.variant, "status": "playing"})
        self.board = [None] * self.variant.cells
        self.moves, self.to_move, self.result = [], "x", None
        self.next_to_vanish = {"x": None, "o": None}
        self.clocks, self.clocks_at = event.clocks, now
        self.rematch.clear()
        self.ratings = {}
        if event.opening:
            state = State.replay(self.variant, event.opening, ply_cap=self.summary.ply_cap)
            self.board = [None if mk is None else mk.name.lower() for mk in state.board()]  # type: ignore[misc]
            self.moves = list(event.opening)
            self.to_move = "x" if state.to_move is Mark.X else "o"
            self.next_to_vanish = {"x": state.next_to_vanish(Mark.X), "o": state.next_to_vanish(Mark.O)}
        self.first_move_until = now + event.first_move_ms / 1000 if event.first_move_ms else None

    def _moved(self, event: m.Moved, now: float) -> None:
        if event.game != self.game:
            return
        if event.vanished is not None:
            self.board[event.vanished] = None
        self.board[event.cell] = event.mark
        self.moves.append(event.cell)
        self.to_move = other(event.mark)
        if event.next_to_vanish:
            self.next_to_vanish = dict(event.next_to_vanish)
        self.clocks, self.clocks_at = event.clocks, now
        self.first_move_until = None

    def _stopped(self, now: float) -> m.Clocks:
        x_ms, o_ms = self.clock_ms("x", now), self.clock_ms("o", now)
        return m.Clocks(x_ms=x_ms, o_ms=o_ms, running=None)

    def _score(self, outcome: m.Result) -> None:
        if outcome.reason == "aborted":
            return
        for mark, name in (("x", self.x), ("o", self.o)):
            points = score_of(outcome.winner, mark)
            self.score[name] = self.score.get(name, 0.0) + points

    def clock_ms(self, mark: m.MarkName, now: float) -> int | None:
        """Milliseconds left on ``mark``'s clock at ``now`` (None: no clock)."""
        if self.clocks is None:
            return None
        left = self.clocks.x_ms if mark == "x" else self.clocks.o_ms
        if left is None:
            return None
        if self.clocks.running == mark and self.result is None:
            left -= int((now - self.clocks_at) * 1000)
        return max(0, left)

    def grace_left(self, mark: m.MarkName, now: float) -> float | None:
        """Seconds left before a dropped player loses by abandonment."""
        until = self.disconnected.get(mark)
        return None if until is None else max(0.0, until - now)


def clock_text(ms: int | None) -> str:
    """``m:ss`` (and tenths under 10 s); ``--`` for no clock."""
    if ms is None:
        return "--"
    if ms < 10_000:
        return f"0:{ms / 1000:04.1f}"
    seconds = ms // 1000
    return f"{seconds // 60}:{seconds % 60:02d}"


def result_text(result: m.Result, x: str, o: str) -> str:
    """A one-line verdict: ``alice (X) wins: three in a row`` or ``draw: board full``."""
    reason = REASONS.get(result.reason, result.reason)
    if result.winner is None:
        return f"{'aborted' if result.reason == 'aborted' else 'draw'}: {reason}"
    winner = x if result.winner == "x" else o
    return f"{winner} ({result.winner.upper()}) wins: {reason}"


REASONS = {
    "line": "a line is complete",
    "full_board": "the board is full",
    "repetition": "the same position three times",
    "ply_cap": "the ply cap was reached",
    "resignation": "resignation",
    "timeout": "time ran out",
    "abandoned": "the opponent left and did not come back",
    "aborted": "the first move never came",
}


@dataclass
class LobbyView:
    """Rooms and players online, from a `LobbySnapshot` and the `LobbyUpdate` pushes.

    The snapshot is the answer to a subscription and the updates are pushed: they reach
    the app by two paths (the request's, the event pump's), and an update sent after the
    snapshot can be handled before it. So from `subscribing` until the snapshot is loaded
    the updates are kept, and applied again on top of it (each tells the state when it
    was sent, which is not older than the snapshot: applying it again is harmless)."""

    rooms: dict[str, m.RoomSummary] = field(default_factory=dict)
    players: dict[str, m.PlayerInfo] = field(default_factory=dict)
    leaderboard: m.Leaderboard | None = None
    #: Updates handled since the subscription went out (None: no snapshot awaited).
    since_subscribe: list[m.LobbyUpdate] | None = None

    def subscribing(self) -> None:
        """A `LobbySubscribe` is on its way: keep the updates until its snapshot is loaded."""
        self.since_subscribe = []

    def load(self, snapshot: m.LobbySnapshot) -> None:
        self.rooms = {r.id: r for r in snapshot.rooms}
        self.players = {p.id: p for p in snapshot.players}
        early, self.since_subscribe = self.since_subscribe or [], None
        for update in early:
            self.apply(update)

    def apply(self, update: m.LobbyUpdate) -> None:
        if self.since_subscribe is not None:
            self.since_subscribe.append(update)
        for room in update.rooms:
            self.rooms[room.id] = room
        for room_id in update.rooms_closed:
            self.rooms.pop(room_id, None)
        for player in update.players:
            self.players[player.id] = player
        for player_id in update.players_gone:
            self.players.pop(player_id, None)

    def open_rooms(self) -> list[m.RoomSummary]:
        """Rooms worth listing: waiting ones first, then games being played."""
        order = {"waiting": 0, "playing": 1, "finished": 2, "closed": 3}
        live = [r for r in self.rooms.values() if r.status != "closed"]
        return sorted(live, key=lambda r: (order[r.status], r.id))

    def player_named(self, name: str) -> m.PlayerInfo | None:
        return next((p for p in self.players.values() if p.name == name), None)
