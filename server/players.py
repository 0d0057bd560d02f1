"""Players the arena knows, and the connections (sessions) they speak through. No I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol import names


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
    """Every known player, by id, by name (its `protocol.names.key`: the skeleton of its
    NFKC form, case-folded, so ``a1ice`` and a Cyrillic ``аlice`` find ``alice``) and by
    token hash.

    Only the players a node has met since it started are here (and those of the rooms it
    recovered): lookups never touch the store; the shell reads a player it does not know
    (created before it started, or by another node) into the roster, in a thread,
    before deciding its hello (`server.feed.shared.SharedReads`)."""

    def __init__(self) -> None:
        self.by_id: dict[str, Player] = {}
        self.by_name: dict[str, Player] = {}
        self.by_token: dict[str, Player] = {}

    def add(self, player: Player) -> None:
        self.by_id[player.id] = player
        self.by_name[names.key(player.name)] = player
        self.by_token[player.token_hash] = player

    def remove(self, player: Player) -> None:
        """Forget ``player`` (one the store refused)."""
        for index, key in ((self.by_id, player.id), (self.by_name, player.name.casefold())):
            if index.get(key) is player:
                del index[key]
        if self.by_token.get(player.token_hash) is player:
            del self.by_token[player.token_hash]

    def __getitem__(self, pid: str) -> Player:
        return self.by_id[pid]

    def __contains__(self, pid: object) -> bool:
        return pid in self.by_id

    def __len__(self) -> int:
        return len(self.by_id)

    def with_token(self, token_hash: str) -> Player | None:
        return self.by_token.get(token_hash)

    def named(self, name: str) -> Player | None:
        return self.by_name.get(names.key(name))
