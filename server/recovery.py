"""Start-up: open rooms back from the store, with their players and those players' ratings.

Other players stay in the store until they come back (`server.feed.shared` loads a
player by token or name when its hello comes), so a node with many accounts starts
fast and holds only the players it meets.

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
from protocol.rules import Mark, Outcome, State, Termination, find_variant, points
from server.clock import Clock
from server.decision import Decision
from server.players import Player
from server.ratings import Rating
from server.room import Game, Room
from server.store import Store, StoredRoom

if TYPE_CHECKING:
    from server.arena import Arena

log = logging.getLogger("ttt.server.recovery")


def own_room(node_id: str, room_id: str) -> bool:
    """Whether ``room_id`` was created by node ``node_id`` (a lone "local" node owns all)."""
    return node_id == "local" or room_id.startswith(f"{node_id}-")


def recover(arena: Arena, store: Store, now: float, only: set[str] | None = None) -> Decision:
    """Load ``store`` into ``arena``; the decision closes rooms that cannot go on and wakes
    the recovered ones when their grace periods end. A clustered node loads only the
    rooms ``only`` names (those its lease took over: `server.cluster`); otherwise a node
    loads the rooms it created (all of them for a lone "local" node). Only the players of
    those rooms are loaded; the others come from the store when they say hello."""
    if only is None:  # another node's rooms in a shared database stay there
        stored = [r for r in store.open_rooms() if own_room(arena.config.node_id, r.id)]
    else:
        stored = store.open_rooms(only)
    ids = players_of(stored)
    for pid, name, kind, token_hash in store.players_with_ids(ids):
        arena.players.add(Player(pid, name, kind, token_hash))
    for pid, variant, rating, rd, vol, games in store.ratings_of(ids):
        arena.ratings.load(pid, variant, Rating(rating, rd, vol, games))
    decision, closed = load_rooms(arena, stored, now)
    log.info(
        "recovered %d players, %d rooms (%d games in progress); closed %d",
        len(arena.players),
        len(arena.rooms),
        sum(1 for r in arena.rooms.values() if r.playing),
        len(closed),
    )
    return decision


def players_of(rooms: list[StoredRoom]) -> list[str]:
    """Who ``rooms`` need in the roster: their seated players and those of their games."""
    seated = {pid for r in rooms for pid in r.seats_taken()}
    return sorted(seated | {p for r in rooms for g in r.games for p in (g.x, g.o)})


def load_rooms(arena: Arena, stored_rooms: list[StoredRoom], now: float) -> tuple[Decision, list[str]]:
    """Put ``stored_rooms`` into ``arena`` (at start, or taken over from a dead node: their
    players must be in the roster already): the decision, and the rooms closed instead."""
    decision = Decision()
    closed = []
    for stored in stored_rooms:
        try:
            room = _room(arena, stored, now)
        except (ArenaError, ValueError, KeyError):
            log.exception("room %s cannot be recovered; closing it", stored.id)
            closed.append(stored.id)
            continue
        if not any(room.seats):
            room.closed = True
            closed.append(room.id)
            decision.ops.append(room.saved())
            continue
        arena.rooms[room.id] = room
        due = room.next_deadline()
        if due is not None:
            decision.wake.append((due, room.id))
    return decision, closed


def _room(arena: Arena, stored: StoredRoom, now: float) -> Room:
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
        rules=arena.rules,
        node=None if arena.config.node_id == "local" else arena.config.node_id,
    )
    room.seq = room.announced_seq = stored.seq
    room.seats = [stored.seat_x, stored.seat_o]
    for mark in (Mark.X, Mark.O):
        pid = room.seats[mark]
        if pid is not None:
            room.names[pid] = arena.players[pid].name
            room.admitted.add(pid)
            room.away[mark] = now + arena.rules.grace
    for g in stored.games:
        room.games.append(g.id)
        room.names.setdefault(g.x, arena.players[g.x].name)
        room.names.setdefault(g.o, arena.players[g.o].name)
        if g.result is not None and g.reason != "aborted":
            for name, side in ((room.names[g.x], "x"), (room.names[g.o], "o")):
                room.score[name] = room.score.get(name, 0.0) + points(g.winner, side)
    if stored.games:
        g = stored.games[-1]
        state = State.replay(room.variant, [*g.opening, *g.moves], ply_cap=stored.ply_cap)
        left = None if g.x_ms is None or g.o_ms is None else (g.x_ms, g.o_ms)
        clock = Clock(control, left)
        game = Game(g.id, g.number, g.x, g.o, state, clock, g.rated, None)
        if g.result is not None:
            winner = None if g.winner is None else m.mark_named(g.winner)
            if game.state.outcome is None:
                game.state = game.state.ended(Outcome(Termination(g.reason or "aborted"), winner))
        elif g.moves:
            clock.start(state.to_move, now)
        else:
            game.first_move_due = now + arena.rules.first_move
        room.game = game
    return room
