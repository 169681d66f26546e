"""Rate limits are checked before a request's work and before anything is written.

Generated over every route and MCP tool of the route fixtures (``tests/api/route_fixtures.py``):
with the org's bucket spent, or the token's own read and write buckets, every read, write and tool
call is 429 ``rate_limited`` having made no call to the backend beyond its token and its buckets,
and writes nothing (usage counters included). The per-turn hook is never refused: it answers the
rules only. Deletes, forgets and purges are never limited."""

from __future__ import annotations

import json

import pytest

from tests.api.backend_calls import recorded
from tests.api.conftest import Api
from tests.api.route_fixtures import MCP, MCP_ROW, MCP_TOOLS, ROUTES, Call, World, mcp_status
from tests.api.state import assert_unchanged, dump

T0 = 1_900_000_000_000 - 1_900_000_000_000 % 3_600_000 + 600_000  # ten minutes into a UTC hour


def work(calls) -> list[str]:
    """The calls that are a request's work: all but its token's lookup and its limits (the usage
    table's limits item and bucket items)."""
    out = []
    for service, op, params in calls:
        table = str(params.get("TableName", ""))
        if service == "dynamodb" and table.endswith("-tokens"):
            continue
        if service == "dynamodb" and table.endswith("-usage"):
            pk = params.get("Key", {}).get("pk", {}).get("S", "")
            if pk.startswith("b#") or (op == "GetItem" and pk.startswith("q#")):
                continue
        out.append(f"{service}.{op} {table}")
    return out


def usage_counters() -> list[dict]:
    """Every usage item but the rate-limit buckets (counters, quotas, limits), as comparable data."""
    from chalicelib.storage.tables import UsageModel
    client = UsageModel._get_connection().connection.client
    items = client.scan(TableName=UsageModel.Meta.table_name, ConsistentRead=True).get("Items", [])
    return sorted((i for i in items if not i["pk"]["S"].startswith("b#")), key=lambda i: json.dumps(i, sort_keys=True))


def meter_kind(row: tuple[str, str]) -> str:
    """How the route (or the MCP tool's route) of a fixture row is metered."""
    from chalicelib.api.http import ROUTES as DECLARED
    from chalicelib.api.mcp_tools import TOOLS
    if row[0] == MCP_ROW:
        return TOOLS[row[1]].route.meter
    return next(r.meter for r in DECLARED if r.path == row[1] and row[0] in r.methods)


def send(api: Api, method: str, call: Call) -> tuple[int, dict | None]:
    headers = {}
    if call.raw is not None:
        headers["Content-Type"] = call.content_type or "application/x-ndjson"
    status, body = api.call("POST" if method == MCP_ROW else method, call.url, call.body, headers=headers,
                            raw=call.raw)
    if call.path == MCP:
        status = mcp_status(status, body)
    return status, body if isinstance(body, dict) else None


@pytest.fixture
def seeded(client, aws, token, monkeypatch):
    """A seeded world and, built before any limit is on, one call of every variant of every route
    and tool that is limited: ``(api, world, [(row, variant, kind, call)])``."""
    from chalicelib import clock
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    api = Api(client, token)
    world = World(api)
    calls = []
    for row, variants in {**ROUTES, **MCP_TOOLS}.items():
        kind = meter_kind(row)
        if kind in ("exempt", "none"):
            continue
        for variant, build in variants.items():
            calls.append((row, variant, kind, build(world)))
    monkeypatch.setattr(clock, "now_ms", lambda: T0)
    return api, world, calls


def _check(api: Api, calls) -> list[str]:
    """Send every call; the problems found (a call not refused, work done, anything written)."""
    problems = []
    for row, variant, kind, call in calls:
        before, counters = dump(), usage_counters()
        with recorded() as seen:
            status, body = send(api, row[0], call)
        where = f"{row} {variant}"
        try:
            assert_unchanged(before)
        except AssertionError as exc:
            problems.append(f"{where}: wrote {exc}")
        if kind == "hook":
            retrieval = (body or {}).get("retrieval")
            if status != 200 or retrieval != "rules-only+rate_limited":
                problems.append(f"{where}: the hook answered {status} {retrieval}")
            continue
        if usage_counters() != counters:
            problems.append(f"{where}: a refused request counted")
        if status != 429 and not (call.expect is not None and status == call.expect):
            problems.append(f"{where}: answered {status}, not 429: {json.dumps(body)[:200]}")
            continue
        if status == 429 and work(seen):
            problems.append(f"{where}: refused after its work: {work(seen)[:4]}")
    return problems


def test_over_the_orgs_limit_every_route_and_tool_is_refused_before_its_work(seeded, monkeypatch):
    api, _world, calls = seeded
    monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE", "600")
    monkeypatch.setenv("CAIRN_RATE_BURST", "600")
    monkeypatch.setenv("CAIRN_RATE_ORG_REQUESTS_PER_MINUTE", "1")
    monkeypatch.setenv("CAIRN_RATE_ORG_BURST", "1")
    assert api.get("/v1/me")[0] == 200  # spends the org's one request
    status, body = api.get("/v1/me")
    assert status == 429 and body["details"]["limit"] == "org_requests_per_minute", body
    assert len(calls) > 100
    problems = _check(api, calls)
    assert not problems, "\n".join(problems)


def test_over_the_tokens_limit_every_route_and_tool_is_refused_before_its_work(seeded, monkeypatch):
    api, _world, calls = seeded
    monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE", "1")
    monkeypatch.setenv("CAIRN_RATE_BURST", "1")  # one read and one write, then every one refused
    monkeypatch.setenv("CAIRN_RATE_ORG_REQUESTS_PER_MINUTE", "0")
    assert api.get("/v1/me")[0] == 200  # the read bucket's one request
    assert api.patch("/v1/banks/beta", {"description": "spends the write bucket"})[0] == 200
    assert api.get("/v1/me")[0] == 429
    assert api.patch("/v1/banks/beta", {"description": "refused"})[0] == 429
    problems = _check(api, calls)
    assert not problems, "\n".join(problems)
