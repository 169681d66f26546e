"""The SQS handler's logic: run a batch of extraction jobs, and of deferred related checks (a
message whose ``kind`` is ``related``: ``banks.conflicts.RelatedJob``, run by
``banks.service.check_deferred``).

Each record is processed on its own; one that fails (bad JSON, an unparseable model reply, a
backend error) is reported in ``batchItemFailures`` (the Lambda partial batch response, enabled by
``FunctionResponseTypes: ReportBatchItemFailures`` in the template) so only it is retried and,
after ``maxReceiveCount`` receipts, lands in the dead-letter queue. On a FIFO queue the records of
a failed message's group that come after it are reported too, unprocessed, to keep per-session
order; other sessions' records are never held back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from ..banks.conflicts import RELATED_KIND, RelatedJob
from ..banks.service import check_deferred
from ..extraction.job import TurnJob, run_job

log = logging.getLogger("cairn.events")


def handle_batch(records: list[dict[str, Any]], runner: Callable[[TurnJob], Any] = run_job,
                 related: Callable[[RelatedJob], Any] = check_deferred) -> dict[str, list[dict[str, str]]]:
    """Process SQS ``records`` (the Lambda event's ``Records``: ``messageId``, ``body``,
    ``attributes.MessageGroupId``) with ``runner`` (extraction jobs) or ``related`` (deferred
    related checks); returns ``{"batchItemFailures": [{"itemIdentifier": id}]}``."""
    failures: list[dict[str, str]] = []
    failed_groups: set[str] = set()
    for record in records:
        message_id = str(record.get("messageId", ""))
        group = (record.get("attributes") or {}).get("MessageGroupId")
        if group is not None and group in failed_groups:
            failures.append({"itemIdentifier": message_id})
            continue
        try:
            body = json.loads(record.get("body") or "")
            if isinstance(body, dict) and body.get("kind") == RELATED_KIND:
                related(RelatedJob.model_validate(body))
            else:
                runner(TurnJob.model_validate(body))
        except Exception as exc:  # noqa: BLE001 - poison message, unparseable reply, backend error: only this one fails
            log.warning(json.dumps({"msg": "extraction job failed", "message_id": message_id,
                                    "error": type(exc).__name__}))
            failures.append({"itemIdentifier": message_id})
            if group is not None:
                failed_groups.add(group)
    return {"batchItemFailures": failures}
