"""Idempotency-Key replays: a retry returns the first response without
reinforcing; the same key with a different body is 409 ``conflict``."""

import threading

from tests.api.conftest import mint
from tests.api.state import assert_unchanged, dump

M = "/v1/banks/idem/memories"


def _seq(bank="idem", org="default"):
    """Every change the bank committed (its lane clock's total)."""
    from chalicelib.core.store import get_bank_head
    return get_bank_head(org, bank).clock.total


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


def test_replays_records_stored_in_the_older_shape(api):
    """Records written before the result was stored as a domain value hold the HTTP status and
    the rendered body (the memory as a reference to its revision): they replay the same answer,
    and change nothing, until their TTL ends."""
    from chalicelib.core.store import get_bank_row, iter_memory_revisions
    from chalicelib.idempotency import REF
    from chalicelib.storage.tables import IdempotencyModel, bind
    bind()
    s1, first = api.post(M, {"text": "Old shape memory", "tags": ["a"]}, headers={"Idempotency-Key": "old-1"})
    body2 = {"text": "Old shape memory", "tags": [f"t{i}" for i in range(8)]}
    s2, second = api.post(M, body2, headers={"Idempotency-Key": "old-2"})
    s3, third = api.post(M, {"text": "Gone revision memory"}, headers={"Idempotency-Key": "old-3"})
    assert (s1, s2, s3) == (201, 200, 201) and third["created"] is True
    assert second["details"] == {"tags_dropped": ["t7"]}
    inc = get_bank_row("default", "idem").incarnation
    seq1, seq2 = (seq for seq, _op, _rec in iter_memory_revisions(inc, first["memory"]["id"]))
    old = {"old-1": (201, {"created": True, "memory": {REF: {"bank_key": inc, "seq": seq1}}}),
           "old-2": (200, {"created": False, "memory": {REF: {"bank_key": inc, "seq": seq2}},
                           "details": {"tags_dropped": ["t7"]}}),
           "old-3": (201, {"created": True, "memory": {REF: {"bank_key": inc, "seq": 999}}})}
    rewritten = 0
    for row in IdempotencyModel.scan():
        client_key = row.key.rsplit("|", 1)[1]
        if client_key in old:
            row.status, row.body = old[client_key]
            row.save()
            rewritten += 1
    assert rewritten == 3
    snap = dump()
    body1 = {"text": "Old shape memory", "tags": ["a"]}
    # a record of the older shape predates bank_created: its replay says false
    assert api.post(M, body1, headers={"Idempotency-Key": "old-1"}) == (201, {**first, "bank_created": False})
    assert api.post(M, body2, headers={"Idempotency-Key": "old-2"}) == (200, second)
    # a revision that is gone (a purge deletes the memory's revisions): not true any more
    s, gone = api.post(M, {"text": "Gone revision memory"}, headers={"Idempotency-Key": "old-3"})
    assert (s, gone["code"]) == (404, "memory_not_found")
    assert_unchanged(snap)


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
    from chalicelib.api.banks import render_save
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
        results.append(render_save(service.save_memory("default", "idem", SaveRequest(text="twin request"), actor="t",
                                                       idem=idem)))

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
    assert api.post(f"{M}/{mid}/purge")[0] == 404  # already purged: the id is gone
    assert sizes and min(sizes) > 0, sizes
