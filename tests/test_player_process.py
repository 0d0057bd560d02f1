"""`ttt bot` as a real process against a real server: policy, play, token file, reconnect, SIGTERM,
a short clock in several games at once."""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from server_harness import running_server, seated_pair

from bots.strategies.base import bare
from protocol import messages as m
from protocol.client import ArenaClient, RemoteError, connect
from protocol.rules import Mark, State
from server.app import ArenaServer
from server.config import ServerConfig


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ArenaServer]:
    s = ArenaServer(ServerConfig(port=0, db=str(tmp_path / "arena.db"), grace=30.0, rate=1000, burst=1000))
    await s.start()
    yield s
    await s.stop()


TESTS = Path(__file__).parent
RANDOM = "tournament_strategies:RandomMover"
GREEDY = "tournament_strategies:Greedy"


async def start_bot(url: str, *extra: str) -> asyncio.subprocess.Process:
    """A ``ttt bot`` process; it finds the test strategies on its path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "protocol.cli",
        "bot",
        "--server",
        url,
        *extra,
        stdin=asyncio.subprocess.DEVNULL,
        env=env,
    )


async def challenge_when_online(client: ArenaClient, bot: str, **kw: object) -> m.ServerMessage:
    """Challenge ``bot``, retrying while it is still connecting."""
    for _ in range(200):
        try:
            return await client.request(m.Challenge(opponent=bot, rated=False, **kw))  # type: ignore[arg-type]
        except RemoteError as exc:
            if exc.code != "no_such_player":
                raise
            await asyncio.sleep(0.1)
    raise AssertionError(f"{bot} never came online")


async def play_out(client: ArenaClient, room: str, me: Mark, variant: str, rng: random.Random) -> m.GameEnded:
    """Play random legal moves as ``me`` until the game in ``room`` ends."""
    state = State.start(variant)
    while True:
        if state.to_move is me and not state.is_over:
            cell = rng.choice(state.legal_moves())
            await client.send(m.Move(room=room, cell=cell))
            state = state.play(cell)
        event = await client.next_event(20)
        if isinstance(event, m.Moved) and event.room == room and event.ply == state.ply + 1:
            state = state.play(event.cell)
        elif isinstance(event, m.GameEnded) and event.room == room:
            return event


async def test_bot_declines_with_reasons_plays_and_keeps_token(server: ArenaServer, tmp_path: Path) -> None:
    token_file = tmp_path / "greedy.token"
    bot = await start_bot(
        server.url, "--strategy", GREEDY, "--name", "rulebot", "--variants", "classic",
        "--max-games", "1", "--token-file", str(token_file),
    )  # fmt: skip
    try:
        alice = await connect(server.url, "alice")
        await challenge_when_online(alice, "rulebot", variant="tactic-toe")
        declined = await alice.expect(m.ChallengeDeclined, 10)
        assert "classic" in declined.reason and declined.by == "rulebot"
        rng = random.Random(4)
        for colour in ("x", "o"):
            await challenge_when_online(alice, "rulebot", variant="classic", colour=colour)
            accepted = await alice.expect(m.ChallengeAccepted, 10)
            ended = await play_out(alice, accepted.room, Mark.X if colour == "x" else Mark.O, "classic", rng)
            assert ended.outcome.reason in ("line", "full_board")
            await alice.request(m.Leave(room=accepted.room))
        assert token_file.read_text().strip()
        await alice.close()
    finally:
        bot.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(bot.wait(), 20) == 0


async def test_sigterm_resigns_running_games_and_exits_cleanly(server: ArenaServer) -> None:
    bot = await start_bot(server.url, "--strategy", RANDOM, "--name", "quitter")
    alice = await connect(server.url, "alice2")
    await challenge_when_online(alice, "quitter", variant="classic", colour="x")
    accepted = await alice.expect(m.ChallengeAccepted, 10)
    await alice.request(m.Move(room=accepted.room, cell=4))
    await alice.expect(m.Moved, 10, ply=2)  # the bot answered
    bot.send_signal(signal.SIGTERM)
    ended = await alice.expect(m.GameEnded, 20, room=accepted.room)
    assert ended.outcome.reason == "resignation" and ended.outcome.winner == "x"
    assert await asyncio.wait_for(bot.wait(), 20) == 0
    await alice.close()


async def test_bot_reconnects_after_the_server_restarts_and_finishes_its_game(tmp_path: Path) -> None:
    db = str(tmp_path / "arena.db")
    first = ArenaServer(ServerConfig(port=0, db=db, grace=30.0))
    await first.start()
    port = first.port
    bot = await start_bot(first.url, "--strategy", GREEDY, "--name", "phoenix")
    try:
        alice = await connect(first.url, "alice3")
        await challenge_when_online(alice, "phoenix", variant="classic", colour="x")
        accepted = await alice.expect(m.ChallengeAccepted, 10)
        await alice.request(m.Move(room=accepted.room, cell=0))
        answer = await alice.expect(m.Moved, 10, ply=2)
        state = State.replay("classic", [0, answer.cell])
        await first.stop()  # every client is dropped; the game is in the database
        second = ArenaServer(ServerConfig(port=port, db=db, grace=30.0))
        await second.start()
        try:
            await alice.reconnect()
            await alice.request(m.Move(room=accepted.room, cell=state.legal_moves()[0]))
            # the bot comes back by itself (with backoff), catches up and answers
            reply = await alice.expect(m.Moved, 30, ply=4)
            assert reply.mark == "o"
        finally:
            await alice.close()
            await second.stop()
    finally:
        bot.send_signal(signal.SIGTERM)
        await asyncio.wait_for(bot.wait(), 20)


async def test_a_restarted_bot_process_takes_its_games_up_again(server: ArenaServer, tmp_path: Path) -> None:
    token = str(tmp_path / "lazarus.token")
    args = ("--strategy", GREEDY, "--name", "lazarus", "--token-file", token)
    bot = await start_bot(server.url, *args)
    alice = await connect(server.url, "alice4")
    try:
        await challenge_when_online(alice, "lazarus", variant="classic", colour="x")
        accepted = await alice.expect(m.ChallengeAccepted, 10)
        await alice.request(m.Move(room=accepted.room, cell=4))
        answer = await alice.expect(m.Moved, 10, ply=2)
        bot.kill()  # no goodbye: the seat waits out its grace period
        await bot.wait()
        await alice.expect(m.PlayerDisconnected, 10)
        state = State.replay("classic", [4, answer.cell])
        await alice.request(m.Move(room=accepted.room, cell=state.legal_moves()[0]))
        bot = await start_bot(server.url, *args)  # same token: the same player, still seated
        await alice.expect(m.PlayerReconnected, 20)
        reply = await alice.expect(m.Moved, 20, ply=4)
        assert reply.mark == "o"
    finally:
        await alice.close()
        bot.send_signal(signal.SIGTERM)
        await asyncio.wait_for(bot.wait(), 20)


async def test_house_bots_start_beside_the_server_and_stop_cleanly(
    server: ArenaServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from bots.tournament.house import parse_house_bots, start_house_bots
    from bots.tournament.pairing import TournamentError

    assert parse_house_bots("rule, fast=minimax") == {"rule-bot": "rule", "fast": "minimax"}
    for bad in ("", "rule,rule"):
        with pytest.raises(TournamentError):
            parse_house_bots(bad)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    house = await start_house_bots(
        server.url, f"greedy={GREEDY},random={RANDOM}", tmp_path / "house", restart_after=0.1
    )
    alice = await connect(server.url, "newcomer")
    try:
        for bot in ("greedy", "random", "greedy"):
            await challenge_when_online(alice, bot, variant="classic", colour="x")
            accepted = await alice.expect(m.ChallengeAccepted, 10)
            ended = await play_out(alice, accepted.room, Mark.X, "classic", random.Random(2))
            assert ended.outcome.reason in ("line", "full_board")
            await alice.request(m.Leave(room=accepted.room))
            if house.restarts == 0:  # a crash: the house starts it again, the same player
                crashed = house.processes["greedy"]
                crashed.kill()
                await crashed.wait()
                for _ in range(200):
                    if house.processes["greedy"] is not crashed:
                        break
                    await asyncio.sleep(0.05)
                assert house.restarts == 1
    finally:
        await alice.close()
        await house.stop()
    assert all(p.returncode == 0 for p in house.processes.values())
    assert {p.name for p in (tmp_path / "house").iterdir()} == {"greedy.token", "random.token"}


async def test_minimax_bot_keeps_a_short_clock_in_two_games_at_once(server: ArenaServer) -> None:
    """One search at a time, off the event loop, within each game's clock: at 400 ms a
    move, two tactic-toe games at once, no flag falls. The bot is O against perfect
    play from the centre (a draw), where minimax searches up to its whole 1 s budget."""
    from bots.solver import solve

    table = solve("tactic-toe", use_cache=False)  # X's perfect play: built here, nothing written
    bot = await start_bot(server.url, "--strategy", "minimax", "--name", "deep")  # its default budget
    clock = m.PerMove(move_ms=400)
    moves: list[tuple[float, str]] = []  # (when the test saw it, room) for each of the bot's moves
    loop = asyncio.get_running_loop()

    async def play_x(client: ArenaClient, room: str, rng: random.Random) -> m.GameEnded:
        state = State.start("tactic-toe", ply_cap=24)
        await client.send(m.Move(room=room, cell=4))
        while True:
            event = await client.next_event(20)
            if isinstance(event, m.Moved) and event.room == room and event.ply == state.ply + 1:
                state = state.play(event.cell)
                if event.mark == "o":
                    moves.append((loop.time(), room))
                    if not state.is_over:
                        cell = rng.choice(table.best_moves(bare(state)))
                        await client.send(m.Move(room=room, cell=cell))
            elif isinstance(event, m.GameEnded) and event.room == room:
                return event

    clients = [await connect(server.url, name) for name in ("alice6", "bob6")]
    try:
        rooms = []
        for client in clients:  # both accepted first, then both played at once
            await challenge_when_online(
                client, "deep", variant="tactic-toe", colour="x", time_control=clock, ply_cap=24
            )
            rooms.append((await client.expect(m.ChallengeAccepted, 10)).room)
        ended = await asyncio.gather(
            *(play_x(c, r, random.Random(i)) for i, (c, r) in enumerate(zip(clients, rooms, strict=True)))
        )
    finally:
        for client in clients:
            await client.close()
        bot.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(bot.wait(), 20) == 0
    for game in ended:  # whole games, ended by the rules: no flag fell
        assert game.outcome.reason in ("line", "repetition", "ply_cap"), game.outcome
    assert len(moves) >= 10
    order = [room for _, room in sorted(moves)]
    switches = sum(a != b for a, b in itertools.pairwise(order))
    assert switches >= 3, order  # the moves in the two rooms interleave


def test_the_pacer_keeps_within_the_server_limit() -> None:
    from bots.player import Pacer

    pacer = Pacer(rate=20.0, burst=40, now=0.0)  # sends at most 18 a second, bursts of 20
    assert [pacer.wait(0.0) for _ in range(20)] == [0.0] * 20
    wait = pacer.wait(0.0)
    assert wait == pytest.approx(1 / 18)
    assert pacer.wait(wait) == 0.0
    # over any stretch of time it sends less than the server allows
    pacer, now, sent = Pacer(rate=20.0, burst=40, now=0.0), 0.0, 0
    while now < 10.0:
        delay = pacer.wait(now)
        if delay:
            now += delay
        else:
            sent += 1
    assert sent <= 40 + 20 * 10


async def test_a_busy_bot_on_a_rate_limited_server_loses_no_message(tmp_path: Path) -> None:
    limited = ArenaServer(ServerConfig(port=0, db=str(tmp_path / "limited.db"), rate=10.0, burst=10))
    await limited.start()
    url = f"ws://127.0.0.1:{limited.port}"
    bot = await start_bot(url, "--strategy", RANDOM, "--name", "busy", "--max-games", "8")
    people = [await connect(url, f"p{i}", timeout=10) for i in range(4)]
    try:
        for person in people:
            await challenge_when_online(person, "busy", colour="o")
        rooms = [(await p.expect(m.ChallengeAccepted, timeout=10)).room for p in people]
        # four games where the bot (X) moves first and each answer comes at once
        games = [
            play_out(person, room, Mark.O, "classic", random.Random(i))
            for i, (person, room) in enumerate(zip(people, rooms, strict=True))
        ]
        for over in await asyncio.wait_for(asyncio.gather(*games), 60):
            assert over.outcome.reason in ("line", "full_board"), over
        assert limited.arena.errors["rate_limited"] == 0  # the bot paced itself
    finally:
        bot.send_signal(signal.SIGTERM)
        await asyncio.wait_for(bot.wait(), 20)
        for person in people:
            await person.close()
        await limited.stop()


async def test_a_bot_answers_a_rematch_like_a_person(server: ArenaServer) -> None:
    """After the game the bot keeps its seat: a rematch offered is played (colours swapped)
    while it is free, and declined (it leaves) once its one game slot is taken elsewhere."""
    bot = await start_bot(server.url, "--strategy", GREEDY, "--name", "sporty", "--max-games", "1")
    alice, bob = await connect(server.url, "alice7"), await connect(server.url, "bob7")
    rng = random.Random(7)
    try:
        await challenge_when_online(alice, "sporty", variant="classic", colour="x")
        room = (await alice.expect(m.ChallengeAccepted, 10)).room
        await play_out(alice, room, Mark.X, "classic", rng)
        assert isinstance(await alice.request(m.Rematch(room=room)), m.Ok)
        again = await alice.expect(m.GameStarted, 10, room=room)
        assert (again.x, again.o, again.number) == ("sporty", "alice7", 2)
        ended = await play_out(alice, room, Mark.O, "classic", rng)
        assert ended.outcome.reason in ("line", "full_board")
        # bob takes the bot's only slot; alice's next offer is declined: the bot stands up
        await bob.request(m.Challenge(opponent="sporty", variant="classic", colour="x", rated=False))
        await bob.expect(m.ChallengeAccepted, 10)
        await alice.request(m.Rematch(room=room))
        left = await alice.expect(m.SeatsChanged, 10, room=room)
        assert "sporty" not in (left.seats.x, left.seats.o)
    finally:
        await alice.close()
        await bob.close()
        bot.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(bot.wait(), 20) == 0


async def test_a_bot_declines_a_variant_its_strategy_cannot_play(server: ArenaServer) -> None:
    """`table` covers boards of up to 16 cells: a 5x5k4 challenge is declined with the
    strategy's reason, before any game (it used to be accepted and lost at the first move)."""
    bot = await start_bot(server.url, "--strategy", "table", "--name", "oracle")
    alice = await connect(server.url, "alice8")
    try:
        declined = await challenge_when_online(alice, "oracle", variant="5x5k4", colour="x")
        if not isinstance(declined, m.ChallengeDeclined):
            declined = await alice.expect(m.ChallengeDeclined, 10)
        assert "16 cells" in declined.reason, declined.reason
        assert server.rooms == {}, "no game was started"
        await challenge_when_online(alice, "oracle", variant="4x4k4", colour="x")
        accepted = await alice.expect(m.ChallengeAccepted, 10)
        assert accepted.snapshot.room.variant == "4x4k4"
    finally:
        await alice.close()
        bot.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(bot.wait(), 20) == 0


async def test_a_paced_client_sends_its_move_before_the_answers_queued_ahead(tmp_path: Path) -> None:
    """Issue 13's bot denial: challenges to decline pile up behind the rate limit; the
    move goes out first, so the game's clock is not spent waiting behind them."""
    async with running_server(tmp_path, rate=4.0, burst=2) as server:
        x, o, room, _ = await seated_pair(server, "pacy", "other")
        pacy = await connect(server.url, "pacy", token=x.welcome.token, paced=True)
        await pacy.request(m.Resume(rooms={room: 0}))
        declines = [
            asyncio.create_task(pacy.send(m.DeclineChallenge(challenge=f"c{i}", reason="busy")))
            for i in range(8)
        ]
        await asyncio.sleep(0)  # the declines are waiting for the pacer
        move = asyncio.create_task(pacy.send(m.Move(room=room, cell=4)))
        await asyncio.wait_for(move, 10)
        waiting = sum(not d.done() for d in declines)
        assert waiting >= 7, f"the move waited behind {8 - waiting} of 8 declines"
        moved = await o.expect(m.Moved, room=room)
        assert moved.cell == 4
        await asyncio.wait_for(asyncio.gather(*declines), 10)
        await pacy.close()
