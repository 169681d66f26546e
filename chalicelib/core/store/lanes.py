"""Write lanes, clocks and bank rows: how a bank's changes split into lanes, the ``Clock`` a reader
applies, a bank's ``BankHead`` read consistently, the version item a writer moves before
acknowledging (``bump_versions``) and the read recall makes of many banks at once
(``get_bank_rows``), the config version rows, and the queries of the banks table.

A bank's changes are split into ``lanes`` (fixed when the bank is created) by memory id. Lane 0
is counted on the bank row itself; lane l >= 1 on its own row ``!lane/<incarnation>/<l>`` in the
banks table. A change of memory m advances only lane_of(m)'s ``seq``, conditioned on the value
read, so concurrent writers of one bank meet only when their memories share a lane, and one
memory's changes stay in commit order in its lane. Its revision is keyed ``lane * LANE_SPAN +
position``. A reader's ``Clock`` is the vector of lane positions.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pynamodb.exceptions import DoesNotExist, UpdateError

from ...clock import now_ms
from ...settings import get_settings
from ...storage.damage import Damaged
from ...storage.tables import BankModel, MemoryModel, bind
from .. import vectors
from .keys import TRASH_PREFIX

LANE_PREFIX = "!lane/"  # a bank's write lanes 1..: ``!lane/<incarnation>/<lane>``
LANE_SPAN = 10**12  # the revision seq of lane l's k-th change is l * LANE_SPAN + k


MAX_LANES = 64  # a trash seals every lane in one transaction: within DynamoDB's 100 items


# The types of a bank row and of a memory item, for annotations outside this module (which
# never builds one itself).
BankRow = BankModel


MemoryRow = MemoryModel


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


def version_key(inc: str) -> str:
    """The banks-table sort key of incarnation ``inc``'s version item (``bump_versions``)."""
    return f"{LANE_PREFIX}{inc}/v"


def bump_versions(org_id: str, incs: Iterable[str]) -> None:
    """Add 1 to the version of each bank incarnation of ``incs``: after a commit that advanced one
    of its lanes >= 1, before the write is acknowledged (``write``). An UpdateItem of its own,
    never in a transaction, so concurrent writers of different lanes never conflict on it.
    Raises what DynamoDB raises once its retries are spent (the write committed; not
    acknowledged, it shows with the bank's next write)."""
    bind()
    for inc in sorted(set(incs)):
        BankModel(org_id, version_key(inc)).update(actions=[BankModel.seq.add(1)])


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
    # the bank's version (``get_bank_rows``) as read before ``lanes``, its lane rows 1.. by sort
    # key; ``None``: not read before them, so a reader cannot reuse these lane rows
    version: int | None = None
    lanes: Mapping[str, BankModel] = field(default_factory=dict, compare=False)

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


def _head(row: BankModel, lanes: Mapping[str, BankModel], strict: bool = True,
          version: int | None = None) -> BankHead:
    """Sum ``row`` and its lane rows (``lanes`` by sort key; an absent one has seen nothing)
    into a ``BankHead``; 409 ``damaged`` when a lane row cannot order changes (with ``strict``;
    else its position reads as 0: counters for a listing, never a freshness decision).
    ``version``: the bank's version read before ``lanes`` (``None``: not read before them)."""
    positions = [int(row.seq)]
    memories, pinned, records = int(row.memories or 0), int(row.pinned or 0), int(row.records or 0)
    vecs = _vector_count(row)
    mine: dict[str, BankModel] = {}
    for lane in range(1, lane_count(row)):
        lr = lanes.get(lane_key(row.incarnation, lane))
        if lr is None:
            positions.append(0)
            continue
        mine[lr.name] = lr
        reason = _lane_problem(lr, row.incarnation)
        if reason is not None and strict:
            raise Damaged("bank", str(row.bank_name), reason, hint="Restore the bank from a backup of its lane rows.")
        positions.append(int(lr.seq or 0) if reason is None else 0)
        memories, pinned, records = memories + int(lr.memories or 0), pinned + int(lr.pinned or 0), \
            records + int(lr.records or 0)
        vecs += _vector_count(lr) if reason is None else 0
    return BankHead(row, Clock(tuple(positions)), memories, pinned, records, vecs, version, mine)


def _count(value: Any) -> int:
    """A counter attribute as an int (absent or not a number: 0)."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _vector_count(row: BankModel) -> int:
    """The lane row's ``vectors`` counter: 0 while it counts another model than the current one."""
    return _count(row.vectors) if vectors.counts_current(row.vectors_model) else 0


BATCH_KEYS = 100  # keys DynamoDB's BatchGetItem takes in one request
BATCH_THREADS = 4  # BatchGetItem requests of one read in flight at once


def _batch_rows(keys: list[tuple[str, str]]) -> dict[tuple[str, str], BankModel]:
    """The rows of ``keys`` (absent ones left out), each read consistently; over ``BATCH_KEYS``
    keys the requests run in parallel (one round trip's latency, not one per 100 keys). The rows
    of one call are not one snapshot: each is as it was when DynamoDB read it."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return {}
    bind()
    chunks = [keys[i:i + BATCH_KEYS] for i in range(0, len(keys), BATCH_KEYS)]

    def read(chunk: list[tuple[str, str]]) -> list[BankModel]:
        return list(BankModel.batch_get(chunk, consistent_read=True))

    got = read(chunks[0]) if len(chunks) == 1 else [r for part in _batch_pool().map(read, chunks) for r in part]
    return {(r.org_id, r.name): r for r in got}


_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _batch_pool() -> ThreadPoolExecutor:
    """The process's pool for parallel BatchGetItem requests, made on first use (again in a forked
    child): starting threads per recall would cost more than the requests they overlap."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=BATCH_THREADS, thread_name_prefix="cairn-batch-get"))
        return _pool[1]


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


def _copy_row(row: BankModel) -> BankModel:
    return BankModel(**{k: getattr(row, k) for k in BankModel.get_attributes()})


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


def claim_snapshot(org_id: str, bank: str, incarnation: str, seq: int, *, every: int, at: int,
                   min_interval_ms: int) -> bool:
    """Claim the right to write the index snapshot at clock total ``seq`` (readers and writers
    leave one every ``every`` changes): one conditional update of the bank row, which holds
    while the row is still that incarnation, no claim is within ``every`` changes below ``seq``
    (or at or above it) and none was made within ``min_interval_ms`` before ``at`` (ms). Returns
    whether this caller won; a lost race or a conflict with a writer's transaction is ``False``."""
    bind()
    try:
        BankModel(org_id, bank).update(
            actions=[BankModel.snapshot_claim.set(seq), BankModel.snapshot_claim_at.set(at)],
            condition=(BankModel.incarnation == incarnation)
            & (BankModel.snapshot_claim.does_not_exist() | (BankModel.snapshot_claim <= seq - every))
            & (BankModel.snapshot_claim_at.does_not_exist() | (BankModel.snapshot_claim_at <= at - min_interval_ms)))
    except UpdateError as exc:
        if exc.cause_response_code in ("ConditionalCheckFailedException", "TransactionConflictException"):
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


def bank_names(org_id: str, prefix: str) -> list[str]:
    """The names of the org's bank rows starting with ``prefix`` (a key query)."""
    bind()
    return [r.name for r in BankModel.query(org_id, BankModel.name.startswith(prefix), consistent_read=True)]


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


def _rehead(head: BankHead, row: BankModel) -> BankHead:
    """``head`` with its bank row (lane 0) replaced by ``row``, a fresher read of the same
    incarnation: its lane rows' positions and counters stay (``_head`` summed them already)."""
    old = head.row
    return BankHead(row, Clock((int(row.seq), *head.clock.positions[1:])),
                    head.memories - int(old.memories or 0) + int(row.memories or 0),
                    head.pinned - int(old.pinned or 0) + int(row.pinned or 0),
                    head.records - int(old.records or 0) + int(row.records or 0),
                    head.vectors - _vector_count(old) + _vector_count(row), head.version, head.lanes)


@dataclass(frozen=True)
class KnownBank:
    """What a reader already holds of a bank (its cached index): the ``incarnation`` and lane
    count it indexes, and ``head``, the bank as last read when the index was made fresh
    (``None``: not read since, e.g. only its own writes applied)."""

    incarnation: str
    lanes: int
    head: BankHead | None = None


def get_bank_rows(org_id: str, names: Iterable[str], known: Mapping[str, KnownBank] | None = None) -> BankRows:
    """The banks ``names`` of ``org_id`` (``BankHead``s) and the global and the org's config
    version rows, in one consistent BatchGetItem (parallel requests past 100 keys) when the
    caller's ``known`` banks (its cached indexes) have not moved.

    That read takes each known bank's version item with its row. A version equal to the known
    head's means no commit into its lanes >= 1 was acknowledged since that head's lane rows were
    read (a writer moves the version after its commit and before acknowledging; the known head's
    version was read before its lanes), so the head is its known lane rows plus the fresh bank row
    (lane 0). Any other bank (cold, moved, another incarnation) costs a second read of its lane
    rows, after its version (read in the first call, or in a call of its own for a bank the
    caller does not know), so the head it gets can be reused next time."""
    known = known or {}
    wanted = [n for n in dict.fromkeys(names) if n != CONFIG_NAME]
    config_keys = list(dict.fromkeys([(CONFIG_ORG, CONFIG_NAME), (org_id, CONFIG_NAME)]))
    versioned = {n: version_key(k.incarnation) for n in wanted if (k := known.get(n)) is not None and k.lanes > 1}
    got = _batch_rows([(org_id, n) for n in wanted] + config_keys + [(org_id, k) for k in versioned.values()])
    version = org_version = 0
    for (o, name), row in got.items():
        if name == CONFIG_NAME:
            seq = int(row.seq) if isinstance(row.seq, (int, float)) else 0
            version = seq if o == CONFIG_ORG else version
            org_version = seq if o == org_id else org_version
    rows = {n: r for n in wanted if (r := got.get((org_id, n))) is not None and bank_problem(r) is None}
    versions = {n: _count(v.seq) if (v := got.get((org_id, k))) is not None else 0 for n, k in versioned.items()
                if n in rows and k == version_key(rows[n].incarnation)}
    heads: dict[str, BankHead] = {}
    cold: dict[str, BankModel] = {}
    for name, row in rows.items():
        h = k.head if (k := known.get(name)) is not None else None
        if lane_count(row) == 1:
            cold[name] = row  # one lane: the bank row is all there is to read
        elif (h is not None and h.version is not None and h.incarnation == row.incarnation
              and len(h.clock.positions) == lane_count(row) and versions.get(name) == h.version):
            heads[name] = _rehead(h, row)
        else:
            cold[name] = row
    unread = {n: version_key(r.incarnation) for n, r in cold.items() if n not in versions and lane_count(r) > 1}
    if unread:  # read before the lane rows, so the heads they make can be reused
        vs = _batch_rows([(org_id, k) for k in unread.values()])
        versions.update({n: _count(v.seq) if (v := vs.get((org_id, k))) is not None else 0 for n, k in unread.items()})
    lane_rows = _batch_rows([k for r in cold.values() for k in _lane_keys(org_id, r)])
    lanes = {name: r for (_o, name), r in lane_rows.items()}
    for name, row in cold.items():
        with contextlib.suppress(Damaged):  # a bank with a damaged lane row reads as absent
            heads[name] = _head(row, lanes, version=versions.get(name))
    return BankRows({n: heads[n] for n in rows if n in heads}, version, org_version)


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
