"""The admin API over structured memory, for ``admin.memories``
principals: list and search across every scope of the org (no automatic scope resolution; limits
clamped, not rejected), get, description patch and delete by ``memory_id`` (a miss is 404
``Memory not found`` with nothing written or audited), the import of Turnstone ndjson rows, and
the audit pages.

Import: one Turnstone row per line (``memory_id?, name, description, type?, scope, scope_id,
content, created?, updated?, last_accessed?, access_count?``), any of the five scopes. Rows are
applied per namespace in transactions of up to ``BATCH`` memories, each taking a range of the
namespace's ``seq`` (the bank import's batching); an existing identity is updated only by a newer
row (``updated`` later), otherwise the row is skipped; bad lines are reported by line number
(from 1) and skipped, never half-applied: ``{imported, skipped, errors: [{line, error}]}``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .. import audit
from ..clock import now_ms
from ..core.ndjson import parse_line
from ..core.records import Memory
from ..core.store import (
    NAME_POINTER_PREFIX,
    Write,
    current,
    decode_cursor,
    encode_cursor,
    get_bank_row,
    get_item,
    new_bank,
    notify,
    record_of,
    stage,
)
from ..errors import BadRequest, CairnError, NotFound, PayloadTooLarge
from ..storage.tables import BankModel, MemoryModel, StructuredModel, bind
from ..storage.txn import run_transaction
from ..validation import as_int, check_line
from . import memories, objects
from .names import normalize_description, normalize_name
from .scopes import NAMESPACE, SCOPES, Target, check_scope, check_type, parse_bank

# Per memory: its record, revision, name pointer, location item and audit event; plus the bank row.
BATCH = 19
MAX_IMPORT_BYTES = 5 * 1024 * 1024
AUDIT_ACTIONS = ("memory.save", "memory.update", "memory.delete")


def clamp(raw: str | None, default: int, hi: int) -> int:
    """A query limit clamped to ``1..hi``; 400 ``limit must be an integer`` when not a number."""
    if raw is None or raw == "":
        return default
    n = as_int(raw)
    if n is None:
        raise BadRequest("limit must be an integer", details={"field": "limit"})
    return max(1, min(hi, n))


def admin_targets(org_id: str, scope: str, scope_id: str) -> list[Target]:
    """Every namespace of the org matching the optional ``scope``/``scope_id`` filters (a key
    query on the banks table's ``!scope/`` prefix)."""
    if scope:
        check_scope(scope, SCOPES)
    bind()
    prefix = NAMESPACE + (f"{scope}/" if scope else "")
    if scope and scope_id:
        return [Target(scope, scope_id)]
    out = [parse_bank(r.name) for r in BankModel.query(org_id, BankModel.name.startswith(prefix), consistent_read=True)]
    return [t for t in out if not scope_id or t.scope_id == scope_id]


def list_all(org_id: str, query: dict[str, str]) -> dict[str, Any]:
    """``GET /v1/api/admin/memories``: ``{memories, total}`` newest first, limit 1..200 (default 100)."""
    type_ = check_type(query.get("type") or "", allow_empty=True) or None
    targets = admin_targets(org_id, query.get("scope") or "", query.get("scope_id") or "")
    return memories.list_rows(org_id, targets, type_=type_, limit=clamp(query.get("limit"), 100, 200))


def search_all(org_id: str, query: dict[str, str]) -> dict[str, Any]:
    """``GET /v1/api/admin/memories/search?q=``: ``{memories, total}`` best first, limit 1..50."""
    q = (query.get("q") or "").strip()
    if not q:
        raise BadRequest("query is required", details={"field": "q"})
    type_ = check_type(query.get("type") or "", allow_empty=True) or None
    targets = admin_targets(org_id, query.get("scope") or "", query.get("scope_id") or "")
    return memories.search_rows(org_id, targets, q, type_=type_, limit=clamp(query.get("limit"), 20, 50))


def _missing() -> NotFound:
    return NotFound("Memory not found", code="memory_not_found")


def _locate(org_id: str, memory_id: str) -> Target:
    d = objects.data(org_id, "mem", memory_id) if len(memory_id) <= 64 else None
    if d is None:
        raise _missing()
    return Target(d["scope"], d.get("scope_id", ""))


def get_by_id(org_id: str, memory_id: str) -> dict[str, Any]:
    """``GET /v1/api/admin/memories/{memory_id}``: the row; 404 ``Memory not found``."""
    t = _locate(org_id, memory_id)
    brow = get_bank_row(org_id, t.bank)
    item = get_item(brow.incarnation, memory_id) if brow is not None else None
    rec = record_of(item) if item is not None else None
    if rec is None or not rec.live:
        raise _missing()
    return memories.rows(org_id, [rec])[0]


class DescriptionPatch(BaseModel):
    """Body of ``PATCH /v1/api/admin/memories/{memory_id}``."""

    model_config = ConfigDict(extra="forbid")
    description: Any = None


def patch_description(org_id: str, memory_id: str, description: Any, *, actor: str) -> dict[str, Any]:
    """Replace the description (audited ``memory.update``): the row; 404 ``Memory not found``."""
    normalize_description(description)
    rec = memories.set_description(org_id, _locate(org_id, memory_id), memory_id, description,
                                   actor=actor, surface="admin")
    if rec is None:
        raise _missing()
    return memories.rows(org_id, [rec])[0]


def delete_by_id(org_id: str, memory_id: str, *, actor: str) -> dict[str, Any]:
    """Delete atomically (audited ``memory.delete``): ``{"status": "ok"}``; a miss is 404
    ``Memory not found`` with no audit event."""
    try:
        memories.delete(org_id, _locate(org_id, memory_id), None, actor=actor, surface="admin", memory_id=memory_id)
    except NotFound:
        raise _missing() from None
    return {"status": "ok"}


# --- audit ----------------------------------------------------------------------------------

def audit_page(org_id: str, query: dict[str, str]) -> dict[str, Any]:
    """``GET /v1/api/admin/audit?action=&since=&cursor=&limit=``: memory audit events oldest first,
    ``{events, next_cursor}``. ``since`` is ms since the epoch; ``action`` one of
    ``memory.save|memory.update|memory.delete`` (all three when omitted)."""
    action = query.get("action") or ""
    if action and action not in AUDIT_ACTIONS:
        raise BadRequest(f"action must be one of {list(AUDIT_ACTIONS)}.", details={"field": "action"})
    since = as_int(query.get("since") or "0")
    if since is None:
        raise BadRequest("since must be an integer (ms since epoch).", details={"field": "since"})
    limit = clamp(query.get("limit"), 100, 500)
    owner = f"{org_id}|{action}"  # a cursor pages the listing (org and action filter) it came from
    cur = decode_cursor(query.get("cursor"), "audit", owner, {"k": str}, {"k": f"{action}#"} if action else None)
    events: list[tuple[str, Any]] = []
    nxt = None
    for pos, ev in audit.events(org_id, since_ms=since, after=cur["k"] if cur else None, action=action or None,
                                actions=AUDIT_ACTIONS):
        if len(events) == limit:
            nxt = encode_cursor("audit", owner, {"k": events[-1][0]})
            break
        events.append((pos, ev))
    return {"events": [audit.to_dict(e) for _, e in events], "next_cursor": nxt}


# --- import ---------------------------------------------------------------------------------

class TurnstoneRow(BaseModel):
    """One line of a Turnstone ``structured_memories`` export."""

    model_config = ConfigDict(extra="ignore")
    memory_id: str | None = Field(None, max_length=64)
    name: Any = None
    description: Any = None
    type: str | None = None
    scope: str = "global"
    scope_id: str = ""
    content: Any = None
    created: str | None = None
    updated: str | None = None
    last_accessed: str | None = None
    access_count: int = Field(0, ge=0)


def _parse(raw: bytes) -> tuple[Target, Memory, int, int | None]:
    r = parse_line(raw, TurnstoneRow)
    try:
        name = normalize_name(r.name)
        description = normalize_description(r.description)
        content = memories.check_content(r.content, memories.REST_MAX_CONTENT)
        check_type(r.type)
        check_scope(r.scope, SCOPES)
        check_line(r.scope_id, "scope_id")
    except CairnError as exc:
        raise ValueError(exc.message) from None
    scope_id = (r.scope_id or "").strip()
    if (r.scope == "global") != (scope_id == ""):
        raise ValueError("scope_id is not allowed with global scope" if scope_id else f"scope_id is required for {r.scope} scope")
    try:
        mid = str(uuid.UUID(r.memory_id)) if r.memory_id else str(uuid.uuid4())
        now = now_ms()
        created = memories.parse_time(r.created) if r.created else now
        updated = memories.parse_time(r.updated) if r.updated else created
        accessed = memories.parse_time(r.last_accessed) if r.last_accessed else None
    except ValueError as exc:
        raise ValueError(f"invalid memory_id or time: {exc}") from None
    t = Target(r.scope, scope_id)
    rec = Memory(id=mid, text=content, name=name, description=description, type=r.type or memories.DEFAULT_TYPE,
                 meta={"scope": t.scope, "scope_id": t.scope_id}, created_at=created, updated_at=updated)
    return t, rec, r.access_count, accessed


def import_ndjson(org_id: str, body: bytes, *, actor: str) -> dict[str, Any]:
    """``POST /v1/api/admin/memories/import``: ``{imported, skipped, errors}`` (module docstring);
    413 ``payload_too_large`` over 5 MB."""
    if len(body) > MAX_IMPORT_BYTES:
        raise PayloadTooLarge("Inline imports are limited to 5 MB.")
    return import_lines(org_id, body.splitlines(), actor=actor)


def import_lines(org_id: str, lines: Iterable[bytes], *, actor: str) -> dict[str, Any]:
    """Import Turnstone rows (see the module docstring)."""
    bind()
    errors: list[dict[str, Any]] = []
    groups: dict[Target, dict[str, tuple[int, Memory, int, int | None]]] = {}
    valid = 0
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            t, rec, count, accessed = _parse(raw)
        except ValueError as exc:
            errors.append({"line": n, "error": str(exc)})
            continue
        valid += 1
        cur = groups.setdefault(t, {}).get(rec.name)
        if cur is None or rec.updated_at >= cur[1].updated_at:  # last wins per identity
            groups[t][rec.name] = (n, rec, count, accessed)
    imported = 0
    for t, by_name in groups.items():
        ordered = sorted(by_name.values(), key=lambda x: x[0])
        for i in range(0, len(ordered), BATCH):
            done, errs = _import_batch(org_id, t, ordered[i:i + BATCH], actor)
            imported += done
            errors.extend(errs)
    errors.sort(key=lambda e: e["line"])
    return {"imported": imported, "skipped": valid - imported - sum(1 for e in errors if e.get("apply")),
            "errors": [{"line": e["line"], "error": e["error"]} for e in errors]}


def _import_batch(org_id: str, t: Target, batch: list[tuple[int, Memory, int, int | None]],
                  actor: str) -> tuple[int, list[dict[str, Any]]]:
    bank = t.bank
    committed: dict[str, Any] = {}

    def attempt(tx):
        brow = get_bank_row(org_id, bank)
        fresh = None if brow is not None else new_bank(org_id, bank)
        inc = brow.incarnation if brow is not None else fresh.incarnation
        writes: list[Write] = []
        news: list[tuple[Memory, int, int | None]] = []
        errs: list[dict[str, Any]] = []
        for line, rec, count, accessed in batch:
            ptr = get_item(inc, NAME_POINTER_PREFIX + (rec.name or "")) if brow is not None else None
            if ptr is not None:
                item = get_item(inc, ptr.memory_id)
                prev, guard = current(item) if item is not None else (None, None)
                if prev is None or (guard is None and rec.updated_at <= prev.updated_at):
                    continue  # not newer than what is stored (a damaged record is always replaced): skipped
                upd = prev.model_copy(update={"text": rec.text, "description": rec.description, "type": rec.type,
                                              "name": rec.name, "meta": rec.meta,
                                              "updated_at": max(rec.updated_at, prev.updated_at),
                                              "revision": prev.revision + 1})
                writes.append(Write(upd, prev, "import", None, guard))
                continue
            if objects.get(org_id, "mem", rec.id) is not None:
                errs.append({"line": line, "error": f"memory_id {rec.id} already exists", "apply": True})
                continue
            writes.append(Write(rec, None, "import", None))
            news.append((rec, count, accessed))
        if not writes:
            return 0, errs
        new_row, changes = stage(tx, org_id, bank, brow, writes, actor, fresh=fresh)
        for rec, count, accessed in news:
            tx.save(MemoryModel(bank_key=inc, sk=NAME_POINTER_PREFIX + (rec.name or ""), memory_id=rec.id),
                    condition=MemoryModel.sk.does_not_exist())
            loc = objects.new(org_id, "mem", (rec.id,), {"scope": t.scope, "scope_id": t.scope_id, "name": rec.name})
            loc.access_count, loc.last_accessed = count, accessed
            tx.save(loc, condition=StructuredModel.sk.does_not_exist())
        for w in writes:
            audit.add_to(tx, org_id, "memory.save" if w.prev is None else "memory.update", actor, w.record.id,
                         {"memory_id": w.record.id, "name": w.record.name, "scope": t.scope, "scope_id": t.scope_id,
                          "type": w.record.type, "surface": "import"})
        committed.update(row=new_row, changes=changes)
        return len(writes), errs

    done, errs = run_transaction(attempt)
    if committed:
        notify(org_id, bank, committed["row"], committed["changes"])
    return done, errs
