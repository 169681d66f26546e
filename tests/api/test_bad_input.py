"""Bad input on every bank route and the token routes: each
case gets its exact status and code, and a dump of every DynamoDB table and S3 object taken
before the call equals one taken after it (tests/api/state.py)."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import mint
from tests.api.state import assert_unchanged, clients, dump

MID = "fp37dab55090b26303"  # "user prefers short names"
BIG = 5 * 1024 * 1024 + 1

# (method, path, a valid JSON body or None). {bank}, {rule}, {id}, {tok} are filled in.
BANK_ROUTES = [
    ("GET", "/v1/banks/{bank}", None),
    ("DELETE", "/v1/banks/{bank}", None),
    ("POST", "/v1/banks/{bank}/restore", {"trashed_to": "x.000000000000"}),
    ("GET", "/v1/banks/{bank}/rules", None),
    ("PUT", "/v1/banks/{bank}/rules/{rule}", {"content": "# hi"}),
    ("POST", "/v1/banks/{bank}/memories", {"text": "a new memory"}),
    ("GET", "/v1/banks/{bank}/memories", None),
    ("GET", "/v1/banks/{bank}/memories/{id}", None),
    ("PATCH", "/v1/banks/{bank}/memories/{id}", {"pinned": True}),
    ("DELETE", "/v1/banks/{bank}/memories/{id}", None),
    ("POST", "/v1/banks/{bank}/memories/{id}/pin", {"pinned": True}),
    ("POST", "/v1/banks/{bank}/memories/{id}/supersede", {"superseded_by": "fp0000000000000001"}),
    ("GET", "/v1/banks/{bank}/memories/{id}/history", None),
    ("POST", "/v1/banks/{bank}/memories/{id}/purge", None),
    ("GET", "/v1/banks/{bank}/tags", None),
    ("GET", "/v1/banks/{bank}/export", None),
    ("POST", "/v1/banks/{bank}/import", {"s3_key": "imports/main/nothing.jsonl"}),
    ("POST", "/v1/banks/{bank}/import-uploads", None),
]
TOP_ROUTES = [
    ("POST", "/v1/banks", {"name": "fresh"}),
    ("GET", "/v1/banks", None),
]
TOKEN_ROUTES = [
    ("POST", "/v1/api/admin/tokens", {"kind": "api_key", "permissions": ["memory:read"]}),
    ("GET", "/v1/api/admin/tokens", None),
    ("DELETE", "/v1/api/admin/tokens/{tok}", None),
]
ALL_ROUTES = TOP_ROUTES + BANK_ROUTES + TOKEN_ROUTES
READS = {"GET"}
ADMIN_MEMORIES = {"/v1/banks/{bank}/memories/{id}/purge"}

# One wrong-typed body per JSON route, and the field the 400 must name.
WRONG_TYPES = {
    ("POST", "/v1/banks"): ({"name": 5}, "name"),
    ("POST", "/v1/banks/{bank}/restore"): ({"trashed_to": ["x"]}, "trashed_to"),
    ("PUT", "/v1/banks/{bank}/rules/{rule}"): ({"content": 5}, "content"),
    ("POST", "/v1/banks/{bank}/memories"): ({"text": "ok text", "tags": "ops"}, "tags"),
    ("PATCH", "/v1/banks/{bank}/memories/{id}"): ({"pinned": "yes"}, "pinned"),
    ("POST", "/v1/banks/{bank}/memories/{id}/pin"): ({"pinned": 1}, "pinned"),
    ("POST", "/v1/banks/{bank}/memories/{id}/supersede"): ({"superseded_by": 7}, "superseded_by"),
    ("POST", "/v1/banks/{bank}/import"): ({"s3_key": 7}, "s3_key"),
    ("POST", "/v1/api/admin/tokens"): ({"kind": "person", "user_id": "u", "permissions": "memory:read"}, "permissions"),
}
# further wrong types that lax parsing would coerce instead of rejecting
COERCIBLE = [
    ("POST", "/v1/api/admin/tokens", {"kind": "api_key", "expires_at": "4102444800000"}, "expires_at"),
    ("POST", "/v1/api/admin/tokens", {"kind": "api_key", "expires_at": True}, "expires_at"),
    ("POST", "/v1/api/admin/tokens", {"kind": "person", "user_id": 42}, "user_id"),
    ("POST", "/v1/banks/{bank}/memories", {"text": "abc", "pinned": "true"}, "pinned"),
    ("POST", "/v1/banks/{bank}/memories", {"text": "abc", "session_id": 5}, "session_id"),
    ("PATCH", "/v1/banks/{bank}/memories/{id}", {"entities": [1, 2]}, "entities"),
    ("POST", "/v1/banks", {"name": "ok", "description": None}, "description"),
]


class World:
    """A seeded backend: org ``default`` with bank ``main`` (a memory, a rule), a trashed bank,
    org ``acme`` with its own token, and tokens of every flavour."""

    def __init__(self, api):
        self.api = api
        s, b = api.post("/v1/banks/main/memories", {"text": "User prefers short names", "tags": ["style"]})
        assert s == 201, b
        assert api.put("/v1/banks/main/rules/style", {"content": "# brief"})[0] == 200
        assert api.post("/v1/banks/old/memories", {"text": "old bank memory"})[0] == 201
        s, t = api.delete("/v1/banks/old")
        assert s == 200
        self.trashed_to = t["trashed_to"]
        self.victim = mint(kind="api_key", permissions=["memory:read"], label="victim")
        from chalicelib.auth.tokens import token_id_for
        self.victim_id = token_id_for(self.victim)
        self.reader = mint(user_id="r", permissions=["memory:read"])
        self.writer = mint(user_id="w", permissions=["memory:write"])
        self.scoped = mint(user_id="s", permissions=["memory:read", "memory:write", "admin.memories"],
                           banks=["elsewhere"])
        self.other_org = mint(org="acme", user_id="o")
        self.revoked = mint(user_id="rv")
        self.expired = mint(user_id="ex", expires_at=10**13)
        from chalicelib.auth.tokens import token_id_for
        assert api.delete(f"/v1/api/admin/tokens/{token_id_for(self.revoked)}")[0] == 200
        from chalicelib.storage.tables import TokenModel
        row = TokenModel.get(token_id_for(self.expired))
        row.update(actions=[TokenModel.expires_at.set(1000)])  # as if its expiry had passed
        for t in (self.reader, self.writer, self.scoped, self.other_org):
            api.get("/v1/banks", token=t)  # first use touches last_used_at; do it before dumps

    def path(self, template, bank="main", rule="style", mid=MID, tok=None):
        return template.format(bank=bank, rule=rule, id=mid, tok=tok or self.victim_id)

    def expect(self, cases):
        """Run ``(label, method, path, kwargs, status, code)`` cases, each against a dump."""
        failures = []
        using = clients()
        before = dump(using)
        for label, method, path, kw, status, code in cases:
            s, b = self.api.call(method, path, **kw)
            got = (s, b.get("code") if isinstance(b, dict) else b)
            if got != (status, code):
                failures.append(f"{label}: {method} {path} -> {got}, want {(status, code)}; {b}")
            else:
                assert isinstance(b, dict) and isinstance(b.get("error"), str) and b["error"], (label, b)
            after = dump(using)
            try:
                assert_unchanged(before, after)
            except AssertionError as exc:
                failures.append(f"{label}: {method} {path} wrote something: {exc}")
            before = after
        assert not failures, "\n".join(failures)


@pytest.fixture
def world(api):
    return World(api)


def _body_kw(body):
    return {"body": body} if body is not None else {}


def test_malformed_json(world):
    cases = []
    for method, tpl, _body in ALL_ROUTES:
        if method in ("POST", "PUT", "PATCH"):
            cases.append(("json", method, world.path(tpl), {"raw": '{"text": "unterminated'}, 400, "invalid_json"))
    assert len(cases) == 11
    world.expect(cases)


def test_non_object_json_body(world):
    world.expect([("array", "POST", "/v1/banks/main/memories", {"raw": '["a"]'}, 400, "validation_error"),
                  ("string", "PATCH", f"/v1/banks/main/memories/{MID}", {"raw": '"x"'}, 400, "validation_error")])


def test_wrong_types_name_the_field(world):
    cases = []
    for (method, tpl), (body, field) in WRONG_TYPES.items():
        cases.append((field, method, world.path(tpl), {"body": body}, 400, "validation_error"))
    for method, tpl, body, field in COERCIBLE:
        cases.append((field, method, world.path(tpl), {"body": body}, 400, "validation_error"))
    world.expect(cases)
    named = [(m, t, b, f) for (m, t), (b, f) in WRONG_TYPES.items()] + COERCIBLE
    for method, tpl, body, field in named:
        _s, b = world.api.call(method, world.path(tpl), body=body)
        assert b["details"]["field"].split(".")[0] == field, (tpl, b)


def test_unknown_fields_rejected(world):
    world.expect([("extra", "POST", "/v1/banks/main/memories", {"body": {"text": "abc", "colour": "red"}},
                   400, "validation_error")])


BAD_NAMES = ["..%2Fevil", "Bad", "-lead", "a" * 65, "%2E%2E", "a.b", "_x"]


def test_invalid_bank_and_rule_names(world):
    cases = []
    for bad in BAD_NAMES:
        cases += _bad_name_cases(world, bad)
    world.expect(cases)


def _bad_name_cases(world, bad):
    cases = []
    for method, tpl, body in BANK_ROUTES:
        cases.append(("bank", method, world.path(tpl, bank=bad), _body_kw(body), 400, "invalid_name"))
    cases.append(("rule", "PUT", world.path("/v1/banks/main/rules/{rule}", rule=bad), {"body": {"content": "x"}},
                  400, "invalid_name"))
    cases.append(("create", "POST", "/v1/banks", {"body": {"name": bad.replace("%2F", "/").replace("%2E", ".")}},
                  400, "invalid_name"))
    cases.append(("token banks", "POST", "/v1/api/admin/tokens",
                  {"body": {"kind": "api_key", "banks": [bad.replace("%2F", "/")]}}, 400, "invalid_name"))
    return cases


def test_name_limits_accepted(world):
    for name in ("a" * 64, "0", "a_b-c"):
        assert world.api.post("/v1/banks", {"name": name})[0] == 201
        assert world.api.put(f"/v1/banks/main/rules/{name}", {"content": "x"})[0] == 200


def test_text_bytes(world):
    m = "/v1/banks/main/memories"
    p = f"{m}/{MID}"
    cases = []
    for text in ("ab", "  ab  ", "é", "x" * 2001, "é" * 1000 + "a", "   "):
        cases.append((f"save {len(text)}", "POST", m, {"body": {"text": text}}, 400, "validation_error"))
        cases.append((f"patch {len(text)}", "PATCH", p, {"body": {"text": text}}, 400, "validation_error"))
    world.expect(cases)
    s, b = world.api.post(m, {"text": "ab", "tags": ["x"]})
    assert b["details"]["field"] == "text"
    for text in ("abc", "éa", "x" * 2000, "é" * 1000, "  " + "y" * 2000 + "\n"):
        s, b = world.api.post(m, {"text": text})
        assert s == 201, (len(text), b)


def test_tag_and_entity_limits(world):
    m = "/v1/banks/main/memories"
    nine = [f"h{i}" for i in range(9)]
    cases = []
    for field in ("tags", "entities"):
        for value in (nine, ["x" * 65], [f"h{i}" for i in range(70)]):
            cases.append((f"save {field}", "POST", m, {"body": {"text": "limit text", field: value}},
                          400, "validation_error"))
            cases.append((f"patch {field}", "PATCH", f"{m}/{MID}", {"body": {field: value}}, 400, "validation_error"))
    world.expect(cases)
    s, b = world.api.post(m, {"text": "limit text", "tags": nine})
    assert b["details"]["field"] == "tags"
    # duplicates and empties do not count towards the limit; 64 characters are fine
    s, b = world.api.post(m, {"text": "limit text", "tags": [f"h{i}" for i in range(8)] + ["H1", " ", ""],
                              "entities": ["e" * 64]})
    assert s == 201 and len(b["memory"]["tags"]) == 8


def test_missing_revoked_expired_token(world):
    cases = []
    for method, tpl, body in ALL_ROUTES:
        path = world.path(tpl)
        for label, headers in (("missing", {"Authorization": ""}), ("malformed", {"Authorization": "Token abc"}),
                               ("unknown", {"Authorization": "Bearer cairn_nope"}),
                               ("revoked", {"Authorization": f"Bearer {world.revoked}"}),
                               ("expired", {"Authorization": f"Bearer {world.expired}"})):
            cases.append((label, method, path, {**_body_kw(body), "headers": headers}, 401, "unauthorized"))
    world.expect(cases)


def test_missing_permission(world):
    cases = []
    for method, tpl, body in TOP_ROUTES + BANK_ROUTES:
        path = world.path(tpl)
        if tpl in ADMIN_MEMORIES:
            for tok in (world.reader, world.writer):
                cases.append(("admin", method, path, {"token": tok}, 403, "forbidden"))
            continue
        tok = world.writer if method in READS else world.reader
        cases.append(("perm", method, path, {**_body_kw(body), "token": tok}, 403, "forbidden"))
    for method, tpl, body in TOKEN_ROUTES:
        cases.append(("admin.tokens", method, world.path(tpl), {**_body_kw(body), "token": world.writer},
                      403, "forbidden"))
    world.expect(cases)


def test_bank_allow_list(world):
    cases = [("scoped", m, world.path(t), {**_body_kw(b), "token": world.scoped}, 403, "forbidden")
             for m, t, b in BANK_ROUTES]
    cases.append(("scoped create", "POST", "/v1/banks", {"body": {"name": "main"}, "token": world.scoped},
                  403, "forbidden"))
    world.expect(cases)
    s, b = world.api.get("/v1/banks", token=world.scoped)
    assert s == 200 and b["banks"] == []
    s, b = world.api.get("/v1/banks?trashed=true", token=world.scoped)
    assert s == 200 and b["banks"] == []


def test_other_orgs_bank_is_missing(world):
    cases = []
    creating = {"/v1/banks/{bank}/memories", "/v1/banks/{bank}/rules/{rule}", "/v1/banks/{bank}/import",
                "/v1/banks/{bank}/import-uploads"}
    for method, tpl, body in BANK_ROUTES:
        if method != "GET" and tpl in creating:
            continue
        if tpl == "/v1/banks/{bank}/restore":
            body = {"trashed_to": world.trashed_to}
            path = world.path(tpl, bank="old")
            cases.append(("restore", method, path, {"body": body, "token": world.other_org}, 404, "not_found"))
            continue
        cases.append(("acme", method, world.path(tpl), {**_body_kw(body), "token": world.other_org},
                      404, "bank_not_found"))
    world.expect(cases)
    s, b = world.api.get("/v1/banks", token=world.other_org)
    assert b["banks"] == []
    s, b = world.api.get("/v1/banks?trashed=true", token=world.other_org)
    assert b["banks"] == []
    s, b = world.api.get("/v1/api/admin/tokens", token=world.other_org)
    assert all(t["token_id"] != world.victim_id for t in b["tokens"])
    s, b = world.api.delete(f"/v1/api/admin/tokens/{world.victim_id}", token=world.other_org)
    assert (s, b["code"]) == (404, "not_found")


def test_other_orgs_write_creates_own_bank(world):
    before = dump()
    s, b = world.api.post("/v1/banks/main/memories", {"text": "User prefers short names"}, token=world.other_org)
    assert s == 201 and b["memory"]["corroboration"] == 0
    s, b = world.api.get("/v1/banks/main/memories", token=world.other_org)
    assert b["total"] == 1
    s, b = world.api.get(f"/v1/banks/main/memories/{MID}")
    assert b["memory"]["corroboration"] == 0 and b["memory"]["revision"] == 0
    s, b = world.api.get("/v1/banks/main/rules", token=world.other_org)
    assert b["rules"] == []
    assert before["s3"] == dump()["s3"]


def test_body_too_large(world):
    big = "x" * BIG
    cases = [("413", m, world.path(t), {"raw": big}, 413, "payload_too_large") for m, t, _ in ALL_ROUTES]
    cases.append(("413 ndjson", "POST", "/v1/banks/main/import",
                  {"raw": big, "headers": {"Content-Type": "application/x-ndjson"}}, 413, "payload_too_large"))
    cases.append(("413 anonymous", "POST", "/v1/banks/main/memories",
                  {"raw": big, "headers": {"Authorization": ""}}, 413, "payload_too_large"))
    world.expect(cases)


def test_wrong_content_type(world):
    cases = []
    for method, tpl, body in ALL_ROUTES:
        if method in ("POST", "PUT", "PATCH") and body is not None:
            ctype = "application/xml" if tpl.endswith("/import") else "text/plain"
            cases.append(("415", method, world.path(tpl), {"raw": json.dumps(body), "headers": {"Content-Type": ctype}},
                          415, "unsupported_media_type"))
    world.expect(cases)


def test_unknown_route_and_wrong_method(world):
    world.expect([
        ("404", "GET", "/v1/nothing", {}, 404, "not_found"),
        ("404 deep", "POST", "/v1/banks/main/memories/x/y/z", {"body": {}}, 404, "not_found"),
        ("404 root", "GET", "/", {}, 404, "not_found"),
        ("405 banks", "PUT", "/v1/banks", {"body": {"name": "x"}}, 405, "method_not_allowed"),
        ("405 pin", "GET", f"/v1/banks/main/memories/{MID}/pin", {}, 405, "method_not_allowed"),
        ("405 purge", "DELETE", f"/v1/banks/main/memories/{MID}/purge", {}, 405, "method_not_allowed"),
        ("405 tokens", "PATCH", "/v1/api/admin/tokens", {"body": {}}, 405, "method_not_allowed"),
        ("405 token", "GET", "/v1/api/admin/tokens/tok_x", {}, 405, "method_not_allowed"),
    ])


def test_semantic_errors_write_nothing(world):
    m = "/v1/banks/main/memories"
    _s, b = world.api.post(m, {"text": "another live memory"})
    other = b["memory"]["id"]
    world.expect([
        ("dup", "PATCH", f"{m}/{other}", {"body": {"text": "user prefers short names"}}, 409, "duplicate_text"),
        ("self", "POST", f"{m}/{MID}/supersede", {"body": {"superseded_by": MID}}, 400, "validation_error"),
        ("no winner", "POST", f"{m}/{MID}/supersede", {"body": {"superseded_by": "fp0000000000000001"}},
         404, "memory_not_found"),
        ("no memory", "PATCH", f"{m}/fp0000000000000001", {"body": {"pinned": True}}, 404, "memory_not_found"),
        ("no bank", "GET", "/v1/banks/nobank/memories", {}, 404, "bank_not_found"),
        ("no trash", "POST", "/v1/banks/old/restore", {"body": {"trashed_to": "old.ffffffffffff"}}, 404, "not_found"),
        ("cursor", "GET", f"{m}?cursor=!!", {}, 400, "validation_error"),
        ("idem key", "POST", m, {"body": {"text": "with a key"}, "headers": {"Idempotency-Key": "k" * 256}},
         400, "validation_error"),
        ("grant", "POST", "/v1/api/admin/tokens",
         {"body": {"kind": "api_key", "permissions": ["admin.tokens"]}, "token": world.writer}, 403, "forbidden"),
        ("kind", "POST", "/v1/api/admin/tokens", {"body": {"kind": "robot"}}, 400, "validation_error"),
        ("person no user", "POST", "/v1/api/admin/tokens", {"body": {"kind": "person"}}, 400, "validation_error"),
        ("past expiry", "POST", "/v1/api/admin/tokens", {"body": {"kind": "api_key", "expires_at": 1}},
         400, "validation_error"),
        ("import key", "POST", "/v1/banks/main/import", {"body": {"s3_key": "imports/other/x.jsonl"}},
         400, "validation_error"),
    ])
