"""The isolation matrix: every session kind (interactive, coordinator, a
coordinator's child) x every scope (inherited, global, workstream, user, coordinator, project) x
every action x project access (none, read, write, removed mid-session); plus REST callers of other
users and other orgs. Each cell asserts the call is allowed (and touched only what it may see) or
its exact status and code, and that a rejected call changed nothing.

One world (an org with alice's session and a probe memory in every namespace) is built per
(session kind, project access) on one shared in-process backend (orgs share nothing); a cell that
deletes the probe restores it afterwards, so cells do not depend on their order."""

from __future__ import annotations

import itertools
import json
import os

import pytest
from moto import mock_aws

from infra.local.resources import create_resources
from tests.api.conftest import Api, mint
from tests.api.state import assert_unchanged, dump

KINDS = ("interactive", "coordinator", "child")
SCOPES = (None, "global", "workstream", "user", "coordinator", "project")
ACTIONS = ("save", "get", "search", "delete", "list")
ACCESS = ("none", "read", "write", "removed")
USER = ["memory:read", "memory:write"]
OK = (None, None)


def expected(kind: str, scope: str | None, action: str, access: str) -> tuple[int | None, str | None]:
    """The rule table of the issue, written out independently of chalicelib.structured.scopes."""
    coordinator = kind == "coordinator"
    attached = access != "none"
    if scope is None and action in ("search", "list"):
        return OK
    eff = scope
    if eff is None:
        eff = "project" if attached else ("coordinator" if coordinator else "global")
    if eff == "coordinator":
        return OK if coordinator else (403, "coordinator_only")
    if eff == "project":
        if not attached:
            return 400, "scope_unavailable"
        if access == "removed":
            return 403, "project_access_denied"
        if access == "read" and action in ("save", "delete"):
            return 403, "project_read_only"
        return OK
    if coordinator:
        return 403, "scope_forbidden"
    return OK


def envelope(kind: str, access: str) -> set[tuple[str, str]]:
    """What search and list without a scope may return."""
    out = {("coordinator", "alice")} if kind == "coordinator" else {("global", ""), ("workstream", "ws_a"),
                                                                   ("user", "alice")}
    if access in ("read", "write"):
        out.add(("project", "prj"))
    return out


NAMESPACES = [("global", ""), ("workstream", "ws_a"), ("user", "alice"), ("coordinator", "alice"), ("project", "prj")]


@pytest.fixture(scope="module")
def backend():
    keep = dict(os.environ)
    with mock_aws():
        names = create_resources("cairn-matrix")
        os.environ.update(names)
        os.environ["CAIRN_STAGE"] = "test"
        from chalice.test import Client

        from app import app
        with Client(app) as client:
            yield client
    os.environ.clear()
    os.environ.update(keep)


def _world(client, org: str, kind: str, access: str):
    """alice's session of ``kind`` in a fresh org with a probe memory in every namespace."""
    admin = Api(client, mint(org=org, user_id="root", permissions=[*USER, "admin.memories"]))
    alice = Api(client, mint(org=org, user_id="alice", permissions=USER))
    owner = Api(client, mint(org=org, user_id="owner", permissions=USER))
    rows = "\n".join(json.dumps({"name": "probe", "description": f"probe in {s}", "content": f"probe content {s}",
                                 "scope": s, "scope_id": sid, "type": "general"}) for s, sid in NAMESPACES)
    s, b = admin.post("/v1/api/admin/memories/import", raw=rows, headers={"Content-Type": "application/x-ndjson"})
    assert (s, b["imported"]) == (200, 5), b
    assert alice.post("/v1/api/workstreams", {"workstream_id": "ws_a", "title": "A"})[0] == 201
    assert owner.post("/v1/api/projects", {"project_id": "prj", "name": "P"})[0] == 201
    if access != "none":
        level = "read" if access == "read" else "write"
        assert owner.put("/v1/api/projects/prj/members/alice", {"access": level})[0] == 200
    body = {"kind": "coordinator" if kind != "interactive" else "interactive", "workstream_id": "ws_a"}
    if kind == "coordinator":
        body.pop("workstream_id")
    if access != "none":
        body["project_id"] = "prj"
    s, sess = alice.post("/v1/api/sessions", body)
    assert s == 201, sess
    if kind == "child":
        child = {"kind": "interactive", "parent_session_id": sess["session_id"], "workstream_id": "ws_a"}
        if access != "none":
            child["project_id"] = "prj"
        s, sess = alice.post("/v1/api/sessions", child)
        assert s == 201 and sess["user_id"] == "alice", sess
    if access == "removed":
        assert owner.delete("/v1/api/projects/prj/members/alice")[0] == 200
    return alice, sess["session_id"]


_counter = itertools.count()
_worlds: dict[tuple[str, str], tuple[Api, Api, str, str]] = {}


def world(client, kind: str, access: str) -> tuple[Api, Api, str, str]:
    """``(alice, admin, session_id, org)`` of the (kind, access) world, built once."""
    if (kind, access) not in _worlds:
        org = f"w{next(_counter)}"
        alice, sid = _world(client, org, kind, access)
        admin = Api(client, mint(org=org, user_id="root", permissions=[*USER, "admin.memories"]))
        _worlds[(kind, access)] = (alice, admin, sid, org)
    return _worlds[(kind, access)]


def _restore(admin: Api, scope: str, scope_id: str) -> None:
    row = {"name": "probe", "description": f"probe in {scope}", "content": f"probe content {scope}", "scope": scope,
           "scope_id": scope_id, "type": "general"}
    s, b = admin.post("/v1/api/admin/memories/import", raw=json.dumps(row),
                      headers={"Content-Type": "application/x-ndjson"})
    assert (s, b["imported"]) == (200, 1), b


@pytest.mark.parametrize("access", ACCESS)
@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("scope", SCOPES, ids=lambda s: s or "inherited")
@pytest.mark.parametrize("kind", KINDS)
def test_session_matrix(backend, kind, scope, action, access):
    alice, admin, sid, _ = world(backend, kind, access)
    call = {"action": action}
    if scope is not None:
        call["scope"] = scope
    if action in ("save", "get", "delete"):
        call["name"] = "probe"
    if action == "save":
        call.update(content="changed content", description="changed")
    if action == "search":
        call["query"] = "probe content"
    want_status, want_code = expected(kind, scope, action, access)
    before = dump() if want_status else None
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", call)
    if want_status:
        assert (s, b.get("code")) == (want_status, want_code), b
        assert set(b) >= {"error", "code"}
        assert_unchanged(before)
        return
    assert s == 200, b
    if action in ("search", "list"):
        seen = {(m["scope"], m["scope_id"]) for m in b["memories"]}
        allowed = envelope(kind, access) if scope is None else {
            ns for ns in NAMESPACES if ns[0] == scope}
        assert seen == allowed and b["total"] == len(b["memories"])
        return
    eff = scope or ("project" if access != "none" else ("coordinator" if kind == "coordinator" else "global"))
    ns = dict(NAMESPACES)
    if action == "delete":
        assert b == {"status": "ok", "name": "probe"}
        s, b = admin.get(f"/v1/api/admin/memories?scope={eff}&scope_id={ns[eff] or ''}")
        assert b["total"] == 0  # gone from that namespace only
        _restore(admin, eff, ns[eff])
    else:
        assert (b["scope"], b["scope_id"], b["name"]) == (eff, ns[eff], "probe")
        if action == "save":
            assert b["content"] == "changed content"


# --- REST callers of other users and other orgs -----------------------------------------------

REST_CALLS = {
    "list": lambda api, q: api.get("/v1/api/memories?" + q),
    "search": lambda api, q: api.post("/v1/api/memories/search",
                                      {"query": "probe", **dict(p.split("=") for p in q.split("&"))}),
    "get": lambda api, q: api.get("/v1/api/memories/probe?" + q),
    "delete": lambda api, q: api.delete("/v1/api/memories/probe?" + q),
    "save": lambda api, q: api.post("/v1/api/memories", {"name": "probe", "content": "x", "description": "x",
                                                          **dict(p.split("=") for p in q.split("&"))}),
}


@pytest.mark.parametrize("action", list(REST_CALLS))
@pytest.mark.parametrize("scope", ("user", "workstream"))
@pytest.mark.parametrize("caller", ("other_user", "other_org"))
def test_rest_other_callers(backend, caller, scope, action):
    *_, org = world(backend, "interactive", "write")
    other = Api(backend, mint(org=org if caller == "other_user" else org + "x", user_id="mallory", permissions=USER))
    q = "scope=user&scope_id=alice" if scope == "user" else "scope=workstream&scope_id=ws_a"
    before = dump()
    s, b = REST_CALLS[action](other, q)
    if scope == "user":
        assert (s, b["error"]) == (403, "Cannot access another user's memories"), b
    elif caller == "other_user":
        assert (s, b["error"]) == (403, "Cannot access another user's workstream memories"), b
    else:
        assert (s, b["error"], b["code"]) == (404, "Workstream not found", "workstream_not_found"), b
    assert_unchanged(before)


@pytest.mark.parametrize("caller", ("other_user", "other_org"))
@pytest.mark.parametrize("route", ("memory", "context", "delete"))
def test_sessions_answer_only_their_user(backend, caller, route):
    _, _, sid, org = world(backend, "coordinator", "write")
    other = Api(backend, mint(org=org if caller == "other_user" else org + "x", user_id="mallory", permissions=USER))
    before = dump()
    if route == "memory":
        s, b = other.post(f"/v1/api/sessions/{sid}/memory", {"action": "list"})
    elif route == "context":
        s, b = other.post(f"/v1/api/sessions/{sid}/context", {"messages": [{"role": "user", "content": "probe"}]})
    else:
        s, b = other.delete(f"/v1/api/sessions/{sid}")
    assert (s, b["code"]) == (404, "session_not_found")
    assert_unchanged(before)


def test_service_principal_acts_for_a_user(backend):
    *_, org = world(backend, "interactive", "none")
    svc = Api(backend, mint(org=org, kind="service", user_id="svc", permissions=[*USER, "service"]))
    s, sess = svc.post("/v1/api/sessions", {"kind": "coordinator", "user_id": "alice"})
    assert s == 201 and sess["user_id"] == "alice"
    s, b = svc.post(f"/v1/api/sessions/{sess['session_id']}/memory", {"action": "get", "name": "probe"})
    assert s == 200 and (b["scope"], b["scope_id"]) == ("coordinator", "alice")
    s, b = svc.get("/v1/api/memories?scope=workstream&scope_id=ws_a")
    assert s == 200 and b["total"] == 1


@pytest.mark.parametrize("who,status,code", [("api_key", 400, "coordinator_requires_user"),
                                             ("person_for_other", 403, "forbidden")])
def test_coordinator_needs_a_real_user(backend, who, status, code):
    org = f"c{next(_counter)}"
    if who == "api_key":
        api = Api(backend, mint(org=org, kind="api_key", permissions=USER))
        body = {"kind": "coordinator"}
    else:
        api = Api(backend, mint(org=org, user_id="alice", permissions=USER))
        body = {"kind": "coordinator", "user_id": "bob"}
    before = dump()
    s, b = api.post("/v1/api/sessions", body)
    assert (s, b["code"]) == (status, code)
    assert_unchanged(before)


def test_deactivated_project_leaves_the_envelope(backend):
    org = f"d{next(_counter)}"
    alice, sid = _world(backend, org, "interactive", "write")
    owner_tok = mint(org=org, user_id="owner", permissions=USER)
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", {"action": "list"})
    assert ("project", "prj") in {(m["scope"], m["scope_id"]) for m in b["memories"]}
    assert Api(backend, owner_tok).patch("/v1/api/projects/prj", {"active": False})[0] == 200
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", {"action": "list"})
    assert ("project", "prj") not in {(m["scope"], m["scope_id"]) for m in b["memories"]}
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", {"action": "get", "name": "probe"})
    # the inherited target stays the project: no fall-back to global while it is inactive
    assert (s, b["code"]) == (409, "project_inactive"), b
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", {"action": "get", "name": "probe", "scope": "global"})
    assert s == 200 and b["scope"] == "global"
