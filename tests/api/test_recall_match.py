"""Knowing when nothing matches: recall and preview say how well their best hit matched, return
no hit under the bank's match threshold, and the hook's ambient floor is marked as such and can
be turned off (over in-process moto, the shipped semantic model)."""

from __future__ import annotations

import pytest

from chalicelib.inject.render import AMBIENT_INTRO, MATCHED_INTRO
from tests.api.test_inject_api import save

FACTS = [
    ("Bittern is led by Ana Lopez.", ["bittern"]),
    ("Kestrel launches on June 15, 2026.", ["kestrel"]),
    ("Bittern stores its data in PostgreSQL 16.", ["bittern"]),
    ("Kestrel is deployed in eu-west-1.", ["kestrel"]),
    ("Heron is led by Omar Haddad.", ["heron"]),
    ("Heron's on-call engineer this week is Lena.", ["heron"]),
    ("The platform team meets on Tuesdays.", ["platform"]),
]


HOOK = {"messages": [{"role": "user", "content": "Where is Skylark deployed?"}], "metadata": {"memory_bank": "main"}}


@pytest.fixture(autouse=True)
def _fresh_caches(aws):
    from chalicelib.inject import rules_cache
    from chalicelib.search import index
    rules_cache.drop()
    index.reset_default()
    yield
    rules_cache.drop()


def _seed(api):
    for text, entities in FACTS:
        save(api, "main", text, entities=entities)
    return save(api, "main", "Always answer in English.", pinned=True)


def test_recall_of_a_subject_the_bank_does_not_know_returns_no_hit(api):
    _seed(api)
    status, body = api.post("/v1/banks/main/recall", {"query": "Where is Skylark deployed?"})
    assert status == 200, body
    assert body["memories"] == []
    assert body["match"] == {"level": "none", "score": None, "threshold": 0.35}


def test_recall_of_a_known_subject_says_it_matched(api):
    _seed(api)
    status, body = api.post("/v1/banks/main/recall", {"query": "Who leads Bittern?"})
    assert status == 200, body
    assert body["memories"][0]["memory"]["text"] == "Bittern is led by Ana Lopez."
    assert all(h["match"] >= 0.35 for h in body["memories"])
    assert body["match"]["level"] in ("strong", "partial")
    assert body["match"]["score"] == max(h["match"] for h in body["memories"])


def test_threshold_off_returns_the_look_alikes_as_weak(api, monkeypatch):
    _seed(api)
    monkeypatch.setenv("CAIRN_MEMORY_MATCH_THRESHOLD", "0")
    status, body = api.post("/v1/banks/main/recall", {"query": "Where is Skylark deployed?"})
    assert status == 200, body
    assert body["memories"], "with the threshold off the look-alikes rank as before"
    assert body["match"]["level"] == "weak" and body["match"]["threshold"] == 0.0


def test_preview_marks_the_ambient_floor_and_says_nothing_matched(api):
    pinned = _seed(api)
    status, body = api.post("/v1/banks/main/preview", {"query": "Where is Skylark deployed?"})
    assert status == 200, body
    assert body["match"]["level"] == "none"
    assert body["memories"] and all(m["ambient"] and m["match"] == 0.0 for m in body["memories"])
    assert body["memories"][0]["memory"]["id"] == pinned["id"]
    assert AMBIENT_INTRO in body["message"] and MATCHED_INTRO not in body["message"]


def test_preview_puts_matched_memories_before_the_ambient_ones(api):
    _seed(api)
    status, body = api.post("/v1/banks/main/preview", {"query": "Who leads Bittern?"})
    assert status == 200, body
    flags = [m["ambient"] for m in body["memories"]]
    assert flags[0] is False and flags == sorted(flags)
    message = body["message"]
    assert message.index(MATCHED_INTRO) < message.index("- Bittern is led by Ana Lopez.")
    if any(flags):
        assert message.index("- Bittern is led by Ana Lopez.") < message.index(AMBIENT_INTRO)


def test_ambient_floor_off_injects_nothing_when_nothing_matches(api, monkeypatch):
    _seed(api)
    monkeypatch.setenv("CAIRN_MEMORY_AMBIENT_FLOOR", "false")
    status, body = api.post("/v1/banks/main/preview", {"query": "Where is Skylark deployed?"})
    assert status == 200, body
    assert body["memories"] == [] and "message" not in body
    status, body = api.post("/v1/hooks/pre-generate", HOOK)
    assert status == 200, body
    assert body["mutations"]["append_messages"] == []


def test_hook_marks_the_ambient_floor(api):
    _seed(api)
    status, body = api.post("/v1/hooks/pre-generate", HOOK)
    assert status == 200, body
    (message,) = body["mutations"]["append_messages"]
    assert AMBIENT_INTRO in message["content"] and MATCHED_INTRO not in message["content"]
    assert "- Always answer in English.\n" in message["content"]


def test_the_banks_settings_set_its_threshold_and_ambient_floor(api):
    """A bank's ``settings`` override the service's defaults for that bank only."""
    _seed(api)
    save(api, "other", "Bittern is led by Ana Lopez.", entities=["bittern"])
    status, body = api.patch("/v1/banks/main", {"settings": {"match_threshold": 0, "ambient_floor": False}})
    assert status == 200, body
    assert body["bank"]["settings"]["match_threshold"] == 0 and body["bank"]["settings"]["ambient_floor"] is False
    status, body = api.post("/v1/banks/main/recall", {"query": "Where is Skylark deployed?"})
    assert status == 200 and body["memories"] and body["match"]["threshold"] == 0.0, body
    status, body = api.post("/v1/banks/other/recall", {"query": "Where is Skylark deployed?"})
    assert status == 200 and body["memories"] == [] and body["match"]["threshold"] == 0.35, body
    status, body = api.patch("/v1/banks/main", {"settings": {"match_threshold": 0.35}})
    assert status == 200, body
    status, body = api.post("/v1/hooks/pre-generate", HOOK)
    assert status == 200 and body["mutations"]["append_messages"] == [], body


@pytest.mark.parametrize("query", ["fp3910022638d5023e", "fp8fe7c6a626347f16"])
def test_an_identifier_no_memory_holds_matches_nothing(api, query):
    # these two ids sit close in meaning to numbered sentences; a pasted id answers no question
    for i in range(30):
        save(api, "main", f"Memory number {i:02d} about {'tea' if i % 3 == 0 else 'coffee'} brewing.")
    status, body = api.post("/v1/banks/main/recall", {"query": query, "limit": 10})
    assert status == 200, body
    assert body["memories"] == []
    assert body["match"]["level"] == "none"
