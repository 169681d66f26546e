"""Recall through ``POST /v1/banks/{bank}/recall``: CJK, accent and identifier
recall, first-person expansion, deterministic ties, the empty result, tag filter, as_of, limits,
signals, errors, and the bank allow-list."""

from __future__ import annotations

import math

import pytest

from tests.api.conftest import mint
from tests.api.lanes import word

NOW = 1_800_000_000_000
DAY = 86_400_000


def save(api, text, bank="main", **kw):
    status, body = api.post(f"/v1/banks/{bank}/memories", {"text": text, **kw})
    assert status in (200, 201), body
    return body["memory"]


def recall(api, query, bank="main", **kw):
    status, body = api.post(f"/v1/banks/{bank}/recall", {"query": query, **kw})
    assert status == 200, body
    assert body["retrieval"].startswith("bm25-entity")
    return body["memories"]


def texts(hits):
    return [h["memory"]["text"] for h in hits]


def test_accent_folding_both_ways(api, cache):
    save(api, "We met at the café near the station")
    save(api, "The resume template lives in the drive")
    assert texts(recall(api, "cafe")) == ["We met at the café near the station"]
    assert texts(recall(api, "résumé")) == ["The resume template lives in the drive"]


def test_cjk_bigrams(api, cache):
    save(api, "東京都の天気は晴れです")
    save(api, "京都で抹茶を飲んだ")
    assert texts(recall(api, "天気")) == ["東京都の天気は晴れです"]
    assert texts(recall(api, "抹茶")) == ["京都で抹茶を飲んだ"]


def test_identifiers_split_and_whole(api, cache):
    save(api, "Build paths with os.path.join, never string concatenation")
    save(api, "The parseHttpHeader helper lives in net_utils")
    save(api, "Rename snake_case columns before export")
    assert texts(recall(api, "os.path.join")) == ["Build paths with os.path.join, never string concatenation"]
    assert texts(recall(api, "join")) == ["Build paths with os.path.join, never string concatenation"]
    assert texts(recall(api, "header parse")) == ["The parseHttpHeader helper lives in net_utils"]
    assert texts(recall(api, "parseHttpHeader")) == ["The parseHttpHeader helper lives in net_utils"]
    assert texts(recall(api, "utils")) == ["The parseHttpHeader helper lives in net_utils"]
    assert texts(recall(api, "snake_case")) == ["Rename snake_case columns before export"]
    # the whole identifier scores above a memory holding only one of its parts
    save(api, "A snake crossed the case study")
    assert texts(recall(api, "snake_case"))[0] == "Rename snake_case columns before export"


def test_stemming_and_query_syntax_is_plain_text(api, cache):
    save(api, "Running shoes wear out after 800 km")
    assert texts(recall(api, "run?")) == ["Running shoes wear out after 800 km"]
    assert texts(recall(api, "runs*  AND (shoe")) == ["Running shoes wear out after 800 km"]


def test_first_person_matches_user_handle(api, cache):
    save(api, "Prefers dark roast coffee", entities=["user"])
    save(api, "Alice prefers tea", entities=["alice"])
    hits = recall(api, "what do I prefer")
    assert texts(hits)[0] == "Prefers dark roast coffee"
    assert hits[0]["signals"]["entity"] == 1.0
    assert hits[1]["signals"]["entity"] == 0.0
    # without a first-person word the handle is not implied
    hits = recall(api, "what does someone prefer")
    assert all(h["signals"]["entity"] == 0.0 for h in hits)


def test_entity_named_in_query_is_a_candidate_without_text_match(api, cache):
    save(api, "Moved to Lisbon in spring", entities=["alice"])
    hits = recall(api, "Alice")
    assert texts(hits) == ["Moved to Lisbon in spring"]
    assert hits[0]["signals"]["bm25"] == 0.0 and hits[0]["signals"]["entity"] == 1.0


def test_no_match_returns_nothing(api, cache):
    save(api, "The deploy runs on Fridays")
    assert recall(api, "zebra quantum") == []
    assert recall(api, "the of and") == []  # only stopwords: nothing, never noise


def _signals_off(monkeypatch) -> None:
    """Feedback, time and neighbourhood off (``chalicelib.search.signals``), the semantic
    signal (``chalicelib.search.fusion``) and the match threshold (``chalicelib.search.match``):
    the base formula alone, every hit returned."""
    for key in ("W_PRF", "W_TIME", "W_NEIGHBOUR", "W_SEMANTIC", "MATCH_THRESHOLD"):
        monkeypatch.setenv(f"CAIRN_MEMORY_{key}", "0")


def test_score_formula_and_signals(api, cache, monkeypatch):
    # the bank worker's weights, set explicitly (Cairn's tuned defaults differ: see tuning.py)
    _signals_off(monkeypatch)
    monkeypatch.setenv("CAIRN_MEMORY_W_ENTITY", "0.6")
    monkeypatch.setenv("CAIRN_MEMORY_RECENCY_FLOOR", "0.35")
    from chalicelib.search import recall as recall_mod
    from chalicelib.search import scorer
    m = save(api, "Deploy checklist lives in the wiki", entities=["wiki"], pinned=True)
    save(api, "Deploy checklist lives in the wiki")  # corroborate once
    monkeypatch.setattr(recall_mod, "now_ms", lambda: m["updated_at"] + 30 * DAY)
    hit = recall(api, "wiki checklist")[0]
    s = hit["signals"]
    assert s["entity"] == 1.0 and s["pinned"] == 1.0 and s["corroboration"] == 1.0
    assert s["bm25"] > 0
    assert s["recency"] == pytest.approx(
        max(0.5 ** ((30 * DAY - (hit["memory"]["updated_at"] - m["updated_at"])) / DAY / 30), 0.35))
    base = s["bm25"] + 0.6 * 1 + 0.3 * math.log(2) + 0.75
    assert hit["score"] == pytest.approx(base * s["recency"])
    # very old: the recency floor holds
    monkeypatch.setattr(recall_mod, "now_ms", lambda: m["updated_at"] + 3650 * DAY)
    assert recall(api, "wiki checklist")[0]["signals"]["recency"] == pytest.approx(0.35)
    assert scorer.recency(0, 3650 * DAY, recall_mod.get_tuning()) == 0.35


def test_ties_break_by_updated_at_then_id(api, cache, monkeypatch):
    from chalicelib import clock
    from chalicelib.banks import service
    # same text shape, same length -> same BM25; updated_at decides, then id
    monkeypatch.setattr(service, "now_ms", lambda: NOW)
    a = save(api, "alpha token one")
    b = save(api, "alpha token two")
    monkeypatch.setattr(service, "now_ms", lambda: NOW + 5)
    c = save(api, "alpha token six")
    monkeypatch.setattr(service, "now_ms", clock.now_ms)
    hits = recall(api, "alpha token")
    assert [h["memory"]["id"] for h in hits] == [c["id"], *sorted([a["id"], b["id"]])]
    assert hits[1]["score"] == hits[2]["score"]
    # and the same order every time
    assert [h["memory"]["id"] for h in recall(api, "alpha token")] == [h["memory"]["id"] for h in hits]


def test_tag_filter_applies_before_the_cut(api, cache):
    for i in range(8):
        save(api, f"invoice rule number {i} about invoices invoices")
    save(api, "invoice archive policy", tags=["finance"])
    hits = recall(api, "invoice", tag="finance", limit=1)
    assert texts(hits) == ["invoice archive policy"]
    assert texts(recall(api, "invoice", tag="FINANCE", limit=1)) == texts(hits)  # handles are case-folded
    assert recall(api, "invoice", tag="nope") == []


def test_limit_default_and_bounds(api, cache):
    for i in range(9):
        save(api, f"limit probe memory {i}")
    assert len(recall(api, "probe")) == 6
    assert len(recall(api, "probe", limit=8)) == 8
    for bad in (0, 101, "3"):
        status, body = api.post("/v1/banks/main/recall", {"query": "probe", "limit": bad})
        assert status == 400 and body["code"] == "validation_error"
    status, body = api.post("/v1/banks/main/recall", {"query": ""})
    assert status == 400 and body["code"] == "validation_error"
    status, body = api.post("/v1/banks/main/recall", {"query": "x", "bogus": 1})
    assert status == 400 and body["code"] == "validation_error"


def test_a_limit_above_the_candidate_pool_still_returns_every_passing_memory(api, cache, monkeypatch):
    """The candidate pool (``fetch_limit``) never caps a recall below its own ``limit``."""
    monkeypatch.setenv("CAIRN_MEMORY_FETCH_LIMIT", "3")
    for i in range(9):
        save(api, f"pool probe memory {i}")
    assert len(recall(api, "probe", limit=8)) == 8


def test_forgotten_and_superseded(api, cache):
    a = save(api, "The office wifi password rotates monthly")
    b = save(api, "The office wifi password rotates weekly")
    api.post(f"/v1/banks/main/memories/{a['id']}/supersede", {"superseded_by": b["id"]})
    assert texts(recall(api, "wifi password")) == ["The office wifi password rotates weekly"]
    both = recall(api, "wifi password", include_superseded=True)
    assert sorted(texts(both)) == sorted([a["text"], b["text"]])
    api.delete(f"/v1/banks/main/memories/{b['id']}")
    assert recall(api, "wifi password") == []


def test_as_of_ranks_the_bank_as_it_stood(api, cache, monkeypatch):
    from chalicelib import clock
    from chalicelib.banks import service
    monkeypatch.setattr(service, "now_ms", lambda: NOW)
    a = save(api, "Standup is at 9am")
    monkeypatch.setattr(service, "now_ms", lambda: NOW + 10 * DAY)
    status, _ = api.patch(f"/v1/banks/main/memories/{a['id']}", {"text": "Standup is at 10am"})
    assert status == 200
    monkeypatch.setattr(service, "now_ms", lambda: NOW + 20 * DAY)
    api.delete(f"/v1/banks/main/memories/{a['id']}")
    monkeypatch.setattr(service, "now_ms", clock.now_ms)
    assert recall(api, "standup") == []
    status, body = api.post("/v1/banks/main/recall", {"query": "standup", "as_of": NOW + DAY})
    assert status == 200 and body["retrieval"] == "bm25-entity+as_of"
    assert texts(body["memories"]) == ["Standup is at 9am"]
    assert body["memories"][0]["signals"]["recency"] == pytest.approx(0.5 ** (1 / 30))
    assert texts(recall(api, "standup", as_of=NOW + 15 * DAY)) == ["Standup is at 10am"]
    assert recall(api, "standup", as_of=NOW - 1) == []
    assert recall(api, "standup", as_of=NOW + 25 * DAY) == []


def test_purged_text_is_gone_from_recall_and_as_of(api, cache):
    a = save(api, "Secret launch codeword is heliotrope")
    api.post(f"/v1/banks/main/memories/{a['id']}/purge")
    assert recall(api, "heliotrope") == []
    assert recall(api, "heliotrope", include_superseded=True) == []
    assert recall(api, "heliotrope", as_of=a["updated_at"]) == []


def test_purge_removes_text_from_index_files(api, cache):
    import os
    from pathlib import Path
    a = save(api, "Credit card 4111 vermilionword")
    save(api, "another memory stays")
    assert texts(recall(api, "vermilionword")) == [a["text"]]
    path = cache.get("default", "main").path
    api.post(f"/v1/banks/main/memories/{a['id']}/purge")
    assert cache.get("default", "main") is None and not os.path.exists(path)  # dropped with its files
    assert texts(recall(api, "another")) == ["another memory stays"]  # rebuilt from the records
    entry = cache.get("default", "main")
    blob = b"".join(Path(entry.path, f).read_bytes() for f in os.listdir(entry.path))
    assert b"vermilionword" not in blob and a["id"].encode() not in blob


def test_unknown_bank_forbidden_bank_and_namespaces(api, cache, client):
    from tests.api.conftest import Api
    status, body = api.post("/v1/banks/nope/recall", {"query": "x"})
    assert status == 404 and body["code"] == "bank_not_found"
    status, body = api.post("/v1/banks/!scope/recall", {"query": "x"})
    assert status in (400, 404)
    save(api, "only in main")
    limited = Api(client, mint(banks=["other"]))
    status, body = limited.post("/v1/banks/main/recall", {"query": "main"})
    assert status == 403 and body["code"] == "forbidden"
    noread = Api(client, mint(permissions=["memory:write"]))
    status, body = noread.post("/v1/banks/main/recall", {"query": "main"})
    assert status == 403


def test_multi_bank_recall_is_one_corpus(aws, cache):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search.recall import recall as do_recall
    service.save_memory("o", "a", SaveRequest(text="kubernetes upgrade notes"), actor="t")
    service.save_memory("o", "b", SaveRequest(text="kubernetes cluster cost"), actor="t")
    service.save_memory("o", "b", SaveRequest(text="lunch menu friday"), actor="t")
    res = do_recall("o", ["a", "b", "missing"], "kubernetes", limit=5, now=NOW)
    assert sorted((h.bank, h.memory.text) for h in res.hits) == [("a", "kubernetes upgrade notes"),
                                                                 ("b", "kubernetes cluster cost")]
    # idf is global: the same as one bank holding all three
    for t in ("kubernetes upgrade notes", "kubernetes cluster cost", "lunch menu friday"):
        service.save_memory("o", "all", SaveRequest(text=t), actor="t")
    one = do_recall("o", ["all"], "kubernetes", limit=5, now=NOW)
    assert sorted(h.signals["bm25"] for h in one.hits) == pytest.approx(sorted(h.signals["bm25"] for h in res.hits))
    # a caller's filter
    res = do_recall("o", ["a", "b"], "kubernetes", limit=5, filter=lambda m: "cost" in m.text)
    assert [h.memory.text for h in res.hits] == ["kubernetes cluster cost"]


def test_top_memories_order(aws, cache):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.search.recall import top_memories
    service.save_memory("o", "m", SaveRequest(text="plain one"), actor="t")
    service.save_memory("o", "m", SaveRequest(text="pinned one", pinned=True), actor="t")
    service.save_memory("o", "m", SaveRequest(text="corroborated"), actor="t")
    service.save_memory("o", "m", SaveRequest(text="corroborated"), actor="t")
    service.save_memory("o", "m", SaveRequest(text="plain two"), actor="t")
    assert [m.text for m in top_memories("o", "m", 4)] == ["pinned one", "corroborated", "plain two", "plain one"]
    assert top_memories("o", "missing", 3) == []


def test_bm25_from_posting_blocks_equals_whoosh_bm25f(api, cache, monkeypatch):
    """The ranking reads postings block by block and sums BM25F itself; Whoosh's own searcher with
    the same corpus statistics (``tests.api.search_support.CorpusBM25F``) must give every memory the same bm25,
    across several segments, replaced documents and a retired one (feedback off: its candidates
    need not match the query)."""
    _signals_off(monkeypatch)
    from whoosh.query import Or, Term
    from whoosh.reading import MultiReader
    from whoosh.searching import Searcher

    from chalicelib.search.analyzers import memory_analyzer, query_terms
    from chalicelib.search.scorer import CorpusStats
    from tests.api.search_support import CorpusBM25F

    words = ["coffee", "tea", "espresso", "morning", "standup", "deploy", "friday", "garden"]
    ids = []
    for i in range(24):  # one commit (segment) each, merged by the tiered policy as they come
        text = " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 6)) + f" note{word(i)}"
        ids.append(save(api, text)["id"])
        if i == 0:
            recall(api, "coffee")  # the bank's index is now cached: each later write commits to it
    for i in (3, 7, 11):  # replaced documents stay in their segments as deletions
        status, _ = api.patch(f"/v1/banks/main/memories/{ids[i]}", {"text": f"coffee coffee garden edit{word(i)}"})
        assert status == 200
    assert api.delete(f"/v1/banks/main/memories/{ids[5]}")[0] in (200, 204)
    query = "coffee espresso garden friday"
    got = {h["memory"]["id"]: h["signals"]["bm25"] for h in recall(api, query, limit=100)}
    entry = cache.get("default", "main")
    with cache.lock("default", "main"):
        leaves = [leaf for leaf, _off in entry.reader().leaf_readers()]
        assert len(leaves) > 1 and any(leaf.has_deletions() for leaf in leaves)
        stats = CorpusStats([(leaf, {}) for leaf in leaves], False)
        searcher = Searcher(MultiReader(leaves), weighting=CorpusBM25F(stats), closereader=False)
        terms = [Term(f, t) for t in query_terms(memory_analyzer(), query) for f in ("text", "name", "description")]
        assert any(seg.excluded for seg in stats.segments)  # the forgotten memory: retired, not counted
        want = {}
        id_column = searcher.reader().column_reader("id")
        for hit in searcher.search(Or(terms), limit=None):
            memory_id = id_column[hit.docnum]
            if memory_id != ids[5]:
                want[memory_id] = hit.score
    assert ids[5] not in got  # forgotten: never comes back
    # replaced texts are gone from the warm index
    assert recall(api, " ".join(f"note{word(i)}" for i in (3, 7, 11))) == []
    assert len(recall(api, " ".join(f"edit{word(i)}" for i in (3, 7, 11)), limit=10)) == 3
    assert set(got) == set(want)
    for memory_id, score in want.items():
        assert math.isclose(got[memory_id], score, rel_tol=1e-9), memory_id


def test_decoded_postings_kept_per_segment_until_it_changes(api, cache):
    """A warm recall reuses the segment's decoded postings (no second decode); a replaced memory
    leaves its old document masked out at once (the deletion set moved, the arrays did not); a
    merged-away segment's arrays are dropped; the bank's arrays count against the cache budget."""
    first = save(api, "granite countertop quote from the kitchen shop")
    for i in range(4):
        save(api, f"older note {word(i)} on tiles")
    cache.drop()  # the saves' related look-ups warmed it a segment per save: start from the records
    recall(api, "granite")  # the first recall builds the index: one segment of five documents
    entry = cache.get("default", "main")
    per_segment = entry.stats_cache["segment_data"]
    (sid, data), = per_segment.items()
    arrays = data.postings(entry.reader().leaf_readers()[0][0], "text", "granit")
    assert len(arrays[0]) == 1
    assert texts(recall(api, "granite")) == ["granite countertop quote from the kitchen shop"]
    assert per_segment[sid] is data and data.postings(None, "text", "granit") is arrays  # served from memory
    status, _ = api.patch(f"/v1/banks/main/memories/{first['id']}", {"text": "marble countertop quote"})
    assert status == 200
    assert recall(api, "granite") == []  # the old document: deleted in the segment, masked
    assert per_segment[sid] is data  # the segment's arrays kept: its postings did not change
    assert texts(recall(api, "marble")) == ["marble countertop quote"]
    assert entry.memory_bytes() >= data.nbytes > 0
    for i in range(12):  # enough one-document commits for the tiered policy to merge the first segment
        save(api, f"filler memory number {i} about pebbles")
        recall(api, "pebbles")
    assert sid not in per_segment
    assert texts(recall(api, "marble")) == ["marble countertop quote"]
