"""`RemoteRooms`: what one node knows about the rooms hosted by the other nodes of the
arena, read from the broker. Sans-I/O: the bridge hands it every message received on
`RemoteRooms.filters` (with the origin node of each); the server asks it questions
(the lobby union, where to redirect, a spectator's snapshot) and registers callbacks.

A node learns the others from three topics:

- ``nodes/{node}`` (retained, republished every heartbeat): the node's URL, its counts, and
  whether it is online. Whether it is alive is judged from its heartbeats (`Presence`: a last
  will is only a hint). Rooms of a node that is gone, or not yet heard of, are not listed.
- ``lobby/rooms/{room}`` (retained): the summary of each room, by its host node.
- ``rooms/{room}/events``: every room event; folded into a snapshot of the room's current
  game (with the rules engine) and forwarded to local spectators of that room.

A spectator who arrives after a remote game started gets the game in its snapshot only if
this node saw that game start; otherwise the snapshot has the room but no game, and the
moves from then on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.messages import MARK_NAMES
from protocol.rules import IllegalMove, Mark, State, points
from protocol.topics import PREFIX, decode, parse_topic
from server.feed.presence import Presence

log = logging.getLogger("ttt.feed")

#: Receives every later room event of a watched room, as the JSON text frame.
Send = Callable[[str], None]
#: Told when a remote room appears or changes (its summary) or goes (None).
LobbyListener = Callable[[str, dict[str, Any] | None], None]
#: Told a node's URL when it comes online, None when it goes offline.
NodeListener = Callable[[str, str | None], None]
#: Told every event of every remote room: (room id, the event's JSON object).
EventListener = Callable[[str, dict[str, Any]], None]


@dataclass(slots=True)
class _RemoteGame:
    """The current game of a remote room, folded from its events."""

    game: str
    number: int
    x: str
    o: str
    state: State | None
    clocks: dict[str, Any]
    result: dict[str, Any] | None = None
    #: As `GameStarted` said it, until the first move (it is not counted down here).
    first_move_ms: int | None = None

    def snapshot(self) -> dict[str, Any] | None:
        state = self.state
        if state is None:
            return None
        return {
            "game": self.game,
            "number": self.number,
            "x": self.x,
            "o": self.o,
            "moves": list(state.moves),
            "board": [None if m is None else MARK_NAMES[m] for m in state.board()],
            "to_move": MARK_NAMES[state.to_move],
            "ply": state.ply,
            "next_to_vanish": {MARK_NAMES[m]: state.next_to_vanish(m) for m in (Mark.X, Mark.O)},
            "clocks": self.clocks,
            "result": self.result,
            "first_move_ms": self.first_move_ms,
        }


@dataclass(slots=True)
class _Room:
    node: str | None
    summary: dict[str, Any] | None = None
    seq: int = 0
    games: list[str] = field(default_factory=list)
    score: dict[str, float] = field(default_factory=dict)
    game: _RemoteGame | None = None
    watchers: list[Send] = field(default_factory=list)


class RemoteRooms:
    """The other nodes' rooms, as seen from node ``node_id``."""

    def __init__(self, node_id: str, prefix: str = PREFIX, presence: Presence | None = None) -> None:
        self.node_id = node_id
        self.prefix = prefix
        #: node id -> the last presence payload it published (``url``, ``status``, counts).
        self.nodes: dict[str, dict[str, Any]] = {}
        #: Who is alive, from heartbeats: only its listed nodes' rooms are listed.
        self.presence = presence or Presence()
        self._rooms: dict[str, _Room] = {}
        #: Rooms (-> host node) not re-confirmed by a summary since the last (re)subscription.
        self._unconfirmed: dict[str, str | None] = {}
        #: node -> when its unconfirmed rooms go (``resync_delay`` after it was heard again).
        self._settle: dict[str, float] = {}
        #: Seconds a node's summaries have to arrive once its presence is heard after a resync.
        self.resync_delay = 2.0
        self._listeners: list[LobbyListener] = []
        self._node_listeners: list[NodeListener] = []
        self._event_listeners: list[EventListener] = []

    @property
    def filters(self) -> list[str]:
        """The topic filters to subscribe to."""
        return [f"{self.prefix}/nodes/+", f"{self.prefix}/lobby/rooms/+", f"{self.prefix}/rooms/+/events"]

    # -- questions the server asks -------------------------------------------------------------

    def summaries(self) -> list[dict[str, Any]]:
        """RoomSummary JSON of every listed remote room (host node online)."""
        return [r.summary for r in self._rooms.values() if r.summary is not None and self._online(r.node)]

    def owner_url(self, room_id: str) -> str | None:
        """The WebSocket URL of the node hosting ``room_id``, if it is a listed remote room."""
        room = self._rooms.get(room_id)
        if room is None or room.summary is None or not self._online(room.node):
            return None
        url = self.nodes[room.node or ""].get("url")
        return url if isinstance(url, str) else None

    def snapshot(self, room_id: str) -> dict[str, Any] | None:
        """RoomSnapshot JSON of a listed remote room, as far as this node has seen it."""
        room = self._rooms.get(room_id)
        if room is None or room.summary is None or not self._online(room.node):
            return None
        return {
            "room": room.summary,
            "seq": room.seq,
            "games": list(room.games),
            "score": dict(room.score),
            "game": room.game.snapshot() if room.game else None,
        }

    def watch(self, room_id: str, send: Send) -> Callable[[], None]:
        """Forward every later event of ``room_id`` to ``send``; returns the unwatch call."""
        room = self._rooms.setdefault(room_id, _Room(node=None))
        room.watchers.append(send)

        def unwatch() -> None:
            if send in room.watchers:
                room.watchers.remove(send)
            if not room.watchers and room.summary is None and self._rooms.get(room_id) is room:
                del self._rooms[room_id]  # the room closed while watched

        return unwatch

    def node_of(self, room_id: str) -> str | None:
        """The node hosting a remote room, if known."""
        room = self._rooms.get(room_id)
        return room.node if room else None

    def on_lobby(self, listener: LobbyListener) -> None:
        """Call ``listener(room_id, summary | None)`` when a remote room is listed, changes or goes."""
        self._listeners.append(listener)

    def on_node(self, listener: NodeListener) -> None:
        """Call ``listener(node_id, url | None)`` when another node comes online (its URL) or goes."""
        self._node_listeners.append(listener)

    def on_event(self, listener: EventListener) -> None:
        """Call ``listener(room_id, event)`` for each new event of each remote room."""
        self._event_listeners.append(listener)

    # -- what the broker says ------------------------------------------------------------------

    def resync_started(self) -> None:
        """The bridge (re)subscribed: the broker now sends the retained summaries again, or,
        if it restarted empty, each node sends its own once it is back. A room that closed
        while this node was disconnected is not among them (its clear was not kept): it goes
        `resync_delay` after its host is heard again (see `tick`). A host not heard again
        keeps its rooms until its presence times out."""
        self._unconfirmed = {rid: room.node for rid, room in self._rooms.items() if room.summary is not None}
        self._settle = {}

    def link_up(self, now: float) -> None:
        """This node's link to the broker is up again (see `Presence.link_up`)."""
        self.presence.link_up(now)

    def link_down(self) -> None:
        self.presence.link_down()

    def tick(self, now: float) -> list[str]:
        """Forget the nodes silent for too long (their rooms leave the lobby; returns them),
        and the rooms a node no longer lists since the last resync."""
        for node, due in list(self._settle.items()):
            if now >= due and self.presence.linked:
                del self._settle[node]
                stale = [rid for rid, host in self._unconfirmed.items() if host == node]
                for room_id in stale:
                    self._summary(room_id, None, None)
        gone = self.presence.gone(now)
        for node in gone:
            log.warning("feed: node %s has gone silent: its rooms leave the lobby", node)
            self._changed(node, True, self.nodes.get(node, {}).get("url"))
        return gone

    def receive(
        self,
        topic: str,
        payload: bytes,
        retained: bool,
        origin: str | None,
        *,
        now: float = 0.0,
        will: bool = False,
    ) -> None:
        """Take one message from the broker (the bridge's ``on_message``), received at ``now``
        (the loop's clock); ``will``: the broker sent it as its publisher's last will."""
        parsed = parse_topic(topic, self.prefix)
        if parsed is None or origin == self.node_id:
            return
        kind, key = parsed
        try:
            body = decode(payload)
        except ValueError:
            log.warning("feed: ignored a message on %s that is not a JSON object", topic)
            return
        if kind == "node":
            self._node(key, body, retained, will, now)
        elif kind == "room_summary":
            self._summary(key, body, origin)
        elif kind == "room_event" and body is not None:
            self._event(key, body, payload, origin)

    def _online(self, node: str | None) -> bool:
        return node is not None and self.presence.listed(node)

    def _node(self, node: str, body: dict[str, Any] | None, retained: bool, will: bool, now: float) -> None:
        if node == self.node_id or body is None:
            return  # our own retained presence from an earlier run; or a clear nobody sends
        was = self._online(node)
        old_url = self.nodes.get(node, {}).get("url") if was else None
        self.nodes[node] = body
        if node not in self._settle and node in self._unconfirmed.values():
            self._settle[node] = now + self.resync_delay  # its summaries come now, if any
        if body.get("status") == "online":
            self.presence.online(node, now, retained)
        elif self.presence.offline(node, now, retained, will):
            log.info("feed: node %s said goodbye", node)
        elif will and was and not retained:
            log.info("feed: the broker sent node %s's last will: gone unless heard again", node)
        self._changed(node, was, old_url)

    def _changed(self, node: str, was: bool, old_url: Any) -> None:
        """Tell the listeners what changed for ``node`` (listed before: ``was``, at ``old_url``)."""
        now = self._online(node)
        url = self.nodes.get(node, {}).get("url") if now else None
        if was != now or url != old_url:
            for listener in list(self._node_listeners):
                _safely(listener, node, url if isinstance(url, str) else None)
        if was != now:
            for room_id, room in self._rooms.items():
                if room.node == node and room.summary is not None:
                    self._tell(room_id, room.summary if now else None)

    def _summary(self, room_id: str, body: dict[str, Any] | None, origin: str | None) -> None:
        self._unconfirmed.pop(room_id, None)
        node = origin or (body or {}).get("node")
        room = self._rooms.get(room_id)
        if body is None:
            if room is not None and room.summary is not None:
                listed = self._online(room.node)
                room.summary = None
                if listed:
                    self._tell(room_id, None)
                if not room.watchers:
                    del self._rooms[room_id]
            return
        if node == self.node_id:
            return
        if room is None:
            room = self._rooms[room_id] = _Room(node=node if isinstance(node, str) else None)
        elif isinstance(node, str):
            room.node = node
        room.summary = body
        if self._online(room.node):
            self._tell(room_id, body)

    def _event(self, room_id: str, body: dict[str, Any], raw: bytes, origin: str | None) -> None:
        seq = body.get("seq")
        if not isinstance(seq, int):
            return
        room = self._rooms.get(room_id)
        if room is None:
            room = self._rooms[room_id] = _Room(node=origin)
        elif origin is not None:
            room.node = origin
        if seq <= room.seq:
            return  # QoS 1 is at least once: a repeat
        room.seq = seq
        self._fold(room, body)
        for event_listener in list(self._event_listeners):
            _safely(event_listener, room_id, body)
        frame = raw.decode() if raw else json.dumps(body)
        for send in list(room.watchers):
            _safely(send, frame)

    def _fold(self, room: _Room, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        try:
            if kind == "game_started":
                variant = ev["variant"]
                cap = (room.summary or {}).get("ply_cap")
                state = State.start(variant, ply_cap=cap if isinstance(cap, int) else None)
                room.game = _RemoteGame(ev["game"], ev["number"], ev["x"], ev["o"], state, ev["clocks"])
                room.game.first_move_ms = ev.get("first_move_ms")
                room.games.append(ev["game"])
            elif room.game is not None and ev.get("game") == room.game.game:
                if kind == "moved" and room.game.state is not None:
                    state = room.game.state.play(ev["cell"])
                    if state.ply != ev["ply"]:  # e.g. the game started from an opening
                        raise ValueError(f"ply {ev['ply']} after {room.game.state.ply}")
                    room.game.state = state
                    room.game.clocks = ev["clocks"]
                    room.game.first_move_ms = None
                elif kind == "game_over":
                    room.game.result = ev["outcome"]
                    room.game.first_move_ms = None
                    self._score(room, room.game, ev["outcome"])
        except (KeyError, TypeError, IllegalMove, ValueError) as exc:
            log.warning("feed: lost track of a remote game in room with seq %s: %s", ev.get("seq"), exc)
            if room.game is not None:
                room.game.state = None

    @staticmethod
    def _score(room: _Room, game: _RemoteGame, outcome: dict[str, Any]) -> None:
        winner = outcome.get("winner")
        if outcome.get("reason") == "aborted":
            return  # an aborted game scores nothing
        for mark, name in (("x", game.x), ("o", game.o)):
            room.score[name] = room.score.get(name, 0.0) + points(winner, mark)

    def _tell(self, room_id: str, summary: dict[str, Any] | None) -> None:
        for listener in list(self._listeners):
            _safely(listener, room_id, summary)


def _safely(callback: Callable[..., None], *args: Any) -> None:
    """Call a listener; one that fails is logged and never stops the feed."""
    try:
        callback(*args)
    except Exception:
        log.exception("feed: a listener failed")
