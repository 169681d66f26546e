"""Per-bank Whoosh indexes cached in ``/tmp`` and kept fresh by the bank's lane clock: two
containers that share only DynamoDB and S3 never serve a stale or a lost memory.

A bank's changes are split into write lanes by memory id (``core.store``); its ``Clock`` is the
vector of lane positions. An ``IndexCache`` holds one Whoosh ``FileStorage`` index per bank
incarnation under its root directory (``Settings.index_dir``, default ``private_root()``: a
directory of this process's own, as a Lambda container's ``/tmp`` is), each with a ``cairn.json``
naming the org, bank, incarnation and the clock it has applied. Freshness, given the bank's
``BankHead`` from the recall's one consistent read:

* warm and current (every lane of the cache's clock at the head's): nothing to do, no further call;
* behind: for each lane behind, apply the revisions past the cache's position in it
  (``core.store.iter_lane_revisions``, one key query per lane, lanes read in parallel), in order,
  never skipping one (a gap means the history cannot be trusted: rebuild);
* cold: reuse the directory if this process left one, else load the newest S3 snapshot
  ``<org>/indexes/<bank>/<clock total>.v<FORMAT>.tar.zst`` of this incarnation (a tar compressed
  with zstd; ``.tar.gz`` ones written before are read too) and catch up, else rebuild from
  ``core.store.iter_records_any_order``.

Snapshots left on the way (``leave_due_snapshot``): the container that brings an index
``Settings.snapshot_every`` changes past the bank's last snapshot, a reader catching up or a
writer applying its commit (a writer that holds no index of the bank loads it when its commit lands
on a lane position that is a multiple of ``snapshot_every / lanes``), claims the snapshot on the
bank row (``store.claim_snapshot``: one container per ``snapshot_every`` changes, at most one per
``snapshot_min_interval_s``) and uploads it, so a cold container replays about that many changes
at most. A snapshot is one S3 object written whole, named by the clock total it holds, with its
clock inside; a loader takes only one of this incarnation and format whose clock the bank's covers,
opens every segment before trusting it, and catches up from its clock, so a snapshot a write
overtook is only older, never wrong. A purge deletes the bank's snapshots after its transaction;
one uploaded by a container that caught up before the purge could land after that delete, so
the writer catches the index up again after the upload and deletes its snapshot if that meets a
purge (it rebuilds).

Directories and snapshots carry the document format they were written in (``schema.FORMAT``:
``format`` in ``cairn.json``, ``v<FORMAT>`` in the snapshot key). One of another format is never
opened: the bank is rebuilt from its records (a cold rebuild leaves a snapshot of the current
format behind) and the snapshots of other formats are counted (metric
``SnapshotsOfOtherFormat``) and deleted with the next snapshot written.

A writer updates its own cache at once: ``IndexCache.on_commit`` is registered with
``core.store.on_commit`` (through the *active* cache, see ``using``) and applies the committed
records if they follow the cache's positions directly, or catches those lanes up from DynamoDB
on a gap.
One lock per bank serialises writers and readers of an index in this process (chalice local is
threaded; Whoosh allows one writer per index). Banks are evicted when the resident memory the
open banks add (``BankIndex.resident_bytes``: the directories twice, mapped and copied, and the
arrays recall keeps per segment; a running total) exceeds ``Settings.index_cache_mb`` (default
400; the stages set theirs), the one of lowest GreedyDual-Size-Frequency priority first: the
cache's clock plus the bank's uses times what its cold load took (ms) over its resident bytes,
the clock rising to each evicted bank's priority, so a small bank costly to load stays longer
than a large one used as often, and banks not used for a while age out. A bank written in many
small commits is merged by the cache's merge thread
(``IndexCache.schedule_merge``, ``merge_plan``). A trashed bank's successor has a
new incarnation and so its own index. Catch-ups, snapshot loads and rebuilds each emit their
metric (``metrics.index_catch_up``, ``metrics.index_rebuild``).

Purges: a purge moves the memory to a tombstone under another id, so no revision says which
document to drop. A cache that sees a purge revision therefore rebuilds the bank from its records
in an empty directory (``rebuild_into``), and the writer's own cache drops the bank's index and
directory at once (``on_commit``): no purged text or id stays in a segment file, and the bank
service deletes the bank's snapshots. An idle container keeps its directory until it next reads
the bank (or ends).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import gzip
import hashlib
import heapq
import io
import json
import os
import queue
import shutil
import tarfile
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import zstandard
from whoosh import index as whoosh_index
from whoosh.filedb.filestore import RamStorage
from whoosh.reading import EmptyReader, MultiReader, SegmentReader

from .. import metrics, patterns
from ..clock import now_ms
from ..core import store
from ..core.records import Memory
from ..core.store import BankHead, BankRow, Clock, KnownBank, split_seq
from ..settings import get_settings
from ..storage import blobs
from ..storage.damage import Damaged
from .schema import FORMAT, codec, schema, to_document, with_added_fields
from .whoosh_private import cached_column, move_deletions, read_toc

META_FILE = "cairn.json"
INDEX_NAME = "MAIN"
SNAPSHOT_KEEP = 2
# A cold rebuild of this many documents leaves a snapshot behind (about 0.3 s of compression and
# an upload at 10k, against seconds of rebuild for every later cold container); below it a
# rebuild costs about as little as a snapshot load.
COLD_SNAPSHOT_MIN_DOCS = 1000
# Snapshots are tars compressed with zstd: it inflates a 100k bank's 40 MB about 4x faster than
# gzip at the same size, and a cold container pays the inflate. Level 3 is zstd's default.
SNAPSHOT_SUFFIX = f".v{FORMAT}.tar.zst"
SNAPSHOT_ZSTD_LEVEL = 3
# the inflated size a snapshot's zstd frame may claim, per compressed byte (ours are about 2x):
# a damaged header never makes a container allocate gigabytes
SNAPSHOT_MAX_RATIO = 64
# the current format's snapshots, zstd (written now) or gzip (written before, still read)
_SNAP_RE = patterns.compile(rf"([0-9]+)\.v{FORMAT}\.tar\.(zst|gz)")
_ANY_SNAP_RE = patterns.compile(r"([0-9]+)(?:\.v[0-9]+)?\.tar\.(?:zst|gz)")  # every format's (1 had no "v1")


class StaleHistory(Exception):
    """The revisions past the cache's positions do not follow them directly, or hold a purge
    (rebuild instead)."""


def _purged(rec: Memory | Damaged) -> bool:
    return isinstance(rec, Memory) and rec.purged_at is not None


CATCH_UP_THREADS = 8  # lanes read at once when several are behind


TIER_FANOUT = 10  # merge when a size tier (powers of ten) holds this many segments
REWRITE_DELETED_SHARE = 0.3  # rewrite a segment once this share of it is replaced documents


def _rewrite(writer, segments) -> None:
    for seg in segments:
        reader = SegmentReader(writer.storage, writer.schema, seg)
        writer.add_reader(reader)  # copies the live documents only
        reader.close()


def MERGE_TIERED(writer, segments):
    """Whoosh merge policy for one-document commits: segments are grouped in tiers by size
    (powers of ten); a tier holding ``TIER_FANOUT`` segments is merged into one, and a segment
    whose replaced documents reach ``REWRITE_DELETED_SHARE`` is rewritten. Each document is
    rewritten O(log N) times, so one write's cost stays flat as the bank grows (Whoosh's
    ``MERGE_SMALL`` re-merged growing segments on most commits)."""
    tiers: dict[int, list] = {}
    merge = []
    for seg in segments:
        n = seg.doc_count_all()
        if n and seg.deleted_count() / n >= REWRITE_DELETED_SHARE:
            merge.append(seg)
        else:
            tiers.setdefault(len(str(max(1, n))), []).append(seg)
    for segs in tiers.values():
        if len(segs) >= TIER_FANOUT:
            merge.extend(segs)
    _rewrite(writer, merge)
    return [s for s in segments if s not in merge]


# Background merging (``IndexCache.schedule_merge``): the import path commits every 23 records,
# so MERGE_TIERED leaves up to nine segments per size tier (17 at 100k memories), each with its
# own copy of the vocabulary's terms and a pass of every query. A bank of at least
# MERGE_MIN_DOCS documents with more than MERGE_MAX_SEGMENTS segments has its smallest ones
# merged by the cache's merge thread, at most MERGE_MAX_DOCS documents at a time (the bank's
# lock is held meanwhile, as for a write's own tier merge), each merged segment at most
# MERGE_RATIO times the documents merged with it (the tiers are powers of ten apart).
MERGE_MIN_DOCS = 5000
MERGE_MAX_SEGMENTS = 4
MERGE_MAX_DOCS = 25000
MERGE_RATIO = 10


# an open segment file is resident twice: its pages mapped, and the copy Whoosh makes of each part
OPEN_FILE_COPIES = 2


def merge_plan(segments: list) -> list:
    """The segments a background merge rewrites into one (smallest first), or ``[]``: see
    ``MERGE_MAX_SEGMENTS``."""
    sizes = [s.doc_count_all() for s in segments]
    if len(segments) <= MERGE_MAX_SEGMENTS or sum(sizes) < MERGE_MIN_DOCS:
        return []
    plan: list = []
    total = 0
    for n, seg in sorted(zip(sizes, segments, strict=True), key=lambda x: x[0]):
        if plan and (total + n > MERGE_MAX_DOCS or n > MERGE_RATIO * total):
            break
        plan.append(seg)
        total += n
    return plan if len(plan) > 1 else []


def _same_deletions(a, b) -> bool:
    """Whether two ``Segment`` objects of one segment id mark the same documents deleted."""
    if a.deleted_count() != b.deleted_count():
        return False
    return not a.has_deletions() or set(a.deleted_docs()) == set(b.deleted_docs())


def snapshot_prefix(org_id: str, bank: str) -> str:
    """``<org>/indexes/<bank>/``: where a bank's index snapshots live."""
    return blobs.org_key(org_id, "indexes", bank) + "/"


def snapshot_key(org_id: str, bank: str, seq: int) -> str:
    """``<org>/indexes/<bank>/<seq>.v<FORMAT>.tar.zst``: the snapshot of the bank's index at clock
    total ``seq`` in the current document format."""
    return f"{snapshot_prefix(org_id, bank)}{seq}{SNAPSHOT_SUFFIX}"


@dataclass
class BankIndex:
    """One bank incarnation's index in this container: its Whoosh index, the ``clock`` applied
    (positions per lane),
    a reader kept open between recalls (refreshed after each commit, unchanged segments reused;
    ``apply`` also finds the documents it replaces through it), per-segment statistics
    caches (scorer.py) and per-segment id lookups (``IdLookup``: ids have a column, no terms)."""

    org_id: str
    bank: str
    inc: str
    path: str
    ix: Any
    clock: Clock = field(default_factory=lambda: Clock((0,)))
    size_bytes: int = 0
    _reader: Any = None
    _reader_gen: int = -1  # the commit generation the open reader shows
    stats_cache: dict = field(default_factory=dict)
    id_lookups: dict[str, IdLookup] = field(default_factory=dict)
    snapshot_base: int = 0  # the clock total of the snapshot it was loaded from or last left
    snapshot_tried_ms: float = 0.0  # when this container last tried to claim one (time.monotonic() ms)
    load_ms: float = 0.0  # what its cold load took in this container (the eviction's cost of a miss)
    uses: int = 0  # reads and writes it served since it was loaded
    priority: float = 0.0  # its eviction priority (``IndexCache._prioritise``)
    heap_seq: int = 0  # its current item in the cache's eviction heap
    head: BankHead | None = None  # the bank as last read when this index was made fresh (its lane rows)

    @property
    def seq(self) -> int:
        """Every change applied (the clock's total)."""
        return self.clock.total

    def reader(self):
        """The open reader of the current commit (callers hold the bank lock)."""
        if self._reader is None:
            self._reader_gen = -1
            self._reader = self.ix.reader()
            self._reader_gen = self._reader.generation()
        return self._reader

    def close_reader(self) -> None:
        """Drop the reader; the next ``reader()`` opens the latest commit."""
        old, self._reader = self._reader, None
        self._reader_gen = -1
        if old is not None:
            old.close()

    def _refresh(self) -> None:
        """Open a reader of the latest commit, reusing the previous reader's segment readers
        whose segment is unchanged (same id, same deletion set): after a one-document commit
        only the new segment is opened, so the cost stays flat as the bank grows (opening a
        compound segment copies its postings into memory). Whoosh's own ``reader(reuse=...)``
        is not used: it keeps a reused segment's old deletion set and merged-away segments."""
        old, self._reader = self._reader, None
        self._reader_gen = -1
        if old is None:
            return
        leaves = {r.segment().segment_id(): r for r, _off in old.leaf_readers()
                  if r.segment() is not None}
        readers = []
        try:
            toc = read_toc(self.ix)
            for seg in toc.segments:
                r = leaves.get(seg.segment_id())
                if r is not None and (_same_deletions(r.segment(), seg) or move_deletions(r, seg)):
                    del leaves[seg.segment_id()]
                else:
                    r = SegmentReader(self.ix.storage, toc.schema, seg, generation=toc.generation)
                readers.append(r)
        except BaseException:
            for r in readers + list(leaves.values()):
                r.close()  # the next reader() opens the latest commit afresh
            raise
        for r in leaves.values():
            r.close()
        if not readers:
            self._reader = EmptyReader(toc.schema)
        elif len(readers) == 1:
            self._reader = readers[0]
        else:
            self._reader = MultiReader(readers, generation=toc.generation)
        self._reader_gen = toc.generation

    def _doomed(self, writer, ids: Iterable[str]) -> list[int]:
        """Document numbers (in ``writer``'s numbering) of the live documents of ``ids``: looked
        up per segment (``IdLookup``, kept by segment id) in the open reader when it shows the
        commit the writer started from, else in the writer's own reader."""
        reader = self.reader()
        if not reader.doc_count_all():
            return []
        if self._reader_gen != writer.generation - 1:
            reader = writer.searcher().reader()  # closed by the writer
        leaves = reader.leaf_readers()
        live = {leaf.segment().segment_id() for leaf, _off in leaves}
        for gone in [k for k in self.id_lookups if k not in live]:
            del self.id_lookups[gone]  # merged away
        ids = list(ids)
        out: list[int] = []
        for leaf, off in leaves:
            sid = leaf.segment().segment_id()
            lookup = self.id_lookups.get(sid)
            if lookup is None:
                lookup = self.id_lookups[sid] = IdLookup(leaf)
            out.extend(off + d for d in lookup.find(leaf, ids) if not leaf.is_deleted(d))
        return out

    def segments(self) -> list:
        """The segments the open reader shows (Whoosh ``Segment`` objects; callers hold the bank
        lock or accept a view one commit old)."""
        return [leaf.segment() for leaf, _off in self.reader().leaf_readers() if leaf.segment() is not None]

    def merge(self) -> bool:
        """Merge the segments ``merge_plan`` picks into one (call holding the bank's lock);
        returns whether it did. The clock and the documents are unchanged."""
        plan = {s.segment_id() for s in merge_plan(self.segments())}
        if not plan:
            return False

        def policy(writer, segments):
            chosen = [s for s in segments if s.segment_id() in plan]
            _rewrite(writer, chosen)
            return [s for s in segments if s.segment_id() not in plan]

        writer = self.ix.writer(codec=codec())
        try:
            writer.commit(mergetype=policy)
        except BaseException:
            writer.cancel()
            raise
        self._refresh()
        self.measure()
        return True

    def resident_bytes(self) -> int:
        """What the open bank adds to the process's resident memory, the figure the cache's
        budget holds: Whoosh maps each segment file and copies every part of it it opens
        (``BufferFile`` wraps the mapped bytes in a ``BytesIO``), so twice the directory's bytes,
        plus ``memory_bytes``. Measured by ``python -m bench.cache_memory`` (RSS growth per bank
        opened, within 20%)."""
        return OPEN_FILE_COPIES * self.size_bytes + self.memory_bytes()

    def memory_bytes(self) -> int:
        """Bytes of the per-segment arrays kept in memory (recall's columns, decoded postings and
        vectors, the id lookups): counted with the directory against the cache's budget."""
        return (sum(d.nbytes + d.vector_bytes for d in self.stats_cache.get("segment_data", {}).values())
                + sum(x.nbytes for x in self.id_lookups.values()))

    def write_meta(self) -> None:
        tmp = os.path.join(self.path, META_FILE + ".tmp")
        with open(tmp, "w") as fh:
            json.dump({"org_id": self.org_id, "bank": self.bank, "inc": self.inc, "seq": self.seq,
                       "clock": list(self.clock.positions), "format": FORMAT}, fh)
        os.replace(tmp, os.path.join(self.path, META_FILE))

    def measure(self) -> int:
        self.size_bytes = sum(e.stat().st_size for e in os.scandir(self.path) if e.is_file())
        return self.size_bytes

    def apply(self, changes: Iterable[tuple[int, Memory | Damaged]], *, strict: bool = True) -> int:
        """Apply ``(seq, record)`` changes; returns how many memories were written.

        ``seq`` names a lane and a position in it (``core.store.split_seq``). Changes at or below
        the lane's applied position are skipped (already in); with ``strict`` each lane's first new
        change must directly follow its position and the rest of the lane be consecutive, else
        ``StaleHistory``; so is a purge (its tombstone does not name the purged id). Per id only
        the last record is written (its previous document deleted, one commit); a damaged record
        (``Damaged``, its ``key`` the memory id) only deletes the document, so the memory leaves
        recall until a readable revision arrives.
        """
        latest: dict[str, Memory | None] = {}
        pos = list(self.clock.positions)
        for seq, rec in changes:
            lane, at = split_seq(seq)
            if lane >= len(pos):
                raise StaleHistory(f"{self.bank}: lane {lane} of {len(pos)}")
            if at <= pos[lane]:
                continue
            if strict and at != pos[lane] + 1:
                raise StaleHistory(f"{self.bank}: lane {lane} expected {pos[lane] + 1}, got {at}")
            if _purged(rec):
                raise StaleHistory(f"{self.bank}: a purge")
            pos[lane] = at
            key = rec.key if isinstance(rec, Damaged) else rec.id
            latest.pop(key, None)
            latest[key] = None if isinstance(rec, Damaged) else rec
        if tuple(pos) == self.clock.positions:
            return 0
        writer = self.ix.writer(codec=codec())
        try:
            for dn in self._doomed(writer, latest):
                writer.delete_document(dn)
            for memory in latest.values():
                if memory is not None:
                    writer.add_document(**to_document(memory))
        except BaseException:
            writer.cancel()
            raise
        writer.commit(mergetype=MERGE_TIERED)
        self.clock = Clock(tuple(pos))
        self.write_meta()
        self._refresh()
        self.measure()
        return len(latest)


class IdLookup:
    """One segment's documents by memory id, from its ``id`` column (the id field has no terms):
    the ids' in-process ``hash`` sorted (int64) beside their document numbers, each candidate
    checked against the column. About 12 bytes a document; a segment never changes apart from
    its deletions, so it is kept by segment id until merged away."""

    __slots__ = ("docs", "hashes", "nbytes")

    def __init__(self, leaf: Any) -> None:
        ids = leaf.column_reader("id")
        n = leaf.doc_count_all()
        h = np.fromiter((hash(i) for i in ids), dtype=np.int64, count=n)
        order = np.argsort(h, kind="stable")
        self.hashes, self.docs = h[order], order.astype(np.int32)
        self.nbytes = self.hashes.nbytes + self.docs.nbytes

    def find(self, leaf: Any, ids: list[str]) -> list[int]:
        """Document numbers of ``leaf`` (this lookup's segment) holding one of ``ids``, deleted
        ones included."""
        column = cached_column(leaf, "id")
        out: list[int] = []
        for i in ids:
            h = hash(i)
            lo = int(np.searchsorted(self.hashes, h, side="left"))
            hi = int(np.searchsorted(self.hashes, h, side="right"))
            key = i.encode()
            out.extend(int(d) for d in self.docs[lo:hi] if column[int(d)] == key)
        return out


def _ms_since(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` reading)."""
    return (time.perf_counter() - started) * 1000


_private: tuple[int, str] | None = None
_private_lock = threading.Lock()


def _remove_private(pid: int, path: str) -> None:
    if os.getpid() == pid:  # a forked child inherits atexit handlers: only the owner removes it
        shutil.rmtree(path, ignore_errors=True)


def private_root() -> str:
    """This process's own index directory, ``<tempdir>/cairn-index-<pid>-<random>``: made on
    first use (again in a forked child), removed at a normal exit. Two processes never share
    one (two writers of a bank's directory break each other's files)."""
    global _private
    with _private_lock:
        if _private is None or _private[0] != os.getpid():
            path = tempfile.mkdtemp(prefix=f"cairn-index-{os.getpid()}-")
            atexit.register(_remove_private, os.getpid(), path)
            _private = (os.getpid(), path)
        return _private[1]


class BankLock:
    """A re-entrant lock (``threading.RLock``'s interface) that calls ``on_release`` while still
    held, at its outermost release: every change to a bank's index is made under its lock, so the
    cache's running total of resident bytes is brought in step on every path that changed it."""

    __slots__ = ("_depth", "_lock", "_on_release")

    def __init__(self, on_release: Callable[[], None]) -> None:
        self._lock = threading.RLock()
        self._depth = 0  # changed only by the thread holding the lock
        self._on_release = on_release

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self._depth += 1
        return got

    def release(self) -> None:
        try:
            if self._depth == 1:
                self._on_release()
        finally:
            self._depth -= 1
            self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class IndexCache:
    """The recall index cache of one container (a process normally holds one; tests create two
    with separate roots to play two Lambda containers sharing only DynamoDB and S3).

    ``root``: directory for the indexes (default ``Settings.index_dir``, else ``private_root()``,
    never shared with another process); ``budget_mb``: size budget in MB before eviction (default
    ``Settings.index_cache_mb``, 400), lowest GreedyDual-Size-Frequency priority first (module
    docstring).
    """

    def __init__(self, root: str | None = None, budget_mb: float | None = None) -> None:
        settings = get_settings()
        self.root = root or settings.index_dir or private_root()
        budget = budget_mb if budget_mb is not None else settings.index_cache_mb
        self.budget_bytes = int(budget * 1024 * 1024)
        os.makedirs(self.root, exist_ok=True)
        self._mu = threading.Lock()
        self._locks: dict[tuple[str, str], BankLock] = {}
        self.entries: OrderedDict[tuple[str, str], BankIndex] = OrderedDict()
        # the resident bytes each entry was last accounted at, and their sum (``resident_total``)
        self._resident: dict[tuple[str, str], int] = {}
        self.resident_total = 0
        # eviction order: (priority, push, key) items, stale once their entry is pushed again or gone
        self._heap: list[tuple[float, int, tuple[str, str]]] = []
        self._pushes = 0
        self.gdsf_clock = 0.0  # rises to each evicted entry's priority
        self.counters = {"catchups": 0, "snapshot_loads": 0, "rebuilds": 0, "evictions": 0, "snapshots_left": 0,
                         "merges": 0, "replayed": 0}
        self._merges: queue.Queue[tuple[str, str]] = queue.Queue()
        self._merging: set[tuple[str, str]] = set()
        self._merger: threading.Thread | None = None

    # --- locking and bookkeeping ----------------------------------------------------------

    def lock(self, org_id: str, bank: str) -> BankLock:
        """The lock of one bank's index in this cache (writers and readers take it; whoever
        changes an entry holds it, and its last release accounts the entry's resident bytes)."""
        key = (org_id, bank)
        with self._mu:
            lk = self._locks.get(key)
            if lk is None:
                lk = self._locks[key] = BankLock(lambda: self._account(key))
            return lk

    @contextlib.contextmanager
    def locked(self, keys: Iterable[tuple[str, str]]) -> Iterator[None]:
        """Hold the locks of several banks, taken in sorted order (no deadlock)."""
        with contextlib.ExitStack() as stack:
            for org_id, bank in sorted(set(keys)):
                stack.enter_context(self.lock(org_id, bank))
            yield

    def _dir(self, org_id: str, bank: str, inc: str) -> str:
        h = hashlib.sha256(f"{org_id}\x00{bank}".encode()).hexdigest()[:24]
        return os.path.join(self.root, h, inc)

    def _touch(self, key: tuple[str, str]) -> None:
        """Count a use of the entry of ``key`` (a recall's or a write's) in its priority."""
        with self._mu:
            entry = self.entries.get(key)
            if entry is not None:
                entry.uses += 1
                self._prioritise(key, entry)

    def _prioritise(self, key: tuple[str, str], entry: BankIndex) -> None:
        """Set the entry's GreedyDual-Size-Frequency priority, ``gdsf_clock + uses * load_ms /
        resident bytes`` (load at least 1 ms), and push it on the eviction heap (``_mu`` held)."""
        size = self._resident.get(key) or entry.resident_bytes()
        entry.priority = self.gdsf_clock + entry.uses * max(entry.load_ms, 1.0) / max(size, 1)
        self._pushes += 1
        entry.heap_seq = self._pushes
        heapq.heappush(self._heap, (entry.priority, entry.heap_seq, key))
        if len(self._heap) > 4 * len(self.entries) + 64:  # mostly stale items: keep the current ones
            self._heap = [(e.priority, e.heap_seq, k) for k, e in self.entries.items()]
            heapq.heapify(self._heap)

    def _account(self, key: tuple[str, str]) -> None:
        """Bring ``resident_total`` in step with the entry of ``key`` (added, grown, shrunk or
        gone): O(that entry's segments), whatever the number of entries."""
        entry = self.entries.get(key)
        now = entry.resident_bytes() if entry is not None else 0
        with self._mu:
            if self.entries.get(key) is not entry:
                return  # replaced or dropped meanwhile: whoever did it accounted it
            before = self._resident.pop(key, 0)
            if entry is not None:
                self._resident[key] = now
            self.resident_total += now - before

    def admit(self, key: tuple[str, str], entry: BankIndex) -> None:
        """Hold ``entry`` as the index of ``key`` (``(org_id, bank)``; its lock held), accounted."""
        with self._mu:
            self.entries[key] = entry
        self._account(key)
        with self._mu:
            self._prioritise(key, entry)

    def _forget(self, key: tuple[str, str]) -> None:
        with self._mu:
            entry = self.entries.pop(key, None)
            self.resident_total -= self._resident.pop(key, 0)
        if entry is not None:
            entry.close_reader()
            shutil.rmtree(entry.path, ignore_errors=True)

    def drop(self, org_id: str | None = None) -> int:
        """Drop every cached index of this container, or only those of ``org_id`` (a reload);
        returns how many."""
        with self._mu:  # a bank admitted meanwhile must not change the dict while it is read
            keys = [k for k in self.entries if org_id is None or k[0] == org_id]
        for key in keys:
            with self.lock(*key):
                self._forget(key)
        return len(keys)

    def _evict(self, keep: tuple[str, str]) -> None:
        """Drop the entries of lowest priority, other than ``keep`` and those in use, until
        ``resident_total`` is within the budget: O(1) while it is, O(log entries) an eviction."""
        if self.resident_total <= self.budget_bytes:
            return
        passed: list[tuple[float, int, tuple[str, str]]] = []
        try:
            while self.resident_total > self.budget_bytes:
                item = self._lowest()
                if item is None:
                    return
                if item[2] == keep or not self._drop_at(item):
                    passed.append(item)  # kept, or in use: evict another
        finally:
            with self._mu:
                for item in passed:
                    heapq.heappush(self._heap, item)

    def _lowest(self) -> tuple[float, int, tuple[str, str]] | None:
        """Pop the eviction heap's lowest current item (stale ones are discarded), or ``None``."""
        with self._mu:
            while self._heap:
                item = heapq.heappop(self._heap)
                entry = self.entries.get(item[2])
                if entry is not None and entry.heap_seq == item[1]:
                    return item
        return None

    def _drop_at(self, item: tuple[float, int, tuple[str, str]]) -> bool:
        """Evict the entry of a popped heap item unless its bank is in use; True when it is gone
        (the cache's clock then rises to its priority)."""
        key = item[2]
        lk = self.lock(*key)
        if not lk.acquire(blocking=False):
            return False
        try:
            entry = self.entries.get(key)
            if entry is not None and entry.heap_seq == item[1]:
                self._forget(key)
                self.gdsf_clock = item[0]
                self.counters["evictions"] += 1
            return True  # gone, or used again meanwhile (its newer item stays on the heap)
        finally:
            lk.release()

    # --- freshness ------------------------------------------------------------------------

    def get(self, org_id: str, bank: str) -> BankIndex | None:
        """The cached index of ``bank`` as it is (no freshness check), or ``None``."""
        return self.entries.get((org_id, bank))

    def known(self, org_id: str, banks: Iterable[str]) -> dict[str, KnownBank]:
        """``{bank: KnownBank}`` of the banks cached here, each with the bank as last read when
        its index was made fresh: the lane rows a recall reuses while the bank's version has not
        moved (``core.store.get_bank_rows``)."""
        return {b: KnownBank(e.inc, len(e.clock.positions), e.head) for b in banks
                if (e := self.entries.get((org_id, b))) is not None}

    def fresh(self, org_id: str, bank: str, head: BankHead) -> BankIndex:
        """The bank's index caught up to at least ``head.clock`` (call holding the bank's lock).

        ``head`` is the bank just read consistently. Warm and current: no I/O at all."""
        key = (org_id, bank)
        entry = self.entries.get(key)
        if entry is not None and (entry.inc != head.incarnation
                                  or len(entry.clock.positions) != len(head.clock.positions)):
            self._forget(key)  # trashed and re-created, or restored: another incarnation
            entry = None
        moved = entry is None
        if entry is None:
            started = time.perf_counter()
            entry = self._open_cold(org_id, bank, head)
            entry.load_ms = _ms_since(started)
            self.admit(key, entry)
        if not entry.clock.covers(head.clock):
            self.catch_up(entry, head.clock)
            self.schedule_merge(key)
            moved = True
        if moved:
            self.leave_due_snapshot(entry, head.row)
        entry.head = head  # the index covers the lane rows read: the next recall may reuse them
        if moved:
            self._account(key)  # before the budget is checked (the lock's release accounts it again)
        self._touch(key)
        self._evict(keep=key)
        return entry

    def loaded(self, org_id: str, bank: str, head: BankHead, *, rebuild_max: int) -> BankIndex | None:
        """``fresh`` for a write path's read, with neither a snapshot load nor a rebuild: the cached
        index or the directory this process left, caught up to ``head``; ``None`` when neither is
        there and the bank holds more than ``rebuild_max`` records (a small bank is read whole).
        Call holding the bank's lock."""
        key = (org_id, bank)
        entry = self.entries.get(key)
        cold = entry is None or entry.inc != head.incarnation or len(entry.clock.positions) != len(head.clock.positions)
        if cold and head.records > rebuild_max \
                and self._open_own_dir(org_id, bank, head, self._dir(org_id, bank, head.incarnation)) is None:
            return None
        return self.fresh(org_id, bank, head)

    def catch_up(self, entry: BankIndex, upto: Clock | None = None, lanes: Iterable[int] | None = None) -> int:
        """Apply the revisions past the entry's position in each lane behind ``upto`` (or in
        ``lanes``, or in every lane): one key query per lane, several lanes read in parallel;
        rebuild on a gap. Returns how many memories changed (-1 after a rebuild); emits
        ``metrics.index_catch_up``."""
        self.counters["catchups"] += 1
        started = time.perf_counter()
        have = entry.clock.positions
        before = entry.clock.total
        if lanes is None:
            lanes = range(len(have)) if upto is None else [i for i, (a, b) in
                                                           enumerate(zip(have, upto.positions, strict=True)) if a < b]
        todo = [lane for lane in lanes if lane < len(have)]
        try:
            applied = entry.apply(change for batch in _read_lanes(entry.inc, [(lane, have[lane]) for lane in todo])
                                  for change in batch)
        except StaleHistory:
            self.rebuild_into(entry)  # emits the rebuild's metric
            return -1
        self.counters["replayed"] += entry.clock.total - before
        metrics.index_catch_up(_ms_since(started), changes=applied, source="revisions")
        return applied

    def _open_cold(self, org_id: str, bank: str, head: BankHead) -> BankIndex:
        """The bank's index for a cache that holds none: the directory this process left, else
        the newest S3 snapshot of this incarnation, else a rebuild from the records."""
        path = self._dir(org_id, bank, head.incarnation)
        entry = self._open_own_dir(org_id, bank, head, path)
        if entry is not None:
            return entry
        shutil.rmtree(path, ignore_errors=True)
        started = time.perf_counter()
        loaded = self._load_snapshot(org_id, bank, head, path)
        if loaded is not None:
            self.counters["snapshot_loads"] += 1
            metrics.index_catch_up(_ms_since(started), changes=loaded.seq, source="snapshot")
            return loaded
        os.makedirs(path, exist_ok=True)
        ix = whoosh_index.create_in(path, schema(), indexname=INDEX_NAME)
        built = BankIndex(org_id, bank, head.incarnation, path, ix, clock=_zero(head.clock))
        self._leave_snapshot(built, self.rebuild_into(built, head.clock))
        return built

    @staticmethod
    def _open_own_dir(org_id: str, bank: str, head: BankHead, path: str) -> BankIndex | None:
        """The index this process left in ``path`` for this incarnation, or ``None`` (none, or
        damaged: it is rebuilt, never trusted)."""
        meta_path = os.path.join(path, META_FILE)
        if not os.path.exists(meta_path):
            return None
        try:
            with open(meta_path) as fh:
                meta = json.load(fh)
            clock = _meta_clock(meta)
            if (meta.get("inc") != head.incarnation or len(clock.positions) != len(head.clock.positions)
                    or meta.get("format") != FORMAT):
                return None  # another incarnation's, or another format's: rebuilt
            ix = with_added_fields(whoosh_index.open_dir(path, indexname=INDEX_NAME))
            entry = BankIndex(org_id, bank, head.incarnation, path, ix, clock=clock)
            entry.measure()
            return entry
        except Exception:  # noqa: BLE001 - a damaged cache directory is rebuilt, never trusted
            return None

    def rebuild_into(self, entry: BankIndex, clock: Clock | None = None) -> int:
        """Replace the entry's index with one built from the current records; returns how many
        documents it holds.

        The records are read after the bank's clock, so they may be newer than ``clock``;
        replaying revisions past it later is idempotent (each carries the full record). Emits
        ``metrics.index_rebuild``."""
        self.counters["rebuilds"] += 1
        started = time.perf_counter()
        if clock is None:
            head = store.get_bank_head(entry.org_id, entry.bank)
            clock = head.clock if head is not None and head.incarnation == entry.inc else entry.clock
        entry.close_reader()
        shutil.rmtree(entry.path, ignore_errors=True)  # no segment of the old index stays (a purge)
        os.makedirs(entry.path, exist_ok=True)
        ix = whoosh_index.create_in(entry.path, schema(), indexname=INDEX_NAME)
        writer = ix.writer(limitmb=128, codec=codec())
        documents = 0
        try:
            # the partition's key ranges read in parallel pages; closed at once if indexing fails
            with contextlib.closing(store.iter_records_any_order(entry.inc)) as records:
                for rec in records:
                    if isinstance(rec, Damaged):
                        continue  # reported where it was decoded; the rest of the bank still ranks
                    writer.add_document(**to_document(rec))
                    documents += 1
        except BaseException:
            writer.cancel()
            raise
        writer.commit()
        entry.ix, entry.clock, entry.stats_cache, entry.id_lookups = ix, clock, {}, {}
        entry.write_meta()
        entry.measure()
        metrics.index_rebuild(_ms_since(started), documents=documents)
        return documents

    def _leave_snapshot(self, entry: BankIndex, documents: int) -> None:
        """After a cold rebuild of at least ``COLD_SNAPSHOT_MIN_DOCS`` documents (lock held),
        upload its snapshot so the next cold container loads it instead of rebuilding too. A
        failed upload is counted (metric ``SnapshotWriteFailures``) and never fails the recall."""
        if documents < COLD_SNAPSHOT_MIN_DOCS:
            return
        try:
            self.write_snapshot(entry)
            self.counters["snapshots_left"] += 1
        except Exception as exc:  # noqa: BLE001 - the index is built and current: serve it anyway
            metrics.emit("index", {"SnapshotWriteFailures": 1}, {"reason": type(exc).__name__})

    def on_commit(self, org_id: str, bank: str, row: BankRow, changes: list[tuple[int, Memory]]) -> None:
        """``core.store.on_commit`` observer: a writer updates its own cache at once, in each
        lane's order; a gap in a lane (another writer committed in between) is filled from
        DynamoDB first. A purge drops the bank's index and directory: the next read rebuilds."""
        key = (org_id, bank)
        if not changes:
            return
        if key not in self.entries:
            self._snapshot_uncached(org_id, bank, row, changes)  # else the next recall loads it
            return
        with self.lock(org_id, bank):
            entry = self.entries.get(key)
            if entry is None or entry.inc != row.incarnation:
                return
            if any(_purged(rec) for _seq, rec in changes):
                self._forget(key)
                return
            try:
                entry.apply(changes)
            except StaleHistory:
                self.catch_up(entry, lanes=sorted({split_seq(seq)[0] for seq, _rec in changes}))
                entry.apply(changes)  # whatever the catch-up did not already bring
            self.leave_due_snapshot(entry, row)
            self._touch(key)
            self.schedule_merge(key)

    # --- background merging ---------------------------------------------------------------

    def schedule_merge(self, key: tuple[str, str]) -> bool:
        """Queue the bank for the merge thread when ``merge_plan`` finds segments to merge
        (started on first use, a daemon); returns whether it was queued."""
        entry = self.entries.get(key)
        if entry is None or not merge_plan(entry.segments()):
            return False
        with self._mu:
            if key in self._merging:
                return False
            self._merging.add(key)
            if self._merger is None or not self._merger.is_alive():
                self._merger = threading.Thread(target=self._merge_loop, name="cairn-index-merge", daemon=True)
                self._merger.start()
        self._merges.put(key)
        return True

    def wait_merges(self) -> None:
        """Block until every queued merge is done (tests and benchmarks)."""
        self._merges.join()

    def _merge_loop(self) -> None:
        while True:
            key = self._merges.get()
            try:
                with self.lock(*key):
                    with self._mu:
                        self._merging.discard(key)
                    entry = self.entries.get(key)
                    if entry is not None and entry.merge():
                        self.counters["merges"] += 1
                        self.schedule_merge(key)  # more to merge: another bounded step, queued before this one ends
            except Exception as exc:  # noqa: BLE001 - a failed merge leaves the segments as they were
                metrics.emit("index", {"MergeFailures": 1}, {"reason": type(exc).__name__})
            finally:
                self._merges.task_done()

    # --- snapshots left by readers and writers ----------------------------------------------

    def leave_due_snapshot(self, entry: BankIndex, row: BankRow) -> str | None:
        """Upload the entry's snapshot when the bank moved ``Settings.snapshot_every`` changes past
        the last one claimed or written (``row``: the bank row as just read or committed; lock
        held), so no cold container replays more than about that many. One container wins each
        (``store.claim_snapshot``: a conditional update of the bank row, at most one per
        ``snapshot_min_interval_s``); a lost claim is retried by this container only after that
        interval. Never raises: a failure is counted (``SnapshotWriteFailures``) and the recall
        or write goes on. Returns the key written, or ``None``."""
        settings = get_settings()
        every, interval_ms = settings.snapshot_every, settings.snapshot_min_interval_s * 1000
        if entry.seq - max(entry.snapshot_base, _row_int(row, "snapshot_claim"), _row_int(row, "snapshot_seq")) < every:
            return None
        now = time.monotonic() * 1000
        if entry.snapshot_tried_ms and now - entry.snapshot_tried_ms < interval_ms:
            return None
        entry.snapshot_tried_ms = now
        try:
            if not store.claim_snapshot(entry.org_id, entry.bank, entry.inc, entry.seq, every=every, at=now_ms(),
                                        min_interval_ms=int(interval_ms)):
                return None
            return self._checked_snapshot(entry)
        except Exception as exc:  # noqa: BLE001 - the index is current: serve it anyway
            metrics.emit("index", {"SnapshotWriteFailures": 1}, {"reason": type(exc).__name__})
            return None

    def _checked_snapshot(self, entry: BankIndex) -> str | None:
        """Write the entry's snapshot, then catch the entry up in every lane: a purge committed
        meanwhile (its bank's snapshots deleted before this one landed) makes the catch-up
        rebuild, and the snapshot just written, which may hold the purged text, is deleted.
        Returns the key that stays, or ``None``."""
        key = self.write_snapshot(entry)
        if self.catch_up(entry) < 0:
            blobs.delete(key)
            return None
        self.counters["snapshots_left"] += 1
        return key

    def _snapshot_uncached(self, org_id: str, bank: str, row: BankRow, changes: list[tuple[int, Memory]]) -> None:
        """A writer whose container holds no index of the bank: when a change lands on a lane
        position that is a multiple of ``snapshot_every / lanes`` (about every ``snapshot_every``
        changes of the bank, lanes filling evenly), read the bank's head and, when a snapshot is
        due, load the index (``fresh``, which leaves it). Never raises."""
        stride = max(1, get_settings().snapshot_every // max(1, store.lane_count(row)))
        if not any(split_seq(seq)[1] % stride == 0 for seq, _rec in changes):
            return
        try:
            head = store.get_bank_head(org_id, bank)
            if head is None or head.incarnation != row.incarnation:
                return
            due = max(_row_int(head.row, "snapshot_claim"), _row_int(head.row, "snapshot_seq"))
            if head.clock.total - due < get_settings().snapshot_every:
                return
            with self.lock(org_id, bank):
                self.fresh(org_id, bank, head)
        except Exception as exc:  # noqa: BLE001 - the write is committed: never fail it for a snapshot
            metrics.emit("index", {"SnapshotWriteFailures": 1}, {"reason": type(exc).__name__})

    # --- snapshots ------------------------------------------------------------------------

    def _load_snapshot(self, org_id: str, bank: str, head: BankHead, path: str) -> BankIndex | None:
        """The newest usable snapshot of this incarnation in the current format, extracted to
        ``path`` and opened, or ``None``. Snapshots of another format are never opened: their
        count is emitted (``SnapshotsOfOtherFormat``) when no usable one is found, the cold
        container then rebuilds."""
        current, others = _snapshots(org_id, bank)
        for seq, key, _at in current:
            if seq > head.clock.total:
                continue
            data = blobs.get_bytes(key)
            if data is None:
                continue
            tmp = f"{path}.load-{uuid.uuid4().hex[:8]}"
            try:
                os.makedirs(tmp)
                _extract(key, data, tmp)
                with open(os.path.join(tmp, META_FILE)) as fh:
                    meta = json.load(fh)
                if meta.get("inc") != head.incarnation or meta.get("org_id") != org_id:
                    shutil.rmtree(tmp, ignore_errors=True)
                    continue  # a previous incarnation's snapshot
                if meta.get("format") != FORMAT:
                    raise ValueError("snapshot of another document format")
                snap_clock = _meta_clock(meta)
                if not head.clock.covers(snap_clock) or min(snap_clock.positions) < 0:
                    raise ValueError("snapshot clock beyond the bank's")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.replace(tmp, path)
                ix = with_added_fields(whoosh_index.open_dir(path, indexname=INDEX_NAME))
                with ix.reader() as reader:  # opens every segment: a truncated or foreign file fails here
                    reader.doc_count_all()
                entry = BankIndex(org_id, bank, head.incarnation, path, ix, clock=snap_clock,
                                  snapshot_base=snap_clock.total)
                entry.measure()
                return entry
            except Exception as exc:  # noqa: BLE001 - a bad snapshot is skipped: rebuild instead
                shutil.rmtree(tmp, ignore_errors=True)
                shutil.rmtree(path, ignore_errors=True)
                metrics.emit("damaged", {"DamagedRecords": 1},
                             {"kind": "index_snapshot", "reason": type(exc).__name__, "seq": seq})
        if others:
            metrics.emit("index", {"SnapshotsOfOtherFormat": len(others)}, {"format": FORMAT})
        return None

    def write_snapshot(self, entry: BankIndex) -> str:
        """Upload the entry's index as ``snapshot_key(org, bank, clock total)`` (lock held by the
        caller), note it on the bank row (``store.record_snapshot``: what status reads) and delete
        older snapshots beyond the newest ``SNAPSHOT_KEEP`` totals (and a gzip
        one beside a zstd one of the same total), and every snapshot of another format; returns
        the key."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:") as tar:
            for e in sorted(os.scandir(entry.path), key=lambda e: e.name):
                if e.is_file() and not e.name.endswith((".lock", ".tmp")) and "LOCK" not in e.name:
                    tar.add(e.path, arcname=e.name)
        key = snapshot_key(entry.org_id, entry.bank, entry.seq)
        packed = zstandard.ZstdCompressor(level=SNAPSHOT_ZSTD_LEVEL).compress(buf.getvalue())
        blobs.put_bytes(key, packed, "application/zstd")
        entry.snapshot_base = max(entry.snapshot_base, entry.seq)
        store.record_snapshot(entry.org_id, entry.bank, entry.inc, entry.seq, key, now_ms())
        current, drop = _snapshots(entry.org_id, entry.bank)
        kept: set[int] = set()
        for seq, k, _at in current:  # newest first, at one total the zstd one first
            if seq in kept or len(kept) >= SNAPSHOT_KEEP:
                drop.append(k)
            else:
                kept.add(seq)
        for k in drop:
            blobs.delete(k)
        return key


class StoredSnapshot(NamedTuple):
    """One snapshot in S3: the clock total ``seq`` it holds, its ``key``, its upload time ``at``
    (ms since epoch)."""

    seq: int
    key: str
    at: int


def newest_snapshot(org_id: str, bank: str) -> StoredSnapshot | None:
    """The bank's newest S3 snapshot in the current format (zstd or gzip), or ``None``."""
    current, _others = _snapshots(org_id, bank)
    return current[0] if current else None


def newest_snapshot_seq(org_id: str, bank: str) -> int:
    """The clock total of the bank's newest S3 snapshot in the current format, or -1."""
    newest = newest_snapshot(org_id, bank)
    return newest.seq if newest is not None else -1


def _snapshots(org_id: str, bank: str) -> tuple[list[StoredSnapshot], list[str]]:
    """``(current, others)``: the bank's snapshots in the current format, newest first (at one
    total a zstd one before a gzip one), and the keys of those in another format."""
    prefix = snapshot_prefix(org_id, bank)
    current: list[tuple[int, bool, StoredSnapshot]] = []
    others: list[str] = []
    for obj in blobs.list_objects(prefix):
        name = obj["Key"][len(prefix):]
        if m := _SNAP_RE.fullmatch(name):
            seq = int(m.group(1))
            at = int(obj["LastModified"].timestamp() * 1000)
            current.append((seq, m.group(2) == "zst", StoredSnapshot(seq, obj["Key"], at)))
        elif _ANY_SNAP_RE.fullmatch(name):
            others.append(obj["Key"])
    current.sort(key=lambda c: c[:2], reverse=True)
    return [snap for _seq, _zst, snap in current], others


def _extract(key: str, data: bytes, dst: str) -> None:
    """Unpack a snapshot (``key`` names its codec: ``.zst`` or ``.gz``) into directory ``dst``,
    inflated in one call then read as a plain tar. Raises ``ValueError`` when a zstd frame does
    not state its size or states more than ``SNAPSHOT_MAX_RATIO`` times its own, and the codec's
    or ``tarfile``'s errors on damaged data."""
    if key.endswith(".zst"):
        size = zstandard.frame_content_size(data)
        if size < 0 or size > SNAPSHOT_MAX_RATIO * len(data):
            raise ValueError("snapshot frame of no or an implausible size")
        plain = zstandard.ZstdDecompressor().decompress(data)
    else:
        plain = gzip.decompress(data)
    with tarfile.open(fileobj=io.BytesIO(plain), mode="r:") as tar:
        tar.extractall(dst, filter="data")


def _row_int(row: BankRow, name: str) -> int:
    """A bank row's counter ``name`` (``snapshot_seq``, ``snapshot_claim``), 0 when unset or not
    a number."""
    value = getattr(row, name, None)
    return int(value) if isinstance(value, (int, float)) and value > 0 else 0


def _zero(clock: Clock) -> Clock:
    return Clock((0,) * len(clock.positions))


def _meta_clock(meta: Mapping[str, Any]) -> Clock:
    """The clock a ``cairn.json`` names (one written before lanes holds only ``seq``: one lane);
    raises ``ValueError``/``KeyError``/``TypeError`` when it holds none that is usable."""
    raw = meta["clock"] if "clock" in meta else [meta["seq"]]
    if not isinstance(raw, list) or not raw or not all(type(p) is int and p >= 0 for p in raw):
        raise ValueError("cairn.json: no usable clock")
    return Clock(tuple(raw))


def _read_lanes(inc: str, todo: list[tuple[int, int]]) -> list[list[tuple[int, Memory | Damaged]]]:
    """The changes past each ``(lane, position)`` of ``todo``, one list per lane, each in commit
    order: one key query per lane, up to ``CATCH_UP_THREADS`` at once."""
    def one(item: tuple[int, int]) -> list[tuple[int, Memory | Damaged]]:
        return [(seq, rec) for seq, _op, rec in store.iter_lane_revisions(inc, *item)]

    if len(todo) <= 1:
        return [one(t) for t in todo]
    with ThreadPoolExecutor(max_workers=min(CATCH_UP_THREADS, len(todo))) as pool:
        return list(pool.map(one, todo))


def transient_index(records: Iterable[Memory]):
    """An in-memory index of ``records`` (``as_of`` recall ranks the past through one; they come
    decoded, so each can be indexed)."""
    # a name of its own: Whoosh pools a RAM index's postings in <tmp>/<indexname>.tmp, which
    # another process or thread writing one under the same name would delete
    ix = RamStorage().create_index(schema(), indexname=f"transient-{uuid.uuid4().hex}")
    writer = ix.writer(codec=codec())
    for rec in records:
        writer.add_document(**to_document(rec))
    writer.commit()
    return ix


# --- the active cache --------------------------------------------------------------------

_default: IndexCache | None = None
_default_lock = threading.Lock()
_active: contextvars.ContextVar[IndexCache | None] = contextvars.ContextVar("cairn_index_cache", default=None)


def default_cache() -> IndexCache:
    """This process's cache, created on first use from the environment."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = IndexCache()
    return _default


def active_cache() -> IndexCache:
    """The cache recall and the commit observer use: the one set by ``using``, else the default."""
    return _active.get() or default_cache()


@contextlib.contextmanager
def using(cache: IndexCache) -> Iterator[IndexCache]:
    """Make ``cache`` the active cache in this context (tests: play one container)."""
    token = _active.set(cache)
    try:
        yield cache
    finally:
        _active.reset(token)


def _observer(org_id: str, bank: str, row: BankRow, changes: list[tuple[int, Memory]]) -> None:
    active_cache().on_commit(org_id, bank, row, changes)


store.on_commit(_observer)


def reset_default(root: str | None = None, budget_mb: float | None = None) -> IndexCache:
    """Replace the process's default cache (tests, and ``drop_caches``)."""
    global _default
    with _default_lock:
        old = _default
        _default = IndexCache(root, budget_mb) if root is not None or budget_mb is not None else None
    if old is not None:
        old.drop()
    return default_cache()


__all__ = [
    "MERGE_TIERED",
    "BankIndex",
    "IndexCache",
    "StaleHistory",
    "active_cache",
    "default_cache",
    "newest_snapshot_seq",
    "reset_default",
    "snapshot_key",
    "snapshot_prefix",
    "transient_index",
    "using",
]
