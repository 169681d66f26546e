"""Structured memory over REST: Turnstone's wire shapes, upsert, messages, audit."""

from __future__ import annotations

import re
import threading

import pytest

from tests.api.conftest import Api, mint
from tests.api.state import assert_unchanged, dump

TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")
ROW_KEYS = {"memory_id", "name", "description", "type", "scope", "scope_id", "created", "updated", "content",
            "last_accessed", "access_count"}
USER = ["memory:read", "memory:write"]


@pytest.fixture
def alice(client, aws):
    return Api(client, mint(user_id="alice", permissions=USER))


@pytest.fixture
def bob(client, aws):
    return Api(client, mint(user_id="bob", permissions=USER))


def save(api, name="deploy_process", content="Deploy via GitHub Actions.", description="CI/CD workflow", **kw):
    return api.post("/v1/api/memories", {"name": name, "content": content, "description": description, **kw})


def test_save_upsert_get_delete_row_shape(alice):
    s, b = save(alice, name="Café Notes", type="reference")
    assert s == 201, b
    assert set(b) == ROW_KEYS and b["name"] == "cafe_notes" and b["scope"] == "global" and b["scope_id"] == ""
    assert TIME_RE.match(b["created"]) and b["last_accessed"] == "" and b["access_count"] == 0
    mid = b["memory_id"]
    s, b2 = save(alice, name="cafe-notes", content="  New content ", description="  new   hook ")
    assert s == 200 and b2["memory_id"] == mid and b2["created"] == b["created"]
    assert b2["content"] == "New content" and b2["description"] == "new hook" and b2["type"] == "reference"
    s, g = alice.get("/v1/api/memories/CAFE%20NOTES")
    assert s == 200 and g["memory_id"] == mid and g["content"] == "New content"
    s, lst = alice.get("/v1/api/memories")
    assert s == 200 and lst["total"] == 1 and lst["memories"][0]["memory_id"] == mid
    s, d = alice.delete("/v1/api/memories/cafe_notes?scope=global")
    assert (s, d) == (200, {"status": "ok", "name": "cafe_notes"})
    s, d = alice.delete("/v1/api/memories/cafe_notes")
    assert s == 404 and d["error"] == "Memory 'cafe_notes' not found" and d["code"] == "memory_not_found"
    s, lst = alice.get("/v1/api/memories")
    assert lst == {"memories": [], "total": 0}


def test_concurrent_saves_of_one_identity_make_one_memory(alice):
    results = []

    def go(i):
        results.append(save(alice, content=f"content {i}"))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(s for s, _ in results) == [200] * 5 + [201]
    assert len({b["memory_id"] for _, b in results}) == 1
    _s, lst = alice.get("/v1/api/memories")
    assert lst["total"] == 1


@pytest.mark.parametrize("body,status,code,message", [
    ({"name": "bad/name"}, 400, "invalid_name", None),
    ({"name": "_lead"}, 400, "invalid_name", None),
    ({"name": "a__b"}, 400, "invalid_name", None),
    ({"name": "x" * 257}, 400, "invalid_name", None),
    ({"name": "日本"}, 400, "invalid_name", None),
    ({"description": "   "}, 400, "validation_error", "description is required and must be non-empty"),
    ({"description": None}, 400, "validation_error", "description is required and must be non-empty"),
    ({"content": " "}, 400, "validation_error", "content is required"),
    ({"content": "x" * 65537}, 400, "validation_error", "content exceeds 65536 character limit"),
    ({"type": "nope"}, 400, "invalid_type",
     "invalid type: nope; must be one of ['feedback', 'general', 'reference', 'user']"),
    ({"scope": "coordinator"}, 400, "invalid_scope",
     "invalid scope: coordinator; must be one of ['global', 'user', 'workstream']"),
    ({"scope": "project"}, 400, "invalid_scope",
     "invalid scope: project; must be one of ['global', 'user', 'workstream']"),
    ({"scope": "global", "scope_id": "x"}, 400, "validation_error", "scope_id is not allowed with global scope"),
    ({"scope": "workstream"}, 400, "validation_error", "scope_id is required for workstream scope"),
    ({"scope": "workstream", "scope_id": "ws_missing"}, 404, "workstream_not_found", "Workstream not found"),
    ({"scope": "user", "scope_id": "bob"}, 403, "forbidden", "Cannot access another user's memories"),
])
def test_save_rejections_write_nothing(alice, body, status, code, message):
    before = dump()
    s, b = save(alice, **body)
    assert (s, b["code"]) == (status, code), b
    if message:
        assert b["error"] == message
    assert_unchanged(before)


def test_user_and_workstream_scopes_bind_to_caller(alice, bob):
    s, b = save(alice, scope="user")
    assert s == 201 and b["scope_id"] == "alice"
    s, _ = alice.post("/v1/api/workstreams", {"workstream_id": "ws_a", "title": "A"})
    assert s == 201
    s, b = save(alice, scope="workstream", scope_id="ws_a")
    assert s == 201 and b["scope_id"] == "ws_a"
    before = dump()
    s, b = save(bob, scope="workstream", scope_id="ws_a")
    assert (s, b["error"]) == (403, "Cannot access another user's workstream memories")
    s, b = bob.get("/v1/api/memories?scope=workstream&scope_id=ws_a")
    assert (s, b["error"]) == (403, "Cannot access another user's workstream memories")
    s, b = bob.get("/v1/api/memories?scope=user&scope_id=alice")
    assert (s, b["error"]) == (403, "Cannot access another user's memories")
    s, b = bob.delete("/v1/api/memories/deploy_process?scope=user&scope_id=alice")
    assert (s, b["error"]) == (403, "Cannot access another user's memories")
    s, b = bob.get("/v1/api/memories")  # global + bob's user namespace
    assert s == 200 and b["total"] == 0
    assert_unchanged(before)
    s, b = alice.get("/v1/api/memories")
    assert {m["scope"] for m in b["memories"]} == {"user"}  # workstream only when asked for


def test_other_org_sees_nothing(alice, client):
    save(alice)
    other = Api(client, mint(org="other", user_id="alice", permissions=[*USER, "admin.memories"]))
    s, b = other.get("/v1/api/memories")
    assert b["total"] == 0
    s, b = other.get("/v1/api/memories/deploy_process")
    assert s == 404
    s, b = other.get("/v1/api/admin/memories")
    assert b["total"] == 0


@pytest.mark.parametrize("query,message", [
    ("limit=abc", "limit must be an integer"), ("limit=0", "limit must be between 1 and 200"),
    ("limit=201", "limit must be between 1 and 200"), ("type=x", None),
    ("scope_id=x", "scope is required when scope_id is provided"),
])
def test_list_parameter_errors(alice, query, message):
    s, b = alice.get("/v1/api/memories?" + query)
    assert s == 400 and b["code"]
    if message:
        assert b["error"] == message


def test_audit_events_never_hold_content(alice, api):
    s, b = save(alice, content="SECRET-CONTENT-XYZ")
    mid = b["memory_id"]
    save(alice, content="SECRET-CONTENT-2")
    alice.delete("/v1/api/memories/deploy_process")
    s, page = api.get("/v1/api/admin/audit")
    assert s == 200
    actions = [(e["action"], e["target"]) for e in page["events"]]
    assert actions == [("memory.save", mid), ("memory.update", mid), ("memory.delete", mid)]
    d = page["events"][0]["details"]
    assert d == {"memory_id": mid, "name": "deploy_process", "scope": "global", "scope_id": "", "type": "general",
                 "surface": "rest"}
    assert "SECRET" not in str(page)
    s, page = api.get("/v1/api/admin/audit?action=memory.update")
    assert [e["action"] for e in page["events"]] == ["memory.update"]
    s, p1 = api.get("/v1/api/admin/audit?limit=2")
    assert len(p1["events"]) == 2 and p1["next_cursor"]
    s, p2 = api.get("/v1/api/admin/audit?limit=2&cursor=" + p1["next_cursor"])
    assert [e["action"] for e in p2["events"]] == ["memory.delete"] and p2["next_cursor"] is None


def test_admin_get_patch_delete(alice, api):
    s, b = save(alice)
    mid = b["memory_id"]
    s, g = api.get(f"/v1/api/admin/memories/{mid}")
    assert s == 200 and g["content"] == "Deploy via GitHub Actions."
    s, p = api.patch(f"/v1/api/admin/memories/{mid}", {"description": " New  hook "})
    assert s == 200 and p["description"] == "new hook".replace("new", "New")
    s, p = api.patch(f"/v1/api/admin/memories/{mid}", {"description": "  "})
    assert s == 400 and p["error"] == "description is required and must be non-empty"
    s, d = api.delete(f"/v1/api/admin/memories/{mid}")
    assert (s, d) == (200, {"status": "ok"})
    before = dump()
    s, d = api.delete(f"/v1/api/admin/memories/{mid}")
    assert s == 404 and d["error"] == "Memory not found"
    assert_unchanged(before)  # no audit event for a miss
    s, d = api.get(f"/v1/api/admin/memories/{mid}")
    assert s == 404 and d["error"] == "Memory not found"
    s, d = alice.get(f"/v1/api/admin/memories/{mid}")
    assert s == 403


def test_admin_list_spans_scopes_and_clamps(alice, api):
    save(alice)
    save(alice, name="mine", scope="user")
    s, b = api.get("/v1/api/admin/memories?limit=0")
    assert s == 200 and b["total"] == 1
    s, b = api.get("/v1/api/admin/memories?limit=999")
    assert {(m["scope"], m["scope_id"]) for m in b["memories"]} == {("global", ""), ("user", "alice")}
    s, b = api.get("/v1/api/admin/memories?scope=user")
    assert [m["name"] for m in b["memories"]] == ["mine"]


def test_admin_import_turnstone_rows(api):
    rows = [
        '{"memory_id": "6f1c0e1e-6d0b-4c55-9a37-2e1f0f1d2c3b", "name": "Old Rule", "description": "d", '
        '"type": "feedback", "scope": "coordinator", "scope_id": "alice", "content": "c1", '
        '"created": "2026-03-10T10:00:00", "updated": "2026-03-12T14:30:00", "last_accessed": "2026-03-13T00:00:00", '
        '"access_count": 4}',
        "not json",
        '{"name": "x", "description": "", "content": "c"}',
        '{"name": "g1", "description": "d", "scope": "global", "content": "c2"}',
    ]
    s, b = api.post("/v1/api/admin/memories/import", raw="\n".join(rows),
                    headers={"Content-Type": "application/x-ndjson"})
    assert s == 200, b
    assert b["imported"] == 2 and b["skipped"] == 0
    assert [e["line"] for e in b["errors"]] == [2, 3]
    s, g = api.get("/v1/api/admin/memories/6f1c0e1e-6d0b-4c55-9a37-2e1f0f1d2c3b")
    assert (s == 200 and g["name"] == "old_rule" and g["scope"] == "coordinator"
            and g["created"] == "2026-03-10T10:00:00")
    assert g["access_count"] == 4 and g["last_accessed"] == "2026-03-13T00:00:00"
    s, b = api.post("/v1/api/admin/memories/import", raw=rows[0], headers={"Content-Type": "application/x-ndjson"})
    assert b == {"imported": 0, "skipped": 1, "errors": []}


def test_admin_import_of_a_json_value_that_is_no_row_reports_its_line_and_the_document_takes_it(api):
    from jsonschema import Draft202012Validator

    from chalicelib.api.openapi import document
    before = dump()
    s, b = api.call("POST", "/v1/api/admin/memories/import", raw=b"0.5")
    assert s == 200 and b == {"imported": 0, "skipped": 0,
                              "errors": [{"line": 1, "error": "a line must be a JSON object",
                                          "code": "validation_error"}]}
    assert_unchanged(before)
    body = document()["paths"]["/v1/api/admin/memories/import"]["post"]["requestBody"]
    assert Draft202012Validator(body["content"]["application/json"]["schema"]).is_valid(0.5)


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v1/api/projects", {"name": "0", "active": 0}, "active"),
    ("/v1/api/projects", {"name": "p", "active": "true"}, "active"),
    ("/v1/api/sessions", {"memory_enabled": 1}, "memory_enabled"),
    ("/v1/api/sessions", {"memory_enabled": "no"}, "memory_enabled"),
])
def test_a_flag_must_be_a_json_boolean(alice, path, body, field):
    """0, 1 or a string is not a boolean: 400 naming the field, and nothing written."""
    alice.get("/v1/me")
    before = dump()
    s, b = alice.post(path, body)
    assert s == 400 and b["code"] == "validation_error" and b["details"]["field"] == field, b
    assert_unchanged(before)


def test_a_project_patch_takes_only_a_json_boolean(alice):
    s, p = alice.post("/v1/api/projects", {"name": "p"})
    assert s == 201, p
    s, b = alice.patch(f"/v1/api/projects/{p['project_id']}", {"active": 0})
    assert s == 400 and b["details"]["field"] == "active", b
    s, b = alice.patch(f"/v1/api/projects/{p['project_id']}", {"active": False})
    assert s == 200 and b["active"] is False, b
