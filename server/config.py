"""Everything a server operator (or a test) can tune, in one frozen value."""

from __future__ import annotations

from dataclasses import dataclass


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
    #: Seconds a room with nobody in it lingers before closing.
    empty_room_ttl: float = 5.0
    #: SQLite ``synchronous``: "FULL" survives power loss, "NORMAL" a crash of the process.
    sync: str = "FULL"
    node_id: str = "local"
    #: The URL clients use to reach this node (sent to the feed); derived from host/port when empty.
    public_url: str = ""

    @property
    def url(self) -> str:
        return self.public_url or f"ws://{self.host}:{self.port}"
