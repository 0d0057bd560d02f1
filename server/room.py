"""A room, sans-I/O: two seats, spectators, a series of games, clocks and grace periods.

Every method takes the time ``now`` (seconds, monotonic) and returns `Changes`:
the room events to announce (each already numbered with the room's ``seq``)
and the store operations that must be durable before they are announced. A
refused request raises `Refused` and changes nothing. Time-driven things
(a flag, an abort, a grace period running out) happen in `tick`; the shell
calls it at `next_deadline`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from protocol import messages as m
from protocol.errors import ArenaError, IllegalMove
from protocol.rules import Mark, Outcome, State, Termination, Variant
from server.clock import Clock
from server.frames import MovedEvent, clocks_json
from server.ops import GameFinished, GameSaved, MoveSaved, RoomSaved, StoreOp

#: A room event: a pydantic model, or a move's `MovedEvent` (its frame is built by hand).
Event = m.RoomEvent | MovedEvent


#: ``next_to_vanish`` where marks never vanish.
_NONE_VANISH: tuple[int | None, int | None] = (None, None)


class Refused(ArenaError):
    """A request the room (or server) will not carry out; ``code`` is a wire error code
    (``retry_after``: seconds after which the same request may work)."""

    def __init__(self, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


class Redirected(ArenaError):
    """The room (or the player challenged) is on another node: the client gets `Redirect` to it."""

    code = "redirect"

    def __init__(self, url: str, room: str | None) -> None:
        super().__init__(f"room {room} is on {url}" if room else f"go to {url}")
        self.url = url
        self.room = room


@dataclass
class Changes:
    """What one decision produced: events to announce, operations to store first, and
    the games it finished (the shell rates them and fills in `GameEnded.ratings`)."""

    events: list[Event] = field(default_factory=list)
    ops: list[StoreOp] = field(default_factory=list)
    finished: list[tuple[Game, m.GameEnded]] = field(default_factory=list)

    def __iadd__(self, other: Changes) -> Changes:
        self.events += other.events
        self.ops += other.ops
        self.finished += other.finished
        return self

    def __add__(self, other: Changes) -> Changes:
        return Changes(self.events + other.events, self.ops + other.ops, self.finished + other.finished)


@dataclass
class Game:
    """One game of the room's series. ``x`` and ``o`` are player ids."""

    id: str
    number: int
    x: str
    o: str
    state: State
    clock: Clock
    rated: bool
    #: When the game is aborted unless the first move has come (None once it has).
    first_move_due: float | None

    def player(self, mark: Mark) -> str:
        return self.x if mark is Mark.X else self.o


@dataclass(frozen=True, slots=True)
class RoomRules:
    """The server settings a room needs."""

    grace: float = 30.0
    first_move: float = 30.0
    replay_events: int = 500


class Room:
    """Seats, spectators and the series of games of one room."""

    def __init__(
        self,
        room_id: str,
        variant: Variant,
        time_control: m.NoClock | m.PerMove | m.Increment,
        *,
        rated: bool = True,
        private: bool = False,
        invite: str | None = None,
        ply_cap: int | None = None,
        opening: tuple[int, ...] = (),
        rules: RoomRules | None = None,
        node: str | None = None,
    ) -> None:
        self.id = room_id
        self.variant = variant
        self.time_control = time_control
        self.rated = rated
        self.private = private
        self.invite = invite
        self.ply_cap = ply_cap
        self.opening = opening
        self.rules = rules or RoomRules()
        self.node = node
        self.seats: list[str | None] = [None, None]
        self.names: dict[str, str] = {}
        self.spectators: set[str] = set()
        #: Players let in once (a private room's invite was right); they may come back.
        self.admitted: set[str] = set()
        self.seq = 0
        #: The seqs and frames of the latest events announced, for `replay_since`: text, not
        #: models, and two queues rather than one of (seq, frame) pairs, so a move adds
        #: nothing for the garbage collector to walk (each new pair was walked once, by the
        #: next collection of the youngest generation, before it found it held no object).
        self._seqs: deque[int] = deque(maxlen=self.rules.replay_events)
        self._frames: deque[str] = deque(maxlen=self.rules.replay_events)
        #: The seq of the latest event announced (stored and sent); set on recovery too.
        self.announced_seq = 0
        self.games: list[str] = []
        self.score: dict[str, float] = {}
        self.game: Game | None = None
        #: Seats whose player dropped, with the time their grace period ends.
        self.away: dict[Mark, float] = {}
        self.rematch: set[Mark] = set()
        #: Seats kept for the players of an arranged game until it starts (player ids).
        self.reserved: list[str | None] = [None, None]
        self.closed = False

    # --- reading ------------------------------------------------------------------

    @property
    def playing(self) -> bool:
        return self.game is not None and not self.game.state.is_over

    @property
    def status(self) -> str:
        if self.closed:
            return "closed"
        if self.playing:
            return "playing"
        return "finished" if self.games else "waiting"

    def seat_of(self, player: str) -> Mark | None:
        seats = self.seats  # (twice a move: no loop over the marks, no list indexed by an enum)
        if seats[0] == player:
            return Mark.X
        if seats[1] == player:
            return Mark.O
        return None

    def role(self, player: str) -> m.MarkName | None:
        mark = self.seat_of(player)
        return m.MARK_NAMES[mark] if mark is not None else None

    def has(self, player: str) -> bool:
        """Whether ``player`` is seated here or watching."""
        return player in self.spectators or player == self.seats[0] or player == self.seats[1]

    def members(self) -> set[str]:
        """Everyone who gets this room's events: seated players and spectators."""
        return {p for p in self.seats if p is not None} | self.spectators

    def _seats(self) -> m.Seats:
        x, o = (self.names[p] if p else None for p in self.seats)
        return m.Seats(x=x, o=o)

    def summary(self) -> m.RoomSummary:
        status: Any = self.status
        return m.RoomSummary(
            id=self.id,
            variant=self.variant.name,
            time_control=self.time_control,
            rated=self.rated,
            private=self.private,
            ply_cap=self.ply_cap,
            seats=self._seats(),
            status=status,
            spectators=len(self.spectators),
            games=len(self.games),
            node=self.node,
        )

    def game_snapshot(self, now: float) -> m.GameSnapshot | None:
        game = self.game
        if game is None:
            return None
        state = game.state
        due = None if state.is_over else game.first_move_due
        return m.GameSnapshot(
            game=game.id,
            number=game.number,
            x=self.names[game.x],
            o=self.names[game.o],
            moves=list(state.moves),
            board=[None if mk is None else m.MARK_NAMES[mk] for mk in state.board()],
            to_move=m.MARK_NAMES[state.to_move],
            ply=state.ply,
            next_to_vanish=_vanishing(state),
            clocks=game.clock.snapshot(now),
            result=_result(state.outcome) if state.outcome else None,
            first_move_ms=None if due is None else max(0, int((due - now) * 1000)),
        )

    def snapshot(self, now: float) -> m.RoomSnapshot:
        return m.RoomSnapshot(
            room=self.summary(),
            seq=self.seq,
            games=list(self.games),
            score=dict(self.score),
            game=self.game_snapshot(now),
            disconnected={m.MARK_NAMES[mk]: max(0, int((due - now) * 1000)) for mk, due in self.away.items()},
            rematch=[m.MARK_NAMES[mk] for mk in sorted(self.rematch)],
        )

    def announced(self, seq: int, frame: str) -> None:
        """Event ``seq`` was stored and announced as ``frame``: keep it for replays."""
        self._seqs.append(seq)
        self._frames.append(frame)
        self.announced_seq = seq

    def can_replay(self, seq: int) -> bool:
        """Whether every announced event after ``seq`` is still kept for `replay_since`."""
        return seq >= self.announced_seq or (bool(self._seqs) and self._seqs[0] <= seq + 1)

    def replay_since(self, seq: int) -> list[tuple[int, str]] | None:
        """The announced events after ``seq`` as (seq, frame), or None when some of them
        are no longer kept. Events decided but not yet announced are not among them."""
        if seq >= self.announced_seq:
            return []
        if not self._seqs or self._seqs[0] > seq + 1:
            return None
        return [(n, frame) for n, frame in zip(self._seqs, self._frames, strict=True) if n > seq]

    def next_deadline(self) -> float | None:
        """The next time `tick` has something to do (before it, `tick` changes nothing)."""
        due = min(self.away.values()) if self.away else None
        game = self.game
        if game is not None and not game.state.is_over:
            first = game.first_move_due
            if first is not None and (due is None or first < due):
                due = first
            flag = game.clock.flag_time()
            if flag is not None and (due is None or flag < due):
                due = flag
        return due

    def saved(self) -> RoomSaved:
        """The store operation that records this room as it is now."""
        return RoomSaved(
            room=self.id,
            variant=self.variant.name,
            time_control=self.time_control.model_dump_json(),
            rated=self.rated,
            private=self.private,
            invite=self.invite,
            ply_cap=self.ply_cap,
            opening=self.opening,
            seat_x=self.seats[Mark.X],
            seat_o=self.seats[Mark.O],
            seq=self.seq,
            closed=self.closed,
        )

    # --- requests --------------------------------------------------------------------

    def sit(self, player: str, name: str, seat: Mark | None, now: float) -> Changes:
        """Take ``seat`` (None: a free one). Both seats filled with no game going starts one."""
        if self.closed:
            raise Refused("no_such_room", "the room is closed")
        if self.seat_of(player) is not None:
            raise Refused("already_seated", "you already hold a seat in this room")
        free = [mk for mk in (Mark.X, Mark.O) if self.seats[mk] is None]
        if not free:
            raise Refused("room_full", "both seats are taken")
        if seat is None:
            open_to = [mk for mk in free if self.reserved[mk] in (None, player)]
            if not open_to:
                raise Refused("seat_taken", "the free seat is kept for an arranged game")
            seat = open_to[0]
        elif self.seats[seat] is not None:
            raise Refused("seat_taken", f"seat {m.MARK_NAMES[seat]} is taken")
        elif self.reserved[seat] not in (None, player):
            raise Refused("seat_taken", f"seat {m.MARK_NAMES[seat]} is kept for an arranged game")
        self.names[player] = name
        self.admitted.add(player)
        self.spectators.discard(player)
        self.seats[seat] = player
        self.rematch.clear()
        changes = self._seats_changed()
        if not self.playing and all(self.seats):
            changes += self._start_game(now)
        changes.ops.append(self.saved())
        return changes

    def watch(self, player: str, name: str) -> Changes:
        if self.closed:
            raise Refused("no_such_room", "the room is closed")
        if self.seat_of(player) is not None:
            raise Refused("already_seated", "you hold a seat in this room")
        self.names[player] = name
        self.admitted.add(player)
        if player in self.spectators:
            return Changes()
        self.spectators.add(player)
        return self._seats_changed()

    def reserve(self, x: str, o: str) -> None:
        """Keep the seats for ``x`` and ``o`` (an arranged game) until its game starts."""
        self.reserved = [x, o]

    def cancel(self, reason: str) -> Changes:
        """Call off a room whose first game has not started (an arranged game that will not
        be played): it closes, and everyone in it (seated or watching) hears `RoomClosed`.

        The members stay listed so the shell announces the closing to them; a closed room
        takes no more requests.
        """
        if self.games:
            raise Refused("game_in_progress", "the room has had a game; it cannot be called off")
        if self.closed:
            return Changes()
        self.closed = True
        self.reserved = [None, None]
        self.away.clear()
        changes = self._emit(m.RoomClosed(room=self.id, seq=0, reason=reason))
        changes.ops.append(self.saved())
        return changes

    def leave(self, player: str, now: float) -> Changes:
        """Leave the room; a seated player in a game in progress loses it by resignation."""
        mark = self.seat_of(player)
        if mark is None:
            if player not in self.spectators:
                raise Refused("not_in_room", "you are not in this room")
            self.spectators.discard(player)
            changes = self._seats_changed()
        else:
            changes = Changes()
            if self.playing:
                changes += self._end(Outcome(Termination.RESIGNATION, mark.other), now)
            self.seats[mark] = None
            self.away.pop(mark, None)
            self.rematch.clear()
            changes += self._seats_changed()
        self.admitted.discard(player)
        changes += self._close_if_empty()
        changes.ops.append(self.saved())
        return changes

    def play(self, player: str, cell: int, now: float) -> Changes:
        """``player`` places a mark on ``cell``. The caller ticks the room to ``now`` first,
        so a flag that fell before the move has already decided the game."""
        game, mark = self._seated_in_game(player)
        if game.state.to_move is not mark:
            raise Refused("not_your_turn", "it is the other player's turn")
        try:
            state = game.state.play(cell)
        except IllegalMove as exc:
            raise Refused(exc.code, exc.message) from exc
        if not game.clock.press(mark, now):  # pragma: no cover - tick above flags first
            return Changes() + self._end(Outcome(Termination.TIMEOUT, mark.other), now)
        moved, saved = self._place(game, mark, state, cell, now)
        changes = Changes([moved], [saved])
        if state.outcome is not None:
            changes += self._end(state.outcome, now)
        return changes

    def play_plain(self, player: str, cell: int, now: float) -> tuple[MovedEvent, MoveSaved] | None:
        """`play` for a plain move: legal, by the seated player to move, and leaving the
        game going (the commonest request by far, `server.moves`). Its event and its store
        operation, the same as `play` makes (`play` makes them with `_place` too); or None,
        with nothing changed, for any other move (refused, ending the game, or made after
        its mover's flag fell): `play` decides those. The caller ticks the room first, as
        for `play`."""
        game = self.game
        if game is None:
            return None
        before = game.state
        mark = before.to_move
        if self.seats[mark] != player or before.outcome is not None:  # not seated to move, or over
            return None
        try:
            state = before.play(cell)
        except IllegalMove:
            return None
        if state.outcome is not None or not game.clock.press(mark, now):  # (press: False changes nothing)
            return None
        return self._place(game, mark, state, cell, now)

    def _place(
        self, game: Game, mark: Mark, state: State, cell: int, now: float
    ) -> tuple[MovedEvent, MoveSaved]:
        """The move to ``state`` is made (and the clock pressed): the game takes it, and the
        room numbers its event. The event and the store operation of the move."""
        before = game.state.queues[mark]
        game.state = state
        game.first_move_due = None
        vanished = before[0] if len(before) == self.variant.max_marks else None
        clocks, x_ms, o_ms = clocks_json(game.clock, now)
        self.seq += 1
        if self.variant.max_marks is None:  # marks never vanish (most variants)
            vanishing: tuple[int | None, int | None] = _NONE_VANISH
        else:
            vanishing = (state.next_to_vanish(Mark.X), state.next_to_vanish(Mark.O))
        moved = MovedEvent(self.id, self.seq, game.id, state.ply, cell, mark, vanished, vanishing, clocks)
        return moved, MoveSaved(game.id, state.ply, cell, x_ms, o_ms, self.id, self.seq)

    def resign(self, player: str, now: float) -> Changes:
        _, mark = self._seated_in_game(player)
        return self._end(Outcome(Termination.RESIGNATION, mark.other), now)

    def ask_rematch(self, player: str, now: float) -> Changes:
        """Ask for the next game; when both seated players have, it starts with colours swapped."""
        mark = self.seat_of(player)
        if mark is None:
            raise Refused("not_seated", "only a seated player may ask for a rematch")
        if self.playing:
            raise Refused("game_in_progress", "the game is still going")
        if not all(self.seats):
            raise Refused("no_game", "the other seat is empty; wait for a player to sit")
        if mark in self.rematch:
            return Changes()
        self.rematch.add(mark)
        changes = self._emit(
            m.RematchOffered(room=self.id, seq=0, by=self.names[player], mark=m.MARK_NAMES[mark])
        )
        if len(self.rematch) == 2:
            self.seats.reverse()
            self.away = {mk.other: due for mk, due in self.away.items()}
            changes += self._seats_changed()
            changes += self._start_game(now)
            changes.ops.append(self.saved())
        return changes

    # --- connections -------------------------------------------------------------------

    def drop(self, player: str, now: float) -> Changes:
        """``player``'s connection is gone: a spectator leaves; a seat is held for the grace period."""
        mark = self.seat_of(player)
        if mark is None:
            if player in self.spectators:
                self.spectators.discard(player)
                return self._seats_changed() + self._close_if_empty()
            return Changes()
        if mark in self.away:
            return Changes()
        self.away[mark] = now + self.rules.grace
        return self._emit(
            m.PlayerDisconnected(
                room=self.id,
                seq=0,
                player=self.names[player],
                mark=m.MARK_NAMES[mark],
                grace_ms=int(self.rules.grace * 1000),
            )
        )

    def back(self, player: str, name: str) -> Changes:
        """``player`` came back (resumed): a held seat is theirs again; others watch."""
        mark = self.seat_of(player)
        if mark is None:
            if player not in self.admitted:
                raise Refused("not_in_room", "you are not in this room")
            return self.watch(player, name)
        if self.away.pop(mark, None) is None:
            return Changes()
        return self._emit(
            m.PlayerReconnected(room=self.id, seq=0, player=self.names[player], mark=m.MARK_NAMES[mark])
        )

    def tick(self, now: float) -> Changes:
        """Everything due by ``now``: flags, aborts, grace periods running out."""
        changes = Changes()
        game = self.game
        if game is not None and not game.state.is_over:
            if game.first_move_due is not None and now >= game.first_move_due:
                changes += self._end(Outcome(Termination.ABORTED), now)
            elif (loser := game.clock.flagged(now)) is not None:
                changes += self._end(Outcome(Termination.TIMEOUT, loser.other), now)
        for mark, due in sorted(self.away.items(), key=lambda item: item[1]):
            if now < due or mark not in self.away:
                continue
            del self.away[mark]
            if self.playing:
                changes += self._end(Outcome(Termination.ABANDONED, mark.other), now)
            self.seats[mark] = None
            self.rematch.clear()
            changes += self._seats_changed()
            changes += self._close_if_empty()
            changes.ops.append(self.saved())
        return changes

    # --- inside ------------------------------------------------------------------------

    def _seated_in_game(self, player: str) -> tuple[Game, Mark]:
        mark = self.seat_of(player)
        if mark is None:
            if player in self.spectators:
                raise Refused("not_seated", "spectators cannot play")
            raise Refused("not_in_room", "you are not in this room")
        game = self.game
        if game is None:
            raise Refused("no_game", "no game has started in this room")
        if game.state.is_over:
            raise Refused("game_over", "the game has already ended")
        return game, mark

    def _emit(self, event: Event) -> Changes:
        self.seq += 1
        event.seq = self.seq
        return Changes(events=[event])

    def _seats_changed(self) -> Changes:
        return self._emit(
            m.SeatsChanged(room=self.id, seq=0, seats=self._seats(), spectators=len(self.spectators))
        )

    def _close_if_empty(self) -> Changes:
        if self.closed or any(self.seats) or self.spectators or self.playing:
            return Changes()
        self.closed = True
        return self._emit(m.RoomClosed(room=self.id, seq=0, reason="empty"))

    def _start_game(self, now: float) -> Changes:
        x, o = self.seats
        assert x is not None and o is not None
        number = len(self.games) + 1
        state = State.replay(self.variant, self.opening, ply_cap=self.ply_cap)
        clock = Clock(self.time_control)
        game = Game(
            f"{self.id}.{number}", number, x, o, state, clock, self.rated, now + self.rules.first_move
        )
        self.game = game
        self.games.append(game.id)
        self.rematch.clear()
        self.reserved = [None, None]  # an arranged game is under way: the room is an ordinary one
        clocks = clock.snapshot(now)
        changes = self._emit(
            m.GameStarted(
                room=self.id,
                seq=0,
                game=game.id,
                number=number,
                variant=self.variant.name,
                x=self.names[x],
                o=self.names[o],
                clocks=clocks,
                rated=self.rated,
                first_move_ms=int(self.rules.first_move * 1000),
                opening=list(self.opening),
            )
        )
        changes.ops.append(
            GameSaved(
                game.id,
                self.id,
                number,
                self.variant.name,
                x,
                o,
                self.time_control.model_dump_json(),
                self.rated,
                self.ply_cap,
                self.opening,
                clocks.x_ms,
                clocks.o_ms,
            )
        )
        return changes

    def _end(self, outcome: Outcome, now: float) -> Changes:
        game = self.game
        assert game is not None
        if game.state.outcome is None:
            game.state = game.state.ended(outcome)
        game.clock.stop()
        game.first_move_due = None
        outcome = game.state.outcome or outcome
        if outcome.termination is not Termination.ABORTED:
            for mark in (Mark.X, Mark.O):
                name = self.names[game.player(mark)]
                self.score[name] = self.score.get(name, 0.0) + outcome.points(mark)
        result = _result(outcome)
        event = m.GameEnded(
            room=self.id,
            seq=0,
            game=game.id,
            outcome=result,
            x=self.names[game.x],
            o=self.names[game.o],
            moves=list(game.state.moves),
        )
        changes = self._emit(event)
        changes.ops.append(
            GameFinished(
                game.id, result.result, result.winner, result.reason, outcome.line, room=self.id, seq=self.seq
            )
        )
        changes.finished.append((game, event))
        return changes


def _vanishing(state: State) -> dict[m.MarkName, int | None]:
    return {"x": state.next_to_vanish(Mark.X), "o": state.next_to_vanish(Mark.O)}


def _result(outcome: Outcome) -> m.Result:
    winner = None if outcome.winner is None else m.MARK_NAMES[outcome.winner]
    reason: Any = outcome.termination.value
    result: Any = outcome.result
    return m.Result(result=result, winner=winner, reason=reason, line=list(outcome.line))
