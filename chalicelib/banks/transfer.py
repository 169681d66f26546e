"""Export and import of a bank's memories as ``memories.jsonl``.

Export: current records (tombstoned included), or every revision with ``history=True``, inline up
to ``export_inline_bytes`` (API Gateway caps a response at 6 MB) else a presigned S3 URL under
``exports/``. Import: one record per line; a missing id is computed from the text; replay is
last-wins by id (higher revision wins, a later line wins ties; a line older than the stored
record is skipped); bad lines are reported by line number (from 1) and skipped, never
half-applied; purged tombstones carry no content and are skipped. Writes go in transactions of
up to ``BATCH`` records grouped by write lane (at most ``BATCH_LANES`` lanes each), each taking a
range of its lanes' positions, so the recall index sees them in commit order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import ConfigDict, Field, ValidationError

from .. import audit
from ..clock import now_ms
from ..core import store
from ..core.ndjson import check_inline_size, check_upload_size, lines_of, parse_line
from ..core.records import Memory, RelatedMemory
from ..core.store import BankTx, Write, current, get_items, iter_records
from ..errors import BadRequest, PayloadTooLarge, QuotaExceeded
from ..fingerprint import FINGERPRINT_RE, fingerprint
from ..names import check_name
from ..settings import get_settings
from ..storage import blobs
from ..storage.damage import Damaged
from ..storage.txn import TransactionTooLarge
from ..validation import Line, Millis, Model
from . import conflicts
from .records import check_observed_at, check_text, normalize_handles
from .service import require_bank

# DynamoDB allows 100 items per transaction. Per record at most 4 items (the record, its revision,
# and two pointer moves or one pointer check), plus at most BATCH_LANES lane rows, the org's bank
# count (a batch creating the bank), and the usage meter's counter item
# (chalicelib.usage.meter): 23 x 4 + 4 + 1 + 1 = 98. Under a memory quota a batch also holds every
# other lane (core.store.lane_batches makes it smaller for that: RECORD_ITEMS per record).
BATCH = 23
BATCH_LANES = 4
RECORD_ITEMS = 4


class ImportUploadRequest(Model):
    """``{s3_key}`` naming a file uploaded through ``import-uploads``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    s3_key: str = Field(min_length=1, max_length=512)


@dataclass
class Export:
    """An export: ``data`` (the file) when it fits inline, else a presigned ``url`` valid until
    ``expires_at`` (ms); ``damaged`` counts the records exported as damaged-marker lines."""

    damaged: int
    data: bytes | None = None
    url: str | None = None
    expires_at: int | None = None


@dataclass(frozen=True)
class LineError:
    """A line of an import that was not applied: its number (from 1), why, and the stable
    ``code`` of why (``validation_error``, ``duplicate_text``, ``memory_retired``,
    ``quota_exceeded``)."""

    line: int
    error: str
    code: str = "validation_error"


def _coded(n: int, code: str, message: str) -> LineError:
    """Line ``n``'s error of ``code``, its message led by the code."""
    return LineError(n, f"{code}: {message}", code)


_DUPLICATE_TEXT = "another memory has this text"


@dataclass
class ImportResult:
    """``imported`` lines applied, ``skipped`` lines (beaten, stale or content-free), ``errors``
    by line number."""

    imported: int = 0
    skipped: int = 0
    errors: list[LineError] = field(default_factory=list)
    related: list[LineRelated] = field(default_factory=list)
    related_checked: bool = True


@dataclass(frozen=True)
class LineRelated:
    """A line whose memory duplicates or contradicts live memories the bank held before the
    import (``banks.conflicts.detect``): its number and what was found (reported, not linked)."""

    line: int
    related: list[RelatedMemory]


IMPORT_RELATED_MAX = 50  # lines of one import checked for related memories (each is an index look-up)


@dataclass(frozen=True)
class Upload:
    """A presigned PUT ``url`` for a large import, valid until ``expires_at`` (ms); ``s3_key`` is
    relative to the org's prefix and is what ``import_upload`` takes."""

    url: str
    s3_key: str
    expires_at: int


def _jsonl(rec: Memory | Damaged, **extra: Any) -> bytes:
    """One export line: the record as clients see it (a damaged one as its marker) plus ``extra``."""
    line = {**(rec.marker() if isinstance(rec, Damaged) else rec.public()), **extra}
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def export_bank(org_id: str, bank: str, *, history: bool = False) -> Export:
    """The bank's ``memories.jsonl``: current records (tombstoned included), or with ``history``
    every revision (with its ``op`` and ``seq``) in commit-time order. A record that cannot be
    read is exported as the line ``{id, damaged: true, reason}`` (an import reports that line as bad). Raises 404."""
    row = require_bank(org_id, bank)
    damaged = 0
    lines = []
    if history:
        for seq, op, r in store.history_in_time_order(row.incarnation):
            damaged += isinstance(r, Damaged)
            lines.append(_jsonl(r, op=op, seq=seq))
    else:
        for m in iter_records(row.incarnation):
            damaged += isinstance(m, Damaged)
            lines.append(_jsonl(m))
    data = b"".join(lines)
    settings = get_settings()
    if len(data) <= settings.export_inline_bytes:
        return Export(damaged=damaged, data=data)
    key = store.export_key(org_id, bank)
    blobs.put_bytes(key, data, "application/x-ndjson", expiring=True)
    ttl = min(settings.presign_ttl_s, blobs.EXPIRING_DAYS * 86400)  # never outlives the object
    return Export(damaged=damaged, url=blobs.presign_get(key, ttl), expires_at=now_ms() + ttl * 1000)


class _Line(Model):
    """An import line: an exported record (``Memory``'s fields, and ``op``/``seq`` on a history
    export). Any other field is refused (``_unknown``): a save's ``supersedes`` or ``revive`` on
    a line would otherwise pass silently and do nothing. Types are strict, as a save's body's:
    ``"pinned": "yes"`` or ``"revision": "2"`` is a bad line, not a guess."""

    model_config = ConfigDict(extra="allow", strict=True)
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
    observed_at: Millis | None = None


class _Parsed(NamedTuple):
    """A line's record and whether the line says when it was written (``created_at`` or
    ``updated_at``): a line that does not is never newer than a stored record of its id."""

    rec: Memory
    dated: bool


EXPORTED_FIELDS = frozenset(Memory.model_fields) | {"op", "seq"}  # a record's fields; a history line's too


def _unknown(line: _Line) -> list[str]:
    """The fields of ``line`` that no exported record has, sorted."""
    return sorted(k for k in (line.model_extra or {}) if k not in EXPORTED_FIELDS)


def _parse_line(raw: bytes, now: int) -> _Parsed | None:
    """One line as a record (``now``, ms: its times when it has none); ``None`` for a purged
    tombstone (content-free: nothing to import). Raises ``ValueError`` with a message for a bad line
    (one with a field no exported record has included)."""
    line = parse_line(raw, _Line)
    if unknown := _unknown(line):
        raise ValueError(f"unknown field(s) {', '.join(unknown)[:200]}: an import line is an exported "
                         "record (supersedes and revive are a save's, not an import's)")
    if line.purged_at is not None:
        return None
    try:
        text = check_text(line.text)
        entities = normalize_handles(line.entities, "entities")
        tags = normalize_handles(line.tags, "tags")
        observed = check_observed_at(line.observed_at, now)
    except BadRequest as exc:
        raise ValueError(exc.message) from None
    mid = line.id or fingerprint(text)
    if not FINGERPRINT_RE.fullmatch(mid):
        raise ValueError("id must be 'fp' followed by 16 lowercase hex digits")
    created = line.created_at if line.created_at is not None else (line.updated_at or now)
    updated = line.updated_at if line.updated_at is not None else created
    try:
        return _Parsed(Memory.model_validate({
            "id": mid, "text": text, "entities": entities, "tags": tags, "confidence": line.confidence,
            "corroboration": line.corroboration, "pinned": line.pinned, "source": line.source,
            "created_at": created, "updated_at": updated, "invalid_at": line.invalid_at,
            "superseded_by": line.superseded_by, "revision": line.revision, "observed_at": observed}),
            line.created_at is not None or line.updated_at is not None)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}") from None


class _Winner(NamedTuple):
    """An id's winning line so far, kept small (a parsed record costs kilobytes: a file of short
    lines held as records took 800 MB for 32 MB): its number, the record's id, revision and text
    fingerprint, and the line itself, parsed again when its batch is written."""

    n: int
    id: str
    revision: int
    fp: str
    raw: bytes


def _winners(lines: Iterable[bytes], out: ImportResult, now: int) -> list[_Winner]:
    """The winning line of each id, in line order; bad lines go to ``out.errors``, beaten lines
    and purged tombstones to ``out.skipped``."""
    winners: dict[str, _Winner] = {}
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            parsed = _parse_line(raw, now)
        except ValueError as exc:
            out.errors.append(LineError(n, str(exc)))
            continue
        if parsed is None:
            out.skipped += 1
            continue
        rec = parsed.rec
        cur = winners.get(rec.id)
        if cur is not None:
            out.skipped += 1  # one of the two lines of this id loses
            if rec.revision < cur.revision:
                continue
        winners[rec.id] = _Winner(n, rec.id, rec.revision, fingerprint(rec.text), raw)
    return sorted(winners.values(), key=lambda w: w.n)


def import_lines(org_id: str, bank: str, lines: Iterable[bytes], *, actor: str,
                 progress: Callable[[int], Any] | None = None) -> ImportResult:
    """Import ndjson ``lines`` into ``bank`` (created on first use).

    Per id the winning line (highest revision, then the later line) is applied when it is newer than the
    stored record (``_is_stale``: a line stating no time is not newer at the same revision). A line
    with a field no exported record has is an error. Every valid line is counted once: ``imported``
    (a winner applied), ``skipped`` (beaten by another line of its id, not newer than the stored
    record, or a purged tombstone, which carries no content) or in ``errors`` (a bad line, a winner
    whose text is another memory's: ``duplicate_text``, a live line not newer than the retired
    memory of its id: ``memory_retired``, or, once the bank's memory quota is reached after some
    batches committed, every line not applied: ``quota_exceeded``; when the first batch already
    passes the quota, 429 ``quota_exceeded`` is raised and nothing is written). Blank lines count as
    nothing. ``progress``, when given, is called with the number of records each batch handled. The
    import is one audit event, ``bank.import`` with its counts, written after its last batch (and
    when it stops with some batches committed): a bulk write spans many transactions.
    """
    check_name(bank)
    out = ImportResult()
    now = now_ms()
    ordered = _first_text_wins(_winners(lines, out, now), out)
    _related_lines(org_id, bank, ordered, out, now)
    batches = store.lane_batches(org_id, bank, ordered, lambda w: w.id, size=BATCH, max_lanes=BATCH_LANES,
                                 record_items=RECORD_ITEMS)
    try:
        _apply_batches(org_id, bank, batches, actor, out, progress, now)
    finally:  # one event for the whole import, also when it stopped after some batches committed
        if out.imported:
            audit.record(org_id, "bank.import", actor, bank, {"bank": bank, "imported": out.imported,
                                                              "skipped": out.skipped, "errors": len(out.errors)})
    out.errors.sort(key=lambda e: e.line)
    return out


def _related_lines(org_id: str, bank: str, ordered: list[_Winner], out: ImportResult, now: int) -> None:
    """Into ``out.related``: the related memories of the first ``IMPORT_RELATED_MAX`` live lines,
    against the bank as it stood before the import (``out.related_checked`` False when its index
    was not loadable here, or when lines past the cap went unchecked)."""
    checked = 0
    for w in ordered:
        parsed = _parse_line(w.raw, now)
        rec = parsed.rec if parsed is not None else None
        if rec is None or not rec.live or not rec.text:
            continue
        if checked == IMPORT_RELATED_MAX:
            out.related_checked = False
            return
        checked += 1
        found = conflicts.detect(org_id, bank, rec.text, rec.entities, exclude=rec.id)
        if not found.checked:
            out.related_checked = False
            return
        if found.found:
            out.related.append(LineRelated(w.n, conflicts.answer(found, {})))


def _apply_batches(org_id: str, bank: str, batches: list[list[_Winner]], actor: str, out: ImportResult,
                   progress: Callable[[int], Any] | None, now: int) -> None:
    """Write ``batches`` in order, counting into ``out`` (see ``import_lines``)."""
    for i, batch in enumerate(batches):
        try:
            applied = _write_batch(org_id, bank, batch, actor, now)
        except QuotaExceeded as exc:
            if i == 0:
                raise  # nothing written yet: the whole import is refused (429)
            # earlier batches committed: the lines left over are reported, not half-refused
            out.errors.extend(_coded(w.n, "quota_exceeded", exc.message) for b in batches[i:] for w in b)
            break
        out.imported += applied.imported
        out.skipped += applied.skipped
        out.errors.extend(applied.errors)
        if progress is not None:
            progress(len(batch))


def _first_text_wins(ordered: list[_Winner], out: ImportResult) -> list[_Winner]:
    """``ordered`` without the winners whose text an earlier line's winner of another id has
    (each an error in ``out``): batches go lane by lane, so the file's order decides here."""
    first: dict[str, str] = {}
    kept = []
    for w in ordered:
        if first.setdefault(w.fp, w.id) != w.id:
            out.errors.append(_coded(w.n, "duplicate_text", _DUPLICATE_TEXT))
        else:
            kept.append(w)
    return kept


def _write_batch(org_id: str, bank: str, batch: list[_Winner], actor: str, now: int) -> ImportResult:
    records = [(w.n, p) for w in batch if (p := _parse_line(w.raw, now)) is not None]

    def attempt(btx: BankTx) -> ImportResult:
        return _import_batch(btx, bank, records, actor)

    try:
        return store.write(org_id, attempt)
    except TransactionTooLarge:  # many distinct tags: their counters did not fit; two halves do
        if len(batch) < 2:
            raise
        half = len(batch) // 2
        first = _write_batch(org_id, bank, batch[:half], actor, now)
        try:
            second = _write_batch(org_id, bank, batch[half:], actor, now)
        except QuotaExceeded as exc:  # the first half committed: the rest is reported, never refused
            second = ImportResult(errors=[_coded(w.n, "quota_exceeded", exc.message) for w in batch[half:]])
        return ImportResult(first.imported + second.imported, first.skipped + second.skipped,
                            first.errors + second.errors)


@dataclass
class _Batch:
    """What one import transaction stages: the writes and, per write, ``(previous fingerprint
    whose pointer to release, new fingerprint to point, fingerprint whose pointer must still name
    the record)`` (empty strings for none)."""

    writes: list[Write] = field(default_factory=list)
    moves: list[tuple[str, str, str]] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)
    result: ImportResult = field(default_factory=ImportResult)


def _is_stale(line: _Parsed, prev: Memory | None, guard: Any) -> bool:
    """Whether the stored ``prev`` (readable: no ``guard``) is as new as or newer than the line's
    record: a lower revision, or the same one and not a later ``updated_at``; a line without times
    is not newer at the same revision (re-importing bare texts changes nothing)."""
    rec = line.rec
    return prev is not None and guard is None and (rec.revision < prev.revision or (
        rec.revision == prev.revision and (not line.dated or rec.updated_at <= prev.updated_at)))


def _plan(plan: _Batch, inc: str, known: dict[str, Any], n: int, line: _Parsed, fp: str) -> None:
    """Add line ``n``'s record to ``plan``: skipped when stale (an error ``memory_retired`` when
    the line is live and the stored record retired), an error when its text is another memory's,
    else a write and its pointer move."""
    rec = line.rec
    item = known.get(rec.id)
    prev, guard = current(item) if item is not None else (None, None)
    if _is_stale(line, prev, guard):
        if prev is not None and rec.live and not prev.live:  # a live line of a retired memory: never a revival
            plan.result.errors.append(_coded(n, "memory_retired", f"memory '{prev.id}' has this text and is "
                                             "retired; an import never revives: save the text with "
                                             "revive: true to bring it back"))
        else:
            plan.result.skipped += 1
        return
    ptr = known.get(store.pointer_key(fp))
    if (ptr is not None and ptr.memory_id != rec.id) or fp in plan.claimed:
        plan.result.errors.append(_coded(n, "duplicate_text", _DUPLICATE_TEXT))
        return
    plan.claimed.add(fp)
    if guard is not None and prev is not None:  # a damaged stored record: the line replaces it, history kept
        rec = rec.model_copy(update={"revision": max(rec.revision, prev.revision + 1)})
    plan.writes.append(Write(rec, prev, "import", fp, guard))
    old_fp = item.fp if item is not None and item.fp != fp else None
    if old_fp:  # release the old text's pointer only if it still points here
        old_ptr = store.get_pointer(inc, old_fp)
        old_fp = old_fp if old_ptr is not None and old_ptr.memory_id == rec.id else None
    plan.moves.append((old_fp or "", fp if ptr is None else "", fp if ptr is not None else ""))


def _import_batch(btx: BankTx, bank: str, batch: list[tuple[int, _Parsed]], actor: str) -> ImportResult:
    """Stage one batch of ``(line number, parsed line)`` winners: ``imported`` applied, ``skipped``
    as not newer than stored, ``errors``."""
    row, fresh = btx.row_or_new(bank)
    inc = fresh.incarnation
    fps = [fingerprint(p.rec.text) for _n, p in batch]
    # the batch's records and their text's pointers in one read (empty for a new bank)
    known = get_items(inc, [k for (_n, p), fp in zip(batch, fps, strict=True)
                            for k in (p.rec.id, store.pointer_key(fp))]) if row is not None else {}
    plan = _Batch()
    for (n, p), fp in zip(batch, fps, strict=True):
        _plan(plan, inc, known, n, p, fp)
    if not plan.writes:
        return plan.result
    btx.stage(bank, row, plan.writes, actor, fresh=fresh)
    for w, (old_fp, new_fp, held_fp) in zip(plan.writes, plan.moves, strict=True):
        if old_fp:
            btx.drop_pointer(inc, old_fp, w.record.id)
        if new_fp:
            btx.put_pointer(inc, new_fp, w.record.id)
        if held_fp:  # the text's pointer already names the record: it must still when this commits
            btx.check_pointer(inc, held_fp, w.record.id)
    plan.result.imported = len(plan.writes)
    return plan.result


def import_ndjson(org_id: str, bank: str, body: bytes, *, actor: str) -> ImportResult:
    """Import an inline ndjson body of at most ``Settings.import_inline_bytes`` (413
    ``payload_too_large`` beyond)."""
    check_inline_size(body, "; use import-uploads for larger files")
    return import_lines(org_id, bank, lines_of([body]), actor=actor)


def create_upload(org_id: str, bank: str) -> Upload:
    """A presigned PUT for a large import."""
    check_name(bank)
    settings = get_settings()
    rel = store.upload_key(bank)
    return Upload(url=blobs.presign_put(store.upload_object(org_id, rel), settings.presign_ttl_s), s3_key=rel,
                  expires_at=now_ms() + settings.presign_ttl_s * 1000)


def import_upload(org_id: str, bank: str, s3_key: str, *, actor: str) -> ImportResult:
    """Import a file uploaded with ``create_upload`` (it must be under its bank's upload prefix),
    streamed from S3 line by line; the object is deleted afterwards. Raises 400
    ``validation_error`` (``s3_key``) for another key or nothing uploaded, 413
    ``payload_too_large`` for a file over ``Settings.import_upload_max_bytes`` (its size is read
    first, with a HEAD; the file is deleted unread and nothing is imported)."""
    check_name(bank)
    if not s3_key.startswith(store.upload_prefix(bank)) or ".." in s3_key:
        raise BadRequest("s3_key must be one returned by import-uploads for this bank.", details={"field": "s3_key"})
    key = store.upload_object(org_id, s3_key)
    size = blobs.size_of(key)
    if size is None:
        raise BadRequest("Nothing was uploaded at that s3_key.", details={"field": "s3_key"})
    try:
        check_upload_size(size)
    except PayloadTooLarge:
        blobs.delete(key)  # it can never be imported
        raise
    lines = lines_of(blobs.iter_chunks(key), max_bytes=get_settings().import_upload_max_bytes)
    result = import_lines(org_id, bank, lines, actor=actor)
    blobs.delete(key)
    return result
