"""Scheduled jobs. Each is idempotent and safe to run twice at once:

- ``compact_team_logs``: compact team-entry update logs past ``COMPACT_AFTER`` into their S3
  state (the team module's own compaction, which conditions every write; skipped, and reported
  so, while that module has none).
- ``snapshot_indexes``: write S3 snapshots of bank indexes whose ``seq`` moved far enough since
  their last snapshot (``chalicelib.search.recall.snapshot_banks``; snapshots are keyed by
  ``seq``, so two runs write the same object).
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
from typing import Any

from ..storage.tables import ALL_MODELS, bind

log = logging.getLogger("cairn.events")

# Logical tables whose ``expires_at`` (seconds since epoch) is a TTL attribute. Tokens also have
# an ``expires_at``, but an expired token stays listed (audit), so it is not here.
PURGEABLE = ("idempotency", "team_rates", "extraction")
SNAPSHOT_MIN_SEQ_DELTA = 200


def _optional(module: str, name: str) -> Callable[..., Any] | None:
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def _report(job: str, result: dict[str, Any]) -> dict[str, Any]:
    log.info(json.dumps({"msg": "schedule", "job": job, **result}, default=str))
    return {"job": job, **result}


def compact_team_logs() -> dict[str, Any]:
    """Compact every team entry whose retained updates (``log_seq - compacted_seq``) passed
    ``COMPACT_AFTER`` (``chalicelib.team.compaction.compact_due``, which conditions its writes on
    the ``compacted_seq`` it read): ``{job, status: ran | skipped, entries}``."""
    compact_due = _optional("chalicelib.team.compaction", "compact_due")
    get_limits = _optional("chalicelib.team.limits", "get_limits")
    model = next((m for m in ALL_MODELS if m.LOGICAL_NAME == "team_entries"), None)
    if compact_due is None or get_limits is None or model is None:
        return _report("compact_team_logs", {"status": "skipped", "reason": "no team compaction available"})
    bind()
    after = int(get_limits().compact_after)
    due: dict[str, list[str]] = {}
    for row in model.scan(attributes_to_get=["org_id", "entry_id", "log_seq", "compacted_seq"]):
        if int(row.log_seq or 0) - int(row.compacted_seq or 0) >= after:
            due.setdefault(row.org_id, []).append(row.entry_id)
    for org_id, entry_ids in due.items():
        compact_due(org_id, entry_ids)
    return _report("compact_team_logs", {"status": "ran", "entries": sum(len(v) for v in due.values())})


def snapshot_indexes(min_seq_delta: int = SNAPSHOT_MIN_SEQ_DELTA) -> dict[str, Any]:
    """Snapshot busy banks' indexes: ``{job, status, banks: [names]}``."""
    fn = _optional("chalicelib.search.recall", "snapshot_banks") or _optional("chalicelib.search.index", "snapshot_banks")
    if fn is None:
        return _report("snapshot_indexes", {"status": "skipped", "reason": "no recall core available"})
    banks = fn(min_seq_delta=min_seq_delta)
    return _report("snapshot_indexes", {"status": "ran", "banks": list(banks or [])})


def purge_expired(now_s: float | None = None) -> dict[str, Any]:
    """Delete expired records of the ``PURGEABLE`` tables: ``{job, status, deleted: {table: n}}``."""
    bind()
    now = int(now_s if now_s is not None else time.time())
    deleted: dict[str, int] = {}
    for model in ALL_MODELS:
        if model.LOGICAL_NAME not in PURGEABLE or "expires_at" not in model.get_attributes():
            continue
        n = 0
        for item in model.scan(model.expires_at < now):
            try:
                item.delete(condition=model.expires_at < now)
                n += 1
            except Exception:  # noqa: BLE001 - deleted or refreshed meanwhile: nothing to do
                continue
        deleted[model.LOGICAL_NAME] = n
    return _report("purge_expired", {"status": "ran", "deleted": deleted})


def run_all() -> list[dict[str, Any]]:
    """Every scheduled job once, each isolated from the others' failures (the local timer)."""
    out = []
    for job in (compact_team_logs, snapshot_indexes, purge_expired):
        try:
            out.append(job())
        except Exception as exc:  # noqa: BLE001 - one job's failure must not skip the rest
            log.warning(json.dumps({"msg": "schedule failed", "job": job.__name__, "error": type(exc).__name__}))
            out.append({"job": job.__name__, "status": "failed", "error": type(exc).__name__})
    return out
