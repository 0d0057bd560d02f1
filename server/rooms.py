"""Finding, checking and opening rooms: the checks several requests share."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from protocol import messages as m
from protocol.errors import IllegalMove
from protocol.rules import State, Variant, find_variant
from server.players import Player
from server.room import Redirected, Refused, Room

if TYPE_CHECKING:
    from server.arena import Arena

__all__ = ["Redirected", "check_room_count", "check_settings", "find_room", "moving", "new_room"]


def find_room(arena: Arena, room_id: str) -> Room:
    room = arena.rooms.get(room_id)
    if room is None or room.closed:
        if room_id in arena.hosts:
            url = arena.hosts[room_id]
            if url is None:
                raise moving(room_id)
            raise Redirected(url, room_id)
        remote = arena.remote_rooms.get(room_id)
        if remote is not None and remote[1] in arena.remote_nodes:
            raise Redirected(arena.remote_nodes[remote[1]], room_id)
        raise Refused("no_such_room", f"no room {room_id!r}")
    return room


#: Seconds a client asking for a room between hosts is told to wait.
MOVING_RETRY = 0.5


def moving(room_id: str) -> Refused:
    """The refusal for a room whose node died and that no node has taken over yet."""
    return Refused(
        "room_moving",
        f"room {room_id!r} is moving to another node (its node stopped renewing its lease)",
        retry_after=MOVING_RETRY,
    )


def check_room_count(arena: Arena, player: Player) -> None:
    count = sum(1 for r in arena.rooms.values() if r.has(player.id) and not r.closed)
    if count >= arena.config.max_rooms:
        raise Refused("too_many_rooms", f"{player.name} is in {count} rooms already")


def check_settings(name: str, ply_cap: int | None, opening: list[int]) -> Variant:
    variant = find_variant(name)
    if ply_cap is not None and variant.max_marks is None:
        raise Refused("bad_ply_cap", f"{variant.name} ends when the board fills; it takes no ply cap")
    try:
        state = State.replay(variant, opening, ply_cap=ply_cap)
    except (IllegalMove, ValueError) as exc:
        raise Refused("bad_opening", f"the opening is not legal: {exc}") from exc
    if state.is_over:
        raise Refused("bad_opening", "the opening already ends the game")
    return variant


def new_room(
    arena: Arena, variant: Variant, req: m.CreateRoom | m.Challenge | m.ArrangeGame, private: bool
) -> Room:
    node = arena.config.node_id
    prefix = "" if node == "local" else f"{node}-"
    room_id = prefix + secrets.token_hex(4)
    while room_id in arena.rooms:
        room_id = prefix + secrets.token_hex(4)
    room = Room(
        room_id,
        variant,
        req.time_control,
        rated=req.rated,
        private=private,
        invite=secrets.token_urlsafe(6) if private else None,
        ply_cap=req.ply_cap,
        opening=tuple(req.opening),
        rules=arena.rules,
        node=None if node == "local" else node,
    )
    arena.rooms[room.id] = room
    return room
