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

import contextlib
import dataclasses
import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, Field, StrictStr

from .. import audit, metrics
from ..banks import rules as bank_rules
from ..banks import service as bank_service
from ..banks.records import MAX_SESSION_ID, SaveRequest, normalize_handles
from ..clock import now_ms
from ..core.records import Memory, Source
from ..core.store import decoded, fingerprint_pointer, get_bank_row, get_item
from ..errors import NotFound, QuotaExceeded
from ..fingerprint import fingerprint
from ..names import check_name
from ..settings import get_settings
from ..storage import blobs
from ..storage.damage import Damaged
from ..storage.tables import bind
from ..team.dlp import holds_secret
from ..usage import extraction as usage_x
from ..validation import Model, text_problem
from . import store
from .models import Extractor, ModelUsage, get_extractor
from .parse import Candidate
from .store import Cursor, get_cursor, session_key
from .transcript import Window, clip_utf8, window

log = logging.getLogger("cairn.extraction")

MIN_ITEM_BYTES, MAX_ITEM_BYTES = 3, 500
MAX_RULE_LINES = 3
LEARNED_RULE = "learned"
RECENT_TURNS = 32  # turn ids kept on the cursor to recognise a redelivered turn
EXTRACTOR_AGENT = "cairn-extractor"
SYSTEM_ACTOR = "system:extraction"  # who writes what a job extracts (revisions, its audit event)

__all__ = ["Outcome", "TurnJob", "get_cursor", "make_job", "run_job", "session_key"]


def tuning():
    """The memory tuning (``chalicelib.tuning.get_tuning``): window, caps, switches."""
    from ..tuning import get_tuning
    return get_tuning()


class TurnJob(Model):
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
    token_id: str = ""  # the token that sent the turn (usage counts); "" before it was recorded
    exchange: bool = False  # messages are one exchange, not the session so far: read them whole


def make_job(org_id: str, bank: str, session_id: str, turn_id: str, messages: list[Any], *, actor: str,
             status: str | None = None, window_size: int, token_id: str = "", exchange: bool = False) -> TurnJob:
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
                   messages=kept, offset=offset, total=len(messages), enqueued_at=now_ms(), token_id=token_id,
                   exchange=exchange)


def queue_ids(job: TurnJob, again: str = "") -> tuple[str, str]:
    """``(MessageGroupId, MessageDeduplicationId)`` of ``job`` on the FIFO queue, SHA-256 hex each.
    The group is the org's session (its turns run in order); the deduplication id names the org,
    bank, session and turn (and ``again``, a resumed job's day), so identical ids of another org or
    bank are never taken for a duplicate: the queue drops a message whose id it saw in the last
    five minutes, whoever sent it."""
    return (blobs.fifo_id(job.org_id, job.session_id),
            blobs.fifo_id(job.org_id, job.bank, job.session_id, job.turn_id, again))


@dataclass
class Outcome:
    """What one job did: ``status`` (applied | duplicate | too_small | disabled | deferred),
    counts of memories ``saved`` (new), ``reinforced``, ``skipped`` (pinned, retired, over caps,
    out of bounds), ``rule_lines`` appended, and whether a model was called."""

    status: str
    saved: int = 0
    reinforced: int = 0
    skipped: int = 0
    rule_lines: int = 0
    model_called: bool = False
    memory_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int | str | bool]:
        """``{status, saved, reinforced, skipped, rule_lines, model_called}`` (the hook's
        ``outcome`` and the job's log line)."""
        return {"status": self.status, "saved": self.saved, "reinforced": self.reinforced, "skipped": self.skipped,
                "rule_lines": self.rule_lines, "model_called": self.model_called}


@dataclass(frozen=True)
class Enqueued:
    """``queued`` when the job went to the queue; else it ran inline with ``outcome``."""

    queued: bool
    outcome: Outcome | None = None


def enqueue(job: TurnJob) -> Enqueued:
    """Send ``job`` to the FIFO queue (``queue_ids``: one group per session of an org, one
    deduplication id per org, bank, session and turn); with no ``queue_url`` configured run it
    inline."""
    url = get_settings().queue_url
    if not url:
        return Enqueued(False, run_job(job))
    group, dedup = queue_ids(job)
    blobs.sqs().send_message(QueueUrl=url, MessageBody=job.model_dump_json(), MessageGroupId=group,
                             MessageDeduplicationId=dedup)
    return Enqueued(True)


# --- cursor ----------------------------------------------------------------------------------

def _advance(job: TurnJob, cursor: Cursor | None, end: int, last_id: str | None, attempts: int = 5) -> None:
    """Move the cursor to ``end`` and remember ``job.turn_id``; never backwards (a later turn's
    job that already ran keeps its position). The write is conditioned on the cursor read, so a
    concurrent job's move is merged, not lost (``attempts`` re-reads, then ``RuntimeError``)."""
    for _ in range(attempts):
        turns = list(cursor.turns) if cursor is not None else []
        if job.turn_id not in turns:
            turns = [*turns, job.turn_id][-RECENT_TURNS:]
        position, last = end, last_id
        if cursor is not None and cursor.position is not None and cursor.position > end:
            position, last = cursor.position, cursor.last_message_id
        if store.save_cursor(job.org_id, job.session_id, cursor, position=position, last_message_id=last,
                             turns=turns):
            return
        cursor = get_cursor(job.org_id, job.session_id)  # a concurrent job moved the cursor: re-read and merge
    raise RuntimeError("The extraction cursor kept moving under this job; it will be retried.")


def drop_cursor(org_id: str, session_id: str, *, actor: str) -> bool:
    """Forget how far a session was extracted (``session-deleted``): False when there was no
    cursor. Provenance rows stay, so ``forget_session`` still finds what the session taught.
    A dropped cursor is audited as ``extraction.reset`` (target the session id)."""
    dropped = store.drop_cursor(org_id, session_id)
    if dropped:
        audit.record(org_id, "extraction.reset", actor, session_id, {"session_id": session_id})
    return dropped


# --- applying ----------------------------------------------------------------------------------

def _in_bounds(text: str) -> bool:
    # a model may emit control characters or a lone surrogate: such an item is skipped, never a 400
    if text_problem(text) is not None:
        return False
    return MIN_ITEM_BYTES <= len(text.strip().encode("utf-8")) <= MAX_ITEM_BYTES


def _stored(org_id: str, bank: str, text: str) -> Memory | Damaged | None:
    """The memory of ``bank`` that ``text`` fingerprints to (live or retired), or None."""
    row = get_bank_row(org_id, bank)
    if row is None:
        return None
    memory_id = fingerprint_pointer(row.incarnation, fingerprint(text))
    item = get_item(row.incarnation, memory_id) if memory_id is not None else None
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


def _save(job: TurnJob, cand: Candidate) -> tuple[bool, Memory]:
    """Save one candidate through the bank's save (``banks.service.save_memory``): ``(created,
    the stored record)``. Entities and tags are cleaned by the API's normaliser, dropping what it
    would refuse (a job never fails on a model's handles)."""
    sid = job.session_id[:MAX_SESSION_ID]
    tags = normalize_handles(cand.tags + ([LEARNED_RULE] if cand.kind == "rule" else []), "tags", strict=False)
    req = SaveRequest(text=cand.text.strip(), entities=normalize_handles(cand.entities, "entities", strict=False),
                      tags=tags, session_id=sid, observed_at=job.enqueued_at or None)  # said when the turn was sent
    saved = bank_service.save_memory(job.org_id, job.bank, req, actor=SYSTEM_ACTOR, confidence=cand.confidence,
                                     source=Source(session_id=sid, agent=EXTRACTOR_AGENT), audited=False)
    if saved.memory is None:  # only an idempotent replay, which a job's save never is
        raise RuntimeError("The bank's save returned no memory.")
    return saved.created, saved.memory


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


def _window(job: TurnJob, cursor: Cursor | None, size: int) -> Window:
    """The window of ``job`` past the cursor (cursor positions are absolute, in the hook's list;
    the job holds ``messages[offset:]``); an exchange job's messages are all unread."""
    if job.exchange:
        return window(job.messages, position=None, last_id=None, size=size)
    position = max(0, cursor.position - job.offset) if cursor is not None and cursor.position is not None else None
    last_id = cursor.last_message_id if cursor is not None else None
    return window(job.messages, position=position, last_id=last_id, size=size)


def _apply(job: TurnJob, items: list[Candidate], out: Outcome) -> store.Progress:
    """Save each candidate not applied yet by an earlier attempt (``store.Progress``), counting
    into ``out``; pinned, retired and damaged memories are left alone (skipped). Returns the
    job's progress, to drop once the cursor moved."""
    progress = store.get_progress(job.org_id, job.session_id, job.turn_id)
    for cand in items:
        fp = fingerprint(cand.text)
        if store.done(progress, fp):
            continue
        if _left_alone(job.org_id, job.bank, cand.text):
            out.skipped += 1
            store.mark_applied(progress, fp)
            continue
        try:
            created, memory = _save(job, cand)
        except QuotaExceeded:  # the bank (or the org's banks) is full: the item is dropped, the job goes on
            out.skipped += 1
            continue
        if created:
            out.saved += 1
        else:
            out.reinforced += 1
        out.memory_ids.append(memory.id)
        if memory.source.session_id == job.session_id[:MAX_SESSION_ID]:
            store.record_provenance(job.org_id, job.session_id, job.bank, memory.id, job.turn_id)
        store.mark_applied(progress, fp)
    return progress


def _learn_rules(job: TurnJob, rules: list[Candidate]) -> int:
    """Append to the ``learned`` rule the stored text of each rule candidate saved as a live
    memory (never the model's or the conversation's raw text): the lines appended."""
    lines = []
    for cand in rules:
        rec = _stored(job.org_id, job.bank, cand.text)
        if isinstance(rec, Memory) and rec.live:
            lines.append(rec.text)
    return append_rule_lines(job.org_id, job.bank, lines) if lines else 0


def _apply_and_advance(job: TurnJob, cursor: Cursor | None, to: tuple[int, str | None], items: list[Candidate],
                       rules: list[Candidate], out: Outcome) -> store.Progress:
    """Apply ``items``, learn ``rules``, move the cursor ``to`` (position, last message id), then
    write the job's audit event; a job that fails after some memories or rule lines committed
    writes its event too, ``status: failed`` with what committed, and raises."""
    try:
        progress = _apply(job, items, out)
        out.rule_lines = _learn_rules(job, rules)
        _advance(job, cursor, *to)
    except Exception:
        if out.saved or out.reinforced or out.rule_lines:
            _audit_run(job, dataclasses.replace(out, status="failed"))
        raise
    _audit_run(job, out)
    return progress


def _audit_run(job: TurnJob, out: Outcome) -> None:
    """The job's one audit event, ``extraction.run``: actor ``SYSTEM_ACTOR``, target
    ``<bank>/<session>``, details the turn, who sent it (``on_behalf_of``) and the counts."""
    audit.record(job.org_id, "extraction.run", SYSTEM_ACTOR, f"{job.bank}/{job.session_id}",
                 {"bank": job.bank, "session_id": job.session_id, "turn_id": job.turn_id, "on_behalf_of": job.actor,
                  **out.as_dict()})


def _defer(job: TurnJob, sk: str, why: str) -> Outcome:
    """Park ``job`` (message kept, cursor untouched) until the next UTC day: its row in the
    session's partition and the session's pointer for ``resume_deferred``."""
    store.park(job.org_id, job.session_id, sk, job.model_dump_json())
    until = usage_x.next_day()
    usage_x.put_pointer(job.org_id, session_key(job.org_id, job.session_id), until)
    metrics.emit("extraction", {"ExtractionDeferred": 1}, {"reason": why})
    return Outcome("deferred")


def _run(job: TurnJob, extractor: Extractor | None) -> Outcome:
    """The job, in the session's turn order: while an earlier turn of the session is parked (the
    org spent its extraction tokens of the day), this one is parked behind it, so the cursor never
    moves past a turn that has not run. A parked job that runs to the end drops its row."""
    check_name(job.bank)
    bind()
    cursor = get_cursor(job.org_id, job.session_id)
    mine = store.parked_sk(job.total, job.enqueued_at, job.turn_id)
    if cursor is not None and job.turn_id in cursor.turns:
        out = Outcome("duplicate")  # maybe a parked copy of an applied turn: its row goes below
    else:
        waiting = [sk for sk, _ in store.parked(job.org_id, job.session_id)]
        if waiting and waiting[0] != mine:
            return _defer(job, mine, "behind")
        out = _extract(job, cursor, extractor, mine)
        if out.status == "deferred" or mine not in waiting:
            return out
    with contextlib.suppress(Exception):  # a leftover row runs again tomorrow and ends "duplicate"
        store.unpark(job.org_id, job.session_id, mine)
    return out


def _extract(job: TurnJob, cursor: Cursor | None, extractor: Extractor | None, sk: str) -> Outcome:
    tune = tuning()
    if not tune.extraction_enabled:
        return Outcome("disabled")
    w = _window(job, cursor, tune.extraction_window)
    end = job.offset + w.end
    if w.too_small:
        _advance(job, cursor, end, w.last_id)
        _audit_run(job, out := Outcome("too_small"))
        return out
    extractor = extractor or get_extractor()
    model_called = extractor.name != "offline"
    if model_called and usage_x.over_quota(job.org_id)[0]:
        return _defer(job, sk, "quota")
    candidates: list[Candidate] = extractor.extract(w)
    usage: ModelUsage | None = getattr(extractor, "last_usage", None)
    if model_called:  # the call cost what it cost even if the job fails later
        usage_x.record(job.org_id, job.bank, job.token_id, usage.model if usage else extractor.name,
                       usage.input_tokens if usage else 0, usage.output_tokens if usage else 0)
    out = Outcome("applied", model_called=model_called)
    memories = [c for c in candidates if c.kind == "memory"]
    rule_lines = [c for c in candidates if c.kind == "rule"] if tune.rule_learning_enabled else []
    kept = [c for c in memories if _usable(c.text)][: tune.max_memories_per_turn]
    rules = [c for c in rule_lines if _usable(c.text)][:MAX_RULE_LINES]
    out.skipped += len(memories) - len(kept) + len(rule_lines) - len(rules)
    progress = _apply_and_advance(job, cursor, (end, w.last_id), kept + rules, rules, out)
    with contextlib.suppress(Exception):  # a leftover job# row expires by TTL; the cursor already moved
        store.drop_progress(progress)
    log.info(json.dumps({"msg": "extraction", "session_key_sha": hashlib.sha256(
        session_key(job.org_id, job.session_id).encode()).hexdigest()[:16], **out.as_dict()}))
    return out


# --- deferred jobs ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Resumed:
    """What ``resume_deferred`` did: ``sessions`` whose pointer was due, ``jobs`` run (inline) or
    sent to the queue again, and ``still_deferred`` (jobs parked again: the org is over its quota
    of the new day too, or a job failed and waits for the next day)."""

    sessions: int
    jobs: int
    still_deferred: int


def resume_deferred() -> Resumed:
    """Run again, in turn order, the jobs of every session whose pointer's day has come (the
    scheduled job, every 10 minutes). With a queue, each job is sent back to its session's FIFO
    group (so one runs after the other); without one, they run here, stopping at the first that
    is deferred again or fails. A session whose jobs are not all done keeps a pointer for the next
    day; one with none left loses it."""
    sessions = jobs = left = 0
    url = get_settings().queue_url
    for ptr in usage_x.due_pointers():
        sessions += 1
        org_id, session_id = ptr.org_id, ptr.session_key.partition("#")[2]
        for sk, raw in store.parked(org_id, session_id):
            try:
                job = TurnJob.model_validate_json(raw)
            except ValueError:
                log.error(json.dumps({"msg": "extraction_parked_unreadable"}))
                store.unpark(org_id, session_id, sk)  # unreadable: it would block its session forever
                continue
            jobs += 1
            if url:
                group, dedup = queue_ids(job, again=f"resumed#{ptr.day}")
                blobs.sqs().send_message(QueueUrl=url, MessageBody=raw, MessageGroupId=group,
                                         MessageDeduplicationId=dedup)
                continue
            try:
                if run_job(job).status == "deferred":
                    break
            except Exception as exc:  # noqa: BLE001 - the job stays parked; its session waits for the next day
                log.error(json.dumps({"msg": "extraction_resume_failed", "error": type(exc).__name__}))
                break
        remaining = len(store.parked(org_id, session_id))
        left += remaining if not url else 0
        if remaining and ptr.day != usage_x.next_day():
            usage_x.put_pointer(org_id, ptr.session_key, usage_x.next_day())
        if ptr.day != usage_x.next_day():
            usage_x.drop_pointer(ptr)
    return Resumed(sessions, jobs, left)


# --- forget-session ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Forgotten:
    """What ``forget_session`` did: the memories ``retired`` or ``purged`` (their ids)."""

    session_id: str
    retired: int
    purged: int
    memory_ids: list[str]


def forget_session(org_id: str, bank: str, session_id: str, *, purge: bool, actor: str) -> Forgotten:
    """Retire (tombstone) or, with ``purge``, erase every memory ``session_id`` taught in
    ``bank``. Found through the session's provenance rows (a key query). Memories already
    retired count as retired; pinned ones are retired too (the admin asked for this session's
    teachings to go). Raises 404 ``bank_not_found``. Audited as one ``session.forget`` event with
    the counts (also when it stops half-way), not one per memory; safe to re-run."""
    bank_service.require_bank(org_id, bank)
    retired = purged = 0
    done = []
    try:
        for memory_id in store.taught(org_id, session_id, bank):
            try:
                if purge:
                    bank_service.purge_memory(org_id, bank, memory_id, actor=actor, audited=False)
                    purged += 1
                else:
                    bank_service.delete_memory(org_id, bank, memory_id, actor=actor, audited=False)
                    retired += 1
                done.append(memory_id)
            except NotFound:
                continue
    finally:
        audit.record(org_id, "session.forget", actor, f"{bank}/{session_id}",
                     {"bank": bank, "purge": purge, "count": len(done), "retired": retired, "purged": purged})
    return Forgotten(session_id, retired, purged, done)
