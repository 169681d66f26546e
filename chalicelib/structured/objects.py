"""Storage of structured memory's own objects (sessions, workstreams, projects, members, memory
locations) in the ``structured`` table: one item per object, ``(org_id, "<kind>#<id>")``, fields in
``data`` (issue 4, "Model"). Every read is a consistent GetItem or a key query; never a scan."""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist

from ..clock import now_ms
from ..errors import Conflict
from ..storage.tables import StructuredModel, bind
from ..storage.txn import run_transaction


def key(kind: str, *parts: str) -> str:
    """The sort key of an object: ``<kind>#<part>#<part>...``."""
    return "#".join((kind, *parts))


def get(org_id: str, kind: str, *parts: str) -> StructuredModel | None:
    """The item (consistent read), or ``None``."""
    bind()
    try:
        return StructuredModel.get(org_id, key(kind, *parts), consistent_read=True)
    except DoesNotExist:
        return None


def data(org_id: str, kind: str, *parts: str) -> dict[str, Any] | None:
    """The object's ``data`` dict, or ``None`` when absent."""
    item = get(org_id, kind, *parts)
    return dict(item.data or {}) if item is not None else None


def new(org_id: str, kind: str, parts: tuple[str, ...], fields: dict[str, Any]) -> StructuredModel:
    """An unsaved item for ``fields``."""
    return StructuredModel(org_id=org_id, sk=key(kind, *parts), kind=kind, data=fields, created_at=now_ms())


def insert(item: StructuredModel, exists: Conflict) -> None:
    """Write a new record only if its key is free; raises ``exists`` (a 409) when it is taken."""
    def attempt(tx):
        tx.save(item, condition=StructuredModel.sk.does_not_exist())

    try:
        run_transaction(attempt, retries=1)
    except Conflict:
        raise exists from None


def query(org_id: str, kind: str, *parts: str) -> list[StructuredModel]:
    """Every item whose sort key starts with ``<kind>#<parts>#`` (a key query)."""
    bind()
    prefix = key(kind, *parts) + "#"
    return list(StructuredModel.query(org_id, StructuredModel.sk.startswith(prefix), consistent_read=True))
