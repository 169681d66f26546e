"""Corrections through the HTTP API: a retired memory's text writes nothing unless revived,
``supersedes`` on save retires the named memories in the same transaction or nothing, and
history and audit say why."""

import json

import pytest

B = "/v1/banks/fix"
M = B + "/memories"


def save(api, text, **kw):
    s, b = api.post(M, {"text": text, **kw})
    assert s in (200, 201), b
    return b["memory"]


def state(api, *ids):
    return [api.get(f"{M}/{i}")[1]["memory"] for i in ids]


def live_count(api):
    return api.get(B)[1]["bank"]["memories"]


def test_supersedes_retires_each_named_memory_with_the_save(api):
    a = save(api, "Heron's public launch is planned for June 15, 2026")
    b = save(api, "Heron launches on June 15")
    s, body = api.post(M, {"text": "Heron's public launch moved to July 20, 2026", "supersedes": [a["id"], b["id"]]})
    assert s == 201 and body["created"] is True, body
    new = body["memory"]["id"]
    for old in state(api, a["id"], b["id"]):
        assert old["superseded_by"] == new and old["invalid_at"] and old["revision"] == 1
        revs = api.get(f"{M}/{old['id']}/history")[1]["revisions"]
        assert [r["op"] for r in revs] == ["create", "supersede"]
        assert revs[-1]["why"] == f"superseded by {new} on its save" and "why" not in revs[0]
    assert live_count(api) == 1
    s, events = api.get("/v1/audit?action=memory.supersede")
    assert {e["target"] for e in events["events"]} == {f"fix/{a['id']}", f"fix/{b['id']}"}
    # the retired texts stay retired: saving one again writes nothing
    s, e = api.post(M, {"text": a["text"]})
    assert (s, e["code"], e["details"]["superseded_by"]) == (409, "memory_retired", new)


@pytest.mark.parametrize("bad, status, code", [
    ("pinned", 409, "conflict"),
    ("missing", 404, "memory_not_found"),
    ("retired", 409, "memory_retired"),
    ("malformed", 404, "memory_not_found"),
])
def test_a_supersedes_that_cannot_apply_writes_nothing(api, bad, status, code):
    a = save(api, "The build runs on Jenkins")
    pinned = save(api, "The deploy window is Tuesday", pinned=True)
    gone = save(api, "The office is in Leeds")
    api.delete(f"{M}/{gone['id']}")
    other = {"pinned": pinned["id"], "missing": "fp0000000000000000", "retired": gone["id"],
             "malformed": "not-an-id"}[bad]
    before = state(api, a["id"], pinned["id"], gone["id"])
    n = live_count(api)
    s, e = api.post(M, {"text": "The build runs on GitHub Actions", "supersedes": [a["id"], other]})
    assert (s, e["code"]) == (status, code), e
    assert e["details"]["memory_id"] == other
    assert state(api, a["id"], pinned["id"], gone["id"]) == before  # the first one too: one transaction
    assert live_count(api) == n
    assert api.get(f"{M}?q=GitHub")[1]["memories"] == []  # the new memory was not saved either


def test_supersedes_bounds(api):
    a = save(api, "A memory that stays")
    s, e = api.post(M, {"text": "A memory that stays", "supersedes": [a["id"]]})  # itself
    assert (s, e["code"], e["details"]["field"]) == (400, "validation_error", "supersedes")
    s, e = api.post(M, {"text": "eleven at once", "supersedes": [f"fp{i:016x}" for i in range(11)]})
    assert (s, e["code"]) == (400, "validation_error")
    assert state(api, a["id"])[0]["revision"] == 0 and api.get(f"{M}?q=eleven")[1]["memories"] == []


def test_a_forgotten_text_comes_back_only_with_revive(api):
    a = save(api, "User prefers dark roast")
    api.delete(f"{M}/{a['id']}")
    s, e = api.post(M, {"text": "user prefers  DARK roast"})
    assert (s, e["code"]) == (409, "memory_retired") and e["details"]["superseded_by"] is None
    assert "revive" in e["error"]
    s, b = api.post(M, {"text": "user prefers dark roast", "revive": True})
    assert s == 201 and b["memory"]["id"] == a["id"] and "invalid_at" not in b["memory"]
    ops = [r["op"] for r in api.get(f"{M}/{a['id']}/history")[1]["revisions"]]
    assert ops == ["create", "delete", "revive"]
    # revive on a live or new text is only a save
    s, b = api.post(M, {"text": "user prefers dark roast", "revive": True})
    assert s == 200 and b["memory"]["corroboration"] == 2


def test_a_purged_text_saves_as_new(api):
    a = save(api, "A secret-ish sentence to erase")
    assert api.post(f"{M}/{a['id']}/purge")[0] == 200
    s, b = api.post(M, {"text": "A secret-ish sentence to erase"})
    assert s == 201 and b["memory"]["revision"] == 0


def test_an_import_line_of_a_retired_memory_is_a_line_error(api):
    a = save(api, "Standup is at 9")
    api.delete(f"{M}/{a['id']}")
    lines = "\n".join(json.dumps(x) for x in ({"text": "Standup is at 9"}, {"text": "Standup is at 10"}))
    s, r = api.post(B + "/import", raw=lines, headers={"Content-Type": "application/x-ndjson"})
    assert s == 200 and r["imported"] == 1, r
    assert [(e["line"], e["code"], e["error"].split(":")[0]) for e in r["errors"]] == [
        (1, "memory_retired", "memory_retired")]
    assert state(api, a["id"])[0]["invalid_at"]
    # an export's own later revision of it still restores (a replay, not a save)
    line = dict(state(api, a["id"])[0], revision=5)
    line.pop("invalid_at")
    s, r = api.post(B + "/import", raw=json.dumps(line), headers={"Content-Type": "application/x-ndjson"})
    assert (s, r["imported"], r["errors"]) == (200, 1, []), r
