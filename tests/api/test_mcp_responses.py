"""A JSON-RPC *response* (``result`` or ``error``) is never executed, whatever else it carries.

A message holding ``method`` as well as ``result`` or ``error`` is neither a request nor a
response: it is refused (400 ``invalid_request``) and runs nothing. A plain response is accepted
and ignored (202), as before.
"""

from __future__ import annotations

import itertools

import pytest

from tests.api.state import assert_unchanged, dump
from tests.api.test_mcp import Mcp

SAVE = {"name": "memory_save", "arguments": {"bank": "main", "text": "a response must never save this"}}
# each served method with params that would run it, as a request
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
CALLS = [("tools/call", SAVE), ("tools/list", {}), ("ping", None), ("initialize", INIT)]
ANSWERS = [{"result": {}}, {"result": {"content": []}}, {"error": {"code": -32603, "message": "x"}},
           {"result": {}, "error": {"code": 1, "message": "x"}}, {"result": None}, {"error": None}]
IDS = [{"id": 7}, {"id": "r1"}, {}]  # with an id, as a response; without, as a notification would be


@pytest.fixture
def mcp(client, token):
    return Mcp(client, token)


def test_a_response_carrying_a_tool_call_saves_nothing(mcp, api):
    api.post("/v1/banks", {"name": "main"})
    before = dump()
    status, body = mcp.post({"jsonrpc": "2.0", "id": 7, "result": {}, "method": "tools/call", "params": SAVE})
    assert status == 400 and body["error"]["data"]["code"] == "invalid_request", body
    assert "never both" in body["error"]["message"]
    assert_unchanged(before)
    assert api.get("/v1/banks/main/memories")[1]["memories"] == []


def test_no_message_carrying_a_result_or_an_error_runs_its_method(mcp, api):
    """Every served method, with each shape of result or error, with and without an id: each is
    refused, and together they wrote nothing."""
    api.post("/v1/banks", {"name": "main"})
    before = dump()
    for (method, params), answer, rid in itertools.product(CALLS, ANSWERS, IDS):
        message = {"jsonrpc": "2.0", "method": method, **answer, **rid}
        if params is not None:
            message["params"] = params
        status, body = mcp.post(message)
        assert status == 400 and body["error"]["data"]["code"] == "invalid_request", (message, body)
        assert "result" not in body
    assert_unchanged(before)


def test_a_plain_response_is_still_accepted_and_ignored(mcp):
    assert mcp.post({"jsonrpc": "2.0", "id": 7, "result": {}}) == (202, None)
    assert mcp.post({"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "x"}}) == (202, None)
