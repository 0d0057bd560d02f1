"""Leases, sans-I/O (`server.lease`) and on both stores (a SQLite file, a PostgreSQL database): a new
epoch per start, renewals, taking over the rooms of a node whose lease ran out, and the
fence that refuses the old owner's writes in the same transaction."""

from __future__ import annotations

import pytest

from server.lease import Lease, LeaseRules, Verdict
from server.ops import MoveSaved, PresenceSaved, RoomSaved, SeqSaved
from server.storage import open_store
from server.store import Fenced
from server.writer import Writer

NOW = 1_700_000_000_000  # wall-clock milliseconds


def room(rid: str) -> RoomSaved:
    return RoomSaved(rid, "classic", '{"type":"none"}', False, False, None, None, (), "p1", "p2", 1, False)


def test_rules_refuse_a_lease_that_can_run_out_between_renewals() -> None:
    with pytest.raises(ValueError, match="twice"):
        LeaseRules(duration=1.5, renew_every=1.0)
    with pytest.raises(ValueError):
        LeaseRules(duration=4.0, renew_every=0)


def test_lease_rhythm_and_verdicts() -> None:
    lease = Lease("a", LeaseRules(duration=4.0, renew_every=1.0))
    assert lease.due(10.0) == 10.0 and not lease.held(10.0)
    lease.registered(3, 10.0)
    assert lease.due(10.0) == 11.0 and lease.held(13.9) and not lease.held(14.0)
    assert lease.expires_ms(100.0) == 104_000
    assert lease.renewed(None, 11.0) is Verdict.UNKNOWN and lease.failures == 1
    assert lease.due(11.0) == 11.0  # not renewed: try again at once
    assert lease.renewed(True, 11.5) is Verdict.HELD and lease.failures == 0 and lease.due(0) == 12.5
    assert lease.renewed(False, 12.5) is Verdict.LOST
    assert lease.epoch is None and not lease.held(12.6)


def test_after_the_database_was_unreachable_a_node_waits_a_lease_before_taking_rooms_over() -> None:
    """Every lease has run out when a database down for longer than a lease comes back: the
    first node to renew must leave the others a lease's time to renew theirs."""
    lease = Lease("a", LeaseRules(duration=4.0, renew_every=1.0))
    lease.registered(1, 10.0)
    assert lease.may_adopt(10.0), "a node just started takes dead nodes' rooms at once"
    assert lease.renewed(True, 11.0) is Verdict.HELD and lease.may_adopt(11.0)
    for t in (12.0, 12.25, 18.0):
        assert lease.renewed(None, t) is Verdict.UNKNOWN
    assert lease.renewed(True, 18.5) is Verdict.HELD
    assert not lease.may_adopt(18.5) and not lease.may_adopt(22.4) and lease.may_adopt(22.5)
    assert lease.renewed(True, 19.5) is Verdict.HELD and not lease.may_adopt(19.5), "the wait is kept"
    # registering again after failed tries waits too; a lost lease registered at once does not
    assert lease.renewed(None, 30.0) is Verdict.UNKNOWN
    lease.registered(2, 31.0)
    assert not lease.may_adopt(31.0) and lease.may_adopt(35.0)
    assert lease.renewed(False, 40.0) is Verdict.LOST
    lease.registered(3, 40.0)
    assert lease.may_adopt(40.0)


def test_each_start_is_a_new_epoch_and_renewing_an_old_one_fails(any_db: str) -> None:
    store = open_store(any_db)
    assert store.lease_register("a", "ws://a", NOW + 4000) == 1
    assert store.lease_register("a", "ws://a", NOW + 4000) == 2
    assert store.lease_renew("a", 2, "ws://a2", NOW + 5000)
    assert not store.lease_renew("a", 1, "ws://a", NOW + 5000)
    assert store.query("SELECT node, epoch, url, expires FROM leases") == [("a", 2, "ws://a2", NOW + 5000)]


def test_a_dead_nodes_rooms_are_taken_over_once_its_lease_runs_out_and_its_writes_are_fenced(
    any_db: str,
) -> None:
    path = any_db
    a, b = open_store(path), open_store(path)
    ea = a.lease_register("a", "ws://a", NOW + 4000)
    eb = b.lease_register("b", "ws://b", NOW + 4000)
    a.write([room("a-1"), room("a-2")])  # a new room is claimed by its creator in the same transaction
    b.write([room("b-1")])
    assert b.room_hosts(["a-1", "b-1", "nope"], NOW) == {"a-1": ("a", "ws://a"), "b-1": ("b", "ws://b")}
    assert b.orphan_rooms(NOW) == []  # a's lease is live: nothing to take
    assert b.adopt_rooms("b", eb, [("a-1", "a", ea)], NOW) == []  # nor by force
    later = NOW + 4001  # a stopped renewing
    assert b.lease_renew("b", eb, "ws://b", later + 4000)
    orphans = b.orphan_rooms(later)
    assert sorted(orphans) == [("a-1", "a", ea), ("a-2", "a", ea)]
    assert b.room_hosts(["a-1"], later) == {"a-1": ("a", None)}  # between hosts
    assert sorted(b.adopt_rooms("b", eb, orphans, later)) == ["a-1", "a-2"]
    assert b.adopt_rooms("b", eb, orphans, later) == []  # once only
    # a comes back from a pause: its lease and its writes to those rooms are refused
    assert not a.lease_renew("a", ea, "ws://a", later + 4000)
    with pytest.raises(Fenced) as refused:
        a.write([MoveSaved("g1", 0, 4, None, None, "a-1", 2)])
    assert refused.value.rooms == ["a-1"]
    with pytest.raises(Fenced):
        a.write([room("a-2")])  # even re-saving the room
    assert a.query("SELECT count(*) FROM moves") == [(0,)]  # nothing of the refused write
    b.write([SeqSaved("a-1", 5)])  # the new owner writes
    assert b.query("SELECT seq FROM rooms WHERE id = 'a-1'") == [(5,)]


def test_presence_names_the_live_node_of_a_player(any_db: str) -> None:
    path = any_db
    a = open_store(path)
    a.lease_register("a", "ws://a", NOW + 4000)
    a.db.execute("INSERT INTO players VALUES ('p1', 'Bob', 'human', 'h', 0, 'bob')")
    assert a.player_host("bob", NOW) is None
    a.write([PresenceSaved("p1", True)])
    assert a.player_host("BOB", NOW) == ("a", "ws://a")
    assert a.player_host("bob", NOW + 5000) is None  # a's lease ran out
    a.write([PresenceSaved("p1", False)])
    assert a.player_host("bob", NOW) is None


def test_a_lone_node_writes_without_fence_or_presence(any_db: str) -> None:
    store = open_store(any_db)
    store.write([room("r1"), PresenceSaved("p1", True)])
    store.write([MoveSaved("g1", 0, 4, None, None, "r1", 2)])
    assert store.query("SELECT count(*) FROM room_owners") == [(0,)]
    assert store.query("SELECT count(*) FROM presence") == [(0,)]


def test_rooms_from_before_leases_belong_to_their_creator_by_prefix(any_db: str) -> None:
    path = any_db
    old = open_store(path)
    old.write([room("a-old"), room("b-old")])
    a = open_store(path)
    ea = a.lease_register("a", "ws://a", NOW + 4000)
    assert a.query("SELECT room, node, epoch FROM room_owners") == [("a-old", "a", 0)]
    assert a.adopt_rooms("a", ea, a.orphan_rooms(NOW), NOW) == ["a-old"]  # epoch 0 is never live


async def test_the_writer_drops_fenced_decisions_and_names_their_rooms(any_db: str) -> None:
    import asyncio

    path = any_db
    a, b = open_store(path), open_store(path)
    ea = a.lease_register("a", "ws://a", NOW)
    eb = b.lease_register("b", "ws://b", NOW + 10**12)
    a.write([room("a-1"), room("a-2")])
    b.adopt_rooms("b", eb, [("a-1", "a", ea)], NOW + 1)
    fenced: list[list[str]] = []
    announced: list[str] = []
    writer = Writer(a, fenced=fenced.append)
    task = asyncio.create_task(writer.run())
    await asyncio.sleep(0)
    writer.submit([SeqSaved("a-1", 7)], lambda: announced.append("a-1"))
    writer.submit([SeqSaved("a-2", 7)], lambda: announced.append("a-2"))
    for _ in range(200):
        if announced and fenced:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    assert announced == ["a-2"] and fenced == [["a-1"]]
    assert b.query("SELECT id, seq FROM rooms ORDER BY id") == [("a-1", 1), ("a-2", 7)]
