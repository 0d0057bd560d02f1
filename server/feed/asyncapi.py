"""The AsyncAPI 3.0 document of the feed, generated from the topic tree and the pydantic
wire models (never written by hand). ``python -m server.feed.asyncapi`` prints it;
docs/asyncapi.json is its output, kept in step by a test."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from protocol import __version__
from protocol import messages as m
from protocol.topics import PREFIX, ROUTES
from server.bus import EventKind

#: kind -> (payload schema source, what the channel carries).
_PAYLOADS: dict[EventKind, tuple[Any, str]] = {
    "node": (
        m.NodeStatus,
        "A node's presence with its current counts, republished every heartbeat and on change; "
        "the last will (MQTT 5 user property will) sets status offline.",
    ),
    "room_summary": (m.RoomSummary, "A room as the lobby lists it; an empty message clears it (closed)."),
    "room_event": (
        Annotated[m.RoomEvent, Field(discriminator="type")],
        "Every event of one room, with the room's seq, exactly as on the WebSocket.",
    ),
    "game_result": (m.GameRecord, "A finished game with all its moves."),
    "standings": (dict[str, Any], "A tournament's standings after each of its games."),
    "rating": (m.RatingChange, "A player's rating in one variant after a rated game (a topic per variant)."),
}

#: kind -> the names of its topic's parameters, one a ``{}`` level, in order.
_PARAMETERS: dict[EventKind, tuple[str, ...]] = {
    "node": ("node",),
    "room_summary": ("room",),
    "room_event": ("room",),
    "game_result": ("game",),
    "standings": ("tournament",),
    "rating": ("player", "variant"),
}


def document() -> dict[str, Any]:
    """The AsyncAPI document as a JSON-able dict."""
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for kind, (pattern, qos, retain) in ROUTES.items():
        source, description = _PAYLOADS[kind]
        schema = TypeAdapter(source).json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in schema.pop("$defs", {}).items():
            schemas[name] = definition
        schemas[kind] = schema
        params = _PARAMETERS[kind]
        channels[kind] = {
            "address": f"{PREFIX}/{pattern.format(*('{' + p + '}' for p in params))}",
            "description": description,
            "parameters": {p: {"description": f"the {p} id (one topic level)"} for p in params},
            "messages": {
                kind: {
                    "contentType": "application/json",
                    "payload": {"$ref": f"#/components/schemas/{kind}"},
                    "bindings": {"mqtt": {"qos": qos, "retain": retain}},
                }
            },
        }
        operations[f"publish_{kind}"] = {
            "action": "send",
            "channel": {"$ref": f"#/channels/{kind}"},
            "bindings": {"mqtt": {"qos": qos, "retain": retain}},
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "ttt-arena MQTT event feed",
            "version": __version__,
            "description": "What `ttt serve --mqtt URL` publishes. See docs/mqtt.md. Every message "
            "carries the MQTT 5 user property `node` (the publishing node).",
        },
        "defaultContentType": "application/json",
        "channels": channels,
        "operations": operations,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def render() -> str:
    return json.dumps(document(), indent=2, sort_keys=False) + "\n"


if __name__ == "__main__":
    print(render(), end="")
