"""Rate limits that hold: a write bucket grants at most its burst, idempotent replays and exports
spend like any request, an org's tokens together stay within the org's limit however many are
minted, a team draft edited through MCP is a write checked before the edit (and a retry of it is
one edit), and no limit takes a value a JSON client cannot read exactly."""

from __future__ import annotations

import io
import json

import pytest

from tests.api.conftest import mint
from tests.api.team_support import World as TeamWorld
from tests.api.test_mcp import Mcp
from tests.api.test_rate_limit import T0


@pytest.fixture
def limited(api, monkeypatch):
    """One token a second (60 a minute), burst 5; the clock is ``now[0]`` (ms)."""
    from chalicelib import clock
    monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE", "60")
    monkeypatch.setenv("CAIRN_RATE_BURST", "5")
    now = [T0]
    monkeypatch.setattr(clock, "now_ms", lambda: now[0])
    return now


def _save(api, text, **kw):
    return api.post("/v1/banks/one/memories", {"text": text}, **kw)


def _ops(org="default"):
    from chalicelib.usage import report
    return report.report(org, T0 - 3_600_000, T0 + 3_600_000, group_by="operation").totals.shown()


def test_a_write_bucket_idle_for_two_bursts_grants_one_burst_not_two(api, limited, monkeypatch):
    monkeypatch.setenv("CAIRN_WRITE_LANES", "1")
    for i in range(5):
        assert _save(api, f"Write number {i} lands")[0] == 201
    status, body = _save(api, "One write too many")
    assert status == 429 and body["details"]["limit"] == "requests_per_minute", body
    limited[0] += 10_000  # ten seconds idle: the bucket is full (twice over, were it not capped)
    passed = 0
    while _save(api, f"After the idle spell {passed}")[0] == 201:
        passed += 1
    assert passed == 5


def test_idempotent_replays_spend_the_rate_limit_and_count_as_requests(api, limited):
    key = {"Idempotency-Key": "retry-me"}
    for _ in range(5):
        status, body = _save(api, "Replayed save", headers=key)
        assert status == 201 and body["created"] is True, body
    status, body = _save(api, "Replayed save", headers=key)
    assert status == 429 and body["code"] == "rate_limited", body
    got = _ops()
    assert got["operations"]["save_memory"] == 5 and got["saved"] == 1


def test_exports_are_rate_limited_like_reads(api, limited):
    assert _save(api, "Exports spend too")[0] == 201
    for _ in range(5):
        assert api.get("/v1/banks/one/export")[0] == 200
    status, body = api.get("/v1/banks/one/export")
    assert status == 429 and body["code"] == "rate_limited", body


def test_minting_more_tokens_never_multiplies_the_orgs_rate(api, limited):
    """Eleven tokens of one org each spend their own burst of 5 at once: the org's bucket (10 x one
    token's by default) lets 50 through and refuses the rest, naming the org's limit."""
    tokens = [api.token] + [mint(user_id=f"child{i}") for i in range(10)]
    answered, refused = 0, []
    for tok in tokens:
        for _ in range(5):
            status, body = api.get("/v1/me", token=tok)
            if status == 200:
                answered += 1
            else:
                refused.append(body)
    assert answered == 50 and len(refused) == 5
    assert {b["details"]["limit"] for b in refused} == {"org_requests_per_minute"}
    assert refused[0]["details"]["max"] == 600 and refused[0]["details"]["burst"] == 50
    other = mint(org="other-org")
    assert api.get("/v1/me", token=other)[0] == 200  # another org has its own bucket


def test_an_org_admin_may_lower_the_org_wide_limit(api, limited):
    status, body = api.put("/v1/usage/limits", {"org_burst": 3})
    assert status == 200 and body["effective"]["org_burst"] == 3, body
    assert body["operator"]["org_requests_per_minute"] == 600
    status, body = api.put("/v1/usage/limits", {"org_burst": 51})
    assert status == 400 and body["details"] == {"field": "org_burst", "max": 50}, body


@pytest.fixture
def team(api):
    return TeamWorld(api)


def _result(agent: Mcp, **arguments) -> dict:
    status, body = agent.rpc("tools/call", {"name": "team_draft", "arguments": arguments})
    assert status == 200, body
    return body["result"]


def test_a_team_draft_edit_over_the_limit_is_refused_before_it_writes(client, team, limited):
    """team_draft is a write: it spends the token's write bucket before anything is written, so
    the edit past the burst changes nothing (it used to commit, then answer 429 as a read)."""
    alice = Mcp(client, mint(user_id="alice", permissions=["memory:read", "memory:write"]))
    draft = _result(alice, spaceId=team.space, kind="note", title="Runbook", text="Step one.")["structuredContent"]
    seq = draft["seq"]
    for i in range(4):
        seq = _result(alice, entryId=draft["id"], seq=seq, text=f"Step one. Edit {i}.")["structuredContent"]["seq"]
    before = team.entry("bob", draft["id"])
    over = _result(alice, entryId=draft["id"], seq=seq, text="Step one. One edit too many.")
    assert over["isError"] is True and over["structuredContent"]["code"] == "rate_limited", over
    assert team.entry("bob", draft["id"]) == before
    got = _ops()
    assert got["operations"]["create_entry"] == 5  # the tool counts as its route, a write


def test_a_team_draft_retried_with_the_same_seq_and_text_is_one_edit(client, team):
    alice = Mcp(client, mint(user_id="alice", permissions=["memory:read", "memory:write"]))
    draft = _result(alice, spaceId=team.space, kind="note", title="Runbook", text="Alpha.")["structuredContent"]
    first = _result(alice, entryId=draft["id"], seq=draft["seq"], text="Alpha. Beta.")["structuredContent"]
    again = _result(alice, entryId=draft["id"], seq=draft["seq"], text="Alpha. Beta.")["structuredContent"]
    assert again["text"] == first["text"] == "Alpha. Beta." and again["seq"] == first["seq"]
    assert team.entry("bob", draft["id"])["text"] == "Alpha. Beta."
    other = _result(alice, entryId=draft["id"], seq=draft["seq"], text="Alpha. Gamma.")["structuredContent"]
    assert other["seq"] == first["seq"] + 1  # another text from the same seq is another edit


def _cli(*argv):
    from chalicelib import cli
    out, err = io.StringIO(), io.StringIO()
    return cli.main(["--stage", "dev", *argv], out=out, err=err), out.getvalue(), err.getvalue()


def test_limits_beyond_what_json_holds_exactly_are_refused(aws, monkeypatch):
    from chalicelib.errors import ConfigError
    from chalicelib.settings import get_settings
    from chalicelib.team.limits import get_limits
    from chalicelib.usage import limits
    for value in (str(2**53 + 1), str(10**15 + 1), "99999999999999999999999"):
        status, _, err = _cli("limits", "set", "--org", "acme", "--banks-per-org", value)
        assert status == 2 and "banks_per_org must be between 0 and 1000000000000000" in err, err
    assert limits.overrides("acme", fresh=True).operator == {}  # nothing written
    status, out, _ = _cli("limits", "set", "--org", "acme", "--banks-per-org", str(10**15))
    assert status == 0 and json.loads(out)["operator"] == {"banks_per_org": 10**15}

    monkeypatch.setenv("KEYSTONE_CONTEXT_MEMORY_MAX_UNITS", str(2**53 + 1))
    with pytest.raises(ConfigError, match="KEYSTONE_CONTEXT_MEMORY_MAX_UNITS"):
        get_limits()
    monkeypatch.delenv("KEYSTONE_CONTEXT_MEMORY_MAX_UNITS")
    for name in ("CAIRN_RATE_BURST", "CAIRN_QUOTA_MEMORIES_PER_BANK", "CAIRN_RATE_ORG_REQUESTS_PER_MINUTE"):
        monkeypatch.setenv(name, str(2**53 + 1))
        with pytest.raises(ConfigError, match=name):
            get_settings()
        monkeypatch.delenv(name)

    # a stored value beyond the bound (a hand edit) is no override: the default applies
    client, table = limits.raw_client(), limits.usage_table()
    client.update_item(TableName=table, Key={"pk": {"S": "q#acme"}, "sk": {"S": "limits"}},
                       UpdateExpression="SET op_burst = :v", ExpressionAttributeValues={":v": {"N": str(2**60)}})
    limits.forget_cached()
    assert limits.effective("acme").burst == get_settings().rate_burst


def test_a_large_export_is_deleted_by_the_buckets_lifecycle_a_day_later(api, aws, monkeypatch):
    """The template's lifecycle rule ``expiring`` deletes objects tagged ``EXPIRING_TAG`` after a
    day (noncurrent versions too); the local bucket carries the same rule; a large export's object
    is so tagged, and its link expires before it."""
    import boto3

    from chalicelib.storage import blobs
    from infra.local.resources import load_template
    tag = {"Key": blobs.EXPIRING_TAG[0], "Value": blobs.EXPIRING_TAG[1]}
    props = load_template()["Resources"]["DataBucket"]["Properties"]
    rule = next(r for r in props["LifecycleConfiguration"]["Rules"] if r["Id"] == "expiring")
    assert rule == {"Id": "expiring", "Status": "Enabled", "TagFilters": [tag], "ExpirationInDays": 1,
                    "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}
    assert rule["ExpirationInDays"] == blobs.EXPIRING_DAYS
    policy = load_template()["Resources"]["CairnDataPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert "s3:PutObjectTagging" in next(s for s in policy if s.get("Sid") == "Bucket")["Action"]
    s3 = boto3.client("s3", region_name="us-east-1")
    local = {r["ID"]: r for r in s3.get_bucket_lifecycle_configuration(Bucket=aws["CAIRN_BUCKET"])["Rules"]}
    assert local["expiring"]["Filter"] == {"Tag": tag} and local["expiring"]["Expiration"]["Days"] == 1
    assert local["expiring"]["NoncurrentVersionExpiration"]["NoncurrentDays"] == 1

    monkeypatch.setenv("CAIRN_EXPORT_INLINE_BYTES", "10")
    monkeypatch.setenv("CAIRN_PRESIGN_TTL_S", str(7 * 24 * 3600))
    assert _save(api, "An export too large to answer inline")[0] == 201
    status, body = api.get("/v1/banks/one/export")
    assert status == 200 and body["url"], body
    from chalicelib import clock
    assert body["expires_at"] <= clock.now_ms() + 86_400_000  # the link never outlives the object
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=aws["CAIRN_BUCKET"], Prefix="default/exports/")["Contents"]]
    assert len(keys) == 1
    assert s3.get_object_tagging(Bucket=aws["CAIRN_BUCKET"], Key=keys[0])["TagSet"] == [tag]


def test_a_container_busy_for_an_org_updates_the_orgs_bucket_about_once_in_ten_requests(api, monkeypatch):
    """After a second of a hundred requests, this container takes the org's tokens ten at a time:
    the next hundred requests update the token's bucket each and the org's about ten times."""
    from chalicelib import clock
    from tests.api.backend_calls import recorded
    monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE", "60000")
    monkeypatch.setenv("CAIRN_RATE_BURST", "60000")
    now = [T0]
    monkeypatch.setattr(clock, "now_ms", lambda: now[0])
    for i in range(100):
        now[0] = T0 + i * 10
        assert api.get("/v1/me")[0] == 200
    with recorded() as calls:
        for i in range(100):
            now[0] = T0 + 1000 + i * 10
            assert api.get("/v1/me")[0] == 200
    buckets = [p["Key"]["sk"]["S"] for _s, op, p in calls
               if op == "UpdateItem" and p["Key"]["pk"]["S"].startswith("b#")]
    assert buckets.count("#org") <= 12 and len(buckets) - buckets.count("#org") == 100, buckets
