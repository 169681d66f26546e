"""What the service holds right now, for an operator's status view: the config versions and,
per live bank, its change count (``seq``) and newest index snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from .core import store
from .inject.reload import read_version
from .search.index import newest_snapshot


@dataclass(frozen=True)
class Snapshot:
    """A bank's newest index snapshot: its S3 ``key``, the bank ``seq`` it holds, its upload ``at``
    (ms since epoch)."""

    key: str
    seq: int
    at: int


@dataclass(frozen=True)
class BankStatus:
    """One live bank: ``seq`` (every change committed, lanes included), live ``memories`` and its
    newest ``snapshot`` (``None`` when it has none)."""

    name: str
    seq: int
    memories: int
    snapshot: Snapshot | None


@dataclass(frozen=True)
class OrgStatus:
    """The global and the org's stored config versions (bumped by each reload) and the org's live
    banks by name."""

    config_version: int
    org_config_version: int
    banks: list[BankStatus]


def _snapshot(org_id: str, bank: str) -> Snapshot | None:
    newest = newest_snapshot(org_id, bank)
    return None if newest is None else Snapshot(key=newest.key, seq=newest.seq, at=newest.at)


def org_status(org_id: str) -> OrgStatus:
    """The org's ``OrgStatus``. Reads only: a consistent query of the bank rows, their lane rows,
    one S3 listing per bank."""
    rows = list(store.iter_live_bank_rows(org_id))
    heads = store.heads_of(org_id, rows, strict=False)
    banks = [BankStatus(name=str(h.row.name), seq=h.clock.total, memories=h.memories,
                        snapshot=_snapshot(org_id, str(h.row.name))) for h in heads]
    return OrgStatus(config_version=read_version(), org_config_version=read_version(org_id), banks=banks)
