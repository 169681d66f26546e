"""The non-HTTP handlers through chalice.test.Client's event generators:
an SQS batch with one bad message, S3 rule and config changes, schedules run twice."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from chalice.test import Client

from chalicelib.extraction import job as jobs

BUCKET_EVENT = "Object Created"


@pytest.fixture
def offline(monkeypatch, aws):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")


def sqs_event(client, bodies):
    event = client.events.generate_sqs_event(message_bodies=bodies, queue_name="cairn-test-extraction.fifo")
    for i, record in enumerate(event["Records"]):
        record["messageId"] = f"m{i}"
        record["attributes"]["MessageGroupId"] = f"group-{i}"
    return event


def job_body(session, turn_id, text):
    return jobs.make_job("default", "work", session, turn_id, [{"role": "user", "content": text}],
                         actor="person:admin", window_size=12).model_dump_json()


def test_sqs_batch_one_bad_message_does_not_block_the_others(client, api, offline):
    bodies = [job_body("s1", "t1", "Remember that the build server is called anvil."),
              "{not json",
              job_body("s3", "t1", "Remember that our on-call rota changes on Mondays.")]
    resp = client.lambda_.invoke("run_extraction", sqs_event(client, bodies))
    assert resp.payload == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    texts = sorted(m["text"] for m in api.get("/v1/banks/work/memories")[1]["memories"])
    assert texts == ["Our on-call rota changes on Mondays.", "The build server is called anvil."]


def test_sqs_failed_message_holds_back_only_its_own_session(client, api, offline):
    bodies = ["[]", job_body("s1", "t2", "Remember that staging is in eu-west-1."),
              job_body("s2", "t1", "Remember that prod is in us-east-1.")]
    event = sqs_event(client, bodies)
    event["Records"][1]["attributes"]["MessageGroupId"] = "group-0"  # same session as the bad one
    resp = client.lambda_.invoke("run_extraction", event)
    assert resp.payload == {"batchItemFailures": [{"itemIdentifier": "m0"}, {"itemIdentifier": "m1"}]}
    assert [m["text"] for m in api.get("/v1/banks/work/memories")[1]["memories"]] == ["Prod is in us-east-1."]


def test_sqs_redelivered_job_is_a_no_op(client, api, offline):
    body = job_body("s1", "t1", "Remember that lunch is at noon.")
    for _ in range(2):
        assert client.lambda_.invoke("run_extraction", sqs_event(client, [body])).payload == {"batchItemFailures": []}
    [mem] = api.get("/v1/banks/work/memories")[1]["memories"]
    assert mem["corroboration"] == 0


def s3_event(client, aws, key, detail_type=BUCKET_EVENT):
    return client.events.generate_cw_event(
        source="aws.s3", detail_type=detail_type, resources=[f"arn:aws:s3:::{aws['CAIRN_BUCKET']}"],
        detail={"version": "0", "bucket": {"name": aws["CAIRN_BUCKET"]}, "object": {"key": key, "size": 10},
                "reason": "PutObject"})


def bank_row(bank="work"):
    from chalicelib.core.store import get_bank_row
    return get_bank_row("default", bank)


def test_hand_edited_rule_reloads_on_another_instance(app, api, aws):
    s3 = boto3.client("s3", region_name="us-east-1")
    api.put("/v1/banks/work/rules/style", {"content": "Answer in English."})
    version = int(bank_row().rules_version)
    s3.put_object(Bucket=aws["CAIRN_BUCKET"], Key="default/banks/work/rules/tone.md", Body=b"Be brief.")
    with Client(app) as other:
        out = other.lambda_.invoke("s3_object_changed", s3_event(other, aws, "default/banks/work/rules/tone.md"))
    assert out.payload == {"action": "rules_reloaded", "org_id": "default", "bank": "work", "rule": "tone"}
    row = bank_row()
    assert int(row.rules_version) == version + 1 and int(row.rules) == 2
    assert {r["name"]: r["content"] for r in api.get("/v1/banks/work/rules")[1]["rules"]} == {
        "style": "Answer in English.", "tone": "Be brief."}


def test_hand_edited_rule_reaches_the_next_injection_on_another_instance(app, api, aws):
    pytest.importorskip("chalicelib.inject.service")
    s3 = boto3.client("s3", region_name="us-east-1")
    api.put("/v1/banks/work/rules/style", {"content": "Answer in English."})
    status, first = api.post("/v1/banks/work/preview", {"query": "hello"})
    assert status == 200 and "Answer in English." in first["system_prompt_section"]
    version = int(bank_row().rules_version)
    # a hand edit in S3 (console, CLI): no API call, so no version bump yet
    s3.put_object(Bucket=aws["CAIRN_BUCKET"], Key="default/banks/work/rules/style.md", Body=b"Answer in French.")
    s3.put_object(Bucket=aws["CAIRN_BUCKET"], Key="default/banks/work/rules/tone.md", Body=b"Be brief.")
    status, stale = api.post("/v1/banks/work/preview", {"query": "hello"})
    assert "Answer in English." in stale["system_prompt_section"]  # this instance's cache is warm
    # the event lands on another instance (another Lambda container)
    with Client(app) as other:
        out = other.lambda_.invoke("s3_object_changed", s3_event(other, aws, "default/banks/work/rules/style.md"))
    assert out.payload["action"] == "rules_reloaded" and out.payload["bank"] == "work"
    row = bank_row()
    assert int(row.rules_version) == version + 1 and int(row.rules) == 2
    status, fresh = api.post("/v1/banks/work/preview", {"query": "hello"})
    assert "Answer in French." in fresh["system_prompt_section"] and "Be brief." in fresh["system_prompt_section"]
    assert sorted(r["name"] for r in api.get("/v1/banks/work/rules")[1]["rules"]) == ["style", "tone"]


def test_deleted_rule_and_invalid_names(client, api, aws):
    s3 = boto3.client("s3", region_name="us-east-1")
    api.put("/v1/banks/work/rules/style", {"content": "Answer in English."})
    version = int(bank_row().rules_version)
    s3.delete_object(Bucket=aws["CAIRN_BUCKET"], Key="default/banks/work/rules/style.md")
    out = client.lambda_.invoke("s3_object_changed",
                                s3_event(client, aws, "default/banks/work/rules/style.md", "Object Deleted"))
    assert out.payload["action"] == "rules_reloaded"
    assert int(bank_row().rules) == 0 and int(bank_row().rules_version) == version + 1
    for key in ("default/banks/work/rules/Bad Name.md", "default/banks/../rules/x.md", "default/banks/work/rules/x.txt",
                "default/exports/work/a.jsonl"):
        out = client.lambda_.invoke("s3_object_changed", s3_event(client, aws, key))
        assert out.payload["action"] == "ignored", key
    assert int(bank_row().rules_version) == version + 1
    other = s3_event(client, aws, "default/banks/work/rules/style.md")
    other["detail"]["bucket"]["name"] = "someone-elses-bucket"
    assert client.lambda_.invoke("s3_object_changed", other).payload["action"] == "ignored"


def test_config_object_reload(client, aws):
    read_version = pytest.importorskip("chalicelib.inject.reload").read_version
    s3 = boto3.client("s3", region_name="us-east-1")
    before = read_version()
    s3.put_object(Bucket=aws["CAIRN_BUCKET"], Key="config/memory.toml", Body=b"[memory]\nno_such_key = 1\n")
    out = client.lambda_.invoke("s3_object_changed", s3_event(client, aws, "config/memory.toml"))
    assert out.payload["action"] == "config_invalid" and "no_such_key" in out.payload["error"]
    before += 1  # bumped all the same: every container re-reads it and runs the last good tuning
    assert read_version() == before == out.payload["config_version"]
    s3.put_object(Bucket=aws["CAIRN_BUCKET"], Key="config/memory.toml", Body=b"[memory]\nrecall_limit = 9\n")
    out = client.lambda_.invoke("s3_object_changed", s3_event(client, aws, "config/memory.toml"))
    assert out.payload["action"] == "config_reloaded" and read_version() == before + 1


def scheduled(client):
    return client.events.generate_cw_event(source="aws.events", detail_type="Scheduled Event", detail={},
                                           resources=["arn:aws:events:us-east-1:123456789012:rule/x"])


def test_purge_schedule_run_twice(client, aws):
    from chalicelib.storage.tables import ExtractionModel, IdempotencyModel, bind
    bind()
    now = int(time.time())
    for i in range(3):
        IdempotencyModel(key=f"old{i}", request_digest="d", status=200, body={}, expires_at=now - 10).save()
    IdempotencyModel(key="fresh", request_digest="d", status=200, body={}, expires_at=now + 3600).save()
    ExtractionModel(session_key="default#s", sk="job#t", org_id="default", session_id="s", updated_at=0,
                    expires_at=now - 1).save()
    ExtractionModel(session_key="default#s", sk="cursor", org_id="default", session_id="s", position=3,
                    updated_at=0).save()
    first = client.lambda_.invoke("purge_expired", scheduled(client)).payload
    second = client.lambda_.invoke("purge_expired", scheduled(client)).payload
    assert first["deleted"]["idempotency"] == 3 and first["deleted"]["extraction"] == 1
    assert second["deleted"]["idempotency"] == 0 and second["deleted"]["extraction"] == 0
    assert [r.key for r in IdempotencyModel.scan()] == ["fresh"]
    assert [r.sk for r in ExtractionModel.scan()] == ["cursor"]


def test_snapshot_and_compaction_schedules_run_twice(client, api, aws):
    from chalicelib.events import schedules
    for i in range(3):
        api.post("/v1/banks/work/memories", {"text": f"Snapshot fact {i}."})
    # the scheduled handlers, twice each: nothing to do at the default thresholds, no error
    results = [client.lambda_.invoke(name, scheduled(client)).payload
               for name in ("snapshot_indexes", "snapshot_indexes", "compact_team_logs", "compact_team_logs")]
    assert [r["status"] for r in results] == ["ran"] * 4, results
    # a bank that moved: the first run writes its snapshot, the second finds nothing new
    first = schedules.snapshot_indexes(min_seq_delta=1)
    second = schedules.snapshot_indexes(min_seq_delta=1)
    assert len(first["banks"]) == 1 and "/indexes/work/" in first["banks"][0]
    assert second["banks"] == []
    s3 = boto3.client("s3", region_name="us-east-1")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=aws["CAIRN_BUCKET"], Prefix="default/indexes/")["Contents"]]
    assert keys == [first["banks"][0]]
    assert api.get("/v1/banks/work/memories")[1]["total"] == 3
    json.dumps(results)  # the handlers' payloads are JSON
