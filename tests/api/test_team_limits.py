"""Team-memory caps at their boundaries, compaction and catch-up, and
configuration errors naming the variable."""

from __future__ import annotations

import pytest

from tests.api.state import assert_unchanged, dump
from tests.api.team_support import MEM, Editor, World, unb64

P = "KEYSTONE_CONTEXT_MEMORY_"


@pytest.fixture
def world(api):
    return World(api)


def test_invalid_limit_fails_team_requests(world, monkeypatch):
    e = world.create()
    monkeypatch.setenv(P + "MAX_UNITS", "lots")
    st, body = world.call("alice", "GET", f"{MEM}/entries/{e['id']}")
    assert (st, body["code"]) == (500, "misconfigured")
    assert P + "MAX_UNITS" in body["error"]  # the operator learns which variable to fix
    assert body["details"]["problems"][0]["key"] == P + "MAX_UNITS"


def test_max_update_bytes_boundary(world, monkeypatch):
    e = world.create()
    ed = Editor()
    u = ed.insert(0, "x" * 40)
    monkeypatch.setenv(P + "MAX_UPDATE_BYTES", str(len(u)))
    assert world.post_update("alice", e["id"], u)[0] == 200
    u2 = ed.insert(40, "y" * 60)
    assert len(u2) > len(u)
    before = dump()
    st, body = world.post_update("alice", e["id"], u2)
    assert (st, body["code"]) == (413, "update_too_large")
    assert body["details"]["variable"] == P + "MAX_UPDATE_BYTES"
    assert_unchanged(before)


def test_max_text_bytes_boundary_counts_utf8(world, monkeypatch):
    monkeypatch.setenv(P + "MAX_TEXT_BYTES", "10")
    e = world.create()
    ed = Editor()
    assert world.post_update("alice", e["id"], ed.insert(0, "abcdefgh\u00e9"))[0] == 200  # 8 + 2 bytes = 10
    before = dump()
    st, body = world.post_update("alice", e["id"], ed.insert(0, "z"))
    assert (st, body["code"]) == (422, "text_too_large") and body["details"]["value"] == 11
    assert_unchanged(before)


def test_max_units_boundary_then_deletions_only(world, monkeypatch):
    monkeypatch.setenv(P + "MAX_UNITS", "10")
    e = world.create()
    ed = Editor()
    assert world.post_update("alice", e["id"], ed.insert(0, "abcdefgh\U0001F600"))[0] == 200  # 8 + 2 UTF-16 units
    before = dump()
    probe = Editor()
    probe.load(world.entry("alice", e["id"])["snapshot"])
    st, body = world.post_update("alice", e["id"], probe.insert(0, "z"))
    assert (st, body["code"]) == (422, "unit_cap_reached") and body["details"]["value"] == 11
    assert_unchanged(before)
    st, body = world.post_update("alice", e["id"], ed.delete(0, 3))  # deletions still accepted at the cap
    assert st == 200, body
    assert world.entry("alice", e["id"])["text"] == "defgh\U0001F600"


def test_max_updates_per_entry_boundary(world, monkeypatch):
    monkeypatch.setenv(P + "MAX_UPDATES_PER_ENTRY", "3")
    e = world.create()
    ed = Editor()
    for i in range(3):
        assert world.post_update("alice", e["id"], ed.insert(i, str(i)))[0] == 200
    before = dump()
    st, body = world.post_update("alice", e["id"], ed.insert(3, "3"))
    assert (st, body["code"]) == (409, "update_log_full")
    assert_unchanged(before)


def test_updates_per_minute_per_entry_and_across_entries(world, monkeypatch):
    from chalicelib import clock
    monkeypatch.setenv(P + "UPDATES_PER_MINUTE", "2")
    monkeypatch.setattr(clock, "now_ms", lambda: 1_800_000_000_000 + 5_000)  # 5 s into a minute
    ids = [world.create()["id"] for _ in range(6)]
    eds = {i: Editor() for i in ids}
    for n in range(2):
        assert world.post_update("alice", ids[0], eds[ids[0]].insert(n, "a"))[0] == 200
    before = dump()
    st, body = world.call("alice", "POST", f"{MEM}/entries/{ids[0]}/updates",
                          {"updateId": "rate-limited-1", "update": __import__("base64").b64encode(
                              eds[ids[0]].insert(2, "a")).decode()})
    assert (st, body["code"]) == (429, "rate_limited")
    assert_unchanged(before)
    # another author is counted apart
    bob = Editor()
    assert world.post_update("bob", ids[0], bob.insert(0, "b"))[0] == 200
    # five times the rate across entries: alice has used 2 of 10
    for eid in ids[1:5]:
        for n in range(2):
            assert world.post_update("alice", eid, eds[eid].insert(n, "a"))[0] == 200
    st, body = world.post_update("alice", ids[5], eds[ids[5]].insert(0, "a"))
    assert (st, body["code"]) == (429, "rate_limited") and body["details"]["limit"] == 10
    # the next minute opens a new window
    monkeypatch.setattr(clock, "now_ms", lambda: 1_800_000_000_000 + 65_000)
    assert world.post_update("alice", ids[5], eds[ids[5]].doc.get_update())[0] == 200  # the refused edit, resent


def test_entries_per_space_boundary_counts_non_archived(world, monkeypatch):
    monkeypatch.setenv(P + "ENTRIES_PER_SPACE", "2")
    a = world.create()
    world.create()
    before = dump()
    st, body = world.call("alice", "POST", f"{MEM}/entries", {"spaceId": world.space, "kind": "note", "title": "x"})
    assert (st, body["code"]) == (409, "space_entry_limit")
    assert_unchanged(before)
    assert world.call("alice", "POST", f"{MEM}/entries/{a['id']}/archive")[0] == 200
    world.create()


def _state_key(eid):
    from chalicelib.storage.blobs import get_bytes
    from chalicelib.team.store import state_key
    return get_bytes(state_key("default", eid))


def test_compaction_keeps_text_and_log_rows_and_catch_up_works(world, monkeypatch):
    monkeypatch.setenv(P + "COMPACT_AFTER", "3")
    e = world.create()
    eid = e["id"]
    ed, bob = Editor(), Editor()
    assert world.post_update("alice", eid, ed.insert(0, "Hello"))[0] == 200
    bob.load(world.entry("bob", eid)["snapshot"])
    assert world.post_update("alice", eid, ed.insert(5, " world"))[0] == 200
    assert _state_key(eid) is None  # 2 retained < 3: not yet
    text_before = world.entry("alice", eid)["text"] + "!"
    assert world.post_update("alice", eid, ed.insert(11, "!"))[0] == 200  # the 3rd: compaction
    assert _state_key(eid) is not None
    got = world.entry("reader", eid)
    assert got["text"] == text_before == "Hello world!"
    from chalicelib.storage.tables import TeamUpdateModel
    rows = list(TeamUpdateModel.query(f"default#{eid}", TeamUpdateModel.sk.startswith("seq#")))
    assert [int(r.seq) for r in rows] == [1, 2, 3] and all(r.payload is None for r in rows)
    assert all(r.author == "alice" and r.sha256 for r in rows)
    # catch-up by seq: compacted -> snapshot; above the compaction -> updates
    st, body = world.call("bob", "GET", f"{MEM}/entries/{eid}/updates?sinceSeq=1")
    assert set(body) == {"snapshot", "seq"} and body["seq"] == 3
    bob.apply(unb64(body["snapshot"]))
    assert bob.text == "Hello world!"
    assert world.post_update("alice", eid, ed.insert(12, " Bye."))[0] == 200
    st, body = world.call("bob", "GET", f"{MEM}/entries/{eid}/updates?sinceSeq=3")
    assert [u["seq"] for u in body["updates"]] == [4]
    # catch-up by state vector from an old replica
    old = Editor()
    st, body = world.call("bob", "GET", f"{MEM}/entries/{eid}/updates?stateVector=AA==")
    old.apply(unb64(body["update"]))
    assert old.text == "Hello world! Bye."
    # editing continues on top of compacted state, dependencies still checked
    assert world.post_update("bob", eid, bob.insert(0, ">> "))[0] == 200
    assert world.entry("alice", eid)["text"] == ">> Hello world! Bye."
    ghost = Editor()
    ghost.load(world.entry("bob", eid)["snapshot"])
    ghost.insert(0, "x")
    st, body = world.post_update("bob", eid, ghost.insert(1, "y"))
    assert (st, body["code"]) == (409, "missing_dependency")
    st, body = world.call("reader", "GET", f"{MEM}/entries/{eid}/history")
    assert [ev["seq"] for ev in body["events"] if ev["type"] == "edit"] == [1, 2, 3, 4, 5]


def test_compaction_takes_a_lease_and_a_held_lease_skips(world, monkeypatch):
    from chalicelib.storage.tables import TeamEntryModel
    from chalicelib.team import compaction
    e = world.create()
    ed = Editor()
    for i in range(2):
        assert world.post_update("alice", e["id"], ed.insert(i, "ab"))[0] == 200
    row = TeamEntryModel.get("default", e["id"])
    row.update(actions=[TeamEntryModel.compacting_until.set(10**13)])  # another compactor's live lease
    assert compaction.compact("default", e["id"]).as_dict()["skipped"] == "leased"
    assert _state_key(e["id"]) is None
    row.update(actions=[TeamEntryModel.compacting_until.set(1)])  # an expired lease is taken over
    assert compaction.compact("default", e["id"]).as_dict() == {"compactedSeq": 2, "stripped": 2}
    assert TeamEntryModel.get("default", e["id"]).compacting_until is None
    assert world.entry("reader", e["id"])["text"] == ed.text
