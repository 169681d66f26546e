"""Recall speed: warm recall beside bm25s, the index cost of one write,
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

import itertools
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from unittest import mock

from .harness import CallCounter, Timer, backend, fast_moto_transactions, median, pct

ORG = "bench"
VOCAB = 20000
WORDS_PER_DOC = 20
COMMON_TARGET_MS = 5.0  # ranking p50 of common-word queries at 100k
COLD_TARGET_MS = 300.0  # a cold recall from the snapshot at 100k
FILTERED_TARGET = 1.5  # a filtered recall's ranking p50 over the unfiltered one's, at 10k
# index bytes per memory at 100k before the compact format (whole records stored as JSON):
# ``python -m bench.ranking --size 100000`` on that checkout
BYTES_PER_MEMORY_BEFORE = 871
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
    texts: list[str] = []
    ents: list[str] = []
    seen: set[str] = set()
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


def load(bank: str, texts: list[str], ents: list[str], t0: int, batch: int = 3000,
         warm: Callable[[], Any] | None = None) -> float:
    """Import through ``import_lines`` in batches; returns seconds. ``warm``, when given, is
    called after the first 30 lines (the bank then exists): a recall that loads the bank into the
    active cache, so the rest of the load reaches that index through the writer's own cache
    (``IndexCache.on_commit``) as it would in a container that serves the bank."""
    from chalicelib.banks.transfer import import_lines

    started = time.perf_counter()
    bounds = [0, 30] if warm is not None else [0]
    bounds += [*range(bounds[-1] + batch, len(texts), batch), len(texts)]
    for n, (i, j) in enumerate(itertools.pairwise(bounds)):
        lines = [json.dumps({"text": t, "entities": [e], "created_at": t0 + k, "updated_at": t0 + k}).encode()
                 for k, (t, e) in enumerate(zip(texts[i:j], ents[i:j], strict=False), start=i)]
        res = import_lines(ORG, bank, lines, actor="bench")
        if res.errors:
            raise RuntimeError(f"import errors: {res.errors[:3]}")
        if n == 0 and warm is not None:
            warm()
    return time.perf_counter() - started


def timed(fn, *args, **kw) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn(*args, **kw)
    return (time.perf_counter() - started) * 1000, out


def _latency(fn, items: list, warmup: int = 5) -> dict[str, float]:
    """``{p50_ms, p95_ms}`` of ``fn(item)`` over ``items``, after ``warmup`` untimed calls."""
    for x in items[:warmup]:
        fn(x)
    ms = [timed(fn, x)[0] for x in items]
    return {"p50_ms": round(median(ms), 3), "p95_ms": round(pct(ms, 0.95), 3)}


def _top_nonzero(scores: Any, k: int) -> Any:
    """The indices of the ``k`` best non-zero ``scores``, best first: the top-k of bm25s's fair path."""
    import numpy as np

    nz = np.flatnonzero(scores)
    if len(nz) > k:
        nz = nz[np.argpartition(-scores[nz], k)[:k]]
    return nz[np.argsort(-scores[nz], kind="stable")]


def bm25s_timings(texts: list[str], qs: dict[str, list[str]], k: int) -> dict[str, Any]:
    """bm25s on the same corpus and queries, corpus and queries tokenised beforehand (ms):
    per query kind the *fair path* (``get_scores`` on the query's token ids, then a top-``k`` over
    the non-zero scores only, in this process), and under ``retrieve`` bm25s's own ``retrieve``
    (whose argpartition runs over every document, the zeros included); ``bytes``, the index as
    ``BM25.save`` writes it (no corpus)."""
    import bm25s

    tok = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    r = bm25s.BM25()
    r.index(tok, show_progress=False)
    vocab = tok.vocab
    ids = {kind: [[vocab[w] for w in q.split() if w in vocab] for q in items] for kind, items in qs.items()}
    out: dict[str, Any] = {kind: _latency(lambda p: _top_nonzero(r.get_scores(p), k) if p else None, items)
                           for kind, items in ids.items()}
    out["retrieve"] = {kind: _latency(lambda p: r.retrieve([p], k=k, show_progress=False), items)
                       for kind, items in ids.items()}
    out["path"] = ("fair: get_scores on the query's token ids, then a top-k over the non-zero scores only; "
                   "retrieve: bm25s's own, its argpartition over every document")
    with tempfile.TemporaryDirectory(prefix="cairn-bench-bm25s-") as d:
        r.save(d)
        out["bytes"] = sum(e.stat().st_size for e in os.scandir(d) if e.is_file())
    return out


def tantivy_timings(texts: list[str], qs: dict[str, list[str]], k: int) -> dict[str, Any] | None:
    """tantivy (where installed, else ``None``) on the same corpus: one text field, its default
    tokenizer, queries parsed beforehand (terms ORed), top-``k`` search p50/p95 ms; ``bytes`` on
    disk after its merges."""
    try:
        import tantivy
    except ImportError:
        return None
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("text", stored=False)
    sch = sb.build()
    with tempfile.TemporaryDirectory(prefix="cairn-bench-tantivy-") as d:
        ix = tantivy.Index(sch, path=d)
        writer = ix.writer(heap_size=128_000_000, num_threads=1)
        for t in texts:
            writer.add_document(tantivy.Document(text=t))
        writer.commit()
        writer.wait_merging_threads()
        ix.reload()
        searcher = ix.searcher()
        parsed = {kind: [ix.parse_query(q, ["text"]) for q in items] for kind, items in qs.items()}
        out: dict[str, Any] = {kind: _latency(lambda q: searcher.search(q, k), items) for kind, items in parsed.items()}
        out["bytes"] = sum(os.path.getsize(os.path.join(root, f)) for root, _d, fs in os.walk(d) for f in fs)
    out["version"] = getattr(tantivy, "__version__", None)
    return out


@dataclass
class _Bank:
    """One size's bench bank and what its steps share."""

    n: int
    counter: CallCounter
    bank: str
    t0: int
    vocab: list[str]
    qs: dict[str, list[str]]
    limit: int
    cache_a: Any
    cache_b: Any
    roots: dict[str, str]
    recall_fn: Callable[..., Any]  # chalicelib.search.recall.recall, imported once

    def recall(self, query: str, **kw: Any) -> Any:
        return self.recall_fn(ORG, [self.bank], query, limit=self.limit, **kw)


def one_size(n: int, counter: CallCounter, nq: int, rebuild_max: int) -> dict[str, Any]:
    """Every measurement of one bank of ``n`` memories (``nq`` queries of each kind)."""
    from chalicelib.search import index
    from chalicelib.search.recall import recall
    from chalicelib.tuning import get_tuning

    texts, ents, vocab = corpus(n)
    roots = {k: tempfile.mkdtemp(prefix=f"cairn-bench-{k}-") for k in "abcd"}
    b = _Bank(n=n, counter=counter, bank=f"speed{n}", t0=int(time.time() * 1000) - n, vocab=vocab,
              qs=queries(vocab, nq), limit=get_tuning().recall_limit, cache_a=index.IndexCache(roots["a"]),
              cache_b=index.IndexCache(roots["b"]), roots=roots, recall_fn=recall)
    res: dict[str, Any] = {"memories": n}
    try:
        with index.using(b.cache_a):
            res["load_s"] = round(load(b.bank, texts, ents, b.t0, warm=lambda: b.recall(b.qs["selective"][0])), 1)
            started = time.perf_counter()
            b.cache_a.wait_merges()  # the background merges the import's small commits queued
            res["merge_wait_s"] = round(time.perf_counter() - started, 1)
            res.update(_warm_recall(b, texts))
            entry = b.cache_a.get(ORG, b.bank)
            res["index_bytes_per_memory"] = round(entry.measure() / n, 1) if entry is not None else None
            res["write_index_ms_median"] = _write_cost(b)
        res["catch_up"] = _catch_up(b)
        res["cold_start"] = _cold_start(b, rebuild_max)
    finally:
        b.cache_a.drop()
        b.cache_b.drop()
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)
    return res


def _warm_recall(b: _Bank, texts: list[str]) -> dict[str, Any]:
    """Warm recall, whole and ranking only (beside bm25s), and the calls of one warm recall."""
    from chalicelib.search import recall as recall_mod
    from chalicelib.search.recall import analyse

    res: dict[str, Any] = {}
    # warm recall, whole: the one consistent DynamoDB read (moto, in-process) + ranking
    res["warm_recall"] = {kind: _latency(lambda q: b.recall(q), items) for kind, items in b.qs.items()}
    # warm recall, ranking only, beside bm25s: query analysed beforehand (bm25s: tokenised
    # beforehand) and the bank row read once, so both time the same work
    rows = recall_mod.read_rows(ORG, [b.bank])
    with mock.patch.object(recall_mod, "read_rows", lambda org_id, banks: rows):
        res["warm_recall_ranking"] = {
            kind: _latency(lambda a: b.recall("x", analysed=a), [analyse(q) for q in items])
            for kind, items in b.qs.items()}
        res["warm_recall_filtered"] = _filtered(b)
    res["bm25s"] = bm25s_timings(texts, b.qs, b.limit)
    res["tantivy"] = tantivy_timings(texts, b.qs, b.limit)
    with b.counter.counting() as calls:
        b.recall(b.qs["selective"][1])
    res["calls_per_warm_recall"] = {k: v for k, v in calls.items() if not k.endswith(":items")}
    return res


def filters(n: int, t0: int) -> dict[str, Any]:
    """The filters the speed part times (``search.filters.RecallFilter``): two of the corpus's 50
    entities (about 4% of the memories pass) and the newer half (``created_after``)."""
    from chalicelib.search.filters import RecallFilter

    return {"entities": RecallFilter(entities_any=["person3", "person7"]),
            "window": RecallFilter(created_after=t0 + n // 2)}


def _filtered(b: _Bank) -> dict[str, Any]:
    """``{unfiltered | filter name: {kind: {p50_ms, p95_ms}}}``: warm recall ranking (the bank row
    read once, the query analysed beforehand, as ``warm_recall_ranking``) without a filter and
    with each of ``filters``. Every call is warm (each query ranked once, untimed, with every
    filter first: its postings decoded) and the calls of one query run one after another, their
    order rotating, so a load that moves during the run weighs on each alike."""
    from chalicelib.search.recall import analyse

    wheres = {"unfiltered": None, **filters(b.n, b.t0)}
    names = list(wheres)
    out: dict[str, Any] = {name: {} for name in wheres}
    for kind, items in b.qs.items():
        analysed = [analyse(q) for q in items]
        for a in analysed:  # warm-up
            for where in wheres.values():
                b.recall("x", analysed=a, where=where)
        ms: dict[str, list[float]] = {name: [] for name in wheres}
        for j, a in enumerate(analysed):
            for name in names[j % len(names):] + names[:j % len(names)]:
                ms[name].append(timed(b.recall, "x", analysed=a, where=wheres[name])[0])
        for name, xs in ms.items():
            out[name][kind] = {"p50_ms": round(median(xs), 3), "p95_ms": round(pct(xs, 0.95), 3)}
    return out


def _write_cost(b: _Bank) -> float:
    """The index cost of one write (Whoosh add + commit through the writer's own cache), median ms."""
    from chalicelib.banks.records import SaveRequest
    from chalicelib.banks.service import save_memory
    from chalicelib.search import index

    costs: list[float] = []
    original = index.IndexCache.on_commit

    def timed_commit(self: Any, *a: Any, **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(self, *a, **kw)
        finally:
            costs.append((time.perf_counter() - started) * 1000)

    with mock.patch.object(index.IndexCache, "on_commit", timed_commit):
        for i in range(21):
            save_memory(ORG, b.bank, SaveRequest(text=f"bench write {b.n} {i} " + " ".join(b.vocab[i:i + 5])),
                        actor="bench")
    return round(median(costs[1:]), 3)


def _catch_up(b: _Bank) -> dict[str, Any]:
    """B writes k memories, A (warm) catches up on its next recall. The revisions Query is timed
    apart: moto's Table.query walks every item of the table on each call, where DynamoDB reads
    only the key range, so its moto time grows with the table."""
    from chalicelib.search import index

    catchup: dict[str, Any] = {}
    extra = 0
    for k in [1, 100] + ([10000] if b.n >= 10000 else []):
        with index.using(b.cache_b):
            more, more_e, _ = corpus(k, seed=1000 + k)
            load(b.bank, [f"{t} catchup{k}" for t in more], more_e, b.t0 + b.n + extra)
            extra += k
        catchup[str(k)] = _catch_up_once(b)
    return catchup


def _catch_up_once(b: _Bank) -> dict[str, Any]:
    """A's next recall after B's writes: the whole, and the lanes' revisions queries timed apart
    (``index._read_lanes``: every lane's key query, in parallel, wall time)."""
    from chalicelib.search import index

    query_ms: list[float] = []
    real_read = index._read_lanes

    def timed_read(inc: str, todo: list[tuple[int, int]]) -> Any:
        started = time.perf_counter()
        try:
            return real_read(inc, todo)
        finally:
            query_ms.append((time.perf_counter() - started) * 1000)

    with mock.patch.object(index, "_read_lanes", timed_read), index.using(b.cache_a), b.counter.counting() as calls:
        before = dict(b.cache_a.counters)
        ms, _ = timed(b.recall, b.qs["selective"][2])
    q = sum(query_ms)
    return {"ms": round(ms, 1), "revisions_query_ms": round(q, 1), "cairn_ms": round(ms - q, 1),
            "items_read": calls.get("dynamodb:Query:items", 0),
            "path": {c: b.cache_a.counters[c] - before.get(c, 0) for c in b.cache_a.counters}}




def _cold_start(b: _Bank, rebuild_max: int) -> dict[str, Any]:
    """A cold recall of a third container from the newest snapshot (moto's share, the S3 list
    and download and the bank read, timed apart), and a rebuild from DynamoDB: the records read
    by the parallel key-range queries (moto's share), Cairn's share (``rebuild_into`` over the
    records already read) at every size, and the whole cold recall through a rebuild (skipped
    over ``rebuild_max`` memories)."""
    from whoosh import index as whoosh_index

    from chalicelib.core import store
    from chalicelib.search import index
    from chalicelib.search.schema import schema
    from chalicelib.storage import blobs

    with index.using(b.cache_a):
        entry = b.cache_a.get(ORG, b.bank)
        if entry is None:
            raise RuntimeError(f"bank {b.bank} is not in the warm cache")
        with b.cache_a.lock(ORG, b.bank):
            started = time.perf_counter()
            key = b.cache_a.write_snapshot(entry)
            write_ms = (time.perf_counter() - started) * 1000
    cold: dict[str, Any] = {}
    moto = Timer()
    cache = index.IndexCache(b.roots["c"])
    with index.using(cache), mock.patch.object(blobs, "get_bytes", moto.wrap(blobs.get_bytes)), \
            mock.patch.object(blobs, "list_objects", moto.wrap(blobs.list_objects)), \
            mock.patch.object(store, "get_bank_rows", moto.wrap(store.get_bank_rows)):
        ms, _ = timed(b.recall, b.qs["selective"][3])
    cold["snapshot"] = {"ms": round(ms, 1), "moto_ms": round(moto.ms, 1), "cairn_ms": round(ms - moto.ms, 1),
                        "snapshot_bytes": len(blobs.get_bytes(key) or b""), "snapshot_write_ms": round(write_ms, 1),
                        "path": dict(cache.counters)}
    inc = entry.inc
    cache.drop()
    blobs.delete_prefix(index.snapshot_prefix(ORG, b.bank))
    started = time.perf_counter()
    with b.counter.counting() as calls:
        records = list(store.iter_records_any_order(inc))
    rebuild: dict[str, Any] = {"read_ms": round((time.perf_counter() - started) * 1000, 1),
                               "read_calls": {k: v for k, v in calls.items() if k.startswith("dynamodb:")}}

    def already_read(_inc: str, **_kw: Any) -> Any:
        yield from records

    head = store.get_bank_head(ORG, b.bank)
    if head is None:
        raise RuntimeError(f"bank {b.bank} is gone")
    path = os.path.join(b.roots["d"], "cairn-share")
    os.makedirs(path)
    target = index.BankIndex(ORG, b.bank, head.incarnation, path,
                             whoosh_index.create_in(path, schema(), indexname=index.INDEX_NAME), clock=head.clock)
    with mock.patch.object(store, "iter_records_any_order", already_read):
        started = time.perf_counter()
        documents = index.IndexCache(b.roots["d"]).rebuild_into(target, head.clock)
        rebuild["cairn_ms"] = round((time.perf_counter() - started) * 1000, 1)
    target.close_reader()
    shutil.rmtree(path, ignore_errors=True)
    rebuild["documents"] = documents
    if b.n > rebuild_max:
        rebuild["whole"] = {"skipped": f"over --rebuild-max {rebuild_max}"}
    else:
        cache = index.IndexCache(b.roots["d"])
        with index.using(cache):
            ms, _ = timed(b.recall, b.qs["selective"][3])
            rebuild["whole"] = {"ms": round(ms, 1), "path": dict(cache.counters)}
        cache.drop()
    cold["rebuild"] = rebuild
    return cold


def run(sizes: list[int], counter: CallCounter, *, queries: int = 200,
        rebuild_max: int = 10000) -> tuple[dict, list[str]]:
    """Run every size in one fresh moto backend each: ``(json, markdown lines)``."""
    fast_moto_transactions()
    out: dict[str, Any] = {"sizes": {}, "notes": []}
    for n in sizes:
        started = time.perf_counter()
        with backend():
            try:
                out["sizes"][str(n)] = one_size(n, counter, queries, rebuild_max)
            except Exception as exc:  # noqa: BLE001 - report what failed and go on
                out["sizes"][str(n)] = {"memories": n, "error": f"{type(exc).__name__}: {exc}"}
        out["sizes"][str(n)]["wall_s"] = round(time.perf_counter() - started, 1)
        print(f"speed: {n} memories done in {out['sizes'][str(n)]['wall_s']} s", flush=True)
    out["targets"] = [{"target": t, "figures": f, "met": m} for t, f, m in targets(out)]
    return out, markdown(out)


def targets(out: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """The issue's speed targets over the sizes that ran: ``(target, figures, met)``."""
    sz = {int(n): r for n, r in out["sizes"].items() if "error" not in r}
    rows: list[tuple[str, str, bool | None]] = []
    if 10000 in sz:
        r = sz[10000]
        c, b = r["warm_recall_ranking"]["selective"]["p50_ms"], r["bm25s"]["selective"]["p50_ms"]
        rows.append(("warm recall at 10k within 3x of bm25s, selective (ranking, p50)",
                     f"{c} ms vs {b} ms = {c / b:.2f}x", c <= 3 * b))
    rows += _filter_targets(sz)
    for n in sorted(sz):
        if n >= 100000:
            c, b = sz[n]["warm_recall_ranking"]["common"]["p50_ms"], sz[n]["bm25s"]["common"]["p50_ms"]
            rows.append((f"common-word ranking at {n:,} at most {COMMON_TARGET_MS:g} ms p50 (ratio to bm25s)",
                         f"{c} ms vs bm25s {b} ms = {c / b:.1f}x", c <= COMMON_TARGET_MS))
    big = max(sz) if sz else None
    if 1000 in sz and big and big > 1000:
        w1, wb = sz[1000]["write_index_ms_median"], sz[big]["write_index_ms_median"]
        rows.append((f"index cost of one write at {big:,} within 2x of 1k", f"{wb} ms vs {w1} ms = {wb / w1:.2f}x",
                     wb <= 2 * w1 if big >= 100000 else None))
        for k in ("1", "100"):
            a, z = sz[1000]["catch_up"][k], sz[big]["catch_up"][k]
            rows.append((f"catch-up after {k} writes: Cairn's share at {big:,} vs 1k; items read",
                         f"{z['cairn_ms']} ms vs {a['cairn_ms']} ms; {z['items_read']} vs {a['items_read']}",
                         z["items_read"] == a["items_read"] and z["cairn_ms"] <= 2 * max(a["cairn_ms"], 1.0)))
    for n in sorted(sz):
        if n >= 100000:
            per = sz[n]["index_bytes_per_memory"]
            rows.append((f"index bytes per memory at {n:,} at most half of before ({BYTES_PER_MEMORY_BEFORE} at 100k; "
                         "a quarter is the goal)", f"{per} = {BYTES_PER_MEMORY_BEFORE / per:.1f}x smaller",
                         per <= BYTES_PER_MEMORY_BEFORE / 2))
            c = sz[n]["cold_start"]["snapshot"]
            rows.append((f"cold start from a snapshot at {n:,} under {COLD_TARGET_MS:g} ms",
                         f"{c['ms']} ms (moto {c['moto_ms']}, Cairn {c['cairn_ms']})", c["ms"] < COLD_TARGET_MS))
            rb = sz[n]["cold_start"]["rebuild"]
            rows.append((f"rebuild at {n:,}: Cairn's share (reported)", f"{rb['cairn_ms']} ms; records read "
                         f"{rb['read_ms']} ms over {rb['read_calls']}", None))
    for n, r in sz.items():
        calls = r["calls_per_warm_recall"]
        rows.append((f"one DynamoDB read and no S3 call per warm recall ({n:,})", str(calls),
                     sum(calls.values()) == 1 and not any(k.startswith("s3:") for k in calls)))
    return rows


def _filter_targets(sz: dict[int, Any]) -> list[tuple[str, str, bool | None]]:
    """A filtered recall within ``FILTERED_TARGET`` of the unfiltered one at 10k (ranking, p50, the
    two timed query by query in turn: ``_filtered``), per filter and query kind."""
    rows: list[tuple[str, str, bool | None]] = []
    r = sz.get(10000)
    if r is None or "warm_recall_filtered" not in r:
        return rows
    base = r["warm_recall_filtered"]["unfiltered"]
    for name, kinds in r["warm_recall_filtered"].items():
        if name == "unfiltered":
            continue
        for kind, lat in kinds.items():
            f, u = lat["p50_ms"], base[kind]["p50_ms"]
            rows.append((f"filtered recall at 10k within {FILTERED_TARGET:g}x of unfiltered: {name}, {kind} "
                         "(ranking, p50)", f"{f} ms vs {u} ms = {f / u:.2f}x", f <= FILTERED_TARGET * u))
    return rows


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Speed", "",
          "Warm recall, whole: the one consistent DynamoDB read (in-process moto) plus ranking. Ranking: "
          "the query analysed beforehand and the bank row read once, the same work bm25s does on its "
          "pre-tokenised corpus and queries. All latencies in ms, p50 / p95.", "",
          "| memories | load (s) | whole, selective | ranking, selective | bm25s, selective | whole, common | "
          "ranking, common | bm25s, common | index cost of one write, median (ms) | calls per warm recall |",
          "|---|---|---|---|---|---|---|---|---|---|"]

    def lat(x: dict) -> str:
        return f"{x['p50_ms']} / {x['p95_ms']}"

    for n, r in out["sizes"].items():
        if "error" in r:
            md.append(f"| {n} | failed: {r['error']} |||||||||")
            continue
        w, k, b = r["warm_recall"], r["warm_recall_ranking"], r["bm25s"]
        md.append(f"| {n} | {r['load_s']} | {lat(w['selective'])} | {lat(k['selective'])} | {lat(b['selective'])} | "
                  f"{lat(w['common'])} | {lat(k['common'])} | {lat(b['common'])} | {r['write_index_ms_median']} | "
                  f"{r['calls_per_warm_recall']} |")
    md += ["", "The same queries elsewhere, p50 / p95 ms: bm25s's own `retrieve` (its argpartition runs over "
               "every document, zeros included; the bm25s columns above are its fair path: `get_scores` on "
               "the same tokens, then a top-k over the non-zero scores only), tantivy where installed; and "
               "the index bytes on disk beside bm25s's (`BM25.save`, no corpus) and tantivy's.", "",
           "| memories | bm25s retrieve, selective | bm25s retrieve, common | tantivy, selective | tantivy, common | "
           "Cairn index bytes | bm25s bytes | tantivy bytes |", "|---|---|---|---|---|---|---|---|"]
    for n, r in out["sizes"].items():
        if "error" in r:
            continue
        rt, tv = r["bm25s"].get("retrieve", {}), r.get("tantivy") or {}
        md.append(f"| {n} | {lat(rt['selective']) if rt else '-'} | {lat(rt['common']) if rt else '-'} | "
                  f"{lat(tv['selective']) if tv else 'not installed'} | {lat(tv['common']) if tv else '-'} | "
                  f"{round(r['index_bytes_per_memory'] * r['memories']) if r.get('index_bytes_per_memory') else '-'} | "
                  f"{r['bm25s'].get('bytes', '-')} | {tv.get('bytes', '-')} |")
    md += ["", "Catch-up of a warm container after writes by another: total ms = the revisions Query on moto "
               "(which walks the whole table on every call; DynamoDB reads only the key range) + Cairn's share "
               "(the bank-row read and applying the revisions to the index). Items read: what the Query returned.", "",
           "| memories | writes missed | total (ms) | revisions Query on moto (ms) | Cairn's share (ms) | items read |",
           "|---|---|---|---|---|---|"]
    for n, r in out["sizes"].items():
        for k, c in r.get("catch_up", {}).items():
            md.append(f"| {n} | {k} | {c['ms']} | {c['revisions_query_ms']} | {c['cairn_ms']} | {c['items_read']} |")
    md += ["", "Index size and cold start of a third container. From the newest S3 snapshot: the whole first "
               "recall, moto's share (S3 list and download, the bank read) and Cairn's (decompress, extract, "
               "open, rank). A rebuild from DynamoDB: the bank's records read by parallel key-range queries on "
               "its partition (moto answers each 1 MB page in O(table): its share), Cairn's share (indexing "
               "the records already read), and the whole cold recall through a rebuild (skipped above "
               "`--rebuild-max`).", "",
           "| memories | index bytes per memory | snapshot (bytes) | cold start from snapshot (ms) | moto's share | "
           "Cairn's share | records read by the range queries (ms, moto) | rebuild, Cairn's share (ms) | "
           "cold recall through a rebuild (ms) |", "|---|---|---|---|---|---|---|---|---|"]
    for n, r in out["sizes"].items():
        if "error" not in r:
            c, rb = r["cold_start"]["snapshot"], r["cold_start"]["rebuild"]
            md.append(f"| {n} | {r['index_bytes_per_memory']} | {c['snapshot_bytes']:,} | {c['ms']} | {c['moto_ms']} | "
                      f"{c['cairn_ms']} | {rb['read_ms']} | {rb['cairn_ms']} | "
                      f"{rb['whole'].get('ms', rb['whole'].get('skipped'))} |")
    md += ["", "### Speed targets", "", "| target | figures | met |", "|---|---|---|"]
    for name, figures, met in targets(out):
        md.append(f"| {name} | {figures} | {'yes' if met else ('n/a' if met is None else 'no')} |")
    md.append("")
    return md
