"""Generates the parts of docs/protocol.md that come from the code: one example per message
(built from the models, so it validates) and a complete session recorded from a real server.

Run ``python -m server.docs`` to rewrite the generated sections of docs/protocol.md (between
the ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` markers).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel

from protocol import messages as m
from protocol.errors import ErrorCode
from server.config import ServerConfig
from server.requests import limits

DOC = Path(__file__).resolve().parent.parent / "docs" / "protocol.md"

_SUMMARY = m.RoomSummary(
    id="3f9c0a1b",
    variant="tactic-toe",
    time_control=m.Increment(base_ms=180_000, increment_ms=2_000),
    rated=True,
    private=False,
    ply_cap=None,
    seats=m.Seats(x="alice", o="bob"),
    status="playing",
    spectators=1,
    games=1,
)
_CLOCKS = m.Clocks(x_ms=176_400, o_ms=181_200, running="x")
_GAME = m.GameSnapshot(
    game="3f9c0a1b.1",
    number=1,
    x="alice",
    o="bob",
    moves=[4, 0, 8, 2],
    board=["o", None, "o", None, "x", None, None, None, "x"],
    to_move="x",
    ply=4,
    next_to_vanish={"x": None, "o": None},
    clocks=_CLOCKS,
)
_SNAPSHOT = m.RoomSnapshot(room=_SUMMARY, seq=7, games=["3f9c0a1b.1"], game=_GAME)
_PLAYER = m.PlayerInfo(id="p1a2b3c4d5e6", name="alice", kind="human", ratings={"classic": 1562})

CLIENT_EXAMPLES: list[BaseModel] = [
    m.Hello(name="alice", kind="human", ref="1"),
    m.Hello(name="alice", token="kq1N...the token from welcome...", ref="1"),
    m.Hello(name="minimax-bot", kind="bot", levels=["easy", "medium", "hard", "best"], ref="1"),
    m.Resume(rooms={"3f9c0a1b": 7}, ref="2"),
    m.LobbySubscribe(ref="3"),
    m.LobbyUnsubscribe(ref="4"),
    m.GetLeaderboard(variant="classic", limit=10, ref="5"),
    m.CreateRoom(
        variant="tactic-toe", time_control=m.Increment(base_ms=180_000, increment_ms=2_000), seat="x", ref="6"
    ),
    m.CreateRoom(
        variant="15x15k5", time_control=m.PerMove(move_ms=30_000), private=True, rated=False, ref="7"
    ),
    m.Join(room="3f9c0a1b", ref="8"),
    m.Spectate(room="3f9c0a1b", ref="9"),
    m.Leave(room="3f9c0a1b", ref="10"),
    m.Rematch(room="3f9c0a1b", ref="11"),
    m.Challenge(
        opponent="minimax-bot",
        variant="classic",
        colour="x",
        time_control=m.PerMove(move_ms=5_000),
        level="easy",
        ref="12",
    ),
    m.ArrangeGame(
        x="minimax-bot",
        o="table-bot",
        variant="classic",
        time_control=m.PerMove(move_ms=5_000),
        opening=[4],
        ref="18",
    ),
    m.AcceptChallenge(challenge="c0a1b2c3d4", ref="13"),
    m.DeclineChallenge(challenge="c0a1b2c3d4", reason="busy", ref="14"),
    m.CancelChallenge(challenge="c0a1b2c3d4", ref="14b"),
    m.ListChallenges(ref="14c"),
    m.Move(room="3f9c0a1b", cell=4, ref="15"),
    m.Resign(room="3f9c0a1b", ref="16"),
    m.Ping(ref="17"),
]

SERVER_EXAMPLES: list[BaseModel] = [
    m.Welcome(
        player=_PLAYER,
        token="kq1N...43 characters...",
        server_version="0.1.0",
        limits=limits(ServerConfig(), "alice"),
        rooms=[],
        ref="1",
    ),
    m.Error(code=ErrorCode.CELL_OCCUPIED, message="cell 4 is occupied", ref="15"),
    m.Error(code=ErrorCode.RATE_LIMITED, message="too many messages", ref="17", retry_after=0.05),
    m.Ok(ref="15", seq=8),
    m.Pong(ref="17"),
    m.Joined(room="3f9c0a1b", role="spectator", snapshot=_SNAPSHOT, ref="9"),
    m.Resumed(rooms={"3f9c0a1b": "replay"}, ref="2"),
    m.LobbySnapshot(rooms=[_SUMMARY], players=[_PLAYER], ref="3"),
    m.LobbyUpdate(rooms=[_SUMMARY], rooms_closed=["77aa01ff"], players=[], players_gone=["p9f8e7d6c5b4a"]),
    m.Leaderboard(
        variant="classic",
        entries=[
            m.LeaderboardEntry(
                rank=1, player="p1a2b3c4d5e6", name="alice", kind="human", rating=1562.3, rd=187.2, games=3
            )
        ],
        ref="5",
    ),
    m.ChallengeSent(challenge="c0a1b2c3d4", ref="12"),
    m.GameArranged(room="5d6e7f80", x="minimax-bot", o="table-bot", ref="18"),
    m.ChallengeReceived(
        challenge="c0a1b2c3d4",
        challenger=_PLAYER,
        variant="classic",
        colour="x",
        time_control=m.PerMove(move_ms=5_000),
        rated=True,
        level="easy",
        seat="o",
    ),
    m.ChallengeReceived(
        challenge="c5e6f7a8b9",
        challenger=m.PlayerInfo(id="p0d1e2f3a4b5", name="td-1f2e", kind="bot"),
        variant="classic",
        colour="x",
        time_control=m.PerMove(move_ms=5_000),
        rated=False,
        opening=[4],
        seat="o",
        opponent="minimax-bot",
    ),
    m.ChallengeAccepted(challenge="c0a1b2c3d4", room="3f9c0a1b", role="x", snapshot=_SNAPSHOT),
    m.ChallengeDeclined(challenge="c0a1b2c3d4", by="minimax-bot", reason="busy"),
    m.ChallengeDeclined(
        challenge="c5e6f7a8b9", by="table-bot", reason="I play tactic-toe, not classic", room="5d6e7f80"
    ),
    m.ChallengeDeclined(
        challenge="c5e6f7a8b9", by="table-bot", reason="went offline", room="5d6e7f80", cause="gone"
    ),
    m.ChallengeCancelled(challenge="c5e6f7a8b9", reason="table-bot declined"),
    m.ChallengeExpired(challenge="c0a1b2c3d4"),
    m.Challenges(
        outgoing=[
            m.ChallengeInfo(
                challenge="c0a1b2c3d4",
                challenger="alice",
                opponent="minimax-bot",
                variant="tactic-toe",
                colour="x",
                rated=True,
                expires_ms=41_500,
            )
        ],
        incoming=[],
        ref="14c",
    ),
    m.Redirect(url="ws://10.0.0.2:8765", room="b-5e6f7a8b", ref="8"),
    m.Goodbye(reason="server shutting down", close_code=1001),
    m.SeatsChanged(room="3f9c0a1b", seq=2, seats=m.Seats(x="alice", o="bob"), spectators=0),
    m.GameStarted(
        room="3f9c0a1b",
        seq=3,
        game="3f9c0a1b.1",
        number=1,
        variant="tactic-toe",
        x="alice",
        o="bob",
        clocks=m.Clocks(x_ms=180_000, o_ms=180_000, running=None),
        rated=True,
        first_move_ms=30_000,
    ),
    m.Moved(
        room="3f9c0a1b",
        seq=8,
        game="3f9c0a1b.1",
        ply=5,
        cell=6,
        mark="x",
        vanished=None,
        next_to_vanish={"x": 4, "o": None},
        clocks=m.Clocks(x_ms=174_900, o_ms=181_200, running="o"),
    ),
    m.GameEnded(
        room="3f9c0a1b",
        seq=12,
        game="3f9c0a1b.1",
        outcome=m.Result(result="1-0", winner="x", reason="line", line=[2, 4, 6]),
        x="alice",
        o="bob",
        moves=[4, 0, 8, 2, 6, 1, 3, 5, 2],
        ratings={"alice": 1662.3, "bob": 1337.7},
    ),
    m.PlayerDisconnected(room="3f9c0a1b", seq=9, player="bob", mark="o", grace_ms=30_000),
    m.PlayerReconnected(room="3f9c0a1b", seq=10, player="bob", mark="o"),
    m.RematchOffered(room="3f9c0a1b", seq=13, by="alice", mark="x"),
    m.RoomClosed(room="3f9c0a1b", seq=20, reason="empty"),
    m.Snapshot(room="3f9c0a1b", seq=7, snapshot=_SNAPSHOT),
]


def _block(model: BaseModel) -> str:
    return "```json\n" + json.dumps(model.model_dump(mode="json"), separators=(", ", ": ")) + "\n```\n"


def messages_section() -> str:
    """Every message: its type, what it is for, and an example frame."""
    out = []
    for title, examples, parse in (
        ("Client to server", CLIENT_EXAMPLES, m.parse_client),
        ("Server to client", SERVER_EXAMPLES, m.parse_server),
    ):
        out.append(f"### {title}\n")
        seen: set[str] = set()
        for model in examples:
            parse(model.model_dump_json())  # every example is a valid frame
            kind = str(getattr(model, "type", ""))
            if kind not in seen:
                seen.add(kind)
                doc = " ".join((type(model).__doc__ or "").split())
                out.append(f"#### `{kind}` ({type(model).__name__})\n\n{doc}\n")
            out.append(_block(model))
    return "\n".join(out)


def errors_section() -> str:
    """The table of error codes (from `ErrorCode`) and of close codes."""
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| `{code}` | {code.meaning} |" for code in ErrorCode]
    rows += ["", "| close code | when |", "|---|---|"]
    rows += [f"| {code} | {meaning} |" for code, meaning in m.CLOSE_CODES.items()]
    return "\n".join(rows) + "\n"


async def record_session() -> str:
    """A complete session against a real server: every frame both players send and get."""
    from websockets.asyncio.client import connect

    from server.app import ArenaServer
    from server.config import ServerConfig

    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = ArenaServer(ServerConfig(port=0, db=f"{tmp}/doc.db", ping_interval=None))
        await server.start()
        url = f"ws://127.0.0.1:{server.port}"
        try:
            async with connect(url, compression=None) as a, connect(url, compression=None) as b:
                names = {a: "alice", b: "bob"}
                room = ""

                async def say(ws: object, frame: dict[str, object]) -> None:
                    nonlocal room
                    text = json.dumps(frame)
                    lines.append(f"{names[ws]} → {text}")  # type: ignore[index]
                    await ws.send(text)  # type: ignore[attr-defined]
                    for other in (a, b):
                        while True:
                            try:
                                got = await asyncio.wait_for(other.recv(), 0.2)
                            except TimeoutError:
                                break
                            data = json.loads(got)
                            if data.get("type") == "welcome":
                                data["token"] = "<secret token>"
                            if data.get("type") == "joined" and not room:
                                room = data["room"]
                            lines.append(f"{names[other]} ← {json.dumps(data)}")

                await say(a, {"type": "hello", "name": "alice", "ref": "1"})
                await say(b, {"type": "hello", "name": "bob", "kind": "human", "ref": "1"})
                await say(
                    a,
                    {
                        "type": "create_room",
                        "variant": "classic",
                        "seat": "x",
                        "time_control": {"kind": "per_move", "move_ms": 60000},
                        "ref": "2",
                    },
                )
                await say(b, {"type": "join", "room": room, "ref": "2"})
                await say(b, {"type": "move", "room": room, "cell": 4, "ref": "3"})
                for i, (ws, cell) in enumerate([(a, 4), (b, 0), (a, 2), (b, 6), (a, 3), (b, 5)]):
                    if i == 3:  # bob tries a taken cell first
                        await say(b, {"type": "move", "room": room, "cell": 4, "ref": "x"})
                    await say(ws, {"type": "move", "room": room, "cell": cell, "ref": f"m{i}"})
                await say(a, {"type": "resign", "room": room, "ref": "9"})
                await say(b, {"type": "rematch", "room": room, "ref": "10"})
                await say(a, {"type": "leave", "room": room, "ref": "11"})
        finally:
            await server.stop()
    return "```text\n" + "\n".join(lines) + "\n```\n"


def render(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- generated:{name} -->\n).*?(<!-- /generated:{name} -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"docs/protocol.md has no generated:{name} section")
    return pattern.sub(lambda mt: mt.group(1) + body + mt.group(2), text)


def main() -> int:
    text = DOC.read_text()
    text = render(text, "messages", messages_section())
    text = render(text, "errors", errors_section())
    text = render(text, "session", asyncio.run(record_session()))
    DOC.write_text(text)
    print(f"wrote {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
