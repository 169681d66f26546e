"""No token reaches past its grant: token administration within the administrator's own grant,
bank allow-lists on every route, per-org reload, no fall-back to a broader scope, and ``as_of``
recall as an audit tool. Every refusal is a 403/409 with a stable code and leaves the backend
unchanged (``tests.state``)."""

from __future__ import annotations

import pytest

from chalicelib.auth.principal import PERMISSIONS
from chalicelib.auth.tokens import token_id_for
from tests.api.conftest import Api, mint
from tests.api.state import assert_unchanged, dump

T = "/v1/api/admin/tokens"
FAR = 4_102_444_800_000  # 2100-01-01 in ms


@pytest.fixture(autouse=True)
def _fresh_caches(aws):
    from chalicelib import tuning
    from chalicelib.inject import rules_cache
    from chalicelib.search import index
    rules_cache.drop()
    tuning.set_config_version(0)
    tuning._org_versions.clear()
    index.reset_default()
    yield
    rules_cache.drop()
    tuning.set_config_version(0)
    tuning._org_versions.clear()


def refused(api, method, path, body=None, *, token, status=403, code="forbidden", **kw):
    """Call, assert the refusal's status and code, and that nothing was written; returns the body."""
    before = dump()
    s, b = api.call(method, path, body, token=token, **kw)
    assert (s, (b or {}).get("code")) == (status, code), (method, path, s, b)
    assert b["error"], b
    assert_unchanged(before)
    return b


# --- token administration ---------------------------------------------------------------------

@pytest.fixture
def confined(aws):
    """A token administrator confined to bank ``beta`` (an api_key, as it could have been minted)."""
    return mint(kind="api_key", permissions=["admin.tokens", "memory:read", "memory:write"], banks=["beta"])


@pytest.mark.parametrize("body, why", [
    ({"kind": "person", "user_id": "victim", "permissions": ["memory:read"], "banks": ["beta"]}, "api_key"),
    ({"kind": "service", "user_id": "svc", "permissions": ["memory:read"], "banks": ["beta"]}, "api_key"),
    ({"kind": "api_key", "permissions": ["memory:read"]}, "non-empty"),
    ({"kind": "api_key", "permissions": ["memory:read"], "banks": []}, "non-empty"),
    ({"kind": "api_key", "permissions": ["memory:read"], "banks": ["beta", "alpha"]}, "allow-list"),
    ({"kind": "api_key", "permissions": ["admin.memories"], "banks": ["beta"]}, "do not hold"),
])
def test_confined_admin_mints_only_api_keys_within_its_grant(api, confined, body, why):
    """The reproduced defect: a token administrator confined to one bank minted a person token for
    any user_id (and with it read that user's private memories)."""
    b = refused(api, "POST", T, body, token=confined)
    assert why in b["error"], b


def test_confined_admin_mints_within_its_grant(api, confined):
    s, b = api.post(T, {"kind": "api_key", "permissions": ["memory:read"], "banks": ["beta"]}, token=confined)
    assert s == 201 and b["banks"] == ["beta"] and b["permissions"] == ["memory:read"], b
    assert api.post("/v1/banks/beta/memories", {"text": "beta holds this"})[0] == 201
    assert api.get("/v1/banks/beta/memories", token=b["token"])[0] == 200


def test_confined_admin_revokes_only_what_it_could_have_minted(api, token, confined):
    """The reproduced defect: it could revoke unscoped tokens, the org's root admin token included."""
    victims = {
        "root admin": token,
        "unscoped api_key": mint(kind="api_key", permissions=["memory:read"]),
        "person in its bank": mint(user_id="bob", permissions=["memory:read"], banks=["beta"]),
        "service in its bank": mint(kind="service", user_id="svc", permissions=["memory:read"], banks=["beta"]),
        "wider permissions": mint(kind="api_key", permissions=["admin.memories"], banks=["beta"]),
        "other bank": mint(kind="api_key", permissions=["memory:read"], banks=["alpha"]),
        "its bank and another": mint(kind="api_key", permissions=["memory:read"], banks=["beta", "alpha"]),
    }
    for label, secret in victims.items():
        refused(api, "DELETE", f"{T}/{token_id_for(secret)}", token=confined)
        assert api.get("/v1/banks", token=secret)[0] != 401, label  # still authenticates
    mine = mint(kind="api_key", permissions=["memory:read"], banks=["beta"])
    s, b = api.delete(f"{T}/{token_id_for(mine)}", token=confined)
    assert s == 200 and b["token"]["revoked_at"], b
    assert api.get("/v1/banks", token=mine)[0] == 401


def test_confined_admin_lists_only_what_it_manages(api, token, confined):
    mine = mint(kind="api_key", permissions=["memory:read"], banks=["beta"])
    mint(kind="api_key", permissions=["memory:read"], banks=["alpha"], label="alpha-canary")
    s, b = api.get(T, token=confined)
    assert s == 200
    assert {t["token_id"] for t in b["tokens"]} == {token_id_for(confined), token_id_for(mine)}
    assert "alpha" not in str(b)  # other banks' names stay hidden
    s, b = api.get(T)  # the org-wide administrator sees every token
    assert token_id_for(token) in {t["token_id"] for t in b["tokens"]} and len(b["tokens"]) == 4


def test_no_token_mints_permissions_it_lacks(api):
    """Privilege escalation: an org-wide token administrator is bounded by its own permissions too."""
    admin = mint(user_id="tokadmin", permissions=["admin.tokens", "memory:read"])
    for perms in (["admin.memories"], ["service"], ["memory:write"], ["context:admin"]):
        b = refused(api, "POST", T, {"kind": "person", "user_id": "bob", "permissions": perms}, token=admin)
        assert b["details"]["permissions"] == perms
    s, b = api.post(T, {"kind": "person", "user_id": "bob", "permissions": ["memory:read"]}, token=admin)
    assert s == 201 and b["user_id"] == "bob"  # org-wide: any user of its org, as before


def test_expiring_token_cannot_mint_one_that_outlives_it(api):
    admin = mint(user_id="temp", permissions=["admin.tokens", "memory:read"], expires_at=FAR - 10_000)
    for body in ({"kind": "api_key", "permissions": ["memory:read"]},
                 {"kind": "api_key", "permissions": ["memory:read"], "expires_at": FAR}):
        b = refused(api, "POST", T, body, token=admin)
        assert b["details"] == {"field": "expires_at", "limit": FAR - 10_000}
    s, b = api.post(T, {"kind": "api_key", "permissions": ["memory:read"], "expires_at": FAR - 20_000}, token=admin)
    assert s == 201, b


# --- bank allow-lists on every route ------------------------------------------------------------

def _structured_world(api):
    """A global and a user-scope structured memory, a workstream, a project and a session."""
    assert api.post("/v1/api/memories", {"name": "canary", "content": "global canary text",
                                         "description": "d", "scope": "global"})[0] == 201
    assert api.post("/v1/api/memories", {"name": "mine", "content": "private canary text", "description": "d",
                                         "scope": "user", "scope_id": "admin"})[0] == 201
    assert api.post("/v1/api/workstreams", {"workstream_id": "ws1", "title": "W"})[0] == 201
    assert api.post("/v1/api/projects", {"project_id": "p1", "name": "P"})[0] == 201
    s, b = api.post("/v1/api/sessions", {"kind": "interactive"})
    assert s == 201
    s, m = api.get("/v1/api/admin/memories")
    return b["session_id"], m["memories"][0]["memory_id"]


def test_bank_confined_token_is_refused_outside_the_bank_routes(api):
    """The reproduced defect: a token limited to bank ``beta`` read the org's global structured
    memories (and, with admin.memories, every user's), and could drop any session's cursor."""
    sid, mid = _structured_world(api)
    assert api.post("/v1/banks/beta/memories", {"text": "beta is reachable"})[0] == 201
    limited = mint(user_id="admin", permissions=list(PERMISSIONS), banks=["beta"])
    routes = [
        ("GET", "/v1/api/memories", None),
        ("POST", "/v1/api/memories", {"name": "x", "content": "y", "description": "z"}),
        ("POST", "/v1/api/memories/search", {"query": "canary"}),
        ("GET", "/v1/api/memories/canary", None),
        ("DELETE", "/v1/api/memories/canary", None),
        ("POST", "/v1/api/workstreams", {"workstream_id": "ws2", "title": "W"}),
        ("POST", "/v1/api/projects", {"project_id": "p2", "name": "P"}),
        ("PATCH", "/v1/api/projects/p1", {"active": False}),
        ("PUT", "/v1/api/projects/p1/members/bob", {"access": "read"}),
        ("POST", "/v1/api/sessions", {"kind": "interactive"}),
        ("POST", f"/v1/api/sessions/{sid}/memory", {"action": "list"}),
        ("POST", f"/v1/api/sessions/{sid}/context", {"messages": [{"role": "user", "content": "canary"}]}),
        ("DELETE", f"/v1/api/sessions/{sid}", None),
        ("GET", "/v1/api/admin/memories", None),
        ("GET", "/v1/api/admin/memories/search?query=canary", None),
        ("GET", f"/v1/api/admin/memories/{mid}", None),
        ("PATCH", f"/v1/api/admin/memories/{mid}", {"description": "changed"}),
        ("DELETE", f"/v1/api/admin/memories/{mid}", None),
        ("GET", "/v1/api/admin/audit", None),
        ("POST", "/v1/hooks/session-deleted", {"session_id": "s1"}),
        ("POST", "/v1/reload", None),
        ("GET", "/v1/doctor", None),
        ("GET", "/api/v1/context/memory/entries", None),
    ]
    for method, path, body in routes:
        b = refused(api, method, path, body, token=limited)
        assert "canary" not in str(b) and b["details"] == {"banks": ["beta"]}
    refused(api, "POST", "/v1/api/admin/memories/import", raw='{"name": "n", "content": "c", "description": "d"}',
            headers={"Content-Type": "application/x-ndjson"}, token=limited)
    # its own bank still works
    s, b = api.post("/v1/banks/beta/recall", {"query": "beta"}, token=limited)
    assert s == 200 and b["memories"], b


def test_session_deleted_hook_refuses_a_bank_confined_token(api):
    """The reproduced defect: the hook dropped any session's extraction cursor (which spans every
    bank the session's turns named) for a token confined to one bank."""
    from chalicelib.extraction.job import get_cursor, session_key
    from chalicelib.storage.tables import ExtractionModel, bind
    bind()
    ExtractionModel(session_key=session_key("default", "s1"), sk="cursor", org_id="default", session_id="s1",
                    position=4, turns=["t1"], updated_at=1).save()
    limited = mint(permissions=["memory:read", "memory:write"], banks=["beta"])
    refused(api, "POST", "/v1/hooks/session-deleted", {"session_id": "s1"}, token=limited)
    assert get_cursor("default", "s1") is not None
    s, b = api.post("/v1/hooks/session-deleted", {"session_id": "s1"})
    assert s == 200 and b == {"session_id": "s1", "dropped": True}


# --- reload is per org ----------------------------------------------------------------------------

def _cached(org):
    from chalicelib.search import index
    return sorted(k[1] for k in index.active_cache().entries if k[0] == org)


def test_reload_drops_only_the_callers_org(client):
    """The reproduced defect: ``POST /v1/reload`` bumped one counter shared by every org, so any
    org's admin made every container drop every org's caches."""
    from chalicelib.inject import reload
    a, b = Api(client, mint(org="a")), Api(client, mint(org="b"))
    for api in (a, b):
        assert api.post("/v1/banks/main/memories", {"text": "Alice prefers green tea"})[0] == 201
        assert api.put("/v1/banks/main/rules/style", {"content": "Answer briefly."})[0] == 200
        assert api.post("/v1/banks/main/preview", {"query": "tea"})[0] == 200
    assert _cached("a") == _cached("b") == ["main"]
    s, body = b.post("/v1/reload")
    assert s == 200 and body == {"config_version": 1, "banks": 1}, body
    assert _cached("a") == ["main"] and _cached("b") == []
    assert reload.read_version("b") == 1 and reload.read_version("a") == 0 and reload.read_version() == 0
    assert reload.read_last_good() is not None  # the last good tuning stays on the global row
    s, banks = b.get("/v1/banks")
    assert [x["name"] for x in banks["banks"]] == ["main"]  # the version row is no bank
    from chalicelib.storage.tables import BankModel
    global_row = BankModel.get("_system", "!config", consistent_read=True).attribute_values
    assert a.post("/v1/reload")[1] == {"config_version": 1, "banks": 1}
    assert reload.read_version() == 0 and reload.read_version("b") == 1
    # another org's reload leaves the global row alone while the tuning is the same
    assert BankModel.get("_system", "!config", consistent_read=True).attribute_values == global_row


def test_another_containers_org_reload_reaches_only_that_org(client, monkeypatch):
    """Another container's reload of org b: org a's next turn reads nothing from S3, org b's
    re-lists its rules and reloads its index, both through the recall's one BatchGetItem."""
    from chalicelib.inject import reload
    from chalicelib.storage import blobs
    a, b = Api(client, mint(org="a")), Api(client, mint(org="b"))
    for api in (a, b):
        assert api.post("/v1/banks/main/memories", {"text": "Alice prefers green tea"})[0] == 201
        assert api.put("/v1/banks/main/rules/style", {"content": "Answer briefly."})[0] == 200
        assert api.post("/v1/banks/main/preview", {"query": "tea"})[0] == 200
    calls = []
    real = blobs.list_objects
    monkeypatch.setattr(blobs, "list_objects", lambda prefix: calls.append(prefix) or real(prefix))
    reload.bump_version(org_id="b")  # as if another container ran org b's POST /v1/reload
    assert a.post("/v1/banks/main/preview", {"query": "tea"})[0] == 200
    assert calls == [] and _cached("a") == ["main"]
    s, body = b.post("/v1/banks/main/preview", {"query": "tea"})
    assert s == 200 and "Answer briefly." in body["system_prompt_section"]
    assert "b/banks/main/rules/" in calls and any(c.startswith("b/indexes/") for c in calls), calls
    assert not any(c.startswith("a/") for c in calls)


def test_snapshots_and_the_cli_skip_the_org_version_row(api):
    from chalicelib.cli import _bank_rows
    from chalicelib.search.recall import snapshot_banks
    assert api.post("/v1/banks/main/memories", {"text": "Alice prefers green tea"})[0] == 201
    assert api.post("/v1/reload")[0] == 200
    assert not [k for k in snapshot_banks(1, org_id="default") if "!config" in k]
    assert "!config" not in [r.name for r in _bank_rows("default", None)]


# --- no fall-back to a broader scope --------------------------------------------------------------

@pytest.mark.parametrize("kind", ["interactive", "coordinator"])
def test_session_on_an_inactive_project_never_falls_back(client, kind):
    """The reproduced defect: a session whose project was deactivated saved, with no scope given,
    into global (a private note became visible to the whole org)."""
    owner = Api(client, mint(user_id="owner", permissions=["memory:read", "memory:write"]))
    alice = Api(client, mint(user_id="alice", permissions=["memory:read", "memory:write"]))
    assert owner.post("/v1/api/projects", {"project_id": "prj", "name": "P"})[0] == 201
    assert owner.put("/v1/api/projects/prj/members/alice", {"access": "write"})[0] == 200
    s, sess = alice.post("/v1/api/sessions", {"kind": kind, "project_id": "prj"})
    assert s == 201, sess
    path = f"/v1/api/sessions/{sess['session_id']}/memory"
    s, b = alice.post(path, {"action": "save", "name": "note", "content": "private project note",
                             "description": "d"})
    assert s == 201 and b["scope"] == "project", b
    assert owner.patch("/v1/api/projects/prj", {"active": False})[0] == 200
    for call in ({"action": "save", "name": "secret", "content": "private note", "description": "d"},
                 {"action": "save", "name": "secret", "content": "private note", "description": "d",
                  "scope": "project"},
                 {"action": "get", "name": "note"},
                 {"action": "delete", "name": "note"}):
        b = refused(alice, "POST", path, call, token=alice.token, status=409, code="project_inactive")
        assert b["details"] == {"project_id": "prj"} and "inactive" in b["error"]
    s, b = owner.get("/v1/api/memories/secret")
    assert (s, b.get("code")) == (404, "memory_not_found")  # nothing reached global


# --- as_of recall is an audit tool ------------------------------------------------------------------

def test_as_of_recall_needs_admin_memories(api):
    """The reproduced defect: an ``as_of`` recall (about 25 times a warm recall) needed only
    ``memory:read``."""
    assert api.post("/v1/banks/main/memories", {"text": "Standup is at 9am"})[0] == 201
    reader = mint(user_id="r", permissions=["memory:read"])
    b = refused(api, "POST", "/v1/banks/main/recall", {"query": "standup", "as_of": FAR}, token=reader)
    assert b["details"] == {"required": "admin.memories"}
    assert api.post("/v1/banks/main/recall", {"query": "standup"}, token=reader)[0] == 200
    s, b = api.post("/v1/banks/main/recall", {"query": "standup", "as_of": FAR})
    assert s == 200 and b["retrieval"] == "bm25-entity+as_of"
