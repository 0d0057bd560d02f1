"""A room hosted on another node: joining it answers `redirect`, and the client follows it.

Two real servers; the feed's calls that tell B about A (`remote_node`, `remote_room`) are
made directly here (the MQTT feed's own tests cover how they are made over a broker)."""

from __future__ import annotations

from pathlib import Path

from server_harness import player, running_server, url_of

from protocol import messages as m


async def test_join_on_the_wrong_node_is_redirected_and_followed(tmp_path: Path) -> None:
    # The nodes of one arena share one database file, so a player's token works on each.
    async with (
        running_server(tmp_path, node_id="a") as node_a,
        running_server(tmp_path, node_id="b") as node_b,
    ):
        host = await player(node_a, "host")
        joined = await host.request(m.CreateRoom(seat="x"))
        assert isinstance(joined, m.Joined) and joined.room.startswith("a-")
        node_b.remote_node("a", url_of(node_a))
        node_b.remote_room(joined.room, joined.snapshot.room.model_dump(mode="json"), "a")
        guest = await player(node_b, "guest")
        lobby = await guest.request(m.LobbySubscribe())
        assert isinstance(lobby, m.LobbySnapshot) and [r.id for r in lobby.rooms] == [joined.room]
        seated = await guest.request(m.Join(room=joined.room))  # redirected to node a, then joined there
        assert isinstance(seated, m.Joined) and seated.role == "o"
        assert guest.url == url_of(node_a)
        started = await host.expect(m.GameStarted, room=joined.room)
        assert started.o == "guest"
        node_b.remote_room(joined.room, None, "a")
        assert joined.room not in node_b.arena.remote_rooms
