"""A memory listing's ``total`` never costs a read of the whole bank: a ``tag`` listing takes it from
the tag counters the bank keeps in its write lanes (exact through saves, reinforcements, updates,
forgets, supersedes, purges and imports: a generated test compares them with a count of the
records), and a ``q`` listing answers ``total: null`` instead of counting its matches."""

from __future__ import annotations

import contextlib
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.backend_calls import recorded

TAGS = ["alpha", "beta", "gamma"]


def _counting_queries(calls) -> list[dict]:
    """The queries of the records beyond the page's own: counts (``Select: COUNT``), or reads of the
    partition's records that are not a page (a page reads by the order index)."""
    return [p for _s, op, p in calls if op == "Query" and str(p.get("TableName", "")).endswith("-memories")
            and (p.get("Select") == "COUNT" or ("IndexName" not in p
                                                and "~tag/" not in json.dumps(p.get("ExpressionAttributeValues"))))]


def test_a_tag_listing_takes_its_total_from_the_banks_counters(api):
    for i in range(40):
        tags = ["rare"] if i % 13 == 0 else ["common"]
        assert api.post("/v1/banks/main/memories", {"text": f"Fact number {i} of the bank", "tags": tags})[0] == 201
    with recorded() as calls:
        status, body = api.get("/v1/banks/main/memories?tag=rare&limit=1")
    assert status == 200 and body["total"] == 4 and len(body["memories"]) == 1, body
    assert not _counting_queries(calls), _counting_queries(calls)
    with recorded() as calls:
        status, body = api.get("/v1/banks/main/tags")
    assert status == 200 and body["tags"] == [{"tag": "common", "count": 36}, {"tag": "rare", "count": 4}], body
    assert not _counting_queries(calls), _counting_queries(calls)


def test_a_text_listing_answers_total_null_instead_of_counting(api):
    for i in range(5):
        assert api.post("/v1/banks/main/memories", {"text": f"Tea fact {i}"})[0] == 201
    with recorded() as calls:
        status, body = api.get("/v1/banks/main/memories?q=tea&limit=2")
    assert status == 200 and body["total"] is None and len(body["memories"]) == 2 and body["next_cursor"], body
    assert not [p for _s, op, p in calls if op == "Query" and p.get("Select") == "COUNT"]
    assert api.get("/v1/banks/main/memories?limit=2")[1]["total"] == 5  # no filter: the bank's counters


def test_a_bank_made_before_tag_counters_counts_its_records(api):
    from chalicelib.storage.tables import BankModel
    assert api.post("/v1/banks/old/memories", {"text": "An old tagged fact", "tags": ["legacy"]})[0] == 201
    row = BankModel.get("default", "old", consistent_read=True)
    row.update(actions=[BankModel.tag_counts.remove()])  # as a bank row written before
    assert api.get("/v1/banks/old/memories?tag=legacy")[1]["total"] == 1
    assert api.get("/v1/banks/old/tags")[1]["tags"] == [{"tag": "legacy", "count": 1}]


OPS = st.lists(st.tuples(st.sampled_from(["save", "retag", "forget", "supersede", "purge", "import", "pin"]),
                         st.integers(0, 7), st.lists(st.sampled_from(TAGS), max_size=3)), min_size=1, max_size=8)
BANK = "gen"


def _text(i: int) -> str:
    return f"Generated fact {i} about the build"


def _change(op: str, target: str, i: int, tags: list[str]) -> None:
    """Apply change ``op`` to memory ``target`` of the generated bank."""
    from chalicelib.banks import service, transfer
    from chalicelib.banks.records import SaveRequest, UpdateRequest
    if op == "retag":
        service.update_memory("default", BANK, target, UpdateRequest(tags=tags), actor="t")
    elif op == "forget":
        service.delete_memory("default", BANK, target, actor="t")
    elif op == "supersede":
        newer = service.save_memory("default", BANK, SaveRequest(text=_text(i + 100), tags=tags), actor="t").memory
        service.supersede_memory("default", BANK, target, newer.id, actor="t")
    elif op == "purge":
        service.purge_memory("default", BANK, target, actor="t")
    elif op == "pin":
        service.pin_memory("default", BANK, target, True, actor="t")
    elif op == "import":
        lines = "\n".join(json.dumps({"text": _text(i + k), "tags": tags}) for k in range(3))
        transfer.import_ndjson("default", BANK, lines.encode(), actor="t")
    else:
        service.save_memory("default", BANK, SaveRequest(text=_text(i), tags=tags), actor="t")


def _ids() -> list[str]:
    from chalicelib.banks import service
    from chalicelib.core import store
    if store.get_bank_row("default", BANK) is None:
        return []
    return [m.id for m in service.list_memories("default", BANK, limit=500, include_superseded=True).memories]


def test_tag_counters_match_the_records_through_every_kind_of_change(api, monkeypatch):
    """Generated sequences of changes to one 4-lane bank: after each, every tag's counters (live
    and all records) equal a count of the records themselves."""
    from chalicelib.core import store
    from chalicelib.errors import CairnError
    monkeypatch.setenv("CAIRN_WRITE_LANES", "4")

    @settings(max_examples=25, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(OPS)
    def run(ops):
        for op, i, tags in ops:
            ids = _ids()
            with contextlib.suppress(CairnError):  # a change refused (a retired memory...) changes nothing
                _change(op if ids else "save", ids[i % len(ids)] if ids else "", i, tags)
        row = store.get_bank_row("default", BANK)
        for tag in TAGS:
            for live_only in (True, False):
                assert store.tag_total(row.incarnation, store.lane_count(row), tag, live_only=live_only) == \
                    store.count_memories(row.incarnation, live_only=live_only, tag=tag), (tag, live_only)
        assert store.live_tag_totals(row.incarnation) == store.live_tag_counts(row.incarnation)
        from chalicelib.storage.tables import MemoryModel
        kept = {it.sk.split("/", 2)[2] for it in MemoryModel.query(row.incarnation, MemoryModel.sk.startswith("~tag/"))}
        carried = {t for tag in TAGS if store.count_memories(row.incarnation, live_only=False, tag=tag) for t in [tag]}
        assert kept == carried, (kept, carried)  # no counter outlives the last record carrying its tag

    run()


def test_an_import_of_many_distinct_tags_splits_its_batches_and_lands_whole(api):
    """Forty memories with eight tags of their own: a batch's tag counters would pass DynamoDB's
    100 items per transaction, so it is written in halves; every memory and every count lands."""
    lines = "\n".join(json.dumps({"text": f"Widely tagged fact {i}", "tags": [f"t{i}-{k}" for k in range(8)]})
                      for i in range(40))
    status, body = api.post("/v1/banks/wide/import", raw=lines, headers={"Content-Type": "application/x-ndjson"})
    assert status == 200 and body["imported"] == 40 and body["errors"] == [], body
    tags = api.get("/v1/banks/wide/tags")[1]["tags"]
    assert len(tags) == 320 and {t["count"] for t in tags} == {1}
    assert api.get("/v1/banks/wide/memories?tag=t7-3")[1]["total"] == 1


def test_purging_tagged_memories_leaves_no_tag_counter_behind(api, monkeypatch):
    """A purge moves the memory to a tombstone under another id, often in another lane: the tag's
    counter of the old id's lane goes down (and away at zero), never one of the tombstone's lane."""
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.core import store
    from chalicelib.storage.tables import MemoryModel
    monkeypatch.setenv("CAIRN_WRITE_LANES", "4")
    ids = [service.save_memory("default", "gen", SaveRequest(text=f"Fact {i} to purge", tags=["alpha"]),
                               actor="t").memory.id for i in range(6)]
    row = store.get_bank_row("default", "gen")
    for done, mid in enumerate(ids, start=1):
        service.purge_memory("default", "gen", mid, actor="t")
        assert store.tag_total(row.incarnation, 4, "alpha", live_only=False) == len(ids) - done
    assert list(MemoryModel.query(row.incarnation, MemoryModel.sk.startswith("~tag/"))) == []
    assert api.get("/v1/banks/gen/tags")[1]["tags"] == []
