"""Ranking alone at one size, on an index built directly (no DynamoDB, no moto): the speed part's
corpus and queries (``bench.speed``), the records applied to a bank index in batches of 3,000,
then ``chalicelib.search.recall._rank`` timed per query (query analysed beforehand), beside
bm25s on the same corpus. Quick to rerun against another checkout's ``chalicelib`` on the same
index (``--index-dir`` of a directory an earlier run built), so before and after share the
machine's conditions.

``python -m bench.ranking --size 100000 [--queries 200] [--index-dir DIR] [--no-bm25s] [--vectors]``
prints one JSON object: ``{size, build_s, ranking: {kind: {p50_ms, p95_ms}}, ranking_with_feedback: ...,
ranking_filtered_entities: ..., ranking_filtered_window: ..., bm25s: ..., tantivy: ..., index_bytes,
index: {bytes, lexical, vectors, terms, postings, segments}}`` (``bm25s``: its fair path,
``get_scores`` on the same tokens then a top-k over the non-zero scores only, in this process; its
own ``retrieve`` apart, see ``speed.bm25s_timings``; ``tantivy`` where installed) (``ranking``: the
shipped defaults without a query vector, i.e. lexical; ``ranking_with_feedback``: ``w_prf`` 0.5;
``ranking_filtered_*``: the defaults with ``bench.speed.filters``, with ``--vectors`` also
``ranking_with_semantic_filtered_*``; ``scoring``: BM25F and the top-k alone, the work bm25s's fair
path does, see ``_time_scoring``). ``--vectors`` stores a seeded random unit vector
with every memory (as ``core.vectors.encode`` stores a real one: the corpus's made-up words would
embed as noise, and 100k forward passes take about an hour on one thread) and adds
``ranking_with_semantic``: the defaults with each query's real vector (``semantic.embed_query``,
computed beforehand: its forward pass is timed by ``bench.query_embedding``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from .harness import median, pct
from .speed import corpus, queries

BATCH = 3000


def _with_vector(m: Any, rng: Any) -> Any:
    """``m`` carrying a random unit vector in the stored form (``core.vectors.encode``)."""
    import numpy as np

    from chalicelib import semantic
    from chalicelib.core import vectors

    v = rng.standard_normal(semantic.DIM).astype(np.float32)
    m.set_vector_blob(vectors.encode(v / np.linalg.norm(v), m.text))
    return m


def build(path: str, texts: list[str], ents: list[str], t0: int, with_vectors: bool = False,
          batch: int = BATCH) -> Any:
    """The bank index of ``texts`` in ``path`` (reused when a complete one is there), one commit
    per ``batch`` records (the import path commits every ``banks.transfer.BATCH``, 23); each
    memory with a random unit vector when ``with_vectors``."""
    import numpy as np
    from whoosh import index as whoosh_index

    from chalicelib.core.records import Memory
    from chalicelib.core.store import Clock
    from chalicelib.fingerprint import fingerprint
    from chalicelib.search.index import INDEX_NAME, BankIndex
    from chalicelib.search.schema import schema

    done = os.path.join(path, "complete")
    if os.path.exists(done):
        return BankIndex("bench", "rank", "inc", path, whoosh_index.open_dir(path, indexname=INDEX_NAME),
                         clock=Clock((len(texts),)))
    os.makedirs(path, exist_ok=True)
    entry = BankIndex("bench", "rank", "inc", path, whoosh_index.create_in(path, schema(), indexname=INDEX_NAME),
                      clock=Clock((0,)))
    rng = np.random.default_rng(7)
    for i in range(0, len(texts), batch):
        recs = [(k + 1, Memory(id=fingerprint(t), text=t, entities=[e], created_at=t0 + k, updated_at=t0 + k))
                for k, (t, e) in enumerate(zip(texts[i:i + batch], ents[i:i + batch], strict=True), start=i)]
        entry.apply([(k, _with_vector(m, rng)) for k, m in recs] if with_vectors else recs)
    open(done, "w").close()
    return entry


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m bench.ranking", description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--no-bm25s", action="store_true")
    ap.add_argument("--vectors", action="store_true", help="store random unit vectors; time the semantic signal")
    ap.add_argument("--batch", type=int, default=BATCH,
                    help="records per commit (23: as the import path commits)")
    ap.add_argument("--merge", action="store_true",
                    help="after the build, run the index cache's background merges to the end and time them")
    args = ap.parse_args(argv)
    from chalicelib.tuning import MemoryTuning

    texts, ents, vocab = corpus(args.size)
    qs = queries(vocab, args.queries)
    t0 = 1_800_000_000_000 - args.size
    path = args.index_dir or f"/tmp/cairn-bench-ranking-{args.size}"
    started = time.perf_counter()
    entry = build(path, texts, ents, t0, args.vectors, args.batch)
    out: dict[str, Any] = {"size": args.size, "batch": args.batch, "build_s": round(time.perf_counter() - started, 1),
                           "index_bytes": entry.measure()}
    if args.merge:
        out["before_merge"] = index_parts(entry)
        out["merge_s"] = merge_all(entry)
    leaves = [(leaf, entry.stats_cache, "rank") for leaf, _off in entry.reader().leaf_readers()]
    defaults = MemoryTuning()
    # the shipped defaults; feedback (off by default) on at the tuned weight, its cost apart
    labels = [("ranking", defaults, False),
              ("ranking_with_feedback", defaults.model_copy(update={"w_prf": 0.5}), False)]
    if args.vectors:
        labels.append(("ranking_with_semantic", defaults, True))
    for label, tuning, semantic_on in labels:
        out[label] = {}
        for kind, items in qs.items():
            out[label][kind] = _time_ranking(leaves, items, tuning, t0 + args.size, semantic_on)
    from .speed import filters
    for name, where in filters(args.size, t0).items():  # the shipped defaults with a filter
        out[f"ranking_filtered_{name}"] = {kind: _time_ranking(leaves, items, defaults, t0 + args.size, False, where)
                                           for kind, items in qs.items()}
        if args.vectors:
            out[f"ranking_with_semantic_filtered_{name}"] = {
                kind: _time_ranking(leaves, items, defaults, t0 + args.size, True, where) for kind, items in qs.items()}
    out["scoring"] = {kind: _time_scoring(leaves, items, defaults.recall_limit) for kind, items in qs.items()}
    out["threads"] = {v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    out["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    out["index"] = index_parts(entry)
    if not args.no_bm25s:
        from .speed import bm25s_timings, tantivy_timings
        out["bm25s"] = bm25s_timings(texts, qs, defaults.recall_limit)
        out["tantivy"] = tantivy_timings(texts, qs, defaults.recall_limit)
    print(json.dumps(out))
    return out


def merge_all(entry: Any) -> float:
    """Seconds the index cache's merge thread takes to finish every merge ``index.merge_plan``
    asks of ``entry`` (each step queues the next)."""
    import tempfile

    from chalicelib.search.index import IndexCache

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cairn-bench-merge-") as root:
        cache = IndexCache(root)
        cache.entries[(entry.org_id, entry.bank)] = entry
        cache.schedule_merge((entry.org_id, entry.bank))
        cache.wait_merges()
    return round(time.perf_counter() - started, 1)


def index_parts(entry: Any) -> dict[str, Any]:
    """The index's bytes on disk by part, summed over its segments: ``vectors`` (the sentence
    vectors' column), ``lexical`` (everything else: term index, postings, the other columns, the
    table of contents), ``terms`` and ``postings`` apart, and ``segments``."""
    from chalicelib.search.schema import VECTOR_FIELD

    total = entry.measure()
    parts = {"vectors": 0, "terms": 0, "postings": 0}
    leaves = entry.reader().leaf_readers()
    for leaf, _off in leaves:
        seg = leaf.segment()
        files = seg.open_compound_file(entry.ix.storage) if seg.is_compound() else entry.ix.storage
        for name in files.list():
            if not name.startswith(seg.segment_id()):
                continue
            if name.endswith(f".{VECTOR_FIELD}.col"):
                parts["vectors"] += files.file_length(name)
            elif name.endswith(".trm"):
                parts["terms"] += files.file_length(name)
            elif name.endswith(".pst"):
                parts["postings"] += files.file_length(name)
    return {"bytes": total, "lexical": total - parts["vectors"], **parts, "segments": len(leaves)}


def _per_query(one: Any, n: int) -> dict[str, float]:
    """p50/p95 ms of ``one(j)`` for ``j`` in ``range(n)``, after 5 warm-up calls (first decodes)."""
    for j in range(min(5, n)):
        one(j)
    ms = []
    for j in range(n):
        s = time.perf_counter()
        one(j)
        ms.append((time.perf_counter() - s) * 1000)
    return {"p50_ms": round(median(ms), 3), "p95_ms": round(pct(ms, 0.95), 3)}


def _time_scoring(leaves: list[Any], items: list[str], k: int) -> dict[str, float]:
    """p50/p95 ms of BM25F alone over ``items`` (analysed beforehand): the corpus statistics, the
    scores of the query's terms and the ``k`` best documents (``recall.bm25f`` and ``pick``), no
    record decoded, no other signal: the work of bm25s's fair path, after 5 warm-up queries."""
    from chalicelib.search import recall as recall_mod
    from chalicelib.search.scorer import CorpusStats

    readers = [r for r, _c, _b in leaves]
    pairs = [[(f, t) for t in recall_mod.analyse(q).terms for f in recall_mod.TEXT_FIELDS] for q in items]

    def one(j: int) -> None:
        stats = CorpusStats([(r, c) for r, c, _b in leaves], False)
        allowed = [stats.segments[i].keep for i in range(len(readers))]
        bm = recall_mod.bm25f(stats, readers, pairs[j], allowed)
        data = [stats.data(i) for i in range(len(readers))]
        recall_mod.pick(data, [d for d, _v in bm], [v for _d, v in bm], k, None)

    return _per_query(one, len(items))


def _time_ranking(leaves: list[Any], items: list[str], tuning: Any, now: int, semantic_on: bool,
                  where: Any = None) -> dict[str, float]:
    """p50/p95 ms of ``_rank`` over ``items`` (analysed beforehand; with each query's vector,
    also computed beforehand, when ``semantic_on``; only memories passing ``where``), after 5
    warm-up queries."""
    from chalicelib import semantic
    from chalicelib.search import recall as recall_mod

    analysed = [recall_mod.analyse(q) for q in items]
    vecs = [semantic.embed_query(q) if semantic_on else None for q in items]
    if semantic_on and any(v is None for v in vecs):
        raise SystemExit("--vectors: the model is not available or a query is not covered")

    def one(j: int) -> None:
        recall_mod._rank(leaves, analysed[j], limit=tuning.recall_limit, tag=None, include_superseded=False,
                         tuning=tuning, filter=None, now=now, query_vector=vecs[j], where=where)

    return _per_query(one, len(items))


if __name__ == "__main__":
    main()
