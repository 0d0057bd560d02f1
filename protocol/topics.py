"""The MQTT feed's topic tree ``ttt/v1/...``, pure and shared by every party that publishes
or reads it (the server's bridge, a tournament's standings, ``ttt watch``): which topic,
QoS and retain flag each `FeedEvent` gets, how a received topic reads back as (kind, key),
and the ``mqtt://`` URL.

No I/O here; the bridge and the relay are the async shells around it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol
from urllib.parse import unquote, urlsplit

from protocol.errors import ArenaError

#: What an event is about; each kind has its topic.
EventKind = Literal["node", "room_summary", "room_event", "game_result", "standings", "rating"]


class FeedEvent(Protocol):
    """What a publication is made from (the server's bus events are such)."""

    @property
    def kind(self) -> EventKind: ...

    @property
    def key(self) -> str: ...

    @property
    def payload(self) -> dict[str, Any] | None: ...


#: Root of every topic; the version changes only when a payload changes incompatibly.
PREFIX: Final = "ttt/v1"

#: kind -> (topic pattern relative to PREFIX, QoS, retained). Each ``{}`` is one level of
#: the event key: a key of several levels is written with ``/`` between them (a rating's
#: key is ``"{player}/{variant}"``: one retained topic per variant, so a tactic-toe rating
#: never replaces the classic one).
ROUTES: Final[dict[EventKind, tuple[str, int, bool]]] = {
    "node": ("nodes/{}", 1, True),
    "room_summary": ("lobby/rooms/{}", 1, True),
    "room_event": ("rooms/{}/events", 1, False),
    "game_result": ("games/{}/result", 1, True),
    "standings": ("tournaments/{}/standings", 1, True),
    "rating": ("players/{}/rating/{}", 1, True),
}

#: Characters a topic level may not hold: level separator, wildcards, NUL.
_FORBIDDEN = frozenset("/+#\0")


class FeedError(ArenaError):
    """Root of the feed's own errors."""

    code = "feed_error"


class BadMqttUrl(FeedError):
    """The ``--mqtt`` URL is not ``mqtt://HOST[:PORT]``."""

    code = "bad_mqtt_url"


class BadTopicKey(FeedError):
    """An event key that cannot be one MQTT topic level (empty, or holds / + # or NUL)."""

    code = "bad_topic_key"


@dataclass(frozen=True, slots=True)
class Publication:
    """One MQTT message to send. An empty retained payload clears the retained message."""

    topic: str
    payload: bytes
    qos: int
    retain: bool


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    host: str
    port: int
    username: str | None = None
    password: str | None = None

    def __str__(self) -> str:
        return f"mqtt://{self.host}:{self.port}"


def parse_mqtt_url(url: str) -> BrokerAddress:
    """Read ``mqtt://[user[:password]@]HOST[:PORT]`` (``tcp://`` too; port 1883 by default).

    Raises:
        BadMqttUrl: another scheme, no host, a bad port, or a path/query.
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise BadMqttUrl(f"bad MQTT URL {url!r}: {exc}") from None
    if parts.scheme not in ("mqtt", "tcp"):
        raise BadMqttUrl(f"bad MQTT URL {url!r}: expected mqtt://HOST[:PORT]")
    if not parts.hostname:
        raise BadMqttUrl(f"bad MQTT URL {url!r}: no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise BadMqttUrl(f"bad MQTT URL {url!r}: no path or query expected")
    if port == 0:
        raise BadMqttUrl(f"bad MQTT URL {url!r}: port 0")
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return BrokerAddress(parts.hostname, port or 1883, username, password)


def check_key(key: str) -> str:
    """Return ``key`` if it can be one topic level.

    Raises:
        BadTopicKey: it is empty or holds ``/``, ``+``, ``#`` or NUL.
    """
    if not key or not _FORBIDDEN.isdisjoint(key):
        raise BadTopicKey(f"{key!r} cannot be an MQTT topic level")
    return key


def topic_for(kind: EventKind, key: str, prefix: str = PREFIX) -> str:
    """The full topic of events of ``kind`` about ``key`` (its levels joined by ``/`` when
    the kind's topic has several, e.g. ``"p1/classic"`` for a rating).

    Raises:
        BadTopicKey: a level is empty or holds ``+``, ``#`` or NUL, or the key has another
            number of levels than the kind's topic.
    """
    pattern = ROUTES[kind][0]
    wanted = pattern.count("{}")
    levels = key.split("/") if wanted > 1 else [key]
    if len(levels) != wanted:
        raise BadTopicKey(f"a {kind} key has {wanted} levels (a/b), not {key!r}")
    return f"{prefix}/{pattern.format(*map(check_key, levels))}"


def rating_key(player: str, variant: str) -> str:
    """The key of a player's rating in one variant (topic ``players/{player}/rating/{variant}``)."""
    return f"{player}/{variant}"


def encode(payload: dict[str, Any] | None) -> bytes:
    """Compact UTF-8 JSON; None (the thing is gone) becomes the empty payload."""
    if payload is None:
        return b""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def decode(payload: bytes | bytearray | str | None) -> dict[str, Any] | None:
    """The JSON object of a received payload; None for an empty (clearing) one.

    Raises:
        ValueError: not a JSON object.
    """
    if payload is None or len(payload) == 0:
        return None
    value = json.loads(payload)
    if not isinstance(value, dict):
        raise ValueError("payload is not a JSON object")
    return value


def publication_for(event: FeedEvent, prefix: str = PREFIX) -> Publication:
    """Map one bus event to the MQTT message the bridge sends.

    Raises:
        BadTopicKey: the event's key cannot be a topic level.
        KeyError: an unknown kind.
    """
    _, qos, retain = ROUTES[event.kind]
    if event.payload is None and not retain:
        # Only a retained topic can be "cleared"; a None event would be an empty message.
        raise BadTopicKey(f"a {event.kind} event needs a payload")
    return Publication(topic_for(event.kind, event.key, prefix), encode(event.payload), qos, retain)


def node_offline(node_id: str, online: dict[str, Any] | None) -> dict[str, Any]:
    """The retained payload that marks ``node_id`` offline (the last will and the clean exit):
    the last online payload with ``status`` set to ``offline``, so its URL stays readable."""
    payload: dict[str, Any] = dict(online) if online else {"node": node_id}
    payload["status"] = "offline"
    if "online" in payload:
        payload["online"] = False
    return payload


def parse_topic(topic: str, prefix: str = PREFIX) -> tuple[EventKind, str] | None:
    """Read a received topic back as (kind, key); None if it is not in the tree."""
    if not topic.startswith(prefix + "/"):
        return None
    levels = topic[len(prefix) + 1 :].split("/")
    for kind, (pattern, _, _) in ROUTES.items():
        shape = pattern.split("/")
        if len(shape) != len(levels):
            continue
        if all(s == "{}" or s == level for s, level in zip(shape, levels, strict=True)):
            keys = [level for s, level in zip(shape, levels, strict=True) if s == "{}"]
            if all(keys):
                return kind, "/".join(keys)
    return None
