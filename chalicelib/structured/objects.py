"""Storage of structured memory's own objects (sessions, workstreams, projects, members, memory
locations) in the ``structured`` table: one item per object, ``(org_id, "<kind>#<id>")``, fields in
``data``. Every read is a consistent GetItem or a key query; never a scan."""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist

from ..clock import now_ms
from ..errors import Conflict
from ..storage.damage import Damaged
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


_OPT = (str, type(None))
# The fields each kind's readers rely on, and their types: a stored object without them is damaged.
SCHEMAS: dict[str, dict[str, Any]] = {
    "session": {"session_id": str, "kind": str, "user_id": _OPT, "workstream_id": _OPT, "project_id": _OPT,
                "parent_session_id": _OPT, "memory_enabled": bool, "resumed": bool, "token_id": str},
    "workstream": {"workstream_id": str},
    "project": {"project_id": str, "name": str},
    "member": {"access": str},
    "mem": {"scope": str},
}


def decode(item: StructuredModel, kind: str) -> dict[str, Any]:
    """The one decoder of a stored object: its ``data`` dict, checked against ``SCHEMAS[kind]``.
    Raises ``Damaged`` (409 ``damaged``) when it does not decode or lacks a field its readers
    need, so a hand-edited object answers a clear error instead of failing a route."""
    if "data" in item.damaged or not isinstance(item.data, dict):
        raise Damaged(kind, item.sk, f"data: {item.damaged.get('data', 'not a JSON object')}")
    for field, types in SCHEMAS.get(kind, {}).items():
        if field not in item.data:
            raise Damaged(kind, item.sk, f"{field}: missing")
        if isinstance(item.data[field], bool) is not (types is bool) or not isinstance(item.data[field], types):
            raise Damaged(kind, item.sk, f"{field}: wrong type")
    return dict(item.data)


def data(org_id: str, kind: str, *parts: str, strict: bool = True) -> dict[str, Any] | None:
    """The object's ``data`` dict (``decode``), or ``None`` when absent. Raises ``Damaged`` when
    it cannot be read; with ``strict=False`` that reads as ``None`` too."""
    item = get(org_id, kind, *parts)
    if item is None:
        return None
    try:
        return decode(item, kind)
    except Damaged:
        if strict:
            raise
        return None


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
