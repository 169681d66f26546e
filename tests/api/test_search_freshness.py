"""Index freshness across containers.

Two "containers" in one test process share only the moto backend: each has its own
``IndexCache`` in its own /tmp directory, and a request runs with its container's cache active
(so a write updates only the writer's own cache, as in Lambda). After every interleaved step both
return identical recall results, and a forgotten memory never comes back from either.
"""

from __future__ import annotations

import dataclasses
import json
import traceback

import pytest

from tests.api.lanes import lane_of_text, other_lanes, same_lane, word

NOW = 1_900_000_000_000
QUERIES = ["coffee", "deploy friday", "what do I like", "alice", "tea coffee deploy", "wifi password",
           "東京 天気", "os.path.join"]


class Container:
    """One app instance: the shared chalice test client with this container's index cache."""

    def __init__(self, api, cache, name):
        self.api, self.cache, self.name = api, cache, name

    def call(self, method, path, body=None, **kw):
        from chalicelib.search import index
        with index.using(self.cache):
            return self.api.call(method, path, body, **kw)

    def recall(self, query, **kw):
        status, body = self.call("POST", "/v1/banks/main/recall", {"query": query, "limit": 20, **kw})
        assert status == 200, body
        return body


@pytest.fixture
def pair(api, tmp_path, monkeypatch):
    from chalicelib.search import index
    from chalicelib.search import recall as recall_mod
    monkeypatch.setattr(recall_mod, "now_ms", lambda: NOW)  # the same clock for recency in both
    a = Container(api, index.IndexCache(str(tmp_path / "a")), "a")
    b = Container(api, index.IndexCache(str(tmp_path / "b")), "b")
    return a, b


def check(a, b, forgotten=(), include_superseded=False):
    """Both containers answer every query identically; no forgotten id appears."""
    for q in QUERIES:
        ra = a.recall(q, include_superseded=include_superseded)
        rb = b.recall(q, include_superseded=include_superseded)
        assert json.dumps(ra, sort_keys=True) == json.dumps(rb, sort_keys=True), q
        ids = {m["memory"]["id"] for m in ra["memories"]}
        if not include_superseded:
            assert not ids & set(forgotten), (q, ids & set(forgotten))


def ok(resp):
    status, body = resp
    assert status in (200, 201), body
    return body


def test_two_containers_interleaved_writes_agree(pair):
    a, b = pair
    gone: set[str] = set()
    m1 = ok(a.call("POST", "/v1/banks/main/memories", {"text": "I like strong coffee", "entities": ["user"]}))["memory"]
    check(a, b)
    m2 = ok(b.call("POST", "/v1/banks/main/memories", {"text": "Deploys happen on Friday", "tags": ["ops"]}))["memory"]
    check(a, b)
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "Deploys happen on Friday"}))  # corroborate
    check(a, b)
    m3 = ok(b.call("POST", "/v1/banks/main/memories",
                   {"text": "Alice drinks green tea", "entities": ["alice"]}))["memory"]
    ok(b.call("POST", "/v1/banks/main/memories", {"text": "東京都の天気は晴れです"}))
    check(a, b)
    ok(a.call("PATCH", f"/v1/banks/main/memories/{m3['id']}", {"text": "Alice drinks jasmine tea and coffee"}))
    check(a, b)
    ok(b.call("POST", f"/v1/banks/main/memories/{m1['id']}/pin", {"pinned": True}))
    check(a, b)
    m4 = ok(a.call("POST", "/v1/banks/main/memories", {"text": "The wifi password is hunter2"}))["memory"]
    m5 = ok(a.call("POST", "/v1/banks/main/memories", {"text": "The wifi password is swordfish"}))["memory"]
    ok(b.call("POST", f"/v1/banks/main/memories/{m4['id']}/supersede", {"superseded_by": m5["id"]}))
    gone.add(m4["id"])
    check(a, b, gone)
    check(a, b, include_superseded=True)
    ok(a.call("DELETE", f"/v1/banks/main/memories/{m2['id']}"))
    gone.add(m2["id"])
    check(a, b, gone)
    ok(b.call("POST", f"/v1/banks/main/memories/{m5['id']}/purge"))
    gone.add(m5["id"])
    check(a, b, gone)
    check(a, b, include_superseded=True)
    for c in (a, b):
        for q in ("swordfish", "wifi password"):
            body = c.recall(q, include_superseded=True)
            assert all("swordfish" not in m["memory"]["text"] for m in body["memories"])
    lines = "\n".join(json.dumps({"text": f"Imported note {i} about coffee beans from Kenya"}) for i in range(5))
    status, body = a.call("POST", "/v1/banks/main/import", raw=lines,
                          headers={"Content-Type": "application/x-ndjson"})
    assert status == 200 and body["imported"] == 5, body
    check(a, b, gone)
    ok(b.call("POST", "/v1/banks/main/memories", {"text": "I like strong coffee"}))  # corroborate via b
    check(a, b, gone)
    # a forgotten memory's text saved with revive comes back, in both
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "Deploys happen on Friday", "revive": True}))
    gone.discard(m2["id"])
    check(a, b, gone)
    assert m2["id"] in {m["memory"]["id"] for m in b.recall("deploy friday")["memories"]}
    # both containers did their own work: no container ever served from the other's files
    assert a.cache.root != b.cache.root


def test_trash_and_recreate_is_a_new_index(pair):
    a, b = pair
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "old bank coffee memory"}))
    check(a, b)
    ok(b.call("DELETE", "/v1/banks/main"))
    ok(b.call("POST", "/v1/banks/main/memories", {"text": "new bank tea memory"}))
    for c in (a, b):
        texts = [m["memory"]["text"] for m in c.recall("coffee tea")["memories"]]
        assert texts == ["new bank tea memory"]


def test_writer_gap_catches_up_from_dynamodb(aws, tmp_path):
    """A writer whose cache missed another container's commit in the lane it writes fills the
    gap before applying; a commit in another lane waits for the next read's catch-up."""
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import ensure_fresh
    first, second, third = same_lane("gap note", 3)
    elsewhere = next(t for t in other_lanes("gap elsewhere", 2) if lane_of_text(t) != lane_of_text(first))
    # a's saves skip the related look-up, which reads the bank whole as a recall would
    a, b = index.IndexCache(str(tmp_path / "a")), index.IndexCache(str(tmp_path / "b"))
    with index.using(a):
        service.save_memory("o", "g", SaveRequest(text=first), actor="t", detect=False)
        ensure_fresh("o", "g")
    with index.using(b):
        service.save_memory("o", "g", SaveRequest(text=second), actor="t")  # a misses position 2 of the lane
        service.save_memory("o", "g", SaveRequest(text=elsewhere), actor="t")  # and another lane's change
    with index.using(a):
        service.save_memory("o", "g", SaveRequest(text=third), actor="t", detect=False)  # a sees position 3
    entry = a.get("o", "g")
    lane = lane_of_text(first)
    assert entry.clock.positions[lane] == 3 and entry.seq == 3  # the other lane's change not yet
    with a.lock("o", "g"):
        assert entry.reader().doc_count() == 3
    with index.using(a):
        ensure_fresh("o", "g")
    assert entry.seq == 4
    with a.lock("o", "g"):
        assert entry.reader().doc_count() == 4


def test_snapshot_load_then_catch_up(aws, tmp_path):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import recall, snapshot_banks
    from chalicelib.storage import blobs
    a = index.IndexCache(str(tmp_path / "a"))
    with index.using(a):
        for i in range(6):
            service.save_memory("o", "s", SaveRequest(text=f"snapshot memory number {word(i)} about kiwis"), actor="t")
        assert snapshot_banks(10, org_id="o") == []  # moved too little
        keys = snapshot_banks(5, org_id="o")
        assert keys == ["o/indexes/s/6.v2.tar.zst"]
        assert snapshot_banks(5, org_id="o") == []  # nothing moved since
        for i in range(3):
            service.save_memory("o", "s", SaveRequest(text=f"later memory {word(i)} about kiwis"), actor="t")
        ra = recall("o", ["s"], "kiwis memory", limit=20, now=NOW)
    assert [o["Key"] for o in blobs.list_objects("o/indexes/")] == ["o/indexes/s/6.v2.tar.zst"]
    c = index.IndexCache(str(tmp_path / "c"))
    with index.using(c):
        rc = recall("o", ["s"], "kiwis memory", limit=20, now=NOW)
    assert c.counters["snapshot_loads"] == 1 and c.counters["rebuilds"] == 0 and c.counters["catchups"] == 1
    assert c.get("o", "s").seq == 9
    assert [(h.memory.id, h.score) for h in rc.hits] == [(h.memory.id, h.score) for h in ra.hits]
    assert len(rc.hits) == 9
    # a snapshot of a previous incarnation is never loaded
    with index.using(a):
        service.trash_bank("o", "s", actor="t")
        service.save_memory("o", "s", SaveRequest(text="fresh incarnation kiwis"), actor="t")
    d = index.IndexCache(str(tmp_path / "d"))
    with index.using(d):
        rd = recall("o", ["s"], "kiwis", limit=20, now=NOW)
    assert [h.memory.text for h in rd.hits] == ["fresh incarnation kiwis"]
    assert d.counters["snapshot_loads"] == 0 and d.counters["rebuilds"] == 1


def test_rebuild_writes_a_snapshot(aws, tmp_path):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import rebuild
    with index.using(index.IndexCache(str(tmp_path / "a"))):
        service.save_memory("o", "r", SaveRequest(text="rebuild me please"), actor="t")
        out = dataclasses.asdict(rebuild("o", "r"))
    assert out == {"bank": "r", "seq": 1, "documents": 1, "snapshot": "o/indexes/r/1.v2.tar.zst"}


def test_lru_eviction_past_budget(aws, tmp_path):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import ensure_fresh
    c = index.IndexCache(str(tmp_path / "c"), budget_mb=0.000001)  # every other bank must go
    with index.using(c):
        for bank in ("e1", "e2", "e3"):
            service.save_memory("o", bank, SaveRequest(text=f"memory of {bank}"), actor="t")
            ensure_fresh("o", bank)
    assert list(c.entries) == [("o", "e3")]
    assert c.counters["evictions"] == 2


class CallCounter:
    """Counts AWS calls with botocore ``before-call`` event hooks on the live clients."""

    def __init__(self):
        self.calls: list[tuple[str, str]] = []
        self.where: list[list[str]] = []  # per call, the chalicelib frames that made it (for a failure's message)

    def __call__(self, model=None, params=None, **kw):
        tables = set()
        try:  # DynamoDB requests are JSON: name the tables they touch
            body = json.loads((params or {}).get("body") or b"{}")
        except (ValueError, TypeError):  # S3 bodies are bytes or file objects
            body = {}
        if isinstance(body, dict):
            if "TableName" in body:
                tables.add(body["TableName"])
            tables.update((body.get("RequestItems") or {}).keys())
            tables.update(op["TableName"] for it in body.get("TransactItems") or () for op in it.values())
        self.calls.append((model.service_model.service_name + "." + model.name, ",".join(sorted(tables))))
        self.where.append([f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno} {f.name}" for f in traceback.extract_stack()
                           if "/chalicelib/" in f.filename])

    def install(self):
        from chalicelib.storage import blobs
        from chalicelib.storage.tables import ALL_MODELS, connection
        self.clients = [m._get_connection().connection.client for m in ALL_MODELS] + [blobs.s3()]
        self.clients.append(connection().client)  # the transactions' own
        for cl in self.clients:
            cl.meta.events.register("before-call", self)
        return self

    def uninstall(self):
        """The clients are cached for the whole process: leave no hook behind for later tests."""
        for cl in self.clients:
            cl.meta.events.unregister("before-call", self)


@pytest.fixture
def call_counter():
    counter = CallCounter()
    yield counter
    if hasattr(counter, "clients"):
        counter.uninstall()


def test_warm_recall_makes_one_dynamodb_call_and_no_s3_call(pair, call_counter):
    a, _b = pair
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "I like strong coffee", "entities": ["user"]}))
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "Alice drinks tea", "entities": ["alice"]}))
    a.recall("coffee")  # warm
    counter = call_counter.install()
    body = a.recall("what do I like alice coffee", tag=None)
    assert len(body["memories"]) == 2
    calls = [c for c in counter.calls if "tokens" not in c[1]]
    # the consistent read of the bank's rows, then the one usage update (counters and rate-limit
    # bucket) after the answer; recall-speed work may add one BatchGetItem of the returned hits
    assert calls == [("dynamodb.BatchGetItem", "cairn-test-banks"), ("dynamodb.UpdateItem", "cairn-test-usage")], \
        counter.calls
    assert not [c for c in counter.calls if c[0].startswith("s3.")]
    # behind by one write from another container: its moved version costs the read of the
    # lane rows, then one key query of the lane behind; still no S3
    ok(_b.call("POST", "/v1/banks/main/memories", {"text": "Bob likes cocoa"}))
    counter.calls.clear()
    a.recall("cocoa")
    calls = [c[0] for c in counter.calls if "tokens" not in c[1]]
    assert calls == ["dynamodb.BatchGetItem", "dynamodb.BatchGetItem", "dynamodb.Query", "dynamodb.UpdateItem"], \
        counter.calls
    counter.calls.clear()
    a.recall("cocoa")  # caught up: one read again
    calls = [c[0] for c in counter.calls if "tokens" not in c[1]]
    assert calls == ["dynamodb.BatchGetItem", "dynamodb.UpdateItem"], counter.calls


def test_config_version_moved_drops_the_cache(aws, tmp_path):
    """Another container's ``POST /v1/reload`` (the config version row) reaches this container
    through the recall's own read: its indexes are dropped and reloaded."""
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search import index
    from chalicelib.search.recall import CONFIG_NAME, CONFIG_ORG, recall
    from chalicelib.storage.tables import BankModel
    from chalicelib.tuning import config_version, set_config_version
    set_config_version(0)
    c = index.IndexCache(str(tmp_path / "c"))
    with index.using(c):
        service.save_memory("o", "v", SaveRequest(text="reload probe memory"), actor="t")
        assert len(recall("o", ["v"], "probe", limit=3).hits) == 1
        assert c.counters["rebuilds"] == 1
        BankModel(CONFIG_ORG, CONFIG_NAME, bank_name=CONFIG_NAME, incarnation="x", seq=7,
                  created_at=1, updated_at=1).save()
        assert len(recall("o", ["v"], "probe", limit=3).hits) == 1
    assert config_version() == 7 and c.counters["rebuilds"] == 2
    set_config_version(0)


def test_concurrent_writers_in_two_containers_agree(pair):
    """Eight writers at once, four through each container, over many lanes: saves of distinct
    texts, reinforcements of one shared text (one lane, one memory), forgets, pins and a
    supersede; a third container recalls meanwhile. Afterwards every container serves exactly the
    bank's live memories with the same scores, and the clocks agree with DynamoDB."""
    import threading

    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.core.store import get_bank_head
    from chalicelib.search import index
    a, b = pair
    c = Container(a.api, index.IndexCache(str(a.cache.root) + "-c"), "c")
    ok(a.call("POST", "/v1/banks", {"name": "main"}))
    texts = other_lanes("concurrent writer memory about coffee", 16)
    shared = "Everyone agrees that the coffee machine is on floor two"
    errors: list[BaseException] = []
    barrier = threading.Barrier(9)
    done = threading.Event()

    def writer(i: int) -> None:
        cache = (a if i < 4 else b).cache
        try:
            with index.using(cache):
                barrier.wait()
                mine = [service.save_memory("default", "main", SaveRequest(text=f"{texts[(2 * i + k) % 16]} {i}"),
                                            actor="t").memory for k in range(3)]
                service.save_memory("default", "main", SaveRequest(text=shared), actor="t")
                service.delete_memory("default", "main", mine[0].id, actor="t")
                service.pin_memory("default", "main", mine[1].id, True, actor="t")
                if i % 2:
                    service.supersede_memory("default", "main", mine[2].id, mine[1].id, actor="t")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def reader() -> None:
        barrier.wait()
        while not done.is_set():
            c.recall("coffee")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    rt = threading.Thread(target=reader)
    for t in [*threads, rt]:
        t.start()
    for t in threads:
        t.join()
    done.set()
    rt.join()
    assert not errors, errors
    live = ok(a.call("GET", "/v1/banks/main/memories?limit=100"))["memories"]
    assert len(live) == 8 * 3 + 1 - 8 - 4  # each forgot one, the odd ones superseded one
    expected = {m["id"] for m in live}
    results = [x.recall("coffee") for x in (a, b, c)]
    assert {m["memory"]["id"] for m in results[0]["memories"]} == expected
    assert json.dumps(results[0], sort_keys=True) == json.dumps(results[1], sort_keys=True) \
        == json.dumps(results[2], sort_keys=True)
    assert next(m for m in live if m["text"] == shared)["corroboration"] == 7
    head = get_bank_head("default", "main")
    assert head.memories == len(live) and head.clock.total == 8 * 3 + 8 + 8 + 8 + 4
    assert len([p for p in head.clock.positions if p]) > 8  # the writes really spread over the lanes
    for x in (a, b, c):
        assert x.cache.get("default", "main").clock == head.clock
    check(a, b)


def _ids(c, query):
    return {m["memory"]["id"] for m in c.recall(query)["memories"]}


def test_a_write_acknowledged_in_one_container_is_seen_by_the_next_recall_in_the_other_in_every_lane(pair):
    """Both containers warm, then writes into each of the bank's lanes alternate between them:
    after each acknowledged write, the other container's very next recall holds it (its cached
    lane rows are reused only while the bank's version has not moved)."""
    a, b = pair
    lanes = 16
    texts = other_lanes("marmalade jar number", lanes)
    assert sorted(lane_of_text(t) for t in texts) == list(range(lanes))
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "warm-up toast note"}))
    for c in (a, b):
        _ids(c, "toast")
        _ids(c, "toast")  # second read: the cached lane rows are in use from here on
    seen: set[str] = set()
    for i, text in enumerate(texts):
        writer, reader = (a, b) if i % 2 == 0 else (b, a)
        saved = ok(writer.call("POST", "/v1/banks/main/memories", {"text": text}))["memory"]["id"]
        seen.add(saved)
        assert seen <= _ids(reader, "marmalade jar"), (i, lane_of_text(text))
        assert seen <= _ids(writer, "marmalade jar"), (i, lane_of_text(text))


def test_a_write_cut_short_before_its_version_moved_shows_once_acknowledged(pair, monkeypatch):
    """A writer that stops after its commit and before moving the bank's version never
    acknowledged the write; the client's retry does, and from then on every container sees it
    (the same text is found stored, or the same Idempotency-Key replays the answer)."""
    from chalicelib.core.store import txn
    a, b = pair
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "warm-up toast note"}))
    for c in (a, b):
        _ids(c, "toast")
        _ids(c, "toast")
    real = txn.bump_versions

    def stopped(org_id, incs):
        raise RuntimeError("the container stopped here")

    for retry in ({}, {"Idempotency-Key": "k-1"}):
        text = "quince paste note" if not retry else "medlar jelly note"
        monkeypatch.setattr(txn, "bump_versions", stopped)
        status, _body = a.call("POST", "/v1/banks/main/memories", {"text": text}, headers=retry)
        assert status >= 500  # committed, not acknowledged
        monkeypatch.setattr(txn, "bump_versions", real)
        status, body = a.call("POST", "/v1/banks/main/memories", {"text": text}, headers=retry)
        assert status in (200, 201), body
        assert body["memory"]["id"] in _ids(b, text.split()[0]), retry


def _warm(*containers):
    for c in containers:
        _ids(c, "toast")
        _ids(c, "toast")  # second read: the known head is reused from here on


def test_a_bank_change_acknowledged_in_one_container_is_seen_by_the_next_recall_in_the_other(pair):
    """Changes of the bank row itself (its settings, its rule count, trash and restore) move the
    bank's version as record writes do: the other container, warm and reusing the bank as it
    last read it, sees each one in its very next read."""
    a, b = pair
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "warm-up toast note"}))
    _warm(a, b)
    default = b.recall("toast")["match"]["threshold"]
    ok(a.call("PATCH", "/v1/banks/main", {"settings": {"match_threshold": 0.97}}))
    assert b.recall("toast")["match"]["threshold"] == 0.97  # the bank's own threshold holds its hits
    ok(a.call("PATCH", "/v1/banks/main", {"settings": {"match_threshold": None}}))
    assert b.recall("toast")["match"]["threshold"] == default
    preview = ok(b.call("POST", "/v1/banks/main/preview", {"query": "toast"}))
    assert "kumquat" not in json.dumps(preview)  # b has read the rules now (none)
    ok(a.call("PUT", "/v1/banks/main/rules/style", {"content": "Always mention the kumquat."}))
    preview = ok(b.call("POST", "/v1/banks/main/preview", {"query": "toast"}))
    assert "kumquat" in json.dumps(preview)  # the new rule count, so the rules are read again
    trashed = ok(a.call("DELETE", "/v1/banks/main"))["trashed_to"]
    status, body = b.call("POST", "/v1/banks/main/recall", {"query": "toast"})
    assert (status, body["code"]) == (404, "bank_not_found")
    ok(a.call("POST", "/v1/banks/main/restore", {"trashed_to": trashed}))
    assert [m["memory"]["text"] for m in b.recall("toast")["memories"]] == ["warm-up toast note"]



class KeyCounter(CallCounter):
    """``CallCounter`` that also keeps the keys each BatchGetItem asks for (``reads``)."""

    def __init__(self):
        super().__init__()
        self.reads: list[list[tuple[str, str]]] = []

    def __call__(self, model=None, params=None, **kw):
        super().__call__(model=model, params=params, **kw)
        if model.name == "BatchGetItem":
            body = json.loads((params or {}).get("body") or b"{}")
            self.reads.append([(k["org_id"]["S"], k["name"]["S"]) for t in body["RequestItems"].values()
                               for k in t["Keys"]])


def test_a_warm_recall_reads_only_version_items_and_a_moved_bank_once_more(aws, tmp_path):
    """Warm over several banks, a recall reads each bank's version item and the config rows, no
    bank row or lane row; a bank another container wrote into (lane 0, the bank row's own lane,
    included) costs the read of its row and lane rows, once, and the recall holds the write."""
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.core.store import get_bank_row, version_key
    from chalicelib.search import index
    from chalicelib.search.recall import recall
    a, b = index.IndexCache(str(tmp_path / "a")), index.IndexCache(str(tmp_path / "b"))
    banks = ["v1", "v2", "v3"]
    in_lane = {lane_of_text(t): t for t in other_lanes("quince note", 16)}
    with index.using(a):
        for name in banks:
            service.save_memory("o", name, SaveRequest(text=f"quince seed for {name}"), actor="t")
    incs = {get_bank_row("o", name).incarnation for name in banks}
    counter = KeyCounter().install()
    try:
        with index.using(b):
            assert len(counter.reads) == 0
            recall("o", banks, "quince", limit=20, now=NOW)  # first met: row, version, then rows and lanes
            assert len(counter.reads) == 3
            counter.reads.clear()
            assert len(recall("o", banks, "quince", limit=20, now=NOW).hits) == 3
        (read,) = counter.reads
        assert {k for o, k in read if o == "o" and k != "!config"} == {version_key(inc) for inc in incs}
        for lane in (0, 5):
            with index.using(a):
                service.save_memory("o", "v2", SaveRequest(text=in_lane[lane]), actor="t")
            counter.reads.clear()
            with index.using(b):
                texts = [h.memory.text for h in recall("o", banks, "quince", limit=20, now=NOW).hits]
            assert in_lane[lane] in texts, lane
            first, second = counter.reads
            assert ("o", "v2") in second and not {("o", "v1"), ("o", "v3")} & set(first + second), lane
            counter.reads.clear()
            with index.using(b):
                recall("o", banks, "quince", limit=20, now=NOW)
            assert len(counter.reads) == 1
    finally:
        counter.uninstall()


@pytest.mark.parametrize("stored", [{"N": str(2**60)}, {"S": "7"}, {"N": "1.5"}],
                         ids=["too-large", "string", "fraction"])
def test_a_damaged_version_item_is_never_trusted(pair, monkeypatch, stored):
    """A version item whose value does not decode as a count reads as damaged (a
    ``DamagedValues`` metric) and the bank's rows are read on every recall instead of trusting
    what was read before."""
    import boto3

    from chalicelib import metrics
    from chalicelib.core.store import get_bank_row, version_key
    from tests.api.lanes import banks_table
    a, b = pair
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "warm-up toast note"}))
    _warm(a, b)
    inc = get_bank_row("default", "main").incarnation
    boto3.client("dynamodb").put_item(TableName=banks_table(), Item={
        "org_id": {"S": "default"}, "name": {"S": version_key(inc)}, "seq": stored})
    emitted = []
    real = metrics.emit
    monkeypatch.setattr(metrics, "emit", lambda *args, **kw: (emitted.append(args), real(*args, **kw))[1])
    for c in (a, b):
        assert _ids(c, "toast")
    assert [args for args in emitted if args[1] == {"DamagedValues": 1} and args[2]["kind"] == "banks"]
    assert b.cache.get("default", "main").head.version is None  # never reused


def test_a_version_item_that_is_not_a_number_is_replaced_and_the_write_acknowledged(pair):
    """A version item holding a string (a hand edit) cannot be added to: the write that meets it
    replaces it by a number no container can hold (far above any count) and is acknowledged;
    the other container sees the write at its next recall, and the bank's writes move the new
    number from then on."""
    import boto3

    from chalicelib.core.store import get_bank_row, version_key
    from tests.api.lanes import banks_table
    a, b = pair
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "warm-up toast note"}))
    _warm(a, b)
    inc = get_bank_row("default", "main").incarnation
    client = boto3.client("dynamodb")
    key = {"org_id": {"S": "default"}, "name": {"S": version_key(inc)}}
    client.put_item(TableName=banks_table(), Item={**key, "seq": {"S": "7"}})
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "quince jam in the pantry"}))
    first = int(client.get_item(TableName=banks_table(), Key=key, ConsistentRead=True)["Item"]["seq"]["N"])
    assert first > 10**12
    assert _ids(b, "quince")
    ok(b.call("POST", "/v1/banks/main/memories", {"text": "medlar jelly beside it"}))
    assert int(client.get_item(TableName=banks_table(), Key=key, ConsistentRead=True)["Item"]["seq"]["N"]) == first + 1
    assert _ids(a, "medlar")


def _cut_short(monkeypatch, c, method, path):
    """``method path`` in container ``c``, stopped after its commit and before its version move
    (not acknowledged: a 5xx)."""
    from chalicelib.core.store import txn
    real = txn.bump_versions

    def stopped(org_id, incs):
        raise RuntimeError("the container stopped here")

    monkeypatch.setattr(txn, "bump_versions", stopped)
    status, _body = c.call(method, path)
    monkeypatch.setattr(txn, "bump_versions", real)
    assert status >= 500


def _seen_in_both(a, b) -> str:
    """The id of a memory saved in ``a`` that both containers' warm recalls return."""
    gone = ok(a.call("POST", "/v1/banks/main/memories", {"text": "quince paste in the toast drawer"}))["memory"]["id"]
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "warm-up toast note"}))
    _warm(a, b)
    assert gone in _ids(b, "quince toast")
    return gone


def test_a_forget_cut_short_before_its_version_moved_is_gone_everywhere_once_its_retry_answers(pair, monkeypatch):
    """A forget whose container stopped between its commit and its version move is retried by
    the client; the retry finds the memory retired already and answers 200 with nothing to
    write: that answer acknowledges the forget, so the other container no longer returns it."""
    a, b = pair
    gone = _seen_in_both(a, b)
    _cut_short(monkeypatch, a, "DELETE", f"/v1/banks/main/memories/{gone}")
    assert ok(a.call("DELETE", f"/v1/banks/main/memories/{gone}"))["memory"]["invalid_at"]
    assert gone not in _ids(b, "quince toast")


def test_a_purge_cut_short_before_its_version_moved_is_gone_everywhere_once_its_retry_answers(pair, monkeypatch):
    """A purge stopped between its commit and its version move is retried: the retry finishes
    what the first run left and answers 404 (the id is gone); from then on the other container
    no longer returns the purged text."""
    a, b = pair
    gone = _seen_in_both(a, b)
    _cut_short(monkeypatch, a, "POST", f"/v1/banks/main/memories/{gone}/purge")
    status, body = a.call("POST", f"/v1/banks/main/memories/{gone}/purge")
    assert (status, body["code"]) == (404, "memory_not_found")
    hits = b.recall("quince toast")["memories"]
    assert gone not in {h["memory"]["id"] for h in hits}
    assert all("quince" not in h["memory"]["text"] for h in hits)


def test_a_restored_banks_rules_are_injected_by_the_other_container_once_the_restore_answers(pair, monkeypatch):
    """A restore commits the bank row, then moves its rules back from the trash. A container
    that reads the bank in between finds the restored row and no rule yet; once the restore has
    answered, its next injection holds the rule (the rules it cached meanwhile are not reused)."""
    from chalicelib.storage import blobs
    a, b = pair
    ok(a.call("POST", "/v1/banks/main/memories", {"text": "warm-up toast note"}))
    ok(a.call("PUT", "/v1/banks/main/rules/style", {"content": "Always mention the kumquat."}))
    trashed = ok(a.call("DELETE", "/v1/banks/main"))["trashed_to"]
    real = blobs.move_prefix

    def meanwhile(src, dst):  # the other container reads the bank between the commit and the move
        ok(b.call("POST", "/v1/banks/main/preview", {"query": "toast"}))
        return real(src, dst)

    monkeypatch.setattr(blobs, "move_prefix", meanwhile)
    ok(a.call("POST", "/v1/banks/main/restore", {"trashed_to": trashed}))
    monkeypatch.setattr(blobs, "move_prefix", real)
    assert "kumquat" in json.dumps(ok(b.call("POST", "/v1/banks/main/preview", {"query": "toast"})))
