"""The one core every surface writes through.

A *bank* is the unit of isolation and indexing: a named bank, a structured-memory scope's
namespace or a team space's retrieval projection, each a ``BankModel`` row whose ``incarnation``
keys its records. A bank's changes are split into write lanes by memory id (see "write lanes"
below). ``write()`` is the one write path: its attempt stages one or more record changes
(``BankTx.stage``) into a transaction together with the advance of each lane they fall in
(conditioned on the position read), so within a lane position order is commit order and the
recall index can catch up lane by lane by querying the revisions past its own positions.
Observers registered with ``on_commit`` (the recall index's own cache) are told after each commit.

This module is also the banks area's storage: the key formats (fingerprint pointers ``~fp/``,
name pointers ``~name/``, trash entries ``.trash/``, revision keys, the S3 prefixes of rules,
exports and uploads) and the queries over the ``banks``, ``memories`` and ``revisions`` tables;
domain code calls its named functions and never builds a key or a model itself.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import hashlib
import itertools
import json
import queue
import threading
import uuid
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pynamodb.exceptions import DoesNotExist, UpdateError
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from .. import semantic
from ..clock import now_ms
from ..errors import BadRequest, CairnError
from ..settings import get_settings
from ..storage import blobs
from ..storage.damage import Damaged
from ..storage.tables import BankModel, MemoryModel, RevisionModel, bind
from ..storage.txn import TX_ITEMS, Retry, run_transaction
from ..usage import meter, quotas
from ..validation import loads
from . import vectors
from .records import Memory, decode_memory, salvage_memory

POINTER_PREFIX = "~fp/"
NAME_POINTER_PREFIX = "~name/"
TAG_PREFIX = "~tag/"  # a bank's tag counters: ~tag/<lane:02d>/<tag>, t_live and t_all (tag_total)
TRASH_PREFIX = ".trash/"
NAMESPACE_PREFIX = "!"  # internal namespaces: a key no bank name ([a-z0-9]...) can take
LANE_PREFIX = "!lane/"  # a bank's write lanes 1..: ``!lane/<incarnation>/<lane>``
LANE_SPAN = 10**12  # the revision seq of lane l's k-th change is l * LANE_SPAN + k
MAX_LANES = 64  # a trash seals every lane in one transaction: within DynamoDB's 100 items
# A backfill's change (``banks.backfill``): the record as it was, given its current vector. Only
# the item's ``vec`` is updated; its revision (op ``embed``) exists so that readers catch up, and
# no history, export or ``as_of`` recall shows it (``INTERNAL_OPS``): the memory did not change.
EMBED_OP = "embed"
INTERNAL_OPS = frozenset({EMBED_OP})
BACKFILL_KEY = "~backfill"  # a bank's backfill cursor, in its records partition (no record: no range reads it)

T = TypeVar("T")

# The types of a bank row and of a memory item, for annotations outside this module (which
# never builds one itself).
BankRow = BankModel
MemoryRow = MemoryModel


# Observers told after every committed document change: (org_id, bank, BankModel row after the
# commit, [(seq, Memory)]). The recall index registers one to update its own cache at once.
_on_commit: list[Callable[[str, str, BankModel, list[tuple[int, Memory]]], None]] = []


def on_commit(fn: Callable[[str, str, BankModel, list[tuple[int, Memory]]], None]) -> None:
    """Register ``fn`` to be called after each committed change (never inside the transaction)."""
    _on_commit.append(fn)


def _notify(org_id: str, bank: str, row: BankModel, changes: list[tuple[int, Memory]]) -> None:
    for fn in list(_on_commit):
        # an observer (a cache) must never fail a committed write
        with contextlib.suppress(Exception):
            fn(org_id, bank, row, changes)


def bank_problem(row: BankModel) -> str | None:
    """Why a stored bank row cannot be used (its ``incarnation`` keys every record, its ``seq``
    orders every change), or ``None``. Damaged counters read as their defaults."""
    for name in ("incarnation", "seq"):
        if name in row.damaged:
            return f"{name}: {row.damaged[name]}"
    if not isinstance(row.incarnation, str) or not row.incarnation:
        return "incarnation: missing"
    if "lanes" in row.damaged:
        return f"lanes: {row.damaged['lanes']}"
    lanes = row.lanes
    if lanes is not None and (type(lanes) is not int or not 1 <= lanes <= MAX_LANES):
        return f"lanes: {lanes!r} is not a lane count (1..{MAX_LANES})"
    return None


def get_bank_row(org_id: str, name: str) -> BankModel | None:
    """The live bank row (consistent read), or ``None``; 409 ``damaged`` when the stored row
    cannot be used (``bank_problem``)."""
    bind()
    try:
        row = BankModel.get(org_id, name, consistent_read=True)
    except DoesNotExist:
        return None
    reason = bank_problem(row)
    if reason is not None:
        raise Damaged("bank", name, reason, hint="Restore the bank row, or restore the bank from the trash.")
    return row



def new_bank(org_id: str, name: str, description: str = "") -> BankModel:
    now = now_ms()
    return BankModel(org_id=org_id, name=name, bank_name=name, incarnation=uuid.uuid4().hex,
                     description=description, seq=0, memories=0, pinned=0, records=0, rules=0,
                     rules_version=0, created_at=now, updated_at=now, lanes=get_settings().write_lanes,
                     tag_counts=True)



# --- write lanes -------------------------------------------------------------------------------
#
# A bank's changes are split into ``lanes`` (fixed when the bank is created) by memory id. Lane 0
# is counted on the bank row itself; lane l >= 1 on its own row ``!lane/<incarnation>/<l>`` in
# the banks table. A change of memory m advances only lane_of(m)'s ``seq``, conditioned on the
# value read, so concurrent writers of one bank meet only when their memories share a lane, and
# one memory's changes stay in commit order in its lane. Its revision is keyed
# ``lane * LANE_SPAN + position``. A reader's ``Clock`` is the vector of lane positions.


def lane_count(row: BankModel) -> int:
    """How many write lanes ``row``'s bank has (a row written before lanes existed: 1); a row
    whose ``lanes`` is unusable is refused earlier (``bank_problem``)."""
    n = row.lanes
    return int(n) if isinstance(n, (int, float)) and 1 <= n <= MAX_LANES else 1


def lane_of(memory_id: str, lanes: int) -> int:
    """The lane of memory ``memory_id`` in a bank of ``lanes`` lanes (CRC-32 of the id)."""
    return zlib.crc32(memory_id.encode("utf-8")) % lanes if lanes > 1 else 0


def lane_key(inc: str, lane: int) -> str:
    """The banks-table sort key of lane ``lane`` (>= 1) of incarnation ``inc``."""
    return f"{LANE_PREFIX}{inc}/{lane:02d}"


def split_seq(seq: int) -> tuple[int, int]:
    """``(lane, position)`` of a revision's ``seq``."""
    return divmod(int(seq), LANE_SPAN)


@dataclass(frozen=True)
class Clock:
    """How far a bank incarnation has committed: ``positions[l]`` = changes committed in lane l."""

    positions: tuple[int, ...]

    @property
    def total(self) -> int:
        """Every change committed: grows with each commit (names snapshots)."""
        return sum(self.positions)

    def covers(self, other: Clock) -> bool:
        """Whether every lane of ``self`` is at least as far as ``other``'s (same lane count)."""
        return len(self.positions) == len(other.positions) and all(
            a >= b for a, b in zip(self.positions, other.positions, strict=True))


@dataclass(frozen=True)
class BankHead:
    """A bank as one consistent read shows it: its ``row``, its ``clock`` and its counters
    summed over its lanes (``memories`` live, ``pinned`` live and pinned, ``records`` all,
    ``vectors`` live with a current-model sentence vector: ``core.vectors``)."""

    row: BankModel
    clock: Clock
    memories: int
    pinned: int
    records: int
    vectors: int = 0

    @property
    def incarnation(self) -> str:
        return str(self.row.incarnation)


def _lane_problem(lane_row: BankModel, inc: str) -> str | None:
    """Why a lane row cannot order changes (its position, its incarnation, its seal), or
    ``None``; a damaged counter reads as 0, as a bank row's does."""
    for name in ("seq", "incarnation", "sealed"):
        if name in lane_row.damaged:
            return f"{lane_row.name}: {name}: {lane_row.damaged[name]}"
    if lane_row.incarnation != inc:
        return f"{lane_row.name}: incarnation: {lane_row.incarnation!r} is not the bank's"
    return None


def _lane_keys(org_id: str, row: BankModel) -> list[tuple[str, str]]:
    return [(org_id, lane_key(row.incarnation, lane)) for lane in range(1, lane_count(row))]


def _head(row: BankModel, lanes: Mapping[str, BankModel], strict: bool = True) -> BankHead:
    """Sum ``row`` and its lane rows (``lanes`` by sort key; an absent one has seen nothing)
    into a ``BankHead``; 409 ``damaged`` when a lane row cannot order changes (with ``strict``;
    else its position reads as 0: counters for a listing, never a freshness decision)."""
    positions = [int(row.seq)]
    memories, pinned, records = int(row.memories or 0), int(row.pinned or 0), int(row.records or 0)
    vecs = _vector_count(row)
    for lane in range(1, lane_count(row)):
        lr = lanes.get(lane_key(row.incarnation, lane))
        if lr is None:
            positions.append(0)
            continue
        reason = _lane_problem(lr, row.incarnation)
        if reason is not None and strict:
            raise Damaged("bank", str(row.bank_name), reason, hint="Restore the bank from a backup of its lane rows.")
        positions.append(int(lr.seq or 0) if reason is None else 0)
        memories, pinned, records = memories + int(lr.memories or 0), pinned + int(lr.pinned or 0), \
            records + int(lr.records or 0)
        vecs += _vector_count(lr) if reason is None else 0
    return BankHead(row, Clock(tuple(positions)), memories, pinned, records, vecs)


def _count(value: Any) -> int:
    """A counter attribute as an int (absent or not a number: 0)."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _vector_count(row: BankModel) -> int:
    """The lane row's ``vectors`` counter: 0 while it counts another model than the current one."""
    return _count(row.vectors) if vectors.counts_current(row.vectors_model) else 0


def _vector_actions(row: BankModel | None, writes: list[Write]) -> list[Any]:
    """The update actions of a lane's ``vectors`` counter for ``writes``: added to while the row
    (``None``: not written yet) counts the current model, else set afresh to what these writes
    count (the old model's vectors are no longer current) and named the current model's."""
    delta = vector_delta(writes)
    if row is not None and not vectors.counts_current(row.vectors_model):
        return [BankModel.vectors.set(max(0, delta)), BankModel.vectors_model.set(semantic.MODEL_ID)]
    return [BankModel.vectors.add(delta), BankModel.vectors_model.set(semantic.MODEL_ID)]


def _batch_rows(keys: list[tuple[str, str]]) -> dict[tuple[str, str], BankModel]:
    if not keys:
        return {}
    bind()
    return {(r.org_id, r.name): r for r in BankModel.batch_get(list(dict.fromkeys(keys)), consistent_read=True)}


def heads_of(org_id: str, rows: Iterable[BankModel], *, strict: bool = True) -> list[BankHead]:
    """The ``BankHead`` of each bank row (its lane rows read in consistent BatchGetItem calls);
    409 ``damaged`` for a lane row that cannot order changes, unless not ``strict`` (a listing:
    its position reads as 0)."""
    rows = list(rows)
    got = _batch_rows([k for r in rows for k in _lane_keys(org_id, r)])
    return [_head(r, {name: lr for (_o, name), lr in got.items()}, strict) for r in rows]


def get_bank_head(org_id: str, name: str) -> BankHead | None:
    """The live bank's ``BankHead`` (two consistent reads: its row, then its lane rows), or
    ``None``; 409 ``damaged`` as ``get_bank_row``."""
    row = get_bank_row(org_id, name)
    return heads_of(org_id, [row])[0] if row is not None else None


TX_BYTES = 3_500_000  # what a bulk write's batch may weigh: DynamoDB refuses a transaction over 4 MB
TX_SHARED = 2  # items any bank write may add besides its records and lanes: the org's bank count, a usage counter


def lane_batches(org_id: str, bank: str, items: list[T], memory_id: Callable[[T], str], *, size: int,
                 max_lanes: int, weight: Callable[[T], int] | None = None,
                 record_items: int | None = None) -> list[list[T]]:
    """``items`` cut into the batches of a bulk write (one transaction each), grouped by the lane
    of ``memory_id(item)`` in ``bank`` (a new bank's lane count when it does not exist yet): at
    most ``size`` items, ``max_lanes`` lanes and ``TX_BYTES`` of ``weight`` (UTF-8 bytes an item
    stages) per batch, so a batch stays within DynamoDB's 100 items and 4 MB per transaction and
    meets few concurrent writers; the order of ``items`` is kept within a lane. With
    ``record_items`` (the transaction items one item stages, lane rows aside), a bank whose live
    memories are bounded gets batches small enough to also hold every lane (``_hold_lanes``).
    Raises 409 ``damaged`` (before anything is written) when the bank or one of its lane rows
    cannot be used."""
    head = get_bank_head(org_id, bank)  # a damaged lane row fails the import whole, never half-way
    lanes = len(head.clock.positions) if head is not None else get_settings().write_lanes
    if record_items is not None and lanes > 1 and quotas.check_memories_needed(org_id, bank):
        size = max(1, min(size, (TX_ITEMS - TX_SHARED - lanes) // record_items))
    keyed = sorted(((lane_of(memory_id(it), lanes), i, it) for i, it in enumerate(items)), key=lambda x: x[:2])
    out: list[list[T]] = []
    seen: set[int] = set()
    load = 0
    for lane, _i, it in keyed:
        w = weight(it) if weight is not None else 0
        if (not out or len(out[-1]) >= size or (lane not in seen and len(seen) >= max_lanes)
                or (out[-1] and load + w > TX_BYTES)):
            out.append([])
            seen, load = set(), 0
        out[-1].append(it)
        seen.add(lane)
        load += w
    return out


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



@dataclass
class Write:
    """One record change staged into a transaction. ``guard``: the condition on the stored item
    (default: its revision equals ``prev.revision``); a repair of a damaged record passes
    ``guard_of(item)``. ``moved_from``: the key of the stored item (``prev``) that this record
    replaces under a new id (a purge's tombstone): that item is deleted on the same condition and
    the new one must not exist yet. ``why``: the reason the revision keeps when the change is not
    the caller's own request on this memory (a supersede named by another save, a setting acting)."""

    record: Memory
    prev: Memory | None
    op: str
    fp: str | None  # fingerprint of the record's current text (None once purged)
    guard: Any = None
    moved_from: str | None = None
    why: str | None = None


def tag_deltas(writes: Iterable[Write], lanes: int) -> dict[tuple[int, str], tuple[int, int]]:
    """``{(lane, tag): (live delta, all-records delta)}`` of ``writes`` (counters that do not move
    left out): a record counts under each of its tags, in ``live`` while it is live, in the lane
    of its own id (a record moved to another id, as a purge does, leaves its old id's lane)."""
    moved: dict[tuple[int, str], list[int]] = {}
    for w in writes:
        for rec, sign in ((w.record, 1), (w.prev, -1)):
            if rec is None:
                continue
            lane = lane_of(rec.id, lanes)
            for t in set(rec.tags):
                d = moved.setdefault((lane, t), [0, 0])
                d[0] += sign * int(rec.live)
                d[1] += sign
    return {k: (d[0], d[1]) for k, d in moved.items() if d[0] or d[1]}


def _stage_tags(tx: TransactWrite, inc: str, lanes: int, writes: list[Write]) -> None:
    """Stage the moves of the tag counters (``~tag/<lane>/<tag>``: ``t_live``, ``t_all``) of
    ``writes``: each in its record's lane, so writers meet on them where they meet on the lane. A
    counter no record carries any more is deleted (read first, deleted on the value read), so a
    purged memory's tag leaves no key behind; a concurrent change of it makes the write retry."""
    moved = tag_deltas(writes, lanes)
    lowered = get_items(inc, [tag_key(lane, t) for (lane, t), (_live, every) in moved.items() if every < 0])
    for (lane, tag), (live, every) in sorted(moved.items()):
        key = tag_key(lane, tag)
        held = lowered.get(key)
        if held is not None and int(held.t_all or 0) + every <= 0:
            tx.delete(MemoryModel(inc, key), condition=MemoryModel.t_all == held.t_all)
        else:
            tx.update(MemoryModel(inc, key), actions=[MemoryModel.t_live.add(live), MemoryModel.t_all.add(every)])


def tag_key(lane: int, tag: str) -> str:
    """The sort key of the counter of ``tag`` in lane ``lane``."""
    return f"{TAG_PREFIX}{lane:02d}/{tag}"


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


def vector_delta(writes: Iterable[Write]) -> int:
    """How ``writes`` move a bank's ``vectors`` counter (live records with a current vector)."""
    return sum(int(vectors.has_current(w.record)) - int(vectors.has_current(w.prev)) for w in writes)


def vector_coverage(org_id: str, bank: str) -> tuple[int, int] | None:
    """``(memories with a current-model vector, live memories)`` of a live bank from its counters
    (two consistent reads, no scan), or ``None`` when the bank does not exist. A memory written
    before vectors were stored counts as live without one until it is written again."""
    head = get_bank_head(org_id, bank)
    return None if head is None else (max(0, head.vectors), head.memories)


# --- the backfill's keys (banks.backfill) -------------------------------------------------------

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


def stage_backfill_cursor(tx: TransactWrite, inc: str, read: BackfillCursor, new: BackfillCursor) -> None:
    """Stage ``new`` as the cursor of ``inc``, committing only while the stored one is ``read``."""
    cond = MemoryModel.sk.does_not_exist() if read.version == 0 else MemoryModel.revision == read.version
    tx.save(MemoryModel(bank_key=inc, sk=BACKFILL_KEY, memory_id=new.after, revision=read.version + 1,
                        bf_left=new.left, bf_model=new.model), condition=cond)


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


def embed_write(item: MemoryModel, rec: Memory) -> Write:
    """The backfill's change of the memory ``item`` holds (``rec``, read from it): the same record,
    without a vector so that staging embeds its current one, committed only while the item is as
    read (its revision and its vector)."""
    fresh = rec.model_copy()
    fresh.set_vector_blob(None)
    old = _blob(item.vec)
    same_vec = MemoryModel.vec.does_not_exist() if old is None else MemoryModel.vec == old
    return Write(record=fresh, prev=rec, op=EMBED_OP, fp=item.fp, guard=guard_of(item) & same_vec)


def deltas(writes: Iterable[Write]) -> tuple[int, int, int]:
    live = pinned = records = 0
    for w in writes:
        before_live = bool(w.prev and w.prev.live)
        before_pin = bool(w.prev and w.prev.live and w.prev.pinned)
        live += int(w.record.live) - int(before_live)
        pinned += int(w.record.live and w.record.pinned) - int(before_pin)
        records += int(w.prev is None)
    return live, pinned, records


@dataclass
class _LanesNow:
    """The lanes a write advances as read just before its commit (``rows``), and with a count the
    bank's live memories summed over every lane (``live``) and the rows of the other lanes
    (``others``), all from the same read."""

    rows: dict[int, BankModel | None]
    live: int = 0
    others: dict[int, BankModel | None] = field(default_factory=dict)


def _lanes_now(org_id: str, bank: str, row: BankModel, lanes: Iterable[int], counting: bool = False) -> _LanesNow:
    """The rows of ``lanes`` of the bank as read now (one consistent BatchGetItem): lane 0 is the
    bank row, an absent lane row is ``None``. Read just before the commit, so the window in which
    another writer of the same lane can win is one read and the commit. A bank row gone or of
    another incarnation, or a sealed lane (the bank is being trashed), asks for a fresh attempt.
    With ``counting``, every lane row is read in that same call: the bank's live memories summed
    over them, and the other lanes' rows, come back beside the rows."""
    lanes = list(lanes)
    every = range(lane_count(row)) if counting else lanes
    keys = {lane: (org_id, bank if lane == 0 else lane_key(row.incarnation, lane)) for lane in every}
    got = _batch_rows(list(keys.values()))
    live = sum(int(r.memories or 0) for lane, key in keys.items() if (r := got.get(key)) is not None
               and (lane == 0 or _lane_problem(r, row.incarnation) is None)) if counting else 0
    out = {lane: got.get(keys[lane]) for lane in lanes}
    others = {lane: got.get(key) for lane, key in keys.items() if lane not in out}
    for lane, lr in out.items():
        if lr is None:
            if lane == 0:
                raise Retry()
            continue
        if lane == 0 and lr.incarnation != row.incarnation:
            raise Retry()  # trashed and re-created since the attempt read it
        reason = bank_problem(lr) if lane == 0 else _lane_problem(lr, row.incarnation)
        if reason is not None:
            raise Damaged("bank", bank, reason, hint="Restore the bank row, or restore the bank from the trash.")
        if lr.sealed:
            raise Retry()
    return _LanesNow(out, live, others)


def _hold_lanes(tx: TransactWrite, row: BankModel, others: Mapping[int, BankModel | None]) -> None:
    """Condition ``tx`` on the positions of the lanes it does not advance, as read with the live
    count: a write adding several memories commits only on the count it checked (concurrent bulk
    writes take turns; the quota's bound of ``lanes - 1`` over is then single writes' alone)."""
    for lane, lr in others.items():
        if lane == 0:
            if lr is None:
                raise Retry()
            cond = (BankModel.seq == int(lr.seq)) & (BankModel.incarnation == row.incarnation)
            tx.condition_check(BankModel, row.org_id, row.name, condition=cond)
        elif lr is None:
            tx.condition_check(BankModel, row.org_id, lane_key(row.incarnation, lane),
                               condition=BankModel.name.does_not_exist())
        elif _lane_problem(lr, row.incarnation) is None:  # a damaged lane counts 0 and holds nothing
            tx.condition_check(BankModel, row.org_id, lane_key(row.incarnation, lane),
                               condition=BankModel.seq == int(lr.seq))


def _stage_lane(tx: TransactWrite, bank: str, row: BankModel, lane: int, lane_row: BankModel | None,
                writes: list[Write], now: int) -> int:
    """Stage the advance of lane ``lane`` (>= 1) by ``len(writes)`` changes, conditioned on the
    position read in ``lane_row`` (``None``: the lane row does not exist yet); returns that position."""
    live, pinned, records = deltas(writes)
    pos = int(lane_row.seq or 0) if lane_row is not None else 0
    same = (BankModel.seq == pos) & (BankModel.incarnation == row.incarnation)
    unsealed = BankModel.sealed.does_not_exist() | (BankModel.sealed == False)  # noqa: E712 - a pynamodb condition
    cond = BankModel.name.does_not_exist() if lane_row is None else same & unsealed
    tx.update(BankModel(row.org_id, lane_key(row.incarnation, lane)),
              actions=[BankModel.seq.set(pos + len(writes)), BankModel.memories.add(live),
                       BankModel.pinned.add(pinned), BankModel.records.add(records),
                       *_vector_actions(lane_row, writes), BankModel.updated_at.set(now), BankModel.bank_name.set(bank),
                       BankModel.incarnation.set(row.incarnation),
                       BankModel.created_at.set(BankModel.created_at | now)],
              condition=cond)
    return pos


def _stage_lane0(tx: TransactWrite, row: BankModel, pos: int, writes: list[Write], now: int) -> BankModel:
    """Stage the advance of lane 0 (the bank row) from position ``pos``, conditioned on it and on
    the incarnation; returns the row as it will be after the commit."""
    live, pinned, records = deltas(writes)
    tx.update(row, actions=[BankModel.seq.set(pos + len(writes)), BankModel.memories.add(live),
                            BankModel.pinned.add(pinned), BankModel.records.add(records),
                            *_vector_actions(row, writes), BankModel.updated_at.set(now)],
              condition=(BankModel.seq == pos) & (BankModel.incarnation == row.incarnation))
    after = _copy_row(row)
    after.seq, after.updated_at = pos + len(writes), now
    after.memories, after.pinned, after.records = row.memories + live, row.pinned + pinned, row.records + records
    after.vectors = _vector_count(row) + vector_delta(writes)
    after.vectors_model = semantic.MODEL_ID
    return after


def _checked_lanes(tx: TransactWrite, org_id: str, bank: str, row: BankModel | None, groups: Mapping[int, object],
                   adding: int) -> dict[int, BankModel | None]:
    """The rows of the lanes ``groups`` advances, read just before the commit, once a write adding
    ``adding`` live memories is within the bank's quota (``quotas.check_memories``); a write adding
    several holds every other lane (``_hold_lanes``)."""
    counting = adding > 0 and quotas.check_memories_needed(org_id, bank)
    if row is None:
        rows: dict[int, BankModel | None] = dict.fromkeys(groups)
        live = 0
    elif lane_count(row) == 1:
        rows = {0: row}  # one lane: the row the attempt read is the lane
        live = int(row.memories or 0)
    else:
        read = _lanes_now(org_id, bank, row, groups, counting)
        rows, live = read.rows, read.live
        if counting and adding > 1:
            _hold_lanes(tx, row, read.others)
    if counting:
        quotas.check_memories(org_id, bank, live, adding)
    return rows


def _stage(tx: TransactWrite, org_id: str, bank: str, row: BankModel | None, writes: list[Write],
           actor: str, *, fresh: BankModel | None = None) -> tuple[BankModel, list[tuple[int, Memory]]]:
    """Stage ``writes`` plus the advance of each lane they fall in (or the bank's creation) into
    ``tx``: each lane takes consecutive positions. Returns the bank row as it will be after the
    commit and the ``(seq, record)`` pairs, in the order of ``writes``."""
    now = now_ms()
    # embedded before the counters, which count vectors; a retried attempt finds them cached
    meter.add({"emb_t": vectors.attach([(w.record, w.prev) for w in writes])}, bank)
    base = row if row is not None else (fresh or new_bank(org_id, bank))
    n = lane_count(base)
    groups: dict[int, list[Write]] = {}
    for w in writes:
        groups.setdefault(lane_of(w.record.id, n), []).append(w)
    now_rows = _checked_lanes(tx, org_id, bank, row, groups, deltas(writes)[0])
    for lane, ws in groups.items():
        meter.note_lane(lane, n)
        for w in ws:
            meter.add({f"w_{w.op}": 1}, bank)
    if base.tag_counts:
        _stage_tags(tx, base.incarnation, n, writes)
    starts: dict[int, int] = {}
    after = base
    for lane, ws in groups.items():
        if lane == 0 and row is not None:
            starts[0] = int(now_rows[0].seq) if now_rows[0] is not None else int(row.seq)
            after = _stage_lane0(tx, now_rows[0] or row, starts[0], ws, now)
        elif lane > 0:
            starts[lane] = _stage_lane(tx, bank, base, lane, now_rows.get(lane), ws, now)
    if row is None:
        live, pinned, records = deltas(groups.get(0, []))
        base.seq, base.memories, base.pinned, base.records, base.updated_at = len(groups.get(0, [])), live, pinned, \
            records, now
        base.vectors, base.vectors_model = vector_delta(groups.get(0, [])), semantic.MODEL_ID
        tx.save(base, condition=BankModel.name.does_not_exist())
        starts[0] = 0
    return after, _stage_records(tx, base.incarnation, n, starts, writes, actor, now)


def _stage_records(tx: TransactWrite, inc: str, lanes: int, starts: dict[int, int], writes: list[Write],
                   actor: str, now: int) -> list[tuple[int, Memory]]:
    """Stage each write's current record and its revision at the next position of its lane
    (``starts``: each lane's position before the batch); returns the ``(seq, record)`` pairs."""
    taken = dict.fromkeys(starts, 0)
    out = []
    for w in writes:
        lane = lane_of(w.record.id, lanes)
        taken[lane] += 1
        seq = lane * LANE_SPAN + starts[lane] + taken[lane]
        rec = w.record
        item = MemoryModel(bank_key=inc, sk=rec.id, ord=rec.order_key(), record=rec.model_dump(mode="json"),
                           fp=w.fp, live=rec.live, revision=rec.revision, tags=set(rec.tags) or None,
                           vec=rec.vector_blob())
        cond = (MemoryModel.sk.does_not_exist() if w.prev is None
                else w.guard if w.guard is not None else (MemoryModel.revision == w.prev.revision))
        if w.moved_from is not None:  # the stored item leaves its key: deleted on the write's condition
            tx.delete(MemoryModel(bank_key=inc, sk=w.moved_from), condition=cond)
            cond = MemoryModel.sk.does_not_exist()
        blob = rec.vector_blob()
        if w.op == EMBED_OP and blob is not None:  # the stored record stays as it is, byte for byte
            tx.update(MemoryModel(bank_key=inc, sk=rec.id), actions=[MemoryModel.vec.set(blob)], condition=cond)
        else:
            tx.save(item, condition=cond)
        tx.save(RevisionModel(bank_key=inc, seq=seq, rev_key=f"{rec.id}#{rec.revision:012d}#{seq:012d}",
                              memory_id=rec.id, op=w.op, record=rec.model_dump(mode="json"), at=now, actor=actor,
                              vec=rec.vector_blob(), why=w.why),
                condition=RevisionModel.seq.does_not_exist())
        out.append((seq, rec))
    return out

class BankTx:
    """One attempt of a bank-scoped write (``write``): the open transaction plus what the attempt
    staged, so the index cache hears of it after the commit and never of an attempt that lost."""

    def __init__(self, tx: TransactWrite, org_id: str) -> None:
        self.tx = tx
        self.org_id = org_id
        self.staged: list[tuple[str, BankModel, list[tuple[int, Memory]]]] = []
        self.banks_added = 0  # live named banks this attempt creates or restores, less those it trashes

    def row(self, bank: str) -> BankModel | None:
        """The live bank row as this attempt reads it (consistent), or ``None``; 409 ``damaged``
        for an unusable row (``get_bank_row``)."""
        return get_bank_row(self.org_id, bank)

    def row_or_new(self, bank: str, description: str = "") -> tuple[BankModel | None, BankModel]:
        """``(row, fresh)``: the live row (``None`` when the bank does not exist yet) and the row a
        ``stage`` creates in that case: the one get-or-create of a bank row."""
        row = self.row(bank)
        return row, row if row is not None else new_bank(self.org_id, bank, description)

    def create(self, bank: str, description: str = "") -> tuple[BankModel, bool]:
        """Get or create bank ``bank`` with no record change: ``(row, created)``."""
        row, fresh = self.row_or_new(bank, description)
        if row is None:
            self.banks_added += int(quotas.counted(bank))
            self.tx.save(fresh, condition=BankModel.name.does_not_exist())
        return fresh, row is None

    def stage(self, bank: str, row: BankModel | None, writes: list[Write], actor: str,
              *, fresh: BankModel | None = None) -> list[tuple[int, Memory]]:
        """Stage ``writes`` and the advance of the lanes they fall in (their positions read just
        before the commit), or ``bank``'s creation from ``fresh`` when ``row`` is ``None``; returns
        the ``(seq, record)`` pairs (``seq`` = lane * ``LANE_SPAN`` + position)."""
        if row is None:
            self.banks_added += int(quotas.counted(bank))
        after, changes = _stage(self.tx, self.org_id, bank, row, writes, actor, fresh=fresh)
        self.staged.append((bank, after, changes))
        return changes

    def put_pointer(self, inc: str, fp: str, memory_id: str, *, taking_over: str | None = None) -> None:
        """Point text fingerprint ``fp`` at ``memory_id``: a new pointer (none may exist), or,
        with ``taking_over``, the pointer still held by that (retired) memory."""
        cond = MemoryModel.sk.does_not_exist() if taking_over is None else MemoryModel.memory_id == taking_over
        self.tx.save(MemoryModel(bank_key=inc, sk=pointer_key(fp), memory_id=memory_id), condition=cond)

    def drop_pointer(self, inc: str, fp: str, memory_id: str) -> None:
        """Delete the pointer of ``fp``, on condition that it still points at ``memory_id``."""
        self.tx.delete(MemoryModel(bank_key=inc, sk=pointer_key(fp)), condition=MemoryModel.memory_id == memory_id)

    def check_pointer(self, inc: str, fp: str, memory_id: str) -> None:
        """Commit only while the pointer of text fingerprint ``fp`` still names ``memory_id``
        (a write that found its memory through the pointer: another memory taking the text over
        meanwhile, in another lane, makes it retry)."""
        self.tx.condition_check(MemoryModel, inc, pointer_key(fp), condition=MemoryModel.memory_id == memory_id)

    def check_unchanged(self, item: MemoryModel) -> None:
        """Commit only while the memory ``item`` is as it was read (``guard_of``)."""
        self.tx.condition_check(MemoryModel, item.bank_key, item.sk, condition=guard_of(item))

    def check_revision(self, inc: str, memory_id: str, revision: int) -> None:
        """Commit only while memory ``memory_id`` is still at ``revision``."""
        self.tx.condition_check(MemoryModel, inc, memory_id, condition=MemoryModel.revision == revision)

    def relink(self, item: MemoryModel, rec: Memory, superseded_by: str) -> None:
        """Point the memory ``item`` (record ``rec``) at ``superseded_by`` in place (no new
        revision: its content does not change), committing only while it is as read (a purge
        re-keys the memory ``rec`` was superseded by)."""
        record = rec.model_copy(update={"superseded_by": superseded_by}).model_dump(mode="json")
        self.tx.update(item, actions=[MemoryModel.record.set(record)], condition=guard_of(item))

    def trash(self, row: BankModel, trashed_to: str) -> None:
        """Move the live bank ``row`` to the trash entry ``trashed_to`` (conditioned on the row
        being unchanged since it was read)."""
        trash = _copy_row(row)
        trash.name = TRASH_PREFIX + trashed_to
        trash.trashed_to, trash.trashed_at = trashed_to, now_ms()
        self.tx.delete(row, condition=(BankModel.incarnation == row.incarnation) & (BankModel.seq == row.seq))
        self.tx.save(trash, condition=BankModel.name.does_not_exist())
        self._seal(row, True)
        self.banks_added -= int(quotas.counted(str(row.bank_name)))

    def _seal(self, row: BankModel, sealed: bool) -> None:
        """Seal (trash) or unseal (restore) every lane row of ``row``'s bank: a writer that read
        the bank before it moved cannot commit into a sealed lane."""
        now = now_ms()
        for lane in range(1, lane_count(row)):
            # a lane never written is created here, whole, so a writer's condition on it holds
            self.tx.update(BankModel(row.org_id, lane_key(row.incarnation, lane)), actions=[
                BankModel.sealed.set(True) if sealed else BankModel.sealed.remove(),
                BankModel.seq.set(BankModel.seq | 0), BankModel.incarnation.set(row.incarnation),
                BankModel.bank_name.set(row.bank_name), BankModel.created_at.set(BankModel.created_at | now),
                BankModel.updated_at.set(now)])

    def restore(self, trash: BankModel, name: str) -> BankModel:
        """Bring the trash entry ``trash`` back as live bank ``name`` (none may exist); returns
        the live row as committed."""
        live = _copy_row(trash)
        live.name, live.trashed_to, live.trashed_at = name, None, None
        live.updated_at = now_ms()
        self.banks_added += int(quotas.counted(name))
        self.tx.save(live, condition=BankModel.name.does_not_exist())
        self.tx.delete(trash, condition=BankModel.name.exists())
        self._seal(trash, False)
        return live

    def set_fields(self, row: BankModel, *, description: str | None = None, settings: str | None = None) -> BankModel:
        """Set the live bank ``row``'s description and/or settings (JSON), those given (conditioned
        on its incarnation: the bank was not trashed or replaced since it was read; new settings
        also on the settings read, which they were merged into); returns the row as it will be
        after the commit."""
        now = now_ms()
        after = _copy_row(row)
        actions: list[Action] = [BankModel.updated_at.set(now)]
        if description is not None:
            actions.append(BankModel.description.set(description))
            after.description = description
        cond = BankModel.incarnation == row.incarnation
        if settings is not None:  # derived from the settings read: they must be unchanged at commit
            actions.append(BankModel.settings.set(settings))
            after.settings = settings
            cond &= (BankModel.settings == row.settings) if row.settings is not None \
                else BankModel.settings.does_not_exist()
        self.tx.update(row, actions=actions, condition=cond)
        after.updated_at = now
        return after

    def set_rule_count(self, row: BankModel, count: int) -> None:
        """Set the bank's rule count and bump its ``rules_version``, conditioned on the version
        read in ``row`` (a row written before the field has none)."""
        version = int(row.rules_version or 0)
        same = BankModel.rules_version == version
        if version == 0:
            same = same | BankModel.rules_version.does_not_exist()
        self.tx.update(row, actions=[BankModel.rules.set(count), BankModel.rules_version.set(version + 1),
                                     BankModel.updated_at.set(now_ms())],
                       condition=(BankModel.incarnation == row.incarnation) & same)


def write(org_id: str, attempt: Callable[[BankTx], T], *, retries: int | None = None) -> T:
    """The one write path of bank-scoped records: run ``attempt(BankTx)`` in a transaction
    conditioned on the positions of the lanes each staged change takes (``stage``), retried from a
    fresh read on a lost race (``storage.txn.run_transaction``: 503 ``write_contention`` after
    ``Settings.write_retries``), then tell
    the index cache (``on_commit`` observers) what committed. Returns what ``attempt`` returned;
    a ``CairnError`` it raises writes nothing. A write that adds live memories or creates or
    restores a bank is refused past the org's quotas (429 ``quota_exceeded``, ``usage.quotas``)."""
    last: list[BankTx] = []

    def run(tx: TransactWrite) -> T:
        btx = BankTx(tx, org_id)
        last[:] = [btx]
        result = attempt(btx)
        # the org's bank count moves in the same transaction, once (one item, one operation)
        quotas.stage_banks(tx, org_id, btx.banks_added)
        return result

    result = run_transaction(run, retries=retries)
    for bank, row, changes in last[0].staged if last else []:
        _notify(org_id, bank, row, changes)
    return result


# --- keys and queries of the banks area ---------------------------------------------------------

def _copy_row(row: BankModel) -> BankModel:
    return BankModel(**{k: getattr(row, k) for k in BankModel.get_attributes()})


def pointer_key(fp: str) -> str:
    """The sort key of the pointer from text fingerprint ``fp`` to the memory holding that text."""
    return POINTER_PREFIX + fp


def get_pointer(inc: str, fp: str) -> MemoryModel | None:
    """The pointer item of ``fp`` (its ``memory_id``), or ``None``."""
    return get_item(inc, pointer_key(fp))


def iter_live_bank_rows(org_id: str, after: str | None = None, *, page_size: int | None = None) -> Iterator[BankModel]:
    """The org's live bank rows by name, from the first or strictly after the name ``after``: a
    lazy consistent key query read ``page_size`` rows at a time (DynamoDB's default pages when
    ``None``). Internal namespaces, lane rows and trash entries sort before ``0``, below every bank
    name, so an ``after`` below it reads from the first bank."""
    bind()
    cond = BankModel.name > after if after is not None and after >= "0" else BankModel.name >= "0"
    return iter(BankModel.query(org_id, cond, consistent_read=True, page_size=page_size))


def record_snapshot(org_id: str, bank: str, incarnation: str, seq: int, key: str, at: int) -> bool:
    """Note on the bank row the index snapshot just written: the clock total ``seq`` it holds, its
    S3 ``key`` and upload time ``at`` (ms). One conditional update: only while the row is still that
    incarnation and notes no newer snapshot; returns whether it was noted."""
    bind()
    try:
        BankModel(org_id, bank).update(
            actions=[BankModel.snapshot_seq.set(seq), BankModel.snapshot_key.set(key), BankModel.snapshot_at.set(at)],
            condition=(BankModel.incarnation == incarnation)
            & (BankModel.snapshot_seq.does_not_exist() | (BankModel.snapshot_seq <= seq)))
    except UpdateError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return False
        raise
    return True


def list_trash_rows(org_id: str) -> list[BankModel]:
    """Every trash entry row of the org (``trashed_to``, ``trashed_at`` set)."""
    bind()
    return list(BankModel.query(org_id, BankModel.name.startswith(TRASH_PREFIX), consistent_read=True))


def get_trash_row(org_id: str, trashed_to: str) -> BankModel | None:
    """The trash entry ``trashed_to`` (consistent read), or ``None``."""
    bind()
    try:
        return BankModel.get(org_id, TRASH_PREFIX + trashed_to, consistent_read=True)
    except DoesNotExist:
        return None


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


def rules_prefix(org_id: str, bank: str) -> str:
    """``<org>/banks/<bank>/rules/``: where a live bank's rule objects live."""
    return blobs.org_key(org_id, "banks", bank, "rules") + "/"


def trash_rules_prefix(org_id: str, trashed_to: str) -> str:
    """``<org>/.trash/<trashed_to>/rules/``: where a trashed bank's rule objects wait."""
    return blobs.org_key(org_id, ".trash", trashed_to, "rules") + "/"


def exports_prefix(org_id: str, bank: str) -> str:
    """``<org>/exports/<bank>/``: a bank's large exports."""
    return blobs.org_key(org_id, "exports", bank) + "/"


def export_key(org_id: str, bank: str) -> str:
    """A new, unique key for one export file of ``bank``."""
    return exports_prefix(org_id, bank) + f"{now_ms()}-{uuid.uuid4().hex[:8]}.jsonl"


def upload_key(bank: str) -> str:
    """A new upload key for an import into ``bank``, relative to the org's prefix."""
    return f"{upload_prefix(bank)}{uuid.uuid4().hex}.jsonl"


def upload_prefix(bank: str) -> str:
    """``imports/<bank>/``: where the uploads for an import into ``bank`` go (org-relative)."""
    return f"imports/{bank}/"


def upload_object(org_id: str, rel: str) -> str:
    """The bucket key of the org-relative upload key ``rel``."""
    return blobs.org_key(org_id, rel)


def _owner_tag(owner: str) -> str:
    return hashlib.sha256(owner.encode("utf-8")).hexdigest()[:16]


def encode_cursor(kind: str, owner: str, data: Mapping[str, str | int]) -> str:
    """An opaque base64url page cursor holding ``data``, bound to the listing that issued it:
    ``kind`` names the listing and ``owner`` what it lists (an org, a bank, a filter), so a
    cursor replayed elsewhere is refused by ``decode_cursor``."""
    body = {"r": kind, "o": _owner_tag(owner), **data}
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, kind: str, owner: str, fields: dict[str, type],
                  prefixes: dict[str, str] | None = None) -> Mapping[str, Any] | None:
    """The ``data`` of a cursor made by ``encode_cursor(kind, owner, data)``, checked to hold
    exactly ``fields`` (name -> ``str``, never empty, or ``int``), each string field named in
    ``prefixes`` starting with its prefix; ``None`` for no cursor. A malformed cursor, or one
    issued by another listing or for another owner, is 400 ``validation_error`` naming ``cursor``."""
    if not cursor:
        return None
    bad = BadRequest("Invalid cursor: it is malformed or was issued by another listing.", details={"field": "cursor"})
    try:
        data = loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)), root="cursor")
    except (ValueError, binascii.Error, CairnError):
        raise bad from None
    if (not isinstance(data, dict) or data.get("r") != kind or data.get("o") != _owner_tag(owner)
            or set(data) != {"r", "o", *fields}
            or not all(type(data[name]) is t and data[name] != "" for name, t in fields.items())
            or not all(str(data[name]).startswith(p) for name, p in (prefixes or {}).items())):
        raise bad
    return {name: data[name] for name in fields}


def iter_records(inc: str) -> Iterable[Memory | Damaged]:
    """Every memory record of a bank incarnation, newest first (export); a damaged one as its
    ``Damaged``."""
    bind()
    for it in MemoryModel.by_order.query(inc, consistent_read=True):
        yield decoded(it)


# --- every record of one incarnation, in key ranges read in parallel (index rebuilds) ---------

RECORD_READ_THREADS = 4  # range queries of one rebuild in flight at once
RECORD_RANGE_PARTS = 4  # ranges each memory-id family is split into
_HEX = "0123456789abcdef"
# Memory ids are UUIDs (structured memories), "ent_" + hex (team entries) or "fp" + hex (bank
# memories): cutting each family at hex digits balances the ranges. The ranges cover every key
# whatever its alphabet: this list decides their balance, never what is read.
_ID_FAMILIES = ("", "ent_", "fp")
_POINTER_PREFIXES = (POINTER_PREFIX, NAME_POINTER_PREFIX, TAG_PREFIX)
_CHUNK = 256  # decoded records handed from a range's reader to the consumer at a time
_AHEAD = 4  # chunks a range may read ahead of the consumer: memory stays ranges x _AHEAD x _CHUNK
_DONE = object()


@dataclass(frozen=True)
class KeyRange:
    """The sort keys ``low <= sk < high`` of one partition (``None``: unbounded)."""

    low: str | None
    high: str | None

    def condition(self) -> Any:
        """The key condition reading this range (``BETWEEN`` includes ``high``: ``holds`` drops it)."""
        if self.low is None:
            return None if self.high is None else MemoryModel.sk < self.high
        return MemoryModel.sk >= self.low if self.high is None else MemoryModel.sk.between(self.low, self.high)

    def holds(self, sk: str) -> bool:
        return (self.low is None or sk >= self.low) and (self.high is None or sk < self.high)


def _after_prefix(prefix: str) -> str:
    """The least string above every string starting with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def record_key_ranges(parts: int = RECORD_RANGE_PARTS) -> list[KeyRange]:
    """Disjoint sort-key ranges, in key order, that together hold every key of a partition but
    the pointer items' (``~fp/...``, ``~name/...``): each memory-id family cut into ``parts``."""
    cuts = sorted({fam + _HEX[16 * i // parts] for fam in _ID_FAMILIES for i in range(1, max(1, parts))})
    bounds: list[str | None] = [None, *cuts]
    ranges = []
    for prefix in sorted(_POINTER_PREFIXES):  # every cut sorts below "~"
        bounds.append(prefix)
        ranges += [KeyRange(lo, hi) for lo, hi in itertools.pairwise(bounds)]
        bounds = [_after_prefix(prefix)]
    return [*ranges, KeyRange(bounds[0], None)]


def _put(out: queue.Queue, value: object, stop: threading.Event) -> bool:
    """Hand ``value`` to the consumer unless it stopped listening; False when it did."""
    while not stop.is_set():
        try:
            out.put(value, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


def _read_range(inc: str, rng: KeyRange, out: queue.Queue, stop: threading.Event) -> None:
    """One range's records (decoded, in key order) onto ``out`` in chunks, then ``_DONE``; the
    exception instead when the read fails."""
    try:
        chunk: list[Memory | Damaged] = []
        for it in MemoryModel.query(inc, range_key_condition=rng.condition(), consistent_read=True,
                                    filter_condition=MemoryModel.record.exists(),  # a pointer holds none
                                    attributes_to_get=["sk", "record", "vec"]):  # the key, the record, its vector
            if not rng.holds(it.sk):
                continue  # the upper bound itself, which BETWEEN includes
            chunk.append(decoded(it))
            if len(chunk) == _CHUNK:
                if not _put(out, chunk, stop):
                    return
                chunk = []
        if _put(out, chunk, stop):
            _put(out, _DONE, stop)
    except Exception as exc:  # noqa: BLE001 - re-raised by the consumer
        _put(out, exc, stop)


def iter_records_any_order(inc: str, *, threads: int = RECORD_READ_THREADS,
                           ranges: list[KeyRange] | None = None) -> Generator[Memory | Damaged, None, None]:
    """Every memory record of a bank incarnation in sort-key order (index rebuild), a damaged
    one as its ``Damaged``.

    Queries on the incarnation's own partition only (never a scan, never the ``by_order``
    index), one per key range (``record_key_ranges``), ``threads`` of them in flight at once,
    each paging on while the consumer indexes the ranges before it; ``threads=1`` reads them one
    after the other. Pointer items (``~fp/``, ``~name/``) are outside every range, and a key
    without a ``record`` is filtered out server-side. A failed query raises here."""
    bind()
    ranges = ranges if ranges is not None else record_key_ranges()
    stop = threading.Event()
    queues: list[queue.Queue] = [queue.Queue(maxsize=_AHEAD) for _ in ranges]
    pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="cairn-records")
    try:
        # submitted in key order, so the range the consumer waits on has always started
        for rng, q in zip(ranges, queues, strict=True):
            pool.submit(contextvars.copy_context().run, _read_range, inc, rng, q, stop)
        for q in queues:
            while (got := q.get()) is not _DONE:
                if isinstance(got, Exception):
                    raise got
                yield from got  # a chunk: list[Memory | Damaged]
    finally:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)


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


# --- structured memory's name pointers and namespaces ------------------------------------------

def name_pointer(inc: str, name: str) -> str | None:
    """The memory_id the name pointer ``~name/<name>`` of a bank incarnation holds, or ``None``."""
    ptr = get_item(inc, NAME_POINTER_PREFIX + name)
    return ptr.memory_id if ptr is not None else None


def fingerprint_pointer(inc: str, fp: str) -> str | None:
    """The memory_id the fingerprint pointer ``~fp/<fp>`` of a bank incarnation holds, or ``None``."""
    ptr = get_item(inc, POINTER_PREFIX + fp)
    return ptr.memory_id if ptr is not None else None


def stage_name_pointer(tx: TransactWrite, inc: str, name: str, memory_id: str) -> None:
    """Stage the name pointer ``~name/<name>`` -> ``memory_id`` into ``tx`` (its key must be free)."""
    tx.save(MemoryModel(bank_key=inc, sk=NAME_POINTER_PREFIX + name, memory_id=memory_id),
            condition=MemoryModel.sk.does_not_exist())


def stage_drop_name_pointer(tx: TransactWrite, inc: str, name: str, memory_id: str) -> None:
    """Stage the deletion of the name pointer ``~name/<name>`` into ``tx`` (it must hold ``memory_id``)."""
    tx.delete(MemoryModel(bank_key=inc, sk=NAME_POINTER_PREFIX + name), condition=MemoryModel.memory_id == memory_id)


def iter_live(inc: str, page_size: int) -> Iterable[Memory | Damaged]:
    """The live records of a bank incarnation, newest first (the ``by_order`` index, read
    ``page_size`` at a time); a damaged one as its ``Damaged``."""
    bind()
    for it in MemoryModel.by_order.query(inc, consistent_read=True, page_size=page_size):
        if it.live is True:
            yield decoded(it)


def bank_names(org_id: str, prefix: str) -> list[str]:
    """The names of the org's bank rows starting with ``prefix`` (a key query)."""
    bind()
    return [r.name for r in BankModel.query(org_id, BankModel.name.startswith(prefix), consistent_read=True)]
# --- bank rows for the recall core, and the config version rows ------------------------------

CONFIG_ORG = "_system"  # org of the global config version row
CONFIG_NAME = "!config"  # name of every config version row: a key no bank name can take


@dataclass(frozen=True)
class BankRows:
    """One consistent read of some banks of an org: ``heads`` (usable banks by name; absent and
    damaged ones left out), ``version`` (the global config version) and ``org_version`` (the
    org's own), both 0 before the first reload."""

    heads: dict[str, BankHead]
    version: int
    org_version: int


def get_bank_rows(org_id: str, names: Iterable[str], known: Mapping[str, tuple[str, int]] | None = None) -> BankRows:
    """The banks ``names`` of ``org_id`` with their lane rows and, in the same consistent
    BatchGetItem, the global and the org's config version rows. ``known``: ``{name:
    (incarnation, lanes)}`` the caller expects (its cached indexes), whose lane rows are read in
    that same call; a bank not known so (cold, or another incarnation) costs a second
    BatchGetItem for its lane rows."""
    known = known or {}
    wanted = [n for n in dict.fromkeys(names) if n != CONFIG_NAME]
    config_keys = list(dict.fromkeys([(CONFIG_ORG, CONFIG_NAME), (org_id, CONFIG_NAME)]))
    guessed = [(org_id, lane_key(inc, lane)) for n in wanted if n in known
               for inc, lanes in [known[n]] for lane in range(1, lanes)]
    got = _batch_rows([(org_id, n) for n in wanted] + config_keys + guessed)
    version = org_version = 0
    for (o, name), row in got.items():
        if name == CONFIG_NAME:
            seq = int(row.seq) if isinstance(row.seq, (int, float)) else 0
            version = seq if o == CONFIG_ORG else version
            org_version = seq if o == org_id else org_version
    rows = {n: r for n in wanted if (r := got.get((org_id, n))) is not None and bank_problem(r) is None}
    unknown = [r for n, r in rows.items() if known.get(n) != (r.incarnation, lane_count(r))]
    got.update(_batch_rows([k for r in unknown for k in _lane_keys(org_id, r)]))
    lanes = {name: r for (_o, name), r in got.items() if name.startswith(LANE_PREFIX)}
    heads = {}
    for name, row in rows.items():
        with contextlib.suppress(Damaged):  # a bank with a damaged lane row reads as absent
            heads[name] = _head(row, lanes)
    return BankRows(heads, version, org_version)


def list_bank_rows(org_id: str | None = None) -> list[BankModel]:
    """Every row of ``org_id`` (banks, namespaces, trash entries, its config row, not the lane
    rows; consistent query) or, with no org, of every org (a table scan: schedules and the CLI
    only)."""
    bind()
    rows = BankModel.query(org_id, consistent_read=True) if org_id is not None else BankModel.scan()
    return [r for r in rows if not r.name.startswith(LANE_PREFIX)]


def get_config_row(org_id: str = CONFIG_ORG) -> BankModel | None:
    """The config version row of ``org_id`` (default: the global one), or ``None``; consistent."""
    bind()
    try:
        return BankModel.get(org_id, CONFIG_NAME, consistent_read=True)
    except DoesNotExist:
        return None


def update_config_row(org_id: str, *, add: int, tuning_json: str | None) -> int:
    """Add ``add`` to the ``seq`` of ``org_id``'s config version row (creating it on first use),
    keeping ``tuning_json`` as the last good tuning when given; returns the row's ``seq``."""
    bind()
    now = now_ms()
    row = BankModel(org_id, CONFIG_NAME)
    row.update(actions=[
        *([BankModel.tuning.set(tuning_json)] if tuning_json is not None else []),
        BankModel.seq.add(add),
        BankModel.bank_name.set(BankModel.bank_name | CONFIG_NAME),
        BankModel.incarnation.set(BankModel.incarnation | uuid.uuid4().hex),
        BankModel.created_at.set(BankModel.created_at | now),
        BankModel.updated_at.set(now),
    ])
    return int(row.seq or 0)
