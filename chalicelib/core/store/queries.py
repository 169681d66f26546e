"""Queries of records: current items, decoded records (a damaged one salvaged or reported), pointers,
tag and vector counters, pages of memories, a memory's history and revisions, a lane's revisions
past a position, the backfill cursor.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pynamodb.exceptions import DoesNotExist

from ...clock import now_ms
from ...storage.damage import Damaged
from ...storage.tables import MemoryModel, RevisionModel, bind
from ..records import Memory, decode_memory, salvage_memory
from .keys import BACKFILL_KEY, INTERNAL_OPS, NAME_POINTER_PREFIX, POINTER_PREFIX, TAG_PREFIX, pointer_key, tag_key
from .lanes import LANE_SPAN, _count, get_bank_head


def get_item(inc: str, sk: str) -> MemoryModel | None:
    try:
        return MemoryModel.get(inc, sk, consistent_read=True)
    except DoesNotExist:
        return None


def get_items(inc: str, sks: Iterable[str]) -> dict[str, MemoryModel]:
    """The items of ``sks`` in one bank incarnation that exist, by sort key: consistent
    BatchGetItem calls of up to 100 keys (pynamodb retries unprocessed keys), instead of one
    GetItem each."""
    keys = [(inc, sk) for sk in dict.fromkeys(sks)]
    if not keys:
        return {}
    bind()
    return {it.sk: it for it in MemoryModel.batch_get(keys, consistent_read=True)}


REPAIR_HINT = "Delete or purge it, or save or import it again, to replace it."


def record_of(item: MemoryModel) -> Memory:
    """The memory record of a ``memories`` item (``core.records.decode_memory``); raises
    ``Damaged`` (409 ``damaged``) when it cannot be decoded, rendered or indexed."""
    if "record" in item.damaged:
        raise Damaged("memory", item.sk, f"record: {item.damaged['record']}", hint=REPAIR_HINT)
    rec = decode_memory(item.record, key=item.sk, hint=REPAIR_HINT, scrubbed=True)
    rec.set_vector_blob(_blob(item.vec))
    return rec


def _blob(value: Any) -> bytes | None:
    """A stored ``vec`` attribute as bytes, or ``None`` (absent, or not binary)."""
    return bytes(value) if isinstance(value, (bytes, bytearray)) else None


def decoded(item: MemoryModel) -> Memory | Damaged:
    """``record_of(item)``, or the ``Damaged`` it raised (for readers that skip with a marker)."""
    try:
        return record_of(item)
    except Damaged as exc:
        return exc


def current(item: MemoryModel) -> tuple[Memory, Any]:
    """``(record, guard)`` for a write that replaces ``item``'s record: the decoded record and
    ``None`` (the default condition), or, when it is damaged, a salvaged record
    (``core.records.salvage_memory``) and the condition to commit on (``guard_of``) to pass as
    ``Write.guard``."""
    try:
        return record_of(item), None
    except Damaged:
        return salvage_memory(item.record, key=item.sk, now=now_ms()), guard_of(item)


def guard_of(item: MemoryModel) -> Any:
    """The condition a write that replaces ``item`` commits on: its stored ``revision`` (as read,
    even a damaged value), or, when that does not decode, the item still being there."""
    if "revision" not in item.damaged or isinstance(item.revision, (int, float)):
        return MemoryModel.revision == item.revision
    return MemoryModel.sk.exists()


def tag_total(inc: str, lanes: int, tag: str, *, live_only: bool) -> int:
    """How many records of a bank incarnation carry ``tag`` (live ones only, or all), summed over
    its lanes' tag counters (one consistent BatchGetItem)."""
    items = get_items(inc, [tag_key(lane, tag) for lane in range(lanes)]).values()
    return sum(max(0, int((it.t_live if live_only else it.t_all) or 0)) for it in items)


def live_tag_totals(inc: str) -> dict[str, int]:
    """``{tag: live records carrying it}`` from a bank incarnation's tag counters (one key query
    of its counter items, never of its records); tags no live record carries left out."""
    out: dict[str, int] = {}
    for it in MemoryModel.query(inc, MemoryModel.sk.startswith(TAG_PREFIX), consistent_read=True):
        tag = it.sk[len(TAG_PREFIX):].partition("/")[2]
        out[tag] = out.get(tag, 0) + int(it.t_live or 0)
    return {t: n for t, n in out.items() if n > 0}


def vector_coverage(org_id: str, bank: str) -> tuple[int, int] | None:
    """``(memories with a current-model vector, live memories)`` of a live bank from its counters
    (two consistent reads, no scan), or ``None`` when the bank does not exist. A memory written
    before vectors were stored counts as live without one until it is written again."""
    head = get_bank_head(org_id, bank)
    return None if head is None else (max(0, head.vectors), head.memories)


@dataclass(frozen=True)
class BackfillCursor:
    """A bank incarnation's backfill progress: ``after`` the last memory id the running pass
    examined (``None``: the next run starts a pass at the first id), ``left`` the live memories
    that pass found without a vector the model can give (not covered, or damaged), ``model`` the
    model the last finished pass embedded for, and ``version`` (0: none stored), which the next
    advance is conditioned on."""

    after: str | None = None
    left: int = 0
    model: str | None = None
    version: int = 0


def get_backfill_cursor(inc: str) -> BackfillCursor:
    """The backfill cursor of incarnation ``inc`` (consistent), or a fresh one."""
    it = get_item(inc, BACKFILL_KEY)
    if it is None:
        return BackfillCursor()
    return BackfillCursor(it.memory_id if isinstance(it.memory_id, str) else None, _count(it.bf_left),
                          it.bf_model if isinstance(it.bf_model, str) else None, _count(it.revision))


def memory_items_after(inc: str, after: str | None, limit: int) -> list[MemoryModel]:
    """Up to ``limit`` memory items of incarnation ``inc`` in id order, from the first or strictly
    after the id ``after`` (one consistent key query; pointer, counter and cursor items, keyed from
    ``~``, are outside it)."""
    bind()
    cond = MemoryModel.sk < "~" if after is None else MemoryModel.sk.between(after, "~")
    out: list[MemoryModel] = []
    for it in MemoryModel.query(inc, cond, consistent_read=True, page_size=min(limit + 1, 500)):
        if it.sk == after or it.sk >= "~" or it.record is None:
            continue
        out.append(it)
        if len(out) >= limit:
            break
    return out


def get_pointer(inc: str, fp: str) -> MemoryModel | None:
    """The pointer item of ``fp`` (its ``memory_id``), or ``None``."""
    return get_item(inc, pointer_key(fp))


def _memory_filter(live_only: bool, tag: str | None) -> Any:
    cond: Any = MemoryModel.live == True if live_only else None  # noqa: E712 - a pynamodb condition, not a comparison
    if tag:
        tc = MemoryModel.tags.contains(tag)
        cond = tc if cond is None else cond & tc
    return cond


def query_memories_page(inc: str, *, start: Mapping[str, Any] | None, limit: int, max_page: int,
                        live_only: bool, tag: str | None, text: str | None = None,
                        keep: Callable[[Memory], bool] | None = None,
                        ) -> tuple[list[Memory | Damaged], dict[str, str] | None]:
    """Up to ``limit`` memory records of an incarnation newest first (the ``by_order`` index),
    after the stored keys ``start`` (``{sk, ord}`` of the previous page's last item): ``(records,
    next)`` where a damaged record is its ``Damaged`` and ``next`` is the last item's ``{sk,
    ord}`` when more follow, else ``None``. ``max_page``: the largest DynamoDB page to ask for.
    ``text`` (casefolded): only memories whose text contains it (the text may live in S3, so
    it is matched here, after decoding; a damaged record is kept); ``keep``: only the records it
    accepts (after decoding too)."""
    cond = _memory_filter(live_only, tag)
    last_key = None
    if start is not None:
        last_key = {"bank_key": {"S": inc}, "sk": {"S": start["sk"]}, "ord": {"S": start["ord"]}}
    items = MemoryModel.by_order.query(inc, filter_condition=cond, last_evaluated_key=last_key, consistent_read=True,
                                       page_size=min(limit + 1, max_page)
                                       if cond is None and not text and keep is None else None)
    out: list[Memory | Damaged] = []
    last = None
    for it in items:
        if len(out) == limit:
            # the cursor is the last item's stored keys: a damaged record has no order_key() to offer
            return out, ({"sk": last.sk, "ord": last.ord} if last is not None else None)
        rec = decoded(it)
        if text and isinstance(rec, Memory) and text not in rec.text.casefold():
            continue
        if keep is not None and (not isinstance(rec, Memory) or not keep(rec)):
            continue
        last = it
        out.append(rec)
    return out, None


def count_memories(inc: str, *, live_only: bool, tag: str | None) -> int:
    """How many memory records of an incarnation match the filter (a counting query; for a bank
    made before tag counters were kept: ``tag_total`` otherwise)."""
    cond = _memory_filter(live_only, tag)
    return int(MemoryModel.by_order.count(inc, filter_condition=cond, consistent_read=True))


def live_tag_counts(inc: str) -> dict[str, int]:
    """``{tag: number of live memories carrying it}`` over an incarnation, counted from its records
    (a bank made before tag counters were kept: ``live_tag_totals`` otherwise)."""
    counts: dict[str, int] = {}
    for it in MemoryModel.by_order.query(inc, filter_condition=_memory_filter(True, None), consistent_read=True,
                                         attributes_to_get=["tags"]):
        for t in it.tags or ():
            counts[t] = counts.get(t, 0) + 1
    return counts


def _memory_revision_rows(inc: str, memory_id: str) -> Iterable[RevisionModel]:
    return RevisionModel.by_memory.query(inc, RevisionModel.rev_key.startswith(f"{memory_id}#"), consistent_read=True)


def iter_memory_revisions(inc: str, memory_id: str) -> Iterable[tuple[int, str, Memory | Damaged]]:
    """``(seq, op, record)`` of every revision of one memory, oldest first; a damaged revision's
    record is its ``Damaged``."""
    for seq, op, rec, _actor, _why in iter_memory_history(inc, memory_id):
        yield seq, op, rec


def iter_memory_history(inc: str, memory_id: str) -> Iterable[tuple[int, str, Memory | Damaged, str | None,
                                                                    str | None]]:
    """``(seq, op, record, actor, why)`` of every revision of one memory, oldest first: ``actor``
    is who wrote it (``None`` for a revision written before revisions named their actor), ``why``
    the reason a change kept (``Write.why``), else ``None``; the revisions of ``INTERNAL_OPS`` (no
    change of the memory) left out."""
    for rev in _memory_revision_rows(inc, memory_id):
        if rev.op in INTERNAL_OPS:
            continue
        actor = rev.actor if isinstance(rev.actor, str) and "actor" not in rev.damaged else None
        why = rev.why if isinstance(rev.why, str) and "why" not in rev.damaged else None
        yield int(rev.seq), rev.op, revision_record(rev), actor, why


@dataclass(frozen=True)
class Revision:
    """One revision of a memory: its record, the op that wrote it, its bank ``seq`` and who wrote
    it (the audit actor, e.g. ``person:alice`` or ``system:extraction``; ``None`` for revisions
    written before revisions named their author); ``why``: the reason a change made on another
    call's behalf keeps (``superseded by <id> on its save``), else ``None``."""

    record: Memory
    op: str
    seq: int
    actor: str | None = None
    why: str | None = None


@dataclass
class History:
    """Every readable revision of one memory, oldest first, and ``{id, seq, reason}`` of each
    revision that cannot be read."""

    revisions: list[Revision]
    damaged: list[dict[str, Any]] = field(default_factory=list)


def memory_history(inc: str, memory_id: str) -> History:
    """Every revision of one memory of incarnation ``inc`` (a bank memory or a structured one),
    oldest first; a revision that cannot be read is listed in ``damaged`` as ``{id, seq, reason}``
    instead."""
    out = History(revisions=[])
    for seq, op, r, actor, why in iter_memory_history(inc, memory_id):
        if isinstance(r, Damaged):
            out.damaged.append({**r.entry(), "seq": seq})
        else:
            out.revisions.append(Revision(record=r, op=op, seq=seq, actor=actor, why=why))
    return out


def delete_memory_revisions(inc: str, memory_id: str) -> int:
    """Delete every revision of one memory (a purge: no stored key or value keeps its id);
    returns how many. A reader whose index has not applied them sees a gap and rebuilds."""
    n = 0
    for rev in _memory_revision_rows(inc, memory_id):
        rev.delete()
        n += 1
    return n


def referrers(inc: str, memory_id: str) -> list[tuple[MemoryModel, Memory]]:
    """``(item, record)`` of every memory of an incarnation superseded by ``memory_id`` (a read
    of the partition, its records matched server-side: a purge only)."""
    bind()
    out = []
    for it in MemoryModel.query(inc, filter_condition=MemoryModel.record.contains(memory_id), consistent_read=True):
        rec = decoded(it)
        if isinstance(rec, Memory) and rec.superseded_by == memory_id:
            out.append((it, rec))
    return out


def relink(item: MemoryModel, rec: Memory, superseded_by: str) -> None:
    """Point the memory ``item`` (record ``rec``) at ``superseded_by`` in place, with no new
    revision, unless it changed since it was read (a purge's leftovers; a lost race is left to
    the purge's next run)."""
    with contextlib.suppress(Exception):
        item.update(actions=[MemoryModel.record.set(rec.model_copy(update={"superseded_by": superseded_by})
                                                     .model_dump(mode="json"))],
                    condition=MemoryModel.revision == item.revision)


def relink_revisions(inc: str, memory_id: str, old: str, new: str) -> None:
    """In every revision of ``memory_id`` whose record is superseded by ``old``, name ``new``
    instead (a purge: the purged memory's id leaves the history of the memories it superseded)."""
    for rev in _memory_revision_rows(inc, memory_id):
        r = revision_record(rev)
        if isinstance(r, Memory) and r.superseded_by == old:
            rev.update(actions=[RevisionModel.record.set(r.model_copy(update={"superseded_by": new})
                                                          .model_dump(mode="json"))])


def iter_records(inc: str) -> Iterable[Memory | Damaged]:
    """Every memory record of a bank incarnation, newest first (export); a damaged one as its
    ``Damaged``."""
    bind()
    for it in MemoryModel.by_order.query(inc, consistent_read=True):
        yield decoded(it)


def revision_record(rev: RevisionModel) -> Memory | Damaged:
    """The record a revision holds, or its ``Damaged`` (kind ``revision``, id = the memory's)."""
    mid = rev.memory_id if isinstance(rev.memory_id, str) and rev.memory_id else str(rev.rev_key).split("#")[0]
    if "record" in rev.damaged:
        return Damaged("revision", mid, f"record: {rev.damaged['record']}")
    try:
        rec = decode_memory(rev.record, key=mid, kind="revision", scrubbed=True)
    except Damaged as exc:
        return exc
    rec.set_vector_blob(_blob(rev.vec))
    return rec


def get_revision_record(inc: str, seq: int) -> Memory | Damaged | None:
    """The record revision ``seq`` of an incarnation holds (its ``Damaged`` when it cannot be
    read), or ``None`` when there is no such revision."""
    bind()
    try:
        return revision_record(RevisionModel.get(inc, seq, consistent_read=True))
    except DoesNotExist:
        return None


def iter_revisions(inc: str, after_seq: int = 0, *, changes_only: bool = False
                   ) -> Iterable[tuple[int, str, Memory | Damaged]]:
    """``(seq, op, record)`` of every revision with ``seq > after_seq``, lane by lane, each lane
    in commit order; a damaged revision's record is its ``Damaged`` (``key`` = the memory id).
    ``changes_only``: leave out the revisions of ``INTERNAL_OPS`` (no change of the memory)."""
    bind()
    for rev in RevisionModel.query(inc, RevisionModel.seq > after_seq, consistent_read=True):
        if not (changes_only and rev.op in INTERNAL_OPS):
            yield int(rev.seq), str(rev.op), revision_record(rev)


def history_in_time_order(inc: str) -> list[tuple[int, str, Memory | Damaged]]:
    """``(seq, op, record)`` of every revision of an incarnation in commit-time order (the
    revision's ``at``, ms; ties by ``seq``): lanes interleaved as their changes happened; the
    revisions of ``INTERNAL_OPS`` (no change of the memory) left out."""
    bind()
    revs = [(int(rev.at or 0) if isinstance(rev.at, (int, float)) else 0, int(rev.seq), str(rev.op),
             revision_record(rev)) for rev in RevisionModel.query(inc, consistent_read=True)
            if rev.op not in INTERNAL_OPS]
    revs.sort(key=lambda r: (r[0], r[1]))
    return [(seq, op, rec) for _at, seq, op, rec in revs]


def iter_lane_revisions(inc: str, lane: int, after: int) -> Iterable[tuple[int, str, Memory | Damaged]]:
    """``(seq, op, record)`` of the revisions of lane ``lane`` past position ``after``, in commit
    order (one key query on that lane's range of ``seq``)."""
    bind()
    cond = RevisionModel.seq.between(lane * LANE_SPAN + after + 1, (lane + 1) * LANE_SPAN - 1)
    for rev in RevisionModel.query(inc, cond, consistent_read=True):
        yield int(rev.seq), str(rev.op), revision_record(rev)


def name_pointer(inc: str, name: str) -> str | None:
    """The memory_id the name pointer ``~name/<name>`` of a bank incarnation holds, or ``None``."""
    ptr = get_item(inc, NAME_POINTER_PREFIX + name)
    return ptr.memory_id if ptr is not None else None


def fingerprint_pointer(inc: str, fp: str) -> str | None:
    """The memory_id the fingerprint pointer ``~fp/<fp>`` of a bank incarnation holds, or ``None``."""
    ptr = get_item(inc, POINTER_PREFIX + fp)
    return ptr.memory_id if ptr is not None else None


def iter_live(inc: str, page_size: int) -> Iterable[Memory | Damaged]:
    """The live records of a bank incarnation, newest first (the ``by_order`` index, read
    ``page_size`` at a time); a damaged one as its ``Damaged``."""
    bind()
    for it in MemoryModel.by_order.query(inc, consistent_read=True, page_size=page_size):
        if it.live is True:
            yield decoded(it)
