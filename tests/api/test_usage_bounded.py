"""Counting is bounded whatever a caller names, and the limits never switch off.

Each counter item holds one scope's counters (and the org's request counters); a name no bank has
is counted under one key (``?``); the rate-limit buckets live in items that hold ``tat`` alone, so
no amount of counting can grow them past DynamoDB's item size. When a bucket cannot be updated, a
REST request answers 503 (nothing done), and the per-turn hook injects the rules only."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.backend_calls import intercepted
from tests.api.state import assert_unchanged, dump
from tests.api.test_mcp import Mcp


@pytest.fixture
def limits_on(monkeypatch):
    monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE", "100000")
    monkeypatch.setenv("CAIRN_RATE_BURST", "100000")


def usage_items() -> list[dict]:
    from chalicelib.storage.tables import UsageModel
    client = UsageModel._get_connection().connection.client
    return client.scan(TableName=UsageModel.Meta.table_name, ConsistentRead=True).get("Items", [])


def scopes_of(item: dict) -> set[str]:
    from chalicelib.usage import keys
    return {keys.split_counter(a)[0] for a in item if keys.SEP in a and a not in keys.NON_COUNTERS}


def live_scopes(org: str = "default") -> set[str]:
    """Every scope a counter may name: the org's banks and namespaces (any state), the org itself
    and the unknown bank."""
    from chalicelib.storage.tables import BankModel
    from chalicelib.usage import keys
    return {r.name for r in BankModel.query(org, consistent_read=True)} | {"", keys.UNKNOWN}


def assert_bounded(org: str = "default") -> None:
    """Every counter item holds at most one scope besides the org's, a scope that exists; every
    bucket item holds its ``tat`` and nothing else."""
    known = live_scopes(org)
    for item in usage_items():
        pk, sk = item["pk"]["S"], item["sk"]["S"]
        if pk.startswith("b#"):
            assert set(item) <= {"pk", "sk", "tat", "expires_at"}, item
        elif pk.startswith("u#"):
            scopes = scopes_of(item)
            assert len(scopes - {""}) <= 1, (sk, scopes)
            assert scopes <= known, (sk, scopes - known)


HOOK = "/v1/hooks/pre-generate"


def hook(api, bank: str, token: str | None = None):
    return api.post(HOOK, {"messages": [{"role": "user", "content": "what do I like?"}],
                           "metadata": {"memory_bank": bank}}, token=token)


def test_hooks_naming_made_up_banks_count_under_one_key_beside_a_bucket_they_never_touch(api, limits_on):
    assert api.post("/v1/banks/main/memories", {"text": "User likes tea"})[0] == 201
    for i in range(300):
        status, body = hook(api, f"made-up-{i}")
        assert status == 200 and body["retrieval"] == "rules-only", body
    assert hook(api, "main")[1]["retrieval"] == "bm25-entity+semantic"
    items = usage_items()
    assert not [i for i in items if any(a.startswith("made-up-") for a in i)], "a made-up name became a key"
    unknown = [i for i in items if "?|hook" in i]
    assert len(unknown) == 1 and unknown[0]["?|hook"]["N"] == "300" and len(unknown[0]) <= 8, unknown
    assert_bounded()
    from chalicelib import clock
    from chalicelib.usage import report
    rep = report.report("default", clock.now_ms() - 3_600_000, clock.now_ms() + 3_600_000).as_json()
    hooks = {g["key"]: g["totals"]["hooks"] for g in rep["groups"] if g["totals"]["hooks"]}
    assert hooks == {"?": 300, "main": 1}, hooks


NAMES = st.one_of(st.from_regex(r"[a-z0-9][a-z0-9_-]{0,30}", fullmatch=True),
                  st.sampled_from(["main", "beta"]), st.text(min_size=1, max_size=40))
READS = st.sampled_from(["bank", "memories", "recall", "preview", "rules", "export", "hook", "mcp_recall",
                         "mcp_list", "save"])


def _send(api, mcp: Mcp, what: str, bank: str) -> int:
    seg = quote(bank, safe="")
    if what == "hook":
        return hook(api, bank)[0]
    if what.startswith("mcp_"):
        tool = {"mcp_recall": ("memory_recall", {"query": "tea"}), "mcp_list": ("memory_list", {})}[what]
        return mcp.rpc("tools/call", {"name": tool[0], "arguments": {"bank": bank, **tool[1]}})[0]
    method, path, body = {
        "bank": ("GET", f"/v1/banks/{seg}", None),
        "memories": ("GET", f"/v1/banks/{seg}/memories", None),
        "recall": ("POST", f"/v1/banks/{seg}/recall", {"query": "tea"}),
        "preview": ("POST", f"/v1/banks/{seg}/preview", {"query": "tea"}),
        "rules": ("GET", f"/v1/banks/{seg}/rules", None),
        "export": ("GET", f"/v1/banks/{seg}/export", None),
        "save": ("POST", f"/v1/banks/{seg}/memories", {"text": "A saved fact about tea"}),
    }[what]
    return api.call(method, path, body)[0]


def test_counting_stays_bounded_whatever_banks_the_requests_name(api, client, limits_on):
    """Generated requests (reads, previews, exports, hooks, MCP tools, saves) naming generated
    banks, existing, made up or invalid: after each, every counter item holds one scope that
    exists (or ``?``), and the buckets hold nothing but their ``tat``."""
    assert api.post("/v1/banks/main/memories", {"text": "User likes tea"})[0] == 201
    mcp = Mcp(client, api.token)

    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(st.lists(st.tuples(READS, NAMES), min_size=1, max_size=4))
    def run(requests):
        for what, bank in requests:
            status = _send(api, mcp, what, bank)
            assert status < 500, (what, bank, status)
        assert_bounded()

    run()


def _throttled_buckets(call, client, operation, params):
    """Every update of a rate-limit bucket item fails as a throttled DynamoDB would."""
    if operation == "UpdateItem" and params.get("Key", {}).get("pk", {}).get("S", "").startswith("b#"):
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}},
                          operation)
    return call(client, operation, params)


def test_when_a_bucket_cannot_be_updated_rest_answers_503_and_the_hook_injects_the_rules_only(api, limits_on,
                                                                                              capsys):
    assert api.post("/v1/banks/main/memories", {"text": "User likes tea"})[0] == 201
    assert api.put("/v1/banks/main/rules/style", {"content": "# Be brief.\n"})[0] == 200
    before = dump()
    with intercepted(_throttled_buckets):
        status, body = api.post("/v1/banks/main/recall", {"query": "tea"})
        assert status == 503 and body["code"] == "backend_unavailable", body
        status, body = api.post("/v1/banks/main/memories", {"text": "Not written while limits are unknown"})
        assert status == 503 and body["code"] == "backend_unavailable", body
        status, body = hook(api, "main")
    assert status == 200 and body["retrieval"] == "rules-only+backend_unavailable", body
    assert "Be brief." in body["mutations"]["system_prompt_append"] and body["mutations"]["append_messages"] == []
    assert_unchanged(before)
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith('{"_aws"')]
    assert [x["error"] for x in lines if x.get("UsageLost")] == ["ClientError"] * 3
