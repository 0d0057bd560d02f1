"""Each request, from frame to decision: parse, check, ask the room, commit, reply.

`dispatch` is called for every frame a connection receives. It never raises:
every bad frame or refused request becomes an `Error` reply (with the request's
``ref`` when it could be read) and changes nothing.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from protocol import __version__
from protocol import messages as m
from protocol.errors import ArenaError
from protocol.rules import IllegalMove, Mark, State, Variant, find_variant
from server.app import ArenaServer, Conn, Player
from server.arrange import ArrangedChallenge, Arrangement, call_off
from server.clock import MARK_NAMES
from server.feed.shared import find_player
from server.feed.spectate import spectate_remote, stop_watching
from server.ops import PlayerSaved, StoreOp
from server.room import Changes, LateMove, Refused, Room
from server.store import hash_token

log = logging.getLogger("ttt.server.requests")

Handler = Callable[[ArenaServer, Conn, Any], None]


@dataclass(frozen=True, slots=True)
class PendingChallenge:
    id: str
    challenger: str
    opponent: str
    request: m.Challenge


def dispatch(server: ArenaServer, conn: Conn, frame: str | bytes) -> None:
    """Handle one frame from ``conn``."""
    server.metrics.frames += 1
    if conn.closing:
        return
    if isinstance(frame, bytes):
        _bad_frame(server, conn, "binary_frame", "send JSON as text frames", None)
        return
    try:
        message = m.parse_client(frame)
    except ValidationError as exc:
        first = exc.errors()[0]
        code = "bad_json" if first["type"] in ("json_invalid", "json_type") else "bad_message"
        if tuple(first["loc"][:2]) == ("hello", "name"):
            code = "bad_name"
        _bad_frame(server, conn, code, _describe(exc), _ref_of(frame))
        return
    ref = message.ref
    wait = conn.take_token(server.now(), server.config.rate, server.config.burst)
    if wait:
        server.error(conn, "rate_limited", "too many messages", ref, retry_after=round(wait, 3))
        return
    if conn.player is None and not isinstance(message, m.Hello):
        server.error(conn, "hello_first", "the first message must be hello", ref)
        server.close_conn(conn, 1008, "hello first")
        return
    if server.stopping:
        server.error(conn, "shutting_down", "the server is shutting down", ref)
        return
    try:
        HANDLERS[message.type](server, conn, message)
    except _Redirect as exc:
        conn.send(m.encode(m.Redirect(url=exc.url, room=exc.room, ref=ref)))
    except LateMove as exc:
        server.commit(server.rooms.get(getattr(message, "room", "")), exc.changes)
        server.error(conn, exc.code, exc.message, ref)
    except Refused as exc:
        server.error(conn, exc.code, exc.message, ref)
    except ArenaError as exc:
        server.error(conn, exc.code, exc.message, ref)
    except Exception:
        log.exception("failed to handle %s", message.type)
        server.error(conn, "internal", "the server failed to handle the message", ref)


def _bad_frame(server: ArenaServer, conn: Conn, code: str, message: str, ref: str | None) -> None:
    conn.bad_frames += 1
    server.error(conn, code, message, ref)
    if conn.bad_frames > server.config.max_bad_frames:
        server.close_conn(conn, 1008, "too many bad frames")


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err["loc"][1:]) or str(err["loc"][0]) if err["loc"] else ""
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    return "; ".join(parts)[:300]


def _ref_of(frame: str) -> str | None:
    """The ``ref`` of a frame that failed validation, when it can be read."""
    try:
        data = json.loads(frame)
    except ValueError:
        return None
    ref = data.get("ref") if isinstance(data, dict) else None
    return ref if isinstance(ref, str) and len(ref) <= 64 else None


def _me(conn: Conn) -> Player:
    assert conn.player is not None
    return conn.player


def _room(server: ArenaServer, room_id: str, ref: str | None) -> Room:
    room = server.rooms.get(room_id)
    if room is None or room.closed:
        remote = server.remote_rooms.get(room_id)
        if remote is not None and remote.node in server.remote_nodes:
            raise _Redirect(server.remote_nodes[remote.node], room_id)
        raise Refused("no_such_room", f"no room {room_id!r}")
    return room


class _Redirect(ArenaError):
    code = "redirect"

    def __init__(self, url: str, room: str) -> None:
        super().__init__(f"room {room} is on {url}")
        self.url = url
        self.room = room


def _check_room_count(server: ArenaServer, player: Player) -> None:
    count = sum(1 for r in server.rooms.values() if r.has(player.id) and not r.closed)
    if count >= server.config.max_rooms:
        raise Refused("too_many_rooms", f"you are in {count} rooms already")


def _settings(name: str, ply_cap: int | None, opening: list[int]) -> Variant:
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


def _new_room(
    server: ArenaServer, variant: Variant, req: m.CreateRoom | m.Challenge | m.ArrangeGame, private: bool
) -> Room:
    room = Room(
        server.new_room_id(),
        variant,
        req.time_control,
        rated=req.rated,
        private=private,
        invite=secrets.token_urlsafe(6) if private else None,
        ply_cap=req.ply_cap,
        opening=tuple(req.opening),
        rules=server.rules,
        node=None if server.config.node_id == "local" else server.config.node_id,
    )
    server.rooms[room.id] = room
    return room


def _joined(
    server: ArenaServer, room: Room, player: Player, ref: str | None, invite: bool = False
) -> m.Joined:
    role: Any = room.role(player.id) or "spectator"
    return m.Joined(
        room=room.id,
        role=role,
        invite=room.invite if invite else None,
        snapshot=room.snapshot(server.now()),
        ref=ref,
    )


def _mark(name: str) -> Mark:
    return Mark.X if name == "x" else Mark.O


def _reply(conn: Conn, message: m.Model) -> Callable[[], None]:
    text = m.encode(message)
    return lambda: conn.send(text)


# --- handlers ------------------------------------------------------------------------------


def on_hello(server: ArenaServer, conn: Conn, msg: m.Hello) -> None:
    if conn.player is not None:
        raise Refused("already_hello", "hello was already accepted on this connection")
    if msg.protocol != m.PROTOCOL_VERSION:
        server.error(conn, "protocol_version", f"this server speaks protocol {m.PROTOCOL_VERSION}", msg.ref)
        server.close_conn(conn, 1008, "unsupported protocol version")
        return
    ops: list[StoreOp] = []
    if msg.token is not None:
        token_hash = hash_token(msg.token)
        # feed hook (issue 7): a player another node created in the shared database
        player = server.by_token.get(token_hash) or find_player(server, token_hash=token_hash)
        if player is None:
            raise Refused("bad_token", "that token matches no player")
        token = msg.token
    else:
        if msg.name.casefold() in server.by_name or find_player(server, name=msg.name):  # feed hook
            raise Refused("name_taken", f"the name {msg.name!r} is taken; come back with its token")
        token = secrets.token_urlsafe(32)
        player = Player("p" + secrets.token_hex(6), msg.name, msg.kind, hash_token(token))
        server.players[player.id] = player
        server.by_name[player.name.casefold()] = player
        server.by_token[player.token_hash] = player
        ops.append(PlayerSaved(player.id, player.name, player.kind, player.token_hash))
    old = server.online.get(player.id)
    if old is not None:
        old.send(m.encode(m.Goodbye(reason="replaced by a new connection", close_code=1008)))
        server.close_conn(old, 1008, "replaced by a new connection")
    conn.player = player
    player.levels = tuple(msg.levels) if player.kind == "bot" else ()
    server.online[player.id] = conn
    server.touch_lobby(player_id=player.id)
    cfg = server.config
    welcome = m.Welcome(
        player=server.player_info(player.id),
        token=token,
        server_version=__version__,
        limits=m.Limits(
            max_frame=cfg.max_frame,
            rate_per_s=cfg.rate,
            burst=cfg.burst,
            grace_ms=int(cfg.grace * 1000),
            max_rooms=cfg.max_rooms,
        ),
        rooms=[r.id for r in server.rooms.values() if r.seat_of(player.id) is not None and not r.closed],
        ref=msg.ref,
    )
    server.commit(None, Changes(), then=_reply(conn, welcome), ops=ops)


def on_resume(server: ArenaServer, conn: Conn, msg: m.Resume) -> None:
    me = _me(conn)
    now = server.now()
    status: dict[str, Any] = {}
    catch_up: list[str] = []
    for rid, seq in msg.rooms.items():
        room = server.rooms.get(rid)
        if room is None or room.closed:
            status[rid] = "gone"
            continue
        # seq 0: the client knows nothing of the room yet (a fresh start): one snapshot.
        missed = room.replay_since(seq) if seq > 0 else None
        try:
            changes = room.back(me.id, me.name)
        except Refused:
            status[rid] = "gone"
            continue
        if missed is None:
            status[rid] = "snapshot"
            catch_up.append(m.encode(m.Snapshot(room=rid, seq=room.seq, snapshot=room.snapshot(now))))
        else:
            status[rid] = "replay"
            catch_up.extend(missed)
        server.commit(room, changes)
    # Sent now, ahead of the announcements still being written (the client drops repeats by seq).
    conn.send(m.encode(m.Resumed(rooms=status, ref=msg.ref)))
    for frame in catch_up:
        conn.send(frame)


def on_lobby_subscribe(server: ArenaServer, conn: Conn, msg: m.LobbySubscribe) -> None:
    conn.lobby = True
    conn.send(m.encode(server.lobby_snapshot(msg.ref)))


def on_lobby_unsubscribe(server: ArenaServer, conn: Conn, msg: m.LobbyUnsubscribe) -> None:
    conn.lobby = False
    conn.send(m.encode(m.Ok(ref=msg.ref)))


def on_get_leaderboard(server: ArenaServer, conn: Conn, msg: m.GetLeaderboard) -> None:
    variant = find_variant(msg.variant)
    entries = []
    for rank, (pid, r) in enumerate(server.ratings.leaderboard(variant.name, msg.limit), 1):
        p = server.players[pid]
        kind: Any = p.kind
        entries.append(
            m.LeaderboardEntry(
                rank=rank,
                player=pid,
                name=p.name,
                kind=kind,
                rating=round(r.rating, 1),
                rd=round(r.rd, 1),
                games=r.games,
            )
        )
    conn.send(m.encode(m.Leaderboard(variant=variant.name, entries=entries, ref=msg.ref)))


def on_create_room(server: ArenaServer, conn: Conn, msg: m.CreateRoom) -> None:
    me = _me(conn)
    variant = _settings(msg.variant, msg.ply_cap, msg.opening)
    _check_room_count(server, me)
    room = _new_room(server, variant, msg, msg.private)
    now = server.now()
    changes = Changes(ops=[room.saved()])
    if msg.seat is None:
        changes += room.watch(me.id, me.name)
    else:
        seat = secrets.choice((Mark.X, Mark.O)) if msg.seat == "random" else _mark(msg.seat)
        changes += room.sit(me.id, me.name, seat, now)
    server.commit(room, changes, then=_reply(conn, _joined(server, room, me, msg.ref, invite=True)))


def _admit(room: Room, player: Player, invite: str | None) -> None:
    if room.private and player.id not in room.admitted and invite != room.invite:
        raise Refused("no_such_room", f"no room {room.id!r} (or the invite code is wrong)")


def on_join(server: ArenaServer, conn: Conn, msg: m.Join) -> None:
    me = _me(conn)
    room = _room(server, msg.room, msg.ref)
    _admit(room, me, msg.invite)
    if not room.has(me.id):
        _check_room_count(server, me)
    seat = None if msg.seat is None else _mark(msg.seat)
    changes = room.sit(me.id, me.name, seat, server.now())
    server.commit(room, changes, then=_reply(conn, _joined(server, room, me, msg.ref)))


def on_spectate(server: ArenaServer, conn: Conn, msg: m.Spectate) -> None:
    me = _me(conn)
    if msg.room not in server.rooms and spectate_remote(server, conn, msg):  # feed hook (issue 7)
        return
    room = _room(server, msg.room, msg.ref)
    _admit(room, me, msg.invite)
    if not room.has(me.id):
        _check_room_count(server, me)
    changes = room.watch(me.id, me.name)
    server.commit(room, changes, then=_reply(conn, _joined(server, room, me, msg.ref)))


def on_leave(server: ArenaServer, conn: Conn, msg: m.Leave) -> None:
    if msg.room not in server.rooms and stop_watching(conn, msg.room):  # feed hook (issue 7)
        conn.send(m.encode(m.Ok(ref=msg.ref)))
        return
    room = _room(server, msg.room, msg.ref)
    changes = room.leave(_me(conn).id, server.now())
    server.commit(room, changes, then=_reply(conn, m.Ok(ref=msg.ref)))


def on_rematch(server: ArenaServer, conn: Conn, msg: m.Rematch) -> None:
    room = _room(server, msg.room, msg.ref)
    changes = room.ask_rematch(_me(conn).id, server.now())
    server.commit(room, changes, then=_reply(conn, m.Ok(ref=msg.ref)))


def on_move(server: ArenaServer, conn: Conn, msg: m.Move) -> None:
    room = _room(server, msg.room, msg.ref)
    changes = room.play(_me(conn).id, msg.cell, server.now())
    seq = next(e.seq for e in changes.events if isinstance(e, m.Moved))
    server.commit(room, changes, then=_reply(conn, m.Ok(ref=msg.ref, seq=seq)))


def on_resign(server: ArenaServer, conn: Conn, msg: m.Resign) -> None:
    room = _room(server, msg.room, msg.ref)
    changes = room.resign(_me(conn).id, server.now())
    server.commit(room, changes, then=_reply(conn, m.Ok(ref=msg.ref, seq=room.seq)))


def on_challenge(server: ArenaServer, conn: Conn, msg: m.Challenge) -> None:
    me = _me(conn)
    opponent = server.by_name.get(msg.opponent.casefold())
    if opponent is None or opponent.id not in server.online:
        raise Refused("no_such_player", f"no player named {msg.opponent!r} is online")
    if opponent.id == me.id:
        raise Refused("self_challenge", "you cannot challenge yourself")
    if msg.level is not None and msg.level not in opponent.levels:
        offered = ", ".join(opponent.levels) or "no levels"
        raise Refused("bad_level", f"{opponent.name} offers {offered}, not {msg.level!r}")
    _settings(msg.variant, msg.ply_cap, msg.opening)
    cid = "c" + secrets.token_hex(5)
    server.challenges[cid] = PendingChallenge(cid, me.id, opponent.id, msg)
    server.online[opponent.id].send(
        m.encode(
            m.ChallengeReceived(
                challenge=cid,
                challenger=server.player_info(me.id),
                variant=find_variant(msg.variant).name,
                colour=msg.colour,
                time_control=msg.time_control,
                rated=msg.rated,
                ply_cap=msg.ply_cap,
                opening=list(msg.opening),
                level=msg.level,
                seat=None if msg.colour == "random" else MARK_NAMES[_mark(msg.colour).other],
            )
        )
    )
    conn.send(m.encode(m.ChallengeSent(challenge=cid, ref=msg.ref)))


def on_arrange_game(server: ArenaServer, conn: Conn, msg: m.ArrangeGame) -> None:
    """Open a room for ``msg.x`` against ``msg.o``, watched by the director, and invite both."""
    me = _me(conn)
    players: list[Player] = []
    for name in (msg.x, msg.o):
        player = server.by_name.get(name.casefold())
        if player is None or player.id not in server.online:
            raise Refused("no_such_player", f"no player named {name!r} is online")
        players.append(player)
    x, o = players
    if x.id == o.id:
        raise Refused("same_player", f"{x.name} cannot play both seats")
    if me.id in (x.id, o.id):
        raise Refused("self_challenge", "you cannot arrange a game you play in; challenge the other player")
    variant = _settings(msg.variant, msg.ply_cap, msg.opening)
    _check_room_count(server, me)
    room = _new_room(server, variant, msg, private=False)
    room.reserve(x.id, o.id)
    changes = Changes(ops=[room.saved()]) + room.watch(me.id, me.name)
    cids = ("c" + secrets.token_hex(5), "c" + secrets.token_hex(5))
    arr = Arrangement(room.id, me.id, (x.id, o.id), cids, server.now() + server.config.answer_timeout)
    server.arrangements[room.id] = arr
    for mark, player in zip((Mark.X, Mark.O), players, strict=True):
        server.challenges[cids[mark]] = ArrangedChallenge(cids[mark], me.id, player.id, room.id, mark)
    server.wake_at(arr.due, room.id)
    arranged = m.GameArranged(room=room.id, x=x.name, o=o.name, ref=msg.ref)

    def invite() -> None:
        conn.send(m.encode(arranged))
        if server.arrangements.get(room.id) is not arr:
            return  # called off already (a player went offline meanwhile)
        arr.invited = True
        for mark, player in zip((Mark.X, Mark.O), players, strict=True):
            other = players[1 - mark]
            received = m.ChallengeReceived(
                challenge=cids[mark],
                challenger=server.player_info(me.id),
                variant=variant.name,
                colour=MARK_NAMES[mark.other],
                time_control=msg.time_control,
                rated=msg.rated,
                ply_cap=msg.ply_cap,
                opening=list(msg.opening),
                seat=MARK_NAMES[mark],
                opponent=other.name,
            )
            target = server.online.get(player.id)
            if target is not None:
                target.send(m.encode(received))

    server.commit(room, changes, then=invite)


def _take_challenge(server: ArenaServer, me: Player, cid: str) -> PendingChallenge | ArrangedChallenge:
    pending: PendingChallenge | ArrangedChallenge | None = server.challenges.get(cid)
    if pending is None or pending.opponent != me.id:
        raise Refused("no_such_challenge", f"no pending challenge {cid!r} for you")
    del server.challenges[cid]
    return pending


def _accept_arranged(
    server: ArenaServer, conn: Conn, me: Player, pending: ArrangedChallenge, ref: str | None
) -> None:
    """Sit ``me`` in the arranged room; the second to sit starts the game."""
    arr: Arrangement | None = server.arrangements.get(pending.room)
    if arr is None:  # pragma: no cover - calling off withdraws the challenges with it
        raise Refused("no_such_challenge", "that arranged game was called off")
    arr.answered.add(pending.seat)
    room = server.rooms.get(pending.room)
    if room is None or room.closed:
        call_off(server, arr, [], "the room closed")
        raise Refused("no_such_challenge", "that arranged game was called off: its room closed")
    try:
        if not room.has(me.id):
            _check_room_count(server, me)
        changes = room.sit(me.id, me.name, pending.seat, server.now())
    except Refused as exc:
        call_off(
            server, arr, [(pending.seat, "declined", exc.message)], f"{me.name} could not sit: {exc.code}"
        )
        raise
    if room.playing:
        del server.arrangements[room.id]  # both seated: an ordinary game from here on
    server.commit(room, changes, then=_reply(conn, _joined(server, room, me, ref)))


def on_accept_challenge(server: ArenaServer, conn: Conn, msg: m.AcceptChallenge) -> None:
    me = _me(conn)
    pending = _take_challenge(server, me, msg.challenge)
    if isinstance(pending, ArrangedChallenge):
        _accept_arranged(server, conn, me, pending, msg.ref)
        return
    challenger_conn = server.online.get(pending.challenger)
    if challenger_conn is None:
        raise Refused("no_such_challenge", "the challenger has gone")
    req = pending.request
    challenger = server.players[pending.challenger]
    variant = _settings(req.variant, req.ply_cap, req.opening)
    room = _new_room(server, variant, req, private=False)
    colour = secrets.choice((Mark.X, Mark.O)) if req.colour == "random" else _mark(req.colour)
    now = server.now()
    changes = Changes(ops=[room.saved()])
    changes += room.sit(challenger.id, challenger.name, colour, now)
    changes += room.sit(me.id, me.name, colour.other, now)
    joined = _joined(server, room, me, msg.ref)
    accepted = m.ChallengeAccepted(
        challenge=pending.id, room=room.id, role=MARK_NAMES[colour], snapshot=joined.snapshot
    )

    def reply() -> None:
        challenger_conn.send(m.encode(accepted))
        conn.send(m.encode(joined))

    server.commit(room, changes, then=reply)


def on_decline_challenge(server: ArenaServer, conn: Conn, msg: m.DeclineChallenge) -> None:
    me = _me(conn)
    pending = _take_challenge(server, me, msg.challenge)
    if isinstance(pending, ArrangedChallenge):
        arr: Arrangement | None = server.arrangements.get(pending.room)
        if arr is not None:
            arr.answered.add(pending.seat)
            call_off(server, arr, [(pending.seat, "declined", msg.reason)], f"{me.name} declined")
        conn.send(m.encode(m.Ok(ref=msg.ref)))
        return
    challenger = server.online.get(pending.challenger)
    if challenger is not None:
        challenger.send(m.encode(m.ChallengeDeclined(challenge=pending.id, by=me.name, reason=msg.reason)))
    conn.send(m.encode(m.Ok(ref=msg.ref)))


def on_ping(server: ArenaServer, conn: Conn, msg: m.Ping) -> None:
    conn.send(m.encode(m.Pong(ref=msg.ref)))


HANDLERS: dict[str, Handler] = {
    "hello": on_hello,
    "resume": on_resume,
    "lobby_subscribe": on_lobby_subscribe,
    "lobby_unsubscribe": on_lobby_unsubscribe,
    "get_leaderboard": on_get_leaderboard,
    "create_room": on_create_room,
    "join": on_join,
    "spectate": on_spectate,
    "leave": on_leave,
    "rematch": on_rematch,
    "challenge": on_challenge,
    "arrange_game": on_arrange_game,
    "accept_challenge": on_accept_challenge,
    "decline_challenge": on_decline_challenge,
    "move": on_move,
    "resign": on_resign,
    "ping": on_ping,
}
