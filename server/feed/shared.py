"""Several nodes, one SQLite database file: what a node must read from the shared store
instead of trusting the copy it loaded at start, and which stored rooms are its own.

The nodes of one arena open the same ``--db`` file (WAL; SQLite serializes the writers).
Each node keeps players and ratings in memory, so three small read-throughs keep them
correct when another node has changed the file since:

- `find_player`: a token or a name that another node created (a redirected client comes
  with its token);
- `refresh_ratings`: the players' current ratings just before a game is rated, so a game
  rated on another node is not overwritten;
- `own_room`: at start a node recovers only its own rooms (ids are ``{node}-...``).

The server calls them at its hook points (lines marked ``# feed hook`` in server/).
"""

from __future__ import annotations

from typing import Any

from server.ratings import Rating


def own_room(node_id: str, room_id: str) -> bool:
    """Whether ``room_id`` was created by node ``node_id`` (a lone "local" node owns all)."""
    return node_id == "local" or room_id.startswith(f"{node_id}-")


def find_player(server: Any, *, token_hash: str | None = None, name: str | None = None) -> Any:
    """The player with that token hash (or that name), loaded from the shared store into
    the server's tables if another node created it; None if nobody has it."""
    from server.app import Player

    if token_hash is not None:
        rows = server.store.query(
            "SELECT id, name, kind, token_hash FROM players WHERE token_hash = ?", (token_hash,)
        )
    elif name is not None:
        rows = server.store.query(
            "SELECT id, name, kind, token_hash FROM players WHERE name = ? COLLATE NOCASE", (name,)
        )
    else:
        return None
    if not rows:
        return None
    pid, pname, kind, thash = rows[0]
    player = server.players.get(pid)
    if player is None:
        player = Player(pid, pname, kind, thash)
        server.players[pid] = player
        server.by_name[pname.casefold()] = player
        server.by_token[thash] = player
    refresh_ratings(server, None, [pid])
    return player


def refresh_ratings(server: Any, variant: str | None, players: list[str]) -> None:
    """Reload ``players``' ratings (in ``variant``, or all) from the shared store."""
    for pid in players:
        if variant is None:
            rows = server.store.query(
                "SELECT variant, rating, rd, vol, games FROM ratings WHERE player = ?", (pid,)
            )
        else:
            rows = server.store.query(
                "SELECT variant, rating, rd, vol, games FROM ratings WHERE player = ? AND variant = ?",
                (pid, variant),
            )
        for var, rating, rd, vol, games in rows:
            server.ratings.load(pid, var, Rating(rating, rd, vol, games))


def refresh_variant(server: Any, variant: str) -> None:
    """Reload every rating in ``variant`` (and any player another node created) from the shared
    store, so this node's leaderboard shows the games rated on every node."""
    from server.app import Player

    rows = server.store.query(
        "SELECT p.id, p.name, p.kind, p.token_hash, r.rating, r.rd, r.vol, r.games "
        "FROM ratings r JOIN players p ON p.id = r.player WHERE r.variant = ?",
        (variant,),
    )
    for pid, name, kind, thash, rating, rd, vol, games in rows:
        if pid not in server.players:
            player = Player(pid, name, kind, thash)
            server.players[pid] = player
            server.by_name[name.casefold()] = player
            server.by_token[thash] = player
        server.ratings.load(pid, variant, Rating(rating, rd, vol, games))
