"""Related memories when the bank's index is cold in this container: the save loads no snapshot
and answers ``related_checked: false`` at once, and the check it skipped runs later on the queue's
worker (the app's SQS handler, fed by the local stack's poller), storing what a warm save would
have: links, or ``on_conflict: supersede``."""

from __future__ import annotations

import json

import boto3
import pytest

from tests.api.test_related import NEW, OLD, B, M, memory, save


@pytest.fixture
def loops(app, aws):
    from infra.local.events import LocalEvents
    return LocalEvents(app, log=lambda msg: None)


def history(api, mid):
    return api.get(f"{M}/{mid}/history")[1]["revisions"]


def cold_bank(api, *, pinned=False, settings=None):
    """Bank ``heron``: OLD among more records than a save reads whole, its index snapshot in S3,
    and this container holding no index of it (as a new container). Returns OLD's id."""
    from chalicelib.search.neighbours import REBUILD_MAX
    from chalicelib.search.recall import drop_caches, snapshot_banks
    old = save(api, OLD, pinned=pinned)["memory"]["id"]
    if settings:
        assert api.patch(B, {"settings": settings})[0] == 200
    lines = [{"text": f"Filler memory number {i} about the Heron rollout.", "created_at": 1, "updated_at": 1}
             for i in range(REBUILD_MAX + 1)]
    s, report = api.post(B + "/import", raw="\n".join(json.dumps(x) for x in lines),
                         headers={"Content-Type": "application/x-ndjson"})
    assert s == 200 and report["imported"] == REBUILD_MAX + 1, report
    assert snapshot_banks(1, org_id="default", banks=["heron"])  # as a recall or the schedule leaves one
    drop_caches()
    return old


def test_a_save_into_a_bank_cold_here_loads_no_snapshot_and_answers_related_checked_false(api):
    from chalicelib.search import index
    cold_bank(api)
    cache = index.active_cache()
    loads = cache.counters["snapshot_loads"]
    body = save(api, NEW)
    assert body["related_checked"] is False and body["related"] == []
    assert cache.get("default", "heron") is None and cache.counters["snapshot_loads"] == loads
    api.post(B + "/recall", {"query": "Heron launch"})  # a recall loads it: the next save is checked
    assert save(api, "Heron's public launch moved to August 3, 2026.")["related_checked"] is True


def test_the_deferred_check_links_the_conflict_a_cold_save_skipped(api, loops):
    old = cold_bank(api)
    body = save(api, NEW)
    assert body["related_checked"] is False and "conflicts_with" not in body["memory"]
    assert loops.poll_queue() == {"received": 1, "failed": 0}
    new = body["memory"]["id"]
    assert memory(api, new)["conflicts_with"] == [old] and memory(api, old)["conflicts_with"] == [new]
    revs = history(api, old)
    assert [r["op"] for r in revs] == ["create", "link"] and "detected after its save" in revs[-1]["why"]
    assert [r["op"] for r in history(api, new)] == ["create", "link"]


def test_a_redelivered_deferred_check_writes_nothing_more(api, loops):
    sqs = boto3.client("sqs", region_name="us-east-1")
    old = cold_bank(api)
    save(api, NEW)
    got = sqs.receive_message(QueueUrl=loops.queue_url, MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"])["kind"] for m in got] == ["related"]
    record = {"messageId": "m1", "body": got[0]["Body"], "attributes": {}}
    from chalicelib.events.extraction import handle_batch
    assert handle_batch([record]) == {"batchItemFailures": []}
    assert handle_batch([record]) == {"batchItemFailures": []}
    assert [r["op"] for r in history(api, old)] == ["create", "link"]


def test_the_deferred_check_supersedes_under_on_conflict_supersede_and_history_says_why(api, loops):
    old = cold_bank(api, settings={"on_conflict": "supersede"})
    body = save(api, NEW)
    assert body["related_checked"] is False
    assert loops.poll_queue() == {"received": 1, "failed": 0}
    gone = memory(api, old)
    assert gone["superseded_by"] == body["memory"]["id"] and gone["invalid_at"]
    why = history(api, old)[-1]["why"]
    assert "on_conflict: supersede" in why and "conflict detected after its save" in why
    assert "conflicts_with" not in memory(api, body["memory"]["id"])
    s, events = api.get("/v1/audit?action=memory.supersede")
    assert s == 200 and [e["target"] for e in events["events"]] == [f"heron/{old}"], events


def test_the_deferred_check_never_retires_a_pinned_memory(api, loops):
    old = cold_bank(api, pinned=True, settings={"on_conflict": "supersede"})
    new = save(api, NEW)["memory"]["id"]
    assert loops.poll_queue() == {"received": 1, "failed": 0}
    assert "invalid_at" not in memory(api, old) and memory(api, old)["conflicts_with"] == [new]


@pytest.mark.parametrize("retire", ["forget", "purge"])
def test_the_deferred_check_does_nothing_once_the_memory_is_retired_or_purged(api, loops, retire):
    old = cold_bank(api)
    new = save(api, NEW)["memory"]["id"]
    s, b = api.post(f"{M}/{new}/purge") if retire == "purge" else api.delete(f"{M}/{new}")
    assert s == 200, b
    assert loops.poll_queue() == {"received": 1, "failed": 0}
    assert "conflicts_with" not in memory(api, old) and [r["op"] for r in history(api, old)] == ["create"]


def test_deferred_checks_store_the_links_warm_saves_would_have(api, loops):
    """Two corrections saved while the bank is cold: each one's check sees the bank as its save
    found it (the later correction is no candidate of the earlier one's check), so the links are
    those of the same saves into a bank warm here."""
    later = "Heron's public launch moved again, to August 3, 2026, after the Stripe certification slipped."
    cold_bank(api)
    for text in (NEW, later):
        save(api, text)
    assert loops.poll_queue() == {"received": 2, "failed": 0}
    for text in (OLD, NEW, later):
        s, b = api.post("/v1/banks/warm/memories", {"text": text, "entities": ["heron"]})
        assert s == 201 and b["related_checked"] is True, b

    def links(bank):
        got = api.get(f"/v1/banks/{bank}/memories?limit=500")[1]["memories"]
        return {m["text"]: sorted(m.get("conflicts_with") or []) for m in got if "Filler" not in m["text"]}
    assert links("heron") == links("warm") and any(links("warm").values())


def test_the_deferred_check_supersedes_nothing_for_a_memory_forgotten_while_it_decides(api, loops, monkeypatch):
    """The check reads the new memory live and decides to retire the older side (``on_conflict:
    supersede``), writing only the older side; a client forgets the new memory before that
    commits. The retirement must not commit for a memory no longer live: the older statement
    stays live, as a warm save followed by the forget leaves it."""
    from chalicelib.banks import conflicts
    from tests.api.lanes import lane_of_text
    assert lane_of_text(OLD) != lane_of_text(NEW)  # else the lanes' own condition orders the two writes
    old = cold_bank(api, settings={"on_conflict": "supersede"})
    new = save(api, NEW)["memory"]["id"]
    real, forgotten = conflicts.link_writes, []

    def meanwhile(*args, **kw):
        if not forgotten:  # another client, between the check's read of the new memory and its commit
            forgotten.append(api.delete(f"{M}/{new}")[0])
        return real(*args, **kw)

    monkeypatch.setattr(conflicts, "link_writes", meanwhile)
    assert loops.poll_queue() == {"received": 1, "failed": 0}
    assert forgotten == [200] and memory(api, new)["invalid_at"]
    kept = memory(api, old)
    assert "invalid_at" not in kept and "superseded_by" not in kept, kept


@pytest.mark.parametrize("garbled", [{"actor": "person:a\u0000b"}, {"actor": "person:" + "a" * 5000},
                                     {"saved_at": 2**63}, {"revision": "0"}, {"memory_id": "~fp/heron"},
                                     {"bank": "Heron!"}, {"v": 2}],
                         ids=["nul-actor", "long-actor", "saved-at-2^63", "revision-string", "not-a-memory-id",
                              "not-a-bank-name", "unknown-version"])
def test_a_garbled_deferred_check_is_refused_and_writes_nothing(api, loops, garbled):
    """The queue body is input like any other: a job whose fields are not what ``defer`` sends
    (a control character or an unbounded actor bound for the history and audit trail, a time
    past year 9999, a string for a number, a key that is no memory id) fails as a poison
    message (retried, then dead-lettered) with nothing written."""
    from chalicelib.events.extraction import handle_batch
    sqs = boto3.client("sqs", region_name="us-east-1")
    old = cold_bank(api)
    save(api, NEW)
    [msg] = sqs.receive_message(QueueUrl=loops.queue_url, MaxNumberOfMessages=10)["Messages"]
    body = {**json.loads(msg["Body"]), **garbled}
    record = {"messageId": "m1", "body": json.dumps(body), "attributes": {}}
    assert handle_batch([record]) == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert [r["op"] for r in history(api, old)] == ["create"]
    s, events = api.get("/v1/audit?action=memory.supersede")
    assert s == 200 and events["events"] == []
