"""Write lanes: a bank's change log split by memory id (``core.store``). A change advances only
its memory's lane; readers follow a clock of lane positions; trash seals the lanes; a bank made
before lanes existed keeps working as one lane."""

from __future__ import annotations

import pytest

from tests.api.lanes import lane_of_text, other_lanes, put_row_item, row_item, same_lane
from tests.api.state import assert_unchanged, dump


def test_lane_of_is_stable_and_spreads_over_every_lane(api):
    from chalicelib.core.store import lane_of
    assert lane_of("fp0123456789abcdef", 1) == 0
    assert lane_of("fp0123456789abcdef", 16) == lane_of("fp0123456789abcdef", 16)  # a pure function
    assert {lane_of(f"fp{i:016x}", 16) for i in range(400)} == set(range(16))


def test_clock_covers_lane_by_lane(api):
    from chalicelib.core.store import Clock
    assert Clock((3, 1)).covers(Clock((3, 0))) and not Clock((3, 0)).covers(Clock((2, 1)))
    assert not Clock((5,)).covers(Clock((1, 1)))  # another lane count is never covered
    assert Clock((3, 1, 4)).total == 8


def test_a_save_advances_only_its_lane(api):
    """A memory outside lane 0 leaves the bank row alone: its lane row holds the position and the
    counters, which the bank's listing sums."""
    from chalicelib.core.store import get_bank_head, lane_key
    text = next(t for t in other_lanes("lane test memory", 4) if lane_of_text(t) != 0)
    assert api.post("/v1/banks", {"name": "lanes"})[0] == 201
    row_before = row_item("default", "lanes")
    assert api.post("/v1/banks/lanes/memories", {"text": text})[0] == 201
    assert row_item("default", "lanes") == row_before
    head = get_bank_head("default", "lanes")
    lane = lane_of_text(text)
    lane_row = row_item("default", lane_key(head.incarnation, lane))
    assert int(lane_row["seq"]["N"]) == 1 and int(lane_row["memories"]["N"]) == 1
    assert head.clock.positions[lane] == 1 and head.clock.total == 1 and head.memories == 1
    assert api.get("/v1/banks/lanes")[1]["bank"]["memories"] == 1
    assert [b["memories"] for b in api.get("/v1/banks")[1]["banks"] if b["name"] == "lanes"] == [1]


def test_a_bank_made_before_lanes_is_one_lane(api):
    """A bank row without ``lanes`` (written before lanes existed): every change counts on the row's
    own ``seq``, as before, and recall follows it."""
    from chalicelib.core.store import get_bank_head
    assert api.post("/v1/banks", {"name": "legacy"})[0] == 201
    item = row_item("default", "legacy")
    item.pop("lanes")
    put_row_item(item)
    for t in ["a memory from before lanes", *other_lanes("legacy bank memory", 3)]:
        assert api.post("/v1/banks/legacy/memories", {"text": t})[0] == 201
    head = get_bank_head("default", "legacy")
    assert head.clock.positions == (4,) and int(row_item("default", "legacy")["seq"]["N"]) == 4
    hits = api.post("/v1/banks/legacy/recall", {"query": "legacy bank memory", "limit": 10})[1]["memories"]
    assert len(hits) == 4


def test_a_writer_that_read_the_bank_before_it_was_trashed_cannot_write_into_it(api):
    """Trash seals the lanes: a pin whose attempt read the bank before the trash committed fails
    its lane condition, retries, finds the bank gone (404) and writes nothing; restore unseals."""
    from chalicelib.banks import service
    from chalicelib.core import store
    from chalicelib.errors import NotFound
    text = next(t for t in other_lanes("sealed lane memory", 4) if lane_of_text(t) != 0)
    mid = api.post("/v1/banks/sealed/memories", {"text": text})[1]["memory"]["id"]
    real_stage = store.BankTx.stage
    trashed: list[str] = []

    def stage_after_trash(self, bank, row, writes, actor, *, fresh=None):
        if not trashed:  # the bank moves to the trash between this attempt's read and its commit
            trashed.append(service.trash_bank("default", "sealed", actor="t"))
            snap.update(dump())
        return real_stage(self, bank, row, writes, actor, fresh=fresh)

    snap: dict = {}
    store.BankTx.stage = stage_after_trash
    try:
        with pytest.raises(NotFound):
            service.pin_memory("default", "sealed", mid, True, actor="t")
    finally:
        store.BankTx.stage = real_stage
    assert trashed
    assert_unchanged(snap)  # nothing landed in the trashed bank
    assert api.post("/v1/banks/sealed/restore", {"trashed_to": trashed[0]})[0] == 200
    s, b = api.post(f"/v1/banks/sealed/memories/{mid}/pin", {"pinned": True})  # unsealed: writable again
    assert s == 200 and b["memory"]["pinned"] is True


def test_identical_texts_reinforce_one_memory_in_one_lane(api):
    """Saves of one text land in one lane and on one memory; saves of texts in other lanes do not
    move that lane."""
    from chalicelib.core.store import get_bank_head
    a, b = same_lane("one lane text", 2)
    for t in (a, a, b, a):
        assert api.post("/v1/banks/one/memories", {"text": t})[0] in (200, 201)
    head = get_bank_head("default", "one")
    assert head.clock.positions[lane_of_text(a)] == 4 and head.clock.total == 4 and head.memories == 2


def test_lane_batches_cut_by_size_and_lanes(api):
    from chalicelib.core.store import lane_batches, lane_of
    ids = [f"fp{i:016x}" for i in range(200)]
    batches = lane_batches("default", "nobank", ids, lambda x: x, size=30, max_lanes=4)
    assert sorted(x for b in batches for x in b) == sorted(ids)
    for b in batches:
        assert len(b) <= 30 and len({lane_of(x, 16) for x in b}) <= 4
        for lane in {lane_of(x, 16) for x in b}:  # the original order within a lane
            mine = [x for x in b if lane_of(x, 16) == lane]
            assert mine == sorted(mine, key=ids.index)


def test_a_damaged_lane_row_is_409_on_the_bank_and_absent_from_recall_of_others(api):
    from chalicelib.core.store import get_bank_head, lane_key
    text = next(t for t in other_lanes("damaged lane memory", 4) if lane_of_text(t) != 0)
    assert api.post("/v1/banks/hurt/memories", {"text": text})[0] == 201
    head = get_bank_head("default", "hurt")
    key = lane_key(head.incarnation, lane_of_text(text))
    item = row_item("default", key)
    item["seq"] = {"S": "seven"}
    put_row_item(item)
    snap = dump()
    s, b = api.post("/v1/banks/hurt/recall", {"query": "damaged lane memory"})
    assert (s, b["code"]) == (409, "damaged")
    s, b = api.post("/v1/banks/hurt/memories", {"text": text + " again"})
    assert s in (201, 409)
    if s == 201:  # another lane: the write never read the damaged one
        assert lane_of_text(text + " again") != lane_of_text(text)
    else:
        assert b["code"] == "damaged"
        assert_unchanged(snap)
