"""Compaction of an entry's edit log (issue 5, "Collaborative text"; DESIGN.md "Events").

After ``KEYSTONE_CONTEXT_MEMORY_COMPACT_AFTER`` retained payloads, the merged Yjs state up to
``log_seq`` = S is written to S3 ``<org>/entries/<id>/state.bin``, then the entry's
``compacted_seq`` moves to S (conditioned on the value read), then the payloads of rows <= S are
removed. The log rows themselves (seq, updateId, author, time, SHA-256) stay: the log is
append-only. Every step is safe to repeat and to interrupt, because applying a Yjs update twice
is a no-op: a reader that sees the old ``compacted_seq`` and a newer state.bin merges rows it
already has. The state written merges the S3 object it replaces, so a slower, older compaction
never drops what a newer one folded in.
"""

from __future__ import annotations

from typing import Any

from pycrdt import merge_updates

from ..storage import blobs
from ..storage.tables import TeamEntryModel, TeamUpdateModel, bind
from ..storage.txn import Retry
from . import entries


def compact(org_id: str, entry_id: str) -> dict[str, Any]:
    """Fold the entry's retained payloads into S3; returns ``{compactedSeq, stripped}``."""
    bind()
    row = entries.get_row(org_id, entry_id)
    if row is None:
        return {"compactedSeq": 0, "stripped": 0}
    for _ in range(5):
        try:
            parts = entries.state_parts(org_id, row)
            break
        except Retry:
            row = entries.get_row(org_id, entry_id)
    else:
        return {"compactedSeq": int(row.compacted_seq), "stripped": 0}
    upto, old = int(row.log_seq), int(row.compacted_seq)
    if upto > old:
        existing = blobs.get_bytes(entries.state_key(org_id, entry_id))
        state = merge_updates(*([existing] if existing else []), *parts) if parts else existing
        blobs.put_bytes(entries.state_key(org_id, entry_id), state or b"\x00\x00")
        try:
            row.update(actions=[TeamEntryModel.compacted_seq.set(upto)],
                       condition=TeamEntryModel.compacted_seq == old)
        except Exception:  # noqa: BLE001 - another compaction won; its state includes ours
            return {"compactedSeq": old, "stripped": 0}
    stripped = 0
    key = entries.entry_key(org_id, entry_id)
    for item in TeamUpdateModel.query(key, TeamUpdateModel.sk.between("seq#", f"seq#{upto:012d}"),
                                      filter_condition=TeamUpdateModel.payload.exists(), consistent_read=True):
        item.update(actions=[TeamUpdateModel.payload.remove()])
        stripped += 1
    return {"compactedSeq": upto, "stripped": stripped}


def compact_due(org_id: str, entry_ids: list[str]) -> list[dict[str, Any]]:
    """Compact each of ``entry_ids`` (the schedule's batch); returns each result."""
    return [compact(org_id, e) for e in entry_ids]
