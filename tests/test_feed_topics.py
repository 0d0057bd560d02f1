"""The topic tree, pure: topics, QoS, retain, payload encoding, URLs."""

from __future__ import annotations

import json

import pytest

from protocol.topics import (
    ROUTES,
    BadMqttUrl,
    BadTopicKey,
    decode,
    node_offline,
    parse_mqtt_url,
    parse_topic,
    publication_for,
    rating_key,
    topic_for,
)
from server.bus import FeedEvent

EXPECTED = {
    "node": ("n1", "ttt/v1/nodes/n1", True),
    "room_summary": ("n1", "ttt/v1/lobby/rooms/n1", True),
    "room_event": ("n1", "ttt/v1/rooms/n1/events", False),
    "game_result": ("n1", "ttt/v1/games/n1/result", True),
    "standings": ("n1", "ttt/v1/tournaments/n1/standings", True),
    "rating": ("n1/tactic-toe", "ttt/v1/players/n1/rating/tactic-toe", True),
}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_each_kind_has_its_topic_qos1_and_retain_flag(kind: str) -> None:
    key, topic, retain = EXPECTED[kind]
    pub = publication_for(FeedEvent(kind, key, {"type": kind, "ü": 1}))  # type: ignore[arg-type]
    assert (pub.topic, pub.qos, pub.retain) == (topic, 1, retain)
    assert json.loads(pub.payload) == {"type": kind, "ü": 1}
    assert parse_topic(pub.topic) == (kind, key)


def test_a_rating_has_a_retained_topic_per_variant() -> None:
    """Issue 17, bug 16: one topic for every variant let a tactic-toe rating replace the classic one."""
    topics = {topic_for("rating", rating_key("p1", v)) for v in ("classic", "tactic-toe", "4x4k4")}
    assert topics == {f"ttt/v1/players/p1/rating/{v}" for v in ("classic", "tactic-toe", "4x4k4")}


@pytest.mark.parametrize("key", ["p1", "p1/", "/classic", "p1/classic/x", "p1/+", "p#/classic"])
def test_a_rating_key_is_a_player_and_a_variant(key: str) -> None:
    with pytest.raises(BadTopicKey):
        topic_for("rating", key)


def test_every_route_is_covered() -> None:
    assert set(ROUTES) == set(EXPECTED)


def test_a_closed_room_clears_its_retained_summary_with_an_empty_payload() -> None:
    pub = publication_for(FeedEvent("room_summary", "r7", None))
    assert (pub.topic, pub.payload, pub.retain) == ("ttt/v1/lobby/rooms/r7", b"", True)
    assert decode(pub.payload) is None


def test_an_event_without_payload_on_a_non_retained_topic_is_refused() -> None:
    with pytest.raises(BadTopicKey):
        publication_for(FeedEvent("room_event", "r7", None))


@pytest.mark.parametrize("key", ["", "a/b", "+", "x#", "nul\0"])
def test_keys_that_are_not_one_topic_level_are_refused(key: str) -> None:
    with pytest.raises(BadTopicKey) as err:
        topic_for("room_event", key)
    assert err.value.code == "bad_topic_key"


@pytest.mark.parametrize(
    "topic",
    [
        "ttt/v1/rooms/r1",
        "ttt/v1/rooms/r1/moves",
        "ttt/v2/nodes/a",
        "other/nodes/a",
        "ttt/v1/nodes/",
        "ttt/v1",
    ],
)
def test_topics_outside_the_tree_read_as_none(topic: str) -> None:
    assert parse_topic(topic) is None


@pytest.mark.parametrize(
    ("url", "host", "port", "user"),
    [
        ("mqtt://127.0.0.1:1884", "127.0.0.1", 1884, None),
        ("mqtt://broker.example", "broker.example", 1883, None),
        ("tcp://h:99/", "h", 99, None),
        ("mqtt://ann:s%40cret@h:2000", "h", 2000, "ann"),
    ],
)
def test_mqtt_urls(url: str, host: str, port: int, user: str | None) -> None:
    address = parse_mqtt_url(url)
    assert (address.host, address.port, address.username) == (host, port, user)


def test_url_password_is_unquoted() -> None:
    assert parse_mqtt_url("mqtt://ann:s%40cret@h").password == "s@cret"


@pytest.mark.parametrize(
    "url", ["http://h:1", "h:1883", "mqtt://", "mqtt://h:port", "mqtt://h:0", "mqtt://h:70000", "mqtt://h/x"]
)
def test_bad_mqtt_urls_are_refused_clearly(url: str) -> None:
    with pytest.raises(BadMqttUrl) as err:
        parse_mqtt_url(url)
    assert err.value.code == "bad_mqtt_url"
    assert url in err.value.message


def test_offline_payload_keeps_the_node_url() -> None:
    online = {"node": "a", "url": "ws://127.0.0.1:9", "status": "online"}
    assert node_offline("a", online) == {"node": "a", "url": "ws://127.0.0.1:9", "status": "offline"}
    assert online["status"] == "online"
    assert node_offline("b", None) == {"node": "b", "status": "offline"}


def test_decode_refuses_non_objects() -> None:
    with pytest.raises(ValueError):
        decode(b"[1]")
