"""Recall, preview and the MCP recall tool with ``filter``: each field over the REST route, top-k
taken over the passing memories only (never fewer hits than asked while more pass), the single
``tag`` as ``tags_all``, and bad filters refused with 400
``validation_error`` naming the field while nothing is written."""

from __future__ import annotations

import json

import pytest

from tests.api.state import assert_unchanged, clients, dump
from tests.api.test_mcp import Mcp
from tests.api.test_search_recall import DAY, NOW, save


def recall(api, query, bank="main", **kw):
    status, body = api.post(f"/v1/banks/{bank}/recall", {"query": query, **kw})
    assert status == 200, body
    return [h["memory"]["text"] for h in body["memories"]]


@pytest.fixture
def bank(api, cache, monkeypatch):
    """Six memories about the deploy, saved a day apart (``created_at`` NOW, NOW + 1 day, ...)."""
    from chalicelib import clock
    from chalicelib.banks import service
    rows = [("The deploy runs on Friday", ["alice"], ["ops"], "s1"),
            ("The deploy needs a review from Bob", ["alice", "bob"], ["ops", "decision"], "s1"),
            ("The deploy pipeline lives in GitHub", ["bob"], ["work"], "s2"),
            ("The deploy freeze starts in December", [], ["decision"], "s2"),
            ("The deploy dashboard is in Grafana", ["carol"], [], None),
            ("The deploy key rotates monthly", ["alice"], ["ops"], "s3")]
    for i, (text, entities, tags, session) in enumerate(rows):
        monkeypatch.setattr(service, "now_ms", lambda i=i: NOW + i * DAY)
        save(api, text, entities=entities, tags=tags, **({"session_id": session} if session else {}))
    monkeypatch.setattr(service, "now_ms", clock.now_ms)
    return [r[0] for r in rows]


@pytest.mark.parametrize(("where", "want"), [
    ({"entities_any": ["bob", "carol"]}, {1, 2, 4}),
    ({"entities_all": ["alice", "bob"]}, {1}),
    ({"entities_any": ["ALICE "]}, {0, 1, 5}),  # handles are trimmed and case-folded, as saved
    ({"tags_any": ["decision", "work"]}, {1, 2, 3}),
    ({"tags_all": ["ops", "decision"]}, {1}),
    ({"created_after": NOW + DAY}, {2, 3, 4, 5}),  # exclusive
    ({"created_before": NOW + DAY}, {0}),  # exclusive
    ({"created_after": NOW, "created_before": NOW + 3 * DAY}, {1, 2}),
    ({"session_id": "s2"}, {2, 3}),
    ({"session_id": "s9"}, set()),
    ({"entities_any": ["alice"], "tags_all": ["ops"], "created_after": NOW}, {1, 5}),
    ({}, {0, 1, 2, 3, 4, 5}),
], ids=["entities_any", "entities_all", "case-folded", "tags_any", "tags_all", "after", "before", "window",
        "session", "unknown-session", "combined", "empty"])
def test_each_filter_field_over_rest(api, bank, where, want):
    got = recall(api, "deploy", limit=10, filter=where)
    assert set(got) == {bank[i] for i in want}


def test_top_k_is_taken_over_the_passing_memories(api, cache):
    """The passing memories rank far below twenty that do not: a post-filter of the top hits would
    return none of them; the filter inside the ranking returns as many as asked."""
    for i in range(20):
        save(api, f"invoice invoice invoice rule {i}", tags=["noise"])
    for i in range(5):
        save(api, f"invoice archive note {i} kept for the auditors of the finance team", tags=["finance"],
             entities=["dana"])
    for where in ({"tags_all": ["finance"]}, {"tags_any": ["finance", "legal"]}, {"entities_any": ["dana"]}):
        got = recall(api, "invoice", limit=3, filter=where)
        assert len(got) == 3 and all("archive" in t for t in got), where
    assert len(recall(api, "invoice", limit=10, filter={"tags_all": ["finance"]})) == 5


def test_the_single_tag_is_tags_all(api, bank):
    """``tag`` keeps working: alone it ranks as ``filter.tags_all: [tag]``; with a filter it adds to it."""
    status, by_tag = api.post("/v1/banks/main/recall", {"query": "deploy review", "tag": "ops", "limit": 10})
    status2, by_filter = api.post("/v1/banks/main/recall", {"query": "deploy review", "limit": 10,
                                                            "filter": {"tags_all": ["ops"]}})
    assert status == status2 == 200
    assert [(h["memory"]["id"], h["score"]) for h in by_tag["memories"]] == \
        [(h["memory"]["id"], h["score"]) for h in by_filter["memories"]]
    assert set(recall(api, "deploy", tag="ops", filter={"tags_any": ["decision"]}, limit=10)) == {bank[1]}


def test_preview_takes_the_filter_for_recalled_and_ambient_memories(api, bank):
    status, body = api.post("/v1/banks/main/preview", {"query": "deploy", "filter": {"session_id": "s2"}})
    assert status == 200, body
    assert {m["memory"]["text"] for m in body["memories"]} == {bank[2], bank[3]}
    # a query nothing matches: the ambient floor pads, with passing memories only
    status, body = api.post("/v1/banks/main/preview", {"query": "zzzz", "filter": {"tags_all": ["work"]}})
    assert status == 200, body
    assert [(m["memory"]["text"], m["ambient"]) for m in body["memories"]] == [(bank[2], True)]
    status, body = api.post("/v1/banks/main/preview", {"query": "zzzz"})
    assert len(body["memories"]) > 1  # unfiltered, the floor pads with others too


def test_the_mcp_recall_tool_takes_the_filter(client, token, bank):
    mcp = Mcp(client, token)
    result = mcp.call("memory_recall", bank="main", query="deploy", limit=10,
                      filter={"entities_all": ["alice"], "created_before": NOW + 2 * DAY})
    assert result["isError"] is False, result
    assert {h["memory"]["text"] for h in result["structuredContent"]["memories"]} == {bank[0], bank[1]}
    bad = mcp.call("memory_recall", bank="main", query="deploy", filter={"tags_all": []})
    assert bad["isError"] is True and bad["structuredContent"]["code"] == "validation_error"
    preview = mcp.call("context_preview", bank="main", query="deploy", filter={"session_id": "s3"})
    assert {m["memory"]["text"] for m in preview["structuredContent"]["memories"]} == {bank[5]}


def test_the_filter_is_typed_and_described_in_the_tools_list():
    """Every field of the nested ``filter`` is typed, described and has an example, as the
    registry test asks of top-level parameters."""
    from chalicelib.api.mcp_tools import definition
    for tool in ("memory_recall", "context_preview"):
        prop = definition(tool)["inputSchema"]["properties"]["filter"]
        assert prop["examples"] and "session_id" in prop["description"]
        obj = next(p for p in prop["anyOf"] if p.get("type") == "object")
        assert set(obj["properties"]) == {"entities_any", "entities_all", "tags_any", "tags_all",
                                          "created_after", "created_before", "session_id"}
        for name, field in obj["properties"].items():
            assert len(field.get("description", "")) >= 10 and field.get("examples"), (tool, name)
        # what a model reads states the bounds the server holds, and no name of the code's
        from chalicelib.banks.records import MAX_HANDLE_CHARS, MAX_HANDLES
        assert f"1 to {MAX_HANDLES} handles of up to {MAX_HANDLE_CHARS}" in " ".join(obj["description"].split())
        assert not any(w in obj["description"] for w in ("MAX_", "docstring", "``"))


@pytest.mark.parametrize(("where", "field"), [
    ({"entities_any": []}, "filter.entities_any"),
    ({"tags_all": ["a"] * 9}, "filter.tags_all"),
    ({"tags_any": ["x" * 65]}, "filter.tags_any.0"),
    ({"entities_all": ["   "]}, "filter.entities_all.0"),
    ({"entities_all": ["a\nb"]}, "filter.entities_all.0"),
    ({"tags_any": "ops"}, "filter.tags_any"),
    ({"created_after": -1}, "filter.created_after"),
    ({"created_before": "1700000000000"}, "filter.created_before"),
    ({"created_after": True}, "filter.created_after"),
    ({"created_after": NOW, "created_before": NOW}, "filter"),
    ({"session_id": ""}, "filter.session_id"),
    ({"session_id": "s" * 257}, "filter.session_id"),
    ({"session": "s1"}, "filter.session"),
    ("ops", "filter"),
], ids=["empty-list", "too-many", "too-long", "blank", "two-lines", "not-a-list", "negative", "string-time",
        "bool-time", "empty-window", "empty-session", "long-session", "unknown-field", "not-an-object"])
def test_a_bad_filter_is_refused_and_nothing_is_written(api, bank, where, field):
    using = clients()
    before = dump(using)
    for path in ("/v1/banks/main/recall", "/v1/banks/main/preview"):
        status, body = api.call("POST", path, raw=json.dumps({"query": "deploy", "filter": where}).encode())
        assert status == 400 and body["code"] == "validation_error", (path, body)
        assert body["details"]["field"] == field, (path, body)
    assert_unchanged(before, dump(using))



def test_session_id_is_the_session_that_first_taught_the_memory(api, cache, monkeypatch):
    """Memories extracted from a session's turns carry it (``source.session_id``) and recall under
    its filter; the same fact taught again by another session stays the first session's."""
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")  # jobs run inline
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")

    def observe(session: str, turn: str, *texts: str) -> None:
        """One finished turn of ``session``: its transcript so far, each text a user message."""
        messages = [m for t in texts
                    for m in ({"role": "user", "content": t}, {"role": "assistant", "content": "Noted."})]
        status, body = api.post("/v1/hooks/turn-completed", {
            "session_id": session, "turn_id": turn, "metadata": {"memory_bank": "main"}, "messages": messages})
        assert status == 202 and body["outcome"]["saved"] + body["outcome"]["reinforced"] == 1, body

    observe("conv-a", "t1", "Remember that I deploy on Fridays.")
    observe("conv-b", "t1", "Remember that I drink green tea.")
    # a reinforcement from another session: the memory's source stays conv-a
    observe("conv-b", "t2", "Remember that I drink green tea.", "Remember that I deploy on Fridays.")
    a = recall(api, "deploy fridays tea", limit=10, filter={"session_id": "conv-a"})
    b = recall(api, "deploy fridays tea", limit=10, filter={"session_id": "conv-b"})
    assert len(a) == 1 and "deploy" in a[0] and len(b) == 1 and "tea" in b[0]


@pytest.mark.parametrize(("where", "message"), [
    ({"entities_any": ["x" * 65]}, "at most 64 characters, not 65"),
    ({"session_id": ""}, "at least 1 character, not 0"),
    ({"tags_all": ["a"] * 9}, "at most 8 items"),
])
def test_a_length_error_counts_characters_for_a_text_and_items_for_a_list(api, where, message):
    status, body = api.post("/v1/banks/main/recall", {"query": "deploy", "filter": where})
    assert status == 400 and message in body["error"] and message in body["details"]["errors"][0]["message"], body
