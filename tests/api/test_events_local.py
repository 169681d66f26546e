"""The local stack's event loops feed app.py's own handlers: the SQS poller,
the schedule timer and the rule-ETag watcher, over the in-process moto backend."""

from __future__ import annotations

import boto3
import pytest

from infra.local.events import LocalEvents

SESSION = "local-s1"


@pytest.fixture
def loops(app, aws, monkeypatch):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    return LocalEvents(app, log=lambda msg: None)


SCHEDULES = ["backfill_vectors", "compact_team_logs", "purge_expired", "resume_deferred_extraction",
             "snapshot_indexes"]


def test_handlers_are_discovered(loops):
    assert loops.sqs_handlers == ["run_extraction"]
    assert loops.s3_handlers == ["s3_object_changed"]
    assert sorted(loops.schedule_handlers) == SCHEDULES


def test_poller_runs_queued_jobs_and_keeps_failed_ones(loops, api, aws):
    status, body = api.post("/v1/hooks/turn-completed", {
        "session_id": SESSION, "turn_id": "t1", "metadata": {"memory_bank": "work"},
        "messages": [{"role": "user", "content": "Remember that the release train leaves on Thursdays."}]})
    assert status == 202 and body["queued"] is True
    sqs = boto3.client("sqs", region_name="us-east-1")
    sqs.send_message(QueueUrl=aws["CAIRN_QUEUE_URL"], MessageBody="{broken", MessageGroupId="g2",
                     MessageDeduplicationId="d2")
    done = loops.poll_queue()
    assert done == {"received": 2, "failed": 1}
    texts = [m["text"] for m in api.get("/v1/banks/work/memories")[1]["memories"]]
    assert texts == ["The release train leaves on Thursdays."]
    attrs = sqs.get_queue_attributes(QueueUrl=aws["CAIRN_QUEUE_URL"], AttributeNames=["All"])["Attributes"]
    assert attrs["ApproximateNumberOfMessagesNotVisible"] == "1"  # the bad one waits for its retry
    assert loops.poll_queue() == {"received": 0, "failed": 0}


def test_watcher_reloads_a_hand_edited_rule_once(loops, api, aws):
    from chalicelib.core.store import get_bank_row
    api.put("/v1/banks/work/rules/style", {"content": "Be terse."})
    assert loops.watch_objects() == []  # baseline
    version = int(get_bank_row("default", "work").rules_version)
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.put_object(Bucket=aws["CAIRN_BUCKET"], Key="default/banks/work/rules/extra.md", Body=b"Cite sources.")
    s3.put_object(Bucket=aws["CAIRN_BUCKET"], Key="default/banks/other/rules/Not Valid.md", Body=b"ignored")
    out = loops.watch_objects()
    assert [o["action"] for o in out] == ["rules_reloaded"]
    row = get_bank_row("default", "work")
    assert int(row.rules_version) == version + 1 and int(row.rules) == 2
    assert loops.watch_objects() == []  # nothing changed since
    s3.delete_object(Bucket=aws["CAIRN_BUCKET"], Key="default/banks/work/rules/extra.md")
    assert [o["action"] for o in loops.watch_objects()] == ["rules_reloaded"]
    assert int(get_bank_row("default", "work").rules) == 1


def test_timer_fires_every_schedule(loops):
    results = loops.fire_schedules()
    assert sorted(r["job"] for r in results) == SCHEDULES
    assert all(r["status"] == "ran" for r in results)
