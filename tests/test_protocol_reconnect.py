"""Coming back, as every client does (`protocol.reconnect`, `protocol.tokens`,
`protocol.pacing`), against a real server on a real port."""

from __future__ import annotations

import asyncio
import random
import stat
from pathlib import Path

import pytest
from server_harness import free_port, player, running_server, url_of

from protocol import messages as m
from protocol.client import ArenaClient, RemoteError
from protocol.pacing import Backoff
from protocol.reconnect import Reconnector
from protocol.session import ConnectionLost
from protocol.tokens import TokenFile
from server.app import ArenaServer
from server.config import ServerConfig


def test_a_token_file_is_written_whole_and_private(tmp_path: Path) -> None:
    keep = TokenFile(tmp_path / "house" / "bot.token")
    assert keep.read() is None
    keep.write("secret-1")
    keep.write("secret-2")
    assert keep.read() == "secret-2"
    assert stat.S_IMODE(keep.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(keep.path.parent.stat().st_mode) == 0o700
    assert [p.name for p in keep.path.parent.iterdir()] == ["bot.token"]  # no temporary file left


def test_backoff_doubles_to_its_cap_and_starts_again_after_a_reset() -> None:
    backoff = Backoff(first=0.2, cap=1.0, rng=random.Random(3))
    delays = [backoff.next() for _ in range(6)]
    caps = (0.2, 0.4, 0.8, 1.0, 1.0, 1.0)  # doubling, then capped; each cut by up to half
    assert all(c / 2 <= d <= c for d, c in zip(delays, caps, strict=True))
    backoff.reset()
    assert backoff.next() <= 0.2


async def test_a_new_process_with_the_token_file_takes_its_seat_up(tmp_path: Path) -> None:
    """The token file names the player; ``adopt`` resumes the rooms the welcome lists
    from their start, so the game that was going on is seen whole."""
    keep = TokenFile(tmp_path / "bob.token")
    async with running_server(tmp_path, grace=30.0) as server:
        first = ArenaClient(url_of(server), "bob")
        assert await Reconnector(first, token_file=keep).come_back(first=True) is None  # no rooms yet
        assert keep.read() == first.token
        alice = await player(server, "alice")
        joined = await alice.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined)
        await first.request(m.Join(room=joined.room))
        await alice.request(m.Move(room=joined.room, cell=4))
        await first.close()  # the process ends; its seat waits out the grace period
        await alice.expect(m.PlayerDisconnected, 5, room=joined.room)
        again = ArenaClient(url_of(server), "bob")
        resumed = await Reconnector(again, token_file=keep, adopt=True).come_back(first=True)
        assert resumed is not None and resumed.rooms == {joined.room: "snapshot"}
        assert again.player_id == first.player_id
        snap = (await again.expect(m.Snapshot, 5, room=joined.room)).snapshot
        assert snap.game is not None and snap.game.moves == [4] and snap.game.o == "bob"
        # someone else with that name and no token is refused for good: no retry
        with pytest.raises(RemoteError) as refused:
            await Reconnector(ArenaClient(url_of(server), "bob")).come_back(first=True)
        assert refused.value.code == "name_taken"
        for client in (alice, again):
            await client.close()


async def test_it_tries_again_until_the_server_listens_or_it_is_stopped(tmp_path: Path) -> None:
    port = free_port()
    server = ArenaServer(ServerConfig(port=port, db=str(tmp_path / "arena.db")))
    failures: list[float] = []

    def failed(error: Exception, delay: float) -> None:
        failures.append(delay)
        if len(failures) == 2:
            starting.append(asyncio.ensure_future(server.start()))

    starting: list[asyncio.Future[None]] = []
    client = ArenaClient(f"ws://127.0.0.1:{port}", "carol")
    reconnector = Reconnector(client, backoff=Backoff(0.05, 0.2), on_failure=failed)
    try:
        assert await asyncio.wait_for(reconnector.come_back(first=True), 30) is None
        assert len(failures) >= 2 and client.player_id
        await client.close()
    finally:
        await server.stop()
    stop = asyncio.Event()
    gone = ArenaClient(f"ws://127.0.0.1:{port}", "dave")
    calls: list[float] = []

    def give_up(error: Exception, delay: float) -> None:
        calls.append(delay)
        stop.set()

    stopped = Reconnector(gone, backoff=Backoff(0.05, 0.2), stop=stop, on_failure=give_up)
    with pytest.raises(ConnectionLost):
        await asyncio.wait_for(stopped.come_back(), 30)
    assert len(calls) == 1


async def test_a_client_whose_redirected_node_is_gone_goes_back_to_its_first_node(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        client = ArenaClient(url_of(server), "erin")
        await client.open()
        client.url = f"ws://127.0.0.1:{free_port()}"  # as after a redirect to a node that died since
        failures: list[Exception] = []
        back = Reconnector(client, backoff=Backoff(0.01, 0.05), on_failure=lambda e, d: failures.append(e))
        assert isinstance(await asyncio.wait_for(back.come_back(), 30), m.Resumed)
        assert client.url == url_of(server) and len(failures) == 1 and isinstance(failures[0], OSError)
        await client.close()
