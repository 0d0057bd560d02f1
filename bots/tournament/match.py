"""`play_match`: a whole tournament in this process, no network. Quick and exact.

Each player draws its random numbers from its own `random.Random`, seeded from
the tournament seed, the game number and its colour (`game_rng`), so a game's
moves depend on nothing else: not on the order games finish, nor on the other
games. The same seed and the same strategies give the same games: a searcher that stops
on the wall clock is given a node budget first (`bots.strategies.base.reproducible`), as
the runner's bot processes are.

`Strategy` and `Noisy` live in `bots.strategies.base`; they are imported here so
``from bots.tournament.match import Strategy`` keeps working.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence

from bots.strategies.base import Noisy, Strategy, reproducible
from bots.tournament.director import Director, TournamentConfig
from bots.tournament.pairing import GameSpec, TournamentError
from bots.tournament.standings import PlayedGame
from protocol.errors import IllegalMove
from protocol.rules import Mark, State

__all__ = ["Noisy", "Strategy", "game_rng", "play_game", "play_match"]


def game_rng(seed: int, number: int, mark: Mark) -> random.Random:
    """The random source of the player of ``mark`` in game ``number`` of a tournament seeded ``seed``."""
    return random.Random(f"ttt-arena/{seed}/{number}/{mark.name}")


def play_game(
    spec: GameSpec,
    variant: str,
    x: Strategy,
    o: Strategy,
    seed: int,
    ply_cap: int | None = None,
    max_plies: int | None = None,
) -> PlayedGame:
    """Play one game to its end: the opening, then the strategies in turn.

    A strategy that returns an illegal move, or raises, loses the game by forfeit
    (reason ``illegal_move`` or ``crash``); the tournament goes on. A game still going
    after ``max_plies`` plies is a draw (``adjudication``).
    """
    state = State.replay(variant, spec.opening, ply_cap=ply_cap)
    players = (x, o)
    rngs = (game_rng(seed, spec.number, Mark.X), game_rng(seed, spec.number, Mark.O))
    used = [0.0, 0.0]
    while not state.is_over:
        if max_plies is not None and len(state.moves) >= max_plies:
            return PlayedGame(spec, "1/2-1/2", "adjudication", state.moves, _ms(used))
        mover = state.to_move
        began = time.perf_counter()
        try:
            cell = players[mover].choose(state, rngs[mover])
            state = state.play(cell)
        except IllegalMove:
            return _forfeit(spec, state, mover, "illegal_move", used)
        except Exception:  # a crashing bot loses its game, like one that disconnects
            return _forfeit(spec, state, mover, "crash", used)
        finally:
            used[mover] += time.perf_counter() - began
    assert state.outcome is not None
    return PlayedGame(spec, state.outcome.result, str(state.outcome.termination), state.moves, _ms(used))


def _ms(used: list[float]) -> tuple[int, int]:
    return (round(used[0] * 1000), round(used[1] * 1000))


def _forfeit(spec: GameSpec, state: State, loser: Mark, reason: str, used: list[float]) -> PlayedGame:
    result = "0-1" if loser is Mark.X else "1-0"
    return PlayedGame(spec, result, reason, state.moves, _ms(used))


def play_match(
    config: TournamentConfig,
    strategies: Mapping[str, Strategy],
    seed: int = 0,
    ply_cap: int | None = None,
    on_game: Callable[[PlayedGame, Director], None] | None = None,
    done_records: Sequence[PlayedGame] = (),
) -> Director:
    """Play ``config`` with ``strategies`` (one per player name) and return the finished director.

    Running games finish in the order they were started, so Swiss rounds and SPRT
    stops fall the same way every time.

    Args:
        on_game: called after each game is recorded (for progress and live standings).
        done_records: games already played; the tournament continues after them.
    """
    missing = [p for p in config.players if p not in strategies]
    if missing:
        raise TournamentError(f"no strategy for {', '.join(missing)}")
    for strategy in strategies.values():
        reproducible(strategy)  # as the runner's bot processes: a node budget, not the wall clock
    if done_records:
        director, _ = Director.resume(config, done_records)
    else:
        director = Director(config)
        director.start()
    while director.running:
        spec = director.running[min(director.running)]
        x, o = strategies[spec.x], strategies[spec.o]
        record = play_game(spec, config.variant, x, o, seed, ply_cap, config.max_plies)
        director.finished(spec.number, record.result, record.reason, record.moves, record.time_ms)
        if on_game is not None:
            on_game(director.records[-1], director)
    return director
