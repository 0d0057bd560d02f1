"""While the store fails, sans-I/O: what the arena refuses, and the clocks' pause.

The writer (`server.writer`) never announces what it could not store; it tells the
shell when the store starts failing (a write failed, or has been stuck for
``ServerConfig.store_stall`` seconds) and when it works again, and the shell calls
`begin` and `end`. In between:

- requests that would change anything (a move, a join, a new player's hello, ...) are
  refused at once with ``store_unavailable`` and a ``retry_after``: nothing of them is
  decided, so nothing waits on the failing store; read-only requests still work;
- the shell runs no timers, so no flag falls, no first move is overdue and no grace
  period runs out while the players cannot move;
- `end` shifts every running clock and deadline by the outage's length (counted from
  when the failing write began), so nobody loses time to it, and asks to be woken at
  the rooms' new deadlines.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.errors import ErrorCode
from server.arena import Arena, Outage
from server.decision import Decision, Reply

#: Requests that read and change nothing the store keeps: answered during an outage.
READ_ONLY = frozenset({"ping", "lobby_subscribe", "lobby_unsubscribe", "get_leaderboard", "list_challenges"})

#: Seconds a refused client is told to wait before trying again.
RETRY_AFTER = 1.0


def begin(arena: Arena, reason: str, since: float) -> None:
    """The store fails since ``since`` (a write stuck that long counts from its start); told
    again with a better reason (a stuck write's error), only the reason changes."""
    if arena.outage is None:
        arena.outage = Outage(reason, since)
    else:
        arena.outage.reason = reason


def refused(arena: Arena, conn: int, message: m.ClientMessage) -> Decision | None:
    """The refusal of ``message`` while the store fails (None: it may go ahead).

    A returning player's hello (a token, no rooms) goes ahead: it stores nothing."""
    if arena.outage is None or message.type in READ_ONLY:
        return None
    if isinstance(message, m.Hello) and message.token is not None and not message.rooms:
        return None
    arena.errors[ErrorCode.STORE_UNAVAILABLE] += 1
    error = m.Error(
        code=ErrorCode.STORE_UNAVAILABLE,
        message=f"the server cannot store anything just now ({arena.outage.reason}); nothing was changed",
        ref=message.ref,
        retry_after=RETRY_AFTER,
    )
    return Decision(now=[Reply(conn, m.encode(error))])


def unreadable(arena: Arena, conn: int, message: m.ClientMessage, reason: str) -> Decision:
    """The refusal of ``message`` when the store could not be read for it (a player this
    node has not loaded, a leaderboard): ``store_unavailable``, never ``bad_token``."""
    arena.errors[ErrorCode.STORE_UNAVAILABLE] += 1
    error = m.Error(
        code=ErrorCode.STORE_UNAVAILABLE,
        message=f"the server cannot read its store just now ({reason}); nothing was changed",
        ref=message.ref,
        retry_after=RETRY_AFTER,
    )
    return Decision(now=[Reply(conn, m.encode(error))])


def unstored(arena: Arena, decision: Decision) -> Decision:
    """A decision made during an outage that stores nothing (a returning player's hello)
    is delivered at once rather than behind the batch the store refuses."""
    if arena.outage is not None and not decision.ops and decision.later:
        decision.now += decision.later
        decision.later = []
    return decision


def end(arena: Arena, now: float) -> Decision:
    """The store works again: every clock and deadline moves on by the outage's length."""
    outage, arena.outage = arena.outage, None
    decision = Decision()
    if outage is None:
        return decision
    lost = max(0.0, now - outage.since)
    for room in arena.rooms.values():
        game = room.game
        if game is not None and not game.state.is_over:
            if game.clock.running is not None:
                game.clock.since += lost
            if game.first_move_due is not None:
                game.first_move_due += lost
        room.away = {mark: due + lost for mark, due in room.away.items()}
        due = room.next_deadline()
        if due is not None:
            decision.wake.append((due, room.id))
    for arrangement in arena.arrangements.values():
        arrangement.due += lost
        decision.wake.append((arrangement.due, arrangement.room))
    for cid, challenge in arena.challenges.items():
        expires = getattr(challenge, "expires", None)
        if expires is not None:
            challenge.expires = expires + lost
            decision.wake.append((challenge.expires, f"challenge:{cid}"))
    return decision
