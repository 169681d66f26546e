"""An org admin's ``GET /v1/doctor`` names no shared infrastructure, and each org has its own probe.

The table and bucket names (with the account id in them), the queue's URL and depth and the model
endpoint are the operator's (``cli doctor``); two orgs' doctors, run one after the other or at
once, never touch each other's probe.
"""

from __future__ import annotations

import json
import threading

from chalicelib import doctor
from tests.api.conftest import mint
from tests.api.test_doctor import by_name

ACCOUNT = "123456789012"  # moto's account id, in the queue URL and the bucket name


def _secrets(aws) -> list[str]:
    return [aws["CAIRN_BUCKET"], aws["CAIRN_TABLE_PREFIX"], aws["CAIRN_QUEUE_URL"],
            aws["CAIRN_QUEUE_URL"].rsplit("/", 1)[-1], ACCOUNT, "messages waiting"]


def test_an_org_admins_doctor_names_no_shared_infrastructure(api, aws, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    status, body = api.get("/v1/doctor")
    assert status == 200 and body["ok"] is True, body
    text = json.dumps(body)
    assert not [s for s in _secrets(aws) if s in text], text
    assert by_name(body)["queue_reachable"]["detail"] == "reachable"


def test_a_failure_is_named_by_its_code_not_by_the_resource(api, aws, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "openai")
    monkeypatch.setenv("CAIRN_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CAIRN_BUCKET", "no-such-bucket-anywhere")
    _status, body = api.get("/v1/doctor")
    checks = by_name(body)
    assert "NoSuchBucket" in checks["s3_writable"]["detail"]
    text = json.dumps(body)
    assert "no-such-bucket-anywhere" not in text and "127.0.0.1:9" not in text
    assert checks["model_reachable"]["detail"] == "openai: unreachable"


def test_each_org_has_its_own_probe(api, aws, monkeypatch):
    """Org a's second run reinforces a's probe once, whatever org b ran in between."""
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    other = mint(org="other")
    runs = []
    for token in (None, other, None, other):
        status, body = api.get("/v1/doctor", token=token)
        assert status == 200 and body["ok"] is True, body
        runs.append(by_name(body)["round_trip"]["detail"].split(")")[0])
    assert runs == ["saved (corroboration 0", "saved (corroboration 0", "saved (corroboration 1",
                    "saved (corroboration 1"]


def test_two_orgs_doctors_at_once_both_pass(aws, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    failures: list[str] = []

    def runs(org: str) -> None:
        for _ in range(3):
            report = doctor.run_checks(f"test:{org}", org)
            failures.extend(f"{org}: {c['name']}: {c['detail']}" for c in report["checks"]
                            if c["required"] and not c["ok"])
    threads = [threading.Thread(target=runs, args=(org,)) for org in ("acme", "globex")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
