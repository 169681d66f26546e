"""Per-token rate limits, in process with an injected clock: a token bucket of capacity 60 refilled
at 1 per second lets a burst through and then one request a second, answers the rest 429 with an
honest Retry-After naming the limit; the per-turn hook never denies; deletes are never limited."""

from __future__ import annotations

import random

import pytest

from tests.api.conftest import mint

T0 = 1_900_000_000_000 - 1_900_000_000_000 % 3_600_000 + 600_000  # ten minutes into a UTC hour


@pytest.fixture
def limited(api, monkeypatch):
    """Capacity 60, refill 1 per second; the clock is ``now[0]`` (ms)."""
    from chalicelib import clock
    monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE", "60")
    monkeypatch.setenv("CAIRN_RATE_BURST", "60")
    now = [T0]
    monkeypatch.setattr(clock, "now_ms", lambda: now[0])
    return now


def send(api, method, path, body=None, token=None):
    import json
    h = {"Authorization": f"Bearer {token or api.token}", "Content-Type": "application/json"}
    resp = getattr(api.client.http, method.lower())(path, headers=h,
                                                    body=json.dumps(body) if body is not None else None)
    return resp.status_code, json.loads(resp.body), resp.headers


def test_twenty_clients_two_hundred_requests_in_five_seconds(api, aws, limited, capsys):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    service.save_memory("default", "main", SaveRequest(text="Rate limits hold"), actor="setup")
    rng = random.Random(60)
    plan = sorted((rng.randrange(5000), client) for client in range(20) for _ in range(10))
    ok, denied = 0, []
    for at, _client in plan:
        limited[0] = T0 + at
        status, body, headers = send(api, "GET", "/v1/banks/main")
        if status == 200:
            ok += 1
            continue
        assert status == 429 and body["code"] == "rate_limited", body
        assert body["details"]["limit"] == "requests_per_minute" and body["details"]["max"] == 60
        assert int(headers["Retry-After"]) >= 1
        denied.append((limited[0], int(headers["Retry-After"])))
    assert 60 <= ok <= 66 and ok + len(denied) == 200, ok
    at, wait = denied[-1]
    limited[0] = at + wait * 1000
    assert send(api, "GET", "/v1/banks/main")[0] == 200
    # the denied requests counted nothing: only the ones answered
    from chalicelib.usage import report
    got = report.report("default", T0 - 3_600_000, T0 + 3_600_000, group_by="operation").totals.shown()
    assert got["operations"] == {"get_bank": ok + 1}
    # the EMF lines: one usage line per answered request, one RateLimited per refusal
    import json
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith('{"_aws"')]
    usage_lines = [x for x in lines if x["Event"] == "usage"]
    assert sum(x.get("Requests", 0) for x in usage_lines) == ok + 1
    assert sum(x.get("RateLimited", 0) for x in usage_lines) == len(denied)


def test_an_as_of_recall_spends_more_and_the_hook_answers_rules_only_when_limited(api, aws, limited):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    service.save_memory("default", "main", SaveRequest(text="Rate limits hold for coffee"), actor="setup")
    send(api, "PUT", "/v1/banks/main/rules/style", {"content": "# Be brief.\n"})  # 1 write token
    status, _, _ = send(api, "POST", "/v1/banks/main/recall", {"query": "coffee", "as_of": T0})
    assert status == 200
    reads = 0
    while send(api, "GET", "/v1/banks/main")[0] == 200:
        reads += 1
    assert reads == 60 - 10  # the as_of recall took 10 of the 60
    hook = {"messages": [{"role": "user", "content": "coffee?"}], "metadata": {"memory_bank": "main"}}
    status, body, _ = send(api, "POST", "/v1/hooks/pre-generate", hook)
    assert status == 200 and body["retrieval"] == "rules-only+rate_limited", body
    assert "Be brief." in body["mutations"]["system_prompt_append"] and body["mutations"]["append_messages"] == []
    assert send(api, "POST", "/v1/banks/main/recall", {"query": "coffee"})[0] == 429
    from chalicelib.usage import report
    got = report.report("default", T0 - 3_600_000, T0 + 3_600_000, group_by="operation").totals.shown()
    assert got["operations"]["pre_generate"] == 1 and got["hooks"] == 1  # answered, so counted


def test_writes_are_limited_in_their_transaction_and_deletes_never(api, aws, limited, monkeypatch):
    from chalicelib.core.store import get_bank_head
    monkeypatch.setenv("CAIRN_WRITE_LANES", "1")  # one lane: one write bucket of the whole burst
    ids = []
    for i in range(60):
        status, body, _ = send(api, "POST", "/v1/banks/one/memories", {"text": f"Write number {i} lands"})
        assert status == 201, (i, body)
        ids.append(body["memory"]["id"])
    status, body, headers = send(api, "POST", "/v1/banks/one/memories", {"text": "One write too many"})
    assert status == 429 and body["details"]["limit"] == "requests_per_minute" and headers["Retry-After"] == "1"
    assert get_bank_head("default", "one").memories == 60  # nothing of the refused save was written
    for memory_id in ids[:5]:
        assert send(api, "DELETE", f"/v1/banks/one/memories/{memory_id}")[0] == 200
    limited[0] += 1000
    assert send(api, "POST", "/v1/banks/one/memories", {"text": "One write too many"})[0] == 201


def test_tokens_have_their_own_buckets(api, aws, limited):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    service.save_memory("default", "main", SaveRequest(text="Each token its own"), actor="setup")
    other = mint(user_id="other")
    while send(api, "GET", "/v1/banks/main")[0] == 200:
        pass
    assert send(api, "GET", "/v1/banks/main", token=other)[0] == 200


def test_a_bucket_carries_over_into_the_next_utc_hour(api, aws, limited):
    """The read bucket lives on the hour's counter item: a token that spent its burst just before
    the hour turned is still limited just after it."""
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    service.save_memory("default", "main", SaveRequest(text="Hours turn"), actor="setup")
    turn = T0 - T0 % 3_600_000 + 3_600_000
    limited[0] = turn - 500
    for _ in range(60):
        assert send(api, "GET", "/v1/banks/main")[0] == 200
    limited[0] = turn + 100  # 0.6 s after the burst: not yet a whole token back
    status, body, headers = send(api, "GET", "/v1/banks/main")
    assert status == 429 and int(headers["Retry-After"]) == 1, body
    limited[0] = turn + 1100
    assert send(api, "GET", "/v1/banks/main")[0] == 200


def test_a_refused_hook_over_the_limit_is_answered_audited_once_and_counted_under_the_org(api, aws, limited):
    """The hook never denies: over the limit, a bank the token may not see (outside its allow-list)
    still answers ``none+bank-not-allowed``, audited once, and counts under ``org``, never under
    the other bank."""
    from chalicelib.audit import to_dict
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.storage.tables import AuditModel
    from chalicelib.usage import report
    service.save_memory("default", "mine", SaveRequest(text="Mine alone"), actor="setup")
    scoped = mint(user_id="scoped", banks=["mine"])
    for _ in range(61):
        send(api, "GET", "/v1/banks/mine", token=scoped)
    assert send(api, "GET", "/v1/banks/mine", token=scoped)[0] == 429
    hook = {"messages": [{"role": "user", "content": "secrets?"}], "metadata": {"memory_bank": "theirs"}}
    status, body, _ = send(api, "POST", "/v1/hooks/pre-generate", hook, token=scoped)
    assert status == 200 and body["retrieval"] == "none+bank-not-allowed", body
    refused = [e for e in map(to_dict, AuditModel.query("default")) if e["action"] == "hook.refused"]
    assert len(refused) == 1, refused
    rep = report.report("default", T0 - 3_600_000, T0 + 3_600_000).as_json()
    hooks = {g["key"]: g["totals"]["hooks"] for g in rep["groups"] if g["totals"]["hooks"]}
    assert hooks == {"org": 1}, hooks
