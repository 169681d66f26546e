"""``memory_observe`` and the client's ``memories.observe``: a finished exchange goes to the
turn-completed hook's extraction job; once the job ran, recall finds the fact. Exchanges of one
session are each read whole, the same ids extract once, bad input and a read-only token write
nothing."""

from __future__ import annotations

import asyncio

import pytest

from chalicelib.extraction.service import OBSERVED_SESSION
from tests.api.conftest import mint
from tests.api.state import assert_unchanged, dump
from tests.api.test_extraction_quota import _drain
from tests.api.test_mcp import Mcp
from tests.api.test_mcp_tools import err, ok
from tests.api.test_structured_history import _in_process


def exchange(fact: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Hi! Remember that {fact}."}, {"role": "assistant", "content": "Noted."}]


@pytest.fixture
def offline(monkeypatch, aws):
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")


@pytest.fixture
def inline(monkeypatch, offline):
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")


@pytest.fixture
def mcp(client, token):
    return Mcp(client, token)


def texts(api, bank="work") -> list[str]:
    status, body = api.get(f"/v1/banks/{bank}/memories")
    assert status == 200, body
    return sorted(m["text"] for m in body["memories"])


def test_an_observed_exchange_is_queued_and_recalled_once_the_job_ran(mcp, api, aws, offline):
    result = mcp.call("memory_observe", bank="work", session_id="conv-1", turn_id="t1",
                      messages=exchange("I deploy on Fridays"))
    body = ok(result)
    assert body == {"accepted": True, "bank": "work", "session_id": "conv-1", "turn_id": "t1", "queued": True}
    assert result["content"][0]["text"].startswith("Queued for extraction; memories appear in recall within seconds")
    assert err(mcp.call("memory_recall", bank="work", query="when do I deploy")) == "bank_not_found"  # not yet
    _drain(aws["CAIRN_QUEUE_URL"])
    [hit] = ok(mcp.call("memory_recall", bank="work", query="when do I deploy"))["memories"]
    assert hit["memory"]["text"] == "The user deploys on Fridays."
    assert hit["memory"]["source"]["session_id"] == "conv-1"


def test_each_exchange_of_one_session_is_extracted(mcp, api, inline):
    """The second exchange is as long as the first: a session cursor would skip it."""
    first = ok(mcp.call("memory_observe", bank="work", session_id="conv-1", turn_id="t1",
                        messages=exchange("I deploy on Fridays")))
    second = ok(mcp.call("memory_observe", bank="work", session_id="conv-1", turn_id="t2",
                         messages=exchange("I like green tea")))
    assert (first["outcome"]["saved"], second["outcome"]["saved"]) == (1, 1)
    assert texts(api) == ["The user deploys on Fridays.", "The user likes green tea."]


def test_the_same_exchange_observed_again_is_extracted_once(mcp, api, inline):
    with_ids = {"bank": "work", "session_id": "conv-1", "turn_id": "t1", "messages": exchange("I deploy on Fridays")}
    assert ok(mcp.call("memory_observe", **with_ids))["outcome"]["saved"] == 1
    again = mcp.call("memory_observe", **with_ids)
    assert ok(again)["outcome"]["status"] == "duplicate"
    assert "0 saved" in again["content"][0]["text"]
    first = ok(mcp.call("memory_observe", bank="work", messages=exchange("I like green tea")))
    assert first["session_id"] == OBSERVED_SESSION and first["turn_id"].startswith("obs-")
    assert first["outcome"]["saved"] == 1
    repeat = ok(mcp.call("memory_observe", bank="work", messages=exchange("I like green tea")))
    assert repeat["turn_id"] == first["turn_id"] and repeat["outcome"]["status"] == "duplicate"
    status, body = api.get("/v1/banks/work/memories")
    assert status == 200 and [m["corroboration"] for m in body["memories"]] == [0, 0]


@pytest.mark.parametrize("arguments, code", [
    ({"bank": "work", "messages": []}, "validation_error"),
    ({"bank": "work", "messages": [{"role": "system", "content": "Remember that x is y."}]}, "validation_error"),
    ({"bank": "work", "messages": [{"role": "user", "content": ""}]}, "validation_error"),
    ({"bank": "work", "messages": [{"role": "user", "content": "Remember that x is y.", "extra": 1}]},
     "validation_error"),
    ({"bank": "work", "turn_id": "", "messages": exchange("x is y")}, "validation_error"),
    ({"bank": "work", "session_id": "s" * 300, "messages": exchange("x is y")}, "validation_error"),
    ({"bank": "../evil", "messages": exchange("x is y")}, "invalid_name"),
], ids=["no-messages", "system-role", "empty-content", "unknown-field", "empty-turn-id", "long-session-id",
        "bad-bank"])
def test_bad_input_is_a_clear_error_that_writes_nothing(mcp, inline, arguments, code):
    before = dump()
    status, body = mcp.rpc("tools/call", {"name": "memory_observe", "arguments": arguments})
    assert status == 200 and err(body["result"]) == code, body
    assert_unchanged(before)


def test_a_read_only_token_neither_lists_nor_runs_it(client, inline):
    reader = Mcp(client, mint(permissions=["memory:read"]))
    assert "memory_observe" not in reader.tools()
    before = dump()
    assert err(reader.call("memory_observe", bank="work", messages=exchange("x is y"))) == "forbidden"
    assert_unchanged(before)


def test_a_token_confined_to_other_banks_is_refused(client, inline):
    confined = Mcp(client, mint(permissions=["memory:read", "memory:write"], banks=["allowed"]))
    before = dump()
    assert err(confined.call("memory_observe", bank="other", messages=exchange("x is y"))) == "forbidden"
    assert_unchanged(before)
    assert ok(confined.call("memory_observe", bank="allowed", messages=exchange("x is y")))["outcome"]["saved"] == 1


def test_the_client_observes_through_the_hook_route(client, token, api, inline):
    from cairn_client import AsyncCairn, Cairn, as_data
    with Cairn("http://cairn.test", token, transport=_in_process(client), max_retries=0) as cairn:
        body = as_data(cairn.memories.observe("work", exchange("I deploy on Fridays"), session_id="conv-1",
                                              turn_id="t1"))
        assert body["accepted"] is True and body["outcome"]["saved"] == 1
        again = as_data(cairn.memories.observe("work", exchange("I deploy on Fridays"), "conv-1", "t1"))
        assert again["outcome"]["status"] == "duplicate"

    async def observe_async():
        async with AsyncCairn("http://cairn.test", token, transport=_in_process(client), max_retries=0) as cairn:
            return as_data(await cairn.memories.observe("work", exchange("I like green tea")))

    body = asyncio.run(observe_async())
    assert body["session_id"] == OBSERVED_SESSION and body["outcome"]["saved"] == 1
    # the client picks the ids the tool would: the same exchange through MCP is a duplicate
    repeat = ok(Mcp(client, token).call("memory_observe", bank="work", messages=exchange("I like green tea")))
    assert repeat["turn_id"] == body["turn_id"] and repeat["outcome"]["status"] == "duplicate"
    assert texts(api) == ["The user deploys on Fridays.", "The user likes green tea."]
