"""Extraction's model tokens and cost per org and UTC day, and the daily quota: a turn over it
still answers 202, its job is parked (message kept, cursor unchanged), the doctor reports it,
and the scheduled resume runs the parked turns in order once the UTC day rolled over."""

from __future__ import annotations

import datetime as dt

import pytest

from chalicelib import clock
from chalicelib.extraction import job as jobs
from chalicelib.extraction.models import ModelUsage
from chalicelib.extraction.parse import Candidate

DAY1 = int(dt.datetime(2026, 12, 1, 23, 30, tzinfo=dt.UTC).timestamp() * 1000)
SESSION = "quota-session"
FACTS = ["Remember that the build uses Bazel.", "Remember that staging deploys run on Fridays.",
         "Remember that prod deploys need two approvals.", "Remember that the on-call rota changes on Mondays."]


class FakeModel:
    """A model backend (not offline) that reports 40 input and 20 output tokens per call and
    turns each user line of the window into one memory."""

    name = "bedrock"

    def __init__(self):
        self.windows: list[str] = []
        self.last_usage: ModelUsage | None = None

    def extract(self, window):
        self.windows.append(window.text)
        self.last_usage = ModelUsage("fake-model", 40, 20)
        return [Candidate(text=t.removeprefix("Remember that ").rstrip(".") + ".") for r, t in window.lines
                if r == "user"]


@pytest.fixture
def model(monkeypatch, aws):
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")
    monkeypatch.setenv("CAIRN_QUOTA_EXTRACTION_TOKENS_PER_DAY", "100")
    monkeypatch.setenv("CAIRN_MODEL_PRICES", '{"fake-model": [1.5, 4]}')
    now = [DAY1]
    monkeypatch.setattr(clock, "now_ms", lambda: now[0])
    fake = FakeModel()
    monkeypatch.setattr(jobs, "get_extractor", lambda: fake)
    fake.now = now
    return fake


def _turn(api, n):
    msgs = []
    for fact in FACTS[:n]:
        msgs += [{"role": "user", "content": fact}, {"role": "assistant", "content": "Noted."}]
    return api.post("/v1/hooks/turn-completed", {"session_id": SESSION, "turn_id": f"t{n}", "messages": msgs,
                                                 "metadata": {"memory_bank": "work"}})


def _texts(api):
    return sorted(m["text"] for m in api.get("/v1/banks/work/memories")[1]["memories"])


def _raw(pk, sk):
    from chalicelib.usage import limits
    item = limits.raw_client().get_item(TableName=limits.usage_table(), Key={"pk": {"S": pk}, "sk": {"S": sk}},
                                        ConsistentRead=True).get("Item") or {}
    return {k: int(v["N"]) for k, v in item.items() if "N" in v and k != "expires_at"}


def test_over_the_daily_quota_a_turn_is_deferred_then_resumed_in_order(api, model):
    from chalicelib.events import schedules
    from chalicelib.extraction.store import get_cursor
    from chalicelib.usage.extraction import due_pointers

    for n in (1, 2):  # 60 tokens each: the second call still starts under the limit (100)
        status, body = _turn(api, n)
        assert status == 202 and body["outcome"]["status"] == "applied", body
    from chalicelib.auth.tokens import token_id_for
    hour = [k for k in _scan_usage() if k[0] == "u#default" and k[1].endswith("#x")]
    assert hour == [("u#default", f"2026120123#{token_id_for(api.token)}#x")]
    # 2 calls x (40 in x 1.5 + 20 out x 4 USD per Mtok) = 2 x 140 µUSD = 280,000 nUSD
    assert _raw(*hour[0]) == {"work|x_jobs": 2, "work|x_in": 80, "work|x_out": 40, "work|x_nusd": 280_000}
    status, usage = api.get("/v1/usage?from=1796083200000&to=1796169600000&group_by=bank")
    assert status == 200, usage
    assert {k: usage["totals"][k] for k in ("extraction_jobs", "model_input_tokens", "model_output_tokens",
                                            "model_cost_usd")} == {"extraction_jobs": 2, "model_input_tokens": 80,
                                                                   "model_output_tokens": 40, "model_cost_usd": 0.00028}
    assert _raw("q#default", "x#20261201") == {"tokens": 120}
    position = get_cursor("default", SESSION).position
    assert position == 4

    for n in (3, 4):  # over the quota: 202, deferred, no model call, the cursor stays
        status, body = _turn(api, n)
        assert status == 202 and body["accepted"] is True and body["outcome"]["status"] == "deferred", body
    assert len(model.windows) == 2
    assert get_cursor("default", SESSION).position == position
    assert len(_texts(api)) == 2

    status, body = api.get("/v1/doctor")
    check = next(c for c in body["checks"] if c["name"] == "extraction_quota")
    assert check["ok"] is False and check["required"] is False
    assert "2 extraction jobs of 1 sessions deferred until 2026-12-02" in check["detail"], check
    assert "120 of 100 model tokens used today" in check["detail"]

    assert schedules.resume_deferred_extraction()["sessions"] == 0  # the day has not rolled over
    assert len(model.windows) == 2

    model.now[0] = DAY1 + 3600 * 1000  # 00:30 UTC the next day
    report = schedules.resume_deferred_extraction()
    assert report["sessions"] == 1 and report["jobs"] == 2 and report["still_deferred"] == 0, report
    # in order: turn 3's window holds its own fact; turn 4's only its own (the cursor moved past 3 first)
    assert FACTS[2] in model.windows[2] and FACTS[3] in model.windows[3] and FACTS[2] not in model.windows[3]
    assert get_cursor("default", SESSION).position == 8
    assert _texts(api) == sorted(f.removeprefix("Remember that ") for f in FACTS)
    assert due_pointers() == []
    assert _raw("q#default", "x#20261202") == {"tokens": 120}
    status, body = api.get("/v1/doctor")
    check = next(c for c in body["checks"] if c["name"] == "extraction_quota")
    assert check["ok"] is True and check["detail"].startswith("no extraction job deferred"), check
    # a redelivery of a resumed turn adds nothing
    status, body = _turn(api, 4)
    assert status == 202 and body["outcome"]["status"] == "duplicate"


def test_a_job_still_over_the_quota_the_next_day_waits_another_day(api, model, monkeypatch):
    from chalicelib.events import schedules
    from chalicelib.extraction.store import get_cursor
    monkeypatch.setenv("CAIRN_QUOTA_EXTRACTION_TOKENS_PER_DAY", "50")
    assert _turn(api, 1)[1]["outcome"]["status"] == "applied"
    assert _turn(api, 2)[1]["outcome"]["status"] == "deferred"
    assert _turn(api, 3)[1]["outcome"]["status"] == "deferred"
    model.now[0] = DAY1 + 3600 * 1000
    report = schedules.resume_deferred_extraction()
    assert report == {"job": "resume_deferred_extraction", "status": "ran", "sessions": 1, "jobs": 2,
                      "still_deferred": 1}, report
    assert get_cursor("default", SESSION).position == 4  # turn 2 ran, turn 3 waits behind the quota
    assert schedules.resume_deferred_extraction()["sessions"] == 0
    model.now[0] += 24 * 3600 * 1000
    assert schedules.resume_deferred_extraction()["still_deferred"] == 0
    assert get_cursor("default", SESSION).position == 6
    assert len(_texts(api)) == 3


def test_the_offline_extractor_is_never_deferred_and_costs_nothing(api, aws, monkeypatch):
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    monkeypatch.setenv("CAIRN_QUOTA_EXTRACTION_TOKENS_PER_DAY", "1")
    for n in (1, 2):
        status, body = _turn(api, n)
        assert status == 202 and body["outcome"]["status"] == "applied", body
    assert not [k for k in _scan_usage() if k[1].endswith("#x") or k[1].startswith("x#")]


def test_backends_report_the_models_own_token_counts():
    from types import SimpleNamespace

    from chalicelib.extraction.models import BedrockExtractor, OpenAICompatibleExtractor
    from chalicelib.extraction.transcript import window
    from chalicelib.settings import Settings
    w = window([{"role": "user", "content": "Remember that tea is green."}], position=None, last_id=None, size=4)

    class Converse:
        def __init__(self, usage):
            self.usage = usage

        def converse(self, **kw):
            out = {"output": {"message": {"content": [{"text": "[]"}]}}}
            return {**out, "usage": self.usage} if self.usage is not None else out

    b = BedrockExtractor(Settings(bedrock_model_id="m1"), client=Converse({"inputTokens": 12, "outputTokens": 3}))
    b.extract(w)
    assert b.last_usage == ModelUsage("m1", 12, 3, reported=True)
    b.client = Converse(None)
    b.extract(w)
    assert b.last_usage == ModelUsage("m1", 0, 0, reported=False)

    o = OpenAICompatibleExtractor.__new__(OpenAICompatibleExtractor)
    o.model = "gpt-x"
    for usage, want in ((SimpleNamespace(prompt_tokens=7, completion_tokens=2), ModelUsage("gpt-x", 7, 2)),
                        (None, ModelUsage("gpt-x", 0, 0, reported=False))):
        reply = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="[]"))], usage=usage)
        create = SimpleNamespace(create=lambda reply=reply, **kw: reply)
        o.client = SimpleNamespace(chat=SimpleNamespace(completions=create))
        o.extract(w)
        assert o.last_usage == want


def test_model_prices_must_be_a_json_price_table(monkeypatch):
    from chalicelib.errors import ConfigError
    from chalicelib.settings import get_settings
    from chalicelib.usage.extraction import cost_nusd
    for bad in ("[1]", '{"m": [1]}', '{"m": [1, -2]}', '{"m": "cheap"}', "not json"):
        monkeypatch.setenv("CAIRN_MODEL_PRICES", bad)
        with pytest.raises(ConfigError, match="CAIRN_MODEL_PRICES"):
            get_settings()
    monkeypatch.setenv("CAIRN_MODEL_PRICES", '{"m": [0.25, 1.25]}')
    assert cost_nusd("m", 1_000_000, 1_000_000) == 1_500_000_000  # 1.5 USD
    assert cost_nusd("other", 10, 10) == 0


def _scan_usage():
    from chalicelib.usage import limits
    items = limits.raw_client().scan(TableName=limits.usage_table(), ConsistentRead=True)["Items"]
    return [(it["pk"]["S"], it["sk"]["S"]) for it in items]


def _drain(queue_url):
    """Run every message of the FIFO queue through the extraction handler, in order; the bodies."""
    import boto3

    from chalicelib.events.extraction import handle_batch
    sqs = boto3.client("sqs", region_name="us-east-1")
    bodies = []
    while msgs := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10,
                                      AttributeNames=["All"]).get("Messages", []):
        records = [{"messageId": m["MessageId"], "body": m["Body"],
                    "attributes": {"MessageGroupId": m["Attributes"]["MessageGroupId"],
                                   "MessageDeduplicationId": m["Attributes"]["MessageDeduplicationId"]}}
                   for m in msgs]
        assert handle_batch(records) == {"batchItemFailures": []}
        for m in msgs:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
        bodies += records
    return bodies


def test_with_a_queue_the_resume_sends_parked_jobs_back_in_order(api, model, aws, monkeypatch):
    """Through the FIFO queue: the parked turns go back to their session's group, turn order
    kept, with a deduplication id of their own; the worker runs them; nothing is lost."""
    from chalicelib.events import schedules
    from chalicelib.extraction.store import get_cursor, parked
    monkeypatch.setenv("CAIRN_QUEUE_URL", aws["CAIRN_QUEUE_URL"])
    for n in (1, 2, 3, 4):
        status, body = _turn(api, n)
        assert status == 202 and body["queued"] is True, body
    _drain(aws["CAIRN_QUEUE_URL"])
    assert get_cursor("default", SESSION).position == 4 and len(parked("default", SESSION)) == 2
    model.now[0] = DAY1 + 3600 * 1000
    assert schedules.resume_deferred_extraction()["jobs"] == 2
    sent = _drain(aws["CAIRN_QUEUE_URL"])
    from chalicelib.extraction.job import TurnJob, queue_ids
    assert [r["attributes"]["MessageDeduplicationId"] for r in sent] == [
        queue_ids(TurnJob.model_validate_json(r["body"]), again="resumed#20261202")[1] for r in sent]
    assert len({r["attributes"]["MessageDeduplicationId"] for r in sent}) == 2
    assert get_cursor("default", SESSION).position == 8 and parked("default", SESSION) == []
    assert _texts(api) == sorted(f.removeprefix("Remember that ") for f in FACTS)
    # sent, not yet run when the resume looked: the pointer moved a day on, in case a job fails for good
    assert schedules.resume_deferred_extraction()["sessions"] == 0
    model.now[0] += 24 * 3600 * 1000
    assert schedules.resume_deferred_extraction()["sessions"] == 1  # nothing parked any more: the pointer goes
    assert schedules.resume_deferred_extraction()["sessions"] == 0
