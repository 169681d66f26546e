"""Parallel reads of a whole bank's records (a cold rebuild): the memory-id key ranges, each read by a
Query of its own a few at a time, handed to one consumer in chunks with bounded read-ahead.
"""

from __future__ import annotations

import contextvars
import itertools
import queue
import threading
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ...storage.damage import Damaged
from ...storage.tables import MemoryModel, bind
from ..records import Memory
from .keys import NAME_POINTER_PREFIX, POINTER_PREFIX, TAG_PREFIX
from .queries import decoded

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
