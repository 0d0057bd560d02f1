"""The arena, sans-I/O: every decision of the server, from a message and a time to a `Decision`.

It holds the players, the connections' sessions, the rooms, the challenges, the
arranged games, the ratings and what the lobby has yet to hear. It never touches a
socket, the store, the feed or a clock: `server.app` (the shell) parses frames, applies
the transport limits, stores a decision's operations and then asks `deliver` what to
send for each item, at that moment.

Its inputs (a message, a connection ending, a time coming) enter through
`server.events`; the handlers of each request are in `server.requests`.

Who hears what (the resume guarantee): a connection hears a room's events only once it
has been answered for that room (`Joined`, `ChallengeAccepted`, or `Resumed` with the
replay or snapshot); from then on it gets each event with a higher seq than that
answer covered, once, in order (`Session.rooms` keeps the seq per room).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from protocol import messages as m
from protocol.bucket import TokenBucket
from protocol.errors import ErrorCode
from protocol.rules import Mark
from protocol.topics import rating_key
from server.config import ServerConfig
from server.decision import Announce, Attach, Decision, Out, Played, Publish, Reply, Tell, Unwelcome
from server.frames import MovedEvent, encode
from server.ops import SeqSaved
from server.players import Player, Roster, Session
from server.ratings import Ratings
from server.room import Changes, Game, Room, RoomRules

#: Reloads players' ratings from a store shared with other nodes before a game is rated.
RatingsHook = Callable[[str, list[str]], None]


@dataclass
class Outage:
    """The store has failed since ``since`` (the loop's clock) for ``reason`` (`server.outage`)."""

    reason: str
    since: float


class Arena:
    """All of the server's state, and the decisions every request shares."""

    def __init__(self, config: ServerConfig, roster: Roster | None = None) -> None:
        self.config = config
        self.rules = RoomRules(config.grace, config.first_move, config.replay_events)
        self.players = roster or Roster()
        self.ratings = Ratings()
        self.rooms: dict[str, Room] = {}
        self.sessions: dict[int, Session] = {}
        #: Player id -> the session it is online through.
        self.online: dict[str, Session] = {}
        #: Pending challenges by id (`server.challenges.Pending` or `ArrangedChallenge`).
        self.challenges: dict[str, Any] = {}
        #: Arranged games waiting for their players, by room id (`server.arrange`).
        self.arrangements: dict[str, Any] = {}
        #: Rooms on other nodes (as the feed reports them): id -> (summary JSON, node id).
        self.remote_rooms: dict[str, tuple[dict[str, Any], str]] = {}
        #: Other nodes' public URLs.
        self.remote_nodes: dict[str, str] = {}
        #: Clustered nodes (`server.cluster`): rooms not hosted here as the lease table said
        #: when a request named them: room id -> its host's URL (None: its host's lease ran
        #: out and no node has taken it over yet); and players online on other nodes, by
        #: case-folded name -> URL. The shell reads them just before such a request is decided.
        self.hosts: dict[str, str | None] = {}
        self.player_hosts: dict[str, str] = {}
        self.before_rating: RatingsHook | None = None
        #: Set while the store fails (`server.outage`): changes are refused, clocks paused.
        self.outage: Outage | None = None
        #: New players per client address (`server.signup`).
        self.signups: dict[str, TokenBucket] = {}
        #: Counters for /metrics: refusals by code, moves, games started and finished.
        self.errors: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self._lobby_rooms: set[str] = set()
        self._lobby_players: set[str] = set()
        #: Sessions subscribed to the lobby, by connection (`lobby_listeners` walks these,
        #: not every player online: it is asked after every game that ends).
        self._lobby_sessions: dict[int, Session] = {}

    # --- connections -------------------------------------------------------------------

    def connect(self, conn: int, ip: str) -> Session:
        session = Session(conn, ip)
        self.sessions[conn] = session
        return session

    # --- building decisions --------------------------------------------------------------

    def refuse(
        self, conn: int, code: str, message: str, ref: str | None = None, retry_after: float | None = None
    ) -> Decision:
        self.errors[code] += 1
        error = m.Error(code=cast(ErrorCode, code), message=message, ref=ref, retry_after=retry_after)
        frame = m.encode(error)
        return Decision(now=[Reply(conn, frame)])

    def settle(self, room: Room, changes: Changes, *after: Out) -> Decision:
        """What ``changes`` of ``room`` ask: store its operations (ratings of finished games
        included), then announce its events, then ``after``; and wake the room when due."""
        events = changes.events
        if len(events) == 1 and type(events[0]) is MovedEvent and not changes.finished:  # a move
            due = room.next_deadline()
            return Decision(
                ops=changes.ops,  # the room's fresh list: nobody else keeps it
                later=[Announce(room.id, (events[0],), False), *after],
                wake=[] if due is None else [(due, room.id)],
            )
        decision = Decision(ops=list(changes.ops))
        if changes.events and not changes.ops:
            decision.ops.append(SeqSaved(room.id, room.seq))
        for game, ended in changes.finished:
            self.counts["games_finished"] += 1
            if game.rated and ended.outcome.reason != "aborted":
                if self.before_rating is not None:
                    self.before_rating(room.variant.name, [game.x, game.o])
                score = game.state.outcome.points(Mark.X) if game.state.outcome else 0.5
                saved = self.ratings.rate(room.variant.name, game.x, game.o, score)
                decision.ops += saved
                ended.ratings = {self.players[s.player].name: round(s.rating, 1) for s in saved}
        if changes.events:
            changed = any(type(e) is not MovedEvent for e in changes.events)
            decision.later.append(Announce(room.id, tuple(changes.events), changed))
        for game, ended in changes.finished:
            decision.later += self._results(room, game, ended)
        decision.later += after
        due = room.next_deadline()
        if due is not None:
            decision.wake.append((due, room.id))
        return decision

    def _results(self, room: Room, game: Game, ended: m.GameEnded) -> list[Out]:
        """The feed's news of a finished game: its record, and both players' new ratings."""
        record = m.GameRecord(
            game=game.id,
            room=room.id,
            number=game.number,
            variant=room.variant.name,
            x=ended.x,
            o=ended.o,
            rated=game.rated,
            time_control=room.time_control,
            moves=list(game.state.moves),
            outcome=ended.outcome,
            started=0.0,
            ended=0.0,
        )
        news: list[Out] = [Publish("game_result", game.id, record.model_dump(mode="json"))]
        if game.rated and ended.outcome.reason != "aborted":
            for pid in (game.x, game.o):
                r = self.ratings.get(pid, room.variant.name)
                change = m.RatingChange(
                    player=pid,
                    name=self.players[pid].name,
                    variant=room.variant.name,
                    rating=r.rating,
                    rd=r.rd,
                    games=r.games,
                )
                key = rating_key(pid, change.variant)  # a topic per variant
                news.append(Publish("rating", key, change.model_dump(mode="json")))
        return news

    # --- delivering ------------------------------------------------------------------------

    def deliver(self, out: Out, now: float) -> list[tuple[int, str]]:
        """The frames ``out`` stands for, now that what came before it is stored."""
        if type(out) is Announce:  # the most common (with `Reply`), first
            return self._announce(out)
        if isinstance(out, Reply):
            return [(out.conn, out.frame)] if out.conn in self.sessions else []
        if isinstance(out, Tell):
            session = self.online.get(out.player)
            if out.challenge is not None:
                challenge = self.challenges.get(out.challenge)
                if challenge is None:
                    return []  # withdrawn before the invitation went out
                arrangement = self.arrangements.get(getattr(challenge, "room", ""))
                if arrangement is not None:
                    arrangement.invited = True
            return [] if session is None else [(session.conn, out.frame)]
        if isinstance(out, Announce):
            return self._announce(out)
        if isinstance(out, Attach):
            return self._attach(out, now)
        if isinstance(out, Publish) and out.kind == "rating":
            self.touch_lobby(player_id=str(out.payload["player"]))  # the lobby shows ratings
        if isinstance(out, Unwelcome):
            self._unwelcome(out)
        return []

    def played(self, played: Played) -> list[tuple[int, str]]:
        """The frames of a plain move (`server.moves`), now that it is stored: what
        `deliver` gives for the `Announce` of its event and then the `Reply` of its `ok`."""
        sends = []
        room = self.rooms.get(played.room)
        if room is not None:  # (as `_announce`, for one event)
            seq, frame = played.event.seq, played.frame
            room.announced(seq, frame)
            self.counts["moves"] += 1
            sends = self._heard(room, ((seq, frame),))
        if played.conn in self.sessions:
            sends.append((played.conn, played.ok))
        return sends

    def _unwelcome(self, out: Unwelcome) -> None:
        session = self.sessions.get(out.conn)
        player = self.players.by_id.get(out.player)
        if player is None:
            return
        self.players.remove(player)
        self.errors[ErrorCode.NAME_TAKEN] += 1
        if session is not None and session.player is player:
            session.player = None
            session.rooms.clear()
        if self.online.get(player.id) is session:
            del self.online[player.id]
        self.touch_lobby(player_id=player.id)

    def _announce(self, ann: Announce) -> list[tuple[int, str]]:
        room = self.rooms.get(ann.room)
        if room is None:
            return []
        frames = []
        for event in ann.events:
            frame = encode(event)
            room.announced(event.seq, frame)
            frames.append((event.seq, frame))
            if type(event) is MovedEvent:
                self.counts["moves"] += 1
            elif isinstance(event, m.GameStarted):
                self.counts["games_started"] += 1
        sends = self._heard(room, frames)
        if ann.summary_changed:
            self.touch_lobby(room_id=room.id)
        if not isinstance(ann.events[-1], MovedEvent) and any(  # not room.closed: decided maybe later
            isinstance(e, m.RoomClosed) for e in ann.events
        ):
            self.rooms.pop(room.id, None)
            for pid in room.members():
                session = self.online.get(pid)
                if session is not None:
                    session.rooms.pop(room.id, None)
        return sends

    def _heard(self, room: Room, frames: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
        """Who of ``room``'s members hears which of ``frames`` ((seq, frame), oldest first),
        just announced: each session attached to the room, the frames after the seq it was
        last sent or answered for (which moves on to the last of them)."""
        sends = []
        rid, online = room.id, self.online
        for pid in (*room.seats, *room.spectators):  # room.members(), without building a set
            session = online.get(pid) if pid is not None else None
            if session is None:
                continue
            heard = session.rooms.get(rid)
            if heard is None:
                continue  # not answered for this room yet: its answer will cover these
            for seq, frame in frames:
                if seq > heard:
                    sends.append((session.conn, frame))
                    heard = seq
            session.rooms[rid] = heard
        return sends

    def _attach(self, att: Attach, now: float) -> list[tuple[int, str]]:
        session = self.sessions.get(att.conn)
        room = self.rooms.get(att.room)
        if session is None or session.closing:
            return []
        frames = list(att.frames)
        seq = att.seq
        if att.replay and room is not None:
            replay = room.replay_since(seq)
            if replay is None:  # more than the log keeps was announced meanwhile: a snapshot
                snapshot = room.snapshot(now)
                frames = [m.encode(m.Snapshot(room=room.id, seq=snapshot.seq, snapshot=snapshot))]
                seq = snapshot.seq
            else:
                frames = [frame for _, frame in replay]
                seq = max([seq, *(n for n, _ in replay)])
        if room is not None and session.player is not None and room.has(session.player.id):
            session.rooms[att.room] = max(seq, session.rooms.get(att.room, -1))
        return [(att.conn, frame) for frame in frames]

    # --- lobby -------------------------------------------------------------------------------

    def touch_lobby(self, room_id: str | None = None, player_id: str | None = None) -> None:
        if room_id is not None:
            self._lobby_rooms.add(room_id)
        if player_id is not None:
            self._lobby_players.add(player_id)

    @property
    def lobby_dirty(self) -> bool:
        return bool(self._lobby_rooms or self._lobby_players)

    def lobby_update(
        self, feeding: bool
    ) -> tuple[list[int], str | None, list[tuple[str, m.RoomSummary | None]]]:
        """What the lobby has not heard yet: the subscribed connections, the `LobbyUpdate`
        frame for them (None: nothing to say) and the room summaries that changed (for the
        feed). Not ``feeding`` (nobody reads the feed) and no connection subscribed: nothing
        is built, and what changed is forgotten (a subscriber starts from a snapshot)."""
        listeners = self.lobby_listeners()
        if not listeners and not feeding:
            self._lobby_rooms.clear()
            self._lobby_players.clear()
            return [], None, []
        update = m.LobbyUpdate()
        summaries: list[tuple[str, m.RoomSummary | None]] = []
        for rid in self._lobby_rooms:
            room = self.rooms.get(rid)
            if room is None or room.closed:
                update.rooms_closed.append(rid)
                summaries.append((rid, None))
            elif not room.private:
                summary = room.summary()
                update.rooms.append(summary)
                summaries.append((rid, summary))
        for pid in self._lobby_players:
            if pid in self.online:
                update.players.append(self.player_info(pid))
            else:
                update.players_gone.append(pid)
        self._lobby_rooms.clear()
        self._lobby_players.clear()
        if not (update.rooms or update.rooms_closed or update.players or update.players_gone):
            return [], None, summaries
        return listeners, m.encode(update), summaries

    def subscribe_lobby(self, session: Session, on: bool) -> None:
        """``session`` hears the lobby's updates from now on (``on``), or no longer."""
        session.lobby = on
        if on:
            self._lobby_sessions[session.conn] = session
        else:
            self._lobby_sessions.pop(session.conn, None)

    def lobby_listeners(self) -> list[int]:
        """The connections subscribed to the lobby, of players online through them."""
        online = self.online
        return [
            s.conn
            for s in self._lobby_sessions.values()
            if not s.closing and s.player is not None and online.get(s.player.id) is s
        ]

    def lobby_snapshot(self, ref: str | None) -> m.LobbySnapshot:
        rooms = [r.summary() for r in self.rooms.values() if not r.private and not r.closed]
        rooms += [m.RoomSummary.model_validate(s, strict=False) for s, _ in self.remote_rooms.values()]
        players = [self.player_info(pid) for pid in self.online]
        return m.LobbySnapshot(rooms=rooms, players=players, ref=ref)

    def player_info(self, pid: str) -> m.PlayerInfo:
        p = self.players[pid]
        kind: Any = p.kind
        return m.PlayerInfo(
            id=p.id,
            name=p.name,
            kind=kind,
            ratings=self.ratings.of_player(pid),
            online=pid in self.online,
            levels=list(p.levels),
        )

    # --- several nodes -------------------------------------------------------------------

    def remote_room(self, room_id: str, summary: dict[str, Any] | None, node_id: str) -> str | None:
        """A room on another node appeared, changed (``summary``) or closed (None): the
        `LobbyUpdate` frame for the lobby, or None when the summary is not valid."""
        update = m.LobbyUpdate()
        if summary is None:
            self.remote_rooms.pop(room_id, None)
            update.rooms_closed.append(room_id)
        else:
            try:
                update.rooms.append(m.RoomSummary.model_validate(summary, strict=False))
            except ValueError:
                self.remote_rooms.pop(room_id, None)
                return None
            self.remote_rooms[room_id] = (summary, node_id)
        return m.encode(update)

    def player_of(self, session: Session) -> Player:
        assert session.player is not None
        return session.player
