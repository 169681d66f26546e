"""A structured memory's revisions by id (``GET /v1/api/admin/memories/{memory_id}/history``): each
save, update, description patch and delete with its op and actor, a deleted memory's included;
admin only, within the org; and how a person restores what Anthropic's memory tool wrote."""

from __future__ import annotations

import httpx
import pytest

from tests.api.conftest import Api, mint
from tests.api.state import assert_unchanged, dump

USER = ["memory:read", "memory:write"]
ROW_KEYS = {"memory_id", "name", "description", "type", "scope", "scope_id", "created", "updated", "content",
            "last_accessed", "access_count"}


@pytest.fixture
def alice(client, aws):
    return Api(client, mint(user_id="alice", permissions=USER))


def _history(api: Api, mid: str) -> list[dict]:
    s, b = api.get(f"/v1/api/admin/memories/{mid}/history")
    assert s == 200, b
    assert "damaged" not in b
    return b["revisions"]


def test_history_lists_save_update_patch_and_delete_with_op_and_actor_oldest_first(alice, api):
    s, b = alice.post("/v1/api/memories", {"name": "deploy", "content": "Deploy on Fridays.", "description": "How"})
    assert s == 201, b
    mid = b["memory_id"]
    s, _ = alice.post("/v1/api/memories", {"name": "deploy", "content": "Deploy on Mondays.", "description": "How"})
    assert s == 200
    s, _ = api.patch(f"/v1/api/admin/memories/{mid}", {"description": "When we deploy"})
    assert s == 200
    s, _ = alice.delete("/v1/api/memories/deploy")
    assert s == 200
    assert api.get(f"/v1/api/admin/memories/{mid}")[0] == 404  # deleted: gone from get ...

    revs = _history(api, mid)  # ... but its history is still there, tombstone last
    assert [(r["op"], r["actor"], r["content"], r["description"]) for r in revs] == [
        ("save", "person:alice", "Deploy on Fridays.", "How"),
        ("update", "person:alice", "Deploy on Mondays.", "How"),
        ("update", "person:admin", "Deploy on Mondays.", "When we deploy"),
        ("delete", "person:alice", "Deploy on Mondays.", "When we deploy"),
    ]
    assert all(set(r) == ROW_KEYS | {"op", "seq", "actor", "updated_at"} for r in revs)
    assert {(r["memory_id"], r["name"], r["scope"], r["scope_id"], r["created"]) for r in revs} == {
        (mid, "deploy", "global", "", revs[0]["created"])}
    seqs, times = [r["seq"] for r in revs], [r["updated_at"] for r in revs]
    assert seqs == sorted(set(seqs)) and times == sorted(times)
    assert all((r["last_accessed"], r["access_count"]) == ("", 0) for r in revs)  # not kept per revision


def test_a_name_saved_again_after_a_delete_is_a_new_memory_with_its_own_history(alice, api):
    first = alice.post("/v1/api/memories", {"name": "n", "content": "one", "description": "d"})[1]["memory_id"]
    assert api.delete(f"/v1/api/admin/memories/{first}")[0] == 200
    second = alice.post("/v1/api/memories", {"name": "n", "content": "two", "description": "d"})[1]["memory_id"]
    assert second != first
    assert [(r["op"], r["content"]) for r in _history(api, first)] == [("save", "one"), ("delete", "one")]
    assert [(r["op"], r["content"]) for r in _history(api, second)] == [("save", "two")]
    assert api.delete(f"/v1/api/admin/memories/{second}")[0] == 200
    assert [r["op"] for r in _history(api, first)] == ["save", "delete"]  # still found where it lived


def test_history_is_admin_only_and_within_the_org(client, alice, api):
    mid = alice.post("/v1/api/memories", {"name": "secret", "content": "acme only", "description": "d",
                                          "scope": "user"})[1]["memory_id"]
    deleted = alice.post("/v1/api/memories", {"name": "gone", "content": "acme gone", "description": "d"}
                         )[1]["memory_id"]
    assert api.delete(f"/v1/api/admin/memories/{deleted}")[0] == 200
    other = Api(client, mint(org="globex"))  # an admin of another org, every permission
    before = dump()
    s, b = alice.get(f"/v1/api/admin/memories/{mid}/history")
    assert (s, b["code"]) == (403, "forbidden")
    for m in (mid, deleted):
        s, b = other.get(f"/v1/api/admin/memories/{m}/history")
        assert (s, b["code"], b["error"]) == (404, "memory_not_found", "Memory not found")
        assert "acme" not in str(b)
    for unknown in ("00000000-0000-4000-8000-000000000000", "x" * 65, "not-an-id"):
        s, b = api.get(f"/v1/api/admin/memories/{unknown}/history")
        assert (s, b["code"]) == (404, "memory_not_found")
    assert_unchanged(before)  # reading a history writes nothing
    assert [r["content"] for r in _history(api, mid)] == ["acme only"]


def _in_process(client) -> httpx.MockTransport:
    """An httpx transport answering from the Chalice test client (the whole app, in process)."""
    def answer(request: httpx.Request) -> httpx.Response:
        path = request.url.raw_path.decode("ascii")
        resp = client.http.request(request.method, path, headers=dict(request.headers), body=request.content)
        return httpx.Response(resp.status_code, headers=resp.headers, content=resp.body)
    return httpx.MockTransport(answer)


def test_what_the_anthropic_memory_tool_wrote_can_be_reviewed_and_restored(client, api, token):
    from anthropic.types.beta import (
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
    from cairn_client import Cairn, as_data
    from cairn_client.anthropic import CairnMemoryTool

    path = "/memories/prefs.md"
    with Cairn("http://cairn.test", token, transport=_in_process(client), max_retries=0) as cairn:
        tool = CairnMemoryTool(cairn, scope="global", prefix="claude")
        tool.create(BetaMemoryTool20250818CreateCommand(command="create", path=path, file_text="Likes tea\n"))
        tool.str_replace(BetaMemoryTool20250818StrReplaceCommand(command="str_replace", path=path,
                                                                 old_str="tea", new_str="coffee"))
        [row] = [r for r in as_data(cairn.admin.list_memories(scope="global"))["memories"]
                 if r["name"].startswith("claude_prefs_md_")]
        revs = as_data(cairn.admin.memory_history(row["memory_id"]))["revisions"]
        assert [r["op"] for r in revs] == ["save", "update"]
        assert "Likes tea" in revs[0]["content"] and "Likes coffee" in revs[1]["content"]
        # a person restores the first version: its text saved back under the same identity
        first = revs[0]
        cairn.structured.save(first["name"], first["content"], description=first["description"],
                              type=first["type"], scope="global")
        view = tool.view(BetaMemoryTool20250818ViewCommand(command="view", path=path))
        assert "Likes tea" in view and "coffee" not in view
        revs = as_data(cairn.admin.memory_history(row["memory_id"]))["revisions"]
        assert [r["op"] for r in revs] == ["save", "update", "update"]
        assert revs[2]["content"] == first["content"]
