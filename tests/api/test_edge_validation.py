"""Validation at the edge (chalicelib/validation.py): the poison classes (lone surrogates, control
characters, big and non-finite numbers, deep nesting) get a 400 naming the field on every JSON
surface, ndjson imports report them as bad lines, and nothing is written.

The regression tests come first (one per reproduced defect, ``test_regression_*``), then seeded
hypothesis tests that send poison to every POST/PUT/PATCH route of the app's own route table and
to the arguments of every MCP tool. The rules as units are in tests/unit/test_edge_validation.py.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.conftest import mint
from tests.api.route_fixtures import IMPORT_LINES, MCP, World, app_routes, mcp_status, missing_fixtures
from tests.api.state import assert_unchanged, clients, dump

NDJSON = {"Content-Type": "application/x-ndjson"}
MID = "fp37dab55090b26303"  # "User prefers short names"
SURROGATE = '"\\ud800"'  # a JSON string holding one lone surrogate
DEEP = "[" * 200_000  # about 200 KB of brackets
JSON_METHODS = ("POST", "PUT", "PATCH")


def _raw(api, method, path, text, headers=None):
    """Send ``text`` as the body; ``(status, decoded body)``. The body must be UTF-8 JSON."""
    h = {"Authorization": f"Bearer {api.token}", "Content-Type": "application/json", **(headers or {})}
    resp = getattr(api.client.http, method.lower())(path, headers=h, body=text)
    body = json.loads(resp.body.decode("utf-8")) if resp.body else None
    return resp.status_code, body


def _as_error_body(body):
    """An answer of ``/mcp`` as the REST error body ``{error, code, details?}``: a JSON-RPC error's
    (message, ``data.code``, ``data.details``) or a tool's error result's (``structuredContent``);
    any other body as it is."""
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        return body
    if isinstance(body.get("error"), dict):
        data = body["error"].get("data") or {}
        out = {"error": body["error"].get("message"), "code": data.get("code")}
        return {**out, "details": data["details"]} if "details" in data else out
    return (body.get("result") or {}).get("structuredContent")


def _assert_error(status, body, code, field=None):
    body = _as_error_body(body)
    assert status == 400, body
    assert body["code"] == code, body
    if field is not None:
        assert body["details"]["field"] == field, body


class Unchanged:
    """``with Unchanged():`` fails when the block wrote anything to DynamoDB or S3."""

    def __enter__(self):
        self.using = clients()
        self.before = dump(self.using)
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            assert_unchanged(self.before, dump(self.using))


@pytest.fixture
def bank(api):
    s, b = api.post("/v1/banks/main/memories", {"text": "User prefers short names", "tags": ["style"]})
    assert s == 201 and b["memory"]["id"] == MID, b
    assert api.put("/v1/banks/main/rules/style", {"content": "# brief"})[0] == 200
    return api


@pytest.fixture
def session(api):
    s, b = api.post("/v1/api/sessions", {})
    assert s == 201, b
    return b["session_id"]


# --- regression tests: one per reproduced defect --------------------------------------------

def test_regression_surrogate_in_structured_memory_is_refused(api, session):
    s, row = api.post("/v1/api/memories", {"name": "keep", "description": "d", "content": "c"})
    assert s == 201, row
    save = '{"name": "n", "description": %s, "content": %s}'
    tool = '{"action": "save", "name": "n", "description": %s, "content": %s}'
    cases = [
        ("POST", "/v1/api/memories", save % ('"d"', SURROGATE), "content"),
        ("POST", "/v1/api/memories", save % (SURROGATE, '"c"'), "description"),
        ("POST", "/v1/api/memories", '{"name": %s, "description": "d", "content": "c"}' % SURROGATE, "name"),
        ("POST", f"/v1/api/sessions/{session}/memory", tool % ('"d"', SURROGATE), "content"),
        ("POST", f"/v1/api/sessions/{session}/memory", tool % (SURROGATE, '"c"'), "description"),
        ("PATCH", f"/v1/api/admin/memories/{row['memory_id']}", '{"description": %s}' % SURROGATE, "description"),
    ]
    with Unchanged():
        for method, path, text, field in cases:
            _assert_error(*_raw(api, method, path, text), "validation_error", field)
    s, listed = api.get("/v1/api/admin/memories")
    assert s == 200 and [m["name"] for m in listed["memories"]] == ["keep"]


def test_regression_surrogate_in_bank_memory_is_refused_and_never_echoed(bank):
    cases = [
        ('{"text": "hello \\ud800 there"}', "text"),
        ('{"text": "hello there", "tags": ["ok", "\\ud800"]}', "tags.1"),
        ('{"text": "hello there", "entities": ["\\udfff"]}', "entities.0"),
        ('{"text": "hello there", "\\ud800": 1}', "body"),
    ]
    with Unchanged():
        for text, field in cases:
            s, b = _raw(bank, "POST", "/v1/banks/main/memories", text)
            _assert_error(s, b, "validation_error", field)
            assert "\ud800" not in json.dumps(b, ensure_ascii=False) and "\\ud" not in b["error"]
            s, b = _raw(bank, "PATCH", f"/v1/banks/main/memories/{MID}", text.replace('"text": "hello there", ', ""))
            assert s == 400, b
    s, b = bank.get("/v1/banks/main/export")
    assert s == 200


def test_regression_json_response_never_carries_an_unencodable_value():
    from chalicelib.api.http import _json_response
    from chalicelib.errors import BadRequest

    err = BadRequest("Bad name 'x\ud800'.", details={"field": "name", "value": "\udc00y"})
    resp = _json_response(err.status, err.body())
    body = json.loads(resp.body.encode("utf-8"))  # encodable: the connection is not dropped
    assert body == {"error": "Bad name 'x\ufffd'.", "code": "validation_error",
                    "details": {"field": "name", "value": "\ufffdy"}}


def test_regression_surrogate_in_import_lines_is_a_bad_line(bank):
    lines = ['{"text": "first good line"}',
             '{"text": "bad entity line", "entities": ["\\ud800"]}',
             '{"text": "bad text \\udbff line"}',
             '{"text": "second good line", "tags": ["t"]}']
    s, b = bank.post("/v1/banks/copy/import", raw="\n".join(lines), headers=NDJSON)
    assert s == 200, b
    assert b["imported"] == 2 and [e["line"] for e in b["errors"]] == [2, 3]
    assert "entities.0" in b["errors"][0]["error"] and "surrogate" in b["errors"][1]["error"]
    assert {e["code"] for e in b["errors"]} == {"validation_error"}
    s, listed = bank.get("/v1/banks/copy/memories")
    assert sorted(m["text"] for m in listed["memories"]) == ["first good line", "second good line"]
    rows = ['{"name": "good", "description": "d", "content": "c", "scope": "global"}',
            '{"name": "bad", "description": "d", "content": "\\ud800", "scope": "global"}',
            '{"name": "bad2", "description": "\\udfff", "content": "c", "scope": "global"}',
            '{"name": "bad3", "description": "d", "content": "c", "scope": "user", "scope_id": "\\ud800"}']
    s, b = bank.post("/v1/api/admin/memories/import", raw="\n".join(rows), headers=NDJSON)
    assert s == 200, b
    assert b["imported"] == 1 and [e["line"] for e in b["errors"]] == [2, 3, 4]
    assert {e["code"] for e in b["errors"]} == {"validation_error"}
    s, listed = bank.get("/v1/api/admin/memories")
    assert s == 200 and [m["name"] for m in listed["memories"]] == ["good"]


OUT_OF_RANGE = [("corroboration", "9223372036854775808"), ("revision", "9223372036854775808"),
                ("created_at", "9223372036854775808"), ("updated_at", "18446744073709551616"),
                ("invalid_at", "9223372036854775808"), ("corroboration", "9007199254740992"),
                ("updated_at", "253402300800000"), ("created_at", "-1"), ("revision", "1e300"),
                ("corroboration", "1e400"), ("purged_at", "1" + "0" * 30)]


def test_regression_import_refuses_integers_out_of_range(bank):
    bad = ['{"text": "imported memory %d", "%s": %s}' % (i, field, literal)
           for i, (field, literal) in enumerate(OUT_OF_RANGE)]
    with Unchanged():
        for i, line in enumerate(bad):
            s, b = bank.post("/v1/banks/main/import", raw=line, headers=NDJSON)
            assert s == 200 and b["imported"] == 0 and b["errors"][0]["line"] == 1, b
            assert b["errors"][0]["error"].startswith(OUT_OF_RANGE[i][0]), b
    good = '{"text": "a good memory", "created_at": 253402300799999, "corroboration": 9007199254740991}'
    s, b = bank.post("/v1/banks/main/import", raw="\n".join([*bad, good]), headers=NDJSON)
    assert s == 200 and b["imported"] == 1, b
    assert [e["line"] for e in b["errors"]] == list(range(1, len(bad) + 1)), b
    # the index holds what was imported: recall and the hook keep answering
    s, r = bank.post("/v1/banks/main/recall", {"query": "good memory"})
    assert s == 200 and r["memories"][0]["memory"]["text"] == "a good memory", r
    s, _ = bank.post("/v1/banks/main/preview", {"query": "memory"})
    assert s == 200
    s, _ = bank.post("/v1/hooks/pre-generate", {"messages": [{"role": "user", "content": "good memory?"}],
                                               "metadata": {"memory_bank": "main"}})
    assert s == 200


WRONG_TYPES = [("pinned", '"yes"'), ("pinned", "1"), ("revision", '"2"'), ("corroboration", '"3"'),
               ("created_at", '"1"'), ("updated_at", "1.0"), ("observed_at", "true")]


def test_regression_import_lines_take_the_types_a_save_takes(bank):
    """An import line's fields have the types an exported record has, strictly, as a save's
    body does: a string, number or boolean in another field's place is a bad line (a save of
    ``"pinned": "yes"`` is a 400), never coerced into a pinned memory or a revision."""
    bad = ['{"text": "imported memory %d", "%s": %s}' % (i, field, literal)
           for i, (field, literal) in enumerate(WRONG_TYPES)]
    with Unchanged():
        s, b = bank.post("/v1/banks/main/import", raw="\n".join(bad), headers=NDJSON)
        assert s == 200 and b["imported"] == 0, b
        assert [(e["line"], e["code"], e["error"].split(":")[0]) for e in b["errors"]] == [
            (i + 1, "validation_error", field) for i, (field, _l) in enumerate(WRONG_TYPES)], b
    assert bank.post("/v1/banks/main/memories", {"text": "a pinned save", "pinned": "yes"})[0] == 400


def test_regression_structured_import_refuses_numbers_and_times_out_of_range(api):
    rows = ['{"name": "a", "description": "d", "content": "c", "access_count": 9223372036854775808}',
            '{"name": "b", "description": "d", "content": "c", "created": "0001-01-01T00:00:00"}',
            '{"name": "c", "description": "d", "content": "c", "access_count": Infinity}',
            '{"name": "d", "description": "d", "content": "c"}']
    s, b = api.post("/v1/api/admin/memories/import", raw="\n".join(rows), headers=NDJSON)
    assert s == 200 and b["imported"] == 1 and [e["line"] for e in b["errors"]] == [1, 2, 3], b


def test_regression_deep_nesting_is_invalid_json_on_every_json_route(api, app):
    routes = app_routes(app, JSON_METHODS)
    assert len(routes) > 30
    with Unchanged():
        for method, path in routes:
            concrete = path.replace("{bank}", "main").replace("{", "x").replace("}", "")
            s, b = _raw(api, method, concrete, DEEP)
            _assert_error(s, b, "invalid_json", "body")
            s, b = _raw(api, method, concrete, '{"a": %s1%s}' % ("[" * 65, "]" * 65))
            _assert_error(s, b, "invalid_json", "body")


def test_regression_deep_nesting_line_is_a_bad_import_line(bank):
    lines = ['{"text": "first good line"}', DEEP, '{"text": "deep value", "source": %s}' % ("[" * 100),
             '{"text": "second good line"}']
    s, b = bank.post("/v1/banks/copy/import", raw="\n".join(lines), headers=NDJSON)
    assert s == 200 and b["imported"] == 2, b
    assert b["errors"] == [{"line": 2, "error": "JSON nested deeper than 64 levels", "code": "validation_error"},
                           {"line": 3, "error": "JSON nested deeper than 64 levels", "code": "validation_error"}]
    rows = ['{"name": "good", "description": "d", "content": "c"}', DEEP]
    s, b = bank.post("/v1/api/admin/memories/import", raw="\n".join(rows), headers=NDJSON)
    assert s == 200 and b["imported"] == 1 and [e["line"] for e in b["errors"]] == [2], b


def test_regression_non_finite_limit_in_the_session_tool(api, session):
    with Unchanged():
        for literal in ("Infinity", "-Infinity", "NaN"):
            for action in ("list", "search"):
                s, b = _raw(api, "POST", f"/v1/api/sessions/{session}/memory",
                            '{"action": "%s", "query": "x", "limit": %s}' % (action, literal))
                _assert_error(s, b, "invalid_json", "limit")
            s, b = _raw(api, "POST", "/v1/banks/main/recall", '{"query": "x", "limit": %s}' % literal)
            _assert_error(s, b, "invalid_json", "limit")
        s, b = _raw(api, "POST", f"/v1/api/sessions/{session}/memory", '{"action": "list", "limit": 1e400}')
        _assert_error(s, b, "validation_error", "limit")


def test_regression_foreign_cursors_are_a_400(bank, api):
    from chalicelib.core.store import encode_cursor
    for i in range(3):
        assert api.post("/v1/api/memories", {"name": f"m{i}", "description": "d", "content": "c"})[0] == 201
        assert api.post("/v1/banks/main/memories", {"text": f"memory number {i}"})[0] == 201
    s, page = api.get("/v1/api/admin/audit?limit=1")
    audit_cursor = page["next_cursor"]
    s, page = api.get("/v1/api/admin/audit?limit=1&action=memory.save")
    save_cursor = page["next_cursor"]
    s, page = api.get("/v1/banks/main/memories?limit=1")
    bank_cursor = page["next_cursor"]
    assert audit_cursor and save_cursor and bank_cursor
    # the cursors work where they came from
    assert api.get(f"/v1/api/admin/audit?limit=1&cursor={audit_cursor}")[0] == 200
    assert api.get(f"/v1/api/admin/audit?limit=1&action=memory.save&cursor={save_cursor}")[0] == 200
    assert api.get(f"/v1/banks/main/memories?limit=1&cursor={bank_cursor}")[0] == 200

    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    other = mint(org="acme", user_id="o")
    foreign = [
        ("/v1/api/admin/audit", bank_cursor, api.token),  # another listing's cursor
        ("/v1/api/admin/audit?action=memory.update", save_cursor, api.token),  # another filter's
        ("/v1/api/admin/audit?action=memory.save", audit_cursor, api.token),
        ("/v1/api/admin/audit", audit_cursor, other),  # another org's
        ("/v1/api/admin/audit", b64({"k": 5}), api.token),  # the old shape, forged
        ("/v1/api/admin/audit", b64({"x": 1}), api.token),
        ("/v1/api/admin/audit", b64([1, 2]), api.token),
        ("/v1/api/admin/audit", b64({"r": "audit", "o": "0" * 16, "k": "x"}), api.token),
        ("/v1/api/admin/audit?action=memory.save", encode_cursor("audit", "default|memory.save", {"k": "zzz"}),
         api.token),  # forged with the right binding: the key is not of this filter
        ("/v1/banks/main/memories", audit_cursor, api.token),
        ("/v1/banks/main/memories", encode_cursor("memories", "default/main", {"sk": "", "ord": ""}), api.token),
        ("/v1/banks/other/memories", bank_cursor, api.token),
        ("/v1/api/admin/audit", base64.urlsafe_b64encode(b"[" * 5000).decode(), api.token),
        ("/v1/api/admin/audit", "!!", api.token),
    ]
    with Unchanged():
        for path, cursor, token in foreign:
            sep = "&" if "?" in path else "?"
            s, b = api.get(f"{path}{sep}cursor={cursor}", token=token)
            if path.startswith("/v1/banks/other"):
                assert s == 404 and b["code"] == "bank_not_found", b  # no such bank: nothing to page
                continue
            _assert_error(s, b, "validation_error", "cursor")
    api.post("/v1/banks/other/memories", {"text": "in another bank"})
    s, b = api.get(f"/v1/banks/other/memories?cursor={bank_cursor}")
    _assert_error(s, b, "validation_error", "cursor")


def test_regression_names_ending_in_a_newline_are_refused(bank):
    with Unchanged():
        for method, path, body in [("POST", "/v1/banks", {"name": "main\n"}),
                                   ("POST", "/v1/banks", {"name": "fresh\n"}),
                                   ("PUT", "/v1/banks/main%0A/rules/style", {"content": "x"}),
                                   ("PUT", "/v1/banks/main/rules/style%0A", {"content": "x"}),
                                   ("POST", "/v1/banks/main%0A/memories", {"text": "look-alike bank"}),
                                   ("POST", "/v1/api/admin/tokens", {"kind": "api_key", "banks": ["main\n"]})]:
            s, b = bank.call(method, path, body)
            _assert_error(s, b, "invalid_name")
    s, b = bank.get("/v1/banks")
    assert [x["name"] for x in b["banks"]] == ["main"]


def test_regression_every_identifier_check_is_a_full_match():
    from chalicelib.errors import BadRequest
    from chalicelib.fingerprint import FINGERPRINT_RE
    from chalicelib.names import check_name
    from chalicelib.structured.names import normalize_name
    from chalicelib.structured.workstreams import check_id
    from chalicelib.team import entries

    for bad in ("main\n", "main\r", "\nmain"):
        with pytest.raises(BadRequest):
            check_name(bad)
        with pytest.raises(BadRequest):
            check_id(bad, "workstream_id")
        with pytest.raises(BadRequest):
            normalize_name(bad.replace("main", "a"))
    assert not FINGERPRINT_RE.fullmatch(MID + "\n")
    for pattern, good in ((entries.ENTRY_ID, "ent_" + "0" * 20), (entries.SOURCE_LINK, "source:adr-1"),
                          (entries.ENTRY_LINK, "entry:ent_" + "0" * 20), (entries.UPDATE_ID, "upd-0001")):
        assert pattern.fullmatch(good) and not pattern.fullmatch(good + "\n")
    with pytest.raises(ValueError):
        entries._check_links(["source:adr-1\n"])


def test_regression_control_characters_follow_the_field_rules(bank):
    m = "/v1/banks/main/memories"
    refused = [
        (m, {"text": "nul \u0000 inside"}, "text"),
        (m, {"text": "bell \u0007 inside"}, "text"),
        (m, {"text": "escape \u001b[31m red"}, "text"),
        (m, {"text": "delete \u007f inside"}, "text"),
        (m, {"text": "a fine text", "tags": ["two\nlines"]}, "tags.0"),
        (m, {"text": "a fine text", "entities": ["tab\tbed"]}, "entities.0"),
        (m, {"text": "a fine text", "tags": ["next\u0085line"]}, "tags.0"),
        (m, {"text": "a fine text", "tags": ["para\u2029graph"]}, "tags.0"),
        ("/v1/banks", {"name": "ok", "description": "form \u000c feed"}, "description"),
        ("/v1/api/memories", {"name": "n", "description": "d", "content": "a \u0001 b"}, "content"),
        ("/v1/api/memories", {"name": "n", "description": "d \u0001", "content": "c"}, "description"),
        ("/v1/api/workstreams", {"title": "two\nlines"}, "title"),
        ("/v1/api/admin/tokens", {"kind": "api_key", "label": "ci\r\nX-Injected: 1"}, "label"),
    ]
    with Unchanged():
        for path, body, field in refused:
            s, b = bank.post(path, body)
            _assert_error(s, b, "validation_error", field)
            assert "\u0000" not in b["error"] and "\u0007" not in b["error"]
        for query in ("tag=%00", "cursor=a%00b"):
            s, b = bank.get(f"{m}?{query}")
            _assert_error(s, b, "validation_error", query.split("=")[0])
        s, b = bank.get("/v1/banks/main/memories/fp37dab55090b263%00")
        _assert_error(s, b, "validation_error", "memory_id")
    # long text keeps TAB, LF and CR; descriptions collapse white space
    s, b = bank.post(m, {"text": "line one\n\tline two\r\n"})
    assert s == 201 and b["memory"]["text"] == "line one\n\tline two", b
    s, b = bank.post("/v1/api/memories", {"name": "n", "description": "two\nlines", "content": "a\tb\nc"})
    assert s == 201 and b["description"] == "two lines" and b["content"] == "a\tb\nc", b


def test_regression_extraction_skips_items_with_control_characters():
    from chalicelib.banks.records import normalize_handles
    from chalicelib.extraction.job import _in_bounds
    assert _in_bounds("User prefers tea")
    assert not _in_bounds("User prefers \u001b[1mtea")
    assert not _in_bounds("User prefers \ud800 tea")
    assert normalize_handles(["ok", "two\nlines", "x\u0000"], "tags", strict=False) == ["ok"]


def test_team_entry_text_follows_the_body_text_rule(api):
    from tests.api.team_support import MEM, SPACES, Editor, b64
    sid = api.post(SPACES, {"name": "Platform"})[1]["id"]
    assert api.put(f"{SPACES}/{sid}/members/admin", {"permissions": ["context:space:read",
                                                                      "context:space:write"]})[0] == 200
    s, e = api.post(f"{MEM}/entries", {"spaceId": sid, "kind": "note", "title": "Notes"})
    assert s == 201, e
    with Unchanged():
        for text in ("nul \u0000 here", "bell \u0007", "escape \u001b[0m"):
            s, b = api.post(f"{MEM}/entries/{e['id']}/updates",
                            {"updateId": "upd-00000001", "update": b64(Editor().insert(0, text))})
            _assert_error(s, b, "validation_error", "update")
    s, b = api.post(f"{MEM}/entries/{e['id']}/updates",
                    {"updateId": "upd-00000002", "update": b64(Editor().insert(0, "two\n\tlines\r\n"))})
    assert s == 200, b


@pytest.mark.parametrize("value,message", [
    ("abc", "limit must be an integer."), ("5_0", "limit must be an integer."), (" 5", "limit must be an integer."),
    ("0", "limit must be between 1 and 200."), ("201", "limit must be between 1 and 200."),
])
def test_one_integer_parameter_rule_as_function_and_as_query_model(value, message):
    """``api.http.IntRange`` is the one integer-parameter rule: ``query_int`` and a
    ``parse_query`` model field give the same answers and the same 400."""
    from typing import Annotated

    from pydantic import BaseModel

    from chalicelib.api.http import IntRange, parse_query, query_int
    from chalicelib.errors import BadRequest

    class Page(BaseModel):
        limit: Annotated[int, IntRange(1, 200)] = 50

    assert query_int({}, "limit", 50, 1, 200) == parse_query({}, Page).limit == 50
    assert query_int({"limit": ""}, "limit", 50, 1, 200) == parse_query({"limit": ""}, Page).limit == 50
    assert query_int({"limit": "7"}, "limit", 50, 1, 200) == parse_query({"limit": "7"}, Page).limit == 7
    for call in (lambda: query_int({"limit": value}, "limit", 50, 1, 200), lambda: parse_query({"limit": value}, Page)):
        with pytest.raises(BadRequest) as exc:
            call()
        assert (exc.value.code, exc.value.message, exc.value.details) == \
            ("validation_error", message, {"field": "limit"})


@pytest.mark.parametrize("value,expected", [
    (None, False), ("", False), ("false", False), ("0", False), ("no", False), ("NO", False), ("False", False),
    ("true", True), ("1", True), ("yes", True), ("YES", True), ("True", True),
    ("maybe", None), (" true", None), ("2", None), ("on", None),
])
def test_one_boolean_parameter_rule_as_function_and_as_query_model(value, expected):
    """``api.http.Flag`` is the one boolean query-parameter rule: ``query_bool`` and a
    ``parse_query`` model field (``QueryBool``) give the same answers and the same 400."""
    from pydantic import BaseModel

    from chalicelib.api.http import QueryBool, parse_query, query_bool
    from chalicelib.errors import BadRequest

    class Listing(BaseModel):
        history: QueryBool = False

    query = {} if value is None else {"history": value}
    if expected is not None:
        assert query_bool(query, "history") is parse_query(query, Listing).history is expected
        return
    for call in (lambda: query_bool(query, "history"), lambda: parse_query(query, Listing)):
        with pytest.raises(BadRequest) as exc:
            call()
        assert (exc.value.code, exc.value.message, exc.value.details) == \
            ("validation_error", "history must be true or false.", {"field": "history"})


@pytest.mark.parametrize("limit", [0, 101, "5", 5.0, True, None])
def test_recall_limit_is_a_strict_integer_in_range(bank, limit):
    """The recall body's ``limit`` goes through the same rule, strictly (a JSON integer only)."""
    status, body = bank.post("/v1/banks/main/recall", {"query": "short names", "limit": limit})
    assert status == 400 and body["code"] == "validation_error" and body["details"]["field"] == "limit", body
    assert body["error"].startswith("limit must be ")


# --- poison on every JSON route (seeded hypothesis) -----------------------------------------

@pytest.fixture
def world(api):
    return World(api)


def test_every_json_route_has_a_fixture_body(world, app):
    """A new POST/PUT/PATCH route must get a fixture in tests/api/route_fixtures.py (and so the poison
    tests); every fixture body that should succeed does."""
    missing, stale = missing_fixtures(app, JSON_METHODS)
    assert missing == set(), "JSON routes without a fixture body"
    assert stale == set(), "fixture bodies of routes that no longer exist"
    refused = []
    for route in sorted(world.routes):
        path, bodies = world.routes[route]
        for body in bodies:
            s, b = world.api.call(route[0], path, body)
            if (mcp_status(s, b) if path == MCP else s) >= 300:
                refused.append(f"{route}: {s} {b}")
    for row, bodies in sorted(world.tool_bodies.items()):
        assert bodies, f"{row}: no tools/call body to poison"
        for body in bodies:
            s, b = world.api.call("POST", MCP, body)
            if mcp_status(s, b) >= 300:
                refused.append(f"{row}: {s} {b}")
    assert not refused, "\n".join(refused)


MARK = "\u2603poison\u2603"
_CLOSER = str.maketrans({"[": "]", "{": "}", '"': "", "k": "", ":": ""})


def _leaves(value, at=()):
    """Paths of every position a poison can take: each scalar, each container, and a new key in
    each object."""
    yield at
    if isinstance(value, dict):
        yield (*at, MARK)
        for k, v in value.items():
            yield from _leaves(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*at, i))


def _poisoned(body, at, fragment: str, as_key: bool = False) -> str:
    """``body`` as JSON text with ``fragment`` (raw JSON) at path ``at``; ``as_key`` puts the
    fragment (a JSON string) in a new key there instead."""
    if not at:
        return fragment
    b = copy.deepcopy(body)
    parent = b
    for k in at[:-1]:
        parent = parent[k]
    parent[at[-1]] = 1 if as_key and at[-1] == MARK else MARK
    text = json.dumps(b)
    marker = json.dumps(MARK)
    return text.replace(marker + ":" if as_key else marker, fragment + ":" if as_key else fragment)


def _string(s: str) -> str:
    return json.dumps(s)  # ASCII-only JSON: lone surrogates become \udxxx escapes


SURROGATE_FRAGMENTS = [_string(s) for s in ("\ud800", "a\udfffb", "\udc00\ud800", "x" * 300 + "\udbff",
                                            "\ude00 tail")]
CONTROL_FRAGMENTS = [_string(s) for s in ("\u0000", "a\u0001b", "line\nbreak", "tab\there", "\u001b[31mred",
                                          "del\u007f", "c1\u0085\u009f", "sep\u2028\u2029", "cr\r",
                                          "nul in \u0000 text",
                                          "\u000b\u000c", "\u001c\u001d\u001e\u001f")]
NUMBER_FRAGMENTS = ["9007199254740992", "-9007199254740992", "9223372036854775808", "18446744073709551616",
                    "1" + "0" * 400, "1e400", "-1e400", "1e308", "NaN", "Infinity", "-Infinity", "1.5e16",
                    "9007199254740991", "-9007199254740991"]  # the last two are within range
NESTING_FRAGMENTS = ["[" * 65 + "]" * 65, "[" * 200_000, '{"a":' * 65 + "1" + "}" * 65, "[" * 3000 + "]" * 3000,
                     "[" * 64 + '"' + "[" * 500 + '"' + "]" * 64]  # the last: brackets in a string, depth 64
UNIVERSAL_EXCEPTIONS = {"9007199254740991", "-9007199254740991", NESTING_FRAGMENTS[-1]}

CLASSES = {"surrogates": SURROGATE_FRAGMENTS, "controls": CONTROL_FRAGMENTS, "numbers": NUMBER_FRAGMENTS,
           "nesting": NESTING_FRAGMENTS}


def _universal(fragment: str) -> bool:
    """True when the edge must refuse ``fragment`` wherever it stands (not only in some fields)."""
    if fragment in UNIVERSAL_EXCEPTIONS:
        return False
    if not fragment.startswith('"'):
        return True  # out-of-range or non-finite numbers, deep nesting
    return any(c == "\u0000" or 0xD800 <= ord(c) <= 0xDFFF for c in json.loads(fragment))


def _send(api, method, path, text, ndjson=False):
    h = {"Authorization": f"Bearer {api.token}", "Content-Type": NDJSON["Content-Type"] if ndjson else
         "application/json"}
    resp = getattr(api.client.http, method.lower())(path, headers=h, body=text)
    return resp.status_code, resp.body


def _check_mcp(where, status, body, must_refuse):
    """An answer of ``/mcp``: a refusal is a JSON-RPC error object (4xx, or 200 for a parsed
    request) or a tool's error result (200 with ``isError``) carrying ``{error, code, details?}``;
    a value no field may hold is a 400 or an error result with ``validation_error``/``invalid_json``."""
    if status == 202:
        assert body is None, f"{where}: {body}"
        return body
    assert isinstance(body, dict) and body.get("jsonrpc") == "2.0" and "id" in body, f"{where}: {body}"
    if status >= 400 or "error" in body:
        assert set(body) == {"jsonrpc", "id", "error"}, f"{where}: {body}"
        err = body["error"]
        assert isinstance(err.get("code"), int) and isinstance(err.get("message"), str) and err["message"], \
            f"{where}: {body}"
    else:
        assert status == 200 and isinstance(body.get("result"), dict), f"{where}: {status} {body}"
    refusal = _as_error_body(body) if mcp_status(status, body) >= 400 else None
    if refusal is not None:
        assert isinstance(refusal, dict) and set(refusal) <= {"error", "code", "details"}, f"{where}: {body}"
        assert isinstance(refusal.get("code"), str) and refusal["code"], f"{where}: {body}"
        assert isinstance(refusal.get("details", {}), dict), f"{where}: {body}"
        assert "Traceback" not in json.dumps(body), f"{where}: {body}"
    if must_refuse:
        assert mcp_status(status, body) == 400 and refusal["code"] in ("validation_error", "invalid_json"), \
            f"{where}: {status} {body}"
    return body


def _check(route, text, status, raw, must_refuse):
    where = f"{route} <- {text[:200]!r}"
    assert status < 500, f"{where}: {status} {raw[:300]!r}"
    body = json.loads(raw.decode("utf-8")) if raw else None  # the response always decodes
    if route[1] == MCP:
        return _check_mcp(where, status, body, must_refuse)
    if status >= 400:
        assert isinstance(body, dict) and set(body) <= {"error", "code", "details"}, f"{where}: {body}"
        assert isinstance(body.get("error"), str) and body["error"], f"{where}: {body}"
        assert isinstance(body.get("code"), str) and body["code"], f"{where}: {body}"
        assert isinstance(body.get("details", {}), dict), f"{where}: {body}"
    if must_refuse:
        assert status == 400 and body["code"] in ("validation_error", "invalid_json"), f"{where}: {status} {body}"
    return body


def _poke(world, route, text, must_refuse, ndjson=False):
    """Send one poisoned body to ``route`` (``ndjson``: as line 2 of 3 of an import, the others
    good) and check the answer."""
    path, _ = world.routes[route]
    if ndjson:
        good = json.dumps(IMPORT_LINES[route][0])
        text = "\n".join([good, text, good])
    status, raw = _send(world.api, route[0], path, text, ndjson=ndjson)
    body = _check(route, text, status, raw, must_refuse and not ndjson)
    if must_refuse and ndjson:
        assert status == 200 and [e["line"] for e in body["errors"]] == [2], (route, body)


ARGUMENTS = ("params", "arguments")


def _targets(world):
    """``(route, body, ndjson, root)`` of every fixture body, of each import's poisonable line
    and of each MCP tool's ``tools/call`` (poisoned under ``root``: its ``arguments``)."""
    for route in sorted(world.routes):
        for body in world.routes[route][1]:
            yield route, body, False, ()
        if route in IMPORT_LINES:
            yield route, IMPORT_LINES[route][1], True, ()
    for bodies in world.tool_bodies.values():
        for body in bodies:
            yield ("POST", MCP), body, False, ARGUMENTS


def _leaves_under(body, root):
    """``_leaves`` of the value at path ``root`` of ``body``, as paths from ``body``."""
    value = body
    for k in root:
        value = value[k]
    return _leaves(value, root)


STRATEGIES = {
    "surrogates": st.builds(lambda a, s, b: _string(a + s + b), st.text(max_size=5),
                            st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), st.text(max_size=5)),
    "controls": st.builds(lambda a, s, b: _string(a + s + b), st.text(max_size=5),
                          st.sampled_from([chr(c) for c in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]]),
                          st.text(max_size=5)),
    "numbers": st.one_of(
        st.integers(min_value=2**53, max_value=2**80).map(str),
        st.integers(min_value=2**53, max_value=2**80).map(lambda n: str(-n)),
        st.floats(min_value=2.0**53, max_value=1e308).map(repr),
        st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-2e999"])),
    "nesting": st.builds(lambda n, opener, closed: opener * n + ("1" + opener.translate(_CLOSER) * n if closed else ""),
                         st.integers(min_value=65, max_value=5000), st.sampled_from(["[", '{"k":']), st.booleans()),
}


def test_poison_on_every_json_route(world):
    """For each poison class: each position of each route's fixture bodies (and of each import's
    ndjson line, and of each MCP tool's ``arguments``) gets one value of the class, round robin;
    then hypothesis draws more (seeded). Every answer is below 500 and decodes; a 4xx is ``{error,
    code, details?}`` (from ``/mcp``: a JSON-RPC error object, or a 200 with a JSON-RPC error or a
    tool's ``isError`` result, carrying it); a value no field may hold (a surrogate, NUL, a number
    out of range, deep nesting) is a 400."""
    targets = list(_targets(world))
    for poison, fragments in sorted(CLASSES.items()):
        cycle = itertools.cycle(fragments)
        sent = set()
        for route, body, ndjson, root in targets:
            for at in _leaves_under(body, root):
                fragment = next(cycle)
                as_key = bool(at) and at[-1] == MARK and fragment.startswith('"')
                if at and at[-1] == MARK and not as_key:
                    continue
                _poke(world, route, _poisoned(body, at, fragment, as_key), _universal(fragment), ndjson)
                sent.add(fragment)
        assert sent == set(fragments), poison

        @settings(derandomize=True, max_examples=15, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(st.sampled_from(targets), STRATEGIES[poison], st.data())
        def more(target, fragment, data):
            route, body, ndjson, root = target
            at = data.draw(st.sampled_from([a for a in _leaves_under(body, root) if not a or a[-1] != MARK]))
            _poke(world, route, _poisoned(body, at, fragment), _universal(fragment), ndjson)

        more()
