"""Challenges in flight, both ways, as the client keeps them (pure, time passed in).

Incoming challenges wait in a list (newest first) instead of popping up, so a
burst of them never takes the keyboard from a board in play. Outgoing ones are
kept with the settings they were sent with (a rematch against a bot sends the
same again) and the expiry the server gave (``expires_ms``; `DEFAULT_EXPIRY` from a
server that gives none), counted down here; an entry goes when it is answered,
cancelled, declined or expired (`ChallengeExpired`), or when its time runs out.
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

    def received(self, offer: m.ChallengeReceived, now: float) -> None:
        left = self.expiry if offer.expires_ms is None else offer.expires_ms / 1000
        self.incoming[offer.challenge] = Incoming(offer, now + left)

    def sent(self, challenge: m.Challenge, now: float) -> Outgoing:
        entry = Outgoing(challenge, now + self.expiry)
        self.outgoing.append(entry)
        return entry

    def closed(self, challenge_id: str) -> Outgoing | None:
        """The challenge ``challenge_id`` was answered, cancelled or expired: forget it."""
        self.incoming.pop(challenge_id, None)
        for entry in self.outgoing:
            if entry.id == challenge_id:
                self.outgoing.remove(entry)
                return entry
        return None

    def confirmed(self, entry: Outgoing, sent: m.ChallengeSent, now: float) -> None:
        """The server took ``entry`` as ``sent.challenge``, standing ``sent.expires_ms``."""
        entry.id = sent.challenge
        if sent.expires_ms is not None:
            entry.until = now + sent.expires_ms / 1000

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
        self.outgoing = [o for o in self.outgoing if o.until > now]
        return bool(gone) or len(self.outgoing) != before


def offer_text(offer: m.ChallengeReceived, clock: str) -> str:
    """One line: ``bob (human): classic, they play X, no clock, rated``."""
    colour = {"x": "they play X", "o": "they play O", "random": "random colours"}[offer.colour]
    if offer.opponent is not None and offer.seat is not None:  # a game a director arranged
        return f"{offer.challenger.name} arranges: you vs {offer.opponent} as {offer.seat.upper()}, {clock}"
    rated = "rated" if offer.rated else "casual"
    return f"{offer.challenger.name} ({offer.challenger.kind}): {offer.variant}, {colour}, {clock}, {rated}"
