"""The one write path: ``write`` runs an attempt's ``BankTx`` in a transaction that stages record
changes (``Write``) with the advance of each lane they fall in, conditioned on the positions read,
then moves the versions of the banks it changed and tells the ``on_commit`` observers (the recall
index's own cache).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from ... import semantic, timing
from ...clock import now_ms
from ...settings import get_settings
from ...storage.damage import Damaged
from ...storage.tables import BankModel, MemoryModel, RevisionModel
from ...storage.txn import TX_ITEMS, Retry, run_transaction
from ...usage import meter, quotas
from .. import dates, vectors
from ..records import Memory
from .keys import BACKFILL_KEY, EMBED_OP, NAME_POINTER_PREFIX, TRASH_PREFIX, pointer_key, tag_key
from .lanes import (
    LANE_SPAN,
    _batch_rows,
    _copy_row,
    _lane_problem,
    _vector_count,
    bank_problem,
    bump_versions,
    get_bank_head,
    get_bank_row,
    lane_count,
    lane_key,
    lane_of,
    new_bank,
)
from .queries import BackfillCursor, _blob, get_items, guard_of

T = TypeVar("T")


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


def _vector_actions(row: BankModel | None, writes: list[Write]) -> list[Any]:
    """The update actions of a lane's ``vectors`` counter for ``writes``: added to while the row
    (``None``: not written yet) counts the current model, else set afresh to what these writes
    count (the old model's vectors are no longer current) and named the current model's."""
    delta = vector_delta(writes)
    if row is not None and not vectors.counts_current(row.vectors_model):
        return [BankModel.vectors.set(max(0, delta)), BankModel.vectors_model.set(semantic.MODEL_ID)]
    return [BankModel.vectors.add(delta), BankModel.vectors_model.set(semantic.MODEL_ID)]


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


def vector_delta(writes: Iterable[Write]) -> int:
    """How ``writes`` move a bank's ``vectors`` counter (live records with a current vector)."""
    return sum(int(vectors.has_current(w.record)) - int(vectors.has_current(w.prev)) for w in writes)


def stage_backfill_cursor(tx: TransactWrite, inc: str, read: BackfillCursor, new: BackfillCursor) -> None:
    """Stage ``new`` as the cursor of ``inc``, committing only while the stored one is ``read``."""
    cond = MemoryModel.sk.does_not_exist() if read.version == 0 else MemoryModel.revision == read.version
    tx.save(MemoryModel(bank_key=inc, sk=BACKFILL_KEY, memory_id=new.after, revision=read.version + 1,
                        bf_left=new.left, bf_model=new.model), condition=cond)


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
    dates.attach(w.record for w in writes if w.op != EMBED_OP)  # an embed write leaves the record as it is
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
        self.read: set[str] = set()  # incarnations of the bank rows this attempt read
        self.changed: set[str] = set()  # incarnations whose bank row it changes besides ``stage``

    def versions_to_move(self) -> set[str]:
        """The incarnations whose version the commit must move (readers reuse what they read of a
        bank while its version stays): every bank the attempt staged changes into (any lane,
        lane 0 included), changed the row of (created, trashed, restored, its fields or rule
        count set) or read (an answer from what is stored, such as a replayed Idempotency-Key,
        may acknowledge a change whose writer stopped before moving the version)."""
        return self.read | self.changed | {str(row.incarnation) for _b, row, _changes in self.staged}

    def row(self, bank: str) -> BankModel | None:
        """The live bank row as this attempt reads it (consistent), or ``None``; 409 ``damaged``
        for an unusable row (``get_bank_row``)."""
        row = get_bank_row(self.org_id, bank)
        if row is not None:
            self.read.add(row.incarnation)
        return row

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
            self.changed.add(fresh.incarnation)
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
        self.changed.add(row.incarnation)

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
        self.changed.add(trash.incarnation)
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
        self.changed.add(row.incarnation)
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
        self.changed.add(row.incarnation)


def write(org_id: str, attempt: Callable[[BankTx], T], *, retries: int | None = None) -> T:
    """The one write path of bank-scoped records: run ``attempt(BankTx)`` in a transaction
    conditioned on the positions of the lanes each staged change takes (``stage``), retried from a
    fresh read on a lost race (``storage.txn.run_transaction``: 503 ``write_contention`` after
    ``Settings.write_retries``), then move the version of each bank it read or changed
    (``BankTx.versions_to_move``, ``bump_versions``: readers rely on it, so only then is the
    write acknowledged), then tell
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

    with timing.phase("commit"):
        result = run_transaction(run, retries=retries)
        if last:
            bump_versions(org_id, last[0].versions_to_move())
        for bank, row, changes in last[0].staged if last else []:
            _notify(org_id, bank, row, changes)
    return result


def stage_name_pointer(tx: TransactWrite, inc: str, name: str, memory_id: str) -> None:
    """Stage the name pointer ``~name/<name>`` -> ``memory_id`` into ``tx`` (its key must be free)."""
    tx.save(MemoryModel(bank_key=inc, sk=NAME_POINTER_PREFIX + name, memory_id=memory_id),
            condition=MemoryModel.sk.does_not_exist())


def stage_drop_name_pointer(tx: TransactWrite, inc: str, name: str, memory_id: str) -> None:
    """Stage the deletion of the name pointer ``~name/<name>`` into ``tx`` (it must hold ``memory_id``)."""
    tx.delete(MemoryModel(bank_key=inc, sk=NAME_POINTER_PREFIX + name), condition=MemoryModel.memory_id == memory_id)
