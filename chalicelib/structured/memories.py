"""Structured memories: upsert, get, delete, list, search and touch.

A memory is a ``chalicelib.core.records.Memory`` with ``id`` = its ``memory_id`` (UUID), ``text`` =
its content, ``name``, ``description``, ``type`` set and ``meta = {scope, scope_id}``, stored in
its namespace (``scopes.Target.bank``) through ``core.store.write`` (the one bank write path): every save, update and
delete is one transaction with the namespace's ``seq`` advance, the name pointer
``~name/<name>`` -> memory_id (created with ``does_not_exist``, so two concurrent saves of one
identity yield one memory: the loser's transaction is retried and becomes an update), the
location item ``mem#<memory_id>`` in the ``structured`` table and the audit event
(``memory.save``/``memory.update``/``memory.delete``: ids, name, scope, type, surface, never the
content). A delete tombstones the record (history kept) and removes both pointers; the location
moves to ``deleted#<memory_id>``, so an admin can still read the deleted memory's history by id.

Touching (``last_accessed``, ``access_count``) is an atomic counter update of the location item:
neither ``seq`` nor revision changes and it is not audited.

Rows are Turnstone's: ``{memory_id, name, description, type, scope, scope_id, content, created,
updated, last_accessed, access_count}`` with times as UTC ``YYYY-MM-DDTHH:MM:SS`` and
``last_accessed`` ``""`` until first touched.
"""

from __future__ import annotations

import contextlib
import heapq
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import Field, ValidationInfo, field_validator

from .. import audit
from ..auth.principal import Principal
from ..clock import now_ms
from ..core.records import Memory
from ..core.store import (
    BankHead,
    BankTx,
    Write,
    current,
    get_bank_row,
    get_item,
    iter_live,
    name_pointer,
    record_of,
    stage_drop_name_pointer,
    stage_name_pointer,
    write,
)
from ..errors import BadRequest, NotFound
from ..storage.damage import MAX_SAFE_INT, Damaged, time_ms
from ..validation import MAX_TIME_MS, Model, check_text
from . import objects
from .names import normalize_description, normalize_name
from .scopes import TYPES, Target, check_type, optional_str, rest_target

REST_MAX_CONTENT = 65536
DEFAULT_TYPE = "general"


def fmt_time(ms: object) -> str:
    """UTC ``YYYY-MM-DDTHH:MM:SS`` of ``ms`` since the epoch; ``""`` for ``None``, 0 or anything
    that is not a time (a damaged stored value)."""
    ms = time_ms(ms)
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def parse_time(value: str) -> int:
    """ms since the epoch of a UTC ``YYYY-MM-DDTHH:MM:SS`` (fractions and ``Z``/offsets accepted).
    Raises ``ValueError`` when unparsable or outside ``[0, validation.MAX_TIME_MS]``."""
    dt = datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    ms = int(dt.timestamp() * 1000)
    if not 0 <= ms <= MAX_TIME_MS:
        raise ValueError("times must be between 1970-01-01 and 9999-12-31 (UTC)")
    return ms


def check_content(content: object, limit: int) -> str:
    """Trimmed content; 400 ``content is required`` / ``content exceeds <limit> character limit``
    / a control character other than TAB, LF and CR (``validation.check_text``)."""
    if not isinstance(content, str) or not content.strip():
        raise BadRequest("content is required", details={"field": "content"})
    check_text(content, "content")
    content = content.strip()
    if len(content) > limit:
        raise BadRequest(f"content exceeds {limit} character limit", details={"field": "content"})
    return content


def target_of(m: Memory) -> Target:
    """The namespace a record lives in (from its ``meta``)."""
    meta = m.meta or {}
    return Target(str(meta.get("scope", "global")), str(meta.get("scope_id", "")))


def _repaired(rec: Memory, name: str, target: Target) -> Memory:
    """A salvaged record (``core.store.current``) with the identity it is stored under."""
    return rec.model_copy(update={"name": name, "meta": {"scope": target.scope, "scope_id": target.scope_id},
                                  "type": rec.type if rec.type in TYPES else DEFAULT_TYPE})


def _count(value: object) -> int:
    """A stored counter as a non-negative int (0 for a damaged one)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE_INT:
        return int(value)
    return 0


@dataclass(frozen=True)
class Row:
    """Turnstone's memory row: times as UTC ``YYYY-MM-DDTHH:MM:SS``, ``last_accessed`` ``""``
    until first touched (the field order is the wire order)."""

    memory_id: str
    name: str
    description: str
    type: str
    scope: str
    scope_id: str
    created: str
    updated: str
    last_accessed: str
    access_count: int
    content: str


@dataclass(frozen=True)
class Listing:
    """A list or search result: rows in order and how many damaged records were left out."""

    memories: list[Row] = field(default_factory=list)
    damaged: int = 0


@dataclass(frozen=True)
class Saved:
    """An upsert's result: ``created`` when the identity did not exist."""

    created: bool
    row: Row


@dataclass(frozen=True)
class Deleted:
    """A delete's result: the name of the memory tombstoned."""

    name: str


def row(m: Memory, touch: objects.Touches | None = None) -> Row:
    """Turnstone's memory row for record ``m`` with its touch counters (a damaged counter reads
    as never touched)."""
    t = target_of(m)
    touch = touch or objects.Touches()
    return Row(memory_id=m.id, name=m.name or "", description=m.description or "", type=m.type or DEFAULT_TYPE,
               scope=t.scope, scope_id=t.scope_id, created=fmt_time(m.created_at), updated=fmt_time(m.updated_at),
               last_accessed=fmt_time(touch.last_accessed), access_count=_count(touch.access_count), content=m.text)


def rows(org_id: str, records: list[Memory]) -> list[Row]:
    """Rows for ``records`` in order, with touch counters (one BatchGet)."""
    t = objects.touches(org_id, (m.id for m in records))
    return [row(m, t.get(m.id)) for m in records]


def touch(org_id: str, memory_ids: Iterable[str]) -> None:
    """Add one to ``access_count`` and set ``last_accessed`` of each memory: atomic counter
    updates of their location items, all in one write (``objects.touch``; no ``seq``, no
    revision, no audit). A memory deleted meanwhile is skipped; a touch that fails is lost, never
    the turn's failure."""
    ids = list(memory_ids)
    if ids:
        with contextlib.suppress(Exception):  # a lost touch must never fail a turn
            objects.touch(org_id, ids, now_ms())


def _audit_details(m: Memory, surface: str) -> dict[str, str | None]:
    t = target_of(m)
    return {"memory_id": m.id, "name": m.name, "scope": t.scope, "scope_id": t.scope_id, "type": m.type,
            "surface": surface}


def location_fields(m: Memory) -> dict[str, str | None]:
    """What a memory's location item holds: ``{scope, scope_id, name}``."""
    t = target_of(m)
    return {"scope": t.scope, "scope_id": t.scope_id, "name": m.name}


def _stored(inc: str, name: str, target: Target) -> tuple[Memory | None, Any]:
    """``(record, guard)`` of the identity ``name`` in a namespace incarnation (``core.store.current``):
    ``(None, None)`` when there is none; a damaged record salvaged under its identity."""
    mid = name_pointer(inc, name)
    item = get_item(inc, mid) if mid is not None else None
    if item is None:
        return None, None
    prev, guard = current(item)
    if guard is not None:  # damaged: the upsert replaces it under its identity
        prev = _repaired(prev, name, target)
    return prev, guard


def _upserted(prev: Memory | None, name: str, target: Target, content: str, description: str,
              type_: str | None, now: int) -> Memory:
    """The record an upsert writes: ``prev`` updated, or a new memory."""
    if prev is not None:
        return prev.model_copy(update={"text": content, "description": description, "type": type_ or prev.type,
                                       "updated_at": max(now, prev.updated_at), "revision": prev.revision + 1})
    return Memory(id=str(uuid.uuid4()), text=content, name=name, description=description,
                  type=type_ or DEFAULT_TYPE, meta={"scope": target.scope, "scope_id": target.scope_id},
                  created_at=now, updated_at=now)


def save(org_id: str, target: Target, name: object, content: object, description: object,
         type_: str | None, *, actor: str, surface: str, max_content: int = REST_MAX_CONTENT) -> Saved:
    """Upsert the memory ``(name, target)``.

    Validates before any read or write (400 ``invalid_name``, ``validation_error`` with
    Turnstone's messages, ``invalid_type``). An update changes content, description and (when
    given) type; memory_id and created stay. A damaged stored record of that identity is
    replaced the same way (what can be salvaged of it kept).
    """
    key = normalize_name(name)
    desc = normalize_description(description)
    text = check_content(content, max_content)
    check_type(type_)
    bank = target.bank

    def attempt(btx: BankTx) -> tuple[bool, Memory]:
        brow, fresh = btx.row_or_new(bank)
        prev, guard = _stored(fresh.incarnation, key, target) if brow is not None else (None, None)
        rec = _upserted(prev, key, target, text, desc, type_, now_ms())
        op = "update" if prev is not None else "save"
        btx.stage(bank, brow, [Write(rec, prev, op, None, guard)], actor, fresh=fresh)
        if prev is None:
            stage_name_pointer(btx.tx, fresh.incarnation, key, rec.id)
            objects.stage_location(btx.tx, org_id, rec.id, location_fields(rec))
        audit.add_to(btx.tx, org_id, f"memory.{op}", actor, rec.id, _audit_details(rec, surface))
        return prev is None, rec

    created, rec = write(org_id, attempt)
    return Saved(created, rows(org_id, [rec])[0])


class RestSave(Model):
    """Body of ``POST /v1/api/memories``: ``{name, description, content, type?, scope?,
    scope_id?}``, checked in this order with Turnstone's messages: name (400 ``invalid_name``),
    description, content up to 65536 characters (``validation_error``), type (``invalid_type``),
    scope and scope_id ("<field> must be a string"). Values are kept as sent: ``save`` normalises
    them, ``save_rest`` applies the scope rules."""

    name: Any = Field(None, validate_default=True)
    description: Any = Field(None, validate_default=True)
    content: Any = Field(None, validate_default=True)
    type: str | None = None
    scope: str | None = None
    scope_id: str | None = None

    # each check raises a CairnError, which pydantic lets through: the first bad field answers
    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: object) -> object:
        normalize_name(v)
        return v

    @field_validator("description", mode="before")
    @classmethod
    def _description(cls, v: object) -> object:
        normalize_description(v)
        return v

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, v: object) -> object:
        check_content(v, REST_MAX_CONTENT)
        return v

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Any:
        return check_type(v)

    @field_validator("scope", "scope_id", mode="before")
    @classmethod
    def _scope(cls, v: object, info: ValidationInfo) -> str | None:
        return optional_str(v, info.field_name or "scope")


def save_rest(p: Principal, req: RestSave) -> Saved:
    """``POST /v1/api/memories``: the scope rules (``scopes.rest_target``), then upsert with
    surface ``rest``."""
    target = rest_target(p, req.scope, req.scope_id)
    return save(p.org_id, target, req.name, req.content, req.description, req.type, actor=p.actor, surface="rest")


def find(org_id: str, target: Target, name: object) -> Memory | None:
    """The live memory named ``name`` in ``target``, or ``None`` (name normalized first)."""
    key = normalize_name(name)
    brow = get_bank_row(org_id, target.bank)
    if brow is None:
        return None
    mid = name_pointer(brow.incarnation, key)
    item = get_item(brow.incarnation, mid) if mid is not None else None
    rec = record_of(item) if item is not None else None
    return rec if rec is not None and rec.live else None


def not_found(name: str) -> NotFound:
    """404 ``memory_not_found`` with Turnstone's message ``Memory '<name>' not found``."""
    return NotFound(f"Memory '{name}' not found", code="memory_not_found")


def get(org_id: str, target: Target, name: object) -> Row:
    """The row of ``(name, target)``; 404 ``memory_not_found``."""
    norm = normalize_name(name)
    rec = find(org_id, target, norm)
    if rec is None:
        raise not_found(norm)
    return rows(org_id, [rec])[0]


def _live_for_change(org_id: str, inc: str, target: Target, name: str | None, memory_id: str | None,
                     remove: bool) -> tuple[Memory, Any] | None:
    """``(record, guard)`` of the live memory a change addresses (by name or id), or ``None``.
    A damaged record is 409 ``damaged``, except for a removal: then a tombstone-able salvage
    named from the pointer or the location item."""
    mid = memory_id if name is None else name_pointer(inc, name)
    item = get_item(inc, mid) if mid is not None else None
    if item is None:
        return None
    prev, guard = current(item) if remove else (record_of(item), None)
    if guard is not None:
        loc = objects.location(org_id, item.sk, strict=False)
        known = name if name is not None else loc.name if loc is not None else None
        prev = _repaired(prev, known if isinstance(known, str) else (prev.name or ""), target)
        prev = prev.model_copy(update={"invalid_at": None})  # a removal always writes
    return (prev, guard) if prev.live else None


def _change(org_id: str, target: Target, *, name: str | None = None, memory_id: str | None = None,
            change: Callable[[Memory, int], Memory], op: str, action: str, actor: str, surface: str,
            remove: bool) -> Memory | None:
    """One audited change of the live memory found by name or id in ``target``, atomically: the
    record read is the record changed (``None`` when there is none, with nothing written). A
    damaged stored record is 409 ``damaged``, except for a removal, which replaces it with a
    tombstone of what can be salvaged (its name from the pointer or the location item)."""
    bank = target.bank

    def attempt(btx: BankTx) -> Memory | None:
        brow = btx.row(bank)
        found = _live_for_change(org_id, brow.incarnation, target, name, memory_id, remove) if brow else None
        if brow is None or found is None:
            return None
        prev, guard = found
        rec = change(prev, max(now_ms(), prev.updated_at))
        btx.stage(bank, brow, [Write(rec, prev, op, None, guard)], actor)
        if remove:
            stage_drop_name_pointer(btx.tx, brow.incarnation, prev.name or "", prev.id)
            objects.stage_retire_location(btx.tx, org_id, prev.id, location_fields(prev))
        audit.add_to(btx.tx, org_id, action, actor, prev.id, _audit_details(rec, surface))
        return rec

    return write(org_id, attempt)


def delete(org_id: str, target: Target, name: object, *, actor: str, surface: str,
           memory_id: str | None = None) -> Deleted:
    """Tombstone ``(name, target)`` (or, with ``memory_id``, that memory in ``target``): the
    name deleted; 404 ``memory_not_found`` with nothing written or audited."""
    norm = normalize_name(name) if memory_id is None else None

    def tomb(prev: Memory, now: int) -> Memory:
        return prev.model_copy(update={"invalid_at": now, "updated_at": now, "revision": prev.revision + 1})

    rec = _change(org_id, target, name=norm, memory_id=memory_id, change=tomb, op="delete",
                  action="memory.delete", actor=actor, surface=surface, remove=True)
    if rec is None:
        raise not_found(norm or "")
    return Deleted(rec.name or "")


def set_description(org_id: str, target: Target, memory_id: str, description: object, *,
                    actor: str, surface: str) -> Memory | None:
    """Replace one memory's description (audited ``memory.update``); ``None`` when absent."""
    desc = normalize_description(description)

    def patch(prev: Memory, now: int) -> Memory:
        return prev.model_copy(update={"description": desc, "updated_at": now, "revision": prev.revision + 1})

    return _change(org_id, target, memory_id=memory_id, change=patch, op="update", action="memory.update",
                   actor=actor, surface=surface, remove=False)


def list_records(org_id: str, targets: list[Target], *, type_: str | None, limit: int,
                 damaged: list[Damaged] | None = None) -> list[Memory]:
    """Live memories of ``targets``, newest ``updated`` first (ties by id), at most ``limit``:
    each namespace is read newest first through its order index and the streams merged. A
    record that cannot be read is left out and, when given, appended to ``damaged``."""
    bad = damaged if damaged is not None else []

    def stream(t: Target) -> Iterable[Memory]:
        brow = get_bank_row(org_id, t.bank)
        if brow is None:
            return
        n = 0
        for rec in iter_live(brow.incarnation, page_size=min(limit * 2, 200)):
            if isinstance(rec, Damaged):
                bad.append(rec)
                continue
            if type_ and rec.type != type_:
                continue
            yield rec
            n += 1
            if n >= limit:
                return

    merged = heapq.merge(*(stream(t) for t in dict.fromkeys(targets)), key=lambda m: m.order_key())
    out: list[Memory] = []
    for rec in merged:
        out.append(rec)
        if len(out) >= limit:
            break
    return out


def list_rows(org_id: str, targets: list[Target], *, type_: str | None, limit: int) -> Listing:
    """The rows of ``list_records`` and how many damaged records were left out (the routes move
    that count to the ``X-Cairn-Damaged`` header, since Turnstone's SDK validates the body)."""
    damaged: list[Damaged] = []
    found = rows(org_id, list_records(org_id, targets, type_=type_, limit=limit, damaged=damaged))
    return Listing(found, len(damaged))


def read_heads(org_id: str, targets: list[Target]) -> dict[str, BankHead]:
    """The namespaces of ``targets`` that exist, by bank key, as ONE consistent read found them
    (``search.recall.read_rows``: one BatchGetItem); a turn counts and ranks from it."""
    from ..search.recall import read_rows
    return read_rows(org_id, [t.bank for t in dict.fromkeys(targets)])


def count_live(org_id: str, targets: list[Target], *, rows: dict[str, BankHead] | None = None) -> int:
    """How many live memories ``targets`` hold together (their bank rows' counters): from
    ``rows`` (``read_heads``) when given, else one consistent BatchGetItem here."""
    found = read_heads(org_id, targets) if rows is None else rows
    return sum(int(found[t.bank].memories or 0) for t in dict.fromkeys(targets) if t.bank in found)


def recall(org_id: str, targets: list[Target], query: str, *, limit: int, type_: str | None = None,
           rows: dict[str, BankHead] | None = None):
    """BM25F over name, description and content of ``targets`` ranked as ONE corpus (statistics
    global to the envelope; ``chalicelib.search.recall``): a ``RecallResult``. ``rows``: the
    namespaces as the turn already read them (``read_heads``), else read here."""
    from ..search.recall import recall as _recall
    from ..tuning import get_tuning

    flt = (lambda m: m.type == type_) if type_ else None
    return _recall(org_id, [t.bank for t in dict.fromkeys(targets)], query, limit=limit, tuning=get_tuning(),
                   filter=flt, rows=rows)


def search_rows(org_id: str, targets: list[Target], query: str, *, type_: str | None, limit: int) -> Listing:
    """The best ``limit`` matches of ``query``, best first."""
    result = recall(org_id, targets, query, limit=limit, type_=type_)
    return Listing(rows(org_id, [h.memory for h in result.hits if h.memory.live]))
