"""``Server-Timing`` on every route that recalls names the hook's phases: the consistent read of
the bank rows (``bank``) and the ranking (``rank``), in the documented order, each within the
total; a phase block inside one of the same name (the hook's ``rank`` around recall's) counts
once. A save names its related look-up and its commit."""

from __future__ import annotations

import json

import pytest

from chalicelib import timing
from tests.api.conftest import Api, mint
from tests.api.test_mcp import Mcp


@pytest.fixture(autouse=True)
def _own_cache(aws, tmp_path):
    from chalicelib.search import index
    with index.using(index.IndexCache(str(tmp_path / "cache"))):
        yield


def _phases(resp) -> dict[str, float]:
    assert resp.status_code in (200, 201), resp.body
    phases = timing.parse(resp.headers[timing.HEADER])
    assert all(0 <= v <= phases["total"] for v in phases.values()), phases
    return phases


def _post(client, token, path, body):
    return client.http.post(path, body=json.dumps(body),
                            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})


def _seed(api):
    for text in ("Backups run nightly at two.", "The deploy pipeline runs on Fridays."):
        status, body = api.post("/v1/banks/ops/memories", {"text": text})
        assert status in (200, 201), body


def test_rest_recall_names_the_bank_read_and_the_ranking(client, token, api):
    _seed(api)
    phases = _phases(_post(client, token, "/v1/banks/ops/recall", {"query": "when do backups run"}))
    assert list(phases) == ["token", "bank", "rank", "render", "usage", "total"], phases


def test_rest_recall_as_of_names_them_too(client, token, api):
    _seed(api)
    phases = _phases(_post(client, token, "/v1/banks/ops/recall", {"query": "backups", "as_of": 4102444800000}))
    assert [k for k in phases if k in ("bank", "rank")] == ["bank", "rank"], phases


def test_preview_names_the_hooks_phases(client, token, api):
    _seed(api)
    phases = _phases(_post(client, token, "/v1/banks/ops/preview", {"query": "when do backups run"}))
    assert list(phases)[:3] == ["token", "bank", "rank"] and "render" in phases, phases


def test_mcp_memory_recall_names_the_bank_read_and_the_ranking(client, token, api):
    _seed(api)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "memory_recall", "arguments": {"bank": "ops", "query": "when do backups run"}}}
    resp = client.http.post("/mcp", body=json.dumps(body), headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})
    assert json.loads(resp.body)["result"]["isError"] is False
    phases = _phases(resp)
    assert list(phases)[:3] == ["token", "bank", "rank"], phases
    assert Mcp(client, token).call("memory_recall", bank="ops", query="backups")["isError"] is False


def test_structured_search_names_the_bank_read_and_the_ranking(client, aws):
    alice = Api(client, mint(user_id="alice", permissions=["memory:read", "memory:write"]))
    status, _ = alice.post("/v1/api/memories", {"name": "deploy_process", "content": "Deploy via GitHub Actions.",
                                                "description": "CI/CD workflow"})
    assert status == 201
    phases = _phases(_post(client, alice.token, "/v1/api/memories/search", {"query": "deploy"}))
    assert list(phases)[:3] == ["token", "bank", "rank"], phases


def test_a_phase_inside_one_of_its_name_counts_once():
    with timing.recording() as t, timing.phase("rank"):
        with timing.phase("rank"):
            pass
        inner = dict(t)
    assert inner == {} and list(t) == ["rank"]
    with timing.recording() as t:
        for _ in range(2):
            with timing.phase("bank"):
                pass
    assert list(t) == ["bank"]


def test_team_retrieve_names_the_bank_read_and_the_ranking(client, api):
    from tests.api.team_support import MEM, World
    world = World(api)
    e = world.create(title="Use Postgres")
    world.write_text("alice", e["id"], "Orders live in Postgres.")
    assert world.accept("bob", e["id"])[0] == 200
    resp = _post(client, world.tokens["alice"], f"{MEM}/retrieve",
                 {"spaceIds": [world.space], "query": "where do orders live", "limit": 5})
    assert json.loads(resp.body)["results"], resp.body
    assert list(_phases(resp))[:3] == ["token", "bank", "rank"]


def test_a_save_names_its_related_look_up_and_its_commit(client, token, api):
    """A save's time is named too: the look-up of the memories it duplicates or contradicts
    (``related``) and the write (``commit``), each within the total."""
    _seed(api)
    phases = _phases(_post(client, token, "/v1/banks/ops/memories", {"text": "Backups run nightly at three."}))
    assert list(phases) == ["token", "related", "commit", "render", "usage", "total"], phases
    again = _post(client, token, "/v1/banks/ops/memories", {"text": "Backups run nightly at three."})
    assert json.loads(again.body)["created"] is False and "commit" in _phases(again)  # a reinforcement writes too
