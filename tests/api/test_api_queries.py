"""Query strings and bodies the routes parse with pydantic models keep their status, code, message,
details and order of checks: each case below is what the route answered when it still read them by
hand, several bad values at once included (the first check in the old order wins). Every refused
request writes nothing."""

from __future__ import annotations

import pytest

from tests.api.state import assert_unchanged, dump
from tests.api.team_support import MEM, World

TYPE_MSG = "invalid type: x; must be one of ['feedback', 'general', 'reference', 'user']"
SCOPE_MSG = "invalid scope: x; must be one of ['global', 'user', 'workstream']"
STATUS_MSG = "status must be one of ['draft', 'accepted', 'superseded', 'archived']."
KIND_MSG = "kind must be one of ['decision', 'convention', 'note', 'glossary']."
BANK_MSG = ("Invalid bank name 'BAD NAME': use 1 to 64 characters of a-z, 0-9, '_' or '-', starting with a letter "
            "or digit.")
BANK_DETAILS = {"field": "bank", "pattern": "[a-z0-9][a-z0-9_-]{0,63}"}


def _field(name):
    return {"field": name}


def _refused(call, status, code, message, details):
    before = dump()
    s, b = call()
    assert (s, b.get("code"), b.get("error"), b.get("details")) == (status, code, message, details), b
    assert_unchanged(before)


@pytest.fixture
def world(api):
    return World(api)


# --- team: entries, updates, attributions ------------------------------------------------------

@pytest.mark.parametrize("query,message,field", [
    ("limit=abc", "limit must be an integer.", "limit"),  # before the missing spaceId
    ("status=bogus&limit=0", "limit must be between 1 and 200.", "limit"),
    ("{space}&status=bogus&kind=x&limit=5", STATUS_MSG, "status"),
    ("{space}&kind=x&cursor=zz", KIND_MSG, "kind"),
    ("limit=", "spaceId is required.", "spaceId"),  # an empty limit is the default
    ("{space}&limit=%201", "limit must be an integer.", "limit"),  # no spaces around digits here
])
def test_list_entries_query_errors(world, query, message, field):
    path = f"{MEM}/entries?" + query.replace("{space}", f"spaceId={world.space}")
    _refused(lambda: world.call("alice", "GET", path), 400, "validation_error", message, _field(field))


@pytest.mark.parametrize("query,message,field", [
    ("stateVector=x&sinceSeq=abc", "Give sinceSeq or stateVector, not both.", "stateVector"),
    ("stateVector=&sinceSeq=", "Give sinceSeq or stateVector, not both.", "stateVector"),  # present, even empty
    ("sinceSeq=abc", "sinceSeq must be an integer.", "sinceSeq"),
    ("sinceSeq=-1", "sinceSeq must be between 0 and 1000000000000.", "sinceSeq"),
])
def test_get_updates_query_errors(world, query, message, field):
    eid = world.create()["id"]
    for entry in (eid, "ent_unknown"):  # the query is read before the entry
        _refused(lambda entry=entry: world.call("alice", "GET", f"{MEM}/entries/{entry}/updates?{query}"),
                 400, "validation_error", message, _field(field))


def test_get_updates_empty_since_seq_is_zero(world):
    eid = world.create()["id"]
    assert world.call("alice", "GET", f"{MEM}/entries/{eid}/updates?sinceSeq=") == (200, {"updates": [], "seq": 0})
    s, b = world.call("alice", "GET", f"{MEM}/entries/ent_unknown/updates?sinceSeq=1")
    assert (s, b["code"]) == (404, "not_found")


@pytest.mark.parametrize("query,message,field", [
    ("limit=0", "limit must be between 1 and 1000.", "limit"),
    ("limit=5000&spaceId=unknown", "limit must be between 1 and 1000.", "limit"),
    ("spaceId=", "spaceId is required.", "spaceId"),
    ("spaceId=unknown&limit=1.0", "limit must be an integer.", "limit"),
])
def test_list_attributions_query_errors(world, query, message, field):
    _refused(lambda: world.api.get(f"{MEM}/attributions?{query}"), 400, "validation_error", message, _field(field))


# --- banks ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path,code,message,details", [
    ("/v1/banks/BAD%20NAME/memories?limit=abc", "invalid_name", BANK_MSG, BANK_DETAILS),  # the bank first
    ("/v1/banks/b/memories?limit=abc&include_superseded=maybe", "validation_error", "limit must be an integer.",
     _field("limit")),
    ("/v1/banks/b/memories?include_superseded=maybe&tag=", "validation_error",
     "include_superseded must be true or false.", _field("include_superseded")),
    ("/v1/banks/nobank/memories?limit=abc", "validation_error", "limit must be an integer.", _field("limit")),
    ("/v1/banks/nobank/memories?limit=0", "validation_error", "limit must be between 1 and 500.", _field("limit")),
    ("/v1/banks/b/memories?cursor=zz&limit=x", "validation_error", "limit must be an integer.", _field("limit")),
    ("/v1/banks?trashed=maybe", "validation_error", "trashed must be true or false.", _field("trashed")),
    ("/v1/banks/b/export?history=maybe", "validation_error", "history must be true or false.", _field("history")),
    ("/v1/banks/BAD%20NAME/export?history=maybe", "invalid_name", BANK_MSG, BANK_DETAILS),
    ("/v1/banks/nobank/export?history=maybe", "validation_error", "history must be true or false.",
     _field("history")),
])
def test_bank_query_errors(api, path, code, message, details):
    assert api.post("/v1/banks", {"name": "b"})[0] == 201
    _refused(lambda: api.get(path), 400, code, message, details)


def test_bank_query_flags_accept_any_case(api):
    assert api.post("/v1/banks", {"name": "b"})[0] == 201
    assert api.get("/v1/banks/b/memories?include_superseded=YES") == (
        200, {"memories": [], "total": 0, "next_cursor": None})
    for value in ("Yes", "TRUE", "1", "no", "False", "0", ""):
        s, b = api.get(f"/v1/banks?trashed={value}")
        assert s == 200 and "banks" in b, (value, b)


# --- Turnstone's REST memory API ------------------------------------------------------------------

@pytest.mark.parametrize("query,status,code,message,details", [
    ("type=x&scope=x&limit=abc", 400, "invalid_type", TYPE_MSG, _field("type")),
    ("scope=x&limit=abc", 400, "invalid_scope", SCOPE_MSG, _field("scope")),
    # the scope rules, a workstream lookup included, run before the limit is read
    ("scope=workstream&limit=abc", 400, "validation_error", "scope_id is required for workstream scope",
     _field("scope_id")),
    ("scope=workstream&scope_id=nope&limit=abc", 404, "workstream_not_found", "Workstream not found", None),
    ("scope_id=u&limit=abc", 400, "validation_error", "scope is required when scope_id is provided", _field("scope")),
    ("limit=abc", 400, "validation_error", "limit must be an integer", _field("limit")),
    ("limit=%200%20", 400, "validation_error", "limit must be between 1 and 200", _field("limit")),
    ("limit=201", 400, "validation_error", "limit must be between 1 and 200", _field("limit")),
    ("scope=user&scope_id=bob&limit=x", 400, "validation_error", "limit must be an integer", _field("limit")),
])
def test_rest_list_query_errors(api, query, status, code, message, details):
    _refused(lambda: api.get(f"/v1/api/memories?{query}"), status, code, message, details)


def test_rest_list_empty_values_are_defaults(api):
    assert api.get("/v1/api/memories?type=&scope=&limit=") == (200, {"memories": [], "total": 0})
    assert api.get("/v1/api/memories?limit=%203%20") == (200, {"memories": [], "total": 0})


@pytest.mark.parametrize("method", ["GET", "DELETE"])
@pytest.mark.parametrize("query,status,code,message,details", [
    ("scope=x&scope_id=a", 400, "invalid_scope", SCOPE_MSG, _field("scope")),
    ("scope=global&scope_id=a", 400, "validation_error", "scope_id is not allowed with global scope",
     _field("scope_id")),
    ("scope=workstream", 400, "validation_error", "scope_id is required for workstream scope", _field("scope_id")),
    ("", 404, "memory_not_found", "Memory 'foo' not found", None),
    ("scope=user&scope_id=bob", 404, "memory_not_found", "Memory 'foo' not found", None),
])
def test_rest_get_delete_query_errors(api, method, query, status, code, message, details):
    _refused(lambda: api.call(method, f"/v1/api/memories/foo?{query}"), status, code, message, details)


_BODY = "The request body must be a JSON object."


@pytest.mark.parametrize("body,code,message,field", [
    ([], "validation_error", _BODY, "body"),
    ({}, "validation_error", "query is required", "query"),
    ({"type": "x"}, "validation_error", "query is required", "query"),
    ({"query": 5}, "validation_error", "query is required", "query"),
    ({"query": " ", "type": 5}, "validation_error", "query is required", "query"),
    ({"query": "q", "type": 5, "limit": "x"}, "validation_error", "type must be a string", "type"),
    ({"query": "q", "type": "x", "limit": "x"}, "invalid_type", TYPE_MSG, "type"),
    ({"query": "q", "limit": "x", "scope": 5}, "validation_error", "limit must be an integer", "limit"),
    ({"query": "q", "limit": True}, "validation_error", "limit must be an integer", "limit"),
    ({"query": "q", "limit": 2.5}, "validation_error", "limit must be an integer", "limit"),
    ({"query": "q", "limit": 51, "scope": 5}, "validation_error", "limit must be between 1 and 50", "limit"),
    ({"query": "q", "scope": 5, "scope_id": 5}, "validation_error", "scope must be a string", "scope"),
    ({"query": "q", "scope_id": 5}, "validation_error", "scope_id must be a string", "scope_id"),
    ({"query": "q", "scope": "x", "scope_id": "y"}, "invalid_scope", SCOPE_MSG, "scope"),
    ({"query": "q", "scope_id": "u"}, "validation_error", "scope is required when scope_id is provided", "scope"),
])
def test_rest_search_body_errors(api, body, code, message, field):
    _refused(lambda: api.post("/v1/api/memories/search", body), 400, code, message, _field(field))


def test_rest_search_body_edge_values(api):
    empty = (200, {"memories": [], "total": 0})
    for body in ({"query": "q", "limit": 2.0}, {"query": "q", "limit": " 3 "}, {"query": "q", "limit": ""},
                 {"query": "q", "limit": None, "type": None, "scope": None, "scope_id": None}):
        assert api.post("/v1/api/memories/search", body) == empty, body
    assert api.call("POST", "/v1/api/memories/search") == (
        400, {"error": "query is required", "code": "validation_error", "details": {"field": "query"}})


@pytest.mark.parametrize("path", ["/v1/api/memories/search", "/v1/api/memories"])
def test_rest_empty_non_json_body_is_not_an_object(api, path):
    _refused(lambda: api.call("POST", path, headers={"Content-Type": "text/plain"}), 400, "validation_error",
             _BODY, _field("body"))


@pytest.mark.parametrize("method,path", [("POST", "/v1/api/workstreams"), ("POST", "/v1/banks"),
                                         ("POST", f"{MEM}/entries"), ("PUT", "/api/v1/context/deny-rules")])
def test_empty_non_json_body_on_a_body_model_route_is_400_not_500(api, method, path):
    # such a view was once called without its body model and failed with 500 internal_error
    _refused(lambda: api.call(method, path, headers={"Content-Type": "text/plain"}), 400, "validation_error",
             _BODY, _field("body"))


_OK = {"name": "Deploy notes", "description": "how we deploy", "content": "blue/green"}


@pytest.mark.parametrize("body,code,message,field", [
    ([], "validation_error", _BODY, "body"),
    ({}, "invalid_name", "memory name is required", "name"),
    ({"name": 5, "description": 5, "content": 5}, "invalid_name", "memory name is required", "name"),
    ({"name": "ok", "content": 5, "type": "x"}, "validation_error", "description is required and must be non-empty",
     "description"),
    ({"name": "ok", "description": "d", "type": "x"}, "validation_error", "content is required", "content"),
    ({**_OK, "type": "x", "scope": 5}, "invalid_type", TYPE_MSG, "type"),
    ({**_OK, "type": ""}, "invalid_type", TYPE_MSG.replace("x;", ";"), "type"),
    ({**_OK, "scope": 5, "scope_id": 5}, "validation_error", "scope must be a string", "scope"),
    ({**_OK, "scope_id": 5}, "validation_error", "scope_id must be a string", "scope_id"),
    ({**_OK, "scope": "x", "scope_id": "y"}, "invalid_scope", SCOPE_MSG, "scope"),
    ({**_OK, "scope": "global", "scope_id": "a"}, "validation_error", "scope_id is not allowed with global scope",
     "scope_id"),
])
def test_rest_save_body_errors(api, body, code, message, field):
    _refused(lambda: api.post("/v1/api/memories", body), 400, code, message, _field(field))


def test_rest_save_body_nulls_are_absent(api):
    s, b = api.post("/v1/api/memories", {**_OK, "type": None, "scope": None, "scope_id": None, "extra": 1})
    assert (s, b["name"], b["type"], b["scope"], b["scope_id"]) == (201, "deploy_notes", "general", "global", ""), b
