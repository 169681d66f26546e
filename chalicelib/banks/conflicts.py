"""Write-time related memories and conflict links: the lookup a save makes before its transaction
(``detect``) and what the transaction stages for it (``link_writes``, ``unlink_writes``).

A conflict link is the ``conflicts_with`` list of both memories (each names the other), written
in the transaction that saves the later one; a retiring memory (supersede, forget) leaves every
partner's list in its own transaction. With the bank's ``on_conflict: supersede`` the earlier
memory of a detected conflict is retired instead (``superseded_by`` the later, its history's
``why`` naming the detection and the setting), except a pinned one and one said after the memory
being written (``core.records.stated_at``), which are linked.
Duplicates are reported, never linked.

A save into a bank whose index this container does not hold answers ``related_checked: false``
at once (no snapshot load on the write's path) and, when it created the memory, defers the check
(``defer``): a ``RelatedJob`` on the extraction queue, one message group per bank, so a bank's
deferred checks run one at a time, in order, where the index is loaded anyway (the queue's
worker, ``banks.service.check_deferred``), and store what the save would have.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, StrictStr

from .. import semantic, timing
from ..clock import now_ms
from ..core.records import Memory, RelatedMemory, stated_at
from ..core.store import BankRow, Write, decoded, get_item, query_memories_page
from ..fingerprint import FINGERPRINT_RE
from ..names import NAME_RE
from ..settings import get_settings
from ..storage import blobs
from ..validation import MAX_SAFE_INT, Line, Millis, Model
from . import related

MAX_LINKS = 64  # conflict links one memory keeps (``Memory.conflicts_with``)


@dataclass
class Detection:
    """What a write found: ``found`` (memory, verdict) best first, at most ``related.MAX_RELATED``;
    ``checked``: False when nothing was looked up; ``cold``: because the bank's index is not held
    in this container (a save defers the check), ``inc`` then naming the bank incarnation read."""

    found: list[tuple[Memory, related.Verdict]] = field(default_factory=list)
    checked: bool = True
    cold: bool = False
    inc: str = ""


def detect(org_id: str, bank: str, text: str, handles: list[str], *, exclude: str | None = None,
           thresholds: related.Thresholds = related.DEFAULT, load: bool = False,
           before: int | None = None) -> Detection:
    """The live memories of ``bank`` that ``text`` (with entity ``handles``) duplicates or
    contradicts (``banks.related``), the memory ``exclude`` (the one the text lands on) left out.
    One consistent read of the bank, and its index only when this container holds it
    (``search.neighbours``; ``load``: loaded as a recall does, for a deferred check). ``before``
    (ms since epoch): only memories created at or before it count (the bank as a save found it)."""
    with timing.phase("related"):
        return _detect(org_id, bank, text, handles, exclude, thresholds, load, before)


def _detect(org_id: str, bank: str, text: str, handles: list[str], exclude: str | None,
            thresholds: related.Thresholds, load: bool, before: int | None) -> Detection:
    from ..search.neighbours import neighbours  # search imports the banks area, not the reverse
    from ..search.recall import read_rows
    head = read_rows(org_id, [bank]).get(bank)
    if head is None or head.memories == 0:
        return Detection()
    vector = semantic.embed_documents([text])[0] if semantic.covered(text) and semantic.available() else None
    near = neighbours(org_id, bank, head, text, vector, handles, exclude=exclude, load=load)
    if near is None:
        return Detection(checked=False, cold=True, inc=head.incarnation)
    hs = frozenset(handles)
    later = related.statement(text, hs)
    by_id = {n.memory.id: n.memory for n in near
             if n.memory.text != text and (before is None or n.memory.created_at <= before)}
    cands = [related.Candidate(n.memory.id, related.statement(n.memory.text, frozenset(n.memory.entities)),
                               frozenset(n.memory.entities), n.similarity)
             for n in near if n.memory.id in by_id]
    return Detection([(by_id[mid], v) for mid, v in related.relate(later, hs, cands, thresholds)])


Action = Literal["linked", "superseded", "none"]


def answer(detection: Detection, actions: dict[str, Action]) -> list[RelatedMemory]:
    """The ``related`` of a write's result: each found memory with what the write did about it."""
    return [RelatedMemory(id=m.id, relation=v.relation, score=round(v.score, 4), why=v.why, text=m.text,
                          action=actions.get(m.id, "none")) for m, v in detection.found]


def link_writes(row: BankRow, rec: Memory, detection: Detection, on_conflict: str, *,
                when: str = "on its save") -> tuple[Memory, list[Write], dict[str, Action]]:
    """What saving the new memory ``rec`` stages for the conflicts ``detection`` found, each
    partner read again (still live: its revision is the write's condition): ``(rec with its
    links, the partners' writes, {id: action})``. ``on_conflict``: ``flag`` links both,
    ``supersede`` retires the partner (linked instead when pinned, or said after ``rec``: an
    ``observed_at`` earlier than its statement); a partner already linked to ``rec`` is not
    written again. ``when``: how the histories' ``why`` says when it was detected."""
    writes: list[Write] = []
    actions: dict[str, Action] = {}
    links: list[str] = list(rec.conflicts_with or [])
    now = now_ms()
    for found, verdict in detection.found:
        if verdict.relation != "conflict" or not FINGERPRINT_RE.fullmatch(found.id):
            continue
        item = get_item(row.incarnation, found.id)
        old = decoded(item) if item is not None else None
        if item is None or not isinstance(old, Memory) or not old.live or old.id == rec.id:
            continue  # gone, retired, or damaged at rest (no write may take a damaged partner's record)
        if on_conflict == "supersede" and not old.pinned and stated_at(old) <= stated_at(rec):
            new = old.model_copy(update={"invalid_at": now, "superseded_by": rec.id, "conflicts_with": None,
                                         "revision": old.revision + 1, "updated_at": now})
            writes.append(Write(new, old, "supersede", item.fp,
                                why=f"superseded by {rec.id}: a conflict detected {when} "
                                    f"(on_conflict: supersede): {verdict.why}"))
            written = {rec.id, *(w.record.id for w in writes)}
            writes += unlink_writes(row, old, frozenset(written))  # its other links go with it
            actions[old.id] = "superseded"
            links = [x for x in links if x != old.id]
            continue
        if rec.id not in (old.conflicts_with or []):
            theirs = [*(old.conflicts_with or [])[: MAX_LINKS - 1], rec.id]
            new = old.model_copy(update={"conflicts_with": theirs, "revision": old.revision + 1})
            writes.append(Write(new, old, "link", item.fp,
                                why=f"conflicts with {rec.id}, detected {when}: {verdict.why}"))
        links = [x for x in links if x != old.id] + [old.id]
        actions[old.id] = "linked"
    if links != (rec.conflicts_with or []):
        rec = rec.model_copy(update={"conflicts_with": links[-MAX_LINKS:] or None})
    return rec, writes, actions


def unlink_writes(row: BankRow, rec: Memory, skip: frozenset[str] = frozenset()) -> list[Write]:
    """The writes that drop the retiring ``rec`` from each live partner's ``conflicts_with`` (the
    memories of ``skip`` are written by the same change already)."""
    out = []
    for pid in rec.conflicts_with or []:
        if pid in skip or pid == rec.id or not FINGERPRINT_RE.fullmatch(pid):
            continue
        item = get_item(row.incarnation, pid)
        other = decoded(item) if item is not None else None
        if item is None or not isinstance(other, Memory) or not other.live \
                or rec.id not in (other.conflicts_with or []):
            continue  # a damaged partner keeps its list until it is replaced
        left = [x for x in other.conflicts_with or [] if x != rec.id] or None
        out.append(Write(other.model_copy(update={"conflicts_with": left, "revision": other.revision + 1}),
                         other, "unlink", item.fp,
                         why=f"{rec.id} retired: its conflict link is cleared"))
    return out


RELATED_KIND: Literal["related"] = "related"  # a queue message's ``kind``: a deferred check, not an extraction job


def _fingerprint(value: str) -> str:
    if not FINGERPRINT_RE.fullmatch(value):
        raise ValueError("not a memory id: 'fp' and 16 lowercase hex digits")
    return value


def _bank_name(value: str) -> str:
    if not NAME_RE.fullmatch(value):
        raise ValueError("not a bank name")
    return value


class RelatedJob(Model):
    """A deferred related check (an SQS message body, JSON): memory ``memory_id`` of bank
    ``bank`` (incarnation ``inc``) as a save created it (revision ``revision``, its text's
    fingerprint ``fp``) at ``saved_at`` (ms since epoch), by ``actor`` (written into the
    history and audit trail). Validated as any input (strict; a queue body can be garbled or
    crafted): a body that is not one of these is refused before anything is read."""

    model_config = ConfigDict(extra="forbid", strict=True)
    kind: Literal["related"] = RELATED_KIND
    v: Literal[1] = 1
    org_id: Annotated[Line, Field(min_length=1, max_length=128)]
    bank: Annotated[StrictStr, AfterValidator(_bank_name)]
    inc: Annotated[Line, Field(min_length=1, max_length=128)]
    memory_id: Annotated[StrictStr, AfterValidator(_fingerprint)]
    fp: Annotated[StrictStr, AfterValidator(_fingerprint)]
    revision: int = Field(ge=0, le=MAX_SAFE_INT)
    saved_at: Millis
    actor: Annotated[Line, Field(min_length=1, max_length=256)]


def defer(job: RelatedJob) -> bool:
    """Send ``job`` to the extraction queue: one message group per bank (its checks run one at a
    time, in order), one deduplication id per memory revision (a retried save sends it once).
    Returns False, sending nothing, when no queue is configured: the check is not deferred."""
    url = get_settings().queue_url
    if not url:
        return False
    blobs.sqs().send_message(QueueUrl=url, MessageBody=job.model_dump_json(),
                             MessageGroupId=blobs.fifo_id(RELATED_KIND, job.org_id, job.bank),
                             MessageDeduplicationId=blobs.fifo_id(RELATED_KIND, job.org_id, job.bank, job.inc,
                                                                  job.memory_id, str(job.revision)))
    return True


@dataclass(frozen=True)
class OpenConflict:
    """A live memory and the live memories it conflicts with that were said before it
    (``core.records.stated_at``: observed, created or last reinforced)."""

    memory: Memory
    earlier: list[Memory]


CONFLICTS_PAGE_MAX = 100


def open_conflicts(inc: str, *, limit: int, start: dict[str, str] | None,
                   ) -> tuple[list[OpenConflict], dict[str, str] | None]:
    """A page of the open conflicts of bank incarnation ``inc``, newest first: each live memory
    with a link to an earlier live one (so a pair is listed once, under its later side), and
    the stored keys to continue after (``None``: the last page). Reads the bank's live records
    up to ``limit`` matches (``core.store.query_memories_page``) and each partner by id."""
    found: dict[str, list[Memory]] = {}

    def earlier(rec: Memory) -> bool:
        partners = [p for pid in rec.conflicts_with or [] if FINGERPRINT_RE.fullmatch(pid)
                    and (item := get_item(inc, pid)) is not None
                    and isinstance(p := decoded(item), Memory) and p.live]  # a damaged one is left out
        found[rec.id] = [p for p in partners if stated_at(p) < stated_at(rec)
                         or (stated_at(p) == stated_at(rec) and p.id < rec.id)]
        return bool(found[rec.id])

    recs, last = query_memories_page(inc, start=start, limit=limit, max_page=CONFLICTS_PAGE_MAX, live_only=True,
                                     tag=None, keep=lambda m: bool(m.conflicts_with) and earlier(m))
    return [OpenConflict(r, found[r.id]) for r in recs if isinstance(r, Memory)], last
