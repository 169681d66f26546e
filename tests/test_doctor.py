"""``GET /v1/doctor``: required checks decide ``ok``; a failed S3 is named."""

from __future__ import annotations

from tests.conftest import mint


def by_name(body):
    return {c["name"]: c for c in body["checks"]}


def test_doctor_all_green(api, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    status, body = api.get("/v1/doctor")
    assert status == 200 and body["ok"] is True, body
    checks = by_name(body)
    assert set(checks) == {"configuration", "tuning", "dynamodb_writable", "s3_writable", "round_trip",
                           "queue_reachable", "model_reachable"}
    assert all(c["ok"] for c in checks.values()), checks
    assert [c["required"] for c in body["checks"]] == [True, False, True, True, True, False, False]
    assert "found by" in checks["round_trip"]["detail"]
    # the scratch bank went to the trash, not into the listing
    assert [b["name"] for b in api.get("/v1/banks")[1]["banks"]] == []


def test_doctor_names_a_failed_s3(api, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    monkeypatch.setenv("CAIRN_BUCKET", "no-such-bucket-anywhere")
    status, body = api.get("/v1/doctor")
    assert status == 200 and body["ok"] is False
    checks = by_name(body)
    assert checks["s3_writable"]["ok"] is False and "NoSuchBucket" in checks["s3_writable"]["detail"]
    assert checks["dynamodb_writable"]["ok"] is True


def test_advisory_failures_do_not_fail_the_doctor(api, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "openai")
    monkeypatch.setenv("CAIRN_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: refused
    monkeypatch.setenv("CAIRN_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/missing.fifo")
    status, body = api.get("/v1/doctor")
    checks = by_name(body)
    assert checks["model_reachable"]["ok"] is False and "unreachable" in checks["model_reachable"]["detail"]
    assert checks["queue_reachable"]["ok"] is False
    assert body["ok"] is True


def test_doctor_needs_admin(api, aws):
    reader = mint(permissions=["memory:read", "memory:write"])
    status, body = api.get("/v1/doctor", token=reader)
    assert status == 403 and body["code"] == "forbidden"
