"""Challenges between two players, sans-I/O: send, list, cancel, accept, decline, expire.

A challenge stands for ``config.challenge_ttl`` seconds; then both sides get
`ChallengeExpired` and answering it gets ``no_such_challenge``. A player may have
``max_challenges`` pending as challenger and ``max_challenges_to`` as the one
challenged, at most ``max_challenges_to_per_ip`` of these from one address; over any
cap the challenge is refused at once (``too_many_challenges``), so a flood of
challenges never reaches the target. Challenges of arranged games
(`server.arrange.ArrangedChallenge`) share the table but not these rules.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol import messages as m
from protocol.rules import Mark, find_variant
from server.arrange import ArrangedChallenge
from server.decision import Attach, Decision, Reply, Tell
from server.players import Player, Session
from server.room import Changes, Redirected, Refused
from server.rooms import check_room_count, check_settings, new_room

if TYPE_CHECKING:
    from server.arena import Arena


@dataclass(frozen=True, slots=True)
class Pending:
    """A challenge waiting for its answer."""

    id: str
    challenger: str
    opponent: str
    request: m.Challenge
    #: When it expires (monotonic seconds).
    expires: float

    def info(self, arena: Arena, now: float) -> m.ChallengeInfo:
        return m.ChallengeInfo(
            challenge=self.id,
            challenger=arena.players[self.challenger].name,
            opponent=arena.players[self.opponent].name,
            variant=find_variant(self.request.variant).name,
            colour=self.request.colour,
            rated=self.request.rated,
            expires_ms=max(0, int((self.expires - now) * 1000)),
        )


def _address(arena: Arena, challenge: Pending) -> str | None:
    """Where ``challenge``'s challenger is connected from (a challenger who goes offline
    withdraws its challenges, so it is online)."""
    session = arena.online.get(challenge.challenger)
    return None if session is None else session.ip


def _pending(arena: Arena) -> list[Pending]:
    return [c for c in arena.challenges.values() if isinstance(c, Pending)]


def send(arena: Arena, session: Session, msg: m.Challenge, now: float) -> Decision:
    me = arena.player_of(session)
    opponent = arena.players.named(msg.opponent)
    if opponent is None or opponent.id not in arena.online:
        url = arena.player_hosts.get(msg.opponent.casefold())
        if url is not None:  # online on another node: the challenge is sent from there
            raise Redirected(url, None)
        raise Refused("no_such_player", f"no player named {msg.opponent!r} is online")
    if opponent.id == me.id:
        raise Refused("self_challenge", "you cannot challenge yourself")
    if msg.level is not None and msg.level not in opponent.levels:
        offered = ", ".join(opponent.levels) or "no levels"
        raise Refused("bad_level", f"{opponent.name} offers {offered}, not {msg.level!r}")
    check_settings(msg.variant, msg.ply_cap, msg.opening)
    pending = _pending(arena)
    cfg = arena.config
    if sum(1 for c in pending if c.challenger == me.id) >= cfg.max_challenges:
        raise Refused("too_many_challenges", f"you have {cfg.max_challenges} challenges pending; cancel one")
    to_them = [c for c in pending if c.opponent == opponent.id]
    if len(to_them) >= cfg.max_challenges_to:
        raise Refused("too_many_challenges", f"{opponent.name} has too many challenges pending; try later")
    if sum(1 for c in to_them if _address(arena, c) == session.ip) >= cfg.max_challenges_to_per_ip:
        raise Refused(
            "too_many_challenges",
            f"{opponent.name} has {cfg.max_challenges_to_per_ip} challenges pending from your address; "
            "try later",
        )
    cid = "c" + secrets.token_hex(5)
    challenge = Pending(cid, me.id, opponent.id, msg, now + cfg.challenge_ttl)
    arena.challenges[cid] = challenge
    ttl_ms = int(cfg.challenge_ttl * 1000)
    received = m.ChallengeReceived(
        challenge=cid,
        challenger=arena.player_info(me.id),
        variant=find_variant(msg.variant).name,
        colour=msg.colour,
        time_control=msg.time_control,
        rated=msg.rated,
        ply_cap=msg.ply_cap,
        opening=list(msg.opening),
        level=msg.level,
        seat=None if msg.colour == "random" else m.MARK_NAMES[m.mark_named(msg.colour).other],
        expires_ms=ttl_ms,
    )
    sent = m.ChallengeSent(challenge=cid, expires_ms=ttl_ms, ref=msg.ref)
    return Decision(
        now=[Reply(session.conn, m.encode(sent)), Tell(opponent.id, m.encode(received))],
        wake=[(challenge.expires, f"challenge:{cid}")],
    )


def listing(arena: Arena, session: Session, msg: m.ListChallenges, now: float) -> Decision:
    me = arena.player_of(session)
    pending = _pending(arena)
    reply = m.Challenges(
        outgoing=[c.info(arena, now) for c in pending if c.challenger == me.id],
        incoming=[c.info(arena, now) for c in pending if c.opponent == me.id],
        ref=msg.ref,
    )
    return Decision(now=[Reply(session.conn, m.encode(reply))])


def cancel(arena: Arena, session: Session, msg: m.CancelChallenge, now: float) -> Decision:
    me = arena.player_of(session)
    challenge = arena.challenges.get(msg.challenge)
    if not isinstance(challenge, Pending) or challenge.challenger != me.id:
        raise Refused("no_such_challenge", f"you have no pending challenge {msg.challenge!r}")
    del arena.challenges[challenge.id]
    cancelled = m.ChallengeCancelled(challenge=challenge.id, reason=f"{me.name} withdrew the challenge")
    return Decision(
        now=[Tell(challenge.opponent, m.encode(cancelled)), Reply(session.conn, m.encode(m.Ok(ref=msg.ref)))]
    )


def take(arena: Arena, me: Player, cid: str) -> Pending | ArrangedChallenge:
    """Remove and return the challenge ``cid`` sent to ``me``."""
    challenge: Pending | ArrangedChallenge | None = arena.challenges.get(cid)
    if challenge is None or challenge.opponent != me.id:
        raise Refused("no_such_challenge", f"no pending challenge {cid!r} for you")
    del arena.challenges[cid]
    return challenge


def accept(arena: Arena, session: Session, challenge: Pending, ref: str | None, now: float) -> Decision:
    """Open the room of an accepted challenge and seat both players."""
    me = arena.player_of(session)
    challenger_session = arena.online.get(challenge.challenger)
    if challenger_session is None:
        raise Refused("no_such_challenge", "the challenger has gone")
    req = challenge.request
    challenger = arena.players[challenge.challenger]
    variant = check_settings(req.variant, req.ply_cap, req.opening)
    check_room_count(arena, me)
    check_room_count(arena, challenger)
    room = new_room(arena, variant, req, private=False)
    colour = secrets.choice((Mark.X, Mark.O)) if req.colour == "random" else m.mark_named(req.colour)
    changes = Changes(ops=[room.saved()])
    changes += room.sit(challenger.id, challenger.name, colour, now)
    changes += room.sit(me.id, me.name, colour.other, now)
    snapshot = room.snapshot(now)
    joined = m.Joined(room=room.id, role=m.MARK_NAMES[colour.other], snapshot=snapshot, ref=ref)
    accepted = m.ChallengeAccepted(
        challenge=challenge.id, room=room.id, role=m.MARK_NAMES[colour], snapshot=snapshot
    )
    return arena.settle(
        room,
        changes,
        Attach(challenger_session.conn, room.id, (m.encode(accepted),), snapshot.seq),
        Attach(session.conn, room.id, (m.encode(joined),), snapshot.seq),
    )


def decline(arena: Arena, session: Session, challenge: Pending, msg: m.DeclineChallenge) -> Decision:
    me = arena.player_of(session)
    declined = m.ChallengeDeclined(challenge=challenge.id, by=me.name, reason=msg.reason)
    return Decision(
        now=[Tell(challenge.challenger, m.encode(declined)), Reply(session.conn, m.encode(m.Ok(ref=msg.ref)))]
    )


def expire(arena: Arena, cid: str, now: float) -> Decision:
    """The expiry time of challenge ``cid`` has come (if it still stands, it ends)."""
    challenge = arena.challenges.get(cid)
    if not isinstance(challenge, Pending) or now < challenge.expires:
        return Decision()
    del arena.challenges[cid]
    frame = m.encode(m.ChallengeExpired(challenge=cid))
    return Decision(now=[Tell(challenge.challenger, frame), Tell(challenge.opponent, frame)])


def withdraw_all(arena: Arena, player: Player, reason: str) -> Decision:
    """``player`` went offline: its challenges, sent or received, no longer stand."""
    decision = Decision()
    for cid, challenge in list(arena.challenges.items()):
        if player.id not in (challenge.challenger, challenge.opponent):
            continue
        del arena.challenges[cid]
        if isinstance(challenge, Pending) and challenge.challenger == player.id:
            cancelled = m.ChallengeCancelled(challenge=cid, reason=reason)
            decision.now.append(Tell(challenge.opponent, m.encode(cancelled)))
    return decision
