"""Arranged games (`ArrangeGame`) through a real server: a director seats two other players,
follows the game, hears of declines, drops and silence; refused requests change nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from server_harness import player, running_server

from protocol import messages as m
from protocol.client import ArenaClient
from protocol.session import RemoteError
from server.app import ArenaServer


async def _trio(server: ArenaServer) -> tuple[ArenaClient, ArenaClient, ArenaClient]:
    return (
        await player(server, "director", kind="bot"),
        await player(server, "xbot", kind="bot"),
        await player(server, "obot", kind="bot"),
    )


async def _arrange(director: ArenaClient, **fields: object) -> m.GameArranged:
    request = m.ArrangeGame.model_validate({"x": "xbot", "o": "obot", **fields})
    arranged = await director.request(request)
    assert isinstance(arranged, m.GameArranged)
    return arranged


async def test_an_arranged_game_is_played_and_the_director_sees_all_of_it(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        director, xbot, obot = await _trio(server)
        arranged = await _arrange(director, time_control={"kind": "per_move", "move_ms": 5000}, opening=[4])
        assert (arranged.x, arranged.o) == ("xbot", "obot")
        offers = [await xbot.expect(m.ChallengeReceived), await obot.expect(m.ChallengeReceived)]
        for offer, seat, other in zip(offers, ("x", "o"), ("obot", "xbot"), strict=True):
            assert offer.challenger.name == "director" and offer.seat == seat and offer.opponent == other
            assert offer.colour != seat and offer.opening == [4] and offer.rated is False
        # a stranger cannot take a seat kept for the arrangement
        stranger = await player(server, "mallory")
        with pytest.raises(RemoteError) as info:
            await stranger.request(m.Join(room=arranged.room))
        assert info.value.code == "seat_taken"
        # O accepts first and waits in its seat; X's acceptance starts the game
        joined_o = await obot.request(m.AcceptChallenge(challenge=offers[1].challenge))
        assert isinstance(joined_o, m.Joined) and joined_o.role == "o" and joined_o.room == arranged.room
        assert joined_o.snapshot.game is None and joined_o.snapshot.room.status == "waiting"
        joined_x = await xbot.request(m.AcceptChallenge(challenge=offers[0].challenge))
        assert isinstance(joined_x, m.Joined) and joined_x.role == "x"
        started = await director.expect(m.GameStarted, room=arranged.room)
        assert (started.x, started.o, started.opening, started.rated) == ("xbot", "obot", [4], False)
        assert server.arrangements == {} and server.challenges == {}
        for client, cell in [(obot, 0), (xbot, 8), (obot, 1), (xbot, 2), (obot, 6), (xbot, 5)]:
            await client.request(m.Move(room=arranged.room, cell=cell))
        over = await director.expect(m.GameEnded, room=arranged.room)
        assert over.outcome.result == "1-0" and over.moves == [4, 0, 8, 1, 2, 6, 5]
        assert server.ratings.of_player(xbot.player_id) == {}  # unrated by default
        for client in (director, xbot, obot, stranger):
            await client.close()


async def test_a_decline_calls_the_game_off_and_everyone_is_told(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        director, xbot, obot = await _trio(server)
        arranged = await _arrange(director)
        x_offer = await xbot.expect(m.ChallengeReceived)
        o_offer = await obot.expect(m.ChallengeReceived)
        await xbot.request(m.AcceptChallenge(challenge=x_offer.challenge))
        ok = await obot.request(m.DeclineChallenge(challenge=o_offer.challenge, reason="not today"))
        assert isinstance(ok, m.Ok)
        declined = await director.expect(m.ChallengeDeclined)
        assert (declined.by, declined.reason, declined.room, declined.cause) == (
            "obot",
            "not today",
            arranged.room,
            "declined",
        )
        assert (await director.expect(m.RoomClosed, room=arranged.room)).reason == "obot declined"
        assert (await xbot.expect(m.RoomClosed, room=arranged.room)).reason == "obot declined"
        assert server.arrangements == {} and server.challenges == {} and arranged.room not in server.rooms
        # before anyone answered: the other player's challenge is withdrawn
        arranged = await _arrange(director)
        x_offer = await xbot.expect(m.ChallengeReceived)
        o_offer = await obot.expect(m.ChallengeReceived)
        await obot.request(m.DeclineChallenge(challenge=o_offer.challenge, reason="busy"))
        cancelled = await xbot.expect(m.ChallengeCancelled)
        assert cancelled.challenge == x_offer.challenge
        with pytest.raises(RemoteError) as info:
            await xbot.request(m.AcceptChallenge(challenge=x_offer.challenge))
        assert info.value.code == "no_such_challenge"
        assert (await director.expect(m.ChallengeDeclined)).reason == "busy"
        await director.expect(m.RoomClosed, room=arranged.room)


async def test_a_player_who_drops_or_stays_silent_is_reported(tmp_path: Path) -> None:
    async with running_server(tmp_path, answer_timeout=0.5) as server:
        director, xbot, obot = await _trio(server)
        arranged = await _arrange(director)
        x_offer = await xbot.expect(m.ChallengeReceived)
        await obot.expect(m.ChallengeReceived)
        await xbot.request(m.AcceptChallenge(challenge=x_offer.challenge))
        # O never answers: called off at the deadline, O at fault
        declined = await director.expect(m.ChallengeDeclined, timeout=3)
        assert (declined.by, declined.cause, declined.room) == ("obot", "no_answer", arranged.room)
        assert "0.5 s" in declined.reason
        await obot.expect(m.ChallengeCancelled)
        await xbot.expect(m.RoomClosed, room=arranged.room)
        # X drops after accepting: called off at once, X at fault
        arranged = await _arrange(director)
        x_offer = await xbot.expect(m.ChallengeReceived)
        await xbot.request(m.AcceptChallenge(challenge=x_offer.challenge))
        await xbot.close()
        declined = await director.expect(m.ChallengeDeclined)
        assert (declined.by, declined.cause, declined.reason) == ("xbot", "gone", "went offline")
        await obot.expect(m.ChallengeCancelled)
        await director.expect(m.RoomClosed, room=arranged.room)
        assert server.arrangements == {} and server.challenges == {}


async def test_the_director_going_offline_calls_its_arrangements_off(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        director, xbot, obot = await _trio(server)
        arranged = await _arrange(director)
        x_offer = await xbot.expect(m.ChallengeReceived)
        await obot.expect(m.ChallengeReceived)
        await xbot.request(m.AcceptChallenge(challenge=x_offer.challenge))
        await director.close()
        assert (await xbot.expect(m.RoomClosed, room=arranged.room)).reason == "the director went offline"
        assert (await obot.expect(m.ChallengeCancelled)).reason == "the director went offline"
        await asyncio.sleep(0.1)
        assert server.arrangements == {} and server.challenges == {} and arranged.room not in server.rooms


async def test_refused_arrangements_change_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        director, xbot, obot = await _trio(server)
        rooms = dict(server.rooms)
        cases = [
            (m.ArrangeGame(x="nobody", o="obot"), "no_such_player"),
            (m.ArrangeGame(x="xbot", o="ghost"), "no_such_player"),
            (m.ArrangeGame(x="xbot", o="XBOT"), "same_player"),
            (m.ArrangeGame(x="director", o="obot"), "self_challenge"),
            (m.ArrangeGame(x="xbot", o="obot", variant="2x2k9"), "unknown_variant"),
            (m.ArrangeGame(x="xbot", o="obot", variant="nope"), "unknown_variant"),
            (m.ArrangeGame(x="xbot", o="obot", ply_cap=5), "bad_ply_cap"),
            (m.ArrangeGame(x="xbot", o="obot", opening=[0, 0]), "bad_opening"),
            (m.ArrangeGame(x="xbot", o="obot", opening=[0, 3, 1, 4, 2]), "bad_opening"),
        ]
        for request, code in cases:
            with pytest.raises(RemoteError) as info:
                await director.request(request)
            assert info.value.code == code, request
        # bad frames are refused whole
        await director.send_raw(
            '{"type": "arrange_game", "x": "xbot", "o": "obot", "rated": "yes", "ref": "b1"}'
        )
        error = await director.expect(m.Error)
        assert (error.code, error.ref) == ("bad_message", "b1")
        assert server.rooms == rooms and server.arrangements == {} and server.challenges == {}
        await asyncio.sleep(0.05)
        assert xbot.drain() == [] and obot.drain() == []  # nobody was invited


async def test_a_drop_before_the_invitations_reaches_the_director_in_order(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        director, xbot, obot = await _trio(server)
        # the request and X's drop are handled before the writer has stored the room
        server.receive(
            server.online[director.player_id], m.encode(m.ArrangeGame(x="xbot", o="obot", ref="a1"))
        )
        server._gone(server.online[xbot.player_id])
        seen = []
        while not seen or not isinstance(seen[-1], m.RoomClosed):
            event = await director.next_event(timeout=3)
            if not isinstance(event, m.SeatsChanged):
                seen.append(event)
        arranged, declined, closed = seen
        assert isinstance(arranged, m.GameArranged) and arranged.ref == "a1"
        assert isinstance(declined, m.ChallengeDeclined) and (declined.by, declined.cause) == ("xbot", "gone")
        assert isinstance(closed, m.RoomClosed) and closed.room == arranged.room
        await asyncio.sleep(0.05)
        assert obot.drain() == []  # never invited, so nothing to withdraw
