"""Table-wide sweeps for the scheduled jobs. A scheduled job may scan; request paths never do."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .tables import ALL_MODELS, TeamEntryModel, bind


def team_entry_logs() -> Iterator[tuple[str, str, int, int]]:
    """Every team entry as ``(org_id, entry_id, log_seq, compacted_seq)`` (a table scan)."""
    bind()
    for row in TeamEntryModel.scan(attributes_to_get=["org_id", "entry_id", "log_seq", "compacted_seq"]):
        yield row.org_id, row.entry_id, int(row.log_seq or 0), int(row.compacted_seq or 0)


def purge_expired(logical_names: tuple[str, ...], now_s: int) -> dict[str, int]:
    """Delete the items of the tables ``logical_names`` whose ``expires_at`` (seconds since epoch,
    their TTL attribute) is before ``now_s``; returns ``{logical name: items deleted}``. Each
    delete is conditioned on the item still being expired, so a concurrent run or a refreshed
    item is safe (it is skipped)."""
    bind()
    deleted: dict[str, int] = {}
    for model in ALL_MODELS:
        if model.LOGICAL_NAME not in logical_names or "expires_at" not in model.get_attributes():
            continue
        expires_at: Any = model.get_attributes()["expires_at"]
        n = 0
        for item in model.scan(expires_at < now_s):
            # deleted or refreshed meanwhile: nothing to do
            with contextlib.suppress(Exception):
                item.delete(condition=expires_at < now_s)
                n += 1
        deleted[model.LOGICAL_NAME] = n
    return deleted
