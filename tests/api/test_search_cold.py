"""Cold rebuilds: a bank's records are read from its own partition only, in key ranges queried
in parallel pages, giving the same documents as one sequential query; a cold container loads
the newest usable snapshot (structured namespaces included), and a large cold rebuild leaves
one behind for the next."""

from __future__ import annotations

import itertools
import json

import pytest

from tests.api.lanes import word

NOW = 1_900_000_000_000

# keys that sit on a range boundary or just past a pointer prefix, stored beside real memories
EDGE_KEYS = ["4", "c", "ent_4", "ent_c", "fp", "fp4", "fpc", "~fp0", "~name0zz", "\u00e9t\u00e9"]


def _bank_with_edges(org: str, bank: str, n: int) -> str:
    """``bank`` with ``n`` saved memories (fp ids, their fingerprint pointers), a structured-style
    name pointer, the ``EDGE_KEYS`` as records, and a damaged record; returns the incarnation."""
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.core import store
    from chalicelib.storage.tables import MemoryModel
    for i in range(n):
        service.save_memory(org, bank, SaveRequest(text=f"cold rebuild memory {i} about walnuts"), actor="t")
    row = store.get_bank_row(org, bank)
    inc = row.incarnation
    template = next(r for r in store.iter_records(inc) if not hasattr(r, "reason"))
    for sk in EDGE_KEYS:
        rec = template.model_copy(update={"id": sk, "text": f"edge key {sk} walnuts"}).model_dump(mode="json")
        MemoryModel(bank_key=inc, sk=sk, ord=f"edge-{sk}", record=rec, live=True, revision=1).save()
    MemoryModel(bank_key=inc, sk="fpdamaged", ord="edge-damaged", record={"id": "fpdamaged", "text": 5}).save()
    MemoryModel(bank_key=inc, sk="~name/some_name", memory_id=template.id).save()
    return inc


def _key(rec) -> tuple[str, str]:
    """A record or a ``Damaged`` as ``(kind, id)``."""
    return ("damaged", rec.key) if hasattr(rec, "reason") else ("memory", rec.id)


def test_key_ranges_are_disjoint_ordered_and_leave_out_only_pointers():
    from chalicelib.core import store
    for parts in (1, 2, 4, 16):
        ranges = store.record_key_ranges(parts)
        assert ranges[0].low is None and ranges[-1].high is None
        for a, b in itertools.pairwise(ranges):
            assert a.low is None or a.low < a.high
            assert a.high <= b.low  # in key order, disjoint
        probes = ["", "0", "3zz", "4", "fp", "fp4", "fpffffffffffffffff", "ent_", "ent_c0", "z", "~", "~fo",
                  "~fp", "~fp0", "~fp/x", "~name", "~name/x", "~name0", "\u00e9", "\U0010ffff"]
        for sk in probes:
            holders = [r for r in ranges if r.holds(sk)]
            pointer = sk.startswith((store.POINTER_PREFIX, store.NAME_POINTER_PREFIX))
            assert len(holders) == (0 if pointer else 1), (parts, sk, holders)


def test_parallel_read_matches_one_sequential_query(aws, monkeypatch):
    from chalicelib.core import store
    from chalicelib.core.store import parallel as reads
    monkeypatch.setattr(reads, "_CHUNK", 3)  # many hand-overs per range
    monkeypatch.setattr(reads, "_AHEAD", 1)  # readers wait on the consumer
    inc = _bank_with_edges("o", "edges", 40)
    sequential = [_key(r) for r in store.iter_records_any_order(inc, threads=1, ranges=[store.KeyRange(None, None)])]
    parallel = [_key(r) for r in store.iter_records_any_order(inc)]
    assert parallel == sequential
    assert len(parallel) == 40 + len(EDGE_KEYS) + 1
    ids = [i for _k, i in parallel]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert ("damaged", "fpdamaged") in parallel
    assert not any(i.startswith(("~fp/", "~name/")) for i in ids)
    assert [_key(r) for r in store.iter_records_any_order(inc, threads=3, ranges=store.record_key_ranges(16))] == \
        sequential


def test_a_failed_range_query_raises_and_stops_the_readers(aws, monkeypatch):
    from chalicelib.core import store
    from chalicelib.storage.tables import MemoryModel
    inc = _bank_with_edges("o", "boom", 3)
    real = MemoryModel.query.__func__

    def query(cls, hash_key, range_key_condition=None, **kw):
        if range_key_condition is not None and "fp8" in str(range_key_condition):
            raise RuntimeError("the fp8 range failed")
        return real(cls, hash_key, range_key_condition=range_key_condition, **kw)

    monkeypatch.setattr(MemoryModel, "query", classmethod(query))
    with pytest.raises(RuntimeError, match="fp8 range failed"):
        list(store.iter_records_any_order(inc))


def _documents(entry) -> dict:
    """The records of the entry's live documents, by id."""
    from chalicelib.search.schema import read_record
    out = {}
    with entry.ix.reader() as reader:
        for leaf, _off in reader.leaf_readers():
            for d in range(leaf.doc_count_all()):
                if not leaf.is_deleted(d):
                    rec = read_record(leaf, d)
                    out[rec.id] = rec
    return out


def test_rebuild_gives_the_documents_of_a_sequential_read(aws, tmp_path, monkeypatch):
    from chalicelib.core import store
    from chalicelib.search import index
    inc = _bank_with_edges("o", "same", 30)
    row = store.get_bank_head("o", "same")
    cache = index.IndexCache(str(tmp_path / "p"))
    with cache.lock("o", "same"):
        parallel = _documents(cache.fresh("o", "same", row))
    real = store.iter_records_any_order
    monkeypatch.setattr(store, "iter_records_any_order",
                        lambda i: real(i, threads=1, ranges=[store.KeyRange(None, None)]))
    seq_cache = index.IndexCache(str(tmp_path / "s"))
    with seq_cache.lock("o", "same"):
        sequential = _documents(seq_cache.fresh("o", "same", row))
    assert parallel == sequential
    assert cache.counters["rebuilds"] == 1 and seq_cache.counters["rebuilds"] == 1
    # pointers and the damaged record are not documents; every good record is
    assert "fpdamaged" not in parallel and not any(k.startswith("~fp/") or k.startswith("~name/") for k in parallel)
    good = [r.id for r in real(inc) if not hasattr(r, "reason")]
    assert sorted(parallel) == sorted(good) and len(good) == 30 + len(EDGE_KEYS)


class DynamoCalls:
    """Every DynamoDB call the clients make: ``(operation, request body)``."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []

    def __call__(self, model=None, params=None, **kw):
        try:
            body = json.loads((params or {}).get("body") or b"{}")
        except (ValueError, TypeError):
            body = {}
        self.calls.append((model.name, body if isinstance(body, dict) else {}))


def test_structured_rebuild_reads_only_its_own_partition(aws, tmp_path):
    from chalicelib.core import store
    from chalicelib.search import index
    from chalicelib.storage.tables import ALL_MODELS
    from chalicelib.structured import memories
    from chalicelib.structured.scopes import Target
    mine, other = Target("global", ""), Target("user", "u1")
    for i in range(12):
        memories.save("o", mine, f"note_{i}", f"mine number {i} about pears", "d", None, actor="t", surface="rest")
        memories.save("o", other, f"note_{i}", f"other number {i} about pears", "d", None, actor="t", surface="rest")
    row = store.get_bank_head("o", mine.bank)
    calls = DynamoCalls()
    clients = [m._get_connection().connection.client for m in ALL_MODELS]
    for cl in clients:
        cl.meta.events.register("before-call", calls)
    try:
        cache = index.IndexCache(str(tmp_path / "c"))
        with cache.lock("o", mine.bank):
            entry = cache.fresh("o", mine.bank, row)
            docs = _documents(entry)
    finally:
        for cl in clients:
            cl.meta.events.unregister("before-call", calls)
    assert cache.counters["rebuilds"] == 1
    texts = sorted(d.text for d in docs.values())
    assert texts == sorted(f"mine number {i} about pears" for i in range(12))
    ops = {op for op, _b in calls.calls}
    assert "Scan" not in ops and "BatchGetItem" not in ops
    queries = [b for op, b in calls.calls if op == "Query"]
    assert len(queries) == len(store.record_key_ranges())
    for b in queries:
        assert "IndexName" not in b and b["ConsistentRead"] is True
        partition = [v for v in b["ExpressionAttributeValues"].values() if v == {"S": row.incarnation}]
        assert partition, b  # the key condition names this namespace's incarnation
        assert "bank_key" in json.dumps(b["ExpressionAttributeNames"]) and "sk" in json.dumps(
            b["ExpressionAttributeNames"])


def test_cold_structured_context_loads_the_newest_usable_snapshot(aws, tmp_path):
    from chalicelib.core import store
    from chalicelib.search import index
    from chalicelib.search.recall import recall, snapshot_banks
    from chalicelib.storage import blobs
    from chalicelib.structured import memories
    from chalicelib.structured.scopes import Target
    t = Target("global", "")
    a = index.IndexCache(str(tmp_path / "a"))
    with index.using(a):
        for i in range(4):
            memories.save("o", t, f"fig_{i}", f"figs number {i}", "d", None, actor="t", surface="rest")
        first = snapshot_banks(1, org_id="o")
        for i in range(4, 7):
            memories.save("o", t, f"fig_{i}", f"figs number {i}", "d", None, actor="t", surface="rest")
        newest = snapshot_banks(1, org_id="o")
        for i in range(7, 9):
            memories.save("o", t, f"fig_{i}", f"figs number {i}", "d", None, actor="t", surface="rest")
        want = recall("o", [t.bank], "figs number", limit=20, now=NOW)
    assert first == [index.snapshot_prefix("o", t.bank) + "4.v2.tar.zst"]
    assert newest == [index.snapshot_prefix("o", t.bank) + "7.v2.tar.zst"]
    b = index.IndexCache(str(tmp_path / "b"))
    with index.using(b):
        got = recall("o", [t.bank], "figs number", limit=20, now=NOW)
    assert b.counters["snapshot_loads"] == 1 and b.counters["rebuilds"] == 0
    assert b.get("o", t.bank).seq == store.get_bank_head("o", t.bank).clock.total == 9
    assert [(h.memory.id, h.score) for h in got.hits] == [(h.memory.id, h.score) for h in want.hits]
    # the newest snapshot damaged: the next newest is loaded and caught up, never a rebuild
    blobs.put_bytes(newest[0], b"not a tarball", "application/zstd")
    c = index.IndexCache(str(tmp_path / "c"))
    with index.using(c):
        got = recall("o", [t.bank], "figs number", limit=20, now=NOW)
    assert c.counters["snapshot_loads"] == 1 and c.counters["rebuilds"] == 0
    assert [(h.memory.id, h.score) for h in got.hits] == [(h.memory.id, h.score) for h in want.hits]


def test_a_large_cold_rebuild_leaves_a_snapshot_for_the_next_container(aws, tmp_path, monkeypatch):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import recall
    from chalicelib.storage import blobs
    monkeypatch.setattr(index, "COLD_SNAPSHOT_MIN_DOCS", 5)
    with index.using(index.IndexCache(str(tmp_path / "w"))):
        for bank, n in (("few", 4), ("many", 6)):
            for i in range(n):
                service.save_memory("o", bank, SaveRequest(text=f"{bank} plums number {word(i)}"), actor="t")
    a = index.IndexCache(str(tmp_path / "a"))
    with index.using(a):
        want = recall("o", ["many"], "plums number", limit=20, now=NOW)
        recall("o", ["few"], "plums number", limit=20, now=NOW)
    assert a.counters["rebuilds"] == 2 and a.counters["snapshots_left"] == 1
    assert [o["Key"] for o in blobs.list_objects("o/indexes/")] == ["o/indexes/many/6.v2.tar.zst"]
    b = index.IndexCache(str(tmp_path / "b"))
    with index.using(b):
        got = recall("o", ["many"], "plums number", limit=20, now=NOW)
    assert b.counters["snapshot_loads"] == 1 and b.counters["rebuilds"] == 0 and b.counters["snapshots_left"] == 0
    assert [(h.memory.id, h.score) for h in got.hits] == [(h.memory.id, h.score) for h in want.hits]


def test_a_gzip_snapshot_written_before_zstd_still_loads_and_is_replaced(aws, tmp_path):
    """A snapshot of the current format written as ``.tar.gz`` (before snapshots were zstd) is
    loaded by a cold container; the next snapshot at that total is zstd and the gzip one goes."""
    import gzip

    import zstandard

    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import recall, snapshot_banks
    from chalicelib.status import org_status
    from chalicelib.storage import blobs
    a = index.IndexCache(str(tmp_path / "a"))
    with index.using(a):
        for i in range(5):
            service.save_memory("o", "b", SaveRequest(text=f"quinces number {word(i)}"), actor="t")
        [key] = snapshot_banks(1, org_id="o")
        want = recall("o", ["b"], "quinces number", limit=20, now=NOW)
    assert key == "o/indexes/b/5.v2.tar.zst"
    old = key.removesuffix(".zst") + ".gz"
    blobs.put_bytes(old, gzip.compress(zstandard.decompress(blobs.get_bytes(key))), "application/gzip")
    blobs.delete(key)
    assert index.newest_snapshot_seq("o", "b") == 5
    # status reads what the snapshot writer noted on the bank row, not the bucket
    assert [(s.key, s.seq) for b in org_status("o").banks if (s := b.snapshot)] == [(key, 5)]
    b = index.IndexCache(str(tmp_path / "b"))
    with index.using(b):
        got = recall("o", ["b"], "quinces number", limit=20, now=NOW)
        assert b.counters["snapshot_loads"] == 1 and b.counters["rebuilds"] == 0
        assert [(h.memory.id, h.score) for h in got.hits] == [(h.memory.id, h.score) for h in want.hits]
        with b.lock("o", "b"):
            assert b.write_snapshot(b.get("o", "b")) == key
    assert [o["Key"] for o in blobs.list_objects("o/indexes/")] == [key]


def test_a_failed_snapshot_upload_never_fails_the_cold_recall(aws, tmp_path, monkeypatch):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import recall
    from chalicelib.storage import blobs
    monkeypatch.setattr(index, "COLD_SNAPSHOT_MIN_DOCS", 1)
    with index.using(index.IndexCache(str(tmp_path / "w"))):
        service.save_memory("o", "up", SaveRequest(text="apricots in the upload test"), actor="t")

    def refuse(*_a, **_k):
        raise ConnectionError("S3 is away")

    monkeypatch.setattr(blobs, "put_bytes", refuse)
    a = index.IndexCache(str(tmp_path / "a"))
    with index.using(a):
        got = recall("o", ["up"], "apricots", limit=5, now=NOW)
    assert [h.memory.text for h in got.hits] == ["apricots in the upload test"]
    assert a.counters["rebuilds"] == 1 and a.counters["snapshots_left"] == 0
    assert list(blobs.list_objects("o/indexes/")) == []


def test_the_cli_rebuild_builds_once_on_a_cold_cache_and_once_on_a_warm_one(aws, tmp_path):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import rebuild
    with index.using(index.IndexCache(str(tmp_path / "w"))):
        for i in range(3):
            service.save_memory("o", "rb", SaveRequest(text=f"quince number {i}"), actor="t")
    cold = index.IndexCache(str(tmp_path / "cold"))
    with index.using(cold):
        assert rebuild("o", "rb").documents == 3
        assert cold.counters["rebuilds"] == 1
        assert rebuild("o", "rb").documents == 3  # warm now: the repair still rebuilds from the records
        assert cold.counters["rebuilds"] == 2


def test_a_rebuild_indexes_each_memory_once_across_the_ranges_and_never_scans(aws, tmp_path):
    """Ids on every range boundary and just below it, read by the parallel range queries: each
    memory is one document of the rebuilt index, and the rebuild made Query calls only, one per
    range."""
    from chalicelib.core import store
    from chalicelib.search import index
    from chalicelib.search.whoosh_private import str_column
    from chalicelib.storage.tables import ALL_MODELS, MemoryModel
    inc = _bank_with_edges("o", "ranges", 20)
    template = next(r for r in store.iter_records(inc) if not hasattr(r, "reason"))
    edges = {b for r in store.record_key_ranges() for b in (r.low, r.high) if b and not b.startswith("~")}
    below = {e[:-1] + chr(ord(e[-1]) - 1) + "\uffff" for e in edges}  # the greatest keys under each edge
    for sk in sorted((edges | below) - set(EDGE_KEYS)):
        rec = template.model_copy(update={"id": sk, "text": f"boundary key {sk}"}).model_dump(mode="json")
        MemoryModel(bank_key=inc, sk=sk, ord=f"edge-{sk}", record=rec, live=True, revision=1).save()
    good = sorted(r.id for r in store.iter_records(inc) if not hasattr(r, "reason"))
    assert edges | below <= set(good)
    head = store.get_bank_head("o", "ranges")
    calls = DynamoCalls()
    clients = [m._get_connection().connection.client for m in ALL_MODELS]
    for cl in clients:
        cl.meta.events.register("before-call", calls)
    try:
        cache = index.IndexCache(str(tmp_path / "c"))
        with cache.lock("o", "ranges"):
            entry = cache.fresh("o", "ranges", head)
            leaves = [leaf for leaf, _off in entry.reader().leaf_readers()]
            ids = sorted(i for leaf in leaves for d, i in enumerate(str_column(leaf, "id")) if not leaf.is_deleted(d))
    finally:
        for cl in clients:
            cl.meta.events.unregister("before-call", calls)
    assert cache.counters["rebuilds"] == 1
    assert ids == good  # every memory once: none lost at an edge, none read by two ranges
    ops = [op for op, _b in calls.calls]
    assert "Scan" not in ops
    assert ops == ["Query"] * len(store.record_key_ranges())
