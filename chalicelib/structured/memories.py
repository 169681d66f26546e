"""Structured memories: upsert, get, delete, list, search and touch.

A memory is a ``chalicelib.core.records.Memory`` with ``id`` = its ``memory_id`` (UUID), ``text`` =
its content, ``name``, ``description``, ``type`` set and ``meta = {scope, scope_id}``, stored in
its namespace (``scopes.Target.bank``) through ``core.store.stage()``: every save, update and
delete is one transaction with the namespace's ``seq`` advance, the name pointer
``~name/<name>`` -> memory_id (created with ``does_not_exist``, so two concurrent saves of one
identity yield one memory: the loser's transaction is retried and becomes an update), the
location item ``mem#<memory_id>`` in the ``structured`` table and the audit event
(``memory.save``/``memory.update``/``memory.delete``: ids, name, scope, type, surface, never the
content). A delete tombstones the record (history kept) and removes both pointers.

Touching (``last_accessed``, ``access_count``) is an atomic counter update of the location item:
neither ``seq`` nor revision changes and it is not audited.

Rows are Turnstone's: ``{memory_id, name, description, type, scope, scope_id, content, created,
updated, last_accessed, access_count}`` with times as UTC ``YYYY-MM-DDTHH:MM:SS`` and
``last_accessed`` ``""`` until first touched.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from .. import audit
from ..auth.principal import Principal
from ..clock import now_ms
from ..core.records import Memory
from ..core.store import (
    NAME_POINTER_PREFIX,
    Write,
    current,
    decoded,
    get_bank_row,
    get_item,
    new_bank,
    notify,
    record_of,
    stage,
)
from ..errors import BadRequest, NotFound
from ..storage.damage import MAX_SAFE_INT, Damaged, time_ms
from ..storage.tables import MemoryModel, StructuredModel, bind
from ..storage.txn import run_transaction
from ..validation import MAX_TIME_MS, check_text
from . import objects
from .names import normalize_description, normalize_name
from .scopes import TYPES, Target, check_type, rest_target

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
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE_INT
    return int(value) if ok else 0


def row(m: Memory, touch: StructuredModel | None = None, *, content: bool = True) -> dict[str, Any]:
    """Turnstone's memory row for record ``m`` with its touch counters (a damaged counter reads
    as never touched)."""
    t = target_of(m)
    out = {"memory_id": m.id, "name": m.name or "", "description": m.description or "", "type": m.type or DEFAULT_TYPE,
           "scope": t.scope, "scope_id": t.scope_id, "created": fmt_time(m.created_at),
           "updated": fmt_time(m.updated_at),
           "last_accessed": fmt_time(touch.last_accessed) if touch is not None else "",
           "access_count": _count(touch.access_count) if touch is not None else 0}
    if content:
        out["content"] = m.text
    return out


def touches(org_id: str, ids: Iterable[str]) -> dict[str, StructuredModel]:
    """The location items (touch counters) of ``ids`` by memory_id (a BatchGet)."""
    bind()
    keys = [(org_id, objects.key("mem", i)) for i in dict.fromkeys(ids)]
    return {it.sk[4:]: it for it in StructuredModel.batch_get(keys, consistent_read=True)} if keys else {}


def rows(org_id: str, records: list[Memory]) -> list[dict[str, Any]]:
    """Rows for ``records`` in order, with touch counters."""
    t = touches(org_id, (m.id for m in records))
    return [row(m, t.get(m.id)) for m in records]


def touch(org_id: str, memory_ids: Iterable[str]) -> None:
    """Add one to ``access_count`` and set ``last_accessed`` of each memory: an atomic counter
    update of its location item (no ``seq``, no revision, no audit). A memory deleted meanwhile is
    skipped."""
    bind()
    now = now_ms()
    for mid in dict.fromkeys(memory_ids):
        try:
            objects.new(org_id, "mem", (mid,), {}).update(
                actions=[StructuredModel.access_count.add(1), StructuredModel.last_accessed.set(now)],
                condition=StructuredModel.sk.exists())
        except Exception:  # noqa: BLE001 - a lost touch must never fail a turn
            pass


def _audit_details(m: Memory, surface: str) -> dict[str, Any]:
    t = target_of(m)
    return {"memory_id": m.id, "name": m.name, "scope": t.scope, "scope_id": t.scope_id, "type": m.type,
            "surface": surface}


def _location(org_id: str, m: Memory) -> StructuredModel:
    t = target_of(m)
    item = objects.new(org_id, "mem", (m.id,), {"scope": t.scope, "scope_id": t.scope_id, "name": m.name})
    item.access_count = 0
    return item


def save(org_id: str, target: Target, name: object, content: object, description: object,
         type_: str | None, *, actor: str, surface: str, max_content: int = REST_MAX_CONTENT) -> tuple[bool, dict[str, Any]]:
    """Upsert the memory ``(name, target)``: ``(created, row)``.

    Validates before any read or write (400 ``invalid_name``, ``validation_error`` with
    Turnstone's messages, ``invalid_type``). An update changes content, description and (when
    given) type; memory_id and created stay. A damaged stored record of that identity is
    replaced the same way (what can be salvaged of it kept).
    """
    name = normalize_name(name)
    description = normalize_description(description)
    content = check_content(content, max_content)
    check_type(type_)
    bank = target.bank
    committed: dict[str, Any] = {}

    def attempt(tx):
        now = now_ms()
        brow = get_bank_row(org_id, bank)
        fresh = None if brow is not None else new_bank(org_id, bank)
        inc = brow.incarnation if brow is not None else fresh.incarnation
        ptr = get_item(inc, NAME_POINTER_PREFIX + name) if brow is not None else None
        prev = guard = None
        if ptr is not None:
            item = get_item(inc, ptr.memory_id)
            prev, guard = current(item) if item is not None else (None, None)
            if guard is not None:  # damaged: the upsert replaces it under its identity
                prev = _repaired(prev, name, target)
        if prev is not None:
            rec = prev.model_copy(update={"text": content, "description": description,
                                          "type": type_ or prev.type, "updated_at": max(now, prev.updated_at),
                                          "revision": prev.revision + 1})
            op, action = "update", "memory.update"
        else:
            rec = Memory(id=str(uuid.uuid4()), text=content, name=name, description=description,
                         type=type_ or DEFAULT_TYPE, meta={"scope": target.scope, "scope_id": target.scope_id},
                         created_at=now, updated_at=now)
            op, action = "save", "memory.save"
        new_row, changes = stage(tx, org_id, bank, brow, [Write(rec, prev, op, None, guard)], actor, fresh=fresh)
        if prev is None:
            tx.save(MemoryModel(bank_key=inc, sk=NAME_POINTER_PREFIX + name, memory_id=rec.id),
                    condition=MemoryModel.sk.does_not_exist())
            tx.save(_location(org_id, rec), condition=StructuredModel.sk.does_not_exist())
        audit.add_to(tx, org_id, action, actor, rec.id, _audit_details(rec, surface))
        committed.update(row=new_row, changes=changes, rec=rec, created=prev is None)

    run_transaction(attempt)
    notify(org_id, bank, committed["row"], committed["changes"])
    rec = committed["rec"]
    return committed["created"], rows(org_id, [rec])[0]


def save_rest(p: Principal, body: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """``POST /v1/api/memories``: validate every field with Turnstone's messages (name,
    description, content up to 65536 characters, type), then the scope rules
    (``scopes.rest_target``), then upsert with surface ``rest``: ``(created, row)``."""
    normalize_name(body.get("name"))
    normalize_description(body.get("description"))
    check_content(body.get("content"), REST_MAX_CONTENT)
    check_type(body.get("type"))
    scope, scope_id = body.get("scope"), body.get("scope_id")
    for field, value in (("scope", scope), ("scope_id", scope_id)):
        if value is not None and not isinstance(value, str):
            raise BadRequest(f"{field} must be a string", details={"field": field})
    target = rest_target(p, scope, scope_id)
    return save(p.org_id, target, body.get("name"), body.get("content"), body.get("description"), body.get("type"),
                actor=p.actor, surface="rest")


def find(org_id: str, target: Target, name: object) -> Memory | None:
    """The live memory named ``name`` in ``target``, or ``None`` (name normalized first)."""
    name = normalize_name(name)
    brow = get_bank_row(org_id, target.bank)
    if brow is None:
        return None
    ptr = get_item(brow.incarnation, NAME_POINTER_PREFIX + name)
    item = get_item(brow.incarnation, ptr.memory_id) if ptr is not None else None
    rec = record_of(item) if item is not None else None
    return rec if rec is not None and rec.live else None


def not_found(name: str) -> NotFound:
    """404 ``memory_not_found`` with Turnstone's message ``Memory '<name>' not found``."""
    return NotFound(f"Memory '{name}' not found", code="memory_not_found")


def get(org_id: str, target: Target, name: object) -> dict[str, Any]:
    """The row of ``(name, target)``; 404 ``memory_not_found``."""
    norm = normalize_name(name)
    rec = find(org_id, target, norm)
    if rec is None:
        raise not_found(norm)
    return rows(org_id, [rec])[0]


def _change(org_id: str, target: Target, *, name: str | None = None, memory_id: str | None = None,
            change: Callable[[Memory, int], Memory], op: str, action: str, actor: str, surface: str,
            remove: bool) -> Memory | None:
    """One audited change of the live memory found by name or id in ``target``, atomically: the
    record read is the record changed (``None`` when there is none, with nothing written). A
    damaged stored record is 409 ``damaged``, except for a removal, which replaces it with a
    tombstone of what can be salvaged (its name from the pointer or the location item)."""
    bank = target.bank
    committed: dict[str, Any] = {}

    def attempt(tx):
        brow = get_bank_row(org_id, bank)
        if brow is None:
            return
        inc = brow.incarnation
        mid = memory_id
        if name is not None:
            ptr = get_item(inc, NAME_POINTER_PREFIX + name)
            if ptr is None:
                return
            mid = ptr.memory_id
        item = get_item(inc, mid)
        if item is None:
            return
        prev, guard = current(item) if remove else (record_of(item), None)
        if guard is not None:
            loc = objects.data(org_id, "mem", item.sk, strict=False) or {}
            known = name if name is not None else loc.get("name")
            prev = _repaired(prev, known if isinstance(known, str) else (prev.name or ""), target)
            prev = prev.model_copy(update={"invalid_at": None})  # a removal always writes
        if not prev.live:
            return
        rec = change(prev, max(now_ms(), prev.updated_at))
        new_row, changes = stage(tx, org_id, bank, brow, [Write(rec, prev, op, None, guard)], actor)
        if remove:
            tx.delete(MemoryModel(bank_key=inc, sk=NAME_POINTER_PREFIX + (prev.name or "")),
                      condition=MemoryModel.memory_id == prev.id)
            tx.delete(objects.new(org_id, "mem", (prev.id,), {}), condition=StructuredModel.sk.exists())
        audit.add_to(tx, org_id, action, actor, prev.id, _audit_details(rec, surface))
        committed.update(row=new_row, changes=changes, rec=rec)

    run_transaction(attempt)
    if not committed:
        return None
    notify(org_id, bank, committed["row"], committed["changes"])
    return committed["rec"]


def delete(org_id: str, target: Target, name: object, *, actor: str, surface: str,
           memory_id: str | None = None) -> dict[str, Any]:
    """Tombstone ``(name, target)`` (or, with ``memory_id``, that memory in ``target``):
    ``{"status": "ok", "name": name}``; 404 ``memory_not_found`` with nothing written or audited."""
    norm = normalize_name(name) if memory_id is None else None

    def tomb(prev: Memory, now: int) -> Memory:
        return prev.model_copy(update={"invalid_at": now, "updated_at": now, "revision": prev.revision + 1})

    rec = _change(org_id, target, name=norm, memory_id=memory_id, change=tomb, op="delete",
                  action="memory.delete", actor=actor, surface=surface, remove=True)
    if rec is None:
        raise not_found(norm or "")
    return {"status": "ok", "name": rec.name}


def set_description(org_id: str, target: Target, memory_id: str, description: object, *,
                    actor: str, surface: str) -> Memory | None:
    """Replace one memory's description (audited ``memory.update``); ``None`` when absent."""
    description = normalize_description(description)

    def patch(prev: Memory, now: int) -> Memory:
        return prev.model_copy(update={"description": description, "updated_at": now, "revision": prev.revision + 1})

    return _change(org_id, target, memory_id=memory_id, change=patch, op="update", action="memory.update",
                   actor=actor, surface=surface, remove=False)


def list_records(org_id: str, targets: list[Target], *, type_: str | None, limit: int,
                 damaged: list[Damaged] | None = None) -> list[Memory]:
    """Live memories of ``targets``, newest ``updated`` first (ties by id), at most ``limit``:
    each namespace is read newest first through its order index and the streams merged. A
    record that cannot be read is left out and, when given, appended to ``damaged``."""
    bind()
    damaged = damaged if damaged is not None else []

    def stream(t: Target) -> Iterable[Memory]:
        brow = get_bank_row(org_id, t.bank)
        if brow is None:
            return
        n = 0
        for it in MemoryModel.by_order.query(brow.incarnation, consistent_read=True, page_size=min(limit * 2, 200)):
            if it.live is not True:
                continue
            rec = decoded(it)
            if isinstance(rec, Damaged):
                damaged.append(rec)
                continue
            if type_ and rec.type != type_:
                continue
            yield rec
            n += 1
            if n >= limit:
                return

    merged = heapq.merge(*(stream(t) for t in dict.fromkeys(targets)), key=lambda m: m.order_key())
    out = []
    for rec in merged:
        out.append(rec)
        if len(out) >= limit:
            break
    return out


def list_rows(org_id: str, targets: list[Target], *, type_: str | None, limit: int) -> dict[str, Any]:
    """``{memories, total, damaged?}`` of ``list_records``: ``damaged`` counts the records left
    out (present only when there were some; the routes move it to the ``X-Cairn-Damaged``
    header, since Turnstone's SDK validates the body)."""
    damaged: list[Damaged] = []
    found = rows(org_id, list_records(org_id, targets, type_=type_, limit=limit, damaged=damaged))
    return {"memories": found, "total": len(found), **({"damaged": len(damaged)} if damaged else {})}


def count_live(org_id: str, targets: list[Target]) -> int:
    """How many live memories ``targets`` hold together (their bank rows' counters; one
    consistent BatchGetItem)."""
    from ..search.recall import read_rows
    rows = read_rows(org_id, [t.bank for t in dict.fromkeys(targets)])
    return sum(int(r.memories or 0) for r in rows.values())


def recall(org_id: str, targets: list[Target], query: str, *, limit: int, type_: str | None = None):
    """BM25F over name, description and content of ``targets`` ranked as ONE corpus (statistics
    global to the envelope; ``chalicelib.search.recall``): a ``RecallResult``."""
    from ..search.recall import recall as _recall
    from ..tuning import get_tuning

    flt = (lambda m: m.type == type_) if type_ else None
    return _recall(org_id, [t.bank for t in dict.fromkeys(targets)], query, limit=limit, tuning=get_tuning(),
                   filter=flt)


def search_rows(org_id: str, targets: list[Target], query: str, *, type_: str | None, limit: int) -> dict[str, Any]:
    """``{memories, total}``: the best ``limit`` matches of ``query``, best first."""
    result = recall(org_id, targets, query, limit=limit, type_=type_)
    found = rows(org_id, [h.memory for h in result.hits if h.memory.live])
    return {"memories": found, "total": len(found)}
