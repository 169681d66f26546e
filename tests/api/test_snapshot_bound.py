"""No cold container replays more than about ``Settings.snapshot_every`` changes: the container
that catches a bank's index up past that many changes since the last snapshot (a reader, or a
writer, cached or not) leaves a new one, one container per claim, at most one per
``snapshot_min_interval_s``. Each interleaving is played step by step in one process, each
"container" an ``IndexCache`` of its own sharing only moto's DynamoDB and S3."""

from __future__ import annotations

import pytest

from tests.api.lanes import word

NOW = 1_900_000_000_000
EVERY = 32


@pytest.fixture
def every(aws, monkeypatch):
    """Snapshots every ``EVERY`` changes, no rate bound; ``set(n, interval_s)`` changes both."""
    def set_(n: int, interval_s: float = 0) -> None:
        monkeypatch.setenv("CAIRN_SNAPSHOT_EVERY", str(n))
        monkeypatch.setenv("CAIRN_SNAPSHOT_MIN_INTERVAL_S", str(interval_s))
    set_(EVERY)
    return set_


def _save(cache, bank: str, texts) -> list[str]:
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    with index.using(cache):
        return [service.save_memory("o", bank, SaveRequest(text=t), actor="t").memory.id for t in texts]


def _recall(cache, bank: str, query: str = "pears"):
    from chalicelib.search import index
    from chalicelib.search.recall import recall
    with index.using(cache):
        return [(h.memory.id, h.score) for h in recall("o", [bank], query, limit=100, now=NOW).hits]


def _snapshots(bank: str) -> list[str]:
    from chalicelib.storage import blobs
    return [o["Key"] for o in blobs.list_objects(f"o/indexes/{bank}/")]


def _cache(tmp_path, name):
    from chalicelib.search import index
    return index.IndexCache(str(tmp_path / name))


def test_writes_from_a_container_without_the_index_leave_snapshots_a_cold_reader_replays_few(every, tmp_path):
    """Writers whose container never recalled the bank: the cold reader that follows loads a
    snapshot and replays fewer than ``EVERY`` changes, and ranks as a container that rebuilt."""
    writer = _cache(tmp_path, "w")
    _save(writer, "b", [f"pears and more pears number {word(i)}" for i in range(150)])
    cold = _cache(tmp_path, "c")
    got = _recall(cold, "b")
    assert cold.counters["rebuilds"] == 0 and cold.counters["snapshot_loads"] == 1
    assert cold.counters["replayed"] < EVERY
    assert _snapshots("b")  # the writer left them
    every(10_000)  # nobody leaves another: the reference rebuilds from the records
    fresh = _cache(tmp_path, "r")
    from chalicelib.search import index
    with index.using(fresh):
        from chalicelib.search.recall import rebuild
        rebuild("o", "b", snapshot=False)
    assert _recall(fresh, "b") == got and len(got) >= 20


def test_a_catching_up_reader_leaves_a_snapshot_the_next_cold_reader_loads(every, tmp_path):
    every(10_000)  # the writes leave none
    reader = _cache(tmp_path, "a")
    _save(reader, "b", ["pears to start"])
    _recall(reader, "b")
    _save(_cache(tmp_path, "w"), "b", [f"pears {word(i)}" for i in range(40)])
    every(EVERY)
    want = _recall(reader, "b")  # catches up 40 changes: leaves a snapshot at 41
    assert reader.counters["snapshots_left"] == 1 and _snapshots("b") == ["o/indexes/b/41.v2.tar.zst"]
    cold = _cache(tmp_path, "c")
    assert _recall(cold, "b") == want
    assert cold.counters["snapshot_loads"] == 1 and cold.counters["replayed"] == 0
    assert cold.counters["snapshots_left"] == 0  # nothing new to leave


def test_two_containers_due_at_once_write_one_snapshot_and_the_rate_bound_holds(every, tmp_path):
    from chalicelib.core import store
    every(10_000)
    _save(_cache(tmp_path, "w"), "b", [f"pears {word(i)}" for i in range(40)])
    a, b = _cache(tmp_path, "a"), _cache(tmp_path, "b")
    _recall(a, "b")
    _recall(b, "b")
    every(EVERY, interval_s=3600)
    head = store.get_bank_head("o", "b")  # both read the row before either claimed
    assert a.leave_due_snapshot(a.get("o", "b"), head.row) == "o/indexes/b/40.v2.tar.zst"
    assert b.leave_due_snapshot(b.get("o", "b"), head.row) is None  # lost the claim
    assert _snapshots("b") == ["o/indexes/b/40.v2.tar.zst"]
    _save(_cache(tmp_path, "w2"), "b", [f"more pears {word(i)}" for i in range(40)])
    _recall(b, "b")  # 80 changes, 40 past the claim, but within the interval: no second one
    _recall(_cache(tmp_path, "c"), "b")
    assert _snapshots("b") == ["o/indexes/b/40.v2.tar.zst"]
    row = store.get_bank_row("o", "b")
    assert (row.snapshot_claim, row.snapshot_seq) == (40, 40)


def test_a_write_committed_between_the_catch_up_and_the_upload_reaches_the_next_cold_reader(every, tmp_path):
    from chalicelib.core import store
    every(10_000)
    _save(_cache(tmp_path, "w"), "b", [f"pears {word(i)}" for i in range(40)])
    a = _cache(tmp_path, "a")
    _recall(a, "b")
    head = store.get_bank_head("o", "b")
    late = _save(_cache(tmp_path, "w2"), "b", ["the late pears"])[0]
    every(EVERY)
    assert a.leave_due_snapshot(a.get("o", "b"), head.row) == "o/indexes/b/40.v2.tar.zst"  # holds 40 changes
    cold = _cache(tmp_path, "c")
    assert late in {i for i, _s in _recall(cold, "b")}
    assert cold.counters["snapshot_loads"] == 1 and cold.counters["replayed"] == 1


def test_a_purge_between_the_catch_up_and_the_upload_leaves_no_snapshot_holding_its_text(every, tmp_path):
    from chalicelib.banks import service
    from chalicelib.core import store
    from chalicelib.search import index
    every(10_000)
    w = _cache(tmp_path, "w")
    secret = _save(w, "b", ["the vault code is pears-7781"])[0]
    _save(w, "b", [f"pears {word(i)}" for i in range(40)])
    a = _cache(tmp_path, "a")
    _recall(a, "b")  # holds the secret
    head = store.get_bank_head("o", "b")
    with index.using(w):
        service.purge_memory("o", "b", secret, actor="t")  # deletes the snapshots there are (none)
    every(EVERY)
    assert a.leave_due_snapshot(a.get("o", "b"), head.row) is None  # written, then found behind a purge
    assert _snapshots("b") == []
    assert secret not in {i for i, _s in _recall(a, "b", "vault code")}


def test_a_failed_claim_or_upload_never_fails_the_recall(every, tmp_path, monkeypatch):
    from chalicelib.storage import blobs
    every(10_000)
    _save(_cache(tmp_path, "w"), "b", [f"pears {word(i)}" for i in range(40)])
    every(EVERY)

    def refuse(*_a, **_kw):
        raise OSError("S3 is down")

    monkeypatch.setattr(blobs, "put_bytes", refuse)
    a = _cache(tmp_path, "a")
    assert len(_recall(a, "b")) == 40 and a.counters["snapshots_left"] == 0
