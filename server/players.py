"""Players the arena knows, and the connections (sessions) they speak through. No I/O."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Player:
    id: str
    name: str
    kind: str
    token_hash: str
    #: Levels of play a bot offers, as said in its latest hello (not stored).
    levels: tuple[str, ...] = ()


@dataclass(eq=False, slots=True)
class Session:
    """One connection as the arena sees it: who said hello on it, and what it hears."""

    conn: int
    ip: str
    player: Player | None = None
    lobby: bool = False
    closing: bool = False
    #: Rooms this connection has been answered for, with the highest seq it has been sent.
    #: Room events reach a connection only for these rooms, and only above that seq.
    rooms: dict[str, int] = field(default_factory=dict)


class Roster:
    """Every known player, by id, by name (case-folded) and by token hash.

    Lookups never touch the store: with several nodes on one store, the shell reads a
    player another node created into the roster (in a thread) before deciding its hello
    (`server.feed.shared.SharedReads`)."""

    def __init__(self) -> None:
        self.by_id: dict[str, Player] = {}
        self.by_name: dict[str, Player] = {}
        self.by_token: dict[str, Player] = {}

    def add(self, player: Player) -> None:
        self.by_id[player.id] = player
        self.by_name[player.name.casefold()] = player
        self.by_token[player.token_hash] = player

    def __getitem__(self, pid: str) -> Player:
        return self.by_id[pid]

    def __contains__(self, pid: object) -> bool:
        return pid in self.by_id

    def __len__(self) -> int:
        return len(self.by_id)

    def with_token(self, token_hash: str) -> Player | None:
        return self.by_token.get(token_hash)

    def named(self, name: str) -> Player | None:
        return self.by_name.get(name.casefold())
