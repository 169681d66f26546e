"""``GET /v1/doctor``: required checks decide ``ok``; a failed S3 is named."""

from __future__ import annotations

from tests.api.conftest import mint


def by_name(body):
    return {c["name"]: c for c in body["checks"]}


def test_doctor_all_green(api, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    status, body = api.get("/v1/doctor")
    assert status == 200 and body["ok"] is True, body
    checks = by_name(body)
    assert set(checks) == {"configuration", "tuning", "dynamodb_writable", "s3_writable", "round_trip",
                           "queue_reachable", "model_reachable", "extraction_quota"}
    assert all(c["ok"] for c in checks.values()), checks
    assert [c["required"] for c in body["checks"]] == [True, False, True, True, True, False, False, False]
    assert "found by recall" in checks["round_trip"]["detail"]


def test_doctor_leaves_nothing_a_user_can_see(api, monkeypatch):
    """Every ``GET /v1/doctor`` left a ``doctor-scratch-<id>`` bank in the trash (three runs,
    three entries); doctor must leave nothing behind a user can see: no bank, no trash entry,
    no audit event, no object under the org's prefix."""
    from chalicelib.storage import blobs
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    details = []
    for _ in range(3):
        status, body = api.get("/v1/doctor")
        assert status == 200 and body["ok"] is True, body
        details.append(by_name(body)["round_trip"]["detail"])
    assert [d.split(")")[0] for d in details] == ["saved (corroboration 0", "saved (corroboration 1",
                                                  "saved (corroboration 2"]
    assert api.get("/v1/banks")[1]["banks"] == []
    assert api.get("/v1/banks?trashed=true")[1]["banks"] == []
    assert api.get("/v1/api/admin/audit")[1]["events"] == []
    assert list(blobs.list_objects("default/")) == []


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
    _status, body = api.get("/v1/doctor")
    checks = by_name(body)
    assert checks["model_reachable"]["ok"] is False and "unreachable" in checks["model_reachable"]["detail"]
    assert checks["queue_reachable"]["ok"] is False
    assert body["ok"] is True


def test_doctor_needs_admin(api, aws):
    reader = mint(permissions=["memory:read", "memory:write"])
    status, body = api.get("/v1/doctor", token=reader)
    assert status == 403 and body["code"] == "forbidden"
