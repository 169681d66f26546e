"""The operator's commands as a person runs them: ``doctor`` (what only an operator may see),
``rebuild-indexes`` printing its result alone, ``limits show`` of an org that does not exist."""

from __future__ import annotations

import json

from tests.api.test_cli import run


def test_doctor_is_a_cli_command_naming_the_infrastructure(aws, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    status, out, _err = run("doctor")
    assert status == 0, out
    lines = out.splitlines()
    assert lines[-1] == "doctor: ok" and any(x.startswith("ok    round_trip") for x in lines)
    assert aws["CAIRN_BUCKET"] in out and aws["CAIRN_TABLE_PREFIX"] in out  # the operator's view
    status, out, _err = run("doctor", "--org", "default", "--json")
    report = json.loads(out)
    assert status == 0 and report["ok"] is True
    assert {c["name"] for c in report["checks"]} >= {"round_trip", "extraction_quota", "queue_reachable"}
    assert "messages waiting" in {c["name"]: c for c in report["checks"]}["queue_reachable"]["detail"]


def test_a_failed_required_check_is_exit_status_1(aws, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    monkeypatch.setenv("CAIRN_BUCKET", "no-such-bucket-anywhere")
    status, out, _err = run("doctor")
    assert status == 1 and out.splitlines()[-1] == "doctor: a required check failed"
    assert any(x.startswith("FAIL  s3_writable") and "NoSuchBucket" in x for x in out.splitlines()), out


def test_rebuild_indexes_prints_its_result_and_nothing_else(aws, api):
    api.post("/v1/banks/idx/memories", {"text": "Alpha memory for the index"})
    status, out, err = run("rebuild-indexes", "--org", "default", "--bank", "idx")
    assert status == 0 and [json.loads(x)["bank"] for x in out.splitlines()] == ["idx"]
    assert not [x for x in err.splitlines() if x.lstrip().startswith("{")], err  # no metric JSON


def test_limits_show_of_an_org_that_does_not_exist_says_so(aws, api):
    status, out, err = run("limits", "show", "--org", "nosuchorg")
    assert status == 1 and out == ""
    assert "Org 'nosuchorg' does not exist" in err and "(not_found)" in err
    status, out, _err = run("limits", "show", "--org", "default")  # the api fixture's token made it
    assert status == 0 and json.loads(out)["org"] == "default"
