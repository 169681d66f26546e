"""Bank lifecycle: create/ensure, list, trash, restore whole with history, name reuse (purge:
tests/api/test_purge.py)."""

from tests.api.state import dump


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


DEFAULT_SETTINGS = {"on_conflict": "flag", "match_threshold": None, "ambient_floor": None, "feed": None}
DEFAULTS = {"match_threshold": 0.35, "ambient_floor": True}  # what the settings left null stand for


def test_create_ensure_list(api):
    s, b = api.post("/v1/banks", {"name": "alpha", "description": "first"})
    assert s == 201 and b == {"created": True, "bank": {"name": "alpha", "description": "first", "memories": 0,
                                                         "pinned": 0, "rules": 0,
                                                         "settings": DEFAULT_SETTINGS, "defaults": DEFAULTS}}
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
    assert before["bank"] == {"name": "proj", "description": "", "memories": 1, "pinned": 1, "rules": 2,
                              "settings": DEFAULT_SETTINGS, "defaults": DEFAULTS}
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
                                                    "pinned": 0, "rules": 0,
                                                    "settings": DEFAULT_SETTINGS, "defaults": DEFAULTS}
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
