"""DLP catches passwords however they are written, and titles, snippets and retrieval pass the
same policy as the text wherever they are served."""

from __future__ import annotations

import pytest

from tests.api.team_support import MEM, SPACES, World

SECRET = "hunter2x"
FORMS = [f"password: {SECRET}", f"password={SECRET}", f"PGPASSWORD={SECRET}", f"the password is {SECRET}",
         f"The staging DB password was {SECRET}.", f"passphrase: {SECRET}"]


@pytest.fixture
def world(api):
    return World(api)


def _accepted(world, title, text):
    e = world.create(title=title)
    world.write_text("alice", e["id"], text)
    return e, world.accept("bob", e["id"])


def test_redact_policy_gates_title_text_snippet_list_and_retrieval(world):
    e, (st, body) = _accepted(world, f"DB login: password={SECRET}", f"Connect as admin; the password is {SECRET}.")
    assert st == 200, body
    got = world.entry("reader", e["id"])
    assert SECRET not in got["title"] and SECRET not in got["text"] and "password" in got["dlpFindings"]
    st, listed = world.call("reader", "GET", f"{MEM}/entries?spaceId={world.space}&q=admin")
    assert st == 200 and listed["entries"] and SECRET not in str(listed)
    assert "[REDACTED:password]" in listed["entries"][0]["snippet"]
    st, plain = world.call("reader", "GET", f"{MEM}/entries?spaceId={world.space}")
    assert SECRET not in str(plain)
    st, found = world.retrieve("reader", "connect admin login")
    assert st == 200 and found["results"] and SECRET not in str(found)
    assert st == 200 and SECRET not in str(world.call("alice", "PATCH", f"{MEM}/entries/{e['id']}",
                                                      {"title": f"pwd: {SECRET}"})[1])


@pytest.mark.parametrize("policy", ["drop", "block_source"])
@pytest.mark.parametrize("where", ["title", "text"])
def test_refusing_policies_refuse_a_password_in_title_or_text(world, api, policy, where):
    assert api.patch(f"{SPACES}/{world.space}", {"dlp_policy": policy})[0] == 200
    title, text = ("Login", "Orders live in Postgres.")
    if where == "title":
        title = f"the password is {SECRET}"
    else:
        text = f"PGPASSWORD={SECRET} psql orders"
    e, (st, body) = _accepted(world, title, text)
    assert (st, body["code"]) == (422, "dlp_blocked") and body["details"]["kinds"] == ["password"]
    st, found = world.retrieve("reader", "orders login postgres")
    assert st == 200 and found["results"] == [] and SECRET not in str(found)
    assert SECRET not in str(world.entry("reader", e["id"]))
