"""One extraction job: a finished turn's transcript in, memories and rule lines out. Domain
code: no Chalice, no SQS handler shape (``chalicelib.events.extraction`` feeds this from the
queue; ``chalicelib.api.hooks`` enqueues it).

Whatever the extractor (a model or the offline rules), an item holding a credential (the team DLP
scan's ``holds_secret``) or breaking the input rules is skipped, never saved. A rule item is saved
as a memory (tagged ``learned``) first, and the bank's ``learned`` rule gets the stored text of
that live memory: the rule is built from extracted memories, never from raw conversation text.

``run_job`` is idempotent: a turn id already applied is a no-op, the memories a failed attempt
already applied are recorded on a ``job#<turn>`` row so its retry does not reinforce them twice,
and the session's cursor advances only after every memory and rule line committed. A reply that
does not parse fails the job with the cursor where it was (the queue retries it, then its
dead-letter queue keeps it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr
from pynamodb.exceptions import DoesNotExist, PutError

from .. import audit, metrics
from ..banks import rules as bank_rules
from ..banks import service as bank_service
from ..banks.records import MAX_HANDLE_CHARS, MAX_HANDLES, SaveRequest
from ..clock import now_ms
from ..core.records import Memory, Source
from ..core.store import POINTER_PREFIX, decoded, get_bank_row, get_item
from ..errors import NotFound
from ..fingerprint import fingerprint
from ..names import check_name
from ..settings import get_settings
from ..storage import blobs
from ..storage.damage import Damaged
from ..storage.tables import ExtractionModel, bind
from ..team.dlp import holds_secret
from ..validation import line_problem, text_problem
from .models import Extractor, get_extractor
from .parse import Candidate
from .transcript import clip_utf8, window

log = logging.getLogger("cairn.extraction")

MIN_ITEM_BYTES, MAX_ITEM_BYTES = 3, 500
MAX_RULE_LINES = 3
LEARNED_RULE = "learned"
RECENT_TURNS = 32  # turn ids kept on the cursor to recognise a redelivered turn
JOB_ROW_TTL_S = 14 * 24 * 3600  # a job# row outlives the queue's retention (4 days) and its DLQ's (14)
EXTRACTOR_AGENT = "cairn-extractor"


def tuning():
    """The memory tuning (``chalicelib.tuning.get_tuning``): window, caps, switches."""
    from ..tuning import get_tuning
    return get_tuning()


class TurnJob(BaseModel):
    """The durable job one turn-completed hook enqueues (the SQS message body, JSON).

    ``messages`` are the last ``extraction_window`` messages of the hook (each clipped), and
    ``offset`` is the index of the first of them in the hook's list, so cursor positions stay
    absolute; ``total`` is the hook's message count."""

    model_config = ConfigDict(extra="forbid")
    v: int = 1
    org_id: StrictStr
    bank: StrictStr
    session_id: StrictStr
    turn_id: StrictStr
    status: str | None = None
    actor: StrictStr
    messages: list[dict[str, Any]] = Field(default_factory=list)
    offset: int = Field(0, ge=0)
    total: int = Field(0, ge=0)
    enqueued_at: int = 0


def make_job(org_id: str, bank: str, session_id: str, turn_id: str, messages: list[Any], *, actor: str,
             status: str | None = None, window_size: int) -> TurnJob:
    """A ``TurnJob`` keeping only what a window can reach: the last ``window_size`` messages,
    each reduced to ``{role, content, id?}`` with its text clipped to 2000 UTF-8 bytes."""
    from .transcript import message_text
    keep = max(1, window_size)
    offset = max(0, len(messages) - keep)
    kept = []
    for m in messages[offset:]:
        if not isinstance(m, dict):
            kept.append({"role": "other", "content": ""})
            continue
        slim: dict[str, Any] = {"role": str(m.get("role", "")), "content": clip_utf8(message_text(m))}
        if isinstance(m.get("id"), str):
            slim["id"] = m["id"]
        kept.append(slim)
    return TurnJob(org_id=org_id, bank=bank, session_id=session_id, turn_id=turn_id, status=status, actor=actor,
                   messages=kept, offset=offset, total=len(messages), enqueued_at=now_ms())


def session_key(org_id: str, session_id: str) -> str:
    """The extraction table's hash key of one session."""
    return f"{org_id}#{session_id}"


def _short(value: str, limit: int = 128) -> str:
    """An SQS id (group, deduplication): the value when it fits, else its SHA-256 hex."""
    ok = len(value) <= limit and all(33 <= ord(c) <= 126 for c in value)
    return value if ok else hashlib.sha256(value.encode("utf-8")).hexdigest()


def enqueue(job: TurnJob) -> dict[str, Any]:
    """Send ``job`` to the FIFO queue (MessageGroupId = session id, MessageDeduplicationId =
    turn id; the queue deduplicates per group) and return ``{queued: true}``; with no
    ``queue_url`` configured run it inline and return ``{queued: false, outcome}``."""
    url = get_settings().queue_url
    if not url:
        outcome = run_job(job)
        return {"queued": False, "outcome": outcome.as_dict()}
    blobs.sqs().send_message(QueueUrl=url, MessageBody=job.model_dump_json(),
                             MessageGroupId=_short(job.session_id), MessageDeduplicationId=_short(job.turn_id))
    return {"queued": True}


@dataclass
class Outcome:
    """What one job did: ``status`` (applied | duplicate | too_small | disabled),
    counts of memories ``saved`` (new), ``reinforced``, ``skipped`` (pinned, retired, over caps,
    out of bounds), ``rule_lines`` appended, and whether a model was called."""

    status: str
    saved: int = 0
    reinforced: int = 0
    skipped: int = 0
    rule_lines: int = 0
    model_called: bool = False
    memory_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "saved": self.saved, "reinforced": self.reinforced, "skipped": self.skipped,
                "rule_lines": self.rule_lines, "model_called": self.model_called}


# --- cursor ----------------------------------------------------------------------------------

def get_cursor(org_id: str, session_id: str) -> ExtractionModel | None:
    """The session's cursor row (consistent read), or ``None``."""
    bind()
    try:
        return ExtractionModel.get(session_key(org_id, session_id), "cursor", consistent_read=True)
    except DoesNotExist:
        return None


def _advance(job: TurnJob, cursor: ExtractionModel | None, end: int, last_id: str | None, attempts: int = 5) -> None:
    """Move the cursor to ``end`` and remember ``job.turn_id``; never backwards (a later turn's
    job that already ran keeps its position). The write is conditioned on the cursor read, so a
    concurrent job's move is merged, not lost (``attempts`` re-reads, then ``PutError``)."""
    turns = list(cursor.turns or []) if cursor is not None else []
    if job.turn_id not in turns:
        turns = (turns + [job.turn_id])[-RECENT_TURNS:]
    row = ExtractionModel(session_key=session_key(job.org_id, job.session_id), sk="cursor", org_id=job.org_id,
                          session_id=job.session_id, position=end, last_message_id=last_id, turns=turns,
                          updated_at=now_ms())
    if cursor is not None and cursor.position is not None and int(cursor.position) > end:
        row.position, row.last_message_id = int(cursor.position), cursor.last_message_id
    try:
        if cursor is None:
            row.save(condition=ExtractionModel.sk.does_not_exist())
        else:
            read = cursor.updated_at
            row.save(condition=(ExtractionModel.updated_at == read) if isinstance(read, (int, float))
                     else ExtractionModel.sk.exists())  # a damaged cursor is overwritten
    except PutError:
        if attempts <= 1:
            raise
        # a concurrent job moved the cursor: re-read and merge
        _advance(job, get_cursor(job.org_id, job.session_id), end, last_id, attempts - 1)


def drop_cursor(org_id: str, session_id: str) -> dict[str, Any]:
    """Forget how far a session was extracted (``session-deleted``): ``{dropped: bool}``.
    Provenance rows stay, so ``forget_session`` still finds what the session taught."""
    cursor = get_cursor(org_id, session_id)
    if cursor is None:
        return {"dropped": False}
    cursor.delete()
    return {"dropped": True}


# --- applying ----------------------------------------------------------------------------------

def _in_bounds(text: str) -> bool:
    # a model may emit control characters or a lone surrogate: such an item is skipped, never a 400
    if text_problem(text) is not None:
        return False
    return MIN_ITEM_BYTES <= len(text.strip().encode("utf-8")) <= MAX_ITEM_BYTES


def _handles(values: list[str]) -> list[str]:
    """Entities/tags a model produced, cut to what a memory accepts (never a 400 for a job)."""
    out: list[str] = []
    for v in values:
        v = v.strip().lower()
        if v and len(v) <= MAX_HANDLE_CHARS and v not in out and line_problem(v) is None:
            out.append(v)
    return out[:MAX_HANDLES]


def _stored(org_id: str, bank: str, text: str) -> Memory | Damaged | None:
    """The memory of ``bank`` that ``text`` fingerprints to (live or retired), or None."""
    row = get_bank_row(org_id, bank)
    if row is None:
        return None
    pointer = get_item(row.incarnation, POINTER_PREFIX + fingerprint(text))
    if pointer is None:
        return None
    item = get_item(row.incarnation, pointer.memory_id)
    return decoded(item) if item is not None else None


def _left_alone(org_id: str, bank: str, text: str) -> bool:
    """True when ``text`` is a pinned, retired or damaged memory of ``bank``: extraction never
    touches those (a retired one would otherwise be resurrected by a save)."""
    rec = _stored(org_id, bank, text)
    if rec is None:
        return False
    return isinstance(rec, Damaged) or rec.pinned or not rec.live  # a damaged record waits for a person


def _usable(text: str) -> bool:
    """An item may be saved: within bounds and holding no secret (the same scan as team DLP, so
    no extractor, model or offline, can save a credential that would be injected every turn)."""
    return _in_bounds(text) and not holds_secret(text)


def _job_row(job: TurnJob) -> ExtractionModel:
    try:
        return ExtractionModel.get(session_key(job.org_id, job.session_id), f"job#{job.turn_id}", consistent_read=True)
    except DoesNotExist:
        return ExtractionModel(session_key=session_key(job.org_id, job.session_id), sk=f"job#{job.turn_id}",
                               org_id=job.org_id, session_id=job.session_id, turn_id=job.turn_id, applied=None,
                               updated_at=now_ms(), expires_at=int(time.time()) + JOB_ROW_TTL_S)


def _mark_applied(row: ExtractionModel, fp: str) -> None:
    if row.applied is None:
        row.applied = set()
    row.applied.add(fp)
    row.update(actions=[ExtractionModel.applied.add({fp}), ExtractionModel.updated_at.set(now_ms()),
                        ExtractionModel.org_id.set(row.org_id), ExtractionModel.session_id.set(row.session_id),
                        ExtractionModel.turn_id.set(row.turn_id), ExtractionModel.expires_at.set(row.expires_at)])


def _record_provenance(job: TurnJob, memory_id: str) -> None:
    ExtractionModel(session_key=session_key(job.org_id, job.session_id), sk=f"mem#{job.bank}#{memory_id}",
                    org_id=job.org_id, session_id=job.session_id, bank=job.bank, memory_id=memory_id,
                    turn_id=job.turn_id, updated_at=now_ms()).save()


def _line_text(line: str) -> str:
    return line.strip().lstrip("-*").strip()


def append_rule_lines(org_id: str, bank: str, lines: list[str]) -> int:
    """Append ``lines`` as ``- <line>`` to the bank's ``learned`` rule, skipping any whose
    fingerprint (normalized text) a line of the rule already has; the rule's current content,
    hand edits included, is kept as is. Returns how many lines were appended."""
    key = bank_rules.rule_key(org_id, bank, LEARNED_RULE)
    current = (blobs.get_bytes(key) or b"").decode("utf-8", errors="replace")
    seen = {fingerprint(_line_text(ln)) for ln in current.splitlines() if _line_text(ln)}
    added = []
    for line in lines:
        fp = fingerprint(line)
        if fp in seen:
            continue
        seen.add(fp)
        added.append(f"- {line.strip()}")
    if not added:
        return 0
    body = current if not current or current.endswith("\n") else current + "\n"
    bank_rules.set_rule(org_id, bank, LEARNED_RULE, body + "\n".join(added) + "\n")
    return len(added)


def run_job(job: TurnJob, extractor: Extractor | None = None) -> Outcome:
    """Run one extraction job (see the module doc); returns its ``Outcome``.

    Raises ``ExtractionParseError`` (unparseable model reply) or the model backend's error; the
    cursor is then unchanged. Emits one ``extraction`` metric line per run.
    """
    started = time.perf_counter()
    extractor_name = getattr(extractor, "name", None)
    try:
        outcome = _run(job, extractor)
    except Exception as exc:
        metrics.emit("extraction", {"ExtractionFailed": 1, "ExtractionMs": (time.perf_counter() - started) * 1000},
                     {"outcome": "failed", "error": type(exc).__name__, "extractor": extractor_name or "?"})
        raise
    metrics.emit("extraction", {"ExtractionSaved": outcome.saved, "ExtractionReinforced": outcome.reinforced,
                                "ExtractionSkipped": outcome.skipped, "ExtractionRuleLines": outcome.rule_lines,
                                "ExtractionMs": (time.perf_counter() - started) * 1000},
                 {"outcome": outcome.status, "model_called": outcome.model_called})
    return outcome


def _run(job: TurnJob, extractor: Extractor | None) -> Outcome:
    check_name(job.bank)
    bind()
    tune = tuning()
    cursor = get_cursor(job.org_id, job.session_id)
    if cursor is not None and job.turn_id in (cursor.turns or []):
        return Outcome("duplicate")
    if not tune.extraction_enabled:
        return Outcome("disabled")
    # cursor positions are absolute (the hook's list); the job holds messages[offset:]
    position = int(cursor.position) - job.offset if cursor is not None and cursor.position is not None else None
    if position is not None and position < 0:
        position = 0
    last_id = cursor.last_message_id if cursor is not None else None
    w = window(job.messages, position=position, last_id=last_id, size=tune.extraction_window)
    end = job.offset + w.end
    if w.too_small:
        _advance(job, cursor, end, w.last_id)
        return Outcome("too_small")
    extractor = extractor or get_extractor()
    candidates: list[Candidate] = extractor.extract(w)
    out = Outcome("applied", model_called=extractor.name != "offline")
    memories = [c for c in candidates if c.kind == "memory"]
    rule_lines = [c for c in candidates if c.kind == "rule"] if tune.rule_learning_enabled else []
    kept = [c for c in memories if _usable(c.text)][: tune.max_memories_per_turn]
    rules = [c for c in rule_lines if _usable(c.text)][:MAX_RULE_LINES]
    out.skipped += len(memories) - len(kept) + len(rule_lines) - len(rules)
    progress = _job_row(job)
    for cand in kept + rules:
        fp = fingerprint(cand.text)
        if fp in (progress.applied or set()):
            continue
        if _left_alone(job.org_id, job.bank, cand.text):
            out.skipped += 1
            _mark_applied(progress, fp)
            continue
        tags = _handles(cand.tags) + ([LEARNED_RULE] if cand.kind == "rule" else [])
        req = SaveRequest(text=cand.text.strip(), entities=_handles(cand.entities), tags=tags[:MAX_HANDLES],
                          session_id=job.session_id[:256])
        saved = bank_service.save_memory(
            job.org_id, job.bank, req, actor=job.actor, confidence=cand.confidence,
            source=Source(session_id=job.session_id[:256], agent=EXTRACTOR_AGENT))
        memory = saved.memory.public() if saved.memory is not None else {}
        if saved.created:
            out.saved += 1
        else:
            out.reinforced += 1
        out.memory_ids.append(memory["id"])
        if memory.get("source", {}).get("session_id") == job.session_id[:256]:
            _record_provenance(job, memory["id"])
        _mark_applied(progress, fp)
    # The learned rule is built from what was saved as memories, never from the model's or the
    # conversation's raw text: a line is the stored text of a live memory.
    lines = []
    for cand in rules:
        rec = _stored(job.org_id, job.bank, cand.text)
        if isinstance(rec, Memory) and rec.live:
            lines.append(rec.text)
    if lines:
        out.rule_lines = append_rule_lines(job.org_id, job.bank, lines)
    _advance(job, cursor, end, w.last_id)
    try:
        progress.delete()
    except Exception:  # noqa: BLE001 - a leftover job# row expires by TTL; the cursor already moved
        pass
    log.info(json.dumps({"msg": "extraction", "session_key_sha": hashlib.sha256(
        session_key(job.org_id, job.session_id).encode()).hexdigest()[:16], **out.as_dict()}))
    return out


# --- forget-session ----------------------------------------------------------------------------

def forget_session(org_id: str, bank: str, session_id: str, *, purge: bool, actor: str) -> dict[str, Any]:
    """Retire (tombstone) or, with ``purge``, erase every memory ``session_id`` taught in
    ``bank``: ``{session_id, retired, purged, memory_ids}``. Found through the session's
    provenance rows (a key query). Memories already retired count as retired; pinned ones are
    retired too (the admin asked for this session's teachings to go). Raises 404
    ``bank_not_found``. Audited as ``session.forget``; safe to re-run."""
    bank_service.require_bank(org_id, bank)
    bind()
    ids = [r.memory_id for r in ExtractionModel.query(session_key(org_id, session_id),
                                                      ExtractionModel.sk.startswith(f"mem#{bank}#"),
                                                      consistent_read=True) if r.memory_id]
    retired = purged = 0
    done = []
    for memory_id in ids:
        try:
            if purge:
                bank_service.purge_memory(org_id, bank, memory_id, actor=actor)
                purged += 1
            else:
                bank_service.delete_memory(org_id, bank, memory_id, actor=actor)
                retired += 1
            done.append(memory_id)
        except NotFound:
            continue
    audit.record(org_id, "session.forget", actor, f"{bank}/{session_id}",
                 {"bank": bank, "purge": purge, "count": len(done)})
    return {"session_id": session_id, "retired": retired, "purged": purged, "memory_ids": done}
