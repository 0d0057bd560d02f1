"""Everything a server operator (or a test) can tune, in one frozen value."""

from __future__ import annotations

from dataclasses import dataclass

from websockets.typing import Origin

from protocol import names

#: How many times the ordinary message rate and burst a trusted player's connection gets.
TRUSTED_FACTOR = 50


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Server settings. Times are seconds unless the name says ``_ms``.

    Tests shrink ``grace`` and ``first_move`` so a disconnect or an abort takes a
    fraction of a second instead of half a minute.
    """

    host: str = "127.0.0.1"
    port: int = 8765
    db: str = "./ttt-arena.db"
    #: Seconds a seated player who dropped has to come back before losing (``abandoned``).
    grace: float = 30.0
    #: Seconds X has for the first move before the game is aborted.
    first_move: float = 30.0
    #: Seconds the players of an arranged game (`ArrangeGame`) have to take their seats.
    answer_timeout: float = 30.0
    max_frame: int = 4096
    #: Messages per second per connection (token bucket) and the bucket size.
    rate: float = 20.0
    burst: int = 40
    #: Open connections allowed per client IP address.
    max_conns_per_ip: int = 64
    #: Messages per second (and burst) all the connections of one address share.
    ip_rate: float = 320.0
    ip_burst: int = 640
    #: Players the operator trusts with a larger allowance: a tournament
    #: director and the bots it runs. Their connections get `TRUSTED_FACTOR` times the
    #: message rate and burst, are told so in their `Welcome`, and are not counted against
    #: their address's budget. Compared as names are (`protocol.names.key`).
    trusted: frozenset[str] = frozenset()
    #: Frames over the rate limit in a row before the connection is closed (1008).
    max_flood: int = 100
    #: Bytes a connection's write buffer may hold before it counts as stalled (and the
    #: server stops reading from it), and seconds it may stay stalled before it is closed.
    write_limit: int = 64 * 1024
    stall_timeout: float = 5.0
    #: Open TCP connections in all, counted from accept (before the handshake); more are
    #: closed at once. 0: derived from the open-file limit (`server.accept.default_limit`).
    max_connections: int = 0
    #: ``Origin`` headers a WebSocket handshake may carry (e.g. ``https://play.example``);
    #: others get 403. A handshake without ``Origin`` (bots, the TUI) is always let in.
    #: Empty: any origin, as browsers and programs alike.
    origins: tuple[str, ...] = ()
    #: New players (a hello without a token) one client address may create: a burst, then per second.
    signup_burst: int = 60
    signup_rate: float = 1.0
    hello_timeout: float = 10.0
    open_timeout: float = 10.0
    ping_interval: float | None = 20.0
    ping_timeout: float | None = 20.0
    #: Rooms one player may be in (seated or watching) at once.
    max_rooms: int = 32
    #: Frames that fail validation before the connection is closed (1008).
    max_bad_frames: int = 50
    #: Room events kept in memory per room for replay on resume.
    replay_events: int = 500
    #: Seconds a challenge stands unanswered before it expires.
    challenge_ttl: float = 60.0
    #: Challenges one player may have pending as challenger, and as the one challenged.
    max_challenges: int = 8
    max_challenges_to: int = 32
    #: ...and of those to one player, how many may come from one client address (so a few
    #: accounts on one address cannot fill a house bot's list and lock everyone else out).
    max_challenges_to_per_ip: int = 16
    #: Seconds one store write may take before the store counts as failing (a lock held by
    #: another process, a hung disk): changes are refused and clocks paused until it returns.
    store_stall: float = 1.0
    #: SQLite ``synchronous``: "FULL" survives power loss, "NORMAL" a crash of the process.
    sync: str = "FULL"
    node_id: str = "local"
    #: Clustered nodes (any ``node_id`` but "local"): seconds a room lease lasts, and how
    #: often it is renewed (`server.lease`).
    lease: float = 4.0
    lease_renew: float = 1.0
    #: The URL clients use to reach this node (sent to the feed); derived from host/port when empty.
    public_url: str = ""
    #: MQTT feed: seconds between two heartbeats of this node's presence, and seconds without
    #: one (while this node is connected) after which another node counts as gone.
    mqtt_heartbeat: float = 5.0
    mqtt_presence_timeout: float = 20.0

    def allowance(self, name: str) -> tuple[float, int]:
        """The message rate and burst a connection of the player ``name`` gets."""
        factor = TRUSTED_FACTOR if self.is_trusted(name) else 1
        return self.rate * factor, self.burst * factor

    def is_trusted(self, name: str) -> bool:
        """Whether ``name`` is one of `trusted` (compared as names are, `protocol.names.key`)."""
        return bool(self.trusted) and names.key(name) in map(names.key, self.trusted)

    @property
    def ws_origins(self) -> list[Origin | None] | None:
        """``origins`` as ``websockets.serve(origins=...)`` takes it (None: no check)."""
        return [*map(Origin, self.origins), None] if self.origins else None

    @property
    def clustered(self) -> bool:
        """Whether this node shares its database with others (rooms have owners with leases)."""
        return self.node_id != "local"

    @property
    def url(self) -> str:
        return self.public_url or f"ws://{self.host}:{self.port}"
