"""Challenges against a real server: they expire, can be listed and withdrawn, are capped;
and the refusals the arena makes when the server stops or a handler fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from server_harness import player, running_server

from protocol import messages as m
from protocol.client import RemoteError
from server import requests


async def test_an_unanswered_challenge_expires_for_both_sides(tmp_path: Path) -> None:
    async with running_server(tmp_path, challenge_ttl=0.3) as server:
        alice, bob = await player(server, "alice"), await player(server, "bob")
        assert alice.welcome.limits.challenge_ttl_ms == 300
        sent = await alice.request(m.Challenge(opponent="bob"))
        assert isinstance(sent, m.ChallengeSent) and sent.expires_ms == 300
        offer = await bob.expect(m.ChallengeReceived)
        assert offer.expires_ms == 300
        assert (await alice.expect(m.ChallengeExpired, timeout=3)).challenge == sent.challenge
        assert (await bob.expect(m.ChallengeExpired, timeout=3)).challenge == sent.challenge
        with pytest.raises(RemoteError) as info:  # a stale acceptance starts no game
            await bob.request(m.AcceptChallenge(challenge=offer.challenge))
        assert info.value.code == "no_such_challenge"
        assert server.challenges == {} and server.rooms == {}


async def test_the_sender_lists_and_cancels_its_challenges(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        alice, bob = await player(server, "alice"), await player(server, "bob")
        sent = await alice.request(m.Challenge(opponent="bob", variant="tactic-toe", colour="x"))
        assert isinstance(sent, m.ChallengeSent)
        offer = await bob.expect(m.ChallengeReceived)
        mine = await alice.request(m.ListChallenges())
        assert isinstance(mine, m.Challenges) and mine.incoming == []
        [out] = mine.outgoing
        assert (out.challenge, out.opponent, out.variant, out.colour) == (
            sent.challenge,
            "bob",
            "tactic-toe",
            "x",
        )
        assert 0 < out.expires_ms <= 60_000
        theirs = await bob.request(m.ListChallenges())
        assert isinstance(theirs, m.Challenges) and [c.challenge for c in theirs.incoming] == [sent.challenge]
        with pytest.raises(RemoteError) as info:  # only the sender may withdraw it
            await bob.request(m.CancelChallenge(challenge=sent.challenge))
        assert info.value.code == "no_such_challenge"
        assert isinstance(await alice.request(m.CancelChallenge(challenge=sent.challenge)), m.Ok)
        cancelled = await bob.expect(m.ChallengeCancelled)
        assert cancelled.challenge == offer.challenge and "withdrew" in cancelled.reason
        with pytest.raises(RemoteError) as info:
            await bob.request(m.AcceptChallenge(challenge=offer.challenge))
        assert info.value.code == "no_such_challenge"
        assert server.challenges == {}


async def test_challenges_are_capped_per_challenger_and_the_target_hears_nothing_more(tmp_path: Path) -> None:
    async with running_server(tmp_path, max_challenges=3) as server:
        alice, bob = await player(server, "alice"), await player(server, "bob")
        for _ in range(3):
            await alice.request(m.Challenge(opponent="bob"))
        with pytest.raises(RemoteError) as info:
            await alice.request(m.Challenge(opponent="bob"))
        assert info.value.code == "too_many_challenges"
        await bob.request(m.Ping())
        offers = [e for e in bob.drain() if isinstance(e, m.ChallengeReceived)]
        assert len(offers) == 3 and len(server.challenges) == 3


async def test_a_frame_while_stopping_and_a_failing_handler_get_their_codes(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        alice = await player(server, "alice")
        server.stopping = True
        try:
            with pytest.raises(RemoteError) as info:
                await alice.request(m.Ping())
            assert info.value.code == "shutting_down"
        finally:
            server.stopping = False

        def broken(*_: object) -> object:
            raise RuntimeError("a bug")

        original = requests.HANDLERS["ping"]
        requests.HANDLERS["ping"] = broken
        try:
            with pytest.raises(RemoteError) as info:
                await alice.request(m.Ping())
            assert info.value.code == "internal"
        finally:
            requests.HANDLERS["ping"] = original
        assert isinstance(await alice.request(m.Ping()), m.Pong), "the connection survived the bug"


async def test_ok_names_the_event_leave_and_rematch_caused(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        alice, bob = await player(server, "alice"), await player(server, "bob")
        joined = await alice.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined)
        room = joined.room
        assert joined.snapshot.game is None
        await bob.request(m.Join(room=room))
        started = await alice.expect(m.GameStarted, room=room)
        assert started.first_move_ms > 0
        await alice.request(m.Resign(room=room))
        ok = await alice.request(m.Rematch(room=room))
        assert isinstance(ok, m.Ok) and ok.seq is not None
        offered = await bob.expect(m.RematchOffered, room=room)
        assert offered.seq == ok.seq
        ok = await bob.request(m.Leave(room=room))
        assert isinstance(ok, m.Ok) and ok.seq == server.rooms[room].seq


async def test_an_accepted_challenge_shows_the_first_move_deadline(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        alice, bob = await player(server, "alice"), await player(server, "bob")
        await alice.request(m.Challenge(opponent="bob", colour="x"))
        offer = await bob.expect(m.ChallengeReceived)
        joined = await bob.request(m.AcceptChallenge(challenge=offer.challenge))
        assert isinstance(joined, m.Joined) and joined.snapshot.game is not None
        assert joined.snapshot.game.first_move_ms is not None and joined.snapshot.game.first_move_ms > 0
        accepted = await alice.expect(m.ChallengeAccepted)
        assert accepted.snapshot.game is not None and accepted.snapshot.game.first_move_ms is not None
