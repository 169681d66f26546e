"""What the service holds right now, for an operator's status view: the config versions and,
per live bank, its change count (``seq``), its sentence-vector coverage and newest index snapshot,
a page of banks at a time.

Everything comes from the bank rows: the snapshot is what the snapshot writer noted on the row
(``core.store.record_snapshot``), never an S3 listing (one per bank took seconds at 600 banks). A
snapshot written before rows noted them reads as none until the next one.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import semantic
from .banks.service import live_rows_page
from .core import store
from .inject.reload import read_version

PAGE_DEFAULT = 100  # banks per page when no limit is given
PAGE_MAX = 200  # a page's counters cost one BatchGetItem per 100 lane rows


@dataclass(frozen=True)
class Snapshot:
    """A bank's newest index snapshot: its S3 ``key``, the bank ``seq`` it holds, its upload ``at``
    (ms since epoch)."""

    key: str
    seq: int
    at: int


@dataclass(frozen=True)
class VectorCoverage:
    """A bank's semantic coverage from its counters (never a scan): ``with_vector`` of its ``live``
    memories carry the current ``model``'s sentence vector (the rest: written before vectors
    or without the model, not yet backfilled, or text the model does not cover)."""

    model: str
    with_vector: int
    live: int


@dataclass(frozen=True)
class BankStatus:
    """One live bank: ``seq`` (every change committed, lanes included), live ``memories``, its
    newest ``snapshot`` (``None`` when it has none) and its ``vectors`` coverage."""

    name: str
    seq: int
    memories: int
    snapshot: Snapshot | None
    vectors: VectorCoverage


@dataclass(frozen=True)
class OrgStatus:
    """The global and the org's stored config versions (bumped by each reload), a page of the
    org's live banks by name, and ``next_cursor`` (``None`` on the last page)."""

    config_version: int
    org_config_version: int
    banks: list[BankStatus]
    next_cursor: str | None = None


def _snapshot(row: store.BankRow) -> Snapshot | None:
    if row.snapshot_seq is None or not row.snapshot_key:
        return None
    return Snapshot(key=str(row.snapshot_key), seq=int(row.snapshot_seq), at=int(row.snapshot_at or 0))


def org_status(org_id: str, *, limit: int = PAGE_DEFAULT, cursor: str | None = None) -> OrgStatus:
    """A page of the org's ``OrgStatus``: up to ``limit`` (1..``PAGE_MAX``) banks after the
    ``cursor`` of the previous page. Reads only: a consistent query of a page of bank rows and one
    BatchGetItem of their lane rows. Raises 400 ``validation_error`` for a limit out of range or a
    cursor of another listing or org."""
    rows, next_cursor = live_rows_page(org_id, "status", limit=limit, cursor=cursor, page_max=PAGE_MAX)
    heads = store.heads_of(org_id, rows, strict=False)
    banks = [BankStatus(name=str(h.row.name), seq=h.clock.total, memories=h.memories, snapshot=_snapshot(h.row),
                        vectors=VectorCoverage(semantic.MODEL_ID, max(0, h.vectors), h.memories))
             for h in heads]
    return OrgStatus(config_version=read_version(), org_config_version=read_version(org_id), banks=banks,
                     next_cursor=next_cursor)
