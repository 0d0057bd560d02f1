"""Start-up: players, ratings and open rooms back from the store.

A game in progress continues where its last stored move left it: clocks as
stored after that move (time while the server was down is not charged), and
both seated players away with a fresh grace period, so they can come back
(resume) and finish, or lose by abandonment.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from protocol import messages as m
from protocol.errors import ArenaError
from protocol.rules import Mark, Outcome, State, Termination, find_variant
from server.clock import Clock
from server.feed.shared import own_room
from server.ratings import Rating
from server.room import Game, Room
from server.store import StoredRoom

if TYPE_CHECKING:
    from server.app import ArenaServer

log = logging.getLogger("ttt.server.recovery")


def recover(server: ArenaServer, now: float) -> None:
    from server.app import Player

    for pid, name, kind, token_hash in server.store.players():
        player = Player(pid, name, kind, token_hash)
        server.players[pid] = player
        server.by_name[name.casefold()] = player
        server.by_token[token_hash] = player
    for pid, variant, rating, rd, vol, games in server.store.ratings():
        server.ratings.load(pid, variant, Rating(rating, rd, vol, games))
    closed = []
    for stored in server.store.open_rooms():
        if not own_room(server.config.node_id, stored.id):
            continue  # feed hook (issue 7): another node's room in a shared database
        try:
            room = _room(server, stored, now)
        except (ArenaError, ValueError, KeyError):
            log.exception("room %s cannot be recovered; closing it", stored.id)
            closed.append(stored.id)
            continue
        if not any(room.seats):
            room.closed = True
            closed.append(room.id)
            server.writer.submit([room.saved()])
            continue
        server.rooms[room.id] = room
        server._schedule_room(room)
    log.info(
        "recovered %d players, %d rooms (%d games in progress); closed %d",
        len(server.players),
        len(server.rooms),
        sum(1 for r in server.rooms.values() if r.playing),
        len(closed),
    )


def _room(server: ArenaServer, stored: StoredRoom, now: float) -> Room:
    control = m.CreateRoom.model_validate_json(f'{{"time_control": {stored.time_control}}}').time_control
    room = Room(
        stored.id,
        find_variant(stored.variant),
        control,
        rated=stored.rated,
        private=stored.private,
        invite=stored.invite,
        ply_cap=stored.ply_cap,
        opening=stored.opening,
        rules=server.rules,
        node=None if server.config.node_id == "local" else server.config.node_id,
    )
    room.seq = stored.seq
    room.seats = [stored.seat_x, stored.seat_o]
    for mark in (Mark.X, Mark.O):
        pid = room.seats[mark]
        if pid is not None:
            room.names[pid] = server.players[pid].name
            room.admitted.add(pid)
            room.away[mark] = now + server.rules.grace
    for g in stored.games:
        room.games.append(g.id)
        room.names.setdefault(g.x, server.players[g.x].name)
        room.names.setdefault(g.o, server.players[g.o].name)
        if g.result is not None and g.reason != "aborted":
            for name, side in ((room.names[g.x], "x"), (room.names[g.o], "o")):
                points = 0.5 if g.winner is None else float(g.winner == side)
                room.score[name] = room.score.get(name, 0.0) + points
    if stored.games:
        g = stored.games[-1]
        state = State.replay(room.variant, [*g.opening, *g.moves], ply_cap=stored.ply_cap)
        left = None if g.x_ms is None or g.o_ms is None else (g.x_ms, g.o_ms)
        clock = Clock(control, left)
        game = Game(g.id, g.number, g.x, g.o, state, clock, g.rated, None)
        if g.result is not None:
            winner = None if g.winner is None else (Mark.X if g.winner == "x" else Mark.O)
            if game.state.outcome is None:
                game.state = game.state.ended(Outcome(Termination(g.reason or "aborted"), winner))
        elif g.moves:
            clock.start(state.to_move, now)
        else:
            game.first_move_due = now + server.rules.first_move
        room.game = game
    return room
