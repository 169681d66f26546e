"""Compaction of an entry's edit log.

After ``KEYSTONE_CONTEXT_MEMORY_COMPACT_AFTER`` retained payloads, the merged Yjs state up to
``log_seq`` = S is written to S3 ``<org>/entries/<id>/state.bin``, then the entry's
``compacted_seq`` moves to S (conditioned on the value read and on holding the lease), then the
payloads of rows <= S are removed. The log rows themselves (seq, updateId, author, time, SHA-256)
stay: the log is append-only.

One compactor at a time: a compaction first takes a lease on the entry row (``compacting_until``,
``LEASE_MS`` ahead, conditioned on no live lease), so two compactions never overwrite each
other's S3 object. Writers are not blocked (their transactions condition on ``log_seq``, not on
the lease). Every step is safe to repeat and to interrupt, because applying a Yjs update twice is
a no-op: a reader that sees the old ``compacted_seq`` and a newer state.bin merges rows it
already has, and payloads are stripped only after ``compacted_seq`` committed.
"""

from __future__ import annotations

from typing import Any

from pycrdt import merge_updates
from pynamodb.exceptions import UpdateError

from .. import clock
from ..storage import blobs
from ..storage.damage import Damaged
from ..storage.tables import TeamEntryModel, TeamUpdateModel, bind
from ..storage.txn import Retry
from . import entries

LEASE_MS = 60_000


def compact(org_id: str, entry_id: str) -> dict[str, Any]:
    """Fold the entry's retained payloads into S3; returns ``{compactedSeq, stripped}`` or
    ``{compactedSeq, stripped: 0, skipped: "leased"}`` when another compaction holds the lease."""
    bind()
    row = entries.get_row(org_id, entry_id)
    if row is None:
        return {"compactedSeq": 0, "stripped": 0}
    now = clock.now_ms()
    lease = now + LEASE_MS
    try:
        row.update(actions=[TeamEntryModel.compacting_until.set(lease)],
                   condition=TeamEntryModel.compacting_until.does_not_exist() | (TeamEntryModel.compacting_until < now))
    except UpdateError:
        return {"compactedSeq": int(row.compacted_seq), "stripped": 0, "skipped": "leased"}
    try:
        return _compact_leased(org_id, entry_id, lease)
    finally:
        try:
            TeamEntryModel(org_id=org_id, entry_id=entry_id).update(
                actions=[TeamEntryModel.compacting_until.remove()], condition=TeamEntryModel.compacting_until == lease)
        except UpdateError:
            pass  # the lease expired and another compactor holds it now


def _compact_leased(org_id: str, entry_id: str, lease: int) -> dict[str, Any]:
    row = entries.get_row(org_id, entry_id)
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
        # parts already start with the S3 state when old > 0: the new object is a superset of it
        try:
            state = merge_updates(*parts) if parts else b"\x00\x00"
        except ValueError:  # never overwrite a damaged state with a guess
            raise Damaged("team entry", entry_id, "state: not a Yjs V1 update") from None
        blobs.put_bytes(entries.state_key(org_id, entry_id), state)
        try:
            row.update(actions=[TeamEntryModel.compacted_seq.set(upto)],
                       condition=(TeamEntryModel.compacted_seq == old) & (TeamEntryModel.compacting_until == lease))
        except UpdateError:
            return {"compactedSeq": old, "stripped": 0}
    stripped = 0
    key = entries.entry_key(org_id, entry_id)
    for item in TeamUpdateModel.query(key, TeamUpdateModel.sk.between("seq#", f"seq#{upto:012d}"),
                                      filter_condition=TeamUpdateModel.payload.exists(), consistent_read=True):
        item.update(actions=[TeamUpdateModel.payload.remove()])
        stripped += 1
    return {"compactedSeq": upto, "stripped": stripped}


def compact_due(org_id: str, entry_ids: list[str]) -> list[dict[str, Any]]:
    """Compact each of ``entry_ids`` (the schedule's batch); returns each result. A damaged
    entry (its row, or a stored state that does not decode) is left as it is and reported as
    ``{entryId, damaged: reason}``; the others are compacted."""
    out = []
    for e in entry_ids:
        try:
            out.append(compact(org_id, e))
        except Damaged as exc:
            out.append({"entryId": e, "damaged": exc.reason})
    return out
