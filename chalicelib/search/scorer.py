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

import copy
import math
import sys
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import numpy as np
from whoosh.util.numeric import byte_to_length

from ..tuning import MemoryTuning
from .schema import LINK_UNKNOWN, LINKED_FIELD, TEXT_FIELDS, VECTOR_FIELD, ColumnValues
from .whoosh_private import (
    cached_column,
    deleted_docs,
    fixed_bytes_column,
    int_column,
    length_bytes,
    posting_arrays,
    posting_blocks,
    str_column,
    term_keys,
)

K1, B = 1.2, 0.75
DAY_MS = 86_400_000
_DF_CACHE_MAX = 20000
# decoded postings kept per bank (the segments' arrays together); past it a bank's are dropped
# and decoded again on demand
POSTINGS_CACHE_MAX_BYTES = 64 * 1024 * 1024
# five int64 columns, four length bytes, the links byte and an id string (about 70 bytes) per document
_BASE_BYTES_PER_DOC = 5 * 8 + 4 + 1 + 70
_RECORD_COLUMNS = ("id", "updated_at", "pinned", "corroboration")
# a segment of at most this many documents keeps its term index's keys as a set once a term is
# looked up in it (about 1 ms to build at 250 documents): a selective query's terms are absent
# from most small segments, and a set answers that miss 30x faster than the term index's hash
# lookup. Larger segments would save a little more per query (0.1 ms at 10k memories) but cost a
# cold container's first recall 5 ms per 2,500-document segment.
TERM_SET_MAX_DOCS = 1000


# what a cached term's entry costs beside its arrays' data: two numpy array headers, the key and
# value tuples, the dict slot (measured with tracemalloc)
_ENTRY_BYTES = 400


def _set_bytes(keys: frozenset[bytes] | None) -> int:
    """The memory a set of term keys holds: its table and each bytes object."""
    return 0 if not keys else sys.getsizeof(keys) + sum(map(sys.getsizeof, keys))


@lru_cache(maxsize=1)
def _byte_lengths() -> np.ndarray:
    """Per Whoosh length byte (0-255), the field length it stands for (``byte_to_length``)."""
    return np.array([byte_to_length(b) for b in range(256)], dtype=np.int64)


class SegmentData:
    """One segment's per-document values, read once into memory as numpy arrays indexed by
    document number: ``updated_at``, ``pinned``, ``corroboration``, ``created_at`` and ``session``
    (int64, ``schema.session_key``), ``linked`` (uint8: 0 when the record has no conflict links),
    ``ids`` (str, each decoded when first indexed:
    ``whoosh_private.StrColumn``) and, per text field, the field-length bytes Whoosh stores
    (``lengths[field]``, uint8, decoded with ``byte_to_length``; ``None`` when the segment has no
    such column), ``fields``, the text fields holding any token, and the decoded postings of the
    terms looked up so far (``postings``); ``known(docnum)``, a document's values of the columns a
    record is read with (``schema.read_record``). A segment never changes apart from its deletion
    set, and postings here keep deleted documents (callers mask them, see ``CorpusStats.keep``),
    so all of it is cached by segment id alone: dropped when the segment is merged away, with its
    bank's index (the index cache's LRU) or past ``POSTINGS_CACHE_MAX_BYTES`` of postings per bank.
    ``vectors(reader)``: the documents' sentence vectors, decoded on first use (the semantic
    signal), kept until the segment goes; ``vector_bytes`` what they weigh (counted with the
    index against the cache's budget, apart from the postings' bound)."""

    __slots__ = ("_has_columns", "_keys", "_parts", "_postings", "_vectors", "corroboration", "created_at", "fields",
                 "ids", "lengths", "linked", "n", "nbytes", "pinned", "session", "updated_at", "vector_bytes")

    def __init__(self, reader: Any) -> None:
        self.n = n = reader.doc_count_all()
        # text fields holding any token here (a bank's memories have no name or description)
        self.fields = frozenset(f for f in TEXT_FIELDS if reader.field_length(f) > 0)
        self.updated_at = int_column(reader, "updated_at")
        self.pinned = int_column(reader, "pinned")
        self.corroboration = int_column(reader, "corroboration")
        self.ids = str_column(reader, "id")
        self.created_at = int_column(reader, "created_at")
        self.session = int_column(reader, "session")
        # 0: no conflict links, else read the record (``schema.LINK_UNKNOWN`` without the column)
        self.linked = (int_column(reader, LINKED_FIELD) if LINKED_FIELD in reader.schema
                       else np.full(n, LINK_UNKNOWN)).astype(np.uint8)
        # a damaged segment may lack one: its records are then read (and refused) column by column
        self._has_columns = all(cached_column(reader, c) is not None for c in _RECORD_COLUMNS)
        self.lengths: dict[str, np.ndarray | None] = {}
        for f in TEXT_FIELDS:
            raw = length_bytes(reader, f)
            self.lengths[f] = None if raw is None else np.frombuffer(raw, dtype=np.uint8)
        self._postings: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self._parts: dict[tuple[str, str], tuple[float, np.ndarray, np.ndarray]] = {}
        self._keys: frozenset[bytes] | None = None  # term_keys, once looked up (small segments)
        self.nbytes = _BASE_BYTES_PER_DOC * n
        self._vectors: tuple[np.ndarray, np.ndarray] | None = None
        self.vector_bytes = 0

    def vectors(self, reader: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(matrix, present)``: the documents' unit vectors as a float32 ``(n, DIM)`` matrix
        (a document without one: a zero row) and a bool mask of the documents that have one,
        decoded from the ``vector`` column (``core.vectors.index_value``: float32 scale, int8
        codes) at the first call; ``reader`` must be this segment's."""
        if self._vectors is None:
            raw = fixed_bytes_column(reader, VECTOR_FIELD) if VECTOR_FIELD in reader.schema else None
            if raw is None or not raw.shape[1]:
                mat = np.zeros((self.n, 0), dtype=np.float32)
                present = np.zeros(self.n, dtype=bool)
            else:
                scale = np.ascontiguousarray(raw[:, :4]).view("<f4").reshape(-1)
                present = np.isfinite(scale) & (scale > 0)
                mat = raw[:, 4:].view(np.int8).astype(np.float32)
                mat *= np.where(present, scale, 0).astype(np.float32)[:, None]
            self._vectors = (mat, present)
            self.vector_bytes = mat.nbytes + present.nbytes
        return self._vectors

    def known(self, docnum: int) -> ColumnValues | None:
        """Document ``docnum``'s ``ColumnValues`` (for ``schema.read_record``), or ``None`` when
        the segment lacks one of those columns."""
        if not self._has_columns:
            return None
        return ColumnValues(self.ids[docnum], int(self.updated_at[docnum]), int(self.pinned[docnum]),
                            int(self.corroboration[docnum]))

    def postings(self, reader: Any, fieldname: str, text: str) -> tuple[np.ndarray, np.ndarray]:
        """``(docnums int32, weights float64)`` of a term's postings in this segment (``reader``
        must be this segment's), deleted documents included; empty arrays when it lacks the term.
        Decoded once, then served from memory."""
        key = (fieldname, text)
        got = self._postings.get(key)
        if got is None:
            if self._keys is None and self.n <= TERM_SET_MAX_DOCS:
                self._keys = term_keys(reader)
                self.nbytes += _set_bytes(self._keys)
            got = self._postings[key] = posting_arrays(reader, fieldname, text, self._keys)
            self.nbytes += got[0].nbytes + got[1].nbytes + _ENTRY_BYTES
        return got

    def term_parts(self, reader: Any, fieldname: str, text: str, avgfl: float) -> tuple[np.ndarray, np.ndarray]:
        """``(docnums, tf part)`` of a term in this segment: per posting, BM25's
        ``tf * (k1 + 1) / (tf + norm[length byte])`` at the average field length ``avgfl``
        (``norm_table``), the score before its idf. Kept beside the postings for the last
        ``avgfl`` seen: a bank nobody writes to ranks a common term again without recomputing it."""
        key = (fieldname, text)
        got = self._parts.get(key)
        if got is not None and got[0] == avgfl:
            return got[1], got[2]
        ids, w = self.postings(reader, fieldname, text)
        if not len(ids):  # the term is not in this segment: nothing to compute or keep
            return ids, w
        lens = self.lengths.get(fieldname)
        norm = norm_table(avgfl or 1.0)
        nrm = norm[lens[ids]] if lens is not None else norm[0]
        part = (w * (K1 + 1)) / (w + nrm)
        if got is None:
            self.nbytes += part.nbytes + _ENTRY_BYTES
        self._parts[key] = (avgfl, ids, part)
        return ids, part

    def clear_postings(self) -> None:
        """Forget the decoded postings, their tf parts and the term keys (the memory bound)."""
        self._postings.clear()
        self._parts.clear()
        self._keys = None
        self.nbytes = _BASE_BYTES_PER_DOC * self.n


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
    lens = _byte_lengths()
    return [K1 * ((1 - B) + B * (int(lens[b]) if b else 1) / avgfl) for b in range(256)]


@lru_cache(maxsize=64)
def norm_table(avgfl: float) -> np.ndarray:
    """``length_norms(avgfl)`` as a read-only float64 array (indexed by a length-byte array)."""
    out = np.array(length_norms(avgfl), dtype=np.float64)
    out.setflags(write=False)
    return out


class _SegmentStats:
    """One segment's share of the corpus statistics: ``keep``, a bool mask over its documents
    (not deleted, and live unless the dead count), ``excluded`` (the retired documents left out),
    ``n`` and, per text field, the sum of the kept documents' lengths (one-byte lengths, as
    Whoosh stores a document's; see ``CorpusStats``)."""

    __slots__ = ("excluded", "keep", "lengths", "n")

    def __init__(self, reader: Any, data: SegmentData, include_dead: bool) -> None:
        keep = np.ones(data.n, dtype=bool)
        deleted = deleted_docs(reader)
        if deleted:
            keep[np.fromiter(deleted, dtype=np.int64, count=len(deleted))] = False
        excluded: frozenset[int] = frozenset()
        if not include_dead:
            dead_ids, _w = data.postings(reader, "live", "0")
            if len(dead_ids):
                dead_ids = dead_ids[keep[dead_ids]]  # a deleted document is not counted twice
                excluded = frozenset(dead_ids.tolist())
                keep[dead_ids] = False
        self.excluded = excluded
        self.recount(keep, data)

    def recount(self, keep: np.ndarray, data: SegmentData) -> None:
        """Count the documents of ``keep`` (a bool mask over the segment's documents, then read-only)."""
        keep.setflags(write=False)
        self.keep = keep
        self.n = int(keep.sum())
        table = _byte_lengths()
        self.lengths = {f: (int(table[lens[keep]].sum()) if (lens := data.lengths.get(f)) is not None else 0)
                        for f in TEXT_FIELDS}

    def narrowed(self, within: np.ndarray, data: SegmentData) -> _SegmentStats:
        """These statistics over only the kept documents that ``within`` (a bool mask) holds."""
        out = copy.copy(self)
        out.recount(self.keep & within, data)
        return out


class CorpusStats:
    """BM25 statistics over a set of segment readers (one bank's or several banks' as one corpus).

    ``leaves``: ``(segment reader, cache dict)`` pairs; the cache dict belongs to the bank index
    the segment came from and outlives this object. A document's field length is the one Whoosh
    stores (one byte, ``byte_to_length``): for BM25's length normalisation and, summed over the
    corpus's documents, for the average field length, so every container holding the same
    records computes the same figures whatever path built its segments."""

    def __init__(self, leaves: list[tuple[Any, dict]], include_dead: bool) -> None:
        # (reader, its bank's cache dict, the key its figures are cached under (None: never), figures)
        self.leaves: list[tuple[Any, dict, tuple | None, _SegmentStats]] = []
        self._data: list[SegmentData] = []
        banks: dict[int, tuple[dict, set]] = {}
        keyed = []  # one pass over the leaves' segments: (reader, cache, segment id, leaf key)
        for reader, cache in leaves:
            if len(cache) > _DF_CACHE_MAX:
                cache.clear()  # stale merged-away segments and old terms: start over
            segment = reader.segment()
            sid = segment.segment_id()
            keyed.append((reader, cache, sid, ((sid, segment.deleted_count()), include_dead)))
            banks.setdefault(id(cache), (cache, set()))[1].add(sid)
        for cache, live in banks.values():
            per_segment = cache.setdefault("segment_data", {})
            for gone in [s for s in per_segment if s not in live]:
                del per_segment[gone]  # merged away: never read again
        n, lengths = 0, dict.fromkeys(TEXT_FIELDS, 0)
        for reader, cache, sid, key in keyed:
            per_segment = cache["segment_data"]
            d = per_segment.get(sid)
            if d is None:
                d = per_segment[sid] = SegmentData(reader)
            self._data.append(d)
            seg = cache.get(key)
            if seg is None:
                seg = cache[key] = _SegmentStats(reader, d, include_dead)
            self.leaves.append((reader, cache, key, seg))
            n += seg.n
            for f, v in seg.lengths.items():
                lengths[f] += v
        self.n, self.lengths = n, lengths
        for cache, _live in banks.values():
            if sum(d.nbytes for d in cache["segment_data"].values()) > POSTINGS_CACHE_MAX_BYTES:
                for d in cache["segment_data"].values():
                    d.clear_postings()
        self._segments = [seg for _r, _c, _k, seg in self.leaves]
        self._idf: dict[tuple[str, str], float] = {}

    def narrowed(self, within: list[np.ndarray]) -> CorpusStats:
        """These statistics over only the documents that ``within`` holds (per leaf, in order, a
        bool mask over its documents): the corpus of a filtered recall (``filters``), as if the
        bank held only those documents. Document frequencies are then counted per query, never
        cached (the filter varies)."""
        out = copy.copy(self)
        out.restrict(within)
        return out

    def restrict(self, within: list[np.ndarray]) -> None:
        """Narrow these statistics in place to the documents of ``within`` (see ``narrowed``)."""
        leaves: list[tuple[Any, dict, tuple | None, _SegmentStats]] = []
        self.n = 0
        self.lengths = {f: 0 for f in TEXT_FIELDS}
        for (reader, cache, _key, seg), m, d in zip(self.leaves, within, self._data, strict=True):
            part = seg.narrowed(m, d)
            leaves.append((reader, cache, None, part))
            self.n += part.n
            for f in TEXT_FIELDS:
                self.lengths[f] += part.lengths[f]
        self.leaves = leaves
        self._segments = [seg for _r, _c, _k, seg in leaves]
        self._idf = {}

    def data(self, i: int) -> SegmentData:
        """Leaf ``i``'s per-document values (cached by segment id in its bank's cache dict)."""
        return self._data[i]

    @property
    def segments(self) -> list[_SegmentStats]:
        """Per leaf, in order: its statistics (``keep``, ``excluded``)."""
        return self._segments

    def df(self, fieldname: str, text: str) -> int:
        """Documents of the corpus holding ``text`` in ``fieldname``: counted from the decoded
        postings (which ranking reads next anyway: one term lookup per segment, not two)."""
        total = 0
        for i, (reader, cache, key, seg) in enumerate(self.leaves):
            ck = (key, fieldname, text)
            n = cache.get(ck) if key is not None else None  # a narrowed corpus has no key
            if n is None:
                ids, _w = self._data[i].postings(reader, fieldname, text)
                n = len(ids) if seg.n == self._data[i].n else int(np.count_nonzero(seg.keep[ids]))
                if key is not None:
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


def full_scores(bm25: np.ndarray, entity_hits: np.ndarray, corroboration: np.ndarray, pinned: np.ndarray,
                updated_at: np.ndarray, now: int, tuning: MemoryTuning) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``full_score`` over arrays of candidates (one element each, same length): ``(scores,
    signals)`` with one float64 array per signal, the same arithmetic in the same order."""
    age_days = np.maximum(now - updated_at.astype(np.int64), 0) / DAY_MS
    rec = np.maximum(np.power(0.5, age_days / tuning.decay_half_life_days), tuning.recency_floor)
    pin = (pinned != 0).astype(np.float64)
    ent = entity_hits.astype(np.float64)
    corr = corroboration.astype(np.float64)
    base = (tuning.w_bm25 * bm25 + tuning.w_entity * ent
            + tuning.w_corroboration * np.log1p(corr) + tuning.w_pinned * pin)
    return base * rec, {"bm25": bm25, "entity": ent, "corroboration": corr, "pinned": pin, "recency": rec}


__all__ = [
    "K1",
    "B",
    "CorpusStats",
    "SegmentData",
    "full_score",
    "full_scores",
    "length_norms",
    "norm_table",
    "posting_blocks",
    "postings",
    "recency",
]
