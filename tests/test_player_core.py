"""`BotCore`, the sans-I/O bot: challenges taken or declined with a reason, moves, reports."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from bots.move_clock import MIN_BUDGET_MS, MoveClock, move_budget, moves_to_go, usable_ms
from bots.player_core import Assignment, BotCore, Policy, Report, Search, Send, Think, run_search
from bots.strategies.base import Noisy as NoisyStrategy
from bots.tournament.match import Noisy, game_rng
from protocol import messages as m
from protocol.pacing import Backoff
from protocol.rules import Cell, Mark, State


class FirstLegal:
    def choose(self, state: State, rng: random.Random) -> Cell:
        return state.legal_moves()[0]


class RngPick:
    def choose(self, state: State, rng: random.Random) -> Cell:
        return rng.choice(state.legal_moves())


def challenge(
    cid: str = "c1", by: str = "alice", variant: str = "classic", tc: object = None
) -> m.ChallengeReceived:
    return m.ChallengeReceived(
        challenge=cid,
        challenger=m.PlayerInfo(id=f"p-{by}", name=by, kind="human"),
        variant=variant,
        colour="x",
        time_control=tc or m.NoClock(),  # type: ignore[arg-type]
        rated=False,
    )


def clocks() -> m.Clocks:
    return m.Clocks(x_ms=None, o_ms=None, running=None)


def snapshot(
    room: str = "r1", variant: str = "classic", game: m.GameSnapshot | None = None
) -> m.RoomSnapshot:
    summary = m.RoomSummary(
        id=room,
        variant=variant,
        time_control=m.NoClock(),
        rated=False,
        private=True,
        ply_cap=None,
        seats=m.Seats(x="alice", o="bot"),
        status="playing",
        spectators=0,
        games=1,
    )
    return m.RoomSnapshot(room=summary, seq=3, games=[], game=game)


def started(room: str = "r1", game: str = "g1", x: str = "alice", o: str = "bot") -> m.GameStarted:
    return m.GameStarted(
        room=room, seq=4, game=game, number=1, variant="classic", x=x, o=o, clocks=clocks(), rated=False
    )


def moved(ply: int, cell: int, mark: str, room: str = "r1", game: str = "g1") -> m.Moved:
    return m.Moved(room=room, seq=4 + ply, game=game, ply=ply, cell=cell, mark=mark, clocks=clocks())  # type: ignore[arg-type]


def sends(actions: Sequence[object]) -> list[m.ClientMessage]:
    return [a.message for a in actions if isinstance(a, Send)]


def test_policy_declines_with_reasons() -> None:
    core = BotCore("bot", FirstLegal(), Policy(variants=frozenset({"classic"}), max_games=1, think_ms=500))
    (decline,) = sends(core.receive(challenge(variant="tactic-toe")))
    assert isinstance(decline, m.DeclineChallenge) and "classic, not tactic-toe" in decline.reason
    (decline,) = sends(core.receive(challenge(tc=m.PerMove(move_ms=300))))
    assert isinstance(decline, m.DeclineChallenge) and "too fast" in decline.reason
    (accept,) = sends(core.receive(challenge("c2")))
    assert isinstance(accept, m.AcceptChallenge) and accept.challenge == "c2"
    (decline,) = sends(core.receive(challenge("c3")))
    assert isinstance(decline, m.DeclineChallenge) and decline.reason.startswith("busy")


def test_accepted_game_is_played_to_the_end_and_reported() -> None:
    core = BotCore("bot", FirstLegal(), Policy())
    core.receive(challenge("c1"))
    joined = m.Joined(room="r1", role="o", snapshot=snapshot(), ref="acc-c1")
    assert core.receive(joined) == []
    assert core.receive(started()) == []  # X (alice) moves first
    think = core.receive(moved(1, 4, "x"))
    assert think == [Think("r1", 1)]
    move = core.decide("r1", 1)
    assert move == m.Move(room="r1", cell=0)
    assert core.decide("r1", 0) is None  # stale: not that ply
    core.receive(moved(2, 0, "o"))
    core.receive(moved(3, 8, "x"))
    assert core.receive(moved(3, 8, "x")) == []  # a repeated event changes nothing
    over = m.GameEnded(
        room="r1",
        seq=20,
        game="g1",
        outcome=m.Result(result="1-0", winner="x", reason="line", line=[0, 4, 8]),
    )
    actions = core.receive(over)
    report = next(a.data for a in actions if isinstance(a, Report))
    assert report["moves"] == [4, 0, 8] and report["result"] == "1-0" and report["reason"] == "line"
    assert report["mark"] == "o" and report["number"] is None
    assert sends(actions) == []  # it keeps its seat: a rematch may be offered
    assert core.games == {} and core.busy == 0 and set(core.idle) == {"r1"}


def test_runner_challenge_and_expectation_share_a_numbered_game() -> None:
    x_bot = BotCore("A", RngPick(), Policy(), seed=9)
    o_bot = BotCore("B", RngPick(), Policy(), seed=9)
    o_bot.command({"cmd": "entrants", "names": ["A", "B"]})
    # the challenge (from the position after the opening 4, 0) arrives before the runner's
    # expectation: it waits, parked
    received = challenge("c7", by="A").model_copy(update={"opening": [4, 0]})
    assert o_bot.receive(received) == []
    (accept,) = sends(o_bot.command({"cmd": "expect", "number": 5, "challenger": "A"}))
    assert accept == m.AcceptChallenge(challenge="c7", ref="acc-c7")
    command = {"cmd": "challenge", "number": 5, "opponent": "B", "variant": "classic", "move_ms": 2000}
    (sent,) = sends(x_bot.command({**command, "opening": [4, 0]}))
    assert isinstance(sent, m.Challenge) and sent.colour == "x" and sent.opening == [4, 0]
    assert sent.time_control == m.PerMove(move_ms=2000)
    x_bot.receive(m.ChallengeSent(challenge="c7", ref=sent.ref))
    snap = snapshot(game=None)
    x_bot.receive(m.ChallengeAccepted(challenge="c7", room="r1", role="x", snapshot=snap))
    o_bot.receive(m.Joined(room="r1", role="o", snapshot=snap, ref="acc-c7"))
    # the game starts after the opening: X is to move at ply 2
    assert x_bot.receive(started(x="A", o="B")) == [Think("r1", 2)]
    x_move = x_bot.decide("r1", 2)
    assert x_move is not None and x_move.cell not in (4, 0)
    # game 5's X draws from the same random source as in play_match
    after_opening = State.replay("classic", [4, 0])
    assert x_move.cell == game_rng(9, 5, Mark.X).choice(after_opening.legal_moves())
    x_bot.receive(moved(3, x_move.cell, "x"))
    assert o_bot.receive(started(x="A", o="B")) == []
    assert o_bot.receive(moved(3, x_move.cell, "x")) == [Think("r1", 3)]
    expected = game_rng(9, 5, Mark.O).choice(after_opening.play(x_move.cell).legal_moves())
    assert o_bot.decide("r1", 3) == m.Move(room="r1", cell=expected)


def test_a_runners_clock_and_time_margin() -> None:
    """``--tc 1+0.1 --timemargin 300``: the challenge asks the server for the clock with the
    margin on top, and each bot of the game plans on the clock without it."""
    x_bot, o_bot = BotCore("A", RngPick(), Policy(), seed=9), BotCore("B", RngPick(), Policy(), seed=9)
    for core in (x_bot, o_bot):
        core.command({"cmd": "entrants", "names": ["A", "B"]})
    served = m.Increment(base_ms=1300, increment_ms=100)
    command = {"cmd": "challenge", "number": 5, "opponent": "B", "variant": "classic"}
    (sent,) = sends(x_bot.command({**command, "time_control": served.model_dump(), "margin_ms": 300}))
    assert isinstance(sent, m.Challenge) and sent.time_control == served
    o_bot.command({"cmd": "expect", "number": 5, "challenger": "A", "margin_ms": 300})
    (accept,) = sends(o_bot.receive(challenge("c7", by="A", tc=served)))
    x_bot.receive(m.ChallengeSent(challenge="c7", ref=sent.ref))
    snap = snapshot(game=None)
    snap.room.time_control = served
    x_bot.receive(m.ChallengeAccepted(challenge="c7", room="r1", role="x", snapshot=snap))
    o_bot.receive(m.Joined(room="r1", role="o", snapshot=snap, ref=accept.ref))
    begin = started(x="A", o="B").model_copy(update={"clocks": m.Clocks(x_ms=1300, o_ms=1300, running="x")})
    for core in (x_bot, o_bot):
        core.receive(begin, now=10.0)
        game = core.games["r1"]
        assert game.clock is not None and game.clock.left(10.0) == 1000.0, "planned without the margin"
    x_bot.decide("r1", 0, now=10.2)
    after = x_bot.games["r1"].clock
    assert after is not None and after.left(10.2) == pytest.approx(900.0)  # 1000 - 200 + the increment


def test_a_per_move_clock_resets_without_the_margin() -> None:
    clock = MoveClock(700.0, 0.0, True, 0, True, margin_ms=300)
    assert clock.after_move(1.0, m.PerMove(move_ms=1000)).left(5.0) == 700.0


def test_snapshot_after_reconnect_resumes_the_turn() -> None:
    core = BotCore("bot", FirstLegal(), Policy())
    game = m.GameSnapshot(
        game="g1",
        number=1,
        x="alice",
        o="bot",
        moves=[4],
        board=[None] * 9,
        to_move="o",
        ply=1,
        next_to_vanish={},
        clocks=clocks(),
    )
    core.receive(challenge("c1"))
    assert core.receive(m.Joined(room="r1", role="o", snapshot=snapshot(game=game), ref="acc-c1")) == [
        Think("r1", 1)
    ]
    # the connection dropped before the move went out: resuming thinks again
    assert core.receive(m.Resumed(rooms={"r1": "replay"})) == [Think("r1", 1)]
    assert sends(core.resign_all()) == [m.Resign(room="r1")]
    (decline,) = sends(core.receive(challenge("c9")))
    assert isinstance(decline, m.DeclineChallenge) and decline.reason == "shutting down"
    assert core.receive(m.Resumed(rooms={"r1": "gone"})) == [] and core.games == {}


def test_declines_and_errors_are_reported_to_the_runner() -> None:
    core = BotCore("A", FirstLegal(), Policy())
    (sent,) = sends(
        core.command({"cmd": "challenge", "number": 3, "opponent": "ghost", "variant": "classic"})
    )
    assert isinstance(sent, m.Challenge) and sent.time_control == m.NoClock()
    (report,) = core.receive(m.Error(code="no_such_player", message="no", ref=sent.ref))
    assert (
        isinstance(report, Report)
        and report.data["number"] == 3
        and report.data["reason"] == "no_such_player"
    )
    core.command({"cmd": "challenge", "number": 4, "opponent": "B", "variant": "classic"})
    core.receive(m.ChallengeSent(challenge="c4", ref="ch-4"))
    (report,) = core.receive(m.ChallengeDeclined(challenge="c4", by="B", reason="busy"))
    assert isinstance(report, Report) and report.data == {
        "event": "declined",
        "number": 4,
        "by": "B",
        "reason": "busy",
    }
    assert core.busy == 0
    (bad,) = core.command({"cmd": "dance"})
    assert isinstance(bad, Report) and bad.data["event"] == "error"


def test_backoff_doubles_to_a_cap_with_jitter() -> None:
    b = Backoff(first=0.1, cap=1.0, rng=random.Random(1))
    delays = [b.next() for _ in range(8)]
    assert all(0.05 <= d <= 1.0 for d in delays)
    assert delays[0] <= 0.1 and delays[-1] >= 0.5
    b.reset()
    assert b.next() <= 0.1
    _ = Assignment(1)


def test_a_ply_is_answered_once_and_the_same_way_again() -> None:
    core = BotCore("bot", RngPick(), Policy(), seed=1)
    core.receive(challenge("c1"))
    # the room's GameStarted may arrive before the reply that seats us: not taken as a game of ours
    assert core.receive(started(x="bot", o="alice")) == [] and core.games == {}
    core.receive(m.Joined(room="r1", role="x", snapshot=snapshot(), ref="acc-c1"))
    assert core.receive(started(x="bot", o="alice")) == [Think("r1", 0)]
    first = core.decide("r1", 0)
    state_of_rng = core.games["r1"].rng.getstate()
    assert core.decide("r1", 0) == first  # asked again (a resend after a drop): same move
    assert core.games["r1"].rng.getstate() == state_of_rng  # and no random numbers drawn


def test_games_from_before_a_restart_are_taken_up_only_when_the_server_says_so() -> None:
    core = BotCore("bot", FirstLegal(), Policy())
    assert core.receive(started(room="r9", x="alice", o="bot")) == []
    core.seated_before.add("r9")
    assert core.receive(started(room="r9", x="alice", o="bot")) == []  # X to move
    assert core.receive(moved(1, 4, "x", room="r9")) == [Think("r9", 1)]
    assert core.games["r9"].mark is Mark.O


def test_runner_games_skip_the_policy_and_a_forgotten_game_shifts_nothing() -> None:
    core = BotCore("B", FirstLegal(), Policy(variants=frozenset({"classic"}), max_games=1))
    core.entrants = frozenset({"A", "B"})
    core.command({"cmd": "expect", "number": 1, "challenger": "A"})
    core.command({"cmd": "expect", "number": 2, "challenger": "A"})
    core.command({"cmd": "expect", "number": 3, "challenger": "A"})
    # game 2's challenge failed on A's side: the runner tells B to forget it
    assert core.command({"cmd": "forget", "number": 2, "challenger": "A"}) == []
    (first,) = sends(core.receive(challenge("k1", by="A", variant="tactic-toe")))  # not a policy variant
    (second,) = sends(core.receive(challenge("k3", by="A")))  # over max_games: the runner decides
    assert isinstance(first, m.AcceptChallenge) and isinstance(second, m.AcceptChallenge)
    core.receive(m.Joined(room="r1", role="o", snapshot=snapshot("r1"), ref="acc-k1"))
    core.receive(m.Joined(room="r3", role="o", snapshot=snapshot("r3"), ref="acc-k3"))
    numbers = {room: g.assignment.number for room, g in core.games.items() if g.assignment}
    assert numbers == {"r1": 1, "r3": 3}


def test_a_challenge_level_makes_the_bot_play_randomly_that_often() -> None:
    levels = (("silly", 1.0), ("best", 0.0))
    for level, expect_first_legal in (("silly", False), ("best", True), (None, True)):
        core = BotCore("bot", FirstLegal(), Policy(levels=levels))
        offer = challenge("c1").model_copy(update={"level": level})
        core.receive(offer)
        core.receive(m.Joined(room="r1", role="o", snapshot=snapshot(), ref="acc-c1"))
        core.receive(started())
        picks = []
        state = State.start("classic")
        for ply in range(3):
            x_cell = next(c for c in state.legal_moves() if not state.play(c).is_over)  # X makes no line
            state = state.play(x_cell)
            core.receive(moved(2 * ply + 1, x_cell, "x"))
            move = core.decide("r1", 2 * ply + 1)
            assert move is not None and state.is_legal(move.cell)
            picks.append(move.cell == state.legal_moves()[0])
            state = state.play(move.cell)
            core.receive(moved(2 * ply + 2, move.cell, "o"))
        assert all(picks) == expect_first_legal, level


# --- the clock: each move's search budget --------------------------------------------


def test_move_budget_per_move_increment_no_clock_and_nearly_flagged() -> None:
    # per move: all of what is left, less the reserve (100 ms + 15%), from when it was read
    per_move = MoveClock(left_ms=400, seen=10.0, per_move=True)
    assert usable_ms(400) == 400 - 100 - 60
    assert move_budget(per_move, 10.0) == 240
    assert move_budget(per_move, 10.1) == 400 - 100 - 100 - 45  # 100 ms spent waiting for the worker
    # an increment: what is left over the moves to go, plus the increment, never past the usable time
    fischer = MoveClock(left_ms=10_000, seen=0.0, increment_ms=500)
    assert move_budget(fischer, 0.0, moves_to_go=20) == (10_000 - 100 - 1500) // 20 + 500
    assert move_budget(fischer, 0.0, moves_to_go=1) == 10_000 - 100 - 1500
    assert move_budget(MoveClock(left_ms=1000, seen=0.0, increment_ms=5000), 0.0, moves_to_go=5) == 750
    # a clock that is not running (the opponent's turn) does not run down
    assert move_budget(MoveClock(left_ms=400, seen=0.0, running=False, per_move=True), 99.0) == 240
    # no clock: nothing limits the search (the strategy keeps its own budget)
    assert move_budget(None, 5.0) is None
    # nearly flagged, or past it: the least budget, a quick look
    assert move_budget(MoveClock(left_ms=150, seen=0.0, per_move=True), 0.05) == MIN_BUDGET_MS
    assert move_budget(MoveClock(left_ms=150, seen=0.0, per_move=True), 9.0) == MIN_BUDGET_MS


def test_move_budget_leaves_the_other_timed_games_their_share() -> None:
    other = MoveClock(left_ms=400, seen=0.0, running=False, per_move=True)
    mine = MoveClock(left_ms=400, seen=0.0, per_move=True)
    # one other timed game that may need the worker meanwhile: half its usable time at most
    assert move_budget(mine, 0.0, others=[other]) == 120
    # two more moves queued behind this one: a quarter each
    assert move_budget(mine, 0.0, others=[other], waiting=2) == 60
    # an untimed game still may not hold the worker past what the timed ones can spare
    assert move_budget(None, 0.0, others=[other]) == 120
    # a roomy other clock does not cut this move's budget
    roomy = MoveClock(left_ms=60_000, seen=0.0, running=False, per_move=True)
    assert move_budget(mine, 0.0, others=[roomy]) == 240


def test_moves_to_go_counts_what_is_left_of_the_game() -> None:
    assert moves_to_go(State.start("classic")) == 5
    assert moves_to_go(State.replay("classic", [4, 0, 8, 2, 6, 3])) == 2
    assert moves_to_go(State.start("tactic-toe")) == 20  # marks vanish: planned over 20
    assert moves_to_go(State.replay("tactic-toe", [4, 0, 8], ply_cap=9)) == 3
    assert moves_to_go(State.start("15x15k5")) == 20


def tactic_toe_game(core: BotCore, tc: object, room: str = "r1", cid: str = "c1") -> None:
    """Seat ``core`` as O in a tactic-toe game under ``tc``."""
    core.receive(challenge(cid, variant="tactic-toe", tc=tc))
    snap = snapshot(room, variant="tactic-toe")
    snap.room.time_control = tc  # type: ignore[assignment]
    core.receive(m.Joined(room=room, role="o", snapshot=snap, ref=f"acc-{cid}"))
    core.receive(started(room=room).model_copy(update={"variant": "tactic-toe"}))


def test_a_turn_is_planned_with_the_budget_its_clock_allows() -> None:
    core = BotCore("bot", FirstLegal(), Policy())
    tactic_toe_game(core, m.PerMove(move_ms=400))
    running = m.Clocks(x_ms=400, o_ms=400, running="o")
    assert core.receive(moved(1, 4, "x").model_copy(update={"clocks": running}), now=5.0) == [Think("r1", 1)]
    assert core.due("r1") == pytest.approx(5.4)
    # planned 50 ms after the move came in (it waited for the worker)
    job = core.plan("r1", 1, now=5.05)
    assert isinstance(job, Search) and job.budget_ms == 400 - 50 - 100 - 53
    move = core.record(job, run_search(core.strategy, job), now=5.2)
    assert move == m.Move(room="r1", cell=0)
    # moved: the per-move clock is full again, and stopped
    assert core.games["r1"].clock == MoveClock(400.0, 5.2, running=False, per_move=True)
    assert core.due("r1") == float("inf")


def test_untimed_turns_keep_the_strategys_budget_and_queue_last() -> None:
    core = BotCore("bot", FirstLegal(), Policy())
    core.receive(challenge("c1"))
    core.receive(m.Joined(room="r1", role="o", snapshot=snapshot(), ref="acc-c1"))
    core.receive(started())
    core.receive(moved(1, 4, "x"), now=1.0)
    job = core.plan("r1", 1, now=2.0)
    assert isinstance(job, Search) and job.budget_ms is None
    assert core.due("r1") == float("inf")


def test_a_timed_game_limits_the_search_of_another() -> None:
    core = BotCore("bot", FirstLegal(), Policy())
    tactic_toe_game(core, m.PerMove(move_ms=400), "r1", "c1")
    tactic_toe_game(core, m.PerMove(move_ms=400), "r2", "c2")
    for room in ("r1", "r2"):
        core.receive(
            moved(1, 4, "x", room=room).model_copy(
                update={"clocks": m.Clocks(x_ms=400, o_ms=400, running="o")}
            ),
            now=0.0,
        )
    job = core.plan("r1", 1, now=0.0, waiting=1)  # r2 waits for the worker too
    assert isinstance(job, Search) and job.budget_ms == 240 // 3
    core.record(job, 0, now=0.08)
    later = core.plan("r2", 1, now=0.08)  # r1 has moved: its full clock is back, half of it spared
    assert isinstance(later, Search) and later.budget_ms == 120


class Budgeted:
    """Records the ``think_ms`` it sees at each call, like minimax reads its budget."""

    def __init__(self, think_ms: int) -> None:
        self.think_ms = think_ms
        self.name = "budgeted"
        self.seen: list[int] = []

    def choose(self, state: State, rng: random.Random) -> Cell:
        self.seen.append(self.think_ms)
        return state.legal_moves()[0]


def test_the_budget_reaches_the_strategy_for_that_call_only() -> None:
    state = State.start("tactic-toe")
    inner = Budgeted(1000)
    for wrapped in (
        inner,
        Noisy(inner, 0.0),
        NoisyStrategy(inner, 0.0),
        Noisy(NoisyStrategy(inner, 0.0), 0.0),
    ):
        for budget in (240, None, 5000):
            run_search(wrapped, Search("r1", "g1", 0, state, random.Random(1), budget))
    # the clock's budget when it is smaller; the strategy's own otherwise
    assert inner.seen == [240, 1000, 1000] * 4 and inner.think_ms == 1000
    assert run_search(FirstLegal(), Search("r1", "g1", 0, state, random.Random(1), 240)) == 0  # takes none


def test_policy_declines_clocks_it_cannot_meet() -> None:
    policy = Policy()

    def refusal(tc: object, variant: str = "tactic-toe") -> str | None:
        return policy.refusal(challenge(variant=variant, tc=tc), busy=0)

    assert refusal(m.PerMove(move_ms=400)) is None
    assert refusal(m.NoClock()) is None
    assert refusal(m.PerMove(move_ms=150)) == "too fast for me: I need at least 177 ms a move"
    assert refusal(m.PerMove(move_ms=177)) is None
    # a Fischer clock: the base over the moves to go, plus the increment
    assert refusal(m.Increment(base_ms=60_000, increment_ms=0)) is None
    declined = refusal(m.Increment(base_ms=1000, increment_ms=0))
    assert declined is not None and declined.startswith("too fast for me") and "50 ms a move" in declined
    assert refusal(m.Increment(base_ms=1000, increment_ms=0), variant="classic") is None  # 5 moves at most
    assert refusal(m.Increment(base_ms=1000, increment_ms=200)) is None
    # a think time is a promise: the clock must allow it
    slow = Policy(think_ms=500)
    assert slow.refusal(challenge(tc=m.PerMove(move_ms=700)), 0) == (
        "too fast for me: I need at least 706 ms a move"
    )
    assert slow.refusal(challenge(tc=m.PerMove(move_ms=706)), 0) is None


def test_the_think_time_pads_a_move_but_never_past_the_clock() -> None:
    core = BotCore("bot", FirstLegal(), Policy(think_ms=200))
    tactic_toe_game(core, m.Increment(base_ms=60_000), "r1", "c1")
    tactic_toe_game(core, m.Increment(base_ms=60_000), "r2", "c2")
    for room, left in (("r1", 50_000), ("r2", 300)):  # r2 is nearly out of time
        clocks = m.Clocks(x_ms=50_000, o_ms=left, running="o")
        core.receive(moved(1, 4, "x", room=room).model_copy(update={"clocks": clocks}), now=0.0)
    assert core.pause_ms("r1", began=0.0, now=0.05) == pytest.approx(150)  # 200 ms in all
    assert core.pause_ms("r1", began=0.0, now=0.25) == 0.0
    assert core.pause_ms("r2", began=0.0, now=0.05) == pytest.approx(250 - 100 - 37.5)  # the clock first
    assert core.pause_ms("r2", began=0.0, now=0.3) == 0.0


def arranged(cid: str, seat: str, opponent: str, variant: str = "classic") -> m.ChallengeReceived:
    offer = challenge(cid, by="td-1", variant=variant, tc=m.PerMove(move_ms=5000))
    return offer.model_copy(
        update={"seat": seat, "colour": "o" if seat == "x" else "x", "opponent": opponent}
    )


def test_an_arranged_challenge_is_judged_by_the_policy_and_seats_the_bot() -> None:
    # a bot in control mode (the process runner's) too: the director is not one of its entrants
    core = BotCore("bot", FirstLegal(), Policy(variants=frozenset({"classic"})))
    core.command({"cmd": "entrants", "names": ["bot", "other"]})
    (decline,) = sends(core.receive(arranged("c1", "x", "alice", variant="tactic-toe")))
    assert isinstance(decline, m.DeclineChallenge) and "not tactic-toe" in decline.reason
    (accept,) = sends(core.receive(arranged("c2", "x", "alice")))
    assert accept == m.AcceptChallenge(challenge="c2", ref="acc-c2")
    # first to sit: the room waits for the other player; the Joined reply names the seat
    waiting = snapshot(game=None)
    assert core.receive(m.Joined(room="r1", role="x", snapshot=waiting, ref="acc-c2")) == []
    assert core.games["r1"].mark is Mark.X and core.busy == 1
    assert core.receive(started(x="bot", o="alice")) == [Think("r1", 0)]
    assert core.decide("r1", 0) == m.Move(room="r1", cell=0)
    # an arrangement called off before the game: the room closes and the bot forgets it
    sends(core.receive(arranged("c3", "o", "carol")))
    core.receive(m.Joined(room="r2", role="o", snapshot=snapshot("r2", game=None), ref="acc-c3"))
    assert core.games["r2"].mark is Mark.O
    core.receive(m.RoomClosed(room="r2", seq=3, reason="carol declined"))
    assert "r2" not in core.games and core.busy == 1


def test_a_withdrawn_challenge_is_forgotten() -> None:
    core = BotCore("B", FirstLegal(), Policy())
    core.command({"cmd": "entrants", "names": ["A", "B"]})
    assert core.receive(challenge("c7", by="A")) == []  # parked until the runner expects it
    core.receive(m.ChallengeCancelled(challenge="c7", reason="A went offline"))
    assert core.command({"cmd": "expect", "number": 1, "challenger": "A"}) == []  # nothing to accept


def ended(room: str = "r1", game: str = "g1") -> m.GameEnded:
    outcome = m.Result(result="1/2-1/2", winner=None, reason="full_board")
    return m.GameEnded(room=room, seq=20, game=game, outcome=outcome)


def seated(core: BotCore, room: str, cid: str) -> None:
    core.receive(challenge(cid))
    core.receive(m.Joined(room=room, role="o", snapshot=snapshot(room), ref=f"acc-{cid}"))
    core.receive(started(room=room, game=f"{room}.1"))


def test_a_rematch_is_played_when_the_bot_is_free_and_declined_when_busy() -> None:
    core = BotCore("bot", FirstLegal(), Policy(max_games=1))
    seated(core, "r1", "c1")
    assert sends(core.receive(ended("r1", "r1.1"))) == []
    assert sends(core.receive(m.RematchOffered(room="r1", seq=21, by="bot", mark="o"))) == []  # its own
    offer = m.RematchOffered(room="r1", seq=21, by="alice", mark="x")
    assert sends(core.receive(offer)) == [m.Rematch(room="r1", ref="rm-r1")]
    assert core.busy == 1 and core.idle == {}
    # colours swapped: the bot is X now and moves first
    again = started(room="r1", game="r1.2", x="bot", o="alice")
    assert core.receive(again) == [Think("r1", 0)]
    assert core.games["r1"].mark is Mark.X
    core.receive(ended("r1", "r1.2"))
    # a game elsewhere takes its one slot: the next rematch is declined, with the reason
    seated(core, "r2", "c2")
    actions = core.receive(offer.model_copy(update={"seq": 30}))
    assert sends(actions) == [m.Leave(room="r1")]
    (report,) = [a.data for a in actions if isinstance(a, Report)]
    assert report["event"] == "rematch_declined" and report["reason"].startswith("busy")
    assert core.idle == {} and set(core.games) == {"r2"}


def test_the_bot_leaves_when_the_other_player_does_or_the_rematch_falls_through() -> None:
    core = BotCore("bot", FirstLegal(), Policy())
    seated(core, "r1", "c1")
    core.receive(ended("r1", "r1.1"))
    alone = m.SeatsChanged(room="r1", seq=21, seats=m.Seats(x=None, o="bot"), spectators=0)
    assert sends(core.receive(alone)) == [m.Leave(room="r1")] and core.idle == {}
    seated(core, "r2", "c2")
    core.receive(ended("r2", "r2.1"))
    core.receive(m.RematchOffered(room="r2", seq=21, by="alice", mark="x"))
    refused = m.Error(code="no_game", message="the other seat is empty", ref="rm-r2")
    assert sends(core.receive(refused)) == [m.Leave(room="r2")] and core.games == {}
    # stopping: seats kept for a rematch are given up too
    seated(core, "r3", "c3")
    core.receive(ended("r3", "r3.1"))
    assert sends(core.resign_all()) == [m.Leave(room="r3")]


def test_tournament_games_are_one_each_the_bot_leaves_after_them() -> None:
    core = BotCore("bot", FirstLegal(), Policy())
    sends(core.receive(arranged("c2", "o", "alice")))
    core.receive(m.Joined(room="r1", role="o", snapshot=snapshot(game=None), ref="acc-c2"))
    core.receive(started())
    assert sends(core.receive(ended())) == [m.Leave(room="r1")] and core.idle == {}


def test_after_a_restart_a_finished_game_with_a_rematch_offered_is_answered() -> None:
    """A new process finds its seat from before (the welcome lists the room): the snapshot
    says the game is over and the other player asked for a rematch meanwhile."""
    core = BotCore("bot", FirstLegal(), Policy(variants=frozenset({"classic"})))
    assert core.receive(m.Resumed(rooms={"r1": "snapshot", "r2": "snapshot"})) == []
    for room, variant, answer in (("r1", "classic", m.Rematch), ("r2", "tactic-toe", m.Leave)):
        over = m.GameSnapshot(
            game=f"{room}.1", number=1, x="alice", o="bot", moves=[4, 0, 8], board=[None] * 9,
            to_move="o", ply=3, next_to_vanish={}, clocks=clocks(),
            result=m.Result(result="1-0", winner="x", reason="resignation"),
        )  # fmt: skip
        snap = snapshot(room, variant, game=over).model_copy(update={"rematch": ["x"]})
        (reply,) = sends(core.receive(m.Snapshot(room=room, seq=9, snapshot=snap)))
        assert isinstance(reply, answer) and reply.room == room
    assert set(core.games) == {"r1"} and core.idle == {}
