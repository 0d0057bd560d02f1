"""The arena's inputs: a message on a connection, a connection ending, a time coming.

Each returns the `Decision` the shell carries out, and never raises for anything a
client sent: a refusal becomes an `Error` reply that changed nothing.
"""

from __future__ import annotations

import logging

from protocol import messages as m
from protocol.errors import ArenaError
from server import outage, signup
from server.arena import Arena
from server.arrange import player_gone
from server.arrange import tick as arrangement_tick
from server.challenges import expire, withdraw_all
from server.decision import Close, Decision, Reply
from server.ops import PresenceSaved
from server.requests import HANDLERS
from server.room import Redirected

log = logging.getLogger("ttt.server")


def receive(
    arena: Arena, conn: int, message: m.ClientMessage, now: float, stopping: bool = False
) -> Decision:
    """Decide on one parsed message from connection ``conn``."""
    session = arena.sessions[conn]
    if session.closing:
        return Decision()
    ref = message.ref
    if session.player is None and not isinstance(message, m.Hello):
        decision = arena.refuse(conn, "hello_first", "the first message must be hello", ref)
        session.closing = True
        decision.now.append(Close(conn, 1008, "hello first"))
        return decision
    if stopping:
        return arena.refuse(conn, "shutting_down", "the server is shutting down", ref)
    if arena.outage is not None or isinstance(message, m.Hello):  # (a move asks neither)
        refusal = outage.refused(arena, conn, message) or signup.refused(arena, session, message, now)
        if refusal is not None:
            return refusal
    try:
        decision = HANDLERS[message.type](arena, session, message, now)
        return decision if arena.outage is None else outage.unstored(arena, decision)
    except Redirected as exc:
        return Decision(now=[Reply(conn, m.encode(m.Redirect(url=exc.url, room=exc.room, ref=ref)))])
    except ArenaError as exc:
        return arena.refuse(conn, exc.code, exc.message, ref, getattr(exc, "retry_after", None))
    except Exception:  # a bug: the client hears of it, the server and other rooms go on
        log.exception("failed to handle %s", message.type)
        return arena.refuse(conn, "internal", "the server failed to handle the message", ref)


def disconnect(arena: Arena, conn: int, now: float, stopping: bool = False) -> Decision:
    """Connection ``conn`` ended: its player's seats are held for the grace period, its
    challenges are withdrawn and arranged games it directs or plays in are called off."""
    session = arena.sessions.pop(conn, None)
    if session is not None and session.lobby:
        arena.subscribe_lobby(session, False)
    decision = Decision()
    if session is None or session.player is None:
        return decision
    player = session.player
    if arena.online.get(player.id) is not session:
        return decision
    del arena.online[player.id]
    arena.touch_lobby(player_id=player.id)
    if arena.config.clustered and arena.outage is None:
        decision.ops.append(PresenceSaved(player.id, False))
    decision += withdraw_all(arena, player, f"{player.name} went offline")
    if stopping:
        return decision
    decision += player_gone(arena, player.id)
    for room in list(arena.rooms.values()):
        if room.has(player.id) and not room.closed:
            decision += arena.settle(room, room.drop(player.id, now))
    return decision


def tick(arena: Arena, key: str, now: float) -> Decision:
    """A time asked for in `Decision.wake` has come (``key``: a room id or ``challenge:ID``)."""
    if key.startswith("challenge:"):
        return expire(arena, key.removeprefix("challenge:"), now)
    decision = Decision()
    room = arena.rooms.get(key)
    if room is not None:
        changes = room.tick(now)
        if changes.events or changes.ops:
            decision += arena.settle(room, changes)
        else:
            due = room.next_deadline()
            if due is not None:
                decision.wake.append((due, key))
    if key in arena.arrangements:
        decision += arrangement_tick(arena, key, now)
    return decision
