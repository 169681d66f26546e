"""The non-HTTP Lambda handlers, as a Blueprint app.py registers.

Each is a thin shell over a plain function in ``chalicelib.events``. Names matter: they are the
Lambda function names (``cairn-<stage>-<name>``), the CloudFormation resources the template
merges into (``RunExtraction``, ...) and what ``infra/local/events.py`` invokes.

The SQS source's ARN here is a placeholder: ``infra/template.json`` replaces it with the
``ExtractionQueue``'s ARN (stack-specific) and turns on partial batch responses; the EventBridge
rule's bucket filter is likewise set there.
"""

from __future__ import annotations

from chalice import Blueprint, Rate

from ..events import reload, schedules
from ..logs import configure_logging

bp = Blueprint(__name__)
# Lambda imports this module, not app.py, for these functions: configure logging here too
configure_logging()

QUEUE_ARN_PLACEHOLDER = "arn:aws:sqs:us-east-1:000000000000:cairn-extraction.fifo"
S3_PATTERN = {"source": ["aws.s3"], "detail-type": list(reload.RULE_EVENTS)}


@bp.on_sqs_message(queue_arn=QUEUE_ARN_PLACEHOLDER, batch_size=10)
def run_extraction(event):
    """Extraction jobs and deferred related-memory checks: a partial batch response, so one bad
    message never blocks the others."""
    from ..events import extraction  # the extractor loads on the first job, not at import app

    return extraction.handle_batch([r.to_dict() for r in event])


@bp.on_cw_event(S3_PATTERN)
def s3_object_changed(event):
    """Rule or config object written or removed in S3: reload."""
    return reload.handle_object_event(event.detail_type, event.detail)


@bp.schedule(Rate(10, unit=Rate.MINUTES))
def compact_team_logs(event):
    """Compact team-entry update logs."""
    return schedules.compact_team_logs()


@bp.schedule(Rate(10, unit=Rate.MINUTES))
def snapshot_indexes(event):
    """Snapshot bank indexes that moved."""
    return schedules.snapshot_indexes()


@bp.schedule(Rate(10, unit=Rate.MINUTES))
def resume_deferred_extraction(event):
    """Run again the extraction jobs deferred past a daily quota, once the UTC day rolled over."""
    return schedules.resume_deferred_extraction()


@bp.schedule(Rate(10, unit=Rate.MINUTES))
def backfill_vectors(event):
    """Give memories lacking the current model's sentence vector one, a bounded amount per bank."""
    return schedules.backfill_vectors()


@bp.schedule(Rate(1, unit=Rate.HOURS))
def purge_expired(event):
    """Purge expired idempotency, rate-limit and extraction-job records."""
    return schedules.purge_expired()
