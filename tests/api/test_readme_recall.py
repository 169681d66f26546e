"""The README's recall example shows the signals a recall answers with the default tuning."""

from __future__ import annotations

from tests.unit.test_newcomer_docs import example_signals


def test_the_readme_recall_example_matches_a_default_recall(api):
    assert api.post("/v1/banks", {"name": "main", "description": "my agent"})[0] == 201
    memory = {"text": "User likes strong black coffee", "entities": ["user"]}
    assert api.post("/v1/banks/main/memories", memory)[0] == 201
    status, body = api.post("/v1/banks/main/recall", {"query": "what coffee do I like", "limit": 3})
    assert status == 200 and body["memories"], body
    assert sorted(body["memories"][0]["signals"]) == sorted(example_signals())
