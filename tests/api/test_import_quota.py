"""Concurrent bulk writes hold a bank's memory quota: whatever the interleaving, a bank passes its
limit by at most ``lanes - 1`` memories (what concurrent single saves may add), because a write
adding several memories commits only on the count it checked (it holds every lane)."""

from __future__ import annotations

import contextlib
import json
import threading

import pytest

from tests.api.backend_calls import intercepted
from tests.api.test_quotas import _race


def first_commits_together(n: int):
    """Hold each thread's first DynamoDB transaction until ``n`` threads reached theirs: every
    writer has read the bank before any commits (the worst interleaving, every time)."""
    barrier = threading.Barrier(n, timeout=30)
    passed: set[int] = set()

    def held(call, client, operation, params):
        me = threading.get_ident()
        if operation == "TransactWriteItems" and me not in passed:
            passed.add(me)
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()
        return call(client, operation, params)

    return intercepted(held)


def _lines(k: int, n: int, lanes: int = 16) -> bytes:
    """``n`` lines whose memories fall in lanes ``4k .. 4k+3`` of a ``lanes``-lane bank: importer
    ``k``'s batches touch lanes no other importer's do, so only the quota can make them meet."""
    from chalicelib.core.store import lane_of
    from chalicelib.fingerprint import fingerprint
    texts: list[str] = []
    i = 0
    while len(texts) < n:
        text = f"Imported fact {k}.{i} about the deploy pipeline"
        if lane_of(fingerprint(text), lanes) // 4 == k % (lanes // 4):
            texts.append(text)
        i += 1
    return "\n".join(json.dumps({"text": t}) for t in texts).encode()


@pytest.mark.parametrize(("importers", "quota"), [(2, 30), (4, 60)])
def test_concurrent_imports_never_pass_the_memory_quota_by_more_than_lanes_minus_one(api, monkeypatch, importers,
                                                                                    quota):
    from chalicelib.banks import transfer
    from chalicelib.errors import QuotaExceeded
    monkeypatch.setenv("CAIRN_QUOTA_MEMORIES_PER_BANK", str(quota))
    monkeypatch.setenv("CAIRN_WRITE_LANES", "16")
    assert api.post("/v1/banks", {"name": "imp"})[0] == 201
    with first_commits_together(importers):
        out = _race([lambda k=k: transfer.import_ndjson("default", "imp", _lines(k, 30), actor="t")
                     for k in range(importers)])
    assert not [r for r in out if isinstance(r, Exception) and not isinstance(r, QuotaExceeded)], out
    stored = api.get("/v1/banks/imp")[1]["bank"]["memories"]
    imported = sum(r.imported for r in out if not isinstance(r, Exception))
    assert stored == imported and min(30, quota) <= stored <= quota + 16 - 1, (stored, out)
    for r in out:  # every line is accounted for: imported, or reported as over the quota
        if not isinstance(r, Exception):
            assert r.imported + len(r.errors) == 30 and all("quota_exceeded" in e.error for e in r.errors)


def test_a_bulk_write_under_a_quota_fits_one_transaction_with_every_lane_held(api, monkeypatch):
    """A 64-lane bank under a quota: batches shrink so records, lanes and counters stay within
    DynamoDB's 100 items; the import lands whole."""
    monkeypatch.setenv("CAIRN_QUOTA_MEMORIES_PER_BANK", "1000")
    monkeypatch.setenv("CAIRN_WRITE_LANES", "64")
    assert api.post("/v1/banks", {"name": "wide"})[0] == 201
    status, body = api.post("/v1/banks/wide/import", raw=_lines(0, 120).decode(),
                            headers={"Content-Type": "application/x-ndjson"})
    assert status == 200 and body["imported"] == 120 and body["errors"] == [], body
    assert api.get("/v1/banks/wide")[1]["bank"]["memories"] == 120
