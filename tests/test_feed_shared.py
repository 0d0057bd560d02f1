"""Several nodes sharing one store (a SQLite file, or a PostgreSQL database): each node
reads through to what the others wrote."""

from __future__ import annotations

from server.app import ArenaServer
from server.config import ServerConfig
from server.feed.shared import find_player, own_room, refresh_ratings, refresh_variant
from server.ops import PlayerSaved, RatingSaved
from server.store import hash_token


def two_nodes(db: str) -> tuple[ArenaServer, ArenaServer]:
    return ArenaServer(ServerConfig(db=db, node_id="a")), ArenaServer(ServerConfig(db=db, node_id="b"))


def test_a_player_created_on_another_node_is_found_by_token_and_name(any_db: str) -> None:
    a, b = two_nodes(any_db)
    try:
        a.store.write(
            [
                PlayerSaved("p1", "Ann", "human", hash_token("secret")),
                RatingSaved("p1", "classic", 1612.5, 80.0, 0.06, 7),
            ]
        )
        assert find_player(b.arena, b.store, token_hash=hash_token("wrong")) is None
        assert find_player(b.arena, b.store, name="bob") is None
        player = find_player(b.arena, b.store, token_hash=hash_token("secret"))
        assert (player.id, player.name) == ("p1", "Ann")
        assert (
            b.arena.players.by_name["ann"] is player
            and b.arena.players.by_token[hash_token("secret")] is player
        )
        assert b.arena.ratings.get("p1", "classic").rating == 1612.5
        assert find_player(b.arena, b.store, name="ANN") is player, (
            "names compare without case, as name_taken does"
        )
    finally:
        a.store.close()
        b.store.close()


def test_ratings_written_by_another_node_are_reloaded_before_rating(any_db: str) -> None:
    a, b = two_nodes(any_db)
    try:
        a.store.write(
            [
                RatingSaved("p1", "classic", 1700.0, 60.0, 0.05, 12),
                RatingSaved("p1", "4x4k4", 1400.0, 90.0, 0.06, 3),
            ]
        )
        b.arena.ratings.load("p1", "classic", b.arena.ratings.get("p1", "classic"))  # b's stale copy: 1500
        refresh_ratings(b.arena, b.store, "classic", ["p1", "nobody"])
        assert b.arena.ratings.get("p1", "classic").games == 12
        assert b.arena.ratings.get("p1", "4x4k4").games == 0, "only the variant asked for"
        refresh_ratings(b.arena, b.store, None, ["p1"])
        assert b.arena.ratings.get("p1", "4x4k4").rating == 1400.0
    finally:
        a.store.close()
        b.store.close()


def test_each_node_owns_the_rooms_it_created() -> None:
    assert own_room("a", "a-1f2e3d4c") and not own_room("a", "b-1f2e3d4c") and not own_room("a", "ab-1")
    assert own_room("local", "1f2e3d4c")


def test_a_leaderboard_refresh_brings_players_and_ratings_of_every_node(any_db: str) -> None:
    a, b = two_nodes(any_db)
    try:
        a.store.write(
            [
                PlayerSaved("p1", "Ann", "human", hash_token("s1")),
                PlayerSaved("p2", "Bob", "bot", hash_token("s2")),
                RatingSaved("p1", "classic", 1650.0, 70.0, 0.06, 4),
                RatingSaved("p2", "classic", 1450.0, 70.0, 0.06, 4),
                RatingSaved("p2", "4x4k4", 1550.0, 70.0, 0.06, 1),
            ]
        )
        refresh_variant(b.arena, b.store, "classic")
        assert [(pid, r.rating) for pid, r in b.arena.ratings.leaderboard("classic", 10)] == [
            ("p1", 1650.0),
            ("p2", 1450.0),
        ]
        assert b.players["p2"].name == "Bob" and b.arena.ratings.leaderboard("4x4k4", 10) == []
    finally:
        a.store.close()
        b.store.close()
