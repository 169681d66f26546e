"""Recall: rank a bank's memories (or several banks' as one corpus) against a query, no LLM
(issue 3, item 3; the recall interface in DESIGN.md "Recall and injection").

One recall, warm: ONE consistent DynamoDB read (a BatchGetItem of the bank rows and the config
version row, org ``_system`` name ``!config``; see ``chalicelib.inject.reload``), the index
caught up if behind (``index.IndexCache.fresh``), then Whoosh only: no record is read from
DynamoDB and nothing from S3.

Candidates: the top ``fetch_limit`` BM25F hits (analysed query tokens OR-ed as ``Term`` queries,
never a query parser, so ``?`` and ``*`` are plain text) plus the ``fetch_limit`` newest memories
whose entity handles the query names (a first-person query also names ``user``). Both honour the
live flag and the tag filter before any cut. Candidates are re-ranked by the full score
(``scorer.score``); ties by ``updated_at`` desc, id asc. A query that matches nothing returns
nothing. ``retrieval`` names the mode that ran: ``bm25-entity`` (``bm25-entity+as_of`` for a
point-in-time recall).

``as_of`` (ms since epoch) ranks the bank as it stood then: per id the revision with the greatest
``updated_at`` <= ``as_of``, live if its ``invalid_at`` is unset or later. It reads the bank's
whole revision history (a key query) and builds a transient in-memory index, so it costs time
proportional to the history: slower than a normal recall, and meant for audits, not every turn.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Callable

from whoosh.query import Term
from whoosh.query.compound import DefaultOr
from whoosh.reading import MultiReader
from whoosh.searching import Searcher
from whoosh.sorting import FieldFacet, MultiFacet

from ..clock import now_ms
from ..core import store
from ..core.records import Memory
from ..errors import BadRequest, NotFound
from ..storage.tables import BankModel, bind
from ..tuning import MemoryTuning, get_tuning, set_config_version
from . import index as index_mod
from .analyzers import cjk_analyzer, entity_keys, memory_analyzer, query_terms
from .schema import from_stored
from .scorer import CorpusBM25F, CorpusStats, rank_key, score

RETRIEVAL = "bm25-entity"
RETRIEVAL_AS_OF = "bm25-entity+as_of"
CONFIG_ORG, CONFIG_NAME = "_system", "!config"  # the config version row (chalicelib.inject.reload)
LIMIT_DEFAULT, LIMIT_MAX = 6, 100
MAX_QUERY_CHARS = 4000
_TEXT_FIELDS = ("text", "name", "description")


@dataclass
class Hit:
    """One recalled memory: ``signals`` = ``{bm25, entity, corroboration, pinned, recency}``;
    ``bank`` names the bank or namespace it came from."""

    memory: Memory
    score: float
    signals: dict[str, float]
    bank: str

    def public(self) -> dict[str, Any]:
        """``{memory, score, signals}`` as the recall route renders it."""
        return {"memory": self.memory.public(), "score": self.score, "signals": dict(self.signals)}


@dataclass
class RecallResult:
    """The ranked hits, the retrieval mode that ran and how many candidates were scored."""

    hits: list[Hit]
    retrieval: str
    candidates: int


# --- the one consistent read ---------------------------------------------------------------

def read_rows(org_id: str, banks: list[str]) -> dict[str, BankModel]:
    """The bank rows of ``banks`` (absent ones left out) and, in the same BatchGetItem, the config
    version row: one consistent DynamoDB read. A moved config version drops this container's
    index caches and tuning (another container ran ``POST /v1/reload``)."""
    bind()
    keys = [(org_id, b) for b in dict.fromkeys(banks)] + [(CONFIG_ORG, CONFIG_NAME)]
    rows: dict[str, BankModel] = {}
    version = 0
    for row in BankModel.batch_get(keys, consistent_read=True):
        if row.org_id == CONFIG_ORG and row.name == CONFIG_NAME:
            version = int(row.seq or 0)
        elif row.org_id == org_id:
            rows[row.name] = row
    if set_config_version(version):
        index_mod.active_cache().drop()
    return rows


# --- ranking -------------------------------------------------------------------------------

def _filter_query(tag: str | None):
    return Term("tags", tag) if tag else None


def _rank(leaves: list[tuple[Any, dict, str]], query: str, *, limit: int, tag: str | None,
          include_superseded: bool, tuning: MemoryTuning, filter: Callable[[Memory], bool] | None,
          now: int) -> tuple[list[Hit], int]:
    """Rank over ``(segment reader, stats cache, bank)`` leaves as one corpus."""
    leaves = [leaf for leaf in leaves if leaf[0].doc_count_all() > 0]  # an empty index has no segment
    if not leaves:
        return [], 0
    terms = query_terms(memory_analyzer(), query)
    cjk_terms = query_terms(cjk_analyzer(), query)
    ekeys = entity_keys(query)
    readers = [r for r, _, _ in leaves]
    # only (field, term) pairs some segment holds: fewer matchers, same scores
    pairs = [(f, t) for t in terms for f in _TEXT_FIELDS] + [("cjk", t) for t in cjk_terms]
    subqueries = [Term(f, t) for f, t in pairs if any((f, t) in r for r in readers)]
    ekeys = [k for k in ekeys if any(("entities", k) in r for r in readers)]
    if not subqueries and not ekeys:
        return [], 0
    starts, total = [], 0
    for r in readers:
        starts.append(total)
        total += r.doc_count_all()
    reader = MultiReader(readers)
    stats = CorpusStats([(r, c) for r, c, _ in leaves], include_superseded)
    searcher = Searcher(reader, weighting=CorpusBM25F(stats), closereader=False)
    fq = _filter_query(tag)
    # retired documents are masked (usually far fewer than the live ones; cached per segment)
    mask = {d + start for start, seg in zip(starts, stats.segments) for d in seg.excluded} or None
    fetch = tuning.fetch_limit
    bm25: dict[int, float] = {}
    text_q = DefaultOr(subqueries) if subqueries else None  # union tree, not Whoosh's O(N) array
    if text_q is not None:
        # a little over fetch_limit, so ties at the cut do not depend on document numbers
        res = searcher.search(text_q, filter=fq, mask=mask, limit=None if filter else fetch + 10)
        bm25 = {hit.docnum: hit.score for hit in res}
    ent_docs: list[int] = []
    if ekeys:
        order = MultiFacet([FieldFacet("updated_at", reverse=True), FieldFacet("id")])
        res = searcher.search(DefaultOr([Term("entities", k) for k in ekeys]), filter=fq, mask=mask,
                              limit=None if filter else fetch, sortedby=order)
        ent_docs = [hit.docnum for hit in res]
        missing = {d for d in ent_docs if d not in bm25}
        if missing and text_q is not None:
            for hit in searcher.search(text_q, filter=missing, limit=None):
                bm25[hit.docnum] = hit.score
    keyset = set(ekeys)

    def load(docnum: int) -> Memory:
        return from_stored(searcher.stored_fields(docnum))

    scored_bm25 = []
    for d, s in bm25.items():
        m = load(d)
        if filter is None or filter(m):
            scored_bm25.append((d, s, m))
    scored_bm25.sort(key=lambda x: (-x[1], -x[2].updated_at, x[2].id))
    cands: dict[int, Memory] = {d: m for d, _, m in scored_bm25[:fetch]}
    n_ent = 0
    for d in ent_docs:
        if n_ent >= fetch:
            break
        m = cands.get(d) or load(d)
        if filter is not None and filter(m) is False:
            continue
        n_ent += 1
        cands[d] = m
    out = []
    for d, m in cands.items():
        hits = sum(1 for e in m.entities if e in keyset)
        bank = leaves[bisect.bisect_right(starts, d) - 1][2]
        s = score(m, bm25.get(d, 0.0), hits, now, tuning, bank)
        out.append(s)
    out.sort(key=rank_key)
    return [Hit(s.memory, s.score, s.signals, s.bank) for s in out[:limit]], len(out)


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
           now: int | None = None, require: bool = False) -> RecallResult:
    """Rank the memories of ``banks`` (bank names or internal namespace keys) as ONE corpus.

    ``limit``: 1..100 hits; ``tag``: only memories carrying that handle (applied before the cut);
    ``include_superseded``: rank retired memories too; ``as_of``: ms since epoch, rank the banks as
    they stood then (slower: see the module docstring); ``filter``: a caller's visibility test on
    each candidate; ``now``: the clock for recency (ms, default now); ``require``: raise 404
    ``bank_not_found`` for a missing bank instead of treating it as empty.
    Raises 400 ``validation_error`` for an empty query or a limit out of range.
    """
    _check(query, limit)
    rows = read_rows(org_id, banks)
    tuning = tuning or get_tuning()
    if require:
        for b in banks:
            if b not in rows:
                raise NotFound(f"Bank '{b}' not found.", code="bank_not_found")
    tag = tag.strip().lower() if tag else None
    present = [b for b in dict.fromkeys(banks) if b in rows]
    if as_of is not None:
        return _recall_as_of(org_id, present, rows, query, limit=limit, tag=tag,
                             include_superseded=include_superseded, as_of=int(as_of), tuning=tuning,
                             filter=filter)
    now = now_ms() if now is None else now
    cache = index_mod.active_cache()
    with cache.locked((org_id, b) for b in present):
        leaves = []
        for b in present:
            entry = cache.fresh(org_id, b, rows[b])
            for leaf, _off in entry.reader().leaf_readers():
                leaves.append((leaf, entry.stats_cache, b))
        hits, n = _rank(leaves, query, limit=limit, tag=tag, include_superseded=include_superseded,
                        tuning=tuning, filter=filter, now=now)
    return RecallResult(hits, RETRIEVAL, n)


def state_as_of(inc: str, as_of: int) -> list[Memory]:
    """Each memory of a bank incarnation as it stood at ``as_of`` (ms): per id the revision with
    the greatest ``updated_at`` <= ``as_of`` (the later ``seq`` on a tie), live when its
    ``invalid_at`` is unset or later. Purged content never reappears (revisions are scrubbed)."""
    best: dict[str, tuple[int, int, Memory]] = {}
    for seq, _op, rec in store.iter_revisions(inc, 0):
        if rec.updated_at > as_of:
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


def _recall_as_of(org_id: str, banks: list[str], rows: dict[str, BankModel], query: str, *, limit: int,
                  tag: str | None, include_superseded: bool, as_of: int, tuning: MemoryTuning,
                  filter: Callable[[Memory], bool] | None) -> RecallResult:
    leaves = []
    for b in banks:
        ix = index_mod.transient_index(state_as_of(rows[b].incarnation, as_of))
        reader = ix.reader()
        for leaf, _off in reader.leaf_readers():
            leaves.append((leaf, {}, b))
    hits, n = _rank(leaves, query, limit=limit, tag=tag, include_superseded=include_superseded,
                    tuning=tuning, filter=filter, now=as_of)
    return RecallResult(hits, RETRIEVAL_AS_OF, n)


def recall_bank(org_id: str, bank: str, query: str, *, limit: int | None = None, tag: str | None = None,
                include_superseded: bool = False, as_of: int | None = None) -> dict[str, Any]:
    """``POST /v1/banks/{bank}/recall``: ``{memories: [{memory, score, signals}], retrieval}``.

    Raises 400 ``validation_error`` and 404 ``bank_not_found``."""
    result = recall(org_id, [bank], query, limit=limit or LIMIT_DEFAULT, tag=tag,
                    include_superseded=include_superseded, as_of=as_of, require=True)
    return {"memories": [h.public() for h in result.hits], "retrieval": result.retrieval}


# --- the ambient floor, freshness and maintenance ------------------------------------------

def top_memories(org_id: str, bank: str, n: int) -> list[Memory]:
    """The bank's top ``n`` live memories: pinned desc, corroboration desc, ``updated_at`` desc,
    id asc (the injection's ambient floor). A missing bank has none. One consistent read."""
    if n <= 0:
        return []
    rows = read_rows(org_id, [bank])
    row = rows.get(bank)
    if row is None:
        return []
    cache = index_mod.active_cache()
    with cache.lock(org_id, bank):
        entry = cache.fresh(org_id, bank, row)
        searcher = Searcher(entry.reader(), closereader=False)
        order = MultiFacet([FieldFacet("pinned", reverse=True), FieldFacet("corroboration", reverse=True),
                            FieldFacet("updated_at", reverse=True), FieldFacet("id")])
        res = searcher.search(Term("live", "1"), limit=n, sortedby=order)
        return [from_stored(hit.fields()) for hit in res]


def ensure_fresh(org_id: str, bank: str) -> None:
    """Catch this container's index of ``bank`` up to the bank's ``seq`` (loading it if cold)."""
    row = read_rows(org_id, [bank]).get(bank)
    if row is None:
        return
    cache = index_mod.active_cache()
    with cache.lock(org_id, bank):
        cache.fresh(org_id, bank, row)


def rebuild(org_id: str, bank: str, *, snapshot: bool = True) -> dict[str, Any]:
    """Rebuild ``bank``'s index from its records (the CLI's repair), then write a snapshot:
    ``{bank, seq, documents, snapshot}``. Raises 404 ``bank_not_found``."""
    row = store.get_bank_row(org_id, bank)
    if row is None:
        raise NotFound(f"Bank '{bank}' not found.", code="bank_not_found")
    cache = index_mod.active_cache()
    with cache.lock(org_id, bank):
        entry = cache.fresh(org_id, bank, row)
        cache._rebuild_into(entry, seq=int(row.seq))
        cache.catch_up(entry)
        key = cache.write_snapshot(entry) if snapshot else None
        docs = entry.reader().doc_count()
    return {"bank": bank, "seq": entry.seq, "documents": docs, "snapshot": key}


def snapshot_banks(min_seq_delta: int = 100, *, org_id: str | None = None,
                   banks: list[str] | None = None) -> list[str]:
    """Write S3 snapshots (``<org>/indexes/<bank>/<seq>.tar.gz``) of the banks whose ``seq`` moved
    at least ``min_seq_delta`` past their newest snapshot; returns the keys written.

    Scope: ``banks`` of ``org_id``; every bank and namespace of ``org_id``; or, with neither, every
    bank of every org (a table scan: for the schedule and the CLI only, never a request path).
    """
    bind()
    if org_id is not None and banks is not None:
        rows = [r for r in (store.get_bank_row(org_id, b) for b in banks) if r is not None]
    elif org_id is not None:
        rows = list(BankModel.query(org_id, consistent_read=True))
    else:
        rows = list(BankModel.scan())
    written = []
    cache = index_mod.active_cache()
    for row in rows:
        if row.org_id == CONFIG_ORG or row.name.startswith(store.TRASH_PREFIX) or int(row.seq or 0) == 0:
            continue
        newest = index_mod.newest_snapshot_seq(row.org_id, row.name)
        if int(row.seq) - max(newest, 0) < min_seq_delta or int(row.seq) <= newest:
            continue
        with cache.lock(row.org_id, row.name):
            entry = cache.fresh(row.org_id, row.name, row)
            written.append(cache.write_snapshot(entry))
    return written


def drop_caches() -> None:
    """Drop every cached index of this container and the cached tuning (``POST /v1/reload``)."""
    index_mod.active_cache().drop()
    get_tuning.cache_clear()  # type: ignore[attr-defined]


__all__ = ["Hit", "RecallResult", "recall", "recall_bank", "top_memories", "ensure_fresh", "rebuild",
           "snapshot_banks", "drop_caches", "state_as_of", "read_rows", "RETRIEVAL"]
