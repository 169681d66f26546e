"""Recall: rank a bank's memories (or several banks' as one corpus) against a query, no LLM
(the memory worker's recall interface).

One recall, warm: ONE consistent DynamoDB read (a BatchGetItem of the banks' version items and the
config version rows: the global one, org ``_system`` name ``!config``, and the org's own, name
``!config``; see ``chalicelib.inject.reload``), the index
caught up if behind (``index.IndexCache.fresh``), then Whoosh only: no record is read from
DynamoDB and nothing from S3.

Candidates: the top ``fetch_limit`` BM25F hits (or the recall's ``limit`` when greater; analysed
query tokens OR-ed, each looked up in the postings, never a query parser, so ``?`` and ``*`` are
plain text) plus as many of the newest memories whose entity handles the query names (a first-person
query also names ``user``). Both honour the live flag and the recall's filter (``filters``: the
memories that pass are the corpus, statistics included) before any cut. Candidates are re-ranked by
the full score (``scorer.full_score``); ties by ``updated_at`` desc, id asc. A query that matches
nothing returns nothing. The semantic signal (``fusion``) then adds the query's sentence vector (embedded once per
recall) where lexical evidence is weak, and may bring in memories near it in meaning.
``retrieval`` names the mode that ran: ``bm25-entity+semantic`` (the signal ran),
``bm25-entity+semantic-unavailable`` (``w_semantic`` > 0 but the model is not available),
``bm25-entity`` (``w_semantic`` 0, or a query the model does not cover, e.g. CJK) and
``bm25-entity+as_of`` for a point-in-time recall (lexical only).

``as_of`` (ms since epoch) ranks the bank as it stood then: per id the revision with the greatest
``updated_at`` <= ``as_of``, live if its ``invalid_at`` is unset or later. It reads the bank's
whole revision history (a key query) and builds a transient in-memory index, so it costs time
proportional to the history: slower than a normal recall, and meant for audits, not every turn.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import metrics, semantic, timing
from ..banks.settings_read import recall_settings
from ..clock import now_ms
from ..core import store
from ..core.records import Memory, stated_at
from ..core.store import CONFIG_NAME, CONFIG_ORG, BankHead
from ..errors import BadRequest, NotFound
from ..storage.damage import Damaged
from ..tuning import (
    MemoryTuning,
    get_tuning,
    set_config_version,
    set_org_config_version,
    tuning_problem,
)
from ..usage import meter
from . import filters, fusion
from . import index as index_mod
from . import match as match_mod
from . import signals as signals_mod
from .analyzers import cjk_analyzer, entity_keys, memory_analyzer, query_terms
from .filters import RecallFilter
from .schema import read_record
from .scorer import CorpusStats, SegmentData, full_scores
from .whoosh_private import positions

RETRIEVAL = "bm25-entity"
RETRIEVAL_AS_OF = "bm25-entity+as_of"
RETRIEVAL_SEMANTIC = "bm25-entity+semantic"
RETRIEVAL_UNAVAILABLE = "bm25-entity+semantic-unavailable"
LAST_GOOD_TUNING = "+last-good-tuning"  # suffix while the configured tuning is invalid
LIMIT_DEFAULT, LIMIT_MAX = 6, 100
MAX_QUERY_CHARS = 4000
TEXT_FIELDS = ("text", "name", "description")


@dataclass
class Hit:
    """One recalled memory: ``signals`` = ``{bm25, entity, corroboration, pinned, recency}`` plus
    ``prf``, ``time`` and ``neighbour`` when their weights are on (``signals``) and ``semantic``
    while ``w_semantic`` > 0 (``fusion``; 0 when it did not run);
    ``bank`` names the bank or namespace it came from; ``contributions`` each signal's share of
    ``score`` (``signals.contributions``: they sum to it); ``match`` how well it matches the query
    (``search.match``, in [0, 1])."""

    memory: Memory
    score: float
    signals: dict[str, float]
    bank: str
    contributions: dict[str, float] = field(default_factory=dict)
    match: float = 0.0


@dataclass
class RecallResult:
    """The ranked hits, the retrieval mode that ran, how many candidates were scored and the
    ``min_match`` the hits were held to (``None``: none)."""

    hits: list[Hit]
    retrieval: str
    candidates: int
    min_match: float | None = None

    @property
    def match(self) -> float | None:
        """The best ``match`` among the hits (``search.match``), ``None`` without a hit."""
        return max((h.match for h in self.hits), default=None)


# --- the one consistent read ---------------------------------------------------------------

def read_rows(org_id: str, banks: list[str]) -> dict[str, BankHead]:
    """The banks ``banks`` (``BankHead``: row, lane clock, counters; absent and damaged ones left
    out) and, in the same BatchGetItem, the global and the org's config version rows: one
    consistent DynamoDB read, of the banks' version items, while no write moved the banks this
    container's indexes know (``core.store.get_bank_rows``). A moved global
    version drops this container's index caches and tuning (an operator-level reload); a moved
    org version drops the org's indexes only (the org's ``POST /v1/reload`` in another
    container)."""
    cache = index_mod.active_cache()
    read = store.get_bank_rows(org_id, banks, cache.known(org_id, banks))
    if set_config_version(read.version):
        cache.drop()
    if set_org_config_version(org_id, read.org_version):
        cache.drop(org_id)
    return dict(read.heads)


# --- ranking -------------------------------------------------------------------------------

@dataclass(frozen=True)
class QueryTerms:
    """A query analysed for recall: ``terms`` (memory analyzer, for text, name and description),
    ``cjk`` (CJK bigrams) and ``entity_keys`` (handles it names, ``user`` for a first-person
    query)."""

    terms: tuple[str, ...]
    cjk: tuple[str, ...]
    entity_keys: tuple[str, ...]


def analyse(query: str) -> QueryTerms:
    """The terms recall looks up for ``query`` (see ``QueryTerms``)."""
    return QueryTerms(tuple(query_terms(memory_analyzer(), query)), tuple(query_terms(cjk_analyzer(), query)),
                      tuple(entity_keys(query)))  # each already distinct, in first-seen order


Key = tuple[int, int]  # (leaf, document number)


def _rank(leaves: list[tuple[Any, dict, str]], query: str | QueryTerms, *, limit: int, tag: str | None,
          include_superseded: bool, tuning: MemoryTuning, filter: Callable[[Memory], bool] | None,
          now: int, query_vector: np.ndarray | None = None,
          min_match: float | None = None, where: RecallFilter | None = None) -> tuple[list[Hit], int]:
    """Rank over ``(segment reader, stats cache, bank)`` leaves as one corpus.

    Vectorised over each segment's documents (numpy): BM25F summed per document over the query's
    (field, term) pairs from the decoded postings (``scorer.SegmentData.postings``), entity hits
    counted from the entity postings, both masked by the documents that count (the corpus's);
    candidates picked by ``pick``; the full score (``scorer.full_scores``) over the candidates'
    arrays. Only the returned hits' records are decoded (every examined candidate's, when a
    ``filter`` must see it). ``where`` (with ``tag``, its ``tags_all``): the memories that pass
    are the corpus, its statistics included (``filters.narrow``). ``query_vector``: the query's
    unit sentence vector, for the semantic signal (``fusion``: only while ``w_semantic`` > 0).
    Each hit carries its ``match`` (``search.match``); with ``min_match``, candidates under it
    are passed over (the ranking of the others is unchanged)."""
    leaves = [leaf for leaf in leaves if leaf[0].doc_count_all() > 0]  # an empty index has no segment
    if not leaves:
        return [], 0
    q = query if isinstance(query, QueryTerms) else analyse(query)
    pairs = [(f, t) for t in q.terms for f in TEXT_FIELDS] + [("cjk", t) for t in q.cjk]
    vector = query_vector if tuning.w_semantic > 0 else None
    if not pairs and not q.entity_keys and vector is None:
        return [], 0
    readers = [r for r, _c, _b in leaves]
    stats = filters.narrow(CorpusStats([(r, c) for r, c, _ in leaves], include_superseded), readers,
                           filters.with_tag(where, tag))
    allowed = [stats.segments[i].keep for i in range(len(leaves))]  # the corpus: only its documents rank
    bm = bm25f(stats, readers, pairs, allowed)
    ent = entity_hits(stats, readers, q.entity_keys, allowed)
    data = [stats.data(i) for i in range(len(leaves))]

    decoded: dict[Key, Memory | None] = {}

    def record(key: Key) -> Memory | None:
        """The candidate's record, or ``None`` when its document does not decode (skipped)."""
        if key not in decoded:
            decoded[key] = stored_record(readers[key[0]], key[1], data[key[0]])
        return decoded[key]

    accept = None if filter is None else (lambda key: (rec := record(key)) is not None and filter(rec))
    fetch = max(tuning.fetch_limit, limit)  # the pool never caps a recall below its own limit
    cands = dict.fromkeys(pick(data, [d for d, _v in bm], [v for _d, v in bm], fetch, accept))
    cands.update(dict.fromkeys(pick(data, [d for d, _v in ent], None, fetch, accept)))
    if not cands and vector is None:
        return [], 0

    def base(keys: list[Key]) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """``(updated_at, totals, signals)`` of ``keys`` by ``scorer.full_scores``."""
        u = _gather(keys, [sd.updated_at for sd in data])
        tot, sig = full_scores(_lookup(keys, bm, np.float64), _lookup(keys, ent, np.int64),
                               _gather(keys, [sd.corroboration for sd in data]),
                               _gather(keys, [sd.pinned for sd in data]), u, now, tuning)
        return u, tot, sig

    keys = list(cands)
    upd, totals, signals = base(keys)
    if keys and signals_mod.active(tuning):  # feedback, time, neighbourhood: their own module
        keys, upd, totals, signals = signals_mod.apply(signals_mod.Ranking(
            query if isinstance(query, str) else None, q.terms, stats, readers, data, allowed, record, accept,
            functools.partial(bm25f, stats, readers), pick, base, now, tuning), keys, totals, upd)
    fused = _semantic(fusion.Inputs(stats, readers, data, allowed, q.terms, accept, base,
                                    lambda key: data[key[0]].ids[key[1]], vector, tuning), keys, upd, totals, signals)
    if not fused.keys:
        return [], 0
    ids = [data[i].ids[d] for i, d in fused.keys]
    order = sorted(range(len(ids)), key=lambda j: (-fused.totals[j], -fused.upd[j], ids[j]))
    linked = _when_linked(record, data)
    extra = _newer_partners([fused.keys[j] for j in order[:limit + NEWER_DEPTH]], set(ids), linked, data, allowed,
                            accept)
    if extra:  # a later statement the query missed joins after the candidates; newer_first lifts it
        fused, order = _appended(fused, extra, base), order + list(range(len(ids), len(ids) + len(extra)))
        ids += [data[i].ids[d] for i, d in extra]
    keys, totals, signals, weights = fused.keys, fused.totals, fused.signals, fused.weights
    names = list(signals)

    def hit(j: int, m: float) -> Hit | None:
        """Candidate ``j`` as a hit of match ``m`` (``None`` when its record does not decode)."""
        key = keys[j]
        rec = record(key)
        if rec is None:
            return None
        sig = {s: float(signals[s][j]) for s in names}
        return Hit(rec, float(totals[j]), sig, leaves[key[0]][2],
                   signals_mod.contributions(sig, tuning, semantic_weight=float(weights[j])), m)

    matcher = match_mod.Matcher(stats, readers, data, q.terms, q.cjk, q.entity_keys, vector,
                                query if isinstance(query, str) else None)
    lifted: dict[int, int] = {}
    order = newer_first(order, ids, lambda j: linked(keys[j]), depth=limit + NEWER_DEPTH, lifted=lifted)
    return _take(order, lambda j: max(matcher(keys[j]), matcher(keys[lifted[j]]) if j in lifted else 0.0),
                 hit, limit, min_match), len(keys)


NEWER_DEPTH = 10  # candidates past the limit whose conflict links are read (each read decodes a record)


def _appended(f: fusion.Fused, extra: list[Key],
              base: Callable[[list[Key]], tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]]) -> fusion.Fused:
    """``f`` with the candidates ``extra`` after its own: their full scores, no semantic weight."""
    u, t, sig = base(extra)
    z = np.zeros(len(extra))
    return fusion.Fused(f.keys + extra, np.concatenate([f.upd, u]), np.concatenate([f.totals, t]),
                        {s: np.concatenate([v, sig.get(s, z)]) for s, v in f.signals.items()},
                        np.concatenate([f.weights, z]))


def _when_linked(record: Callable[[Key], Memory | None], data: list[SegmentData]) -> Callable[[Key], Memory | None]:
    """``record`` for the documents that may have conflict links (the ``linked`` column), ``None``
    for the rest (no record decoded)."""
    return lambda key: record(key) if data[key[0]].linked[key[1]] else None


def _newer_partners(top: list[Key], known: set[str], linked: Callable[[Key], Memory | None],
                    data: list[SegmentData], allowed: list[np.ndarray],
                    accept: Callable[[Key], bool] | None) -> list[Key]:
    """The later statements linked as conflicting with a memory of ``top`` that are not among the
    candidates (ids ``known``): each a document that may rank (``allowed``, the caller's ``accept``)
    and was said after its partner (``stated_at``). ``linked``: a document's record when it may
    have links, else ``None``. A correction worded unlike the question still shows beside the
    statement it corrects."""
    out: list[Key] = []
    for key in top:
        rec = linked(key)
        if rec is None or not rec.conflicts_with:
            continue
        for pid in [p for p in rec.conflicts_with if p not in known]:
            known.add(pid)
            found = [(i, d) for i, sd in enumerate(data) for d in positions(sd.ids, pid) if allowed[i][d]]
            other = linked(found[0]) if found else None
            if other is not None and stated_at(other) > stated_at(rec) and (accept is None or accept(found[0])):
                out.append(found[0])
    return out


def newer_first(order: list[int], ids: list[str], record: Callable[[int], Memory | None], *,
                depth: int, lifted: dict[int, int] | None = None) -> list[int]:
    """``order`` with the later statement (``stated_at``) of each conflicting pair
    (``Memory.conflicts_with``, both among the candidates) moved just above the earlier one when it
    ranked below it; only the first ``depth`` candidates' links are read. The rest of the order
    is unchanged. ``lifted`` (when given) receives each moved candidate's earlier partner: the
    later statement answers what the earlier one answered (its ``match`` at least the earlier's)."""
    at = {ids[j]: n for n, j in enumerate(order)}
    out = list(order)
    for j in order[:depth]:
        rec = record(j)
        if rec is None or not rec.conflicts_with:
            continue
        for k in [order[at[pid]] for pid in rec.conflicts_with if pid in at]:
            other = record(k)
            if other is None or stated_at(other) <= stated_at(rec):
                continue
            pos_new, pos_old = out.index(k), out.index(j)
            if pos_new > pos_old:
                out.insert(pos_old, out.pop(pos_new))
                if lifted is not None:
                    lifted[k] = j
    return out


def _take(order: list[int], match_of: Callable[[int], float], hit: Callable[[int, float], Hit | None],
          limit: int, min_match: float | None) -> list[Hit]:
    """The first ``limit`` hits of the candidates in ``order``, passing over those whose match is
    under ``min_match`` and those whose record does not decode."""
    hits: list[Hit] = []
    for j in order:
        if len(hits) == limit:
            break
        m = match_of(j)
        if min_match is not None and m < min_match:
            continue
        h = hit(j, m)
        if h is not None:
            hits.append(h)
    return hits


def _semantic(x: fusion.Inputs, keys: list[Key], upd: np.ndarray, totals: np.ndarray,
              signals: dict[str, np.ndarray]) -> fusion.Fused:
    """The candidates with the semantic signal (``fusion.fuse``) when the query has a vector;
    else as they are, ``semantic`` 0 in their signals while ``w_semantic`` > 0."""
    if x.query is not None:
        return fusion.fuse(x, keys, upd, totals, signals)
    if x.tuning.w_semantic > 0:
        signals = {**signals, "semantic": np.zeros(len(keys))}
    return fusion.Fused(keys, upd, totals, signals, np.zeros(len(keys)))


Sparse = tuple[np.ndarray, np.ndarray]  # (sorted document numbers, one value each)
# a leaf's postings past this share of its documents are summed into a dense array; fewer, sparsely
DENSE_SHARE = 0.125


# below these sizes numpy's cost per call outweighs its speed: candidates up to SMALL are
# gathered key by key, sparse values looked up through a dict while the candidates and the
# sparse arrays together are up to SMALL, matches up to SMALL_PICK sorted as tuples, a leaf's
# postings up to SMALL_SUM summed through a dict (np.unique alone costs about 10 µs a call)
SMALL = 256
SMALL_PICK = 128
SMALL_SUM = 64
# ``pick`` keeps a leaf's documents whole up to this many (partitioning each of many small leaves
# costs more than ordering their union once), and finds the cut in up to SORT_PICK candidates by
# sorting them: ``argpartition`` took 1.5-2 ms on 5,000 scores holding 8 distinct values (a
# common query over short memories), a sort 0.04 ms
WHOLE_LEAF = 1024
SORT_PICK = 16384


def _split(keys: list[Key]) -> tuple[np.ndarray, np.ndarray]:
    """``(leaves, document numbers)`` of ``keys`` as int64 arrays."""
    both = np.array(keys, dtype=np.int64).reshape(len(keys), 2)
    return both[:, 0], both[:, 1]


def _gather(keys: list[Key], per_leaf: list[np.ndarray]) -> np.ndarray:
    """``per_leaf[i][d]`` for each key ``(i, d)``."""
    dtype = per_leaf[0].dtype if per_leaf else np.int64
    if len(keys) <= SMALL:
        return np.array([per_leaf[i][d] for i, d in keys], dtype=dtype)
    li, dn = _split(keys)
    out = np.zeros(len(li), dtype=dtype)
    for i in set(li.tolist()):
        at = li == i
        out[at] = per_leaf[i][dn[at]]
    return out


def _lookup(keys: list[Key], per_leaf: list[Sparse], dtype: Any) -> np.ndarray:
    """The value of each key ``(i, d)`` in sparse per-leaf arrays (0 where absent)."""
    if len(keys) + sum(len(docs) for docs, _v in per_leaf) <= SMALL:
        maps = [dict(zip(docs.tolist(), vals.tolist(), strict=True)) for docs, vals in per_leaf]
        return np.array([maps[i].get(d, 0) for i, d in keys], dtype=dtype)
    li, dn = _split(keys)
    res = np.zeros(len(li), dtype=dtype)
    if len(per_leaf) > MANY_LEAVES:  # one search over every leaf's documents, keyed (leaf, document)
        held = [i for i, (docs, _v) in enumerate(per_leaf) if len(docs)]
        if not held:
            return res
        docs = np.concatenate([per_leaf[i][0] + (i << 32) for i in held])
        vals = np.concatenate([per_leaf[i][1] for i in held])
        want = (li << 32) + dn
        pos = np.minimum(np.searchsorted(docs, want), len(docs) - 1)
        found = docs[pos] == want
        res[found] = vals[pos[found]]
        return res
    for i in set(li.tolist()):
        docs, vals = per_leaf[i]
        if not len(docs):
            continue
        at = np.flatnonzero(li == i)
        pos = np.minimum(np.searchsorted(docs, dn[at]), len(docs) - 1)
        found = docs[pos] == dn[at]
        res[at[found]] = vals[pos[found]]
    return res


def _sum_by_doc(n: int, ids: list[np.ndarray], vals: list[np.ndarray], allowed: np.ndarray) -> Sparse:
    """Per document of a leaf of ``n``: the sum of its values over the lists, added in list order
    (dense when the postings are many, else sorted and ``bincount``-ed); only ``allowed`` ones."""
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=vals[0].dtype if vals else np.float64)
    total = sum(len(x) for x in ids)
    if total > DENSE_SHARE * n:
        # bincount adds each document's values in list order, as ``acc[x] += v`` per list would;
        # every value is above 0 (a positive idf and tf; a count), so a sum above 0 is a match
        acc = np.bincount(np.concatenate(ids) if len(ids) > 1 else ids[0],
                          weights=np.concatenate(vals) if len(vals) > 1 else vals[0], minlength=n)
        docs = np.flatnonzero((acc > 0) & allowed)
        return docs, acc[docs].astype(vals[0].dtype, copy=False)
    if len(ids) == 1:  # one list: already sorted, one value per document
        docs, sums = ids[0], vals[0]
    elif total <= SMALL_SUM:  # the same sums, added in the same order, without numpy's per-call cost
        by_doc: dict[int, Any] = {}
        for di, vi in zip(ids, vals, strict=True):
            for d, v in zip(di.tolist(), vi.tolist(), strict=True):
                by_doc[d] = by_doc.get(d, 0) + v
        order = sorted(by_doc)
        docs = np.array(order, dtype=np.int64)
        sums = np.array([by_doc[d] for d in order], dtype=vals[0].dtype)
    else:
        docs, inverse = np.unique(np.concatenate(ids), return_inverse=True)
        sums = np.bincount(inverse, weights=np.concatenate(vals), minlength=len(docs)).astype(vals[0].dtype)
    keep = allowed[docs]
    return docs[keep].astype(np.int64), sums[keep]


MANY_LEAVES = 8  # past this many leaves, their sums are added in one pass over all their documents


def _sum_by_leaf(parts: list[tuple[list[np.ndarray], list[np.ndarray]]], allowed: list[np.ndarray]) -> list[Sparse]:
    """``_sum_by_doc`` of each leaf's ``(ids, vals)`` lists; past ``MANY_LEAVES`` leaves in one
    pass over their documents numbered one after the other (a document's values are still added
    in its leaf's list order), then cut back into leaves."""
    if len(parts) <= MANY_LEAVES:
        return [_sum_by_doc(len(a), ids, vals, a) for (ids, vals), a in zip(parts, allowed, strict=True)]
    offsets = np.cumsum([0, *map(len, allowed)])
    ids = [x + offsets[i] for i, (lists, _v) in enumerate(parts) for x in lists]
    docs, sums = _sum_by_doc(int(offsets[-1]), ids, [v for _x, vals in parts for v in vals], np.concatenate(allowed))
    cuts = np.searchsorted(docs, offsets).tolist()
    return [(docs[a:b] - offsets[i], sums[a:b]) for i, (a, b) in enumerate(itertools.pairwise(cuts))]


def bm25f(stats: CorpusStats, readers: list[Any], pairs: list[tuple[str, str]],
          allowed: list[np.ndarray]) -> list[Sparse]:
    """Per leaf: the documents matched (masked by ``allowed``) and their BM25F. Per (field, term)
    pair and posting: ``idf * tf * (k1 + 1) / (tf + norm[length byte])``, added in pair order
    (the arithmetic of whoosh.scoring.bm25)."""
    parts: list[tuple[list[np.ndarray], list[np.ndarray]]] = [([], []) for _ in readers]
    for f, t in pairs:
        idf: float | None = None
        avgfl = stats.avgfl(f)
        for i, reader in enumerate(readers):
            sd = stats.data(i)
            if f not in sd.fields:
                continue  # no posting of this field in the segment: skip the term lookup
            ids, part = sd.term_parts(reader, f, t, avgfl)
            if not len(ids):
                continue
            if idf is None:
                idf = stats.idf(f, t)
            parts[i][0].append(ids)
            parts[i][1].append(idf * part)
    return _sum_by_leaf(parts, allowed)


def entity_hits(stats: CorpusStats, readers: list[Any], keys: tuple[str, ...],
                allowed: list[np.ndarray]) -> list[Sparse]:
    """Per leaf: the documents (``allowed`` ones) carrying any of the query's entity handles and
    how many (int64)."""
    parts = []
    for i, reader in enumerate(readers):
        lists = [ids for k in keys if len(ids := stats.data(i).postings(reader, "entities", k)[0])]
        parts.append((lists, [np.ones(len(x), dtype=np.int64) for x in lists]))
    return _sum_by_leaf(parts, allowed)


def pick(data: list[SegmentData], docs: list[np.ndarray], score: list[np.ndarray] | None, fetch: int,
         accept: Callable[[Key], bool] | None) -> list[Key]:
    """The first ``fetch`` of the documents ``docs`` (per leaf) that ``accept`` lets through, in
    the order ``score`` desc (when given: per leaf, one value per document of ``docs``),
    ``updated_at`` desc, id asc.

    Only a prefix is ever sorted: each leaf keeps the documents at least as good as its own
    ``k``-th best (``_best_per_leaf``), ``argpartition`` finds the ``k``-th best of those and every
    document at least that good (ties included) is ordered by ``lexsort``, ids breaking the ties
    that remain; ``k`` grows only while ``accept`` refuses too many."""
    sizes = [len(d) for d in docs]
    if not sum(sizes):
        return []
    if sum(sizes) <= SMALL_PICK:
        return _pick_few(data, docs, score, fetch, accept)
    out: list[Key] = []
    done, k = 0, fetch
    while True:
        li, dn, upd, primary = _best_per_leaf(data, docs, score, k)
        whole = max(sizes) <= k  # every document is in: nothing left to widen to
        n = len(dn)
        sel = np.flatnonzero(primary >= _kth_best(primary, k)) if k < n else np.arange(n)
        order = sel[np.lexsort((-upd[sel], -primary[sel]))]
        p, u = primary[order], upd[order]
        m = min(len(order), k)
        while m < len(order) and p[m] == p[m - 1] and u[m] == u[m - 1]:
            m += 1  # the run that straddles the cut: order it whole
        keys = [(int(li[j]), int(dn[j])) for j in order[:m].tolist()]
        if np.any((p[1:m] == p[:m - 1]) & (u[1:m] == u[:m - 1])):  # equal score and updated_at: id asc
            keys = _by_id(keys, p[:m], u[:m], data)
        for key in keys[done:]:
            if accept is None or accept(key):
                out.append(key)
                if len(out) >= fetch:
                    return out
        if whole and m >= n:
            return out
        done, k = m, k * 4


def _pick_few(data: list[SegmentData], docs: list[np.ndarray], score: list[np.ndarray] | None, fetch: int,
              accept: Callable[[Key], bool] | None) -> list[Key]:
    """``pick`` over a few documents: all of them sorted at once as plain Python tuples."""
    ranked: list[tuple[Any, int, str, int, int]] = []
    for i, d in enumerate(docs):
        if not len(d):
            continue
        u = data[i].updated_at[d].tolist()
        p = u if score is None else score[i].tolist()
        ids = data[i].ids
        ranked += [(-a, -b, ids[x], i, x) for a, b, x in zip(p, u, d.tolist(), strict=True)]
    ranked.sort()
    out: list[Key] = []
    for *_order, i, x in ranked:
        if accept is None or accept((i, x)):
            out.append((i, x))
            if len(out) >= fetch:
                break
    return out


def _kth_best(values: np.ndarray, k: int) -> Any:
    """The ``k``-th greatest of ``values`` (1 <= ``k`` < its length)."""
    cut = len(values) - k
    return np.sort(values)[cut] if len(values) <= SORT_PICK else values[np.argpartition(values, cut)[cut:]].min()


def _best_per_leaf(data: list[SegmentData], docs: list[np.ndarray], score: list[np.ndarray] | None,
                   k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(leaf, document, updated_at, primary)`` of the documents of each leaf at least as good
    as that leaf's ``k``-th best (``score``, else ``updated_at``; ties included), a leaf of up to
    ``WHOLE_LEAF`` documents whole: a superset of the best ``k`` overall (ties included), so only
    these are gathered and concatenated."""
    li, dn, upd, primary = [], [], [], []
    for i, d in enumerate(docs):
        if not len(d):
            continue
        p = score[i] if score is not None else None
        u = data[i].updated_at[d]
        q = u if p is None else p
        if k < len(d) and len(d) > WHOLE_LEAF:
            sel = np.flatnonzero(q >= _kth_best(q, k))
            d, u, q = d[sel], u[sel], q[sel]
        li.append(np.full(len(d), i, dtype=np.int64))
        dn.append(d.astype(np.int64, copy=False))
        upd.append(u)
        primary.append(q)
    return np.concatenate(li), np.concatenate(dn), np.concatenate(upd), np.concatenate(primary)


def _by_id(keys: list[Key], p: np.ndarray, u: np.ndarray, data: list[SegmentData]) -> list[Key]:
    """``keys`` (sorted by ``p`` desc, ``u`` desc) with each run of equal ``(p, u)`` sorted by id."""
    out: list[Key] = []
    start = 0
    for j in range(1, len(keys) + 1):
        if j == len(keys) or p[j] != p[start] or u[j] != u[start]:
            run = keys[start:j]
            out.extend(run if len(run) == 1 else sorted(run, key=lambda key: data[key[0]].ids[key[1]]))
            start = j
    return out


def stored_record(reader: Any, docnum: int, data: SegmentData) -> Memory | None:
    """The record a document holds (``schema.read_record``, the columns ranking already holds
    taken from ``data``, the segment's), or ``None`` when it does not decode (a damaged snapshot
    or cache: the metric is emitted and recall serves the rest)."""
    try:
        return read_record(reader, docnum, data.known(docnum))
    except Damaged:
        return None
    except Exception as exc:  # noqa: BLE001 - an unreadable record column is a damaged document too
        metrics.emit("damaged", {"DamagedRecords": 1}, {"kind": "index_document", "reason": type(exc).__name__})
        return None


def _check(query: str, limit: int) -> None:
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("query must be a non-empty string.", details={"field": "query"})
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(f"query must be at most {MAX_QUERY_CHARS} characters.", details={"field": "query"})
    if not 1 <= int(limit) <= LIMIT_MAX:
        raise BadRequest(f"limit must be between 1 and {LIMIT_MAX}.", details={"field": "limit"})


def recall(org_id: str, banks: list[str], query: str, *, limit: int, tag: str | None = None,
           include_superseded: bool = False, as_of: int | None = None,
           tuning: MemoryTuning | None = None,
           filter: Callable[[Memory], bool] | None = None,
           now: int | None = None, require: bool = False,
           analysed: QueryTerms | None = None, rows: dict[str, BankHead] | None = None,
           min_match: float | None = None, where: RecallFilter | None = None) -> RecallResult:
    """Rank the memories of ``banks`` (bank names or internal namespace keys) as ONE corpus.

    ``limit``: 1..100 hits; ``where``: only memories passing it rank, as if the banks held only them
    (``filters``); ``tag``: the single tag filter, ``where``'s ``tags_all: [tag]``;
    ``include_superseded``: rank retired memories too; ``as_of``: ms since epoch, rank the banks as
    they stood then (slower: see the module docstring); ``filter``: a caller's visibility test on
    each candidate; ``now``: the clock for recency (ms, default now); ``require``: raise 404
    ``bank_not_found`` for a missing bank instead of treating it as empty; ``analysed``: the
    query already analysed (``analyse``), e.g. by a benchmark timing ranking alone; ``rows``: the
    banks as this turn already read them (``read_rows``: one consistent read per turn), else
    read here; ``min_match``: in [0, 1], no hit whose ``match`` (``search.match``) is under it.
    Raises 400 ``validation_error`` for an empty query or a limit out of range. Emits
    ``metrics.recall_latency`` (the whole call, the consistent read included).
    """
    started = time.perf_counter()
    _check(query, limit)
    if rows is None:
        with timing.phase("bank"):
            rows = read_rows(org_id, banks)
    tuning = tuning or get_tuning()
    if require:
        _require(org_id, banks, rows)
    tag = tag.strip().lower() if tag else None
    present = [b for b in dict.fromkeys(banks) if b in rows]
    with timing.phase("rank"):
        if as_of is not None:
            result = _recall_as_of(org_id, present, rows, query, limit=limit, tag=tag,
                                   include_superseded=include_superseded, as_of=int(as_of), tuning=tuning,
                                   filter=filter, min_match=min_match, where=where)
        else:
            vector, mode = query_vector(query, tuning)
            result = _recall_warm(org_id, present, rows, analysed or query, limit=limit, tag=tag,
                                  include_superseded=include_superseded, tuning=tuning, filter=filter,
                                  now=now_ms() if now is None else now, query_vector=vector, mode=mode,
                                  min_match=min_match, where=where)
    metrics.recall_latency((time.perf_counter() - started) * 1000, banks=len(present),
                           candidates=result.candidates, retrieval=result.retrieval)
    return result


def _require(org_id: str, banks: list[str], rows: dict[str, BankHead]) -> None:
    """404 ``bank_not_found`` for the first of ``banks`` missing from ``rows`` (409 ``damaged``
    when its row is there but unusable)."""
    for b in banks:
        if b not in rows:
            store.get_bank_head(org_id, b)  # 409 damaged when its row or a lane row is there but unusable
            raise NotFound(f"Bank '{b}' not found.", code="bank_not_found")


def query_vector(query: str, tuning: MemoryTuning) -> tuple[np.ndarray | None, str]:
    """``(vector, retrieval mode)`` of a recall of ``query``: the query's unit sentence vector
    (embedded once; counted in usage as ``emb_q``) and ``RETRIEVAL_SEMANTIC``, or ``None`` and
    ``RETRIEVAL`` (``w_semantic`` 0, a query the model does not cover) or
    ``RETRIEVAL_UNAVAILABLE`` (the model is not available)."""
    if tuning.w_semantic <= 0 or not semantic.covered(query):
        return None, RETRIEVAL
    if not semantic.available():
        return None, RETRIEVAL_UNAVAILABLE
    vec = semantic.embed_query(query)
    if vec is None:
        return None, RETRIEVAL
    meter.note(emb_q=1)
    return vec, RETRIEVAL_SEMANTIC


def _recall_warm(org_id: str, banks: list[str], rows: dict[str, BankHead], query: str | QueryTerms, *,
                 limit: int, tag: str | None, include_superseded: bool, tuning: MemoryTuning,
                 filter: Callable[[Memory], bool] | None, now: int, query_vector: np.ndarray | None = None,
                 mode: str = RETRIEVAL, min_match: float | None = None,
                 where: RecallFilter | None = None) -> RecallResult:
    """Rank ``banks`` through this container's cached indexes, each caught up to its row first."""
    cache = index_mod.active_cache()
    with cache.locked((org_id, b) for b in banks):
        leaves: list[tuple[Any, dict, str]] = []
        for b in banks:
            entry = cache.fresh(org_id, b, rows[b])
            for leaf, _off in entry.reader().leaf_readers():
                leaves.append((leaf, entry.stats_cache, b))
        hits, n = _rank(leaves, query, limit=limit, tag=tag, include_superseded=include_superseded,
                        tuning=tuning, filter=filter, now=now, query_vector=query_vector, min_match=min_match,
                        where=where)
    return RecallResult(hits, _mode(mode), n, min_match)


def _mode(base: str) -> str:
    """The retrieval mode to report: ``base``, plus ``+last-good-tuning`` while the configured
    tuning is invalid and the last good one ranks (degradation is never silent)."""
    return base + LAST_GOOD_TUNING if tuning_problem() is not None else base


def state_as_of(inc: str, as_of: int) -> list[Memory]:
    """Each memory of a bank incarnation as it stood at ``as_of`` (ms): per id the revision with
    the greatest ``updated_at`` <= ``as_of`` (the later ``seq`` on a tie), live when its
    ``invalid_at`` is unset or later. Purged content never reappears (revisions are scrubbed)."""
    best: dict[str, tuple[int, int, Memory]] = {}
    for seq, _op, rec in store.iter_revisions(inc, 0, changes_only=True):
        if isinstance(rec, Damaged) or rec.updated_at > as_of:  # a damaged revision is left out
            continue
        cur = best.get(rec.id)
        if cur is None or (rec.updated_at, seq) >= (cur[0], cur[1]):
            best[rec.id] = (rec.updated_at, seq, rec)
    out = []
    for _u, _s, rec in best.values():
        if not rec.text and not rec.name:
            continue
        if rec.invalid_at is not None and rec.invalid_at > as_of:
            rec = rec.model_copy(update={"invalid_at": None, "superseded_by": None})
        out.append(rec)
    return out


def _recall_as_of(org_id: str, banks: list[str], rows: dict[str, BankHead], query: str, *, limit: int,
                  tag: str | None, include_superseded: bool, as_of: int, tuning: MemoryTuning,
                  filter: Callable[[Memory], bool] | None, min_match: float | None = None,
                  where: RecallFilter | None = None) -> RecallResult:
    leaves: list[tuple[Any, dict, str]] = []
    for b in banks:
        ix = index_mod.transient_index(state_as_of(rows[b].incarnation, as_of))
        reader = ix.reader()
        for leaf, _off in reader.leaf_readers():
            leaves.append((leaf, {}, b))
    hits, n = _rank(leaves, query, limit=limit, tag=tag, include_superseded=include_superseded,
                    tuning=tuning, filter=filter, now=as_of, min_match=min_match, where=where)
    return RecallResult(hits, _mode(RETRIEVAL_AS_OF), n, min_match)


def recall_bank(org_id: str, bank: str, query: str, *, limit: int | None = None, tag: str | None = None,
                include_superseded: bool = False, as_of: int | None = None,
                where: RecallFilter | None = None) -> RecallResult:
    """``POST /v1/banks/{bank}/recall``: ``recall`` of one bank that must exist, ``limit`` defaulting
    to ``LIMIT_DEFAULT``, hits held to the bank's match threshold (``banks.settings_read``), only
    memories passing ``where`` ranked (``filters``). Raises 400 ``validation_error`` and 404
    ``bank_not_found``."""
    with timing.phase("bank"):
        rows = read_rows(org_id, [bank])
    tuning = get_tuning()
    threshold = recall_settings(rows.get(bank), tuning).match_threshold
    return recall(org_id, [bank], query, limit=limit or LIMIT_DEFAULT, tag=tag,
                  include_superseded=include_superseded, as_of=as_of, require=True, tuning=tuning, rows=rows,
                  min_match=threshold or None, where=where)


# --- the ambient floor, freshness and maintenance ------------------------------------------

def top_memories(org_id: str, bank: str, n: int, *, rows: dict[str, BankHead] | None = None,
                 where: RecallFilter | None = None) -> list[Memory]:
    """The bank's top ``n`` live memories: pinned desc, corroboration desc, ``updated_at`` desc,
    id asc (the injection's ambient floor), ordered over the segments' columns; only those passing
    ``where`` (``filters``). A missing bank has none. ``rows``: the bank as this turn already read
    it (``read_rows``), else one consistent read here."""
    if n <= 0:
        return []
    row = (read_rows(org_id, [bank]) if rows is None else rows).get(bank)
    if row is None:
        return []
    cache = index_mod.active_cache()
    with cache.lock(org_id, bank):
        entry = cache.fresh(org_id, bank, row)
        readers = [leaf for leaf, _off in entry.reader().leaf_readers() if leaf.doc_count_all() > 0]
        stats = filters.narrow(CorpusStats([(r, entry.stats_cache) for r in readers], False), readers, where)
        data = [stats.data(i) for i in range(len(readers))]
        docs = [np.flatnonzero(seg.keep) for seg in stats.segments]
        keys = _ordered(data, docs, n)
        return [rec for i, d in keys if (rec := stored_record(readers[i], d, data[i])) is not None]


def _ordered(data: list[SegmentData], docs: list[np.ndarray], n: int) -> list[Key]:
    """The first ``n`` of ``docs`` (per leaf) by pinned desc, corroboration desc, ``updated_at``
    desc, id asc: one ``lexsort`` over the columns, ids breaking the ties that remain."""
    if not sum(len(d) for d in docs):
        return []
    li = np.concatenate([np.full(len(d), i, dtype=np.int64) for i, d in enumerate(docs)])
    dn = np.concatenate(docs)
    pin = np.concatenate([sd.pinned[d] for sd, d in zip(data, docs, strict=True)])
    corr = np.concatenate([sd.corroboration[d] for sd, d in zip(data, docs, strict=True)])
    upd = np.concatenate([sd.updated_at[d] for sd, d in zip(data, docs, strict=True)])
    order = np.lexsort((-upd, -corr, -pin))
    m = min(n, len(order))
    last = order[m - 1]
    while m < len(order) and (pin[order[m]], corr[order[m]], upd[order[m]]) == (pin[last], corr[last], upd[last]):
        m += 1  # the run that straddles the cut: order it whole
    top = order[:m].tolist()
    top.sort(key=lambda j: (-int(pin[j]), -int(corr[j]), -int(upd[j]), data[li[j]].ids[dn[j]]))
    return [(int(li[j]), int(dn[j])) for j in top[:n]]


def ensure_fresh(org_id: str, bank: str) -> None:
    """Catch this container's index of ``bank`` up to the bank's clock (loading it if cold)."""
    head = read_rows(org_id, [bank]).get(bank)
    if head is None:
        return
    cache = index_mod.active_cache()
    with cache.lock(org_id, bank):
        cache.fresh(org_id, bank, head)


@dataclass(frozen=True)
class Rebuilt:
    """A rebuilt bank index: the bank, the changes it holds (``seq``: its clock's total), its live
    ``documents`` and the S3 key of the snapshot written (``None`` without one)."""

    bank: str
    seq: int
    documents: int
    snapshot: str | None


def rebuild(org_id: str, bank: str, *, snapshot: bool = True) -> Rebuilt:
    """Rebuild ``bank``'s index from its records (the CLI's repair), then write a snapshot.
    Raises 404 ``bank_not_found``."""
    head = store.get_bank_head(org_id, bank)
    if head is None:
        raise NotFound(f"Bank '{bank}' not found.", code="bank_not_found")
    cache = index_mod.active_cache()
    with cache.lock(org_id, bank):
        rebuilds = cache.counters["rebuilds"]
        entry = cache.fresh(org_id, bank, head)
        if cache.counters["rebuilds"] == rebuilds:  # not just rebuilt from the records by a cold open
            cache.rebuild_into(entry, head.clock)
        cache.catch_up(entry)
        key = cache.write_snapshot(entry) if snapshot else None
        docs = entry.reader().doc_count()
    return Rebuilt(bank, entry.clock.total, docs, key)


def snapshot_banks(min_seq_delta: int = 100, *, org_id: str | None = None,
                   banks: list[str] | None = None) -> list[str]:
    """Write S3 snapshots (``index.snapshot_key``) of the banks whose clock total
    moved at least ``min_seq_delta`` past their newest snapshot; returns the keys written.

    Scope: ``banks`` of ``org_id``; every bank and namespace of ``org_id``; or, with neither, every
    bank of every org (a table scan: for the schedule and the CLI only, never a request path).
    """
    if org_id is not None and banks is not None:
        rows = [r for r in (store.get_bank_row(org_id, b) for b in banks) if r is not None]
    else:
        rows = store.list_bank_rows(org_id)
    written = []
    cache = index_mod.active_cache()
    for row in rows:
        if row.org_id == CONFIG_ORG or row.name == CONFIG_NAME or row.name.startswith(store.TRASH_PREFIX):
            continue
        try:
            head = store.heads_of(row.org_id, [row])[0]
        except Damaged:
            continue  # reported where it was read; the other banks still get their snapshot
        total = head.clock.total
        newest = index_mod.newest_snapshot_seq(row.org_id, row.name)
        if total == 0 or total - max(newest, 0) < min_seq_delta or total <= newest:
            continue
        with cache.lock(row.org_id, row.name):
            entry = cache.fresh(row.org_id, row.name, head)
            written.append(cache.write_snapshot(entry))
    return written


def drop_caches(org_id: str | None = None) -> int:
    """Drop this container's cached indexes (every org's, or only ``org_id``'s) and its cached
    tuning (a reload); returns how many bank indexes were dropped."""
    dropped = index_mod.active_cache().drop(org_id)
    get_tuning.cache_clear()  # type: ignore[attr-defined]  # set by tuning.py on its function
    return dropped


__all__ = [
    "RETRIEVAL",
    "Hit",
    "QueryTerms",
    "Rebuilt",
    "RecallResult",
    "analyse",
    "drop_caches",
    "ensure_fresh",
    "read_rows",
    "rebuild",
    "recall",
    "recall_bank",
    "snapshot_banks",
    "state_as_of",
    "top_memories",
]
