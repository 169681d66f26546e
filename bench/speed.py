"""Recall speed (issue 3, item 6): warm recall beside bm25s, the index cost of one write,
catch-up after writes by another container, cold start from a snapshot versus a rebuild, and
the DynamoDB/S3 calls of one warm recall.

Corpus: synthetic 20-word memories over a Zipf-distributed vocabulary of made-up words, one
entity each, loaded through ``chalicelib.banks.transfer.import_lines`` (the import path) into one
bank per size. Selective queries are two words from the vocabulary's tail; common-term queries
are three of the ten most frequent words. "Another container" is a second
``chalicelib.search.index.IndexCache`` with its own root directory, made active with
``index.using``: it shares only the (moto) DynamoDB and S3 backend with the first.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
from typing import Any

from .harness import CallCounter, backend, fast_moto_transactions, median, pct

ORG = "bench"
VOCAB = 20000
WORDS_PER_DOC = 20
SYL = ["ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "pi", "qua", "zen", "bri", "mon", "tal", "ux", "ne"]


def vocabulary(rng: random.Random) -> list[str]:
    """VOCAB distinct made-up words of 2-4 syllables."""
    words: set[str] = set()
    while len(words) < VOCAB:
        words.add("".join(rng.choice(SYL) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def corpus(n: int, seed: int = 7) -> tuple[list[str], list[str], list[str]]:
    """``(texts, entities, vocabulary by frequency rank)``: n distinct Zipf-worded texts."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    rng.shuffle(vocab)
    weights = [1.0 / (r + 1) for r in range(VOCAB)]
    names = [f"person{i}" for i in range(50)]
    texts, ents, seen = [], [], set()
    while len(texts) < n:
        t = " ".join(rng.choices(vocab, weights=weights, k=WORDS_PER_DOC))
        if t in seen:
            continue
        seen.add(t)
        texts.append(t)
        ents.append(rng.choice(names))
    return texts, ents, vocab


def queries(vocab: list[str], k: int, seed: int = 11) -> dict[str, list[str]]:
    rng = random.Random(seed)
    tail = vocab[2000:8000]
    head = vocab[:10]
    return {"selective": [" ".join(rng.sample(tail, 2)) for _ in range(k)],
            "common": [" ".join(rng.sample(head, 3)) for _ in range(k)]}


def load(bank: str, texts: list[str], ents: list[str], t0: int, batch: int = 3000) -> float:
    """Import through ``import_lines`` in batches; returns seconds."""
    from chalicelib.banks.transfer import import_lines

    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        lines = [json.dumps({"text": t, "entities": [e], "created_at": t0 + j, "updated_at": t0 + j}).encode()
                 for j, (t, e) in enumerate(zip(texts[i:i + batch], ents[i:i + batch]), start=i)]
        res = import_lines(ORG, bank, lines, actor="bench")
        if res["errors"]:
            raise RuntimeError(f"import errors: {res['errors'][:3]}")
    return time.perf_counter() - started


def timed(fn, *args, **kw) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn(*args, **kw)
    return (time.perf_counter() - started) * 1000, out


def bm25s_timings(texts: list[str], qs: dict[str, list[str]], k: int) -> dict[str, dict[str, float]]:
    """bm25s on the same corpus and queries, corpus and queries tokenised beforehand (ms)."""
    import bm25s

    tok = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    r = bm25s.BM25()
    r.index(tok, show_progress=False)
    vocab = tok.vocab
    out = {}
    for kind, items in qs.items():
        pre = [[vocab[w] for w in q.split() if w in vocab] for q in items]
        for p in pre[:5]:
            r.retrieve([p], k=k, show_progress=False)
        ms = []
        for p in pre:
            started = time.perf_counter()
            r.retrieve([p], k=k, show_progress=False)
            ms.append((time.perf_counter() - started) * 1000)
        out[kind] = {"p50_ms": round(median(ms), 3), "p95_ms": round(pct(ms, 0.95), 3)}
    return out


def one_size(n: int, counter: CallCounter, nq: int) -> dict[str, Any]:
    from chalicelib.banks.service import save_memory
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import recall
    from chalicelib.tuning import get_tuning

    bank = f"speed{n}"
    t0 = int(time.time() * 1000) - n
    texts, ents, vocab = corpus(n)
    qs = queries(vocab, nq)
    res: dict[str, Any] = {"memories": n}
    root_a = tempfile.mkdtemp(prefix="cairn-bench-a-")
    root_b = tempfile.mkdtemp(prefix="cairn-bench-b-")
    cache_a = index.IndexCache(root_a)
    cache_b = index.IndexCache(root_b)
    tuning = get_tuning()
    limit = tuning.recall_limit
    try:
        with index.using(cache_a):
            res["load_s"] = round(load(bank, texts, ents, t0), 1)
            recall(ORG, [bank], qs["selective"][0], limit=limit)  # warm (already current: A wrote)
            # warm recall latency
            warm: dict[str, Any] = {}
            for kind, items in qs.items():
                for q in items[:5]:
                    recall(ORG, [bank], q, limit=limit)
                ms = [timed(recall, ORG, [bank], q, limit=limit)[0] for q in items]
                warm[kind] = {"p50_ms": round(median(ms), 3), "p95_ms": round(pct(ms, 0.95), 3)}
            res["warm_recall"] = warm
            # the same, minus the consistent DynamoDB read (rows read once): the index's own share
            from chalicelib.search import recall as recall_mod
            rows = recall_mod.read_rows(ORG, [bank])
            real_read = recall_mod.read_rows
            recall_mod.read_rows = lambda org_id, banks: rows
            try:
                idx: dict[str, Any] = {}
                for kind, items in qs.items():
                    ms = [timed(recall, ORG, [bank], q, limit=limit)[0] for q in items]
                    idx[kind] = {"p50_ms": round(median(ms), 3), "p95_ms": round(pct(ms, 0.95), 3)}
            finally:
                recall_mod.read_rows = real_read
            res["warm_recall_index_only"] = idx
            res["bm25s"] = bm25s_timings(texts, qs, limit)
            # calls per warm recall
            with counter.counting() as calls:
                recall(ORG, [bank], qs["selective"][1], limit=limit)
            res["calls_per_warm_recall"] = dict(calls)
            # index cost of one write (Whoosh add + commit through the writer's own cache)
            costs: list[float] = []
            original = index.IndexCache.on_commit

            def timed_commit(self, *a, **kw):
                started = time.perf_counter()
                try:
                    return original(self, *a, **kw)
                finally:
                    costs.append((time.perf_counter() - started) * 1000)

            index.IndexCache.on_commit = timed_commit
            try:
                for i in range(21):
                    save_memory(ORG, bank, SaveRequest(text=f"bench write {n} {i} " + " ".join(vocab[i:i + 5])),
                                actor="bench")
            finally:
                index.IndexCache.on_commit = original
            res["write_index_ms_median"] = round(median(costs[1:]), 3)
        # catch-up: B writes, A (warm) catches up on its next recall
        catchup: dict[str, Any] = {}
        ks = [1, 100] + ([10000] if n >= 10000 else [])
        extra = 0
        for k in ks:
            with index.using(cache_b):
                more, more_e, _ = corpus(k, seed=1000 + k)
                more = [f"{t} catchup{k}" for t in more]
                load(bank, more, more_e, t0 + n + extra)
                extra += k
            with index.using(cache_a):
                before = dict(cache_a.counters)
                ms, _ = timed(recall, ORG, [bank], qs["selective"][2], limit=limit)
                catchup[str(k)] = {"ms": round(ms, 1),
                                   "path": {c: cache_a.counters[c] - before.get(c, 0) for c in cache_a.counters}}
        res["catch_up"] = catchup
        # cold start: snapshot versus rebuild
        with index.using(cache_a):
            entry = cache_a.get(ORG, bank)
            with cache_a.lock(ORG, bank):
                cache_a.write_snapshot(entry)
        cold: dict[str, Any] = {}
        root_c = tempfile.mkdtemp(prefix="cairn-bench-c-")
        cache_c = index.IndexCache(root_c)
        with index.using(cache_c):
            ms, _ = timed(recall, ORG, [bank], qs["selective"][3], limit=limit)
            cold["snapshot"] = {"ms": round(ms, 1), "path": dict(cache_c.counters)}
        cache_c.drop()
        shutil.rmtree(root_c, ignore_errors=True)
        from chalicelib.storage import blobs
        blobs.delete_prefix(index.snapshot_prefix(ORG, bank))
        root_d = tempfile.mkdtemp(prefix="cairn-bench-d-")
        cache_d = index.IndexCache(root_d)
        with index.using(cache_d):
            ms, _ = timed(recall, ORG, [bank], qs["selective"][3], limit=limit)
            cold["rebuild"] = {"ms": round(ms, 1), "path": dict(cache_d.counters)}
        cache_d.drop()
        shutil.rmtree(root_d, ignore_errors=True)
        res["cold_start"] = cold
    finally:
        cache_a.drop()
        cache_b.drop()
        shutil.rmtree(root_a, ignore_errors=True)
        shutil.rmtree(root_b, ignore_errors=True)
    return res


def run(sizes: list[int], counter: CallCounter, *, queries: int = 200) -> tuple[dict, list[str]]:
    """Run every size in one fresh moto backend each: ``(json, markdown lines)``."""
    fast_moto_transactions()
    out: dict[str, Any] = {"sizes": {}, "notes": []}
    for n in sizes:
        started = time.perf_counter()
        with backend():
            try:
                out["sizes"][str(n)] = one_size(n, counter, queries)
            except Exception as exc:  # noqa: BLE001 - report what failed and go on
                out["sizes"][str(n)] = {"memories": n, "error": f"{type(exc).__name__}: {exc}"}
        out["sizes"][str(n)]["wall_s"] = round(time.perf_counter() - started, 1)
        print(f"speed: {n} memories done in {out['sizes'][str(n)]['wall_s']} s", flush=True)
    return out, markdown(out)


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Speed", "",
          "| memories | load (s) | warm recall selective p50/p95 (ms) | bm25s selective p50/p95 | "
          "warm recall common p50/p95 | bm25s common p50/p95 | index cost of one write, median (ms) | "
          "DynamoDB/S3 calls per warm recall |",
          "|---|---|---|---|---|---|---|---|"]
    for n, r in out["sizes"].items():
        if "error" in r:
            md.append(f"| {n} | failed: {r['error']} |||||||")
            continue
        w, b = r["warm_recall"], r["bm25s"]
        md.append(f"| {n} | {r['load_s']} | {w['selective']['p50_ms']} / {w['selective']['p95_ms']} | "
                  f"{b['selective']['p50_ms']} / {b['selective']['p95_ms']} | {w['common']['p50_ms']} / "
                  f"{w['common']['p95_ms']} | {b['common']['p50_ms']} / {b['common']['p95_ms']} | "
                  f"{r['write_index_ms_median']} | {r['calls_per_warm_recall']} |")
    md += ["", "Warm recall without its DynamoDB read (bank row read once beforehand): the index's own share.", "",
           "| memories | selective p50/p95 (ms) | common p50/p95 (ms) |", "|---|---|---|"]
    for n, r in out["sizes"].items():
        i = r.get("warm_recall_index_only")
        if i:
            md.append(f"| {n} | {i['selective']['p50_ms']} / {i['selective']['p95_ms']} | "
                      f"{i['common']['p50_ms']} / {i['common']['p95_ms']} |")
    md += ["", "| memories | catch-up after 1 / 100 / 10,000 writes by another container (ms) | "
               "cold start from snapshot (ms) | cold rebuild (ms) |", "|---|---|---|---|"]
    for n, r in out["sizes"].items():
        if "error" in r:
            continue
        c = r["catch_up"]
        md.append(f"| {n} | {' / '.join(str(c[k]['ms']) if k in c else '-' for k in ('1', '100', '10000'))} | "
                  f"{r['cold_start']['snapshot']['ms']} | {r['cold_start']['rebuild']['ms']} |")
    md.append("")
    return md
