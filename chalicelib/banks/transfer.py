"""Export and import of a bank's memories as ``memories.jsonl``.

Export: current records (tombstoned included), or every revision with ``history=True``, inline up
to ``export_inline_bytes`` (API Gateway caps a response at 6 MB) else a presigned S3 URL under
``exports/``. Import: one record per line; a missing id is computed from the text; replay is
last-wins by id (higher revision wins, a later line wins ties; a line older than the stored
record is skipped); bad lines are reported by line number (from 1) and skipped, never
half-applied; purged tombstones carry no content and are skipped. Writes go in transactions of
up to ``BATCH`` records that each take a range of the bank's ``seq`` values, so the recall index
sees them in commit order.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..clock import now_ms
from ..core.ndjson import parse_line
from ..core.records import Memory
from ..core.store import (
    POINTER_PREFIX,
    Write,
    current,
    get_bank_row,
    get_item,
    get_items,
    iter_records,
    new_bank,
    notify,
    revision_record,
    stage,
)
from ..errors import BadRequest, PayloadTooLarge
from ..fingerprint import FINGERPRINT_RE, fingerprint
from ..names import check_name
from ..settings import get_settings
from ..storage import blobs
from ..storage.damage import Damaged
from ..storage.tables import MemoryModel, RevisionModel, bind
from ..storage.txn import run_transaction
from ..validation import Line, Millis
from .records import check_text, normalize_handles
from .service import require_bank

# DynamoDB allows 100 items per transaction: per record, its row, its revision and maybe a
# fingerprint pointer, plus the bank row.
BATCH = 30
MAX_INLINE_IMPORT_BYTES = 5 * 1024 * 1024


class ImportUploadRequest(BaseModel):
    """``{s3_key}`` naming a file uploaded through ``import-uploads``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    s3_key: str = Field(min_length=1, max_length=512)


def _lines_json(records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    for r in records:
        yield (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _line(rec: Memory | Damaged, **extra: Any) -> dict[str, Any]:
    if isinstance(rec, Damaged):
        return {**rec.marker(), **extra}
    return {**rec.public(), **extra}


def export_bank(org_id: str, bank: str, *, history: bool = False) -> dict[str, Any]:
    """``{data: bytes, damaged: n}`` when the file fits inline, else ``{url, expires_at,
    damaged?}`` (ms; ``damaged`` only when n > 0). A record that cannot be read is exported as
    the line ``{id, damaged: true, reason}`` (an import reports that line as bad);
    ``damaged`` counts them."""
    row = require_bank(org_id, bank)
    if history:
        recs = [_line(revision_record(r), op=r.op, seq=int(r.seq))
                for r in RevisionModel.query(row.incarnation, consistent_read=True)]
    else:
        recs = [_line(m) for m in iter_records(row.incarnation)]
    damaged = sum(1 for r in recs if r.get("damaged") is True)
    data = b"".join(_lines_json(recs))
    settings = get_settings()
    if len(data) <= settings.export_inline_bytes:
        return {"data": data, "damaged": damaged}
    key = blobs.org_key(org_id, "exports", bank, f"{now_ms()}-{uuid.uuid4().hex[:8]}.jsonl")
    blobs.put_bytes(key, data, "application/x-ndjson")
    return {"url": blobs.presign_get(key, settings.presign_ttl_s),
            "expires_at": now_ms() + settings.presign_ttl_s * 1000, **({"damaged": damaged} if damaged else {})}


class _Line(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str | None = None
    text: str
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    confidence: str = "stated"
    corroboration: int = Field(0, ge=0)
    pinned: bool = False
    source: dict[str, Line | None] = Field(default_factory=dict)
    created_at: Millis | None = None
    updated_at: Millis | None = None
    invalid_at: Millis | None = None
    superseded_by: Line | None = Field(None, max_length=64)
    revision: int = Field(0, ge=0)
    purged_at: Millis | None = None


def _parse_line(raw: bytes) -> Memory | None:
    """One line as a record; ``None`` for a purged tombstone (content-free: nothing to import).
    Raises ``ValueError`` with a message for a bad line."""
    line = parse_line(raw, _Line)
    if line.purged_at is not None:
        return None
    try:
        text = check_text(line.text)
        entities = normalize_handles(line.entities, "entities")
        tags = normalize_handles(line.tags, "tags")
    except BadRequest as exc:
        raise ValueError(exc.message) from None
    mid = line.id or fingerprint(text)
    if not FINGERPRINT_RE.fullmatch(mid):
        raise ValueError("id must be 'fp' followed by 16 lowercase hex digits")
    now = now_ms()
    created = line.created_at if line.created_at is not None else (line.updated_at or now)
    updated = line.updated_at if line.updated_at is not None else created
    try:
        return Memory(id=mid, text=text, entities=entities, tags=tags, confidence=line.confidence,
                      corroboration=line.corroboration, pinned=line.pinned, source=line.source,
                      created_at=created, updated_at=updated, invalid_at=line.invalid_at,
                      superseded_by=line.superseded_by, revision=line.revision)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}") from None


def import_lines(org_id: str, bank: str, lines: Iterable[bytes], *, actor: str, progress=None) -> dict[str, Any]:
    """Import ndjson ``lines`` into ``bank`` (created on first use):
    ``{imported, skipped, errors: [{line, error}]}``.

    Per id the winning line (highest revision, then the later line) is applied when it is newer
    than the stored record. Every valid line is counted once: ``imported`` (a winner applied),
    ``skipped`` (beaten by another line of its id, not newer than the stored record, or a purged
    tombstone, which carries no content) or in ``errors`` (a bad line, or a winner whose text is
    another memory's: ``duplicate_text``). Blank lines count as nothing. ``progress``, when given,
    is called with the number of records each batch handled.
    """
    check_name(bank)
    bind()
    errors: list[dict[str, Any]] = []
    winners: dict[str, tuple[int, Memory]] = {}
    skipped = 0
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            rec = _parse_line(raw)
        except ValueError as exc:
            errors.append({"line": n, "error": str(exc)})
            continue
        if rec is None:
            skipped += 1
            continue
        cur = winners.get(rec.id)
        if cur is not None:
            skipped += 1  # one of the two lines of this id loses
            if rec.revision < cur[1].revision:
                continue
        winners[rec.id] = (n, rec)
    ordered = sorted(winners.values(), key=lambda x: x[0])
    imported = 0
    for i in range(0, len(ordered), BATCH):
        batch = ordered[i:i + BATCH]
        applied, stale, batch_errors = _import_batch(org_id, bank, batch, actor)
        imported += applied
        skipped += stale
        errors.extend(batch_errors)
        if progress is not None:
            progress(len(batch))
    errors.sort(key=lambda e: e["line"])
    return {"imported": imported, "skipped": skipped, "errors": errors}


def _import_batch(org_id: str, bank: str, batch: list[tuple[int, Memory]],
                  actor: str) -> tuple[int, int, list[dict[str, Any]]]:
    """Apply one batch of ``(line number, record)`` winners in one transaction:
    ``(applied, skipped as not newer than stored, errors)``."""
    committed: dict[str, Any] = {}

    def attempt(tx):
        row = get_bank_row(org_id, bank)
        fresh = None if row is not None else new_bank(org_id, bank)
        inc = row.incarnation if row is not None else fresh.incarnation
        writes: list[Write] = []
        moves: list[tuple[str | None, str]] = []  # (previous fingerprint, new pointer to save) per write
        errs: list[dict[str, Any]] = []
        stale = 0
        claimed: set[str] = set()
        fps = [fingerprint(rec.text) for _n, rec in batch]
        # the batch's records and their text's pointers in one read (empty for a new bank)
        known = get_items(inc, [k for (_n, rec), fp in zip(batch, fps, strict=False)
                                for k in (rec.id, POINTER_PREFIX + fp)]) if row is not None else {}
        for (n, rec), fp in zip(batch, fps, strict=False):
            item = known.get(rec.id)
            prev, guard = current(item) if item is not None else (None, None)
            if prev is not None and guard is None and (rec.revision < prev.revision or
                                     (rec.revision == prev.revision and rec.updated_at <= prev.updated_at)):
                stale += 1
                continue
            ptr = known.get(POINTER_PREFIX + fp)
            if (ptr is not None and ptr.memory_id != rec.id) or fp in claimed:
                errs.append({"line": n, "error": "duplicate_text: another memory has this text"})
                continue
            claimed.add(fp)
            if guard is not None:  # a damaged stored record: the line replaces it, history kept
                rec = rec.model_copy(update={"revision": max(rec.revision, prev.revision + 1)})
            writes.append(Write(rec, prev, "import", fp, guard))
            old_fp = item.fp if item is not None and item.fp != fp else None
            if old_fp:  # release the old text's pointer only if it still points here
                old_ptr = get_item(inc, POINTER_PREFIX + old_fp)
                old_fp = old_fp if old_ptr is not None and old_ptr.memory_id == rec.id else None
            moves.append((old_fp, fp if ptr is None else ""))
        if not writes:
            return 0, stale, errs
        new_row, changes = stage(tx, org_id, bank, row, writes, actor, fresh=fresh)
        for w, (old_fp, new_fp) in zip(writes, moves, strict=False):
            if old_fp:
                tx.delete(MemoryModel(bank_key=inc, sk=POINTER_PREFIX + old_fp),
                          condition=MemoryModel.memory_id == w.record.id)
            if new_fp:
                tx.save(MemoryModel(bank_key=inc, sk=POINTER_PREFIX + new_fp, memory_id=w.record.id),
                        condition=MemoryModel.sk.does_not_exist())
        committed.update(row=new_row, changes=changes)
        return len(writes), stale, errs

    result = run_transaction(attempt)
    if committed:
        notify(org_id, bank, committed["row"], committed["changes"])
    return result


def import_ndjson(org_id: str, bank: str, body: bytes, *, actor: str) -> dict[str, Any]:
    """Import an inline ndjson body of at most 5 MB (413 ``payload_too_large`` beyond)."""
    if len(body) > MAX_INLINE_IMPORT_BYTES:
        raise PayloadTooLarge("Inline imports are limited to 5 MB; use import-uploads for larger files.")
    return import_lines(org_id, bank, body.splitlines(), actor=actor)


def create_upload(org_id: str, bank: str) -> dict[str, Any]:
    """A presigned PUT for a large import: ``{url, s3_key, expires_at}``. ``s3_key`` is relative
    to the org's prefix and is what ``POST import {s3_key}`` takes."""
    check_name(bank)
    settings = get_settings()
    rel = f"imports/{bank}/{uuid.uuid4().hex}.jsonl"
    return {"url": blobs.presign_put(blobs.org_key(org_id, rel), settings.presign_ttl_s),
            "s3_key": rel, "expires_at": now_ms() + settings.presign_ttl_s * 1000}


def import_upload(org_id: str, bank: str, s3_key: str, *, actor: str) -> dict[str, Any]:
    """Import a file uploaded with ``create_upload`` (it must be under ``imports/<bank>/``),
    streamed from S3 line by line; the object is deleted afterwards."""
    check_name(bank)
    if not s3_key.startswith(f"imports/{bank}/") or ".." in s3_key:
        raise BadRequest("s3_key must be one returned by import-uploads for this bank.", details={"field": "s3_key"})
    key = blobs.org_key(org_id, s3_key)
    data = blobs.get_bytes(key)
    if data is None:
        raise BadRequest("Nothing was uploaded at that s3_key.", details={"field": "s3_key"})
    result = import_lines(org_id, bank, data.splitlines(), actor=actor)
    blobs.delete(key)
    return result
