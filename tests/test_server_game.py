"""Whole games through a real server: play, spectate, refusals, rematch, challenge, two rooms."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from server_harness import player, running_server, seated_pair, url_of

from protocol import messages as m
from protocol.client import connect
from protocol.session import MoveRefused, RemoteError


async def test_whole_game_with_a_spectator(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x, o, room, started = await seated_pair(server)
        assert (started.x, started.o, started.variant) == ("alice", "bob", "classic")
        watcher = await player(server, "carol")
        joined = await watcher.request(m.Spectate(room=room))
        assert isinstance(joined, m.Joined) and joined.role == "spectator"
        assert joined.snapshot.game is not None and joined.snapshot.game.ply == 0
        # X wins on the top row: 0, 3, 1, 4, 2
        for client, cell in [(x, 0), (o, 3), (x, 1), (o, 4), (x, 2)]:
            ok = await client.request(m.Move(room=room, cell=cell))
            assert isinstance(ok, m.Ok) and ok.seq is not None
        for client in (x, o, watcher):
            over = await client.expect(m.GameEnded, room=room)
            assert over.outcome.result == "1-0" and over.outcome.reason == "line"
            assert over.outcome.line == [0, 1, 2] and over.moves == [0, 3, 1, 4, 2]
        seen = [e for e in watcher.drain()]
        assert not seen  # expect() consumed everything up to game over, nothing after
        rows = server.store.query("SELECT cell FROM moves ORDER BY ply")
        assert [r[0] for r in rows] == [0, 3, 1, 4, 2]
        assert server.store.query("SELECT result, reason FROM games") == [("1-0", "line")]
        ratings = dict(
            server.store.query("SELECT p.name, r.rating FROM ratings r JOIN players p ON p.id=r.player")
        )
        assert ratings["alice"] > 1500 > ratings["bob"]
        for c in (x, o, watcher):
            await c.close()


async def test_refused_moves_change_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x, o, room, _ = await seated_pair(server, variant="tactic-toe")
        stranger = await player(server, "mallory")
        watcher = await player(server, "carol")
        await watcher.request(m.Spectate(room=room))
        cases = [
            (o, m.Move(room=room, cell=0), "not_your_turn"),
            (stranger, m.Move(room=room, cell=0), "not_in_room"),
            (watcher, m.Move(room=room, cell=0), "not_seated"),
            (x, m.Move(room=room, cell=9), "cell_out_of_range"),
            (x, m.Move(room="nope", cell=0), "no_such_room"),
        ]
        for client, msg, code in cases:
            with pytest.raises(RemoteError) as info:
                await client.request(msg)
            assert info.value.code == code, (msg, info.value)
        # tactic-toe: X's oldest mark is vanishing and may not be retaken by X
        for client, cell in [(x, 0), (o, 3), (x, 1), (o, 4), (x, 8), (o, 6)]:
            await client.request(m.Move(room=room, cell=cell))
        with pytest.raises(MoveRefused) as info:
            await x.request(m.Move(room=room, cell=0))
        assert info.value.code == "cell_vacating"
        with pytest.raises(MoveRefused) as info:
            await x.request(m.Move(room=room, cell=3))
        assert info.value.code == "cell_occupied"
        snap = await watcher.request(m.Spectate(room=room))
        assert isinstance(snap, m.Joined) and snap.snapshot.game is not None
        assert snap.snapshot.game.ply == 6 and snap.snapshot.game.to_move == "x"
        assert snap.snapshot.game.next_to_vanish == {"x": 0, "o": 3}
        moved = await x.request(m.Move(room=room, cell=2))
        assert isinstance(moved, m.Ok)
        ev = await o.expect(m.Moved, room=room, cell=2)
        assert ev.vanished == 0 and ev.next_to_vanish["x"] == 1


async def test_rematch_swaps_colours_and_series_counts(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x, o, room, first = await seated_pair(server)
        await x.request(m.Resign(room=room))
        over = await o.expect(m.GameEnded, room=room)
        assert over.outcome.reason == "resignation" and over.outcome.result == "0-1"
        await x.request(m.Rematch(room=room))
        offered = await o.expect(m.RematchOffered, room=room)
        assert offered.by == "alice"
        await o.request(m.Rematch(room=room))
        second = await x.expect(m.GameStarted, room=room)
        assert (second.x, second.o, second.number) == ("bob", "alice", 2)
        assert second.game != first.game
        with pytest.raises(RemoteError) as info:
            await x.request(m.Move(room=room, cell=4))
        assert info.value.code == "not_your_turn"
        await o.request(m.Move(room=room, cell=4))
        joined = await (await player(server, "zed")).request(m.Spectate(room=room))
        assert isinstance(joined, m.Joined)
        assert joined.snapshot.games == [first.game, second.game]
        assert joined.snapshot.score == {"alice": 0.0, "bob": 1.0}


async def test_challenge_accept_and_decline(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        a = await player(server, "alice")
        b = await player(server, "botty", kind="bot")
        sent = await a.request(m.Challenge(opponent="botty", colour="o", opening=[4], rated=False))
        assert isinstance(sent, m.ChallengeSent)
        got = await b.expect(m.ChallengeReceived)
        assert got.challenger.name == "alice" and got.opening == [4]
        joined = await b.request(m.AcceptChallenge(challenge=got.challenge))
        assert isinstance(joined, m.Joined) and joined.role == "x"
        accepted = await a.expect(m.ChallengeAccepted)
        assert accepted.role == "o" and accepted.room == joined.room
        assert accepted.snapshot.game is not None and accepted.snapshot.game.moves == [4]
        assert accepted.snapshot.game.to_move == "o"
        await a.request(m.Move(room=joined.room, cell=0))
        sent = await a.request(m.Challenge(opponent="botty"))
        assert isinstance(sent, m.ChallengeSent)
        got = await b.expect(m.ChallengeReceived)
        await b.request(m.DeclineChallenge(challenge=got.challenge, reason="busy"))
        declined = await a.expect(m.ChallengeDeclined)
        assert declined.reason == "busy" and declined.by == "botty"
        for msg, code in [
            (m.Challenge(opponent="nobody"), "no_such_player"),
            (m.Challenge(opponent="alice"), "self_challenge"),
            (m.Challenge(opponent="botty", variant="2x2k9"), "unknown_variant"),
            (m.Challenge(opponent="botty", ply_cap=5), "bad_ply_cap"),
            (m.Challenge(opponent="botty", opening=[0, 0]), "bad_opening"),
        ]:
            with pytest.raises(RemoteError) as info:
                await a.request(msg)
            assert info.value.code == code
        with pytest.raises(RemoteError) as info:
            await b.request(m.AcceptChallenge(challenge=got.challenge))
        assert info.value.code == "no_such_challenge"


async def test_two_rooms_at_once_do_not_touch_each_other(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        x1, o1, r1, _ = await seated_pair(server, "a1", "b1")
        x2, o2, r2, _ = await seated_pair(server, "a2", "b2", variant="4x4k4")

        async def play(x: object, o: object, room: str, cells: list[int]) -> None:
            players = [x, o]
            for i, cell in enumerate(cells):
                await players[i % 2].request(m.Move(room=room, cell=cell))  # type: ignore[attr-defined]

        await asyncio.gather(
            play(x1, o1, r1, [0, 4, 8, 2, 6, 3, 5, 7, 1]), play(x2, o2, r2, [0, 4, 1, 5, 2, 6, 3])
        )
        end1 = await o1.expect(m.GameEnded, room=r1)
        end2 = await o2.expect(m.GameEnded, room=r2)
        assert end1.moves == [0, 4, 8, 2, 6, 3, 5, 7, 1]
        assert end1.outcome.result == "1/2-1/2" and end1.outcome.reason == "full_board"
        assert end2.outcome.line == [0, 1, 2, 3] and end2.outcome.winner == "x"
        # no event of one room reached the players of the other
        for client, other in [(x1, r2), (o1, r2), (x2, r1), (o2, r1)]:
            assert all(getattr(e, "room", None) != other for e in client.drain())


async def test_lobby_lists_rooms_and_players_live(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        watcher = await player(server, "watcher")
        snap = await watcher.request(m.LobbySubscribe())
        assert isinstance(snap, m.LobbySnapshot) and snap.rooms == []
        bot = await player(server, "bot1", kind="bot")
        joined = await bot.request(m.CreateRoom(variant="tactic-toe", time_control=m.PerMove(move_ms=5000)))
        assert isinstance(joined, m.Joined)
        update = await watcher.expect(m.LobbyUpdate, timeout=3)
        while not update.rooms:
            update = await watcher.expect(m.LobbyUpdate, timeout=3)
        summary = update.rooms[0]
        assert summary.id == joined.room and summary.variant == "tactic-toe" and summary.status == "waiting"
        assert summary.time_control == m.PerMove(move_ms=5000)
        private = await bot.request(m.CreateRoom(private=True))
        assert isinstance(private, m.Joined) and private.invite
        lobby = await (await player(server, "late")).request(m.LobbySubscribe())
        assert isinstance(lobby, m.LobbySnapshot)
        assert [r.id for r in lobby.rooms] == [joined.room]  # the private room is not listed
        assert {p.name: p.kind for p in lobby.players} == {"watcher": "human", "bot1": "bot", "late": "human"}
        other = await player(server, "other")
        with pytest.raises(RemoteError) as info:
            await other.request(m.Join(room=private.room))
        assert info.value.code == "no_such_room"
        ok = await other.request(m.Join(room=private.room, invite=private.invite))
        assert isinstance(ok, m.Joined) and ok.role in ("x", "o")
        board = await other.request(m.GetLeaderboard(variant="classic"))
        assert isinstance(board, m.Leaderboard) and board.entries == []


async def test_bot_levels_are_listed_checked_and_passed_on(tmp_path: Path) -> None:

    async with running_server(tmp_path) as server:
        bot = await connect(url_of(server), "minimax", "bot", levels=["easy", "best"], timeout=5)
        human = await connect(url_of(server), "alice", "human", levels=["sneaky"], timeout=5)
        lobby = await human.request(m.LobbySubscribe())
        assert isinstance(lobby, m.LobbySnapshot)
        listed = {p.name: p.levels for p in lobby.players}
        assert listed == {"minimax": ["easy", "best"], "alice": []}, "only bots offer levels"
        with pytest.raises(RemoteError) as refused:
            await human.request(m.Challenge(opponent="minimax", level="hard"))
        assert refused.value.code == "bad_level" and "easy, best" in refused.value.message
        assert server.challenges == {}, "a refused challenge leaves nothing behind"
        with pytest.raises(RemoteError) as refused:
            await bot.request(m.Challenge(opponent="alice", level="easy"))
        assert refused.value.code == "bad_level"
        await human.request(m.Challenge(opponent="minimax", level="easy"))
        offer = await bot.expect(m.ChallengeReceived)
        assert offer.level == "easy"
        await bot.close()
        await human.close()
