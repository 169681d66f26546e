"""An entry's last accepted revision (``GET .../entries/{id}/accepted``): the text and
``documentSha256`` a reviewer accepted, kept while the entry is edited, superseded or archived;
read with the entry's read permission and through DLP; 404 with a stable code when there is none,
nothing written on a refusal."""

from __future__ import annotations

import pytest

from tests.api.state import assert_unchanged, dump
from tests.api.team_support import MEM, World

SECRET = "hunter2x"


@pytest.fixture
def world(api):
    return World(api)


def _accepted(world, who: str, eid: str):
    return world.call(who, "GET", f"{MEM}/entries/{eid}/accepted")


def test_the_accepted_revision_outlives_later_edits(world):
    e = world.create(title="Use Postgres")
    world.write_text("alice", e["id"], "Orders live in Postgres.")
    reviewed = world.entry("bob", e["id"])
    st, acc = world.accept("bob", e["id"], reviewed["documentSha256"])
    assert st == 200, acc
    st, got = _accepted(world, "reader", e["id"])
    assert st == 200, got
    assert got == {"entryId": e["id"], "revision": 1, "title": "Use Postgres", "text": "Orders live in Postgres.",
                   "dlpFindings": [], "documentSha256": reviewed["documentSha256"], "acceptedBy": "bob",
                   "acceptedAt": acc["acceptedAt"]}
    world.write_text("alice", e["id"], " Invoices too.")
    world.call("alice", "PATCH", f"{MEM}/entries/{e['id']}", {"title": "Use Postgres 16"})
    now = world.entry("reader", e["id"])
    assert now["text"] == "Orders live in Postgres. Invoices too." and now["documentSha256"] != got["documentSha256"]
    assert _accepted(world, "reader", e["id"]) == (200, got)  # still the reviewed one: the base of a diff
    assert world.accept("carol", e["id"], now["documentSha256"])[0] == 200
    st, second = _accepted(world, "alice", e["id"])
    assert (second["revision"], second["title"], second["text"], second["documentSha256"], second["acceptedBy"]) \
        == (2, "Use Postgres 16", now["text"], now["documentSha256"], "carol")
    assert world.call("alice", "POST", f"{MEM}/entries/{e['id']}/archive")[0] == 200
    assert _accepted(world, "reader", e["id"]) == (200, second)


def test_an_empty_text_and_dlp_redaction(world):
    e = world.create(title="Title only")
    assert world.accept("bob", e["id"])[0] == 200
    assert _accepted(world, "reader", e["id"])[1]["text"] == ""
    e = world.create(title="DB login")
    world.write_text("alice", e["id"], f"Connect as admin; the password is {SECRET}.")
    assert world.accept("bob", e["id"])[0] == 200
    st, got = _accepted(world, "reader", e["id"])
    assert st == 200 and SECRET not in str(got) and "[REDACTED:password]" in got["text"]


def test_refusals_have_stable_codes_and_write_nothing(world, api):
    draft = world.create(title="Never accepted")
    e = world.create(title="Accepted")
    world.write_text("alice", e["id"], "Reviewed text.")
    assert world.accept("bob", e["id"])[0] == 200
    denied = world.new_space(name="Denied")
    hidden = world.create(title="In the denied space", space=denied)
    world.write_text("alice", hidden["id"], "Hidden text.")
    assert world.accept("bob", hidden["id"])[0] == 200
    assert api.put("/api/v1/context/deny-rules", {"rules": [{"memberId": "reader", "spaceId": denied}]})[0] == 200
    before = dump()
    for who, eid, status, code in (("reader", draft["id"], 404, "entry_not_accepted"),
                                   ("stranger", e["id"], 404, "not_found"), ("writer", e["id"], 404, "not_found"),
                                   ("other", e["id"], 404, "not_found"), ("reader", hidden["id"], 404, "not_found"),
                                   ("reader", "ent_missing", 404, "not_found"),
                                   ("reader", "bad id!", 404, "not_found")):
        st, body = _accepted(world, who, eid)
        assert (st, body["code"]) == (status, code), (who, eid, body)
        assert "Hidden text" not in str(body) and "Reviewed text" not in str(body)
    assert_unchanged(before)


def test_a_missing_projection_is_409_damaged(world, api):
    e = world.create(title="Accepted")
    assert world.accept("bob", e["id"])[0] == 200
    from chalicelib.core import store
    from chalicelib.team.accept import namespace
    inc = store.get_bank_row("default", namespace(world.space)).incarnation
    store.get_item(inc, e["id"]).delete()
    st, body = _accepted(world, "reader", e["id"])
    assert (st, body["code"], body["details"]["reason"]) == (409, "damaged", "missing")
