"""``GET /v1/status`` a page at a time, from the bank rows alone.

It listed S3 once per bank (3.6 s at 605 banks) and answered every bank at once. Now a page of
banks (``limit``, ``cursor``, ``next_cursor``) is one query of bank rows and one read of their
lanes; each bank's snapshot is what the snapshot writer noted on its row.
"""

from __future__ import annotations

import pytest

from chalicelib.core import store
from chalicelib.storage import blobs


@pytest.fixture
def listings():
    """The ListObjectsV2 calls the service's S3 client makes during a test."""
    calls: list[str] = []

    def count(params, **_kw):
        calls.append(params.get("Prefix", ""))

    events = blobs.s3().meta.events
    events.register("provide-client-params.s3.ListObjectsV2", count)
    yield calls
    events.unregister("provide-client-params.s3.ListObjectsV2", count)


def _pages(api, limit: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        status, body = api.get(f"/v1/status?limit={limit}" + (f"&cursor={cursor}" if cursor else ""))
        assert status == 200, body
        pages.append([b["name"] for b in body["banks"]])
        cursor = body.get("next_cursor")
        if cursor is None:
            return pages


def test_status_lists_no_s3_and_shows_the_snapshot_its_writer_noted(api, listings):
    from chalicelib.search.recall import rebuild
    for name in ("alpha", "beta", "gamma"):
        assert api.post(f"/v1/banks/{name}/memories", {"text": f"A memory of {name}."})[0] == 201
    rebuild("default", "alpha")  # writes alpha's snapshot
    listings.clear()
    status, body = api.get("/v1/status")
    assert status == 200 and listings == []  # no S3 listing, whatever the number of banks
    banks = {b["name"]: b for b in body["banks"]}
    snap = banks["alpha"]["snapshot"]
    assert snap["seq"] == banks["alpha"]["seq"] and snap["key"].endswith(f"/alpha/{snap['seq']}.v2.tar.zst")
    assert blobs.size_of(snap["key"]) is not None and banks["beta"]["snapshot"] is None
    assert "next_cursor" not in body


def test_every_bank_is_on_exactly_one_page_whatever_the_limit(api):
    names = [f"bank{i:02d}" for i in range(7)]
    for name in names:
        api.post("/v1/banks", {"name": name})
    for limit in (1, 2, 3, 7, 8, 200):
        pages = _pages(api, limit)
        assert [n for p in pages for n in p] == names, (limit, pages)
        assert all(len(p) == limit for p in pages[:-1]) and 1 <= len(pages[-1]) <= limit


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "cursor=bogus", "limit=x"])
def test_a_bad_page_request_is_a_400(api, query):
    status, body = api.get(f"/v1/status?{query}")
    assert status == 400 and body["code"] == "validation_error" and body["details"]["field"] in ("limit", "cursor")


def test_another_listings_cursor_is_refused(api):
    for name in ("a1", "a2"):
        api.post("/v1/banks", {"name": name})
    cursor = api.get("/v1/banks?limit=1")[1]["next_cursor"]
    status, body = api.get(f"/v1/status?cursor={cursor}")
    assert status == 400 and body["details"]["field"] == "cursor"


def test_a_snapshot_of_an_older_clock_or_another_incarnation_is_not_noted(api):
    assert api.post("/v1/banks/alpha/memories", {"text": "One memory."})[0] == 201
    row = store.get_bank_row("default", "alpha")
    assert store.record_snapshot("default", "alpha", row.incarnation, 5, "k5", 1)
    assert not store.record_snapshot("default", "alpha", row.incarnation, 4, "k4", 2)  # older: kept 5
    assert not store.record_snapshot("default", "alpha", "another-incarnation", 9, "k9", 3)
    assert {b["name"]: b for b in api.get("/v1/status")[1]["banks"]}["alpha"]["snapshot"] == \
        {"key": "k5", "seq": 5, "at": 1}


def test_status_shows_each_banks_vector_coverage_from_its_counters(api, listings, monkeypatch, tmp_path):
    from chalicelib import semantic
    from chalicelib.banks import backfill
    if not semantic.available():
        pytest.skip("the model artifact is not built")
    for i in range(3):
        assert api.post("/v1/banks/covered/memories", {"text": f"Covered memory number {i}."})[0] == 201
    empty = tmp_path / "no-model"
    empty.mkdir()
    with monkeypatch.context() as mp:  # a deployment without the model artifact
        mp.setattr(semantic, "_model", None)
        mp.setattr(semantic, "_failed", None)
        mp.setenv("CAIRN_MODEL_DIR", str(empty))
        for i in range(2):
            assert api.post("/v1/banks/lexical/memories", {"text": f"Written without the model, {i}."})[0] == 201

    def coverage() -> dict[str, dict]:
        status, body = api.get("/v1/status")
        assert status == 200, body
        return {b["name"]: b["vectors"] for b in body["banks"]}

    listings.clear()  # each save above loaded its bank's index (a snapshot listing): status lists none
    model = semantic.MODEL_ID
    assert coverage() == {"covered": {"model": model, "with_vector": 3, "live": 3},
                          "lexical": {"model": model, "with_vector": 0, "live": 2}}
    assert backfill.backfill_bank("default", "lexical").embedded == 2
    assert coverage()["lexical"] == {"model": model, "with_vector": 2, "live": 2}
    assert listings == []
