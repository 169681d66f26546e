"""End-to-end extraction on the local stack: a finished turn with
"remember that I deploy on Fridays" goes through the hook, the SQS FIFO queue and the launcher's
poller into the offline extractor; recall finds the memory on the next turn; delivering the same
turn again adds nothing; the stack's logs hold neither the memory's text nor the token."""

from __future__ import annotations

import time

import boto3

BANK = "e2e-extract"
TURN = {"session_id": "e2e-session-1", "turn_id": "turn-1", "status": "completed",
        "metadata": {"memory_bank": BANK},
        "messages": [{"role": "user", "content": "Hi! Remember that I deploy on Fridays."},
                     {"role": "assistant", "content": "Got it, I will keep that in mind."}]}


def wait_for(fn, timeout_s=60.0, every_s=0.25):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError("condition not met in time")


def memories(http):
    r = http.get(f"/v1/banks/{BANK}/memories?include_superseded=true")
    return r.json()["memories"] if r.status_code == 200 else []


def queue_drained(stack):
    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=stack.moto_url,
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    url = sqs.get_queue_url(QueueName="cairn-local-extraction.fifo")["QueueUrl"]
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return attrs["ApproximateNumberOfMessages"] == "0" and attrs["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_turn_to_memory_to_recall_and_redelivery_adds_nothing(stack, http):
    r = http.post("/v1/hooks/turn-completed", json=TURN)
    assert r.status_code == 202, r.text
    assert r.json()["queued"] is True and r.json()["bank"] == BANK
    [mem] = wait_for(lambda: memories(http))
    assert mem["text"] == "The user deploys on Fridays."
    assert mem["confidence"] == "extracted" and mem["source"]["session_id"] == "e2e-session-1"

    # the next turn: recall finds it
    r = http.post(f"/v1/banks/{BANK}/recall", json={"query": "Which day do I deploy?"})
    assert r.status_code == 200, r.text
    assert [h["memory"]["text"] for h in r.json()["memories"]][:1] == ["The user deploys on Fridays."]

    # the same turn delivered again (a retried hook): nothing new, nothing reinforced
    assert http.post("/v1/hooks/turn-completed", json=TURN).status_code == 202
    later = dict(TURN, turn_id="turn-1-again")  # past the queue's deduplication: the cursor decides
    assert http.post("/v1/hooks/turn-completed", json=later).status_code == 202
    wait_for(lambda: queue_drained(stack))
    [again] = memories(http)
    assert again["id"] == mem["id"] and again["revision"] == mem["revision"]
    assert again["corroboration"] == 0


def test_logs_hold_no_memory_text_and_no_token(stack, http):
    secret = "Remember that the escrow passphrase hint is violet-harbor-42."
    r = http.post("/v1/hooks/turn-completed", json=dict(TURN, session_id="e2e-session-2", turn_id="t-secret",
                                                        messages=[{"role": "user", "content": secret}]))
    assert r.status_code == 202
    saved = wait_for(lambda: [m for m in memories(http) if "violet-harbor" in m["text"]])
    assert http.get(f"/v1/banks/{BANK}/memories/{saved[0]['id']}").status_code == 200
    wait_for(lambda: queue_drained(stack))
    log = stack.log_path.read_text(errors="replace")
    assert '"msg": "request"' in log  # the request lines are there ...
    assert "violet-harbor" not in log and "deploy on Fridays" not in log  # ... but no memory text
    assert stack.token not in log
    # stdout: only the launcher's start-up banner shows the dev token (it is how a person gets it)
    assert [line for line in stack.stdout if stack.token in line and "token:" not in line] == []
