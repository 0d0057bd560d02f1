"""Each request, from message to decision: check, ask the room, and say what to store and send.

Every handler takes the arena, the session the message came on, the message and the
time, and returns a `Decision`; a refusal raises an `ArenaError` (the arena turns it into
an `Error` reply) and changes nothing. Nothing here sends, stores or reads a clock.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from protocol import __version__
from protocol import messages as m
from protocol.errors import ArenaError, ErrorCode
from protocol.rules import Mark, find_variant
from server import challenges, frames
from server.arena import Arena
from server.arrange import ArrangedChallenge, Arrangement, call_off
from server.challenges import Pending
from server.config import ServerConfig
from server.decision import Attach, Close, Decision, Out, Reply, Tell, Unwelcome
from server.frames import MovedEvent
from server.ops import PlayerSaved, PresenceSaved
from server.players import Player, Session
from server.room import Changes, Redirected, Refused, Room
from server.rooms import check_room_count, check_settings, find_room, moving, new_room
from server.store import hash_token

Handler = Callable[[Arena, Session, Any, float], Decision]


def _joined(
    arena: Arena, session: Session, room: Room, ref: str | None, now: float, invite: bool = False
) -> Out:
    """Answer ``session`` with `Joined` once stored; from then on it hears the room."""
    me = arena.player_of(session)
    role: Any = room.role(me.id) or "spectator"
    snapshot = room.snapshot(now)
    joined = m.Joined(
        room=room.id, role=role, invite=room.invite if invite else None, snapshot=snapshot, ref=ref
    )
    return Attach(session.conn, room.id, (m.encode(joined),), snapshot.seq)


def _ok(session: Session, ref: str | None, seq: int | None = None) -> Reply:
    return Reply(session.conn, frames.ok(ref, seq))


def _caused(room: Room, changes: Changes) -> int | None:
    """The seq of the last event ``changes`` made (what `Ok.seq` names)."""
    return changes.events[-1].seq if changes.events else None


# --- hello and resume --------------------------------------------------------------------------


def on_hello(arena: Arena, session: Session, msg: m.Hello, now: float) -> Decision:
    if session.player is not None:
        raise Refused("already_hello", "hello was already accepted on this connection")
    if msg.protocol != m.PROTOCOL_VERSION:
        decision = arena.refuse(
            session.conn, "protocol_version", f"this server speaks protocol {m.PROTOCOL_VERSION}", msg.ref
        )
        session.closing = True
        decision.now.append(Close(session.conn, 1008, "unsupported protocol version"))
        return decision
    decision = Decision()
    if msg.token is not None:
        player = arena.players.with_token(hash_token(msg.token))
        if player is None:
            raise Refused("bad_token", "that token matches no player")
        token = msg.token
    else:
        if arena.players.named(msg.name) is not None:
            raise Refused("name_taken", f"the name {msg.name!r} is taken; come back with its token")
        if msg.rooms:
            raise Refused("bad_token", "only a returning player (with its token) can resume rooms")
        token = secrets.token_urlsafe(32)
        player = Player("p" + secrets.token_hex(6), msg.name, msg.kind, hash_token(token))
        arena.players.add(player)
        decision.ops.append(PlayerSaved(player.id, player.name, player.kind, player.token_hash))
        taken = m.Error(
            code=ErrorCode.NAME_TAKEN,
            message=f"the name {msg.name!r} is taken; come back with its token",
            ref=msg.ref,
        )
        decision.rejected = [Unwelcome(session.conn, player.id), Reply(session.conn, m.encode(taken))]
    old = arena.online.get(player.id)
    if old is not None:  # the newest connection wins: the old one is often half dead
        goodbye = m.encode(m.Goodbye(reason="replaced by a new connection", close_code=1008))
        decision.now += [Reply(old.conn, goodbye), Close(old.conn, 1008, "replaced by a new connection")]
        old.closing = True
        old.rooms.clear()
    session.player = player
    player.levels = tuple(msg.levels) if player.kind == "bot" else ()
    arena.online[player.id] = session
    arena.touch_lobby(player_id=player.id)
    cfg = arena.config
    if cfg.clustered and arena.outage is None:  # other nodes send challenges for it here
        decision.ops.append(PresenceSaved(player.id, True))
    here, _ = _hosted(arena, msg.rooms or {})  # rooms on other nodes: resumed there
    status, catch_up = _resume(arena, session, here, now)
    welcome = m.Welcome(
        player=arena.player_info(player.id),
        token=token,
        server_version=__version__,
        limits=limits(cfg, player.name),
        rooms=[r.id for r in arena.rooms.values() if r.seat_of(player.id) is not None and not r.closed],
        resumed=status if msg.rooms else None,
        ref=msg.ref,
    )
    decision += catch_up
    decision.later.insert(0, Reply(session.conn, m.encode(welcome)))
    return decision


def limits(cfg: ServerConfig, name: str) -> m.Limits:
    """What `Welcome.limits` tells the player ``name``: the figures the server enforces (a
    trusted player's connection gets its larger allowance, outside its address's budget)."""
    rate, burst = cfg.allowance(name)  # a trusted player's pacer may use all of it
    return m.Limits(
        max_frame=cfg.max_frame,
        rate_per_s=rate,
        burst=burst,
        grace_ms=round(cfg.grace * 1000),
        max_rooms=cfg.max_rooms,
        challenge_ttl_ms=round(cfg.challenge_ttl * 1000),
        max_challenges=cfg.max_challenges,
        max_challenges_to=cfg.max_challenges_to,
        max_challenges_to_per_ip=cfg.max_challenges_to_per_ip,
        ip_rate_per_s=cfg.ip_rate,
        ip_burst=cfg.ip_burst,
        max_conns_per_ip=cfg.max_conns_per_ip,
        max_flood=cfg.max_flood,
        max_bad_frames=cfg.max_bad_frames,
        write_limit=cfg.write_limit,
        stall_timeout_ms=round(cfg.stall_timeout * 1000),
        first_move_ms=round(cfg.first_move * 1000),
        answer_timeout_ms=round(cfg.answer_timeout * 1000),
        replay_events=cfg.replay_events,
        signup_burst=cfg.signup_burst,
        signup_rate_per_s=cfg.signup_rate,
    )


def _resume(
    arena: Arena, session: Session, rooms: dict[str, int], now: float
) -> tuple[dict[str, Any], Decision]:
    """Rejoin ``rooms`` (id -> last seq seen): per room how, and the decision whose
    ``later`` answers each room (its replay or snapshot) after the welcome or `Resumed`."""
    me = arena.player_of(session)
    status: dict[str, Any] = {}
    decision = Decision()
    for rid, seq in rooms.items():
        room = arena.rooms.get(rid)
        if room is None or room.closed:
            status[rid] = "gone"
            continue
        try:
            changes = room.back(me.id, me.name)
        except Refused:
            status[rid] = "gone"
            continue
        # seq 0: the client knows nothing of the room yet (a fresh start): one snapshot.
        if seq > 0 and room.can_replay(seq):
            status[rid] = "replay"
            attach = Attach(session.conn, room.id, (), seq, replay=True)
        else:
            status[rid] = "snapshot"
            snapshot = room.snapshot(now)
            frame = m.encode(m.Snapshot(room=rid, seq=snapshot.seq, snapshot=snapshot))
            attach = Attach(session.conn, room.id, (frame,), snapshot.seq)
        decision += arena.settle(room, changes, attach)
    return status, decision


def _hosted(arena: Arena, rooms: dict[str, int]) -> tuple[dict[str, int], list[str]]:
    """``rooms`` split: those to resume here (hosted here, or hosted nowhere: "gone"), and
    those another node hosts (or is taking over) as the lease table said (`Arena.hosts`)."""
    here: dict[str, int] = {}
    elsewhere: list[str] = []
    for rid, seq in rooms.items():
        room = arena.rooms.get(rid)
        if (room is None or room.closed) and rid in arena.hosts:
            elsewhere.append(rid)
        else:
            here[rid] = seq
    return here, elsewhere


def on_resume(arena: Arena, session: Session, msg: m.Resume, now: float) -> Decision:
    here, elsewhere = _hosted(arena, msg.rooms)
    if elsewhere and not any(rid in arena.rooms for rid in here):
        # Nothing to resume here: the client follows the redirect and asks the host.
        for rid in elsewhere:
            url = arena.hosts[rid]
            if url is not None:
                raise Redirected(url, rid)
        raise moving(elsewhere[0])
    status, catch_up = _resume(arena, session, here, now)
    catch_up.later.insert(0, Reply(session.conn, m.encode(m.Resumed(rooms=status, ref=msg.ref))))
    return catch_up


# --- lobby -----------------------------------------------------------------------------------


def on_lobby_subscribe(arena: Arena, session: Session, msg: m.LobbySubscribe, now: float) -> Decision:
    arena.subscribe_lobby(session, True)
    return Decision(now=[Reply(session.conn, m.encode(arena.lobby_snapshot(msg.ref)))])


def on_lobby_unsubscribe(arena: Arena, session: Session, msg: m.LobbyUnsubscribe, now: float) -> Decision:
    arena.subscribe_lobby(session, False)
    return Decision(now=[_ok(session, msg.ref)])


def on_get_leaderboard(arena: Arena, session: Session, msg: m.GetLeaderboard, now: float) -> Decision:
    variant = find_variant(msg.variant)
    entries = []
    for rank, (pid, r) in enumerate(arena.ratings.leaderboard(variant.name, msg.limit), 1):
        p = arena.players[pid]
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
    board = m.Leaderboard(variant=variant.name, entries=entries, ref=msg.ref)
    return Decision(now=[Reply(session.conn, m.encode(board))])


# --- rooms -------------------------------------------------------------------------------------


def on_create_room(arena: Arena, session: Session, msg: m.CreateRoom, now: float) -> Decision:
    me = arena.player_of(session)
    variant = check_settings(msg.variant, msg.ply_cap, msg.opening)
    check_room_count(arena, me)
    room = new_room(arena, variant, msg, msg.private)
    changes = Changes(ops=[room.saved()])
    if msg.seat is None:  # documented: the creator watches
        changes += room.watch(me.id, me.name)
    else:
        seat = secrets.choice((Mark.X, Mark.O)) if msg.seat == "random" else m.mark_named(msg.seat)
        changes += room.sit(me.id, me.name, seat, now)
    return arena.settle(room, changes, _joined(arena, session, room, msg.ref, now, invite=True))


def _admit(room: Room, player: Player, invite: str | None) -> None:
    if room.private and player.id not in room.admitted and invite != room.invite:
        raise Refused("no_such_room", f"no room {room.id!r} (or the invite code is wrong)")


def on_join(arena: Arena, session: Session, msg: m.Join, now: float) -> Decision:
    me = arena.player_of(session)
    room = find_room(arena, msg.room)
    _admit(room, me, msg.invite)
    if not room.has(me.id):
        check_room_count(arena, me)
    seat = None if msg.seat is None else m.mark_named(msg.seat)
    changes = room.sit(me.id, me.name, seat, now)
    return arena.settle(room, changes, _joined(arena, session, room, msg.ref, now))


def on_spectate(arena: Arena, session: Session, msg: m.Spectate, now: float) -> Decision:
    me = arena.player_of(session)
    room = find_room(arena, msg.room)
    _admit(room, me, msg.invite)
    if not room.has(me.id):
        check_room_count(arena, me)
    changes = room.watch(me.id, me.name)
    return arena.settle(room, changes, _joined(arena, session, room, msg.ref, now))


def on_leave(arena: Arena, session: Session, msg: m.Leave, now: float) -> Decision:
    room = find_room(arena, msg.room)
    me = arena.player_of(session).id
    if room.private and not room.has(me) and me not in room.admitted:  # as if there were none
        raise Refused("no_such_room", f"no room {msg.room!r}")
    changes = room.leave(me, now)
    session.rooms.pop(room.id, None)
    return arena.settle(room, changes, _ok(session, msg.ref, _caused(room, changes)))


def on_rematch(arena: Arena, session: Session, msg: m.Rematch, now: float) -> Decision:
    room = find_room(arena, msg.room)
    changes = room.ask_rematch(arena.player_of(session).id, now)
    return arena.settle(room, changes, _ok(session, msg.ref, _caused(room, changes)))


def on_move(arena: Arena, session: Session, msg: m.Move, now: float) -> Decision:
    room = find_room(arena, msg.room)
    me = arena.player_of(session)
    due = room.next_deadline()
    if due is None or now < due:  # nothing is due: the move decides alone (the usual case)
        changes = room.play(me.id, msg.cell, now)
        return _moved(arena, session, room, changes, msg.ref)
    late = room.tick(now)  # a flag that fell before this move decides the game first
    decision = arena.settle(room, late) if late.events or late.ops else Decision()
    try:
        changes = room.play(me.id, msg.cell, now)
    except ArenaError as exc:
        if decision.empty:
            raise
        text = "the game ended before the move arrived" if exc.code == "game_over" else exc.message
        decision += arena.refuse(session.conn, exc.code, text, msg.ref)
        return decision
    decision += _moved(arena, session, room, changes, msg.ref)
    return decision


def _moved(arena: Arena, session: Session, room: Room, changes: Changes, ref: str | None) -> Decision:
    moved = changes.events[0]  # `Room.play` puts the move first (a game_over may follow)
    assert type(moved) is MovedEvent
    return arena.settle(room, changes, _ok(session, ref, moved.seq))


def on_resign(arena: Arena, session: Session, msg: m.Resign, now: float) -> Decision:
    room = find_room(arena, msg.room)
    changes = room.resign(arena.player_of(session).id, now)
    return arena.settle(room, changes, _ok(session, msg.ref, _caused(room, changes)))


# --- challenges and arranged games ------------------------------------------------------------------


def on_challenge(arena: Arena, session: Session, msg: m.Challenge, now: float) -> Decision:
    return challenges.send(arena, session, msg, now)


def on_list_challenges(arena: Arena, session: Session, msg: m.ListChallenges, now: float) -> Decision:
    return challenges.listing(arena, session, msg, now)


def on_cancel_challenge(arena: Arena, session: Session, msg: m.CancelChallenge, now: float) -> Decision:
    return challenges.cancel(arena, session, msg, now)


def on_accept_challenge(arena: Arena, session: Session, msg: m.AcceptChallenge, now: float) -> Decision:
    challenge = challenges.take(arena, arena.player_of(session), msg.challenge)
    if isinstance(challenge, ArrangedChallenge):
        return _accept_arranged(arena, session, challenge, msg.ref, now)
    return challenges.accept(arena, session, challenge, msg.ref, now)


def on_decline_challenge(arena: Arena, session: Session, msg: m.DeclineChallenge, now: float) -> Decision:
    me = arena.player_of(session)
    challenge = challenges.take(arena, me, msg.challenge)
    if isinstance(challenge, Pending):
        return challenges.decline(arena, session, challenge, msg)
    decision = Decision(now=[_ok(session, msg.ref)])
    arr = arena.arrangements.get(challenge.room)
    if arr is not None:
        arr.answered.add(challenge.seat)
        decision += call_off(arena, arr, [(challenge.seat, "declined", msg.reason)], f"{me.name} declined")
    return decision


def on_arrange_game(arena: Arena, session: Session, msg: m.ArrangeGame, now: float) -> Decision:
    """Open a room for ``msg.x`` against ``msg.o``, watched by the director, and invite both."""
    me = arena.player_of(session)
    players: list[Player] = []
    for name in (msg.x, msg.o):
        player = arena.players.named(name)
        if player is None or player.id not in arena.online:
            raise Refused("no_such_player", f"no player named {name!r} is online")
        players.append(player)
    x, o = players
    if x.id == o.id:
        raise Refused("same_player", f"{x.name} cannot play both seats")
    if me.id in (x.id, o.id):
        raise Refused("self_challenge", "you cannot arrange a game you play in; challenge the other player")
    variant = check_settings(msg.variant, msg.ply_cap, msg.opening)
    check_room_count(arena, me)
    room = new_room(arena, variant, msg, private=False)
    room.reserve(x.id, o.id)
    changes = Changes(ops=[room.saved()]) + room.watch(me.id, me.name)
    cids = ("c" + secrets.token_hex(5), "c" + secrets.token_hex(5))
    arr = Arrangement(room.id, me.id, (x.id, o.id), cids, now + arena.config.answer_timeout)
    arena.arrangements[room.id] = arr
    invitations: list[Out] = [
        Reply(session.conn, m.encode(m.GameArranged(room=room.id, x=x.name, o=o.name, ref=msg.ref)))
    ]
    for mark, player in zip((Mark.X, Mark.O), players, strict=True):
        arena.challenges[cids[mark]] = ArrangedChallenge(cids[mark], me.id, player.id, room.id, mark)
        received = m.ChallengeReceived(
            challenge=cids[mark],
            challenger=arena.player_info(me.id),
            variant=variant.name,
            colour=m.MARK_NAMES[mark.other],
            time_control=msg.time_control,
            rated=msg.rated,
            ply_cap=msg.ply_cap,
            opening=list(msg.opening),
            seat=m.MARK_NAMES[mark],
            opponent=players[1 - mark].name,
        )
        invitations.append(Tell(player.id, m.encode(received), challenge=cids[mark]))
    watching = Attach(session.conn, room.id, (), room.seq)  # the director hears the room from the start
    decision = arena.settle(room, changes, watching, *invitations)
    decision.wake.append((arr.due, room.id))
    return decision


def _accept_arranged(
    arena: Arena, session: Session, challenge: ArrangedChallenge, ref: str | None, now: float
) -> Decision:
    """Sit the player in the arranged room; the second to sit starts the game."""
    me = arena.player_of(session)
    arr = arena.arrangements.get(challenge.room)
    if arr is None:  # pragma: no cover - calling off withdraws the challenges with it
        raise Refused("no_such_challenge", "that arranged game was called off")
    arr.answered.add(challenge.seat)
    room = arena.rooms.get(challenge.room)
    if room is None or room.closed:
        decision = call_off(arena, arr, [], "the room closed")
        decision += arena.refuse(
            session.conn, "no_such_challenge", "that arranged game was called off: its room closed", ref
        )
        return decision
    try:
        if not room.has(me.id):
            check_room_count(arena, me)
        changes = room.sit(me.id, me.name, challenge.seat, now)
    except Refused as exc:
        decision = call_off(
            arena, arr, [(challenge.seat, "declined", exc.message)], f"{me.name} could not sit: {exc.code}"
        )
        decision += arena.refuse(session.conn, exc.code, exc.message, ref)
        return decision
    if room.playing:
        del arena.arrangements[room.id]  # both seated: an ordinary game from here on
    return arena.settle(room, changes, _joined(arena, session, room, ref, now))


def on_ping(arena: Arena, session: Session, msg: m.Ping, now: float) -> Decision:
    return Decision(now=[Reply(session.conn, m.encode(m.Pong(ref=msg.ref)))])


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
    "list_challenges": on_list_challenges,
    "cancel_challenge": on_cancel_challenge,
    "arrange_game": on_arrange_game,
    "accept_challenge": on_accept_challenge,
    "decline_challenge": on_decline_challenge,
    "move": on_move,
    "resign": on_resign,
    "ping": on_ping,
}
