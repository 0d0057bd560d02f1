"""Challenges in flight, both ways, as the client keeps them (pure, time passed in).

Incoming challenges wait in a list (newest first) instead of popping up, so a
burst of them never takes the keyboard from a board in play. Outgoing ones are
kept with the settings they were sent with (a rematch against a bot sends the
same again) and the expiry the server gave (``expires_ms``; `DEFAULT_EXPIRY` from a
server that gives none), counted down here; an entry goes when it is answered,
cancelled, declined or expired (`ChallengeExpired`), or when its time runs out.

The answer to a challenge (`ChallengeSent`, which gives its id) and the event that
closes it (a fast decline, say) reach the app by two paths, the request's and the
event pump's: the event can be handled first, so an id closed before it was known is
kept (`closed_early`) and the entry goes as soon as it is confirmed. Likewise the
countdown here can run out before the server's `ChallengeExpired` comes (a loaded
machine, a slow link): the entry leaves the list but is kept (`ran_out`) so that the
event still finds it and the player is told.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol import messages as m

#: Seconds a challenge is assumed to stay open (the server's default).
DEFAULT_EXPIRY = 60.0


@dataclass
class Incoming:
    offer: m.ChallengeReceived
    until: float


@dataclass
class Outgoing:
    challenge: m.Challenge
    until: float
    #: The server's id, once `ChallengeSent` came back.
    id: str | None = None


@dataclass
class ChallengeBook:
    incoming: dict[str, Incoming] = field(default_factory=dict)
    outgoing: list[Outgoing] = field(default_factory=list)
    expiry: float = DEFAULT_EXPIRY
    #: Ids closed while no outgoing entry had them yet (their `ChallengeSent` still on its way).
    closed_early: set[str] = field(default_factory=set)
    #: Outgoing challenges whose countdown ran out here, by id, until the server closes them.
    ran_out: dict[str, Outgoing] = field(default_factory=dict)

    def received(self, offer: m.ChallengeReceived, now: float) -> None:
        left = self.expiry if offer.expires_ms is None else offer.expires_ms / 1000
        self.incoming[offer.challenge] = Incoming(offer, now + left)

    def sent(self, challenge: m.Challenge, now: float) -> Outgoing:
        entry = Outgoing(challenge, now + self.expiry)
        self.outgoing.append(entry)
        return entry

    def closed(self, challenge_id: str) -> Outgoing | None:
        """The challenge ``challenge_id`` was answered, cancelled or expired: forget it."""
        if self.incoming.pop(challenge_id, None) is not None:
            return None
        for entry in self.outgoing:
            if entry.id == challenge_id:
                self.outgoing.remove(entry)
                return entry
        if challenge_id in self.ran_out:
            return self.ran_out.pop(challenge_id)
        if any(entry.id is None for entry in self.outgoing):
            self.closed_early.add(challenge_id)  # maybe one of ours, not confirmed yet
        return None

    def confirmed(self, entry: Outgoing, sent: m.ChallengeSent, now: float) -> Outgoing | None:
        """The server took ``entry`` as ``sent.challenge``, standing ``sent.expires_ms``.
        When that challenge was already closed (answered before this came): forget it, and
        return it as `closed` would."""
        entry.id = sent.challenge
        if sent.expires_ms is not None:
            entry.until = now + sent.expires_ms / 1000
        if sent.challenge in self.closed_early:
            self.closed_early.discard(sent.challenge)
            self.drop_outgoing(entry)
            return entry
        if all(o.id is not None for o in self.outgoing):
            self.closed_early.clear()  # none of ours is waiting: what is left was not ours
        return None

    def drop_outgoing(self, entry: Outgoing) -> None:
        if entry in self.outgoing:
            self.outgoing.remove(entry)

    def newest_first(self, now: float) -> list[Incoming]:
        self.expire(now)
        return sorted(self.incoming.values(), key=lambda i: -i.until)

    def expire(self, now: float) -> bool:
        """Drop what ran out; True when something did."""
        gone = [cid for cid, i in self.incoming.items() if i.until <= now]
        for cid in gone:
            del self.incoming[cid]
        before = len(self.outgoing)
        for o in self.outgoing:
            if o.until <= now and o.id is not None:
                self.ran_out[o.id] = o
        self.outgoing = [o for o in self.outgoing if o.until > now]
        return bool(gone) or len(self.outgoing) != before


def offer_text(offer: m.ChallengeReceived, clock: str) -> str:
    """One line: ``bob (human): classic, they play X, no clock, rated``."""
    colour = {"x": "they play X", "o": "they play O", "random": "random colours"}[offer.colour]
    if offer.opponent is not None and offer.seat is not None:  # a game a director arranged
        return f"{offer.challenger.name} arranges: you vs {offer.opponent} as {offer.seat.upper()}, {clock}"
    rated = "rated" if offer.rated else "casual"
    return f"{offer.challenger.name} ({offer.challenger.kind}): {offer.variant}, {colour}, {clock}, {rated}"
