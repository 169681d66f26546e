"""What the service holds right now, for an operator's status view: the config versions and,
per live bank, its change count (``seq``) and newest index snapshot."""

from __future__ import annotations

from typing import Any

from .core import store
from .inject.reload import read_version
from .search.index import newest_snapshot_seq, snapshot_prefix
from .storage import blobs


def _snapshot(org_id: str, bank: str) -> dict[str, Any] | None:
    """``{key, seq, at}`` of the bank's newest index snapshot (``at``: ms since epoch of its
    upload), or ``None`` when it has none."""
    seq = newest_snapshot_seq(org_id, bank)
    if seq < 0:
        return None
    key = f"{snapshot_prefix(org_id, bank)}{seq}.tar.gz"
    for obj in blobs.list_objects(key):
        if obj["Key"] == key:
            return {"key": key, "seq": seq, "at": int(obj["LastModified"].timestamp() * 1000)}
    return None  # deleted between the two listings


def org_status(org_id: str) -> dict[str, Any]:
    """``{config_version, org_config_version, banks: [{name, seq, memories, snapshot}]}``: the
    global and the org's stored config versions (bumped by each reload), and for each live bank
    by name the changes it committed (``seq``, its lanes included), its live memories and its
    newest snapshot (``{key, seq, at}`` or ``None``). Reads only."""
    rows = list(store.iter_live_bank_rows(org_id))
    heads = store.heads_of(org_id, rows, strict=False)
    banks = [{"name": str(h.row.name), "seq": h.clock.total, "memories": h.memories,
              "snapshot": _snapshot(org_id, str(h.row.name))} for h in heads]
    return {"config_version": read_version(), "org_config_version": read_version(org_id), "banks": banks}
