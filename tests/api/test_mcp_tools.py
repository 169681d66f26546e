"""Each MCP tool in process, beyond save/recall/forget (tests/api/test_mcp.py): the bank tools'
round trip, the Turnstone session memory tool, and team memory through an agent: a draft stays out
of retrieval until a second person accepts the hash the tool reported."""

from __future__ import annotations

import re

import pytest

from tests.api.conftest import mint
from tests.api.team_support import MEM, Editor
from tests.api.team_support import World as TeamWorld
from tests.api.test_mcp import Mcp

RW = ["memory:read", "memory:write"]


@pytest.fixture
def mcp(client, token):
    return Mcp(client, token)


def ok(result: dict) -> dict:
    assert result["isError"] is False, result
    return result["structuredContent"]


def err(result: dict) -> str:
    assert result["isError"] is True, result
    return result["structuredContent"]["code"]


def test_bank_tools_round_trip(mcp, api):
    assert ok(mcp.call("bank_create", name="ops", description="Operations"))["created"] is True
    assert ok(mcp.call("bank_create", name="ops"))["created"] is False  # idempotent, as the hint says
    assert [b["name"] for b in ok(mcp.call("bank_list"))["banks"]] == ["ops"]
    first = ok(mcp.call("memory_save", bank="ops", text="Backups run nightly at two."))["memory"]["id"]
    second = ok(mcp.call("memory_save", bank="ops", text="Backups run nightly at three."))["memory"]["id"]
    again = ok(mcp.call("memory_save", bank="ops", text="Backups run nightly at two."))
    assert again["created"] is False and again["memory"]["corroboration"] == 1
    assert ok(mcp.call("memory_pin", bank="ops", memory_id=second, pinned=True))["memory"]["pinned"] is True
    updated = ok(mcp.call("memory_update", bank="ops", memory_id=second, tags=["backup"]))
    assert updated["memory"]["tags"] == ["backup"]
    assert [m["id"] for m in ok(mcp.call("memory_list", bank="ops", tag="backup"))["memories"]] == [second]
    assert ok(mcp.call("memory_supersede", bank="ops", memory_id=first, superseded_by=second))["memory"][
        "superseded_by"] == second
    listed = ok(mcp.call("memory_list", bank="ops", limit=1, include_superseded=True))
    assert len(listed["memories"]) == 1 and listed.get("next_cursor")
    history = ok(mcp.call("memory_history", bank="ops", memory_id=first))
    assert len(history["revisions"]) >= 3
    assert ok(mcp.call("rule_set", bank="ops", name="style", content="# Be brief.\n"))
    assert [r["name"] for r in ok(mcp.call("rules_list", bank="ops"))["rules"]] == ["style"]
    preview = ok(mcp.call("context_preview", bank="ops", query="when do backups run?"))
    assert "Be brief." in preview["system_prompt_section"] and preview["memories"]
    _, rest = api.get("/v1/banks/ops")
    assert rest["bank"]["memories"] == 1 and rest["bank"]["rules"] == 1


def test_the_session_memory_tool_runs_the_turnstone_actions(mcp, api):
    status, session = api.post("/v1/api/sessions", {"kind": "interactive"})
    assert status == 201, session
    sid = session["session_id"]
    saved = ok(mcp.call("structured_memory", session_id=sid, action="save", name="db_choice",
                        content="We use Postgres for billing.", type="reference", scope="user",
                        description="Which database billing uses"))
    assert saved["name"] == "db_choice"
    got = ok(mcp.call("structured_memory", session_id=sid, action="get", name="db_choice", scope="user"))
    assert got["content"] == "We use Postgres for billing."
    found = ok(mcp.call("structured_memory", session_id=sid, action="search", query="postgres billing"))
    assert [m["name"] for m in found["memories"]] == ["db_choice"]
    ok(mcp.call("structured_memory", session_id=sid, action="delete", name="db_choice", scope="user"))
    assert err(mcp.call("structured_memory", session_id=sid, action="get", name="db_choice",
                        scope="user")) == "memory_not_found"
    assert err(mcp.call("structured_memory", session_id="no-such-session", action="list")) == "session_not_found"
    assert err(mcp.call("structured_memory", session_id=sid, action="fly")) == "validation_error"


@pytest.fixture
def team(api):
    return TeamWorld(api)


def _agent(client, user: str, permissions=RW) -> Mcp:
    return Mcp(client, mint(user_id=user, permissions=permissions))


def test_a_draft_is_retrieved_only_after_a_second_person_accepts_the_reported_hash(client, team):
    alice = _agent(client, "alice")
    draft = ok(alice.call("team_draft", space_id=team.space, kind="decision", title="Queue choice",
                          text="We chose SQS FIFO for the extraction queue."))
    assert draft["status"] == "draft" and draft["text"] == "We chose SQS FIFO for the extraction queue."
    assert ok(alice.call("team_search", space_ids=[team.space], query="extraction queue"))["results"] == []
    st, body = team.accept("alice", draft["id"], draft["documentSha256"])
    assert st == 403 and body["code"] == "context.memory.self_accept"  # its author may not accept it
    st, body = team.accept("bob", draft["id"], draft["documentSha256"])
    assert st == 200, body
    found = ok(alice.call("team_search", space_ids=[team.space], query="extraction queue"))
    assert [r["entryId"] for r in found["results"]] == [draft["id"]] and found["attributionId"]


def test_editing_a_draft_replaces_its_text_and_merges_with_a_concurrent_editor(client, team):
    alice = _agent(client, "alice")
    draft = ok(alice.call("team_draft", space_id=team.space, kind="note", title="Runbook",
                          text="Step one: page the on-call."))
    editor = Editor()  # carol edits the same text in her browser meanwhile
    editor.load(team.entry("carol", draft["id"])["snapshot"])
    st, body = team.post_update("carol", draft["id"], editor.insert(0, "Carol: "))
    assert st == 200, body
    edited = ok(alice.call("team_draft", entry_id=draft["id"], seq=draft["seq"],
                           text="Step one: page the on-call. Step two: log it."))
    assert edited["text"] == "Carol: Step one: page the on-call. Step two: log it."  # both edits merged
    unchanged = ok(alice.call("team_draft", entry_id=draft["id"], text=edited["text"]))
    assert unchanged["seq"] == edited["seq"]  # the same text again writes nothing
    renamed = ok(alice.call("team_draft", entry_id=draft["id"], title="Runbook v2", text="Only this."))
    assert (renamed["title"], renamed["text"]) == ("Runbook v2", "Only this.")  # no seq: it replaces
    assert err(alice.call("team_draft", entry_id=draft["id"], seq=renamed["seq"] + 5, text="Ahead.")) == "conflict"


def test_a_refused_draft_text_creates_and_changes_nothing(client, team):
    alice = _agent(client, "alice")
    draft = ok(alice.call("team_draft", space_id=team.space, kind="note", title="Keep", text="Original text."))
    before = team.entry("alice", draft["id"])
    assert err(alice.call("team_draft", space_id=team.space, kind="note", title="Big", text="x" * 70000)) == \
        "text_too_large"
    assert err(alice.call("team_draft", entry_id=draft["id"], title="Renamed", kind="decision",
                          text="x" * 70000)) == "text_too_large"
    assert err(alice.call("team_draft", entry_id=draft["id"], title="Renamed", seq=before["seq"] + 3,
                          text="Ahead of the entry.")) == "conflict"
    assert team.entry("alice", draft["id"]) == before
    _, listed = team.call("alice", "GET", f"{MEM}/entries?spaceId={team.space}")
    assert [e["id"] for e in listed["entries"]] == [draft["id"]]


def test_a_member_token_without_memory_permissions_searches_but_does_not_draft(client, team):
    member = _agent(client, "alice", [])  # a team member's token as minted for the REST team routes
    listed = member.tools()
    assert set(listed) == {"space_list", "team_search"}
    assert ok(member.call("team_search", space_ids=[team.space], query="anything"))["results"] == []
    assert err(member.call("team_draft", space_id=team.space, kind="note", title="No", text="Not allowed.")) == \
        "forbidden"


def test_team_draft_refusals_write_nothing(client, team, api):
    alice = _agent(client, "alice")
    reader = _agent(client, "reader")
    stranger = _agent(client, "stranger")
    draft = ok(alice.call("team_draft", space_id=team.space, kind="note", title="Keep", text="Original text."))
    before = team.entry("alice", draft["id"])
    assert err(reader.call("team_draft", entry_id=draft["id"], text="Reader rewrote it.")) == "forbidden"
    assert err(stranger.call("team_draft", entry_id=draft["id"], text="Stranger rewrote it.")) == "not_found"
    assert err(alice.call("team_draft", kind="note", title="No space", text="Where?")) == "validation_error"
    status, body = alice.rpc("tools/call", {"name": "team_draft", "arguments": {"entry_id": draft["id"],
                                                                             "text": "bad\x00text"}})
    assert status == 400 and body["error"]["data"]["code"] == "validation_error"  # refused at the edge
    assert err(alice.call("team_draft", entry_id=draft["id"], text="bad\x07text")) == "validation_error"
    assert err(alice.call("team_draft", entry_id=draft["id"], text="x" * 70000)) == "text_too_large"
    read_only = _agent(client, "alice", ["memory:read"])
    assert err(read_only.call("team_draft", entry_id=draft["id"], text="Read-only rewrote it.")) == "forbidden"
    assert team.entry("alice", draft["id"]) == before
    _, listed = team.call("alice", "GET", f"{MEM}/entries?spaceId={team.space}")
    assert [e["id"] for e in listed["entries"]] == [draft["id"]]


def test_a_new_draft_whose_text_write_fails_names_the_draft_for_the_retry(client, team, monkeypatch):
    """Past the checks, only a failure between creating the draft and writing its text (here the
    write itself) leaves a draft behind: its id is in the error, so a retry edits it."""
    from chalicelib.errors import BackendUnavailable
    from chalicelib.team import entries

    def unavailable(*args, **kwargs):
        raise BackendUnavailable()

    alice = _agent(client, "alice")
    monkeypatch.setattr(entries, "write_text", unavailable)
    refused = alice.call("team_draft", space_id=team.space, kind="note", title="Second", text="Never written.")
    assert err(refused) == "backend_unavailable"
    entry_id = refused["structuredContent"]["details"]["entryId"]
    assert team.entry("alice", entry_id)["text"] == ""  # created, empty: the retry edits this one


def test_a_text_whose_update_would_be_too_large_creates_and_changes_nothing(client, team):
    """65,536 bytes pass the text cap, but the update that writes them carries a few more bytes."""
    alice = _agent(client, "alice")
    draft = ok(alice.call("team_draft", space_id=team.space, kind="note", title="Keep", text="Original text."))
    before = team.entry("alice", draft["id"])
    full = "a" * 65536
    assert err(alice.call("team_draft", space_id=team.space, kind="note", title="Full", text=full)) == \
        "update_too_large"
    assert err(alice.call("team_draft", entry_id=draft["id"], title="Renamed", kind="decision", text=full)) == \
        "update_too_large"
    assert team.entry("alice", draft["id"]) == before  # neither the text nor the title and kind changed
    _, listed = team.call("alice", "GET", f"{MEM}/entries?spaceId={team.space}")
    assert [e["id"] for e in listed["entries"]] == [draft["id"]]


def test_a_spent_minute_refuses_a_new_draft_before_it_is_created(client, team, monkeypatch):
    from chalicelib import clock
    alice = _agent(client, "alice")
    monkeypatch.setenv("KEYSTONE_CONTEXT_MEMORY_UPDATES_PER_MINUTE", "1")  # five a minute across entries
    monkeypatch.setattr(clock, "now_ms", lambda: 1_800_000_000_000 + 5_000)  # 5 s into a minute
    for i in range(5):
        ok(alice.call("team_draft", space_id=team.space, kind="note", title=f"Draft {i}", text="Spends the minute."))
    assert err(alice.call("team_draft", space_id=team.space, kind="note", title="Sixth", text="Over.")) == \
        "rate_limited"
    _, listed = team.call("alice", "GET", f"{MEM}/entries?spaceId={team.space}")
    assert len(listed["entries"]) == 5  # no empty sixth draft


def test_seq_and_space_belong_to_their_own_forms(client, team):
    alice = _agent(client, "alice")
    other = team.new_space(name="Other team")
    assert err(alice.call("team_draft", space_id=team.space, kind="note", title="New", text="Text.", seq=3)) == \
        "validation_error"
    draft = ok(alice.call("team_draft", space_id=team.space, kind="note", title="Here", text="Stays here."))
    assert err(alice.call("team_draft", entry_id=draft["id"], space_id=other, text="Moved?")) == "validation_error"
    assert team.entry("alice", draft["id"])["spaceId"] == team.space
    _, listed = team.call("alice", "GET", f"{MEM}/entries?spaceId={team.space}")
    assert [e["id"] for e in listed["entries"]] == [draft["id"]]


# --- what a model reads: summaries, bank creation, sessions it may open -------------------------

def test_memory_save_says_when_it_created_the_bank(mcp, api):
    """A misspelt bank is created on first use: the result says so, in its body and its text."""
    ok(mcp.call("bank_create", name="ops"))
    first = mcp.call("memory_save", bank="opps", text="Backups run nightly at two.")
    assert ok(first)["bank_created"] is True and ok(first)["created"] is True
    assert "this save created it" in first["content"][0]["text"]
    second = mcp.call("memory_save", bank="opps", text="Backups are kept for thirty days.")
    assert ok(second)["bank_created"] is False and "created it" not in second["content"][0]["text"]
    assert ok(mcp.call("memory_save", bank="ops", text="Restores are tested monthly."))["bank_created"] is False
    status, rest = api.post("/v1/banks/newbank/memories", {"text": "The REST route says it too."})
    assert status == 201 and rest["bank_created"] is True  # structuredContent keeps the REST shape


def test_the_text_content_is_a_summary_memory_text_first(mcp):
    saved = mcp.call("memory_save", bank="ops", text="Backups run nightly at two.", entities=["backup"],
                     tags=["infra"])
    mid = ok(saved)["memory"]["id"]
    text = saved["content"][0]["text"]
    assert text.startswith('Saved a new memory: "Backups run nightly at two."') and mid in text
    hits = mcp.call("memory_recall", bank="ops", query="when do backups run")
    line = hits["content"][0]["text"]
    assert line.startswith('1. "Backups run nightly at two."') and f"id {mid}" in line
    assert re.search(r"updated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line)  # ISO 8601, not ms
    assert [h["memory"]["id"] for h in ok(hits)["memories"]] == [mid]  # the REST body stays whole
    empty = mcp.call("memory_recall", bank="ops", query="zebra crossings")
    assert empty["content"][0]["text"] == "No memory matched the query."


def test_session_open_offers_and_allows_only_the_kinds_the_token_may_open(client, mcp):
    assert mcp.tools()["session_open"]["inputSchema"]["properties"]["kind"]["enum"] == ["interactive", "coordinator"]
    key = Mcp(client, mint(kind="api_key", permissions=RW))
    assert key.tools()["session_open"]["inputSchema"]["properties"]["kind"]["enum"] == ["interactive"]
    assert err(key.call("session_open", kind="coordinator")) == "coordinator_requires_user"
    opened = ok(key.call("session_open"))
    assert opened["kind"] == "interactive"
    assert ok(key.call("structured_memory", session_id=opened["session_id"], action="list"))["memories"] == []
    coordinator = ok(mcp.call("session_open", kind="coordinator"))
    child = ok(mcp.call("session_open", parent_session_id=coordinator["session_id"]))
    assert (coordinator["kind"], child["kind"], child["parent_session_id"]) == \
        ("coordinator", "interactive", coordinator["session_id"])
    saved = ok(mcp.call("structured_memory", session_id=coordinator["session_id"], action="save", name="plan",
                        content="Ship on Friday.", scope="coordinator", description="The release plan"))
    assert saved["scope"] == "coordinator"
    assert err(key.call("structured_memory", session_id=coordinator["session_id"], action="list")) == \
        "session_not_found"


def test_session_list_picks_an_existing_session_with_the_rest_listing_checks(client, mcp, api):
    alice_token = mint(user_id="alice", permissions=RW)
    alice = Mcp(client, alice_token)
    status, opened = api.post("/v1/api/sessions", {"kind": "interactive"}, token=alice_token)  # the host's
    assert status == 201, opened
    assert api.post("/v1/api/sessions", {"kind": "interactive"}, token=mint(user_id="olga", permissions=RW))[0] == 201
    key = Mcp(client, mint(kind="api_key", permissions=RW))
    keys_own = ok(key.call("session_open"))["session_id"]

    listed = alice.call("session_list")
    ids = [s["session_id"] for s in ok(listed)["sessions"]]
    assert ids == [opened["session_id"]]  # alice's own: neither olga's nor the API key's
    assert listed["content"][0]["text"] == f"1. {opened['session_id']}: interactive"
    assert ok(alice.call("structured_memory", session_id=ids[0], action="save", name="db_choice",
                         content="Billing uses Postgres.", scope="user", description="Billing's database"))
    assert [s["session_id"] for s in ok(key.call("session_list"))["sessions"]] == [keys_own]
    assert len(ok(mcp.call("session_list"))["sessions"]) == 3  # a service principal: every session of the org
    assert ok(alice.call("session_list")) == api.get("/v1/api/sessions", token=alice_token)[1]  # REST's body
    page = ok(mcp.call("session_list", limit=2))
    assert len(page["sessions"]) == 2 and page["next_cursor"]
    rest = ok(mcp.call("session_list", cursor=page["next_cursor"]))["sessions"]
    assert len(rest) == 1 and rest[0]["session_id"] not in [s["session_id"] for s in page["sessions"]]
    assert err(alice.call("session_list", limit=0)) == "validation_error"
    assert err(alice.call("session_list", limit="5")) == "validation_error"
    reader = Mcp(client, mint(user_id="alice", permissions=["memory:read"]))
    assert "session_list" in reader.tools() and "session_open" not in reader.tools()
    assert [s["session_id"] for s in ok(reader.call("session_list"))["sessions"]] == [opened["session_id"]]
    confined = Mcp(client, mint(user_id="alice", permissions=RW, banks=["main"]))
    assert "session_list" not in confined.tools()
    assert err(confined.call("session_list")) == "forbidden"


def test_space_list_gives_the_ids_team_search_takes(client, team):
    alice = _agent(client, "alice")
    spaces = ok(alice.call("space_list"))["spaces"]
    assert team.space in [s["id"] for s in spaces]
    assert ok(alice.call("team_search", space_ids=[s["id"] for s in spaces], query="anything"))["results"] == []
    # the deprecated camelCase name is still read
    assert ok(alice.call("team_search", spaceIds=[team.space], query="anything"))["results"] == []
    assert err(alice.call("team_search", space_ids=["Team one"], query="anything")) == "not_found"  # a name is no id


def test_team_draft_still_reads_the_deprecated_camel_case_names(client, team):
    alice = _agent(client, "alice")
    draft = ok(alice.call("team_draft", spaceId=team.space, kind="note", title="Old names", text="First."))
    edited = ok(alice.call("team_draft", entryId=draft["id"], text="Second."))
    assert (edited["id"], edited["text"]) == (draft["id"], "Second.")
