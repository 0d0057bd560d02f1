"""Arranged games: a client (a tournament director) seats two other players in a room.

`ArrangeGame` opens a room whose seats are kept for the two named players, with the
director watching it, and sends each player an ordinary `ChallengeReceived` naming
its seat. A player who accepts sits down (`Joined`); once both have, the game starts
like any other and the arrangement is over. This module keeps the arrangements still
waiting and calls them off: when a player declines, when a player or the director
goes offline, or when a seat is still empty at the deadline (``answer_timeout``).
Calling off tells the director who was at fault (`ChallengeDeclined` with ``room``
and ``cause``), withdraws the challenges not yet answered (`ChallengeCancelled`) and
closes the room (`RoomClosed` to whoever sat down or watches).

`Arrangement` decides who is late at a given time; the functions below turn that
into a `Decision` for the arena. Arrangements live in memory only: after a restart the room is
found empty and closed (`server.recovery`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from protocol import messages as m
from protocol.rules import Mark
from server.decision import Decision, Tell

if TYPE_CHECKING:
    from server.arena import Arena
    from server.room import Room

Cause = Literal["declined", "gone", "no_answer"]
#: A player at fault: its seat, how, and the reason told to the director.
Fault = tuple[Mark, Cause, str]


@dataclass(frozen=True, slots=True)
class ArrangedChallenge:
    """A challenge an arrangement sent to one of its players (kept in ``Arena.challenges``)."""

    id: str
    #: The director's player id.
    challenger: str
    #: The invited player's id.
    opponent: str
    room: str
    seat: Mark


@dataclass
class Arrangement:
    """A game arranged in ``room`` and not started yet. Ids and challenges by seat (X, O)."""

    room: str
    director: str
    players: tuple[str, str]
    challenges: tuple[str, str]
    #: When seats still empty are called late (monotonic seconds).
    due: float
    answered: set[Mark] = field(default_factory=set)
    #: Whether the players were sent their challenges (delivered after the room was stored).
    invited: bool = False

    def seat_of(self, player: str) -> Mark | None:
        for mark in (Mark.X, Mark.O):
            if self.players[mark] == player:
                return mark
        return None

    def late(self, room: Room, now: float) -> list[Mark] | None:
        """The seats whose player has not sat down by ``now``; None before the deadline."""
        if now < self.due:
            return None
        return [mk for mk in (Mark.X, Mark.O) if room.seats[mk] != self.players[mk]]


def call_off(arena: Arena, arr: Arrangement, faults: list[Fault], why: str) -> Decision:
    """End ``arr`` without a game: tell the director who was at fault, withdraw the
    challenges not answered yet, and close the room.

    The news is delivered after what was decided before it is stored, so the director
    hears it after `GameArranged` and before `RoomClosed`, even when a player dropped at once.
    """
    arena.arrangements.pop(arr.room, None)
    for cid in arr.challenges:
        arena.challenges.pop(cid, None)
    decision = Decision()
    for mark in (Mark.X, Mark.O):
        if arr.invited and mark not in arr.answered:
            cancelled = m.ChallengeCancelled(challenge=arr.challenges[mark], reason=why)
            decision.later.append(Tell(arr.players[mark], m.encode(cancelled)))
    for mark, cause, reason in faults:
        declined = m.ChallengeDeclined(
            challenge=arr.challenges[mark],
            by=arena.players[arr.players[mark]].name,
            reason=reason,
            room=arr.room,
            cause=cause,
        )
        decision.later.append(Tell(arr.director, m.encode(declined)))
    room = arena.rooms.get(arr.room)
    if room is not None and not room.closed:
        decision += arena.settle(room, room.cancel(why))
    return decision


def player_gone(arena: Arena, player: str) -> Decision:
    """``player`` went offline: call off every arrangement it directs or plays in."""
    decision = Decision()
    for arr in list(arena.arrangements.values()):
        mark = arr.seat_of(player)
        if arr.director == player:
            decision += call_off(arena, arr, [], "the director went offline")
        elif mark is not None:
            name = arena.players[player].name
            decision += call_off(arena, arr, [(mark, "gone", "went offline")], f"{name} went offline")
    return decision


def tick(arena: Arena, room_id: str, now: float) -> Decision:
    """The deadline of the arrangement in ``room_id`` may have come: call it off if a seat is empty."""
    arr = arena.arrangements.get(room_id)
    if arr is None:
        return Decision()
    room = arena.rooms.get(room_id)
    if room is None or room.closed:
        return call_off(arena, arr, [], "the room closed")
    late = arr.late(room, now)
    if late is None:
        return Decision()
    if not late:  # pragma: no cover - both seated means the game started and the arrangement ended
        arena.arrangements.pop(room_id, None)
        return Decision()
    seconds = f"{arena.config.answer_timeout:g}"
    faults: list[Fault] = [(mk, "no_answer", f"did not take the seat within {seconds} s") for mk in late]
    names = " and ".join(arena.players[arr.players[mk]].name for mk in late)
    return call_off(arena, arr, faults, f"{names} did not take the seat in time")
