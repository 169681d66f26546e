"""The team space listing: a page at a time by id, every space of the org for ``context:admin``,
else only the spaces the caller may read (a read grant no deny rule takes away); bad parameters
are 400 with a stable code and write nothing."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.api.conftest import mint
from tests.api.state import assert_unchanged, dump
from tests.api.team_support import SPACES, World
from tests.api.test_search_freshness import CallCounter


@pytest.fixture
def world(api):
    return World(api)


def _all(api, token=None, limit: int | None = None) -> tuple[list[str], int]:
    """Every space id of the listing read page after page, and the number of pages."""
    ids, cursor, pages = [], None, 0
    while True:
        q = [f"limit={limit}"] if limit else []
        q += [f"cursor={cursor}"] if cursor else []
        s, b = api.get(SPACES + ("?" + "&".join(q) if q else ""), token=token)
        assert s == 200, b
        ids += [x["id"] for x in b["spaces"]]
        pages += 1
        cursor = b.get("next_cursor")
        if cursor is None:
            assert set(b) == {"spaces"}
            return ids, pages
        assert set(b) == {"spaces", "next_cursor"} and len(b["spaces"]) == (limit or 50)


def test_each_caller_lists_the_spaces_it_may_read(world, api):
    first, second = world.space, world.new_space(name="Second")
    third = api.post(SPACES, {"name": "Admins only"})[1]["id"]
    api.post(SPACES, {"name": "Elsewhere"}, token=mint(org="other-org"))
    assert api.put("/api/v1/context/deny-rules", {"rules": [{"memberId": "bob", "spaceId": second},
                                                             {"memberId": "carol"}]})[0] == 200
    t = world.tokens
    assert _all(api) == (sorted([first, second, third]), 1)  # context:admin: the org's every space
    assert _all(api, t["alice"]) == (sorted([first, second]), 1)
    assert _all(api, t["alice"], limit=1) == (sorted([first, second]), 2)
    assert _all(api, t["bob"]) == ([first], 1)  # denied in the second
    assert _all(api, t["reader"]) == (sorted([first, second]), 1)
    for who in ("carol", "writer", "stranger", "other"):  # denied everywhere, write grant only, none
        assert _all(api, t[who]) == ([], 1), who
    _s, b = api.get(f"{SPACES}?limit=1", token=t["bob"])
    assert b["spaces"][0] == api.get(f"{SPACES}/{first}")[1]


def test_bad_parameters_are_400_and_write_nothing(world, api):
    world.new_space(name="Second")
    from chalicelib.core.store import encode_cursor
    cursor = api.get(f"{SPACES}?limit=1")[1]["next_cursor"]
    forged = [encode_cursor("context.spaces", "default", {"after": "a#b"}),
              encode_cursor("structured.workstream", "default", {"after": "ws"}), "!!", "e30"]
    other = world.tokens["other"]
    before = dump()
    for query, token, field in (("limit=0", None, "limit"), ("limit=201", None, "limit"), ("limit=x", None, "limit"),
                                (f"cursor={cursor}", other, "cursor"),
                                *((f"cursor={c}", None, "cursor") for c in forged)):
        s, e = api.get(f"{SPACES}?{query}", token=token)
        assert (s, e["code"], e["details"]["field"]) == (400, "validation_error", field), (query, e)
    assert_unchanged(before)


def test_lists_page_past_a_thousand_spaces(world, api):
    """1,100 spaces seeded in-process beside another org's: a member reads exactly the spaces it
    holds a read grant in (less a denied one), each once, in id order; the admin reads them all."""
    from chalicelib.storage.tables import TeamSpaceModel, bind
    bind()
    ids = [f"spc_{i:05d}" for i in range(1100)]
    with TeamSpaceModel.batch_write() as batch:
        for org in ("default", "other-org"):
            for sid in ids:
                batch.save(TeamSpaceModel(org_id=org, sk=f"space#{sid}", entries_live=0, version=1, updated_at=1,
                                          data={"id": sid, "name": sid, "kind": "team", "classification": "internal"}))
        for i, sid in enumerate(ids):
            if i % 3 == 0:
                perms = ["context:space:read"] if i % 2 else ["context:space:write"]
                batch.save(TeamSpaceModel(org_id="default", sk=f"member#{sid}#alice", data={"permissions": perms},
                                          updated_at=1))
    assert api.put("/api/v1/context/deny-rules", {"rules": [{"memberId": "alice", "spaceId": "spc_00003"}]})[0] == 200
    want = sorted([sid for i, sid in enumerate(ids) if i % 3 == 0 and i % 2 and i != 3] + [world.space])
    assert len(want) == 183
    counter = CallCounter().install()
    try:
        assert _all(api, world.tokens["alice"], 200) == (want, 1)
    finally:
        counter.uninstall()
    # her grants in 1,101 spaces: a BatchGetItem per 100 spaces, never a GetItem per space
    calls = Counter(op for op, _ in counter.calls)
    assert calls["dynamodb.BatchGetItem"] == 12 and calls["dynamodb.GetItem"] <= 3, calls
    assert _all(api, world.tokens["alice"]) == (want, 4)
    everything = sorted([*ids, world.space])
    assert _all(api, None, 200) == (everything, 6)
    assert _all(api, None) == (everything, 23)


def test_an_empty_limit_is_the_default_and_the_document_admits_it(world, api):
    """``?limit=`` reads as the default page size; the document must list it as valid input, or a
    fuzzer sends it expecting a 400 (and 0, 201 or ``x`` stay invalid there)."""
    from jsonschema import Draft202012Validator

    from chalicelib.api.openapi import document
    params = document()["paths"][SPACES]["get"]["parameters"]
    schema = Draft202012Validator(next(p for p in params if p["name"] == "limit")["schema"])
    assert schema.is_valid("") and schema.is_valid(1) and schema.is_valid(200)
    assert not any(schema.is_valid(v) for v in (0, 201, "x", " "))
    s, b = api.get(f"{SPACES}?limit=")
    assert s == 200 and [x["id"] for x in b["spaces"]] == [world.space]
