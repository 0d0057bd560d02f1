"""The AsyncAPI document: generated from the topic tree and models, and docs/ holds the latest."""

from __future__ import annotations

import json
from pathlib import Path

from protocol.topics import ROUTES, parse_topic
from server.feed.asyncapi import document, render

DOC = Path(__file__).resolve().parent.parent / "docs" / "asyncapi.json"


def test_docs_hold_the_generated_document() -> None:
    assert DOC.read_text() == render(), "run: python -m server.feed.asyncapi > docs/asyncapi.json"


def test_every_channel_is_a_topic_of_its_kind_with_its_qos_and_retain() -> None:
    doc = document()
    assert set(doc["channels"]) == set(ROUTES)
    for kind, channel in doc["channels"].items():
        address = channel["address"]
        keys = [f"k{i}" for i, _ in enumerate(channel["parameters"], 1)]
        for param, key in zip(channel["parameters"], keys, strict=True):
            address = address.replace("{" + param + "}", key)
        assert parse_topic(address) == (kind, "/".join(keys))
        (message,) = channel["messages"].values()
        _, qos, retain = ROUTES[kind]
        assert message["bindings"]["mqtt"] == {"qos": qos, "retain": retain}


def test_ratings_have_a_topic_per_variant() -> None:
    channel = document()["channels"]["rating"]
    assert channel["address"] == "ttt/v1/players/{player}/rating/{variant}"
    assert list(channel["parameters"]) == ["player", "variant"]


def test_payload_schemas_come_from_the_wire_models() -> None:
    schemas = document()["components"]["schemas"]
    assert set(schemas["room_summary"]["required"]) >= {"id", "variant", "seats", "status"}
    assert set(schemas["node"]["properties"]["status"]["enum"]) == {"online", "offline"}
    event_types = set(schemas["room_event"]["discriminator"]["mapping"])
    assert {"moved", "game_started", "game_over", "seats", "room_closed"} <= event_types
    refs = json.dumps(document())
    for name in json.loads(refs)["components"]["schemas"]:
        assert refs.count(f'"#/components/schemas/{name}"') >= 1 or name in ROUTES
