"""Scheduled jobs. Each is idempotent and safe to run twice at once:

- ``compact_team_logs``: compact team-entry update logs past ``COMPACT_AFTER`` into their S3
  state (the team module's own compaction, which conditions every write; skipped, and reported
  so, while that module has none).
- ``snapshot_indexes``: write S3 snapshots of bank indexes whose ``seq`` moved far enough since
  their last snapshot (``chalicelib.search.recall.snapshot_banks``; snapshots are keyed by
  ``seq``, so two runs write the same object).
- ``resume_deferred_extraction``: run again the extraction jobs parked past an org's daily token
  quota once the UTC day rolled over, in each session's turn order
  (``chalicelib.extraction.job.resume_deferred``).
- ``backfill_vectors``: one bounded run of the vector backfill in every bank that lacks the
  current model's vectors (``chalicelib.banks.backfill``: a covered bank costs a read of its
  counters; runs resume from each bank's cursor, so two at once redo at most one batch; no run
  starts after ``BACKFILL_BUDGET_S``: the other banks wait for the next tick).
- ``purge_expired``: delete expired idempotency, rate-limit and extraction-job records. DynamoDB's
  TTL removes them too, eventually (up to days late; moto never does); each delete is
  conditioned on the item still being expired, so a concurrent run or a refreshed item is safe.
  A scheduled job may scan; request paths never do.
"""

from __future__ import annotations

import importlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypedDict

from ..storage import sweep

log = logging.getLogger("cairn.events")

# Logical tables whose ``expires_at`` (seconds since epoch) is a TTL attribute. Tokens also have
# an ``expires_at``, but an expired token stays listed (audit), so it is not here.
PURGEABLE = ("idempotency", "team_rates", "extraction", "usage")
SNAPSHOT_MIN_SEQ_DELTA = 200
BACKFILL_BUDGET_S = 20.0  # a tick starts no bank's backfill after this: within the function's 30 s timeout


class JobReport(TypedDict, total=False):
    """What a scheduled job reports (its Lambda's JSON result): ``job``, ``status`` (``ran`` or
    ``skipped``), and ``reason`` (skipped), ``entries`` (compacted), ``banks`` (snapshot keys),
    ``deleted`` (``{table: n}``), ``sessions``/``jobs``/``still_deferred`` (deferred extraction) or
    ``banks`` (``<org>/<bank>`` that ran) and ``embedded`` (the vector backfill)."""

    job: str
    status: str
    reason: str
    entries: int
    banks: list[str]
    deleted: dict[str, int]
    sessions: int
    jobs: int
    still_deferred: int
    embedded: int


def _optional(module: str, name: str) -> Callable[..., Any] | None:
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def _report(report: JobReport) -> JobReport:
    log.info(json.dumps({"msg": "schedule", **report}, default=str))
    return report


def compact_team_logs() -> JobReport:
    """Compact every team entry whose retained updates (``log_seq - compacted_seq``) passed
    ``COMPACT_AFTER`` (``chalicelib.team.compaction.compact_due``, which conditions its writes on
    the ``compacted_seq`` it read): ``{job, status: ran | skipped, entries}``."""
    compact_due = _optional("chalicelib.team.compaction", "compact_due")
    get_limits = _optional("chalicelib.team.limits", "get_limits")
    if compact_due is None or get_limits is None:
        return _report({"job": "compact_team_logs", "status": "skipped", "reason": "no team compaction available"})
    after = int(get_limits().compact_after)
    due: dict[str, list[str]] = {}
    for org_id, entry_id, log_seq, compacted_seq in sweep.team_entry_logs():
        if log_seq - compacted_seq >= after:
            due.setdefault(org_id, []).append(entry_id)
    for org_id, entry_ids in due.items():
        compact_due(org_id, entry_ids)
    return _report({"job": "compact_team_logs", "status": "ran", "entries": sum(len(v) for v in due.values())})


def snapshot_indexes(min_seq_delta: int = SNAPSHOT_MIN_SEQ_DELTA) -> JobReport:
    """Snapshot busy banks' indexes: ``{job, status, banks: [names]}``."""
    fn = _optional("chalicelib.search.recall", "snapshot_banks") or \
        _optional("chalicelib.search.index", "snapshot_banks")
    if fn is None:
        return _report({"job": "snapshot_indexes", "status": "skipped", "reason": "no recall core available"})
    banks = fn(min_seq_delta=min_seq_delta)
    return _report({"job": "snapshot_indexes", "status": "ran", "banks": list(banks or [])})


def resume_deferred_extraction() -> JobReport:
    """Resume deferred extraction jobs whose day came: ``{job, status, sessions, jobs, still_deferred}``."""
    from ..extraction.job import resume_deferred
    r = resume_deferred()
    return _report({"job": "resume_deferred_extraction", "status": "ran", "sessions": r.sessions, "jobs": r.jobs,
                    "still_deferred": r.still_deferred})


def backfill_vectors() -> JobReport:
    """One backfill run per bank lacking vectors, as many banks as ``BACKFILL_BUDGET_S`` allows:
    ``{job, status, banks: [<org>/<bank>], embedded}``; skipped while the model is not available."""
    from .. import semantic
    from ..banks.backfill import backfill_all
    if not semantic.available():
        return _report({"job": "backfill_vectors", "status": "skipped", "reason": "the model is not available"})
    runs = [r for r in backfill_all(budget_s=BACKFILL_BUDGET_S) if r.status == "ran"]
    return _report({"job": "backfill_vectors", "status": "ran", "banks": [f"{r.org}/{r.bank}" for r in runs],
                    "embedded": sum(r.embedded for r in runs)})


def purge_expired(now_s: float | None = None) -> JobReport:
    """Delete expired records of the ``PURGEABLE`` tables: ``{job, status, deleted: {table: n}}``."""
    now = int(now_s if now_s is not None else time.time())
    return _report({"job": "purge_expired", "status": "ran", "deleted": sweep.purge_expired(PURGEABLE, now)})
