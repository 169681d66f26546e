"""The deployable wiring of the event handlers in infra/template.json: every
event function gets the API's environment, the SQS source is this stack's queue with partial
batch responses, the S3 rule is scoped to the data bucket, the stage is throttled by parameters,
and the role stays least-privilege."""

from __future__ import annotations

from app import app
from infra.local.resources import load_template

EVENT_FUNCTIONS = {"run_extraction": "RunExtraction", "s3_object_changed": "S3ObjectChanged",
                   "compact_team_logs": "CompactTeamLogs", "snapshot_indexes": "SnapshotIndexes",
                   "resume_deferred_extraction": "ResumeDeferredExtraction", "purge_expired": "PurgeExpired",
                   "backfill_vectors": "BackfillVectors"}


def test_every_event_function_is_wired_with_the_api_environment():
    resources = load_template()["Resources"]
    env = resources["APIHandler"]["Properties"]["Environment"]["Variables"]
    assert {s.name for s in app.event_sources} == set(EVENT_FUNCTIONS)
    for _name, logical in EVENT_FUNCTIONS.items():
        assert resources[logical]["Properties"]["Environment"]["Variables"] == env, logical


def test_queue_source_partial_batches_and_bucket_scoped_rule():
    r = load_template()["Resources"]
    sqs = r["RunExtraction"]["Properties"]["Events"]["RunExtractionSqsEventSource"]["Properties"]
    assert sqs["Queue"] == {"Fn::GetAtt": ["ExtractionQueue", "Arn"]}
    assert sqs["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert r["ExtractionQueue"]["Properties"]["VisibilityTimeout"] >= 6 * r["RunExtraction"]["Properties"]["Timeout"]
    assert r["ExtractionQueue"]["Properties"]["RedrivePolicy"]["deadLetterTargetArn"] == \
        {"Fn::GetAtt": ["ExtractionDeadLetterQueue", "Arn"]}
    detail = r["S3ObjectChanged"]["Properties"]["Events"]["S3ObjectChangedEvent"]["Properties"]["Pattern"]["detail"]
    assert detail["bucket"]["name"] == [{"Ref": "DataBucket"}]
    assert r["DataBucket"]["Properties"]["NotificationConfiguration"]["EventBridgeConfiguration"]["EventBridgeEnabled"]


def test_stage_throttling_and_least_privilege():
    t = load_template()
    settings = t["Resources"]["RestAPI"]["Properties"]["MethodSettings"][0]
    assert settings["ThrottlingRateLimit"] == {"Ref": "ThrottlingRateLimit"}
    assert settings["ThrottlingBurstLimit"] == {"Ref": "ThrottlingBurstLimit"}
    assert {"ThrottlingRateLimit", "ThrottlingBurstLimit"} <= set(t["Parameters"])
    default = t["Resources"]["DefaultRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    assert all(a.startswith("logs:") for s in default for a in s["Action"])
    for stmt in t["Resources"]["CairnDataPolicy"]["Properties"]["PolicyDocument"]["Statement"]:
        assert stmt["Resource"] != "*" and "*" not in stmt["Action"], stmt["Sid"]
