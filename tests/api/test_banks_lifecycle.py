"""Bank lifecycle and purge: create/ensure, list, trash,
restore whole with history, name reuse, and purge leaving no trace of the text."""

import boto3

from tests.api.conftest import mint
from tests.api.state import contains, dump

SECRET = "The vault code is zebra-4471-quokka"


def _seed(api, bank="proj"):
    m = f"/v1/banks/{bank}/memories"
    s, a = api.post(m, {"text": "Deploys happen on Tuesdays", "tags": ["ops"], "pinned": True})
    assert s == 201
    mid = a["memory"]["id"]
    api.patch(f"{m}/{mid}", {"text": "Deploys happen on Wednesdays"})
    s, b = api.post(m, {"text": "Use ruff for linting", "entities": ["ruff"]})
    api.delete(f"{m}/{b['memory']['id']}")
    assert api.put(f"/v1/banks/{bank}/rules/style", {"content": "# Style\nBe brief."})[0] == 200
    assert api.put(f"/v1/banks/{bank}/rules/safety", {"content": "Never share keys."})[0] == 200
    return mid, b["memory"]["id"]


def _snapshot(api, bank="proj"):
    """Everything a bank shows: bank row, rules, every memory and each one's history."""
    _, bank_body = api.get(f"/v1/banks/{bank}")
    _, rules = api.get(f"/v1/banks/{bank}/rules")
    _, mems = api.get(f"/v1/banks/{bank}/memories?include_superseded=true")
    hist = {m["id"]: api.get(f"/v1/banks/{bank}/memories/{m['id']}/history")[1] for m in mems["memories"]}
    return {"bank": bank_body["bank"], "rules": [(r["name"], r["content"]) for r in rules["rules"]],
            "memories": mems, "history": hist}


def test_create_ensure_list(api):
    s, b = api.post("/v1/banks", {"name": "alpha", "description": "first"})
    assert s == 201 and b == {"created": True, "bank": {"name": "alpha", "description": "first", "memories": 0,
                                                         "pinned": 0, "rules": 0}}
    s, b = api.post("/v1/banks", {"name": "alpha", "description": "ignored"})
    assert s == 200 and b["created"] is False and b["bank"]["description"] == "first"
    api.post("/v1/banks", {"name": "beta"})
    api.post("/v1/banks/gamma/memories", {"text": "created on first use"})
    s, b = api.get("/v1/banks")
    assert [x["name"] for x in b["banks"]] == ["alpha", "beta", "gamma"]
    assert b["banks"][2]["memories"] == 1
    s, b = api.get("/v1/banks/delta")
    assert (s, b["code"]) == (404, "bank_not_found")


def test_trash_and_restore_whole(api):
    _seed(api)
    before = _snapshot(api)
    assert before["bank"] == {"name": "proj", "description": "", "memories": 1, "pinned": 1, "rules": 2}
    s, t = api.delete("/v1/banks/proj")
    assert s == 200 and t["trashed_to"]
    assert (api.get("/v1/banks/proj")[1]["code"]) == "bank_not_found"
    assert api.get("/v1/banks")[1]["banks"] == []
    s, tr = api.get("/v1/banks?trashed=true")
    assert [(e["name"], e["trashed_to"]) for e in tr["banks"]] == [("proj", t["trashed_to"])]
    assert isinstance(tr["banks"][0]["trashed_at"], int)
    s, r = api.post("/v1/banks/proj/restore", {"trashed_to": t["trashed_to"]})
    assert s == 200 and r["bank"] == before["bank"]
    assert _snapshot(api) == before
    assert api.get("/v1/banks?trashed=true")[1]["banks"] == []
    s, e = api.post("/v1/banks/proj/restore", {"trashed_to": t["trashed_to"]})
    assert (s, e["code"]) == (404, "not_found")
    # the restored bank keeps working: seq continues, the fingerprint still reinforces
    s, b = api.post("/v1/banks/proj/memories", {"text": "deploys happen on wednesdays"})
    assert s == 200 and b["memory"]["corroboration"] == 1


def test_trash_twice_and_name_reuse(api):
    _seed(api)
    s, t1 = api.delete("/v1/banks/proj")
    s, b = api.get("/v1/banks/proj/memories")
    assert b["code"] == "bank_not_found"
    # a new bank of the trashed name never shows the old memories or rules
    s, b = api.post("/v1/banks/proj/memories", {"text": "Deploys happen on Wednesdays"})
    assert s == 201 and b["memory"]["corroboration"] == 0 and b["memory"]["revision"] == 0
    s, b = api.get("/v1/banks/proj/memories?include_superseded=true")
    assert b["total"] == 1 and len(b["memories"]) == 1
    assert api.get("/v1/banks/proj/rules")[1]["rules"] == []
    assert api.get("/v1/banks/proj")[1]["bank"] == {"name": "proj", "description": "", "memories": 1,
                                                    "pinned": 0, "rules": 0}
    # restoring while a live bank holds the name is 409 bank_exists, and changes nothing
    snap = dump()
    s, e = api.post("/v1/banks/proj/restore", {"trashed_to": t1["trashed_to"]})
    assert (s, e["code"]) == (409, "bank_exists")
    from tests.api.state import assert_unchanged
    assert_unchanged(snap)
    s, t2 = api.delete("/v1/banks/proj")
    assert t2["trashed_to"] != t1["trashed_to"]
    s, tr = api.get("/v1/banks?trashed=true")
    assert [e["trashed_to"] for e in tr["banks"]] == [t1["trashed_to"], t2["trashed_to"]]  # oldest first
    assert {e["name"] for e in tr["banks"]} == {"proj"}
    # each trash id brings back its own incarnation
    s, r = api.post("/v1/banks/proj/restore", {"trashed_to": t1["trashed_to"]})
    assert s == 200 and r["bank"]["memories"] == 1 and r["bank"]["rules"] == 2
    s, b = api.get("/v1/banks/proj/memories?include_superseded=true")
    assert b["total"] == 2
    api.delete("/v1/banks/proj")
    s, e = api.post("/v1/banks/other/restore", {"trashed_to": t2["trashed_to"]})
    assert (s, e["code"]) == (404, "not_found")


def test_purge_leaves_no_trace(api, monkeypatch, aws):
    m = "/v1/banks/vault/memories"
    s, a = api.post(m, {"text": SECRET, "entities": ["zebra-entity"], "tags": ["quokka-tag"]},
                    headers={"Idempotency-Key": "save-secret-1"})
    assert s == 201
    mid = a["memory"]["id"]
    api.post(m, {"text": SECRET.upper()})
    api.patch(f"{m}/{mid}", {"text": SECRET + " (rotated)", "tags": ["quokka-tag", "more"]})
    api.post(m, {"text": "An unrelated memory"})
    # an export over the inline limit lands under exports/, and a hand-made index snapshot
    monkeypatch.setenv("CAIRN_EXPORT_INLINE_BYTES", "10")
    s, link = api.get("/v1/banks/vault/export")
    assert set(link) == {"url", "expires_at"}
    monkeypatch.delenv("CAIRN_EXPORT_INLINE_BYTES")
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.put_object(Bucket=aws["CAIRN_BUCKET"], Key="default/indexes/vault/7.tar.gz", Body=SECRET.encode())
    data = dump()
    assert {"cairn-test-revisions", "cairn-test-memories"} <= set(contains(data, "zebra-4471"))
    assert any(k.startswith(aws["CAIRN_BUCKET"] + "/default/exports/vault/") for k in contains(data, "zebra-4471"))

    # a person without admin.memories cannot purge
    plain = mint(user_id="bob", permissions=["memory:read", "memory:write"])
    s, e = api.post(f"{m}/{mid}/purge", token=plain)
    assert (s, e["code"]) == (403, "forbidden")

    s, p = api.post(f"{m}/{mid}/purge")
    assert s == 200, p
    rec = p["memory"]
    assert rec["text"] == "" and rec["entities"] == [] and rec["tags"] == []
    assert rec["purged_at"] and rec["invalid_at"] and rec["id"] == mid
    data = dump()
    for needle in ("zebra-4471", "zebra-entity", "quokka-tag"):
        assert contains(data, needle) == [], needle
    from chalicelib.storage.tables import RevisionModel
    revs = [r for r in RevisionModel.scan() if r.memory_id == mid]
    assert len(revs) == 4 and all(r.record["text"] == "" and not r.record["tags"] for r in revs)
    for path in ("/v1/banks/vault/export", "/v1/banks/vault/export?history=true"):
        s, body = api.get(path)
        text = body.decode() if isinstance(body, bytes) else str(body)
        assert s == 200 and "zebra" not in text and "quokka" not in text and mid in text
    assert not list(s3.list_objects_v2(Bucket=aws["CAIRN_BUCKET"], Prefix="default/indexes/vault/").get("Contents", []))
    assert not list(s3.list_objects_v2(Bucket=aws["CAIRN_BUCKET"], Prefix="default/exports/vault/").get("Contents", []))
    # the tombstone and the audit event remain; the history still lists every revision, empty
    s, g = api.get(f"{m}/{mid}")
    assert g["memory"] == rec
    s, h = api.get(f"{m}/{mid}/history")
    assert [r["op"] for r in h["revisions"]] == ["create", "reinforce", "update", "purge"]
    assert all(r["text"] == "" for r in h["revisions"])
    from chalicelib.storage.tables import AuditModel
    events = [e for e in AuditModel.query("default") if e.action == "memory.purge"]
    assert len(events) == 1 and events[0].target == f"vault/{mid}"
    # the idempotent replay no longer carries the text either
    s, again = api.post(m, {"text": SECRET, "entities": ["zebra-entity"], "tags": ["quokka-tag"]},
                        headers={"Idempotency-Key": "save-secret-1"})
    assert "zebra" not in str(again)
    # purge again is a no-op; saving the text again starts afresh
    s, p2 = api.post(f"{m}/{mid}/purge")
    assert s == 200 and p2["memory"] == rec
    s, b = api.get("/v1/banks/vault")
    assert b["bank"]["memories"] == 1


def test_purge_scrubs_the_recall_index(api, tmp_path):
    from chalicelib.search.index import IndexCache, using
    m = "/v1/banks/vault/memories"
    with using(IndexCache(root=str(tmp_path))):
        s, a = api.post(m, {"text": SECRET, "entities": ["zebra-entity"]})
        api.post(m, {"text": "Another memory about zebras"})
        s, r = api.post("/v1/banks/vault/recall", {"query": "quokka vault code"})
        assert s == 200 and r["memories"][0]["memory"]["id"] == a["memory"]["id"]
        s, _p = api.post(f"{m}/{a['memory']['id']}/purge")
        assert s == 200
        s, r = api.post("/v1/banks/vault/recall", {"query": "quokka vault code"})
        assert s == 200 and all(x["memory"]["id"] != a["memory"]["id"] for x in r["memories"])
        leaked = [str(p) for p in tmp_path.rglob("*") if p.is_file() and (b"quokka" in p.read_bytes()
                                                                          or b"zebra-4471" in p.read_bytes())]
        assert leaked == []
