"""The terminal client's models, fed by the server's own sans-I/O `Room`: whatever the
room announces, the client's view must end up equal to the room's snapshot."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from client_tui.model import LobbyView, RoomView, clock_text, result_text
from client_tui.text import plain, printable
from client_tui.tokens import TokenStore
from protocol import messages as m
from protocol.rules import Mark, find_variant
from server.frames import encode
from server.room import Changes, Room, RoomRules

RULES = RoomRules(grace=30.0, first_move=20.0)
DOCS = Path(__file__).parent.parent / "docs"


def make_room(variant: str = "classic", control: m.TimeControl | None = None, **kw: object) -> Room:
    return Room("r1", find_variant(variant), control or m.NoClock(), rules=RULES, **kw)  # type: ignore[arg-type]


def feed(view: RoomView, changes: Changes, now: float) -> None:
    for event in changes.events:  # as a client gets it: the frame, read back
        view.apply(m.parse_server(encode(event)), now)


def same_as_room(view: RoomView, room: Room, now: float) -> None:
    snap = room.snapshot(now)
    assert view.seq == snap.seq
    assert view.summary.seats == snap.room.seats
    game = snap.game
    assert game is not None
    assert view.board == game.board
    assert view.moves == game.moves
    assert view.to_move == game.to_move
    assert view.result == game.result
    if view.playing:
        assert {k: v for k, v in view.next_to_vanish.items()} == game.next_to_vanish


def test_view_follows_a_tactic_toe_game_event_by_event() -> None:
    room = make_room("tactic-toe")
    room.sit("a", "alice", Mark.X, 0.0)
    view = RoomView.from_snapshot(room.snapshot(0.0), "alice", 0.0)
    assert view.role == "x" and view.game is None
    feed(view, room.sit("b", "bob", Mark.O, 1.0), 1.0)
    assert view.game is not None and view.my_turn
    moves = [0, 4, 1, 2, 6, 3]
    for ply, cell in enumerate(moves):
        player = "a" if ply % 2 == 0 else "b"
        feed(view, room.play(player, cell, 2.0 + ply), 2.0 + ply)
        same_as_room(view, room, 2.0 + ply)
    assert view.next_to_vanish == {"x": 0, "o": 4}
    feed(view, room.play("a", 7, 9.0), 9.0)  # X's 0 leaves as 7 arrives
    assert view.board[0] is None and view.board[7] == "x"
    same_as_room(view, room, 9.0)
    assert view.last_move == 7 and not view.my_turn


def test_view_keeps_our_colour_across_a_rematch() -> None:
    room = make_room()
    room.sit("a", "alice", Mark.X, 0.0)
    room.sit("b", "bob", Mark.O, 0.0)
    view = RoomView.from_snapshot(room.snapshot(0.0), "bob", 0.0)
    assert view.role == "o"
    feed(view, room.resign("a", 1.0), 1.0)
    assert view.result is not None and view.result.winner == "o"
    assert view.score == {"alice": 0.0, "bob": 1.0}
    feed(view, room.ask_rematch("a", 2.0), 2.0)
    assert view.rematch == {"x"}
    feed(view, room.ask_rematch("b", 3.0), 3.0)
    assert view.role == "x", "colours swap: bob moves first in game 2"
    assert view.number == 2 and view.my_turn and view.result is None
    same_as_room(view, room, 3.0)


def test_running_clock_counts_down_and_stops_at_the_end() -> None:
    room = make_room(control=m.Increment(base_ms=60_000, increment_ms=0))
    room.sit("a", "alice", Mark.X, 0.0)
    room.sit("b", "bob", Mark.O, 0.0)
    view = RoomView.from_snapshot(room.snapshot(0.0), "alice", 0.0)
    assert view.first_move_until is not None and view.first_move_until > 0  # the snapshot says how long
    feed(view, room.play("a", 4, 1.0), 1.0)
    assert view.clocks is not None and view.clocks.running == "o"
    assert view.clock_ms("o", 11.0) == 50_000
    assert view.clock_ms("x", 11.0) == view.clocks.x_ms, "a clock that is not running stands still"
    feed(view, room.resign("b", 12.0), 12.0)
    assert view.clock_ms("o", 30.0) == view.clock_ms("o", 12.0) == 49_000


def test_opening_moves_reach_the_board_at_game_start() -> None:
    room = make_room(opening=(4, 0))
    room.sit("a", "alice", Mark.X, 0.0)
    view = RoomView.from_snapshot(room.snapshot(0.0), "alice", 0.0)
    feed(view, room.sit("b", "bob", Mark.O, 1.0), 1.0)
    assert view.board[4] == "x" and view.board[0] == "o" and view.to_move == "x"
    feed(view, room.play("a", 8, 2.0), 2.0)
    same_as_room(view, room, 2.0)


def test_drop_countdown_snapshot_and_closing() -> None:
    room = make_room()
    room.sit("a", "alice", Mark.X, 0.0)
    room.sit("b", "bob", Mark.O, 0.0)
    view = RoomView.from_snapshot(room.snapshot(0.0), "alice", 0.0)
    feed(view, room.drop("b", 5.0), 5.0)
    assert view.grace_left("o", 15.0) == pytest.approx(20.0)
    feed(view, room.back("b", "bob"), 16.0)
    assert view.grace_left("o", 16.0) is None
    # A snapshot replaces everything, as after a resume that could not replay.
    room.play("a", 4, 17.0)
    view.apply(m.Snapshot(room="r1", seq=room.seq, snapshot=room.snapshot(17.0)), 17.0)
    same_as_room(view, room, 17.0)
    view.apply(m.RoomClosed(room="r1", seq=room.seq + 1, reason="empty"), 18.0)
    assert view.closed == "empty"
    view.apply(m.RoomClosed(room="other", seq=99, reason="x"), 18.0)
    assert view.seq == room.seq + 1, "events of other rooms are ignored"


def test_lobby_view_applies_updates() -> None:
    summary = make_room().summary()
    player = m.PlayerInfo(id="p1", name="bot1", kind="bot")
    lobby = LobbyView()
    lobby.load(m.LobbySnapshot(rooms=[summary], players=[player]))
    assert [r.id for r in lobby.open_rooms()] == ["r1"] and lobby.player_named("bot1") == player
    playing = summary.model_copy(update={"id": "r2", "status": "playing"})
    lobby.apply(m.LobbyUpdate(rooms=[playing], players_gone=["p1"]))
    assert [r.id for r in lobby.open_rooms()] == ["r1", "r2"] and lobby.players == {}
    lobby.apply(m.LobbyUpdate(rooms_closed=["r1"]))
    assert [r.id for r in lobby.open_rooms()] == ["r2"]


def test_an_update_handled_before_the_lobby_snapshot_is_kept() -> None:
    """CI, loaded: a bot came online just after the subscription was answered; its update
    (pushed) was handled before the snapshot (the answer) and the snapshot wiped it, so
    the bot was never listed."""
    summary = make_room().summary()
    bot = m.PlayerInfo(id="p2", name="rulebot", kind="bot")
    lobby = LobbyView()
    lobby.subscribing()
    lobby.apply(m.LobbyUpdate(players=[bot], rooms_closed=["r1"]))
    lobby.load(m.LobbySnapshot(rooms=[summary], players=[]))  # taken before the update
    assert lobby.player_named("rulebot") == bot and lobby.open_rooms() == []
    lobby.load(m.LobbySnapshot(rooms=[summary], players=[]))  # a later one stands as it is
    assert lobby.players == {} and [r.id for r in lobby.open_rooms()] == ["r1"]


def test_texts() -> None:
    assert clock_text(None) == "--" and clock_text(65_000) == "1:05" and clock_text(9_500) == "0:09.5"
    win = m.Result(result="0-1", winner="o", reason="timeout")
    assert result_text(win, "alice", "bob") == "bob (O) wins: time ran out"
    draw = m.Result(result="1/2-1/2", winner=None, reason="repetition")
    assert result_text(draw, "a", "b").startswith("draw")


@pytest.mark.parametrize(
    ("hostile", "shown"),
    [
        ("[red]x[/red]", "[red]x[/red]"),
        ("\x1b[2Jgone", "\\x1b[2Jgone"),
        ("bell\x07", "bell\\x07"),
        ("two\nlines", "two\\nlines"),
    ],
)
def test_server_text_is_shown_literally(hostile: str, shown: str) -> None:
    assert printable(hostile) == shown
    text = plain(hostile)
    assert text.plain == shown and not text.spans, "no markup was parsed"


def test_token_store_is_private_and_per_server(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "cfg" / "tokens.json")
    assert store.get("ws://a") is None
    store.put("ws://a", "alice", "secret-a")
    store.put("ws://b", "bob", "secret-b")
    assert store.get("ws://a") is not None and store.get("ws://a").token == "secret-a"  # type: ignore[union-attr]
    assert json.loads(store.path.read_text())["ws://b"]["name"] == "bob"
    if os.name == "posix":
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    store.path.write_text("not json")
    assert store.get("ws://a") is None, "a damaged file is treated as empty"


# --- replay, challenges, words (pure) -----------------------------------------------------------


def test_replay_names_removed_marks_badges_and_repetitions() -> None:
    from client_tui.replay import Replay

    replay = Replay(find_variant("tactic-toe"), [0, 4, 1, 2, 6, 3, 5])
    assert [p.vanished for p in replay.plies] == [None] * 6 + [0], "X's 7th ply removes its a1"
    assert replay.badges(6) == {0: 1, 1: 2, 6: 3, 4: 1, 2: 2, 3: 3}
    assert replay.badges(7)[5] == 3 and 0 not in replay.badges(7)
    assert replay.board(7)[0] is None and replay.board(7)[5] == "x"
    moves = [7, 4, 2, 1, 0, 3, 6, 8, 5, 4, 2, 1, 0, 3, 6]
    assert Replay(find_variant("tactic-toe"), moves).seen(len(moves)) == 2
    assert Replay(find_variant("classic"), [4, 0]).badges(2) == {}


def test_the_challenge_book_counts_down_and_forgets() -> None:
    from client_tui.challenges import ChallengeBook

    book = ChallengeBook()
    alice = m.PlayerInfo(id="p1", name="alice", kind="human")
    for i, at in enumerate((0.0, 5.0)):
        book.received(
            m.ChallengeReceived(
                challenge=f"c{i}", challenger=alice, variant="classic", colour="x",
                time_control=m.NoClock(), rated=True,
            ),
            at,
        )  # fmt: skip
    sent = book.sent(m.Challenge(opponent="bob"), 1.0)
    sent.id = "c9"
    assert [i.offer.challenge for i in book.newest_first(10.0)] == ["c1", "c0"], "newest on top"
    assert book.expire(60.5) and list(book.incoming) == ["c1"] and book.outgoing == [sent]
    assert book.closed("c9") is sent and book.outgoing == []
    assert book.expire(65.0) and book.incoming == {}


def test_a_challenge_closed_before_its_id_came_back_is_not_listed() -> None:
    """The decline of a challenge can be handled before the answer that gives its id (the
    event pump and the request are two paths): the entry must go all the same, not stay
    listed as "out" for its whole minute."""
    from client_tui.challenges import ChallengeBook

    book = ChallengeBook()
    first = book.sent(m.Challenge(opponent="bob"), 0.0)
    second = book.sent(m.Challenge(opponent="carol"), 0.0)
    assert book.closed("c1") is None, "no entry has that id yet"
    assert book.confirmed(first, m.ChallengeSent(challenge="c1"), 0.5) is first
    assert book.outgoing == [second]
    assert book.confirmed(second, m.ChallengeSent(challenge="c2"), 0.5) is None
    assert book.outgoing == [second] and second.id == "c2"
    assert book.closed("c2") is second and book.outgoing == []
    assert book.closed("c3") is None and book.closed_early == set(), "none of ours can be c3"


def test_a_challenge_that_ran_out_here_first_is_still_told_when_the_server_expires_it() -> None:
    """The countdown here and the server's `ChallengeExpired` race (CI lost it once): the
    row goes when the countdown runs out, and the event that comes after still finds the
    challenge, so the player is told it expired."""
    from client_tui.challenges import ChallengeBook

    book = ChallengeBook()
    sent = book.sent(m.Challenge(opponent="bob"), 0.0)
    book.confirmed(sent, m.ChallengeSent(challenge="c1", expires_ms=1000), 0.1)
    assert book.expire(1.2) and book.outgoing == [], "the countdown ran out: the row goes"
    assert book.closed("c1") is sent, "the server's word on it still finds it"
    assert book.closed("c1") is None and book.ran_out == {}


def test_cell_names_errors_and_the_local_move_check() -> None:
    from client_tui.words import ERRORS, error_text, move_problem, parse_cell
    from protocol.errors import ErrorCode

    v = find_variant("15x15k5")
    assert parse_cell("h8", v) == 112 and parse_cell(":o15", v) == 224 and parse_cell("a1", v) == 0
    assert parse_cell("p1", v) is None and parse_cell("a16", v) is None and parse_cell("h", v) is None
    codes = re.findall(r"^\| `([a-z_]+)` \|", (DOCS / "protocol.md").read_text(), re.M)
    assert codes and all(error_text(code, "?") == ERRORS[code] for code in codes)
    assert {code.value for code in ErrorCode} <= set(ERRORS), "a sentence for every code a server sends"
    room = make_room("tactic-toe")
    room.sit("a", "alice", Mark.X, 0.0)
    view = RoomView.from_snapshot(room.snapshot(0.0), "alice", 0.0)
    feed(view, room.sit("b", "bob", Mark.O, 1.0), 1.0)
    for ply, cell in enumerate([0, 4, 1, 2, 6, 3]):
        feed(view, room.play("a" if ply % 2 == 0 else "b", cell, 2.0 + ply), 2.0 + ply)
    assert move_problem(view, 0) == "a1 is your oldest mark: it leaves as you move, so you can't play there"
    assert move_problem(view, 4) == "b2 is taken"
    assert move_problem(view, 5) is None
