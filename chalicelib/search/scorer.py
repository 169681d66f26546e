"""Scoring: BM25F over the logical corpus, and the full recall score.

**BM25F statistics that every container agrees on.** Whoosh's own BM25F takes document
frequencies and field lengths from its segment files, which still count documents that an update
replaced (until a merge drops them). Two containers holding the same records but built along
different paths (incremental writes, a catch-up batch, a snapshot, a rebuild) would then score the
same query differently. ``CorpusStats`` instead counts only the documents of the logical corpus:
not replaced, and live unless ``include_superseded``; per-segment figures are cached by segment id
and deletion count (segments are immutable apart from deletions). Per field: BM25 with k1 1.2,
b 0.75 and the non-negative idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``; the fields' scores add.

**The full score** (the bank worker's, weights from ``MemoryTuning``):
``base = w_bm25*bm25 + w_entity*entity_hits + w_corroboration*ln(1+corroboration) + w_pinned*pinned``,
``score = base * max(0.5 ** (age_days / decay_half_life_days), recency_floor)`` with the age
taken from ``updated_at``. Ties: ``updated_at`` desc, then id asc.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from whoosh.util.numeric import byte_to_length

from ..tuning import MemoryTuning
from .schema import TEXT_FIELDS
from .whoosh_private import deleted_docs, length_bytes, posting_blocks

K1, B = 1.2, 0.75
DAY_MS = 86_400_000
_DF_CACHE_MAX = 20000


def _leaf_key(reader: Any) -> tuple:
    seg = reader.segment()
    return (seg.segment_id(), seg.deleted_count())


def _dead_docs(reader: Any) -> frozenset[int]:
    try:
        return frozenset(reader.postings("live", "0").all_ids())
    except Exception:  # noqa: BLE001 - TermNotFound: no retired document in this segment
        return frozenset()


class SegmentData:
    """One segment's per-document values, read once into memory: ``updated_at``, ``pinned`` and
    ``corroboration`` (ints), ``ids`` (str) and, per text field, the field-length bytes Whoosh
    stores (``lengths[field][docnum]``, decoded with ``byte_to_length``; ``None`` when the segment
    has no such column) and ``fields``, the text fields holding any token. Segments never change
    apart from their deletion set, so this is cached by segment id alone and recall ranks without
    reading a stored record per candidate."""

    __slots__ = ("corroboration", "fields", "ids", "lengths", "pinned", "updated_at")

    def __init__(self, reader: Any) -> None:
        # text fields holding any token here (a bank's memories have no name or description)
        self.fields = frozenset(f for f in TEXT_FIELDS if reader.field_length(f) > 0)
        self.updated_at = list(reader.column_reader("updated_at"))
        self.pinned = list(reader.column_reader("pinned"))
        self.corroboration = list(reader.column_reader("corroboration"))
        self.ids = list(reader.column_reader("id"))
        self.lengths = {f: length_bytes(reader, f) for f in TEXT_FIELDS}


def postings(reader: Any, fieldname: str, text: str) -> Iterator[tuple[int, float]]:
    """``(docnum, weight)`` of every posting of a term in one segment (see ``posting_blocks``:
    deleted documents included, nothing when the segment lacks the term)."""
    for ids, weights in posting_blocks(reader, fieldname, text):
        yield from zip(ids, weights, strict=False)


@lru_cache(maxsize=64)
def length_norms(avgfl: float) -> list[float]:
    """Per Whoosh length byte (0-255), BM25's length normalisation ``k1 * (1 - b + b * len / avgfl)``
    (a byte of 0, no length, counts as length 1). Cached: the average moves only with writes.
    Callers must not modify the list."""
    return [K1 * ((1 - B) + B * (byte_to_length(b) if b else 1) / avgfl) for b in range(256)]


class _SegmentStats:
    """One segment's share of the corpus statistics."""

    __slots__ = ("excluded", "lengths", "n")

    def __init__(self, reader: Any, include_dead: bool) -> None:
        dead = frozenset() if include_dead else _dead_docs(reader)
        deleted = deleted_docs(reader)
        self.excluded = dead  # postings already skip deleted documents
        self.n = reader.doc_count() - len(dead)
        gone = dead | deleted
        self.lengths = {f: reader.field_length(f) - sum(reader.doc_field_length(d, f, 0) or 0 for d in gone)
                        for f in TEXT_FIELDS}


class CorpusStats:
    """BM25 statistics over a set of segment readers (one bank's or several banks' as one corpus).

    ``leaves``: ``(segment reader, cache dict)`` pairs; the cache dict belongs to the bank index
    the segment came from and outlives this object."""

    def __init__(self, leaves: list[tuple[Any, dict]], include_dead: bool) -> None:
        self.leaves = []
        self.n = 0
        self.lengths = {f: 0 for f in TEXT_FIELDS}
        for reader, cache in leaves:
            if len(cache) > _DF_CACHE_MAX:
                cache.clear()  # stale merged-away segments and old terms: start over
            key = (_leaf_key(reader), include_dead)
            seg = cache.get(key)
            if seg is None:
                seg = cache[key] = _SegmentStats(reader, include_dead)
            self.leaves.append((reader, cache, key, seg))
            self.n += seg.n
            for f in TEXT_FIELDS:
                self.lengths[f] += seg.lengths[f]
        self._idf: dict[tuple[str, str], float] = {}

    def data(self, i: int) -> SegmentData:
        """Leaf ``i``'s per-document values (cached by segment id in its bank's cache dict)."""
        reader, cache, _key, _seg = self.leaves[i]
        sid = reader.segment().segment_id()
        per_segment = cache.setdefault("segment_data", {})
        d = per_segment.get(sid)
        if d is None:
            live = {r.segment().segment_id() for r, c, _k, _s in self.leaves if c is cache}
            for gone in [s for s in per_segment if s not in live]:
                del per_segment[gone]  # merged away: never read again
            d = per_segment[sid] = SegmentData(reader)
        return d

    @property
    def segments(self) -> list[_SegmentStats]:
        """Per leaf, in order: its statistics (``excluded`` = the retired documents left out)."""
        return [seg for _r, _c, _k, seg in self.leaves]

    def df(self, fieldname: str, text: str) -> int:
        """Documents of the corpus holding ``text`` in ``fieldname``."""
        total = 0
        for reader, cache, key, seg in self.leaves:
            ck = (key, fieldname, text)
            n = cache.get(ck)
            if n is None:
                if not seg.excluded and not reader.has_deletions():
                    n = reader.doc_frequency(fieldname, text)
                else:
                    try:
                        n = sum(1 for d in reader.postings(fieldname, text).all_ids() if d not in seg.excluded)
                    except Exception:  # noqa: BLE001 - TermNotFound
                        n = 0
                cache[ck] = n
            total += n
        return total

    def idf(self, fieldname: str, text: str) -> float:
        key = (fieldname, text)
        v = self._idf.get(key)
        if v is None:
            df = self.df(fieldname, text)
            v = self._idf[key] = math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))
        return v

    def avgfl(self, fieldname: str) -> float:
        return (self.lengths.get(fieldname, 0) / self.n) if self.n else 1.0


def recency(updated_at: int, now: int, tuning: MemoryTuning) -> float:
    """``max(0.5 ** (age_days / half_life), recency_floor)``; a future ``updated_at`` counts as 0 days."""
    age_days = max(0, now - int(updated_at)) / DAY_MS
    return max(0.5 ** (age_days / tuning.decay_half_life_days), tuning.recency_floor)


def full_score(bm25_score: float, entity_hits: int, corroboration: int, pinned: bool, updated_at: int,
               now: int, tuning: MemoryTuning) -> tuple[float, dict[str, float]]:
    """``(score, signals)`` of one candidate from its parts (module docstring); ``updated_at`` and
    ``now`` in ms since epoch."""
    rec = recency(updated_at, now, tuning)
    pin = 1.0 if pinned else 0.0
    base = (tuning.w_bm25 * bm25_score + tuning.w_entity * entity_hits
            + tuning.w_corroboration * math.log1p(corroboration) + tuning.w_pinned * pin)
    return base * rec, {"bm25": bm25_score, "entity": float(entity_hits),
                        "corroboration": float(corroboration), "pinned": pin, "recency": rec}


__all__ = [
    "K1",
    "B",
    "CorpusStats",
    "SegmentData",
    "full_score",
    "length_norms",
    "posting_blocks",
    "postings",
    "recency",
]
