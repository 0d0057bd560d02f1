"""`ttt bot --engine` as real processes against a real server, with the tiny engines of
`engine_scripts` and the sh example of docs/engines.md: engines play whole games, and an
engine that fails loses its game (the bot resigns it) while the bot plays on."""

from __future__ import annotations

import asyncio
import random
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from engine_scripts import command, write_examples

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


class Bot:
    """A ``ttt bot --engine`` process; its standard error is kept."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.stderr = b""

    async def stop(self) -> str:
        """SIGTERM, wait for a clean exit; the bot's standard error."""
        self.process.send_signal(signal.SIGTERM)
        _, self.stderr = await asyncio.wait_for(self.process.communicate(), 30)
        assert self.process.returncode == 0, self.stderr.decode()
        return self.stderr.decode()


async def start_bot(url: str, *extra: str) -> Bot:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "protocol.cli",
        "bot",
        "--server",
        url,
        *extra,
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    return Bot(process)


async def challenge(
    client: ArenaClient, bot: str, variant: str, colour: str = "x", move_ms: int = 5000
) -> m.ChallengeAccepted:
    """Challenge ``bot`` (retrying while it connects) and wait for it to accept."""
    for _ in range(300):
        try:
            await client.request(
                m.Challenge(
                    opponent=bot,
                    variant=variant,
                    colour=colour,
                    rated=False,
                    time_control=m.PerMove(move_ms=move_ms),
                )
            )
            return await client.expect(m.ChallengeAccepted, 20)
        except RemoteError as exc:
            if exc.code != "no_such_player":
                raise
            await asyncio.sleep(0.1)
    raise AssertionError(f"{bot} never came online")


async def play_out(client: ArenaClient, room: str, me: Mark, variant: str, seed: int = 0) -> m.GameEnded:
    """Random legal moves as ``me`` until the game in ``room`` ends."""
    rng = random.Random(seed)
    state = State.start(variant)
    while True:
        if state.to_move is me and not state.is_over:
            cell = rng.choice(state.legal_moves())
            await client.send(m.Move(room=room, cell=cell))
            state = state.play(cell)
        event = await client.next_event(30)
        if isinstance(event, m.Moved) and event.room == room and event.ply == state.ply + 1:
            state = state.play(event.cell)
        elif isinstance(event, m.GameEnded) and event.room == room:
            return event


async def test_the_sh_example_plays_tactic_toe_and_gomoku_as_a_network_player(
    server: ArenaServer, tmp_path: Path
) -> None:
    sh = write_examples(tmp_path)["sh"]
    bot = await start_bot(server.url, "--engine", sh, "--engine-protocol", "ttt", "--engine-ms", "2000")
    alice = await connect(server.url, "alice")
    try:
        for n, (variant, colour) in enumerate([("tactic-toe", "x"), ("9x9k5", "o")]):
            accepted = await challenge(alice, "pick.sh", variant, colour)  # named after the program
            ended = await play_out(alice, accepted.room, Mark.X if colour == "x" else Mark.O, variant, n)
            assert ended.outcome.reason in ("line", "full_board", "repetition", "ply_cap")
            assert State.replay(variant, ended.moves).outcome is not None or ended.outcome.reason == "ply_cap"
            await alice.request(m.Leave(room=accepted.room))
    finally:
        await alice.close()
        await bot.stop()


async def test_a_gomocup_engine_plays_gomoku_and_refuses_tactic_toe(
    server: ArenaServer, tmp_path: Path
) -> None:
    bot = await start_bot(server.url, "--engine", command(tmp_path, "gomocup"), "--name", "pbrain")
    alice = await connect(server.url, "alice")
    try:
        accepted = await challenge(alice, "pbrain", "8x10k5", "x")  # online, and plays gomoku
        ended = await play_out(alice, accepted.room, Mark.X, "8x10k5")
        assert ended.outcome.reason in ("line", "full_board") and len(ended.moves) >= 9
        await alice.request(m.Leave(room=accepted.room))
        # tactic-toe is declined before any game, with the engine protocol's reason
        await alice.request(m.Challenge(opponent="pbrain", variant="tactic-toe", colour="o", rated=False))
        declined = await alice.expect(m.ChallengeDeclined, 20)
        assert "marks vanish" in declined.reason, declined.reason
        accepted = await challenge(alice, "pbrain", "8x10k5", "x")
        ended = await play_out(alice, accepted.room, Mark.X, "8x10k5")
        assert ended.outcome.reason in ("line", "full_board") and len(ended.moves) >= 9
    finally:
        await alice.close()
        stderr = await bot.stop()
    assert 'name="test-good"' in stderr  # the ABOUT answer, logged


@pytest.mark.parametrize("protocol", ["ttt", "gomocup"])
async def test_failing_engines_lose_their_games_and_the_bots_play_on(
    server: ArenaServer, tmp_path: Path, protocol: str
) -> None:
    variant = "classic" if protocol == "ttt" else "9x9k5"
    failures = {
        "slow": "EngineTimeout",
        "illegal": "EngineIllegal",
        "garbage": "EngineIllegal",
        "crash-once": "EngineCrashed",
    }
    bots = {
        mode: await start_bot(
            server.url,
            "--engine",
            command(tmp_path, protocol, mode, str(tmp_path / f"crashed-{protocol}")),
            "--engine-protocol",
            protocol,
            "--engine-ms",
            "500",
            "--name",
            f"{mode}-{protocol}",
        )
        for mode in [*failures, "chatty"]
    }
    alice = await connect(server.url, f"alice-{protocol}")
    try:

        async def first_game(mode: str) -> m.GameEnded:
            accepted = await challenge(alice, f"{mode}-{protocol}", variant, "o")
            return await alice.expect(m.GameEnded, 30, room=accepted.room)

        for mode in failures:  # the bot, X, resigns at its first move
            ended = await first_game(mode)
            assert (ended.outcome.reason, ended.outcome.winner, ended.moves) == ("resignation", "o", []), mode
            await alice.request(m.Leave(room=ended.room))
        # the bot whose engine crashed once plays its next game with a fresh engine, and the chatty one plays
        for mode in ("crash-once", "chatty"):
            accepted = await challenge(alice, f"{mode}-{protocol}", variant, "o")
            ended = await play_out(alice, accepted.room, Mark.O, variant)
            assert ended.outcome.reason in ("line", "full_board"), mode
            await alice.request(m.Leave(room=accepted.room))
    finally:
        await alice.close()
        stderrs = {mode: await bot.stop() for mode, bot in bots.items()}
    for mode, error in failures.items():  # the reason, by its class or its code
        code = {"EngineTimeout": "engine_timeout", "EngineIllegal": "engine_illegal"}.get(
            error, "engine_crashed"
        )
        assert error in stderrs[mode] or code in stderrs[mode], stderrs[mode]
    assert "Engine" not in stderrs["chatty"]
