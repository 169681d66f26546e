"""The console's page and files (headers, redirect, unknown names) and the API it needs:
``GET /v1/status``, the injection budget of rules and preview, the memory list's text filter."""

from __future__ import annotations

import json

import pytest

from chalicelib.api.console import ASSETS, CSP

from .conftest import mint


def _get(client, path, headers=None):
    return client.http.get(path, headers=headers or {})


def test_page_and_every_asset_carry_the_strict_policy(client):
    page = _get(client, "/console")
    assert page.status_code == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    for name, ctype in ASSETS.items():
        r = _get(client, f"/console/{name}")
        assert r.status_code == 200, name
        assert r.headers["Content-Type"] == ctype
        assert r.body
    for r in (page, _get(client, "/console/app.js")):
        assert r.headers["Content-Security-Policy"] == CSP
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["X-Frame-Options"] == "DENY"
        assert r.headers["Referrer-Policy"] == "no-referrer"
    for part in ("script-src 'self'", "frame-ancestors 'none'", "default-src 'none'", "base-uri 'none'"):
        assert part in CSP
    assert "unsafe-inline" not in CSP and "unsafe-eval" not in CSP


def test_every_served_file_exists_and_every_script_is_served():
    from pathlib import Path
    static = Path(__file__).resolve().parents[2] / "chalicelib" / "console"
    assert all((static / name).is_file() for name in ASSETS)
    assert {p.name for p in static.glob("*.js")} <= set(ASSETS)


def test_trailing_slash_redirects_to_the_page_so_relative_urls_hold(client):
    r = _get(client, "/console/")
    assert r.status_code == 301
    assert r.headers["Location"] == "../console"


@pytest.mark.parametrize("name", ["diff.LICENSE", "index.html", "..%2Fapi%2Fconsole.py", "nope.js",
                                  "%3Cscript%3Ealert(1)%3C%2Fscript%3E"])
def test_unknown_or_unlisted_file_is_a_json_404_under_the_console_policy(client, name):
    r = _get(client, f"/console/{name}")
    assert r.status_code == 404
    assert json.loads(r.body)["code"] == "not_found"
    assert r.headers["Content-Security-Policy"] == CSP
    assert r.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(("method", "path", "status"), [("GET", "/console/a/%3Cscript%3E", 404),
                                                      ("POST", "/console", 405), ("DELETE", "/console/app.js", 405)])
def test_unknown_paths_and_methods_under_the_console_keep_its_policy(client, method, path, status):
    r = getattr(client.http, method.lower())(path, headers={})
    assert r.status_code == status
    assert r.headers["Content-Security-Policy"] == CSP
    assert r.headers["X-Content-Type-Options"] == "nosniff"


def _expect_console_policy(r):
    assert r.headers["Content-Security-Policy"] == CSP
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["X-Frame-Options"] == "DENY"
    assert r.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("path", ["/console/app.js%00", "/console/%00", "/console/a%00b.css"])
def test_a_refused_console_path_answers_under_the_console_policy(client, path):
    """Every answer below /console, the edge's 400 for a NUL in the path included."""
    r = _get(client, path)
    assert r.status_code == 400
    assert json.loads(r.body)["code"] == "validation_error"
    _expect_console_policy(r)


def test_any_failure_of_a_console_route_answers_under_the_console_policy(client, monkeypatch):
    """A body over the bound (413) and a misconfigured service (500): the console's headers too."""
    monkeypatch.setenv("CAIRN_MAX_BODY_BYTES", "1024")
    r = client.http.get("/console/app.js", headers={"Content-Type": "text/plain"}, body=b"x" * 2048)
    assert r.status_code == 413 and json.loads(r.body)["code"] == "payload_too_large"
    _expect_console_policy(r)
    monkeypatch.setenv("CAIRN_MAX_BODY_BYTES", "five")
    r = _get(client, "/console")
    assert r.status_code == 500 and json.loads(r.body)["code"] == "misconfigured"
    _expect_console_policy(r)


def test_api_routes_get_no_console_policy(client, token):
    r = _get(client, "/v1/me", {"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and "Content-Security-Policy" not in r.headers
    for path in ("/v1/nope", "/consoles"):  # a 404 elsewhere, even one that starts like the console's
        assert "Content-Security-Policy" not in _get(client, path).headers


def test_status_names_config_versions_and_each_banks_seq(api):
    assert api.post("/v1/banks/alpha/memories", {"text": "The sky is blue."})[0] == 201
    assert api.post("/v1/banks/alpha/memories", {"text": "Grass is green."})[0] == 201
    api.post("/v1/banks", {"name": "beta"})
    status, body = api.get("/v1/status")
    assert status == 200
    assert set(body) == {"config_version", "org_config_version", "banks"}
    banks = {b["name"]: b for b in body["banks"]}
    assert list(banks) == ["alpha", "beta"]
    assert banks["alpha"]["memories"] == 2 and banks["alpha"]["seq"] > banks["beta"]["seq"]
    assert banks["alpha"]["snapshot"] is None
    from chalicelib.search.recall import rebuild  # the CLI's rebuild-indexes: writes a snapshot
    rebuild("default", "alpha")
    snap = {b["name"]: b for b in api.get("/v1/status")[1]["banks"]}["alpha"]["snapshot"]
    assert snap["seq"] == banks["alpha"]["seq"] and snap["key"].endswith(f"/alpha/{snap['seq']}.v2.tar.zst")
    assert snap["at"] > 0
    before = body["org_config_version"]
    assert api.post("/v1/reload", {})[0] == 200
    assert api.get("/v1/status")[1]["org_config_version"] == before + 1


def test_status_needs_admin(api):
    reader = mint(user_id="reader", permissions=["memory:read"])
    status, body = api.get("/v1/status", token=reader)
    assert status == 403 and body["code"] == "forbidden"


def test_rules_list_and_preview_report_budget_use(api, monkeypatch):
    monkeypatch.setenv("CAIRN_MEMORY_MAX_RULE_CHARS", "300")
    api.post("/v1/banks/alpha/memories", {"text": "Deploys happen on Tuesdays."})
    assert api.put("/v1/banks/alpha/rules/a-style", {"content": "Be brief."})[0] in (200, 201)
    status, body = api.get("/v1/banks/alpha/rules")
    assert status == 200
    assert body["budget"] == {"used_bytes": len("Be brief."), "limit_bytes": 300, "truncated": False}
    assert api.put("/v1/banks/alpha/rules/b-long", {"content": "word " * 200})[0] in (200, 201)
    budget = api.get("/v1/banks/alpha/rules")[1]["budget"]
    assert budget["truncated"] is True and budget["used_bytes"] == 300
    status, p = api.post("/v1/banks/alpha/preview", {"query": "when do deploys happen"})
    assert status == 200
    assert p["budget"]["rules"] == budget
    assert p["budget"]["memories"]["used_bytes"] == sum(len(m["memory"]["text"].encode()) for m in p["memories"]) > 0
    assert p["budget"]["memories"]["limit_bytes"] > 0
    assert "trim it in the console's rules view" in p["system_prompt_section"]


def test_memory_list_filters_by_text_ignoring_case(api):
    for text in ("Alice likes green tea.", "Bob prefers coffee.", "The TEA room is on floor 3.", "Carol: no tea."):
        assert api.post("/v1/banks/alpha/memories", {"text": text})[0] == 201
    status, body = api.get("/v1/banks/alpha/memories?q=tea&limit=2")
    assert status == 200
    assert body["total"] is None and len(body["memories"]) == 2 and body["next_cursor"]  # matches are not counted
    rest = api.get(f"/v1/banks/alpha/memories?q=tea&limit=2&cursor={body['next_cursor']}")[1]
    texts = {m["text"] for m in body["memories"] + rest["memories"]}
    assert texts == {"Alice likes green tea.", "The TEA room is on floor 3.", "Carol: no tea."}
    assert rest["next_cursor"] is None
    assert api.get("/v1/banks/alpha/memories?q=zebra")[1] == {"memories": [], "total": None, "next_cursor": None}


def test_recall_contributions_sum_to_the_score_with_every_signal_on(api, monkeypatch):
    """Generated banks and queries, feedback, time and neighbourhood on: each hit's
    ``contributions`` name exactly its ``signals`` and add up to its ``score`` (the console draws
    them as the score's bars)."""
    import random
    monkeypatch.setenv("CAIRN_MEMORY_W_PRF", "0.5")
    rnd = random.Random(7)
    words = ["tea", "coffee", "kettle", "deploy", "alice", "bob", "monday", "garden", "report", "may"]
    for i in range(40):
        text = " ".join(rnd.choice(words) for _ in range(rnd.randint(3, 8))) + f" note {i}."
        body = {"text": text, "entities": rnd.sample(["alice", "bob", "user"], rnd.randint(0, 2)),
                "pinned": rnd.random() < 0.2, "session_id": f"s{i % 4}"}
        assert api.post("/v1/banks/alpha/memories", body)[0] == 201
        if rnd.random() < 0.3:  # corroboration above 0
            assert api.post("/v1/banks/alpha/memories", {"text": text})[0] == 200
    seen: set[str] = set()
    for _ in range(12):
        query = rnd.choice(["when did ", "what about ", "I like ", ""]) + " ".join(rnd.sample(words, 3))
        status, body = api.post("/v1/banks/alpha/recall", {"query": query, "limit": 20})
        assert status == 200
        for hit in body["memories"]:
            signals, parts = hit["signals"], hit["contributions"]
            assert list(parts) == list(signals)
            assert sum(parts.values()) == pytest.approx(hit["score"], rel=1e-9, abs=1e-12)
            assert parts["recency"] <= 0
            seen.update(s for s, v in parts.items() if v)
    assert seen >= {"bm25", "entity", "corroboration", "pinned", "recency", "prf", "time", "neighbour"}, seen
