"""Compaction of an entry's edit log.

After ``KEYSTONE_CONTEXT_MEMORY_COMPACT_AFTER`` retained payloads, the merged Yjs state up to
``log_seq`` = S is written to S3 (``store.write_state``), then the entry's
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

from dataclasses import dataclass

from .. import clock
from ..storage.damage import Damaged
from ..storage.txn import Retry
from . import entries, store
from .store import Entry

LEASE_MS = 60_000


@dataclass(frozen=True)
class Compaction:
    """The outcome of compacting one entry: ``compacted_seq`` after it and how many payloads were
    ``stripped``; ``skipped`` = ``"leased"`` when another compaction held the lease;
    ``damaged`` (with ``entry_id``) when the entry could not be compacted."""

    compacted_seq: int = 0
    stripped: int = 0
    skipped: str | None = None
    entry_id: str | None = None
    damaged: str | None = None

    def as_dict(self) -> dict[str, str | int | None]:
        """``{compactedSeq, stripped, skipped?}`` or ``{entryId, damaged}`` (the schedule's log)."""
        if self.damaged is not None:
            return {"entryId": self.entry_id, "damaged": self.damaged}
        out: dict[str, str | int | None] = {"compactedSeq": self.compacted_seq, "stripped": self.stripped}
        return {**out, "skipped": self.skipped} if self.skipped else out


def compact(org_id: str, entry_id: str) -> Compaction:
    """Fold the entry's retained payloads into S3, under the entry's compaction lease (skipped
    when another compaction holds it). Raises ``Damaged`` when the stored state does not decode."""
    row = entries.get_row(org_id, entry_id)
    if row is None:
        return Compaction()
    now = clock.now_ms()
    lease = now + LEASE_MS
    if not store.take_lease(row, now, lease):
        return Compaction(compacted_seq=row.compacted_seq, skipped="leased")
    try:
        return _compact_leased(org_id, entry_id, lease)
    finally:
        store.release_lease(org_id, entry_id, lease)


def _read_parts(org_id: str, entry_id: str) -> tuple[Entry, list[bytes]] | None:
    """The entry and its state parts, re-read while a concurrent compaction races the read;
    ``None`` when it keeps racing or the entry is gone."""
    row = entries.get_row(org_id, entry_id)
    for _ in range(5):
        if row is None:
            return None
        try:
            return row, entries.state_parts(org_id, row)
        except Retry:
            row = entries.get_row(org_id, entry_id)
    return None


def _compact_leased(org_id: str, entry_id: str, lease: int) -> Compaction:
    read = _read_parts(org_id, entry_id)
    if read is None:
        row = entries.get_row(org_id, entry_id)
        return Compaction(compacted_seq=row.compacted_seq if row else 0)
    row, parts = read
    upto, old = row.log_seq, row.compacted_seq
    if upto > old:
        from pycrdt import merge_updates  # on first use: only the team area loads the CRDT library

        # parts already start with the S3 state when old > 0: the new object is a superset of it
        try:
            state = merge_updates(*parts) if parts else b"\x00\x00"
        except ValueError:  # never overwrite a damaged state with a guess
            raise Damaged("team entry", entry_id, "state: not a Yjs V1 update") from None
        store.write_state(org_id, entry_id, state)
        if not store.set_compacted(row, upto, lease):
            return Compaction(compacted_seq=old)
    return Compaction(compacted_seq=upto, stripped=store.strip_payloads(org_id, entry_id, upto))


def compact_due(org_id: str, entry_ids: list[str]) -> list[Compaction]:
    """Compact each of ``entry_ids`` (the schedule's batch); returns each result. A damaged
    entry (its row, or a stored state that does not decode) is left as it is and reported with
    ``damaged`` = the reason; the others are compacted."""
    out = []
    for e in entry_ids:
        try:
            out.append(compact(org_id, e))
        except Damaged as exc:
            out.append(Compaction(entry_id=e, damaged=exc.reason))
    return out
