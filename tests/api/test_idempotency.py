"""Idempotency-Key replays: a retry returns the first response without
reinforcing; the same key with a different body is 409 ``conflict``."""

import threading

from tests.api.conftest import mint
from tests.api.state import assert_unchanged, dump

M = "/v1/banks/idem/memories"


def _seq(bank="idem", org="default"):
    from chalicelib.core.store import get_bank_row
    return int(get_bank_row(org, bank).seq)


def test_replay_returns_first_response_without_reinforcing(api):
    h = {"Idempotency-Key": "retry-1"}
    s1, first = api.post(M, {"text": "Idempotent memory", "tags": ["a"]}, headers=h)
    assert s1 == 201
    snap = dump()
    s2, again = api.post(M, {"text": "Idempotent memory", "tags": ["a"]}, headers=h)
    assert (s2, again) == (s1, first)
    assert_unchanged(snap)
    s, cur = api.get(f"{M}/{first['memory']['id']}")
    assert cur["memory"]["corroboration"] == 0
    # a reinforcing save without the key changes the memory; the key still replays the first answer
    s, b = api.post(M, {"text": "Idempotent memory"})
    assert s == 200 and b["memory"]["corroboration"] == 1
    s3, late = api.post(M, {"text": "Idempotent memory", "tags": ["a"]}, headers=h)
    assert (s3, late) == (s1, first)
    # a reinforcement's response replays too (status 200 and its details)
    h2 = {"Idempotency-Key": "retry-2"}
    body = {"text": "Idempotent memory", "tags": [f"t{i}" for i in range(8)]}
    s4, r1 = api.post(M, body, headers=h2)
    s5, r2 = api.post(M, body, headers=h2)
    assert s4 == s5 == 200 and r1 == r2 and r1["details"]["tags_dropped"] == ["t7"]
    assert api.get(f"{M}/{first['memory']['id']}")[1]["memory"]["corroboration"] == 2


def test_same_key_different_body_conflicts(api):
    h = {"Idempotency-Key": "retry-3"}
    assert api.post(M, {"text": "first body here"}, headers=h)[0] == 201
    snap = dump()
    s, e = api.post(M, {"text": "second body here"}, headers=h)
    assert (s, e["code"]) == (409, "conflict")
    s, e = api.post("/v1/banks/elsewhere/memories", {"text": "first body here"}, headers=h)
    assert s == 201  # keys are scoped to the route's bank
    snap2 = dump()
    assert snap2 != snap
    assert_unchanged(snap2)


def test_keys_are_scoped_to_the_token(api):
    h = {"Idempotency-Key": "shared"}
    other = mint(user_id="other")
    assert api.post(M, {"text": "token scoped key"}, headers=h)[0] == 201
    s, b = api.post(M, {"text": "token scoped key"}, headers=h, token=other)
    assert s == 200 and b["memory"]["corroboration"] == 1


def test_concurrent_twins_apply_once(api, client):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.idempotency import make
    api.post("/v1/banks", {"name": "idem"})
    before = _seq()
    body = b'{"text": "twin request"}'
    results, barrier = [], threading.Barrier(8)

    def run():
        barrier.wait()
        idem = make("tok_x", "save:idem", "twin", body)
        results.append(service.save_memory("default", "idem", SaveRequest(text="twin request"), actor="t", idem=idem))

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r == results[0] for r in results)
    assert results[0][0] == 201 and results[0][1]["memory"]["corroboration"] == 0
    assert _seq() == before + 1


def test_no_empty_transactions(api, monkeypatch):
    """DynamoDB rejects a TransactWriteItems call without items (moto does not): reads that
    decide to write nothing must not send one."""
    from pynamodb.connection.base import Connection
    sizes = []
    original = Connection.transact_write_items

    def spy(self, condition_check_items, delete_items, put_items, update_items, **kw):
        sizes.append(len(condition_check_items) + len(delete_items) + len(put_items) + len(update_items))
        return original(self, condition_check_items, delete_items, put_items, update_items, **kw)

    monkeypatch.setattr(Connection, "transact_write_items", spy)
    api.post("/v1/banks", {"name": "idem"})
    api.post("/v1/banks", {"name": "idem"})  # ensure: nothing to write
    h = {"Idempotency-Key": "k"}
    _s, b = api.post(M, {"text": "replayed memory"}, headers=h)
    api.post(M, {"text": "replayed memory"}, headers=h)  # replay
    mid = b["memory"]["id"]
    api.delete(f"{M}/{mid}")
    assert api.delete(f"{M}/{mid}")[0] == 200  # already retired
    api.post(f"{M}/{mid}/purge")
    assert api.post(f"{M}/{mid}/purge")[0] == 200  # already purged
    assert sizes and min(sizes) > 0, sizes
