"""The admin API over structured memory, for ``admin.memories``
principals: list and search across every scope of the org (no automatic scope resolution; limits
clamped, not rejected), get, description patch and delete by ``memory_id`` (a miss is 404
``Memory not found`` with nothing written or audited), the revision history by ``memory_id``
(deleted memories' too), the import of Turnstone ndjson rows, and
the audit pages.

Import: one Turnstone row per line (``memory_id?, name, description, type?, scope, scope_id,
content, created?, updated?, last_accessed?, access_count?``), any of the five scopes. Rows are
applied per namespace in transactions of up to ``BATCH`` memories grouped by write lane, each
taking a range of its lanes' positions (the bank import's batching); an existing identity is updated only by a newer
row (``updated`` later), otherwise the row is skipped; bad lines are reported by line number
(from 1) and skipped, never half-applied: ``{imported, skipped, errors: [{line, error, code}]}``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, Field

from .. import audit
from ..clock import now_ms
from ..core.ndjson import check_inline_size, lines_of, parse_line
from ..core.records import Memory
from ..core.store import (
    BankTx,
    History,
    Write,
    bank_names,
    current,
    decode_cursor,
    encode_cursor,
    get_bank_row,
    get_item,
    lane_batches,
    memory_history,
    name_pointer,
    record_of,
    stage_name_pointer,
    write,
)
from ..errors import CairnError, NotFound
from ..validation import Model, check_line
from . import memories, objects
from .memories import Listing, Row
from .names import normalize_description, normalize_name
from .scopes import NAMESPACE, SCOPES, Target, check_scope, check_type, parse_bank

# Per memory: its record, revision, name pointer, location item and audit event, and at most one
# lane row (an updated name's stored id may fall in another lane than predicted), plus the usage
# meter's counter item: 6 x 16 + 1 <= 100. Under a memory quota a batch also holds every other
# lane (core.store.lane_batches makes it smaller for that).
BATCH = 16
RECORD_ITEMS = 6
AUDIT_ACTIONS = audit.MEMORY_ACTIONS


def admin_targets(org_id: str, scope: str, scope_id: str) -> list[Target]:
    """Every namespace of the org matching the optional ``scope``/``scope_id`` filters (a key
    query on the banks table's ``!scope/`` prefix); 400 ``invalid_scope`` for an unknown scope."""
    if scope:
        check_scope(scope, SCOPES)
    if scope and scope_id:
        return [Target(scope, scope_id)]
    out = [parse_bank(name) for name in bank_names(org_id, NAMESPACE + (f"{scope}/" if scope else ""))]
    return [t for t in out if not scope_id or t.scope_id == scope_id]


def list_all(org_id: str, *, type_: str | None, scope: str, scope_id: str, limit: int) -> Listing:
    """``GET /v1/api/admin/memories``: live memories of every matching namespace, newest first."""
    return memories.list_rows(org_id, admin_targets(org_id, scope, scope_id), type_=type_, limit=limit)


def search_all(org_id: str, q: str, *, type_: str | None, scope: str, scope_id: str, limit: int) -> Listing:
    """``GET /v1/api/admin/memories/search?q=``: the best ``limit`` matches of ``q``, best first."""
    return memories.search_rows(org_id, admin_targets(org_id, scope, scope_id), q, type_=type_, limit=limit)


def _missing() -> NotFound:
    return NotFound("Memory not found", code="memory_not_found")


def _locate(org_id: str, memory_id: str, *, deleted: bool = False) -> Target:
    """The namespace of memory ``memory_id`` (with ``deleted``: also of a deleted one); 404
    ``Memory not found``."""
    loc = objects.location(org_id, memory_id) if len(memory_id) <= 64 else None
    if loc is None and deleted and len(memory_id) <= 64:
        loc = objects.location(org_id, memory_id, deleted=True)
    if loc is None:
        raise _missing()
    return Target(loc.scope, loc.scope_id)


def get_by_id(org_id: str, memory_id: str) -> Row:
    """``GET /v1/api/admin/memories/{memory_id}``: the row; 404 ``Memory not found``."""
    t = _locate(org_id, memory_id)
    brow = get_bank_row(org_id, t.bank)
    item = get_item(brow.incarnation, memory_id) if brow is not None else None
    rec = record_of(item) if item is not None else None
    if rec is None or not rec.live:
        raise _missing()
    return memories.rows(org_id, [rec])[0]


def history_by_id(org_id: str, memory_id: str) -> History:
    """``GET /v1/api/admin/memories/{memory_id}/history``: every revision, oldest first
    (``core.store.memory_history``), of a live memory or of a deleted one (found through where
    it lived: its tombstone is the last revision, with the text it had). 404 ``Memory not found``
    for an id this org never had; 409 ``damaged`` when its location item cannot be read."""
    brow = get_bank_row(org_id, _locate(org_id, memory_id, deleted=True).bank)
    if brow is None or get_item(brow.incarnation, memory_id) is None:
        raise _missing()
    return memory_history(brow.incarnation, memory_id)


class DescriptionPatch(Model):
    """Body of ``PATCH /v1/api/admin/memories/{memory_id}``."""

    model_config = ConfigDict(extra="forbid")
    description: Any = None


def patch_description(org_id: str, memory_id: str, description: Any, *, actor: str) -> Row:
    """Replace the description (audited ``memory.update``): the row; 404 ``Memory not found``."""
    normalize_description(description)
    rec = memories.set_description(org_id, _locate(org_id, memory_id), memory_id, description,
                                   actor=actor, surface="admin")
    if rec is None:
        raise _missing()
    return memories.rows(org_id, [rec])[0]


def delete_by_id(org_id: str, memory_id: str, *, actor: str) -> None:
    """Delete atomically (audited ``memory.delete``); a miss is 404 ``Memory not found`` with no
    audit event."""
    try:
        memories.delete(org_id, _locate(org_id, memory_id), None, actor=actor, surface="admin", memory_id=memory_id)
    except NotFound:
        raise _missing() from None


# --- audit ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class AuditPage:
    """One page of memory audit events (``audit.to_dict`` shapes), oldest first, and the cursor
    of the next page (``None`` on the last)."""

    events: list[audit.AuditEvent]
    next_cursor: str | None


def audit_page(org_id: str, *, action: str, since: int, cursor: str | None, limit: int) -> AuditPage:
    """``GET /v1/api/admin/audit``: structured memories' audit events (their details name the
    ``surface``) from ``since`` (ms since the epoch), only ``action`` when given (one of
    ``AUDIT_ACTIONS``), at most ``limit``. A cursor from another
    listing, filter or org is 400 ``validation_error`` naming ``cursor``."""
    owner = f"{org_id}|{action}"  # a cursor pages the listing (org and action filter) it came from
    cur = decode_cursor(cursor, "audit", owner, {"k": str}, {"k": f"{action}#"} if action else None)
    events: list[audit.AuditEvent] = []
    last = ""
    for k, ev in audit.events(org_id, since_ms=since, after=cur["k"] if cur else None, action=action or None,
                              actions=AUDIT_ACTIONS):
        if ev.details is None or "surface" not in ev.details.as_dict():
            continue  # a bank memory's event: this contract lists structured memories only
        if len(events) == limit:
            return AuditPage(events, encode_cursor("audit", owner, {"k": last}))
        events.append(audit.to_dict(ev))
        last = k
    return AuditPage(events, None)


# --- import ---------------------------------------------------------------------------------

class TurnstoneRow(Model):
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


@dataclass(frozen=True)
class ImportRow:
    """One parsed import line: its number (from 1), namespace, record and touch counters."""

    line: int
    target: Target
    rec: Memory
    access_count: int
    last_accessed: int | None

    @property
    def name(self) -> str:
        return self.rec.name or ""


@dataclass
class ImportResult:
    """``imported`` memories, ``skipped`` rows (not newer than what is stored), ``errors``
    ``(line, message, code)`` sorted by line."""

    imported: int = 0
    skipped: int = 0
    errors: list[tuple[int, str, str]] = field(default_factory=list)


def _checked(r: TurnstoneRow) -> tuple[str, str, str]:
    """``(name, description, content)`` of a row, checked with the REST API's rules; raises
    ``ValueError`` with the API's message."""
    try:
        name = normalize_name(r.name)
        description = normalize_description(r.description)
        content = memories.check_content(r.content, memories.REST_MAX_CONTENT)
        check_type(r.type)
        check_scope(r.scope, SCOPES)
        check_line(r.scope_id, "scope_id")
    except CairnError as exc:
        raise ValueError(exc.message) from None
    return name, description, content


def _parse(n: int, raw: bytes) -> ImportRow:
    r = parse_line(raw, TurnstoneRow)
    name, description, content = _checked(r)
    scope_id = (r.scope_id or "").strip()
    if (r.scope == "global") != (scope_id == ""):
        raise ValueError("scope_id is not allowed with global scope" if scope_id
                         else f"scope_id is required for {r.scope} scope")
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
    return ImportRow(n, t, rec, r.access_count, accessed)


def import_ndjson(org_id: str, body: bytes, *, actor: str) -> ImportResult:
    """``POST /v1/api/admin/memories/import`` (module docstring); 413 ``payload_too_large``
    over ``Settings.import_inline_bytes``."""
    check_inline_size(body)
    return import_lines(org_id, lines_of([body]), actor=actor)


def _group(lines: Iterable[bytes],
           errors: list[tuple[int, str, str]]) -> tuple[int, dict[Target, dict[str, ImportRow]]]:
    """``(valid rows, rows by namespace and name)``: the last row of an identity by ``updated``
    wins; a bad line goes to ``errors``."""
    groups: dict[Target, dict[str, ImportRow]] = {}
    valid = 0
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            r = _parse(n, raw)
        except ValueError as exc:
            errors.append((n, str(exc), "validation_error"))
            continue
        valid += 1
        cur = groups.setdefault(r.target, {}).get(r.name)
        if cur is None or r.rec.updated_at >= cur.rec.updated_at:  # last wins per identity
            groups[r.target][r.name] = r
    return valid, groups


def import_lines(org_id: str, lines: Iterable[bytes], *, actor: str) -> ImportResult:
    """Import Turnstone rows (see the module docstring)."""
    errors: list[tuple[int, str, str]] = []
    valid, groups = _group(lines, errors)
    imported = refused = 0
    for t, by_name in groups.items():
        ordered = sorted(by_name.values(), key=lambda r: r.line)
        for batch in lane_batches(org_id, t.bank, ordered, lambda r: r.rec.id, size=BATCH, max_lanes=BATCH,
                                  weight=_staged_bytes, record_items=RECORD_ITEMS):
            done, errs = _import_batch(org_id, t, batch, actor)
            imported += done
            refused += len(errs)
            errors.extend(errs)
    errors.sort(key=lambda e: e[0])
    return ImportResult(imported, valid - imported - refused, errors)


def _staged_bytes(r: ImportRow) -> int:
    """About what importing ``r`` stages, UTF-8 bytes: its record twice (the memory and its
    revision) plus the pointer, location and audit items."""
    return 2 * len(json.dumps(r.rec.model_dump(mode="json"))) + 2048  # stored ASCII-escaped, as here


def _import_write(inc: str | None, r: ImportRow, org_id: str) -> Write | str | None:
    """The write importing ``r`` into namespace incarnation ``inc`` (``None``: a new namespace),
    ``None`` when what is stored is newer (skipped), or the error of a taken memory_id."""
    mid = name_pointer(inc, r.name) if inc is not None else None
    if mid is not None:
        item = get_item(inc or "", mid)
        prev, guard = current(item) if item is not None else (None, None)
        if prev is None or (guard is None and r.rec.updated_at <= prev.updated_at):
            return None  # not newer than what is stored (a damaged record is always replaced)
        upd = prev.model_copy(update={"text": r.rec.text, "description": r.rec.description, "type": r.rec.type,
                                      "name": r.rec.name, "meta": r.rec.meta,
                                      "updated_at": max(r.rec.updated_at, prev.updated_at),
                                      "revision": prev.revision + 1})
        return Write(upd, prev, "import", None, guard)
    if objects.exists(org_id, "mem", r.rec.id):
        return f"memory_id {r.rec.id} already exists"
    return Write(r.rec, None, "import", None)


def _import_batch(org_id: str, t: Target, batch: list[ImportRow], actor: str) -> tuple[int, list[tuple[int, str, str]]]:
    bank = t.bank

    def attempt(btx: BankTx) -> tuple[int, list[tuple[int, str, str]]]:
        brow, fresh = btx.row_or_new(bank)
        inc = fresh.incarnation
        writes: list[Write] = []
        news: list[ImportRow] = []
        errs: list[tuple[int, str, str]] = []
        taken: set[str] = set()
        for r in batch:
            w = _import_write(inc if brow is not None else None, r, org_id)
            if w is not None and not isinstance(w, str) and w.record.id in taken:
                w = f"memory_id {w.record.id} already exists"  # an earlier row of this batch has it
            if isinstance(w, str):
                errs.append((r.line, w, "conflict"))
            elif w is not None:
                taken.add(w.record.id)
                writes.append(w)
                if w.prev is None:
                    news.append(r)
        if not writes:
            return 0, errs
        btx.stage(bank, brow, writes, actor, fresh=fresh)
        for r in news:
            stage_name_pointer(btx.tx, inc, r.name, r.rec.id)
            objects.stage_location(btx.tx, org_id, r.rec.id, memories.location_fields(r.rec),
                                   access_count=r.access_count, last_accessed=r.last_accessed)
        for w in writes:
            audit.add_to(btx.tx, org_id, "memory.save" if w.prev is None else "memory.update", actor, w.record.id,
                         {"memory_id": w.record.id, "name": w.record.name, "scope": t.scope, "scope_id": t.scope_id,
                          "type": w.record.type, "surface": "import"})
        return len(writes), errs

    return write(org_id, attempt)
