"""Storage of structured memory's own objects (sessions, workstreams, projects, members, nudges,
memory locations, deleted memories' locations) in the ``structured`` table: one item per object,
``(org_id, "<kind>#<id>")``, fields in ``data``. Every read is a consistent GetItem or a key query; never a scan.

This is the only structured module that knows the table and its keys: the rest of the area calls
the named functions below (``data``, ``insert``, ``stage_location``, ``touch`` ...). The writes of
sessions, workstreams, projects and members take their audit ``Event`` and commit it in the same
transaction."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import DoesNotExist, PutError, TransactWriteError
from pynamodb.transactions import TransactWrite

from .. import audit, patterns
from ..clock import now_ms
from ..errors import Conflict
from ..storage.damage import Damaged
from ..storage.tables import StructuredModel, bind, connection
from ..storage.txn import run_transaction

ID_RE = patterns.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")  # an object id (never ``#`` or ``~``)


@dataclass(frozen=True)
class Event:
    """The audit event of an object's write: ``action``, ``actor``, ``target``, ``details``."""

    action: str
    actor: str
    target: str
    details: dict[str, Any]

    def stage(self, tx: TransactWrite, org_id: str) -> None:
        audit.add_to(tx, org_id, self.action, self.actor, self.target, self.details)


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


def exists(org_id: str, kind: str, *parts: str) -> bool:
    """True when the object is stored (damaged or not)."""
    return get(org_id, kind, *parts) is not None


_OPT = (str, type(None))
# The fields each kind's readers rely on, and their types: a stored object without them is damaged.
SCHEMAS: dict[str, dict[str, Any]] = {
    "session": {"session_id": str, "kind": str, "user_id": _OPT, "workstream_id": _OPT, "project_id": _OPT,
                "parent_session_id": _OPT, "memory_enabled": bool, "resumed": bool, "token_id": str},
    "workstream": {"workstream_id": str},
    "project": {"project_id": str, "name": str},
    "member": {"access": str},
    "mem": {"scope": str},
    "deleted": {"scope": str},
}


@dataclass(frozen=True)
class Stored:
    """An object's decoded ``data`` (checked against ``SCHEMAS[kind]`` by ``decode``), read
    through typed accessors."""

    fields: Mapping[str, object]

    def text(self, name: str, default: str = "") -> str:
        """A string field (``default`` when absent or not a string)."""
        v = self.fields.get(name, default)
        return v if isinstance(v, str) else default

    def opt(self, name: str) -> str | None:
        """An optional string field (``None`` when absent, null or not a string)."""
        v = self.fields.get(name)
        return v if isinstance(v, str) else None

    def flag(self, name: str, default: bool) -> bool:
        """A boolean field, as its truth value (``default`` when absent)."""
        return bool(self.fields.get(name, default))


def _checked(item: StructuredModel, kind: str) -> dict:
    """The item's ``data`` checked against ``SCHEMAS[kind]`` (a copy); raises ``Damaged``."""
    if "data" in item.damaged or not isinstance(item.data, dict):
        raise Damaged(kind, item.sk, f"data: {item.damaged.get('data', 'not a JSON object')}")
    for field_name, types in SCHEMAS.get(kind, {}).items():
        if field_name not in item.data:
            raise Damaged(kind, item.sk, f"{field_name}: missing")
        value = item.data[field_name]
        if isinstance(value, bool) is not (types is bool) or not isinstance(value, types):
            raise Damaged(kind, item.sk, f"{field_name}: wrong type")
    return dict(item.data)


def decode(item: StructuredModel, kind: str) -> Stored:
    """The one decoder of a stored object: its ``data``, checked against ``SCHEMAS[kind]``.
    Raises ``Damaged`` (409 ``damaged``) when it does not decode or lacks a field its readers
    need, so a hand-edited object answers a clear error instead of failing a route."""
    return Stored(_checked(item, kind))


def data(org_id: str, kind: str, *parts: str, strict: bool = True) -> Stored | None:
    """The object's decoded ``data`` (``decode``), or ``None`` when absent. Raises ``Damaged``
    when it cannot be read; with ``strict=False`` that reads as ``None`` too."""
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


def insert(item: StructuredModel, exists: Conflict, event: Event) -> None:
    """Write a new record only if its key is free, with its audit ``event``; raises ``exists`` (a
    409) when it is taken."""
    bind()

    def attempt(tx: TransactWrite) -> None:
        if get(item.org_id, *item.sk.split("#", 1)) is not None:
            raise exists
        tx.save(item, condition=StructuredModel.sk.does_not_exist())  # a concurrent twin: read again
        event.stage(tx, item.org_id)

    run_transaction(attempt)


def query(org_id: str, kind: str, *parts: str) -> list[StructuredModel]:
    """Every item whose sort key starts with ``<kind>#<parts>#`` (a key query)."""
    bind()
    prefix = key(kind, *parts) + "#"
    return list(StructuredModel.query(org_id, StructuredModel.sk.startswith(prefix), consistent_read=True))


def iter_kind(org_id: str, kind: str, after: str | None = None) -> Iterator[tuple[str, Stored | Damaged]]:
    """``(id, decoded data or its Damaged)`` of the org's objects of a one-part ``kind``
    (``session``, ``workstream``, ``project``) by id, from the first or strictly after id
    ``after``: a lazy consistent key query on ``<kind>#`` (ids never hold ``~``, which sorts above
    every id character)."""
    bind()
    lo, hi = key(kind, after or ""), key(kind, "~")
    for item in StructuredModel.query(org_id, StructuredModel.sk.between(lo, hi), consistent_read=True):
        if after is not None and item.sk == lo:
            continue
        object_id = item.sk[len(kind) + 1:]
        try:
            yield object_id, decode(item, kind)
        except Damaged as exc:
            yield object_id, exc


def count_of(org_id: str, kind: str, *parts: str) -> int:
    """The object's ``access_count`` counter (0 when absent or never counted)."""
    item = get(org_id, kind, *parts)
    return int(item.access_count or 0) if item is not None else 0


def insert_counting(item: StructuredModel, counted: tuple[str, tuple[str, ...]] | None, event: Event) -> None:
    """Write the new ``item`` (its key must be free) with its audit ``event`` and, in the same
    transaction, add one to the ``access_count`` of the existing object ``counted`` = ``(kind,
    parts)`` when given. Raises 409 ``conflict`` when the key is taken or ``counted`` is gone."""
    def attempt(tx: TransactWrite) -> None:
        tx.save(item, condition=StructuredModel.sk.does_not_exist())
        event.stage(tx, item.org_id)
        if counted is not None:
            tx.update(new(item.org_id, counted[0], counted[1], {}),
                      actions=[StructuredModel.access_count.add(1)], condition=StructuredModel.sk.exists())

    run_transaction(attempt)


def put(item: StructuredModel, event: Event) -> None:
    """Write ``item`` whether or not its key exists (an upsert), with its audit ``event``."""
    bind()

    def attempt(tx: TransactWrite) -> None:
        tx.save(item)
        event.stage(tx, item.org_id)

    run_transaction(attempt)


def remove(org_id: str, kind: str, *parts: str, event: Event) -> bool:
    """Delete the object with its audit ``event``; False (nothing written) when it is absent,
    a concurrent delete included."""
    bind()

    def attempt(tx: TransactWrite) -> bool:
        if get(org_id, kind, *parts) is None:
            return False
        tx.delete(new(org_id, kind, parts, {}), condition=StructuredModel.sk.exists())
        event.stage(tx, org_id)
        return True

    return run_transaction(attempt)


def update_data(org_id: str, kind: str, parts: tuple[str, ...], change: Callable[[dict], None],
                event: Event) -> Stored | None:
    """Apply ``change`` to the object's decoded ``data`` and store it with its audit ``event``,
    atomically (conditioned on the object still existing): the new ``data``, or ``None`` when the
    object is absent. Raises ``Damaged`` for an object that does not decode."""
    def attempt(tx: TransactWrite) -> Stored | None:
        item = get(org_id, kind, *parts)
        if item is None:
            return None
        d = _checked(item, kind)
        change(d)
        tx.update(item, actions=[StructuredModel.data.set(d)], condition=StructuredModel.sk.exists())
        event.stage(tx, org_id)
        return Stored(d)

    return run_transaction(attempt)


def claim(org_id: str, kind: str, parts: tuple[str, ...], fields: dict[str, Any], *, now: int,
          not_since: int | None) -> bool:
    """Write a marker object stamped ``now`` unless one exists (or, with ``not_since``, unless
    the existing one is stamped after it): True when this caller won. A conditional put, so two
    concurrent callers cannot both win."""
    bind()
    item = new(org_id, kind, parts, fields)
    item.created_at = now
    cond = StructuredModel.sk.does_not_exist()
    if not_since is not None:
        cond = cond | (StructuredModel.created_at <= not_since)
    try:
        item.save(condition=cond)
        return True
    except PutError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return False
        raise


# --- memory locations (``mem#<memory_id>``, ``deleted#<memory_id>``) -----------------------------

@dataclass(frozen=True)
class Touches:
    """A memory's touch counters as stored (``None`` when never set; damaged values as read)."""

    last_accessed: object = None
    access_count: object = None


@dataclass(frozen=True)
class Location:
    """Where a memory lives: its namespace and name (``None`` when not a string)."""

    scope: str
    scope_id: str
    name: str | None


def location(org_id: str, memory_id: str, *, strict: bool = True, deleted: bool = False) -> Location | None:
    """Where a memory lives, or ``None``; 409 ``damaged`` (``None`` with ``strict=False``) when
    its location item cannot be read. With ``deleted``: where a deleted memory lived (its
    ``deleted#<memory_id>`` item), so its history can still be found by id."""
    d = data(org_id, "deleted" if deleted else "mem", memory_id, strict=strict)
    return Location(d.text("scope"), d.text("scope_id"), d.opt("name")) if d is not None else None


def touches(org_id: str, memory_ids: Iterable[str]) -> dict[str, Touches]:
    """The touch counters of ``memory_ids`` that have a location item, by memory_id (a BatchGet)."""
    bind()
    keys = [(org_id, key("mem", i)) for i in dict.fromkeys(memory_ids)]
    if not keys:
        return {}
    return {it.sk[len("mem#"):]: Touches(it.last_accessed, it.access_count)
            for it in StructuredModel.batch_get(keys, consistent_read=True)}


TOUCH_BATCH = 100  # DynamoDB's most actions in one TransactWriteItems
TOUCH_ATTEMPTS = 3


def touch(org_id: str, memory_ids: Iterable[str], now: int) -> set[str]:
    """Add one to ``access_count`` and set ``last_accessed`` of each memory's location item,
    ``TOUCH_BATCH`` memories in ONE ``TransactWriteItems`` (atomic counter updates, each
    conditioned on its item existing). A memory whose item is gone is left out and the rest
    sent again; a batch that conflicts with a concurrent transaction is sent again (jittered),
    at most ``TOUCH_ATTEMPTS`` times in all. Returns the memory_ids touched; raises what the
    backend raised otherwise (a cancelled batch wrote nothing, so a retry never counts twice)."""
    ids = list(dict.fromkeys(memory_ids))
    done: set[str] = set()
    for i in range(0, len(ids), TOUCH_BATCH):
        done |= _touch_batch(org_id, ids[i:i + TOUCH_BATCH], now)
    return done


def _touch_batch(org_id: str, ids: list[str], now: int) -> set[str]:
    bind()
    conn = connection()
    for attempt in range(TOUCH_ATTEMPTS):
        if not ids:
            return set()
        try:
            with TransactWrite(connection=conn) as tx:
                for mid in ids:
                    tx.update(new(org_id, "mem", (mid,), {}),
                              actions=[StructuredModel.access_count.add(1), StructuredModel.last_accessed.set(now)],
                              condition=StructuredModel.sk.exists())
            return set(ids)
        except TransactWriteError as exc:
            reasons = list(exc.cancellation_reasons or [])
            gone = {mid for mid, r in zip(ids, reasons, strict=False)
                    if r is not None and r.code == "ConditionalCheckFailed"}
            if not gone and not any(r is not None and r.code == "TransactionConflict" for r in reasons):
                raise
            ids = [mid for mid in ids if mid not in gone]
            if not gone:
                time.sleep(random.uniform(0, 0.002 * (2 ** attempt)))
    raise RuntimeError(f"touching {len(ids)} memories conflicted {TOUCH_ATTEMPTS} times")


def stage_location(tx: TransactWrite, org_id: str, memory_id: str, fields: dict[str, Any], *,
                   access_count: int = 0, last_accessed: int | None = None) -> None:
    """Stage the creation of a memory's location item (``fields`` = ``{scope, scope_id, name}``)
    into ``tx``, conditioned on its key being free."""
    item = new(org_id, "mem", (memory_id,), fields)
    item.access_count, item.last_accessed = access_count, last_accessed
    tx.save(item, condition=StructuredModel.sk.does_not_exist())


def stage_retire_location(tx: TransactWrite, org_id: str, memory_id: str, fields: dict[str, Any]) -> None:
    """Stage a memory's delete into ``tx``: its location item (which must exist) and touch
    counters go; ``deleted#<memory_id>`` keeps ``fields`` (``{scope, scope_id, name}``), so the
    deleted memory's history stays reachable by id (a later delete of the same id replaces it)."""
    tx.delete(new(org_id, "mem", (memory_id,), {}), condition=StructuredModel.sk.exists())
    tx.save(new(org_id, "deleted", (memory_id,), fields))
