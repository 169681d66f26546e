"""The workstream, project and session listings: a page at a time by id, each showing only what
the caller may see (owner, project members, a session's user or anonymous token, ``service`` and
``admin.memories`` where the rules of those objects say so); bad parameters are 400 with a stable
code and write nothing."""

from __future__ import annotations

import dataclasses

import pytest

from tests.api.conftest import mint
from tests.api.state import assert_unchanged, dump

RW = ["memory:read", "memory:write"]


def _all(api, path: str, key: str, token=None, limit: int | None = None) -> tuple[list[str], int]:
    """Every id of the listing read page after page, and the number of pages."""
    ids, cursor, pages = [], None, 0
    id_field = key[:-1] + "_id"
    while True:
        q = [f"limit={limit}"] if limit else []
        q += [f"cursor={cursor}"] if cursor else []
        s, b = api.get(path + ("?" + "&".join(q) if q else ""), token=token)
        assert s == 200, b
        ids += [x[id_field] for x in b[key]]
        pages += 1
        cursor = b.get("next_cursor")
        if cursor is None:
            assert set(b) == {key}
            return ids, pages
        assert set(b) == {key, "next_cursor"} and len(b[key]) == (limit or 50)


def test_each_caller_lists_what_it_may_see(api):
    alice, bob = mint(user_id="alice", permissions=RW), mint(user_id="bob", permissions=RW)
    anon = mint(kind="api_key", permissions=RW)
    other_anon = mint(kind="api_key", permissions=RW)
    admin_mem = mint(user_id="ann", permissions=["memory:read", "admin.memories"])
    assert api.post("/v1/api/workstreams", {"workstream_id": "ws-a", "title": "A"}, token=alice)[0] == 201
    assert api.post("/v1/api/workstreams", {"workstream_id": "ws-b", "title": "B"}, token=bob)[0] == 201
    for pid, tok in (("p-a", alice), ("p-b", bob), ("p-c", bob), ("p-d", bob)):
        assert api.post("/v1/api/projects", {"project_id": pid, "name": pid}, token=tok)[0] == 201
    assert api.put("/v1/api/projects/p-c/members/alice", {"access": "read"}, token=bob)[0] == 200
    assert api.put("/v1/api/projects/p-d/members/alice", {"access": "write"}, token=bob)[0] == 200
    assert api.patch("/v1/api/projects/p-d", {"active": False}, token=bob)[0] == 200
    own = api.post("/v1/api/sessions", {"workstream_id": "ws-a"}, token=alice)[1]["session_id"]
    bobs = api.post("/v1/api/sessions", {}, token=bob)[1]["session_id"]
    anons = api.post("/v1/api/sessions", {}, token=anon)[1]["session_id"]
    assert api.post("/v1/api/workstreams", {"workstream_id": "ws-g"}, token=mint(org="globex"))[0] == 201

    assert _all(api, "/v1/api/workstreams", "workstreams", alice) == (["ws-a"], 1)
    assert _all(api, "/v1/api/workstreams", "workstreams", bob) == (["ws-b"], 1)
    assert _all(api, "/v1/api/workstreams", "workstreams", anon) == ([], 1)
    assert _all(api, "/v1/api/workstreams", "workstreams") == (["ws-a", "ws-b"], 1)  # service: the org's
    assert _all(api, "/v1/api/projects", "projects", alice) == (["p-a", "p-c"], 1)  # p-d is inactive
    assert _all(api, "/v1/api/projects", "projects", bob) == (["p-b", "p-c", "p-d"], 1)
    assert _all(api, "/v1/api/projects", "projects", admin_mem) == (["p-a", "p-b", "p-c", "p-d"], 1)
    assert _all(api, "/v1/api/sessions", "sessions", alice) == ([own], 1)
    assert _all(api, "/v1/api/sessions", "sessions", anon) == ([anons], 1)
    assert _all(api, "/v1/api/sessions", "sessions", other_anon) == ([], 1)
    assert _all(api, "/v1/api/sessions", "sessions") == (sorted([own, bobs, anons]), 1)
    _s, b = api.get("/v1/api/sessions", token=alice)
    assert b["sessions"][0] == {"session_id": own, "kind": "interactive", "user_id": "alice",
                                "workstream_id": "ws-a", "project_id": None, "parent_session_id": None,
                                "memory_enabled": True}
    _s, b = api.get("/v1/api/projects?limit=1", token=bob)
    assert b["projects"] == [{"project_id": "p-b", "name": "p-b", "active": True, "owner": "bob"}]
    assert _all(api, "/v1/api/projects", "projects", bob, limit=1) == (["p-b", "p-c", "p-d"], 3)


@pytest.mark.parametrize("path", ["/v1/api/workstreams", "/v1/api/projects", "/v1/api/sessions"])
def test_bad_parameters_are_400_and_write_nothing(api, path):
    for i in range(2):
        api.post("/v1/api/workstreams", {"workstream_id": f"ws-{i}"})
        api.post("/v1/api/projects", {"project_id": f"p-{i}", "name": "P"})
        api.post("/v1/api/sessions", {})
    from chalicelib.core.store import encode_cursor
    cursor = api.get(path + "?limit=1")[1]["next_cursor"]
    other_listing = api.get(("/v1/api/projects" if "workstreams" in path else "/v1/api/workstreams")
                            + "?limit=1")[1]["next_cursor"]
    kind = path.rsplit("/", 1)[1][:-1]
    forged = [encode_cursor(f"structured.{kind}", "default", {"after": "bad#id"}),
              encode_cursor(f"structured.{kind}", "default", {"after": "x", "more": "y"}), "!!", "e30"]
    globex = mint(org="globex")
    confined, write_only = mint(permissions=["memory:read"], banks=["main"]), mint(permissions=["memory:write"])
    before = dump()
    for query, token, field in (("limit=0", None, "limit"), ("limit=201", None, "limit"), ("limit=ten", None, "limit"),
                                (f"cursor={other_listing}", None, "cursor"),
                                (f"cursor={cursor}", globex, "cursor"),
                                *((f"cursor={c}", None, "cursor") for c in forged)):
        s, e = api.get(f"{path}?{query}", token=token)
        assert (s, e["code"], e["details"]["field"]) == (400, "validation_error", field), (query, e)
    s, e = api.get(path, token=confined)
    assert (s, e["code"]) == (403, "forbidden")
    s, e = api.get(path, token=write_only)
    assert s == 403, e
    assert_unchanged(before)


def test_a_damaged_object_is_left_out_and_counted(api, client):
    from chalicelib.storage.tables import StructuredModel
    api.post("/v1/api/workstreams", {"workstream_id": "ws-a"})
    api.post("/v1/api/workstreams", {"workstream_id": "ws-b"})
    StructuredModel(org_id="default", sk="workstream#ws-a", kind="workstream", data={"title": 3},
                    created_at=1).save()
    resp = client.http.get("/v1/api/workstreams", headers={"Authorization": f"Bearer {api.token}"})
    assert resp.status_code == 200 and resp.headers["X-Cairn-Damaged"] == "1"
    assert [w["workstream_id"] for w in resp.json_body["workstreams"]] == ["ws-b"]


def _seed(rows) -> None:
    """Write structured objects in-process, 25 a batch."""
    from chalicelib.storage.tables import StructuredModel, bind
    from chalicelib.structured import objects
    bind()
    with StructuredModel.batch_write() as batch:
        for org, kind, oid, fields in rows:
            batch.save(objects.new(org, kind, (oid,), fields))


def _session(sid: str, user: str | None, token_id: str = "tok") -> dict:
    from chalicelib.structured.sessions import Session
    return dataclasses.asdict(Session(session_id=sid, kind="interactive", user_id=user, workstream_id=None,
                                      project_id=None, parent_session_id=None, memory_enabled=True,
                                      resumed=False, token_id=token_id))


def test_lists_page_past_a_thousand_objects(api):
    """1,200 objects of each kind seeded in-process across owners, members, tokens and another org:
    each visible one appears exactly once, in id order, page after page, and nothing else does."""
    alice = mint(user_id="alice", permissions=RW)
    n = 1200
    owner = {i: "alice" if i % 3 else "bob" for i in range(n)}
    rows = []
    for i in range(n):
        rows.append(("default", "workstream", f"ws-{i:05d}", {"workstream_id": f"ws-{i:05d}", "title": "t",
                                                              "owner": owner[i]}))
        rows.append(("default", "project", f"p-{i:05d}", {"project_id": f"p-{i:05d}", "name": "p",
                                                          "active": i % 10 != 0, "owner": owner[i]}))
        rows.append(("default", "session", f"ses_{i:05d}", _session(f"ses_{i:05d}", owner[i] if i % 5 else None)))
        rows.append(("globex", "workstream", f"ws-{i:05d}x", {"workstream_id": f"ws-{i:05d}x", "owner": "alice"}))
        rows.append(("globex", "session", f"ses_{i:05d}x", _session(f"ses_{i:05d}x", "alice")))
    member = [i for i in range(n) if owner[i] == "bob" and i % 2 == 0]
    rows += [("default", "member", f"p-{i:05d}#alice", {"project_id": f"p-{i:05d}", "user_id": "alice",
                                                         "access": "read"}) for i in member]
    _seed(rows)

    mine = [i for i in range(n) if owner[i] == "alice"]
    want_ws = [f"ws-{i:05d}" for i in mine]
    want_p = sorted(f"p-{i:05d}" for i in set(mine) | {i for i in member if i % 10 != 0})
    want_s = [f"ses_{i:05d}" for i in mine if i % 5]
    for limit, pages in ((200, 4), (None, 16)):
        assert _all(api, "/v1/api/workstreams", "workstreams", alice, limit) == (want_ws, pages)
    assert _all(api, "/v1/api/projects", "projects", alice, 200) == (want_p, -(-len(want_p) // 200))
    assert _all(api, "/v1/api/sessions", "sessions", alice, 200) == (want_s, -(-len(want_s) // 200))
    everything = [f"ses_{i:05d}" for i in range(n)]
    assert _all(api, "/v1/api/sessions", "sessions", None, 200) == (everything, 6)  # service: the org's
