"""The connected runner: a tournament among players already online on a server.

``ttt tournament --server URL --connected --bots a,b,c``: each entry is the name of a
player connected to that server, usually a ``ttt bot`` someone started. The runner
starts no process. It connects as one more client, the *director*, and for each game
the `Director` schedules it sends `ArrangeGame` (X, O, the variant, the opening, a
per-move clock, unrated). The server invites both players with an ordinary
`ChallengeReceived`, and each accepts or declines by its own policy. The director
watches the room from the start and records the game from `GameEnded` (moves, result,
reason); each side's time is measured from the room's events as they reach the
director (from the start or the opponent's move to the player's move).

A game that cannot be played is lost by the player at fault, with its own reason:
``declined: <the player's reason>``, ``abandoned`` (offline when the game was to be
arranged, or gone before sitting down) or ``no answer`` (no seat taken within the
server's ``--answer-timeout``); when both are at fault it is a draw. A player who drops
during a game loses it as in any game (``abandoned`` after the server's grace period).

Randomness belongs to the players: a ``ttt bot`` seeds each game from its own
``--seed`` and the server's game id, so a tournament seed does not replay the same
games here (the process runner and ``play_match`` do).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bots.tournament.director import Director, TournamentConfig
from bots.tournament.pairing import GameSpec, TournamentError
from bots.tournament.standings import PlayedGame
from bots.tournament.timecontrol import per_move
from protocol import messages as m
from protocol.client import ArenaClient, ConnectionLost, RemoteError, connect
from protocol.tokens import TokenFile

#: Tries to arrange a game whose player the server did not find online although the lobby did.
_ATTEMPTS = 3
#: A game waiting for a busy player or a free room is tried again when a game of its
#: players ends, and at least every `WAIT_S` seconds, at most `WAITS` times.
WAIT_S = 1.0
WAITS = 300
_REASONS = {"declined": "declined: {}", "gone": "abandoned", "no_answer": "no answer"}


@dataclass
class _ArrangedGame:
    """A scheduled game as the director follows it."""

    spec: GameSpec
    attempts: int = 0
    room: str | None = None
    #: When the last event of the game reached the director (loop time).
    last: float = 0.0
    #: Seconds each side (X, O) took, as the director saw the moves come.
    used: list[float] = field(default_factory=lambda: [0.0, 0.0])
    #: Players at fault for a game called off: (name as the server spells it, cause, reason).
    faults: list[tuple[str, str, str]] = field(default_factory=list)
    #: Times it waited for a busy player or a free room.
    waits: int = 0


@dataclass
class ConnectedRunner:
    """Runs ``config`` among players online at ``server`` (``config.players``: their names).

    Attributes:
        move_ms: the per-move time control of every game (None: no clock)...
        time_control: ...or this clock (``--tc``), if given.
        on_game: called after each finished game, with the record and the director.
        done_records: games already played (a saved ``games.jsonl``): play continues after them.
        name: the director's player name on the server (a new player each run).
    """

    config: TournamentConfig
    server: str
    move_ms: int | None = 5000
    on_game: Callable[[PlayedGame, Director], None] | None = None
    done_records: Sequence[PlayedGame] = ()
    time_control: m.TimeControl | None = None
    name: str = field(default_factory=lambda: "td-" + secrets.token_hex(4))
    #: Where the director keeps its token (a named director comes back as itself).
    token_file: str | None = None
    timeout: float = 10.0
    director: Director = field(init=False)
    #: Seconds spent playing (from the first game arranged to the last ended).
    play_seconds: float = field(init=False, default=0.0)
    _client: ArenaClient | None = field(init=False, default=None)
    _first: list[GameSpec] = field(init=False, default_factory=list)
    _games: dict[int, _ArrangedGame] = field(init=False, default_factory=dict)
    _rooms: dict[str, _ArrangedGame] = field(init=False, default_factory=dict)
    _tasks: set[asyncio.Task[None]] = field(init=False, default_factory=set)
    #: Games waiting for a busy player (``--max-games``) or a free room, by number.
    _waiting: dict[int, _ArrangedGame] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        if self.done_records:
            self.director, self._first = Director.resume(self.config, self.done_records)
        else:
            self.director = Director(self.config)

    async def run(self) -> Director:
        """Play the whole tournament; the director's connection is closed on the way out.

        Raises:
            TournamentError: the server cannot be reached or refuses the director, an
                entry is not online at the start, the server refuses a game for a reason
                no player is at fault for (e.g. ``too_many_rooms``: lower the concurrency),
                or the connection is lost (``--resume`` continues from ``games.jsonl``).
        """
        loop = asyncio.get_running_loop()
        try:
            tokens = TokenFile(self.token_file) if self.token_file else None
            token = tokens.read() if tokens is not None else None
            self._client = await connect(self.server, self.name, "bot", token=token, timeout=self.timeout)
            if tokens is not None:
                tokens.write(self._client.welcome.token)
        except RemoteError as exc:
            raise TournamentError(f"the server refused the director {self.name!r}: {exc}") from None
        except (OSError, TimeoutError) as exc:
            raise TournamentError(f"cannot reach {self.server}: {exc!r}") from None
        try:
            online = await self._online()
            missing = [p for p in self.config.players if p.casefold() not in online]
            if missing:
                raise TournamentError(f"not online on {self.server}: {', '.join(missing)}")
            began = loop.time()
            await self._play()
            self.play_seconds = loop.time() - began
        except ConnectionLost:
            raise TournamentError(
                f"lost the connection to {self.server}; --resume continues from games.jsonl"
            ) from None
        finally:
            for task in self._tasks:
                task.cancel()
            await self._client.close()
        return self.director

    # --- the games ---------------------------------------------------------------------

    async def _play(self) -> None:
        assert self._client is not None
        await self._launch(self._first if self.done_records else self.director.start())
        loop = asyncio.get_running_loop()
        while not self.director.done:
            event = await self._client.next_event()
            await self._handle(event, loop.time())

    async def _handle(self, event: m.ServerMessage, now: float) -> None:
        game = self._rooms.get(getattr(event, "room", None) or "")
        if isinstance(event, m.GameArranged):
            arranged = self._number(event.ref, "g")
            if arranged is not None and (new := self._games.get(arranged)) is not None:
                new.room, new.last = event.room, now
                self._rooms[event.room] = new
        elif isinstance(event, m.Error):
            await self._error(event)
        elif isinstance(event, m.ChallengeReceived):  # someone challenged the director
            decline = m.DeclineChallenge(
                challenge=event.challenge, reason="a tournament director; I do not play"
            )
            await self._send(decline)
        elif game is None:
            return
        elif isinstance(event, m.ChallengeDeclined):
            game.faults.append((event.by, event.cause, event.reason))
        elif isinstance(event, m.GameStarted):
            game.last = now
        elif isinstance(event, m.Moved):
            game.used[m.mark_named(event.mark)] += now - game.last
            game.last = now
        elif isinstance(event, m.GameEnded):
            await self._ended(game, event)
        elif isinstance(event, m.RoomClosed):
            await self._called_off(game)

    async def _ended(self, game: _ArrangedGame, event: m.GameEnded) -> None:
        assert game.room is not None
        self._forget(game)
        await self._send(m.Leave(room=game.room, ref=f"l{game.room}"))
        if self._client is not None:
            self._client.session.left(game.room)
        used = (round(game.used[0] * 1000), round(game.used[1] * 1000))
        outcome = event.outcome
        result = outcome.result
        if outcome.reason == "aborted" and len(event.moves) == len(game.spec.opening):
            # no first move in time (none, or only illegal ones): the side to move loses
            result = "0-1" if len(event.moves) % 2 == 0 else "1-0"
        if game.spec.number not in self.director.running:
            return  # called off meanwhile (an SPRT that decided)
        new = self.director.finished(game.spec.number, result, outcome.reason, event.moves, used, event.game)
        self._announce()
        await self._launch(new)
        await self._retry_waiting(game.spec)

    async def _called_off(self, game: _ArrangedGame) -> None:
        """The room closed before its game started: the players at fault lose it, unless
        they only declined as busy (more games at once than their ``--max-games``): then
        the game waits for them."""
        busy = all(cause == "declined" and reason.startswith("busy") for _, cause, reason in game.faults)
        if game.faults and busy and game.waits < WAITS:
            self._wait(game)
            return
        self._forget(game)
        spec = game.spec
        at_fault: dict[str, str] = {}
        for by, cause, reason in game.faults:
            for player in spec.players:
                if player.casefold() == by.casefold():
                    at_fault.setdefault(player, _REASONS.get(cause, "{}").format(reason))
        await self._forfeit(spec, at_fault)

    async def _forfeit(self, spec: GameSpec, at_fault: dict[str, str]) -> None:
        """Record ``spec`` unplayed: lost by the one player at fault, a draw when both (or neither) are."""
        if len(at_fault) == 1:
            ((loser, reason),) = at_fault.items()
            result = "0-1" if loser == spec.x else "1-0"
        else:
            result = "1/2-1/2"
            reason = at_fault.get(spec.x) or at_fault.get(spec.o) or "called off"
        new = self.director.finished(spec.number, result, reason, spec.opening)
        self._announce()
        await self._launch(new)

    async def _error(self, error: m.Error) -> None:
        number = self._number(error.ref, "g")
        if number is None:
            if error.code == "rate_limited" and (error.ref or "").startswith("l"):
                room = (error.ref or "")[1:]
                self._later(error.retry_after or 0.1, lambda: self._send(m.Leave(room=room, ref=error.ref)))
            return  # a Leave of a room already closed, a decline of a challenge withdrawn
        game = self._games.get(number)
        if game is None:
            return
        if error.code == "rate_limited":
            self._later(error.retry_after or 0.1, lambda: self._arrange(game, retry=True))
            return
        if error.code == "too_many_rooms" and game.waits < WAITS:
            self._wait(game)  # the director (or a player) sits in as many rooms as allowed
            return
        if error.code != "no_such_player":
            hint = "; lower --concurrency" if error.code == "too_many_rooms" else ""
            raise TournamentError(
                f"the server refused game {number} ({game.spec.x} v {game.spec.o}): "
                f"[{error.code}] {error.message}{hint}"
            )
        online = await self._online()
        gone = {p: "abandoned" for p in game.spec.players if p.casefold() not in online}
        if gone or game.attempts >= _ATTEMPTS:
            self._forget(game)
            await self._forfeit(game.spec, gone)
        else:  # back online already: try again
            self._later(0.2, lambda: self._arrange(game))

    def _wait(self, game: _ArrangedGame) -> None:
        """Arrange ``game`` again once a game of its players ends (or in `WAIT_S`)."""
        if game.room is not None:
            self._rooms.pop(game.room, None)
        game.room, game.faults, game.waits = None, [], game.waits + 1
        self._waiting[game.spec.number] = game
        self._later(WAIT_S, lambda: self._retry_waiting(None))

    async def _retry_waiting(self, freed: GameSpec | None) -> None:
        """Arrange again the waiting games that share a player with ``freed`` (a game that
        just ended; None: all of them)."""
        for number, game in list(self._waiting.items()):
            if freed is None or set(game.spec.players) & set(freed.players) or not freed.players:
                del self._waiting[number]
                await self._arrange(game, retry=True)

    # --- sending -----------------------------------------------------------------------

    async def _launch(self, specs: Sequence[GameSpec]) -> None:
        for spec in specs:
            game = _ArrangedGame(spec)
            self._games[spec.number] = game
            await self._arrange(game)

    async def _arrange(self, game: _ArrangedGame, retry: bool = False) -> None:
        if self._games.get(game.spec.number) is not game:
            return  # decided meanwhile
        if not retry:
            game.attempts += 1
        spec = game.spec
        control = self.time_control if self.time_control is not None else per_move(self.move_ms)
        arrange = m.ArrangeGame(
            x=spec.x,
            o=spec.o,
            variant=self.config.variant,
            time_control=control,
            rated=False,
            opening=list(spec.opening),
            ref=f"g{spec.number}",
        )
        await self._send(arrange)

    async def _send(self, message: m.ClientMessage) -> None:
        assert self._client is not None
        await self._client.send(message)

    def _later(self, delay: float, action: Callable[[], Awaitable[None]]) -> None:
        """Run ``action`` after ``delay`` seconds (a retry)."""

        async def run() -> None:
            await asyncio.sleep(delay)
            with contextlib.suppress(ConnectionLost):
                await action()

        task = asyncio.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _online(self) -> set[str]:
        """The names (casefolded) of the players online now."""
        assert self._client is not None
        snapshot = await self._client.request(m.LobbySubscribe())
        await self._client.request(m.LobbyUnsubscribe())
        assert isinstance(snapshot, m.LobbySnapshot)
        return {p.name.casefold() for p in snapshot.players}

    # --- bookkeeping -------------------------------------------------------------------

    def _forget(self, game: _ArrangedGame) -> None:
        self._games.pop(game.spec.number, None)
        self._waiting.pop(game.spec.number, None)
        if game.room is not None:
            self._rooms.pop(game.room, None)

    @staticmethod
    def _number(ref: str | None, prefix: str) -> int | None:
        if ref is None or not ref.startswith(prefix) or not ref[len(prefix) :].isdigit():
            return None
        return int(ref[len(prefix) :])

    def _announce(self) -> None:
        if self.on_game is not None:
            self.on_game(self.director.records[-1], self.director)
