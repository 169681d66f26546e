"""Ranking alone at one size, on an index built directly (no DynamoDB, no moto): the speed part's
corpus and queries (``bench.speed``), the records applied to a bank index in batches of 3,000,
then ``chalicelib.search.recall._rank`` timed per query (query analysed beforehand), beside
bm25s on the same corpus. Quick to rerun against another checkout's ``chalicelib`` on the same
index (``--index-dir`` of a directory an earlier run built), so before and after share the
machine's conditions.

``python -m bench.ranking --size 100000 [--queries 200] [--index-dir DIR] [--no-bm25s]``
prints one JSON object: ``{size, build_s, ranking: {kind: {p50_ms, p95_ms}}, ranking_with_feedback: ...,
bm25s: ..., index_bytes}`` (``ranking``: the shipped defaults; ``ranking_with_feedback``: ``w_prf`` 0.5).
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


def build(path: str, texts: list[str], ents: list[str], t0: int) -> Any:
    """The bank index of ``texts`` in ``path`` (reused when a complete one is there)."""
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
    for i in range(0, len(texts), BATCH):
        entry.apply([(k + 1, Memory(id=fingerprint(t), text=t, entities=[e], created_at=t0 + k, updated_at=t0 + k))
                     for k, (t, e) in enumerate(zip(texts[i:i + BATCH], ents[i:i + BATCH], strict=True), start=i)])
    open(done, "w").close()
    return entry


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m bench.ranking", description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--no-bm25s", action="store_true")
    args = ap.parse_args(argv)
    from chalicelib.search import recall as recall_mod
    from chalicelib.tuning import MemoryTuning

    texts, ents, vocab = corpus(args.size)
    qs = queries(vocab, args.queries)
    t0 = 1_800_000_000_000 - args.size
    path = args.index_dir or f"/tmp/cairn-bench-ranking-{args.size}"
    started = time.perf_counter()
    entry = build(path, texts, ents, t0)
    out: dict[str, Any] = {"size": args.size, "build_s": round(time.perf_counter() - started, 1),
                           "index_bytes": entry.measure()}
    leaves = [(leaf, entry.stats_cache, "rank") for leaf, _off in entry.reader().leaf_readers()]
    defaults = MemoryTuning()
    # the shipped defaults; feedback (off by default) on at the tuned weight, its cost apart
    for label, tuning in (("ranking", defaults), ("ranking_with_feedback", defaults.model_copy(update={"w_prf": 0.5}))):
        out[label] = {}
        for kind, items in qs.items():
            analysed = [recall_mod.analyse(q) for q in items]
            for a in analysed[:5]:  # warm-up: first decodes
                recall_mod._rank(leaves, a, limit=tuning.recall_limit, tag=None, include_superseded=False,
                                 tuning=tuning, filter=None, now=t0 + args.size)
            ms = []
            for a in analysed:
                s = time.perf_counter()
                recall_mod._rank(leaves, a, limit=tuning.recall_limit, tag=None, include_superseded=False,
                                 tuning=tuning, filter=None, now=t0 + args.size)
                ms.append((time.perf_counter() - s) * 1000)
            out[label][kind] = {"p50_ms": round(median(ms), 3), "p95_ms": round(pct(ms, 0.95), 3)}
    if not args.no_bm25s:
        from .speed import bm25s_timings
        out["bm25s"] = bm25s_timings(texts, qs, tuning.recall_limit)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
