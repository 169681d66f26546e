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
import secrets
import threading
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
    """Add 1 to the version of each bank incarnation of ``incs``: after a commit that changed the
    bank (any lane, lane 0 included, or its row) or acknowledges what is stored, before the write
    is acknowledged (``write``). An UpdateItem of its own,
    never in a transaction, so concurrent writers of different lanes never conflict on it; a
    version that is not a number is replaced (``_move_version``), so a hand edit cannot stop the
    bank's writes. Raises what DynamoDB raises once its retries are spent (the write committed; not
    acknowledged, it shows with the bank's next write)."""
    bind()
    for inc in sorted(set(incs)):
        _move_version(BankModel(org_id, version_key(inc)))


def _move_version(item: BankModel) -> None:
    """Add 1 to a version item. One whose value is not a number (a hand edit: DynamoDB refuses
    to add to it) is replaced by a number no reader can hold: readers never trust a version
    that does not decode, and counts stay far below ms since epoch x 1000."""
    try:
        item.update(actions=[BankModel.seq.add(1)])
        return
    except UpdateError as exc:
        if exc.cause_response_code != "ValidationException":
            raise
    try:
        item.update(actions=[BankModel.seq.set(now_ms() * 1000 + secrets.randbelow(1000))],
                    condition=~BankModel.seq.is_type())
    except UpdateError as exc:  # replaced meanwhile by another writer: move it as usual
        if exc.cause_response_code != "ConditionalCheckFailedException":
            raise
        item.update(actions=[BankModel.seq.add(1)])


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
    # the bank's version (``get_bank_rows``) as read before its row and lane rows; ``None``: not
    # read before them, so a reader cannot reuse this head
    version: int | None = None

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
    ``version``: the bank's version read before ``row`` and ``lanes`` (``None``: not read before them)."""
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
    return BankHead(row, Clock(tuple(positions)), memories, pinned, records, vecs, version)


def _count(value: Any) -> int:
    """A counter attribute as an int (absent or not a number: 0)."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _vector_count(row: BankModel) -> int:
    """The lane row's ``vectors`` counter: 0 while it counts another model than the current one."""
    return _count(row.vectors) if vectors.counts_current(row.vectors_model) else 0


BATCH_KEYS = 100  # keys DynamoDB's BatchGetItem takes in one request
BATCH_THREADS = 4  # BatchGetItem requests of one read in flight at once


RawItem = dict[str, dict[str, object]]  # an item as DynamoDB returns it: {attribute: {type: value}}


def _batch_raw(keys: list[tuple[str, str]]) -> dict[tuple[str, str], RawItem]:
    """The banks-table items of ``keys`` as DynamoDB returns them (absent ones left out), each
    read consistently; over ``BATCH_KEYS`` keys the requests run in parallel (one round trip's
    latency, not one per 100 keys), and keys DynamoDB leaves unprocessed are asked again. The
    items of one call are not one snapshot: each is as it was when DynamoDB read it. Decode an
    item with ``BankModel.from_raw_data`` (a row) or ``BankModel.raw_int`` (one counter)."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return {}
    bind()
    chunks = [keys[i:i + BATCH_KEYS] for i in range(0, len(keys), BATCH_KEYS)]

    def read(chunk: list[tuple[str, str]]) -> list[RawItem]:
        conn, table = BankModel._get_connection(), BankModel.Meta.table_name
        todo: list[Any] = [{_HASH: {"S": o}, _RANGE: {"S": n}} for o, n in chunk]
        out: list[RawItem] = []
        while todo:
            data = conn.batch_get_item(todo, consistent_read=True)
            out += data.get("Responses", {}).get(table, [])
            todo = data.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
        return out

    got = read(chunks[0]) if len(chunks) == 1 else [r for part in _batch_pool().map(read, chunks) for r in part]
    return {(str(it[_HASH]["S"]), str(it[_RANGE]["S"])): it for it in got}


_HASH, _RANGE = BankModel.org_id.attr_name, BankModel.name.attr_name


def _batch_rows(keys: list[tuple[str, str]]) -> dict[tuple[str, str], BankModel]:
    """The rows of ``keys`` (absent ones left out), read as ``_batch_raw`` reads them and decoded
    as every read is (``BankModel.from_raw_data``)."""
    return {k: BankModel.from_raw_data(it) for k, it in _batch_raw(keys).items()}


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


@dataclass(frozen=True)
class KnownBank:
    """What a reader already holds of a bank (its cached index): the ``incarnation`` and lane
    count it indexes, and ``head``, the bank as last read when the index was made fresh
    (``None``: not read since, e.g. only its own writes applied)."""

    incarnation: str
    lanes: int
    head: BankHead | None = None


def _version(item: RawItem | None) -> int | None:
    """A version item's value: 0 while absent (no write moved it yet; version items are never
    deleted), ``None`` when it does not decode (then never trusted: the bank is read whole)."""
    return 0 if item is None else BankModel.raw_int(item, "seq")


# what the second or third read of ``get_bank_rows`` expects of a bank: its incarnation, its lane
# count and its version as read before this read (``None``: unknown, the head is not reusable)
_Expect = tuple[str, int, int | None]


def _row_and_lanes(org_id: str, expect: Mapping[str, _Expect]) -> list[tuple[str, str]]:
    """The keys of the rows and lane rows of the banks ``expect`` names."""
    return [k for name, (inc, lanes, _v) in expect.items()
            for k in [(org_id, name), *[(org_id, lane_key(inc, lane)) for lane in range(1, lanes)]]]


def _heads_read(org_id: str, expect: Mapping[str, _Expect],
                got: Mapping[tuple[str, str], RawItem]) -> dict[str, BankHead]:
    """The ``BankHead``s of the banks ``expect`` names from ``got``, the read of their rows and
    lane rows (``_row_and_lanes``); an absent or unusable row, or a damaged lane row, reads as
    absent. A row of another incarnation or lane count than expected (trashed and re-created
    meanwhile) is summed with its own lane rows, read after it, with no version: not reusable."""
    heads: dict[str, BankHead] = {}
    moved: list[BankModel] = []
    for name, (inc, lanes, version) in expect.items():
        item = got.get((org_id, name))
        row = BankModel.from_raw_data(item) if item is not None else None
        if row is None or bank_problem(row) is not None:
            continue
        if row.incarnation != inc or lane_count(row) != lanes:
            moved.append(row)
            continue
        mine = {k: BankModel.from_raw_data(it) for lane in range(1, lanes)
                if (it := got.get((org_id, k := lane_key(inc, lane)))) is not None}
        with contextlib.suppress(Damaged):  # a bank with a damaged lane row reads as absent
            heads[name] = _head(row, mine, version=version)
    if moved:
        lane_rows = {k: r for (_o, k), r in _batch_rows([k for r in moved for k in _lane_keys(org_id, r)]).items()}
        for row in moved:
            with contextlib.suppress(Damaged):
                heads[str(row.name)] = _head(row, lane_rows)
    return heads


def get_bank_rows(org_id: str, names: Iterable[str], known: Mapping[str, KnownBank] | None = None) -> BankRows:
    """The banks ``names`` of ``org_id`` (``BankHead``s) and the global and the org's config
    version rows: while none of the caller's ``known`` banks (its cached indexes) moved, one
    consistent BatchGetItem of their version items and the config rows, nothing else.

    A known bank whose version equals its known head's is that head, bank row included: every
    write of a bank (every lane, lane 0 too, and every change of its row) moves its version
    after its commit and before it is acknowledged, and the head's version was read before its
    rows. Any other known bank (moved, version damaged) costs a second read, of its row and lane
    rows; a bank the caller does not know is read in the first call (its row names its
    incarnation), then its version, then its row and lane rows, so the head it gets is reusable
    (ARCHITECTURE.md "Index freshness")."""
    known = known or {}
    wanted = [n for n in dict.fromkeys(names) if n != CONFIG_NAME]
    config = (CONFIG_ORG, CONFIG_NAME), (org_id, CONFIG_NAME)
    knew = {n: k for n in wanted if (k := known.get(n)) is not None}
    first = _batch_raw([*config, *[(org_id, version_key(k.incarnation)) for k in knew.values()],
                        *[(org_id, n) for n in wanted if n not in knew]])
    version, org_version = (_version(first.get(k)) or 0 for k in config)  # a damaged one reads as 0
    heads: dict[str, BankHead] = {}
    stale: dict[str, _Expect] = {}
    for name, k in knew.items():
        v = _version(first.get((org_id, version_key(k.incarnation))))
        if k.head is not None and v is not None and k.head.version == v and k.head.incarnation == k.incarnation:
            heads[name] = k.head
        else:
            stale[name] = (k.incarnation, k.lanes, v)
    met = {n: row for n in wanted if n not in knew and (it := first.get((org_id, n))) is not None
           and bank_problem(row := BankModel.from_raw_data(it)) is None}
    if met or stale:  # the versions of the banks first met, and the rows and lanes of the moved ones
        second = _batch_raw([*[(org_id, version_key(r.incarnation)) for r in met.values()],
                             *_row_and_lanes(org_id, stale)])
        heads.update(_heads_read(org_id, stale, second))
        expect = {n: (str(r.incarnation), lane_count(r), _version(second.get((org_id, version_key(r.incarnation)))))
                  for n, r in met.items()}
        if expect:  # read after their versions, so the heads they make can be reused
            third = _batch_raw(_row_and_lanes(org_id, expect))
            heads.update(_heads_read(org_id, expect, third))
    return BankRows({n: heads[n] for n in wanted if n in heads}, version, org_version)


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
