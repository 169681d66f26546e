"""One rule read and deleted, a bank's description changed, the bank listing a page at a time:
each refuses bad input with a stable code and writes nothing then."""

from __future__ import annotations

import base64
import json

import pytest

from chalicelib.banks.service import BANKS_PAGE_DEFAULT
from tests.api.conftest import mint
from tests.api.lanes import word
from tests.api.state import assert_unchanged, dump

R = "/v1/banks/main/rules"

DEFAULT_SETTINGS = {"on_conflict": "flag", "match_threshold": None, "ambient_floor": None, "feed": None}
DEFAULTS = {"match_threshold": 0.35, "ambient_floor": True}  # what the settings left null stand for


def _audit(action: str) -> list:
    from chalicelib.storage.tables import AuditModel
    return [e for e in AuditModel.query("default") if e.action == action]


def _bank_row(name: str = "main"):
    from chalicelib.core import store
    return store.get_bank_row("default", name)


@pytest.fixture
def ruled(api):
    """Bank ``main`` with two rules and a memory."""
    assert api.post("/v1/banks/main/memories", {"text": "User prefers short answers"})[0] == 201
    assert api.put(f"{R}/style", {"content": "# Style\n\nBe brief."})[0] == 200
    assert api.put(f"{R}/safety", {"content": "Never share keys."})[0] == 200
    return api


# --- one rule -------------------------------------------------------------------------------

def test_get_rule_is_the_listing_entry(ruled):
    api = ruled
    listing = api.get(R)[1]["rules"]
    for rule in listing:
        s, b = api.get(f"{R}/{rule['name']}")
        assert (s, b) == (200, {"rule": rule})
    assert api.get(f"{R}/style")[1]["rule"]["content"] == "# Style\n\nBe brief."


@pytest.mark.parametrize("path,status,code", [
    (f"{R}/absent", 404, "rule_not_found"),
    ("/v1/banks/nobank/rules/style", 404, "bank_not_found"),
    (f"{R}/Bad.Name", 400, "invalid_name"),
    (f"{R}/style.md", 400, "invalid_name"),
    ("/v1/banks/Main/rules/style", 400, "invalid_name"),
])
def test_get_rule_errors(ruled, path, status, code):
    before = dump()
    s, e = ruled.get(path)
    assert (s, e["code"]) == (status, code), e
    assert_unchanged(before)


def test_delete_rule_recounts_and_audits(ruled):
    api = ruled
    assert api.get("/v1/banks/main")[1]["bank"]["rules"] == 2
    version = int(_bank_row().rules_version)
    s, b = api.delete(f"{R}/style")
    assert (s, b) == (200, {"exists": False})
    assert [r["name"] for r in api.get(R)[1]["rules"]] == ["safety"]
    assert api.get("/v1/banks/main")[1]["bank"]["rules"] == 1
    assert int(_bank_row().rules_version) == version + 1  # caches reload the rules
    assert api.get(f"{R}/style")[1]["code"] == "rule_not_found"
    [event] = _audit("rule.delete")
    assert (event.target, event.actor, event.details.as_dict()) == ("main/style", "person:admin", {"bank": "main"})
    assert {e.target for e in _audit("rule.set")} == {"main/style", "main/safety"}  # a put is audited too
    # the preview injects what is left
    section = api.post("/v1/banks/main/preview", {"query": "answers"})[1]["system_prompt_section"]
    assert "Never share keys." in section and "Be brief." not in section


@pytest.mark.parametrize("path,status,code", [
    (f"{R}/absent", 404, "rule_not_found"),
    ("/v1/banks/nobank/rules/style", 404, "bank_not_found"),  # never created on first use
    (f"{R}/Bad.Name", 400, "invalid_name"),
    (f"{R}/-style", 400, "invalid_name"),
    ("/v1/banks/ma%20in/rules/style", 400, "invalid_name"),
])
def test_delete_rule_errors_write_nothing(ruled, path, status, code):
    before = dump()
    s, e = ruled.delete(path)
    assert (s, e["code"]) == (status, code), e
    assert_unchanged(before)


def test_delete_rule_twice_is_404_the_second_time(ruled):
    assert ruled.delete(f"{R}/safety")[0] == 200
    before = dump()
    s, e = ruled.delete(f"{R}/safety")
    assert (s, e["code"]) == (404, "rule_not_found")
    assert_unchanged(before)


def test_rule_routes_hold_permissions_and_allow_lists(ruled):
    api = ruled
    reader = mint(user_id="rita", permissions=["memory:read"])
    confined = mint(user_id="dana", permissions=["memory:read", "memory:write"], banks=["beta"])
    assert api.get(f"{R}/style", token=reader)[0] == 200
    before = dump()
    for token, method in ((reader, "DELETE"), (confined, "DELETE"), (confined, "GET")):
        s, e = api.call(method, f"{R}/style", token=token)
        assert (s, e["code"]) == (403, "forbidden"), (method, e)
    assert_unchanged(before)
    assert api.put("/v1/banks/beta/rules/own", {"content": "Beta rule."}, token=confined)[0] == 200
    assert api.get("/v1/banks/beta/rules/own", token=confined)[1]["rule"]["content"] == "Beta rule."
    assert api.delete("/v1/banks/beta/rules/own", token=confined)[0] == 200


def test_another_orgs_rule_is_not_found(ruled):
    other = mint(org="globex")
    before = dump()
    for method in ("GET", "DELETE"):
        s, e = ruled.call(method, f"{R}/style", token=other)
        assert (s, e["code"]) == (404, "bank_not_found")
    assert_unchanged(before)


# --- a bank's description -------------------------------------------------------------------

def test_patch_bank_description(api):
    for text in ("User prefers tabs", "User prefers tea", "User likes long walks"):
        assert api.post("/v1/banks/main/memories", {"text": text})[0] == 201
    api.put(f"{R}/style", {"content": "Be brief."})
    inc = _bank_row().incarnation
    s, b = api.patch("/v1/banks/main", {"description": "My agent's\nmain bank."})
    assert s == 200, b
    assert b == {"bank": {"name": "main", "description": "My agent's\nmain bank.", "memories": 3, "pinned": 0,
                          "rules": 1,
                          "settings": DEFAULT_SETTINGS, "defaults": DEFAULTS}}
    assert api.get("/v1/banks/main")[1] == b
    assert _bank_row().incarnation == inc
    [event] = _audit("bank.update")
    assert (event.target, event.details.as_dict()) == ("main", {"fields": ["description"]})
    assert api.patch("/v1/banks/main", {"description": ""})[1]["bank"]["description"] == ""
    # the memories stay where they were
    assert api.post("/v1/banks/main/recall", {"query": "tea"})[1]["memories"][0]["memory"]["text"] == \
        "User prefers tea"


@pytest.mark.parametrize("body,field", [
    ({}, "body"),
    ({"description": 7}, "description"),
    ({"description": None}, "body"),
    ({"description": "x" * 1001}, "description"),
    ({"description": "nul \u0000 here"}, "description"),
    ({"description": "ok", "name": "renamed"}, "name"),
    ({"settings": {}}, "body"),
    ({"settings": None}, "body"),
    ({"settings": "supersede"}, "settings"),
    ({"settings": {"on_conflict": "merge"}}, "settings.on_conflict"),
    ({"settings": {"on_conflict": None}}, "settings.on_conflict"),
    ({"settings": {"match_threshold": 1.5}}, "settings.match_threshold"),
    ({"settings": {"match_threshold": "0.5"}}, "settings.match_threshold"),
    ({"settings": {"feed": "sometimes"}}, "settings.feed"),
    ({"settings": {"feed": "Hooks"}}, "settings.feed"),
    ({"settings": {"feed": ["hooks", "tools"]}}, "settings.feed"),
    ({"description": "ok", "settings": {"on_conflict": "supersede", "auto": True}}, "settings.auto"),
])
def test_patch_bank_bad_input_writes_nothing(api, body, field):
    api.post("/v1/banks", {"name": "main", "description": "first"})
    before = dump()
    s, e = api.patch("/v1/banks/main", body)
    assert (s, e["code"], e["details"]["field"]) == (400, "validation_error", field), e
    assert_unchanged(before)


def test_patch_bank_settings(api):
    api.post("/v1/banks", {"name": "main", "description": "first"})
    s, b = api.patch("/v1/banks/main", {"settings": {"on_conflict": "supersede"}})
    assert s == 200 and b["bank"]["settings"] == {**DEFAULT_SETTINGS, "on_conflict": "supersede"}, b
    s, b = api.patch("/v1/banks/main", {"settings": {"match_threshold": 0.25}})  # the other field stays
    assert b["bank"]["settings"] == {**DEFAULT_SETTINGS, "on_conflict": "supersede", "match_threshold": 0.25}
    assert b["bank"]["description"] == "first" and api.get("/v1/banks/main")[1] == b
    assert api.get("/v1/banks")[1]["banks"][0]["settings"] == b["bank"]["settings"]
    events = _audit("bank.update")
    assert sorted(tuple(e.details.as_dict()["fields"]) for e in events) == [
        ("settings.match_threshold",), ("settings.on_conflict",)]
    s, b = api.patch("/v1/banks/main", {"settings": DEFAULT_SETTINGS})
    assert b["bank"]["settings"] == DEFAULT_SETTINGS


def test_patch_bank_feed_is_kept_cleared_and_audited(api):
    api.post("/v1/banks", {"name": "main"})
    s, b = api.patch("/v1/banks/main", {"settings": {"feed": "tools"}})
    assert s == 200 and b["bank"]["settings"] == {**DEFAULT_SETTINGS, "feed": "tools"}, b
    s, b = api.patch("/v1/banks/main", {"settings": {"on_conflict": "supersede"}})  # feed stays
    assert b["bank"]["settings"] == {**DEFAULT_SETTINGS, "feed": "tools", "on_conflict": "supersede"}
    s, b = api.patch("/v1/banks/main", {"settings": {"feed": None}})  # null: not stated again
    assert s == 200 and b["bank"]["settings"] == {**DEFAULT_SETTINGS, "on_conflict": "supersede"}
    assert api.get("/v1/banks/main")[1] == b
    assert [e.details.as_dict()["fields"] for e in _audit("bank.update") if "settings.feed" in
            e.details.as_dict()["fields"]] == [["settings.feed"], ["settings.feed"]]


def test_a_null_setting_restores_the_default_the_bank_names(api, monkeypatch):
    api.post("/v1/banks", {"name": "main"})
    s, b = api.patch("/v1/banks/main", {"settings": {"match_threshold": 0.6, "ambient_floor": False}})
    assert s == 200 and b["bank"]["settings"] == {**DEFAULT_SETTINGS, "match_threshold": 0.6, "ambient_floor": False}
    s, b = api.patch("/v1/banks/main", {"settings": {"match_threshold": None, "ambient_floor": None}})
    assert s == 200 and b["bank"]["settings"] == DEFAULT_SETTINGS and b["bank"]["defaults"] == DEFAULTS
    monkeypatch.setenv("CAIRN_MEMORY_MATCH_THRESHOLD", "0.5")  # the defaults are the running tuning's
    assert api.get("/v1/banks/main")[1]["bank"]["defaults"] == {**DEFAULTS, "match_threshold": 0.5}


def test_patch_bank_refusals_write_nothing(api):
    api.post("/v1/banks", {"name": "main", "description": "first"})
    reader = mint(user_id="rita", permissions=["memory:read"])
    confined = mint(user_id="dana", permissions=["memory:write"], banks=["beta"])
    other = mint(org="globex")
    before = dump()
    for path, token, status, code in (("/v1/banks/nobank", None, 404, "bank_not_found"),
                                      ("/v1/banks/Main", None, 400, "invalid_name"),
                                      ("/v1/banks/main", reader, 403, "forbidden"),
                                      ("/v1/banks/main", confined, 403, "forbidden"),
                                      ("/v1/banks/main", other, 404, "bank_not_found")):
        s, e = api.patch(path, {"description": "changed"}, token=token)
        assert (s, e["code"]) == (status, code), (path, e)
    s, e = api.call("PATCH", "/v1/banks/main", raw="{", headers={"Content-Type": "application/json"})
    assert (s, e["code"]) == (400, "invalid_json")
    assert_unchanged(before)
    assert api.get("/v1/banks/main")[1]["bank"]["description"] == "first"


# --- the bank listing, a page at a time ------------------------------------------------------

def _names(api, token=None, limit=None):
    names, cursor, pages = [], None, 0
    while True:
        q = [f"limit={limit}"] if limit else []
        q += [f"cursor={cursor}"] if cursor else []
        s, b = api.get("/v1/banks" + ("?" + "&".join(q) if q else ""), token=token)
        assert s == 200, b
        names += [x["name"] for x in b["banks"]]
        pages += 1
        cursor = b.get("next_cursor")
        if cursor is None:
            assert set(b) == {"banks"}  # the last page: the shape it always had
            return names, pages
        assert set(b) == {"banks", "next_cursor"} and len(b["banks"]) == (limit or BANKS_PAGE_DEFAULT)


def test_list_banks_pages_by_name(api):
    for name in ("delta", "alpha", "echo", "charlie", "bravo"):
        api.post("/v1/banks", {"name": name})
    api.post("/v1/banks/echo/memories", {"text": "Echo remembers this"})
    assert _names(api) == (["alpha", "bravo", "charlie", "delta", "echo"], 1)
    assert _names(api, limit=2) == (["alpha", "bravo", "charlie", "delta", "echo"], 3)
    assert _names(api, limit=5) == (["alpha", "bravo", "charlie", "delta", "echo"], 1)
    _s, b = api.get("/v1/banks?limit=4")
    last = api.get(f"/v1/banks?limit=4&cursor={b['next_cursor']}")[1]
    assert last == {"banks": [{"name": "echo", "description": "", "memories": 1, "pinned": 0, "rules": 0,
                                  "settings": DEFAULT_SETTINGS, "defaults": DEFAULTS}]}
    confined = mint(user_id="dana", permissions=["memory:read"], banks=["echo", "bravo", "zulu"])
    assert _names(api, token=confined, limit=1) == (["bravo", "echo"], 2)


def test_list_banks_bad_parameters_are_400(api):
    api.post("/v1/banks", {"name": "alpha"})
    api.post("/v1/banks", {"name": "bravo"})
    api.delete("/v1/banks/bravo")
    cursor = api.get("/v1/banks?limit=1")[1].get("next_cursor")
    assert cursor is None  # one live bank
    api.post("/v1/banks", {"name": "charlie"})
    cursor = api.get("/v1/banks?limit=1")[1]["next_cursor"]
    for text in ("First memory here", "Second memory here"):
        api.post("/v1/banks/alpha/memories", {"text": text})
    mem_cursor = api.get("/v1/banks/alpha/memories?limit=1")[1]["next_cursor"]
    from chalicelib.core.store import encode_cursor
    forged = {"namespace": encode_cursor("banks", "default", {"after": "!"}),
              "trash": encode_cursor("banks", "default", {"after": ".trash/"}),
              "empty": base64.urlsafe_b64encode(json.dumps({"r": "banks"}).encode()).decode()}
    other = mint(org="globex")
    before = dump()
    for query, token, field in (("limit=0", None, "limit"), ("limit=201", None, "limit"), ("limit=ten", None, "limit"),
                                ("limit=-1", None, "limit"), (f"cursor={mem_cursor}", None, "cursor"),
                                (f"cursor={cursor}", other, "cursor"), ("cursor=%21%21", None, "cursor"),
                                *((f"cursor={c}", None, "cursor") for c in forged.values()),
                                (f"trashed=true&cursor={cursor}", None, "cursor"),
                                ("trashed=true&limit=5", None, "limit"), ("trashed=maybe", None, "trashed")):
        s, e = api.get(f"/v1/banks?{query}", token=token)
        assert (s, e["code"], e["details"]["field"]) == (400, "validation_error", field), (query, e)
    assert_unchanged(before)
    assert [b["name"] for b in api.get("/v1/banks?trashed=true")[1]["banks"]] == ["bravo"]


def test_list_banks_pages_past_a_thousand_banks(api):
    """1,050 banks of one org seeded in-process (the one write path, 90 creations a transaction)
    beside another org's banks, a trashed bank and structured-memory namespaces: every live bank of
    the org appears exactly once, in name order, with its counters, and nothing else does."""
    from chalicelib.core import store

    def seed(org: str, names: list[str]) -> None:
        for i in range(0, len(names), 90):
            store.write(org, lambda btx, chunk=names[i:i + 90]: [btx.create(n) for n in chunk])

    ours = [f"bank-{i:05d}" for i in range(1050)]
    seed("default", ours)
    seed("globex", [f"bank-{i:05d}" for i in range(0, 1050, 7)] + ["zz-globex-only", "000-globex"])
    api.post("/v1/banks/bank-00500/memories", {"text": "A memory in bank five hundred"})  # lane counters
    api.post("/v1/banks/zz-trashed/memories", {"text": "A memory in a bank about to be trashed"})
    api.delete("/v1/banks/zz-trashed")
    api.post("/v1/api/memories", {"name": "deploy", "description": "d", "content": "a structured memory"})
    assert any(n.startswith("!scope/") for n in store.bank_names("default", "!"))

    for limit, pages in ((200, 6), (97, 11), (None, 11)):
        names, n = _names(api, limit=limit)
        assert n == pages
        assert names == ours  # each exactly once, in order; no trash, namespace or other org's bank
    _s, b = api.get("/v1/banks?limit=1&cursor=" + store.encode_cursor("banks", "default", {"after": "bank-00499"}))
    assert b["banks"] == [{"name": "bank-00500", "description": "", "memories": 1, "pinned": 0,
                          "rules": 0, "settings": DEFAULT_SETTINGS, "defaults": DEFAULTS}]


def test_description_changes_race_saves_and_rule_deletes_without_losing_a_count(api):
    """Description changes and rule deletions meet concurrent saves on the bank row (lane 0):
    lost races retry, and no counter, memory or rule count is lost."""
    import threading

    from chalicelib.banks import rules, service
    from chalicelib.banks.records import BankPatch, BankSettings, SaveRequest
    from chalicelib.core.store import get_bank_head

    api.post("/v1/banks", {"name": "race"})
    for i in range(4):
        assert api.put(f"/v1/banks/race/rules/r{i}", {"content": f"Rule {i}."})[0] == 200
    texts = [f"Concurrent fact {word(i)} about lanes" for i in range(12)]  # a number would be a conflict
    jobs = [lambda t=t: service.save_memory("default", "race", SaveRequest(text=t), actor="t") for t in texts]
    jobs += [lambda i=i: service.update_bank("default", "race", BankPatch(description=f"description {i}"), actor="t")
             for i in range(4)]
    # two settings changes of different fields: each merges into what it read, neither is lost
    jobs += [lambda: service.update_bank("default", "race", BankPatch(settings=BankSettings(on_conflict="supersede")),
                                         actor="t"),
             lambda: service.update_bank("default", "race", BankPatch(settings=BankSettings(match_threshold=0.5)),
                                         actor="t")]
    jobs += [lambda i=i: rules.delete_rule("default", "race", f"r{i}", actor="t") for i in range(3)]
    barrier, errors = threading.Barrier(len(jobs)), []

    def run(fn):
        try:
            barrier.wait()
            fn()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    head = get_bank_head("default", "race")
    assert (head.memories, head.records, head.clock.total) == (12, 12, 12)
    bank = api.get("/v1/banks/race")[1]["bank"]
    assert bank["description"] in {f"description {i}" for i in range(4)}
    assert (bank["memories"], bank["rules"]) == (12, 1)
    assert bank["settings"] == {**DEFAULT_SETTINGS, "on_conflict": "supersede", "match_threshold": 0.5}
    assert len(_audit("bank.update")) == 6 and len(_audit("rule.delete")) == 3


@pytest.mark.parametrize("path,names", [("/v1/banks", ("limit", "trashed")),
                                        ("/v1/banks/{bank}/memories", ("limit", "include_superseded")),
                                        ("/v1/banks/{bank}/export", ("history",))])
def test_empty_query_values_are_defaults_and_the_document_allows_them(api, path, names):
    """An empty ``limit=`` or boolean reads as its default (200), so the document's parameter
    schemas must accept ``""`` too: a fuzzer counted the 200 as a schema-violating request accepted."""
    from jsonschema import Draft202012Validator

    from chalicelib.api.openapi import document
    assert api.post("/v1/banks/main/memories", {"text": "The sky is blue."})[0] == 201
    status, _ = api.get(path.replace("{bank}", "main") + "?" + "&".join(f"{n}=" for n in names))
    assert status == 200
    params = {p["name"]: p["schema"] for p in document()["paths"][path]["get"]["parameters"] if p["in"] == "query"}
    for name in names:
        assert Draft202012Validator(params[name]).is_valid(""), name
