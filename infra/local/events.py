"""The local stack's runtime for the non-HTTP handlers.

``chalice local`` serves HTTP only, so the launcher (``infra/local/stack.py``) runs these loops as
``Worker`` threads in its own process, which imports ``app.py`` with the same ``CAIRN_*`` and
``AWS_ENDPOINT_URL`` environment as the ``chalice local`` child. Each loop builds the event
Lambda would get and calls the app's own handler (``app.handler_map[name](event, context)``), so
what runs locally is what runs on AWS:

- ``poll_queue``: receives up to 10 messages from the extraction queue, invokes the SQS
  handler, deletes the messages it did not report in ``batchItemFailures`` and makes the failed
  ones visible again after ``RETRY_DELAY_S`` (after ``maxReceiveCount`` receipts the queue's
  redrive policy moves them to the dead-letter queue, as on AWS).
- ``fire_schedules``: invokes every ``@app.schedule`` handler (each tick of its own worker).
- ``watch_objects``: lists the bucket, compares the ETags of rule objects
  (``<org>/banks/<bank>/rules/<name>.md``) and ``config/memory.toml`` with the previous tick and
  invokes the S3-event handler with an EventBridge ``Object Created`` / ``Object Deleted`` event
  for each change (the first tick only records the baseline).
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
from chalice.app import CloudWatchEventConfig, ScheduledEventConfig, SQSEventConfig

from chalicelib.events.reload import CONFIG_KEY, parse_rule_key

POLL_INTERVAL_S = 1.0
WATCH_INTERVAL_S = 2.0
SCHEDULE_INTERVAL_S = float(os.environ.get("CAIRN_LOCAL_SCHEDULE_S", "60"))
RETRY_DELAY_S = 5
LOCAL_ACCOUNT = "123456789012"


class LocalEvents:
    """Feeds the app's SQS, schedule and S3-event handlers from the local (moto) backend.

    ``app``: the Chalice app object (``from app import app``); ``queue_url``, ``bucket``,
    ``region``: the stack's resources (default: the ``CAIRN_*`` environment). Each ``*`` method is
    one tick and returns what it did; ``workers()`` wraps them for the launcher."""

    def __init__(self, app, *, queue_url: str | None = None, bucket: str | None = None,
                 region: str | None = None, log: Callable[[str], None] = print) -> None:
        self.app = app
        self.queue_url = queue_url if queue_url is not None else os.environ.get("CAIRN_QUEUE_URL", "")
        self.bucket = bucket or os.environ["CAIRN_BUCKET"]
        self.region = region or os.environ.get("CAIRN_REGION", "us-east-1")
        self.log = log
        self._etags: dict[str, str] | None = None
        self._lock = threading.Lock()  # one watcher tick at a time
        sources = list(app.event_sources)
        self.sqs_handlers = [s.name for s in sources if isinstance(s, SQSEventConfig)]
        self.schedule_handlers = [s.name for s in sources if isinstance(s, ScheduledEventConfig)]
        self.s3_handlers = [s.name for s in sources if isinstance(s, CloudWatchEventConfig)
                            and "aws.s3" in s.event_pattern.get("source", [])]

    def _invoke(self, name: str, event: dict[str, Any]) -> Any:
        return self.app.handler_map[name](event, None)

    # --- SQS -----------------------------------------------------------------------------------

    def poll_queue(self) -> dict[str, int]:
        """One receive + invoke + delete round: ``{received, failed}``."""
        if not self.queue_url or not self.sqs_handlers:
            return {"received": 0, "failed": 0}
        sqs = boto3.client("sqs", region_name=self.region)
        msgs = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                   AttributeNames=["All"]).get("Messages", [])
        if not msgs:
            return {"received": 0, "failed": 0}
        arn = f"arn:aws:sqs:{self.region}:{LOCAL_ACCOUNT}:{self.queue_url.rsplit('/', 1)[-1]}"
        event = {"Records": [{
            "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
            "attributes": m.get("Attributes", {}), "messageAttributes": {}, "md5OfBody": m.get("MD5OfBody", ""),
            "eventSource": "aws:sqs", "eventSourceARN": arn, "awsRegion": self.region} for m in msgs]}
        try:
            result = self._invoke(self.sqs_handlers[0], event) or {}
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        except Exception as exc:  # noqa: BLE001 - as on Lambda: an error fails the whole batch
            self.log(f"sqs handler failed: {type(exc).__name__}")
            failed = {m["MessageId"] for m in msgs}
        for m in msgs:
            if m["MessageId"] in failed:
                sqs.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"],
                                              VisibilityTimeout=RETRY_DELAY_S)
            else:
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
        return {"received": len(msgs), "failed": len(failed)}

    # --- schedules -----------------------------------------------------------------------------

    def fire_schedules(self) -> list[Any]:
        """Invoke every scheduled handler once, with a CloudWatch ``Scheduled Event``."""
        out = []
        for name in self.schedule_handlers:
            event = {"version": "0", "id": str(uuid.uuid4()), "detail-type": "Scheduled Event",
                     "source": "aws.events", "account": LOCAL_ACCOUNT, "time": _now_iso(), "region": self.region,
                     "resources": [f"arn:aws:events:{self.region}:{LOCAL_ACCOUNT}:rule/{name}"], "detail": {}}
            try:
                out.append(self._invoke(name, event))
            except Exception as exc:  # noqa: BLE001 - one schedule's failure must not skip the rest
                self.log(f"schedule {name} failed: {type(exc).__name__}: {exc}")
                out.append({"job": name, "status": "failed"})
        return out

    # --- S3 rule/config watcher ----------------------------------------------------------------

    def _watched(self) -> dict[str, str]:
        s3 = boto3.client("s3", region_name=self.region)
        found = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            for obj in page.get("Contents", []):
                key = obj["Key"]
                if key == CONFIG_KEY or parse_rule_key(key) is not None:
                    found[key] = obj["ETag"]
        return found

    def watch_objects(self) -> list[Any]:
        """Compare ETags with the previous tick; invoke the S3 handler once per changed object."""
        with self._lock:
            current = self._watched()
            previous, self._etags = self._etags, current
        if previous is None or not self.s3_handlers:
            return []
        changes = [(k, "Object Created", current[k]) for k in current if previous.get(k) != current[k]]
        changes += [(k, "Object Deleted", previous[k]) for k in previous if k not in current]
        out = []
        for key, detail_type, etag in changes:
            event = {"version": "0", "id": str(uuid.uuid4()), "detail-type": detail_type, "source": "aws.s3",
                     "account": LOCAL_ACCOUNT, "time": _now_iso(), "region": self.region,
                     "resources": [f"arn:aws:s3:::{self.bucket}"],
                     "detail": {"version": "0", "bucket": {"name": self.bucket},
                                "object": {"key": key, "etag": etag.strip('"')},
                                "reason": "PutObject" if detail_type == "Object Created" else "DeleteObject"}}
            for name in self.s3_handlers:
                try:
                    out.append(self._invoke(name, event))
                except Exception as exc:  # noqa: BLE001 - logged; the next change is still delivered
                    self.log(f"s3 handler {name} failed: {type(exc).__name__}: {exc}")
        return out

    # --- threads -------------------------------------------------------------------------------

    def loops(self) -> list[tuple[str, Callable[[], Any], float]]:
        """``(name, tick, interval_s)`` of the three loops."""
        return [("sqs-poller", self.poll_queue, POLL_INTERVAL_S),
                ("schedule-timer", self.fire_schedules, SCHEDULE_INTERVAL_S),
                ("rule-watcher", self.watch_objects, WATCH_INTERVAL_S)]

    def workers(self) -> list:
        """The loops as the launcher's ``Worker`` threads (``infra.local.stack.Worker``)."""
        from .stack import Worker
        self.watch_objects()  # record the baseline now, so a change right after start is seen
        return [Worker(name, tick, interval) for name, tick, interval in self.loops()]

    def start(self, stop: threading.Event) -> list[threading.Thread]:
        """Run the loops in daemon threads until ``stop`` is set (without the launcher)."""
        threads = []
        self.watch_objects()
        for name, tick, interval in self.loops():
            def loop(tick=tick, interval=interval, name=name) -> None:
                while not stop.wait(interval):
                    try:
                        tick()
                    except Exception as exc:  # noqa: BLE001 - a failed tick must not end the loop
                        self.log(f"{name}: {type(exc).__name__}: {exc}")
            t = threading.Thread(target=loop, name=f"cairn-{name}", daemon=True)
            t.start()
            threads.append(t)
        return threads


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe(events: LocalEvents) -> str:
    """One line for the launcher's log: which handlers the loops feed."""
    return json.dumps({"sqs": events.sqs_handlers, "schedules": events.schedule_handlers, "s3": events.s3_handlers})
