"""Cold start and rebuild of one bank at one size, on an index built directly (``bench.ranking``:
no import path), against in-process moto: quick to rerun against another checkout's
``chalicelib`` (run it from that checkout), so before and after share the machine's conditions.

* index bytes per memory: the bank index's directory over its memories;
* snapshot: its bytes and the upload (``IndexCache.write_snapshot``);
* cold start from the snapshot, the median of ``--repeat`` fresh caches: list + download (moto's
  S3 share, timed apart), decompress + extract + open (``IndexCache.fresh``), and the first query
  (``recall._rank``: the segments' columns read, the query's postings decoded);
* rebuild from DynamoDB: the bank's records written as memory items (one batch write), then
  read back by ``core.store.iter_records_any_order`` (parallel key-range queries on the
  partition; moto answers each page in time proportional to the table, so this is moto's
  share), Cairn's share (``IndexCache.rebuild_into`` over the records already read), and the
  whole rebuild; the DynamoDB calls of the rebuild (Query only, never a Scan).

``python -m bench.coldstart --size 100000 [--index-dir DIR] [--repeat 3] [--no-rebuild] [--vectors]``
prints one JSON object. ``--vectors``: every memory with a stored vector (``bench.ranking``'s random
unit vectors) and the first query ranked with its real vector (computed beforehand), so the cold
start includes reading the vector column.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from types import SimpleNamespace
from typing import Any
from unittest import mock

from .harness import CallCounter, Timer, backend, fake_aws_env
from .ranking import build
from .speed import corpus, queries

ORG, BANK, INC = "bench", "rank", "inc"  # as bench.ranking.build names its index


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)




def cold_start(entry: Any, head: Any, query: str, now: int, repeat: int, vector: Any = None) -> dict[str, Any]:
    """Write the entry's snapshot, then load it into ``repeat`` fresh caches and rank one query
    (with the query's unit ``vector`` when given): the median of each step (ms)."""
    from chalicelib.search import index
    from chalicelib.search import recall as recall_mod
    from chalicelib.storage import blobs
    from chalicelib.tuning import MemoryTuning

    cache = index.IndexCache(tempfile.mkdtemp(prefix="cairn-bench-snap-"))
    started = time.perf_counter()
    key = cache.write_snapshot(entry)
    out: dict[str, Any] = {"snapshot_write_ms": _ms(started), "snapshot_key": key,
                           "snapshot_bytes": len(blobs.get_bytes(key) or b"")}
    cache.drop()
    tuning = MemoryTuning()
    analysed = recall_mod.analyse(query)
    runs = []
    for _ in range(repeat):
        s3 = Timer()
        cold = index.IndexCache(tempfile.mkdtemp(prefix="cairn-bench-cold-"))
        with mock.patch.object(blobs, "get_bytes", s3.wrap(blobs.get_bytes)), \
                mock.patch.object(blobs, "list_objects", s3.wrap(blobs.list_objects)):
            started = time.perf_counter()
            with cold.lock(ORG, BANK):
                loaded = cold.fresh(ORG, BANK, head)
                opened = _ms(started)
                leaves = [(leaf, loaded.stats_cache, BANK) for leaf, _off in loaded.reader().leaf_readers()]
                q = time.perf_counter()
                hits, _n = recall_mod._rank(leaves, analysed, limit=tuning.recall_limit, tag=None,
                                            include_superseded=False, tuning=tuning, filter=None, now=now,
                                            query_vector=vector)
                first_query = _ms(q)
            total = _ms(started)
        if cold.counters["snapshot_loads"] != 1:
            raise RuntimeError(f"cold start did not load the snapshot: {cold.counters}")
        runs.append({"total_ms": total, "s3_ms": round(s3.ms, 1), "open_ms": round(opened - s3.ms, 1),
                     "first_query_ms": first_query, "cairn_ms": round(total - s3.ms, 1), "hits": len(hits)})
        cold.drop()
    out.update({k: statistics.median(r[k] for r in runs) for k in runs[0]})
    out["runs"] = runs
    return out


def rebuild(entry: Any, texts: list[str], ents: list[str], t0: int, counter: CallCounter) -> dict[str, Any]:
    """Write the bank's records as memory items, then time reading them back (moto's share),
    Cairn's share of a rebuild (the records already read) and a whole rebuild."""
    from chalicelib.core import store
    from chalicelib.core.records import Memory
    from chalicelib.core.store import Clock
    from chalicelib.fingerprint import fingerprint
    from chalicelib.search import index
    from chalicelib.storage.tables import MemoryModel, bind

    bind()
    started = time.perf_counter()
    with MemoryModel.batch_write() as batch:
        for k, (t, e) in enumerate(zip(texts, ents, strict=True)):
            rec = Memory(id=fingerprint(t), text=t, entities=[e], created_at=t0 + k, updated_at=t0 + k)
            batch.save(MemoryModel(bank_key=INC, sk=rec.id, ord=rec.order_key(), record=rec.model_dump(mode="json"),
                                   live=True, revision=0))
    out: dict[str, Any] = {"write_items_s": round(time.perf_counter() - started, 1)}
    started = time.perf_counter()
    with counter.counting() as calls:
        records = list(store.iter_records_any_order(INC))
    out["read_ms"] = _ms(started)
    out["read_calls"] = {k: v for k, v in calls.items() if k.startswith("dynamodb:")}
    ids = {r.id for r in records if isinstance(r, Memory)}
    if len(records) != len(texts) or len(ids) != len(texts):
        raise RuntimeError(f"read {len(records)} records of {len(texts)}")
    cache = index.IndexCache(tempfile.mkdtemp(prefix="cairn-bench-rebuild-"))
    clock = Clock((len(texts),))
    def already_read(inc: str, **kw: Any) -> Any:
        yield from records

    with mock.patch.object(store, "iter_records_any_order", already_read):
        started = time.perf_counter()
        cache.rebuild_into(entry_copy(cache, entry), clock)
        out["cairn_ms"] = _ms(started)
    started = time.perf_counter()
    with counter.counting() as calls:
        cache.rebuild_into(entry_copy(cache, entry), clock)
    out["whole_ms"] = _ms(started)
    out["whole_calls"] = {k: v for k, v in calls.items() if k.startswith("dynamodb:")}
    cache.drop()
    return out


def entry_copy(cache: Any, entry: Any) -> Any:
    """An empty bank index of the entry's bank in ``cache``'s root (what a cold rebuild fills)."""
    import os

    from whoosh import index as whoosh_index

    from chalicelib.search.index import INDEX_NAME, BankIndex
    from chalicelib.search.schema import schema

    path = os.path.join(cache.root, f"rebuild-{time.perf_counter_ns()}")
    os.makedirs(path)
    return BankIndex(entry.org_id, entry.bank, entry.inc, path,
                     whoosh_index.create_in(path, schema(), indexname=INDEX_NAME), clock=entry.clock)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m bench.coldstart", description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100000)
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-rebuild", action="store_true")
    ap.add_argument("--vectors", action="store_true", help="memories with vectors; the first query with its own")
    args = ap.parse_args(argv)
    fake_aws_env()
    counter = CallCounter()
    counter.install()
    texts, ents, vocab = corpus(args.size)
    t0 = 1_800_000_000_000 - args.size
    path = args.index_dir or f"/tmp/cairn-bench-ranking-{args.size}"
    started = time.perf_counter()
    entry = build(path, texts, ents, t0, args.vectors)
    out: dict[str, Any] = {"size": args.size, "build_s": round(time.perf_counter() - started, 1)}
    size = entry.measure()
    out["index_bytes"] = size
    out["index_bytes_per_memory"] = round(size / args.size, 1)
    head = SimpleNamespace(incarnation=INC, clock=entry.clock)
    query = queries(vocab, 5)["selective"][3]
    vector = None
    if args.vectors:
        from chalicelib import semantic
        vector = semantic.embed_query(query)
    with backend():
        out["cold_start"] = cold_start(entry, head, query, t0 + args.size, args.repeat, vector)
        if not args.no_rebuild:
            out["rebuild"] = rebuild(entry, texts, ents, t0, counter)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
