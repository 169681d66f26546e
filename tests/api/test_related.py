"""Related memories at write time through REST: duplicates and conflicts reported on save, conflict
links stored both ways and cleared on retirement, ``on_conflict: supersede`` retiring the older
side (never a pinned one), and a write-only token seeing no ``text``."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import mint

B = "/v1/banks/heron"
M = B + "/memories"
OLD = "Heron's public launch is planned for June 15, 2026."
NEW = "Heron's public launch moved to July 20, 2026 because of the Stripe certification delay."
OTHER = "Heron stores its data in PostgreSQL 16."


def save(api, text, **kw):
    s, b = api.post(M, {"text": text, "entities": ["heron"], **kw})
    assert s in (200, 201), b
    return b


def memory(api, mid):
    return api.get(f"{M}/{mid}")[1]["memory"]


def test_a_correction_reports_the_conflict_and_links_both_sides(api):
    old = save(api, OLD)["memory"]
    save(api, OTHER)
    body = save(api, NEW)
    assert body["related_checked"] is True
    assert [(r["id"], r["relation"], r["action"]) for r in body["related"]] == [(old["id"], "conflict", "linked")]
    rel = body["related"][0]
    assert rel["text"] == OLD and "july" in rel["why"] and 0 < rel["score"] <= 1
    new = body["memory"]
    assert new["conflicts_with"] == [old["id"]]
    assert memory(api, old["id"])["conflicts_with"] == [new["id"]]
    revs = api.get(f"{M}/{old['id']}/history")[1]["revisions"]
    assert [r["op"] for r in revs] == ["create", "link"] and new["id"] in revs[-1]["why"]
    # exported with the records, and with history
    resp = api.client.http.get(f"{B}/export?history=true", headers={"Authorization": f"Bearer {api.token}"})
    lines = [json.loads(x) for x in resp.body.decode().splitlines()]
    assert {(x["id"], x.get("op"), tuple(x.get("conflicts_with") or ())) for x in lines} >= {
        (old["id"], "link", (new["id"],)), (new["id"], "create", (old["id"],))}


def test_a_reworded_duplicate_is_reported_and_not_linked(api):
    first = save(api, "Heron stores its data in PostgreSQL 16.")["memory"]
    body = save(api, "We picked PostgreSQL 16 to hold everything Heron persists.")
    assert [(r["id"], r["relation"], r["action"]) for r in body["related"]] == [(first["id"], "duplicate", "none")]
    assert "conflicts_with" not in body["memory"] and "conflicts_with" not in memory(api, first["id"])


def test_a_write_only_token_sees_no_text_in_related(api):
    save(api, OLD)
    writer = mint(user_id="w", permissions=["memory:write"])
    s, body = api.post(M, {"text": NEW, "entities": ["heron"]}, token=writer)
    assert s == 201 and body["related"], body
    assert all("text" not in r for r in body["related"]) and body["related"][0]["why"]
    assert all("june" not in r["why"].lower() and "15" not in r["why"] for r in body["related"])  # no value of it


def test_retiring_either_side_clears_the_link(api):
    old = save(api, OLD)["memory"]
    new = save(api, NEW)["memory"]
    api.delete(f"{M}/{old['id']}")
    assert "conflicts_with" not in memory(api, new["id"])
    assert "conflicts_with" not in memory(api, old["id"])


def test_on_conflict_supersede_retires_the_older_side_and_history_says_why(api):
    api.post(B + "/memories", {"text": OTHER})
    s, b = api.patch(B, {"settings": {"on_conflict": "supersede"}})
    assert s == 200, b
    old = save(api, OLD)["memory"]
    body = save(api, NEW)
    assert [(r["id"], r["action"]) for r in body["related"]] == [(old["id"], "superseded")]
    gone = memory(api, old["id"])
    assert gone["superseded_by"] == body["memory"]["id"] and gone["invalid_at"]
    why = api.get(f"{M}/{old['id']}/history")[1]["revisions"][-1]["why"]
    assert "on_conflict: supersede" in why and "conflict detected" in why


def test_on_conflict_supersede_never_retires_a_pinned_memory(api):
    api.post(B + "/memories", {"text": OTHER})
    api.patch(B, {"settings": {"on_conflict": "supersede"}})
    old = save(api, OLD, pinned=True)["memory"]
    body = save(api, NEW)
    assert [(r["id"], r["action"]) for r in body["related"]] == [(old["id"], "linked")]
    assert "invalid_at" not in memory(api, old["id"])


@pytest.mark.parametrize("first, later", [(OLD, NEW), (NEW, OLD)])
def test_recall_ranks_the_later_statement_of_a_conflict_first(api, first, later):
    """Whichever of the two was said last ranks first, and each carries the other's id."""
    a = save(api, first)["memory"]
    b = save(api, later)["memory"]
    assert b["conflicts_with"] == [a["id"]]
    for query in ("When is Heron's public launch?", "Heron public launch date", "Heron launch June 15"):
        s, body = api.post(B + "/recall", {"query": query})
        assert s == 200, body
        hits = [h["memory"] for h in body["memories"]]
        assert [h["id"] for h in hits][:2] == [b["id"], a["id"]], query
        assert hits[0]["conflicts_with"] == [a["id"]] and hits[1]["conflicts_with"] == [b["id"]]


def test_a_correction_worded_unlike_the_question_still_shows_above_what_it_corrects(api):
    """The question matches only the earlier statement's words: its linked later statement joins
    and ranks first; one the caller's filter excludes never joins."""
    old = save(api, OLD, tags=["plan"])["memory"]
    new = save(api, NEW)["memory"]
    assert new["conflicts_with"] == [old["id"]]
    s, body = api.post(B + "/recall", {"query": "planned"})
    assert s == 200, body
    assert [h["memory"]["id"] for h in body["memories"]][:2] == [new["id"], old["id"]]
    s, body = api.post(B + "/recall", {"query": "planned", "tag": "plan"})
    assert s == 200, body
    assert [h["memory"]["id"] for h in body["memories"]] == [old["id"]]


def test_the_injection_shows_only_the_later_side_of_a_conflict(api):
    old = save(api, OLD)["memory"]
    new = save(api, NEW)["memory"]
    s, body = api.post(B + "/preview", {"query": "When is Heron's public launch?"})
    assert s == 200, body
    ids = [m["memory"]["id"] for m in body["memories"]]
    assert new["id"] in ids and old["id"] not in ids
    assert "July 20" in body["message"] and "June 15" not in body["message"]


def test_mcp_memory_save_says_what_to_do_about_a_conflict(client, token, api):
    from tests.api.test_mcp import Mcp
    mcp = Mcp(client, token)
    old = save(api, OLD)["memory"]
    result = mcp.call("memory_save", bank="heron", text=NEW, entities=["heron"])
    assert result["isError"] is False, result
    assert result["structuredContent"]["related"][0]["id"] == old["id"]
    words = result["content"][0]["text"]
    assert f"Conflicts with memory {old['id']}" in words and "memory_supersede" in words and OLD in words


def test_the_conflicts_listing_pages_open_conflicts_and_a_supersede_resolves_one(api):
    old = save(api, OLD)["memory"]
    new = save(api, NEW)["memory"]
    other_old = save(api, "The Heron team has 11 engineers.")["memory"]
    other_new = save(api, "The Heron team is now 14 people.")["memory"]
    assert other_new["conflicts_with"] == [other_old["id"]]
    s, page = api.get(B + "/conflicts?limit=1")
    assert s == 200, page
    assert [(c["memory"]["id"], [e["id"] for e in c["earlier"]]) for c in page["conflicts"]] == \
        [(other_new["id"], [other_old["id"]])]
    s, rest = api.get(B + f"/conflicts?limit=1&cursor={page['next_cursor']}")
    assert [(c["memory"]["id"], [e["id"] for e in c["earlier"]]) for c in rest["conflicts"]] == \
        [(new["id"], [old["id"]])]
    # resolve: the newer side wins
    s, b = api.post(f"{M}/{old['id']}/supersede", {"superseded_by": new["id"]})
    assert s == 200, b
    s, left = api.get(B + "/conflicts")
    assert [c["memory"]["id"] for c in left["conflicts"]] == [other_new["id"]]
    assert "conflicts_with" not in memory(api, new["id"]) or memory(api, new["id"])["conflicts_with"] == []


def test_the_conflicts_listing_needs_read_permission_and_a_bank(api):
    save(api, OLD)
    writer = mint(user_id="w", permissions=["memory:write"])
    s, e = api.get(B + "/conflicts", token=writer)
    assert (s, e["code"]) == (403, "forbidden")
    s, e = api.get("/v1/banks/nobank/conflicts")
    assert (s, e["code"]) == (404, "bank_not_found")
    s, e = api.get(B + "/conflicts?limit=0")
    assert (s, e["code"]) == (400, "validation_error")


def test_an_import_reports_related_memories_per_line(api):
    import json
    old = save(api, OLD)["memory"]
    lines = [{"id": "fp00000000000000a1", "text": "Heron's office dog is called Biscuit.", "entities": ["heron"],
              "created_at": 1, "updated_at": 1},
             {"id": "fp00000000000000a2", "text": NEW, "entities": ["heron"], "created_at": 2, "updated_at": 2}]
    body = "\n".join(json.dumps(x) for x in lines) + "\n"
    s, report = api.post(B + "/import", raw=body, headers={"Content-Type": "application/x-ndjson"})
    assert s == 200, report
    assert report["imported"] == 2 and "related_checked" not in report
    assert [(r["line"], [(x["id"], x["relation"]) for x in r["related"]]) for r in report["related"]] == \
        [(2, [(old["id"], "conflict")])]


def test_an_update_to_a_new_text_reports_related_memories(api):
    old = save(api, OLD)["memory"]
    other = save(api, "Heron's office dog is called Biscuit.")["memory"]
    s, body = api.patch(f"{M}/{other['id']}", {"text": NEW})
    assert s == 200, body
    assert [(r["id"], r["relation"]) for r in body["related"]] == [(old["id"], "conflict")]
    assert body["related_checked"] is True and body["memory"]["text"] == NEW


def test_a_cold_large_bank_answers_related_checked_false_and_is_never_rebuilt_on_a_save(api):
    import json

    from chalicelib.search import index as index_mod
    from chalicelib.search.neighbours import REBUILD_MAX
    from chalicelib.search.recall import drop_caches
    lines = [{"text": f"Filler memory number {i} about the Heron rollout.", "created_at": 1, "updated_at": 1}
             for i in range(REBUILD_MAX + 1)]
    s, report = api.post(B + "/import", raw="\n".join(json.dumps(x) for x in lines),
                         headers={"Content-Type": "application/x-ndjson"})
    assert s == 200 and report["imported"] == REBUILD_MAX + 1, report
    drop_caches()
    rebuilds = index_mod.active_cache().counters["rebuilds"]
    body = save(api, OLD)
    assert body["related_checked"] is False and body["related"] == []
    assert index_mod.active_cache().counters["rebuilds"] == rebuilds
    api.post(B + "/recall", {"query": "Heron launch"})  # a recall loads it into this container
    assert save(api, NEW)["related_checked"] is True


def test_saves_after_the_global_random_is_reseeded_keep_every_memory_findable(api):
    """Whoosh names index segments from the global ``random``, which a caller may seed (a test
    framework does, per example): segments written after the same seed must still be distinct,
    so each save's related look-up and recall see every memory."""
    import random
    texts = [f"The {w} service writes its audit log to bucket {w}-logs." for w in
             ("orchid", "walnut", "saffron", "pebble", "juniper", "quartz", "lantern", "meadow")]
    for text in texts:
        random.seed(1234)
        save(api, text)
    s, body = api.post(B + "/recall", {"query": "audit log bucket", "limit": 20})
    assert s == 200, body
    assert sorted(h["memory"]["text"] for h in body["memories"]) == sorted(texts)


def test_observed_at_makes_an_earlier_statement_saved_later_rank_second(api):
    """A transcript's older statement saved after the correction: ``observed_at`` says when it was
    said, so the correction, said later, ranks first and the injection shows it alone."""
    from chalicelib.clock import now_ms
    new = save(api, NEW)["memory"]
    said = now_ms() - 30 * 86_400_000
    body = save(api, OLD, observed_at=said)
    old = body["memory"]
    assert old["observed_at"] == said and "observed_at" not in new
    assert [(r["id"], r["relation"]) for r in body["related"]] == [(new["id"], "conflict")]
    s, got = api.post(B + "/recall", {"query": "When is Heron's public launch?"})
    assert s == 200, got
    assert [h["memory"]["id"] for h in got["memories"]][:2] == [new["id"], old["id"]]
    s, preview = api.post(B + "/preview", {"query": "When is Heron's public launch?"})
    assert s == 200 and "July 20" in preview["message"] and "June 15" not in preview["message"], preview


def test_on_conflict_supersede_never_retires_a_memory_said_after_the_one_written(api):
    from chalicelib.clock import now_ms
    api.post(B + "/memories", {"text": OTHER})
    api.patch(B, {"settings": {"on_conflict": "supersede"}})
    new = save(api, NEW)["memory"]
    body = save(api, OLD, observed_at=now_ms() - 86_400_000)
    assert [(r["id"], r["action"]) for r in body["related"]] == [(new["id"], "linked")]
    assert "invalid_at" not in memory(api, new["id"]) and "invalid_at" not in body["memory"]


@pytest.mark.parametrize("ahead, code", [(3_600_000, "validation_error"), (None, "validation_error")])
def test_observed_at_in_the_future_or_negative_is_refused_and_writes_nothing(api, ahead, code):
    from chalicelib.clock import now_ms
    save(api, OTHER)
    value = now_ms() + ahead if ahead is not None else -1
    s, body = api.post(M, {"text": OLD, "entities": ["heron"], "observed_at": value})
    assert (s, body["code"]) == (400, code) and body["details"]["field"] == "observed_at", body
    assert [m["text"] for m in api.get(M)[1]["memories"]] == [OTHER]


def test_an_import_line_keeps_its_observed_at_and_one_in_the_future_is_a_line_error(api):
    import json

    from chalicelib.clock import now_ms
    said = now_ms() - 86_400_000
    lines = [{"text": OLD, "entities": ["heron"], "observed_at": said},
             {"text": OTHER, "observed_at": now_ms() + 3_600_000}]
    s, report = api.post(B + "/import", raw="\n".join(json.dumps(x) for x in lines),
                         headers={"Content-Type": "application/x-ndjson"})
    assert s == 200, report
    assert report["imported"] == 1 and [e["line"] for e in report["errors"]] == [2]
    assert "observed_at" in report["errors"][0]["error"]
    assert [m["observed_at"] for m in api.get(M)[1]["memories"]] == [said]


def test_a_snapshot_written_before_the_links_column_still_ranks_the_later_statement_first(api, tmp_path,
                                                                                         monkeypatch):
    """Loaded without a rebuild, its documents' links are read from their records, before and
    after a merge with a segment written since (whose documents say whether they are linked)."""
    from chalicelib.search import index

    old = save(api, OLD)["memory"]
    new = save(api, NEW)["memory"]
    from chalicelib.search.schema import LINKED_FIELD
    from tests.api.search_support import write_old_snapshot
    write_old_snapshot("default", "heron", tmp_path, LINKED_FIELD)
    cold = index.IndexCache(str(tmp_path / "cold"))
    with index.using(cold):
        for step in ("loaded", "written", "merged"):
            if step == "written":
                save(api, OTHER)
            if step == "merged":
                monkeypatch.setattr(index, "MERGE_MIN_DOCS", 0)
                monkeypatch.setattr(index, "MERGE_MAX_SEGMENTS", 1)
                entry = cold.get("default", "heron")
                assert entry is not None and entry.merge()
            s, body = api.post(B + "/recall", {"query": "planned"})
            assert s == 200, body
            assert [h["memory"]["id"] for h in body["memories"]][:2] == [new["id"], old["id"]], step
    assert cold.counters["snapshot_loads"] == 1 and cold.counters["rebuilds"] == 0, cold.counters


def _damage(api, mid):
    """Memory ``mid``'s stored record made undecodable (a lone surrogate in its text), as a hand
    edit leaves it; this container's index keeps the healthy document it held."""
    import boto3

    from chalicelib.core.store import get_bank_row
    from chalicelib.settings import get_settings
    ddb, table = boto3.client("dynamodb"), get_settings().table_name("memories")
    key = {"bank_key": {"S": get_bank_row("default", "heron").incarnation}, "sk": {"S": mid}}
    item = ddb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    rec = json.loads(item["record"]["S"])
    ddb.put_item(TableName=table, Item={**item, "record": {"S": json.dumps({**rec, "text": rec["text"] + " \ud800"})}})
    assert api.get(f"{M}/{mid}")[0] == 409


def test_a_damaged_conflict_partner_neither_refuses_a_save_nor_blocks_retiring_or_listing(api):
    """A live memory whose stored record is damaged is no partner a write can link or retire:
    listing the bank's conflicts and forgetting a memory linked to it are not refused for it, and
    a save that detects a conflict with it is saved (unlinked to it)."""
    old = save(api, OLD)["memory"]["id"]
    linked = save(api, NEW)["memory"]["id"]
    assert memory(api, linked)["conflicts_with"] == [old]
    api.post(B + "/recall", {"query": "Heron launch"})
    _damage(api, old)
    s, page = api.get(B + "/conflicts")
    assert s == 200, page
    s, gone = api.delete(f"{M}/{linked}")
    assert s == 200 and gone["memory"]["invalid_at"], gone
    later = "Heron's public launch moved again, to August 3, 2026, after the Stripe certification slipped."
    s, body = api.post(M, {"text": later, "entities": ["heron"]})
    assert s == 201, body
    assert [(r["id"], r["relation"]) for r in body["related"]] == [(old, "conflict")]
    assert "conflicts_with" not in body["memory"]
