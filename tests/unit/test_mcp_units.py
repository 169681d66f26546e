"""Unit tests of the MCP endpoint's pure parts: the JSON-RPC codes agree with the SDK's, the
protocol module against a toolbox of one tool, and the server-side text edit of a team entry."""

from __future__ import annotations

import json

import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc, Text

from chalicelib.api import mcp_protocol as protocol
from chalicelib.api import mcp_wire as wire
from chalicelib.errors import CODES, CairnError
from chalicelib.team import merge

SERVER = protocol.Server("cairn", "1.0.0", "Remember things.")


def test_the_jsonrpc_codes_are_the_sdks():
    for name in ("PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS", "INTERNAL_ERROR",
                 "HEADER_MISMATCH", "UNSUPPORTED_PROTOCOL_VERSION"):
        assert getattr(wire, name) == getattr(mcp_types.jsonrpc, name), name


def test_a_cairn_error_becomes_a_jsonrpc_error_with_its_code_in_data():
    body = wire.from_cairn(CairnError("No.", code="forbidden", status=403, details={"bank": "x"}), 7)
    assert body == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "No.",
                                                          "data": {"code": "forbidden", "details": {"bank": "x"}}}}
    assert wire.from_cairn(CairnError("Bad JSON.", code="invalid_json", status=400))["error"]["code"] == -32700
    assert wire.from_cairn(CairnError("Boom.", code="internal_error"))["error"]["code"] == -32603


class OneTool:
    """A toolbox of one tool, ``echo``, recording its calls."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []

    def listed(self):
        return [{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"},
                 "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}]

    def call(self, name, arguments):
        if name != "echo":
            return None
        self.calls.append((name, arguments))
        return {"content": [{"type": "text", "text": json.dumps(arguments)}], "structuredContent": arguments,
                "isError": False}


def _handle(message, headers=None, box=None):
    return protocol.handle(message, headers or {}, box or OneTool(), SERVER)


def test_every_stable_code_the_protocol_answers_is_catalogued():
    for code in ("invalid_json", "invalid_request", "method_not_found", "validation_error", "unknown_tool",
                 "header_mismatch", "unsupported_protocol_version"):
        assert code in CODES


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_each_handshake_version_lists_and_calls(version):
    box = OneTool()
    init = _handle({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}, box=box)
    assert init.body["result"]["protocolVersion"] == version
    listed = _handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {"mcp-protocol-version": version}, box)
    assert [t["name"] for t in listed.body["result"]["tools"]] == ["echo"]
    called = _handle({"jsonrpc": "2.0", "id": "x", "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"a": 1}}}, {"mcp-protocol-version": version}, box)
    assert called.status == 200 and called.body["id"] == "x"
    assert called.body["result"]["content"][0]["text"] == '{"a": 1}'
    assert called.body["result"]["structuredContent"] == {"a": 1}  # older clients ignore it
    assert box.calls == [("echo", {"a": 1})]


def test_an_unknown_tool_is_invalid_params_and_calls_nothing():
    box = OneTool()
    answer = _handle({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope"}}, box=box)
    assert answer.body["error"]["code"] == -32602 and answer.body["error"]["data"]["code"] == "unknown_tool"
    assert box.calls == []


def test_a_method_of_another_era_is_not_found():
    answer = _handle({"jsonrpc": "2.0", "id": 4, "method": "server/discover"})
    assert (answer.status, answer.body["error"]["code"]) == (200, -32601)  # a handshake-era request
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    answer = _handle({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"_meta": meta}},
                     {"mcp-protocol-version": "2026-07-28", "mcp-method": "ping"})
    assert (answer.status, answer.body["error"]["code"]) == (404, -32601)  # ping is gone in 2026-07-28


def test_replacement_keeps_the_common_ends_and_handles_multibyte_text():
    d = Doc()
    d.get("content", type=Text).insert(0, "héllo 😀 wörld")
    update = merge.replacement([d.get_update()], "héllo 🙂 big wörld", 4242)
    assert update is not None
    d.apply_update(update)
    assert merge.text_of(d) == "héllo 🙂 big wörld"
    assert merge.replacement([d.get_update()], "héllo 🙂 big wörld", 4243) is None


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40), st.text(max_size=10))
def test_replacement_from_a_base_merges_with_a_concurrent_prefix(base, new, prefix):
    """Another client prepends ``prefix`` after the base was read: the merged text is the prefix
    followed by the new text, whatever the characters (UTF-8 offsets stay on character bounds)."""
    origin = Doc(client_id=1)
    origin.get("content", type=Text).insert(0, base)
    base_state = origin.get_update()
    other = Doc(client_id=2)
    other.apply_update(base_state)
    before = other.get_state()
    other.get("content", type=Text).insert(0, prefix)
    concurrent = other.get_update(before)
    update = merge.replacement([base_state], new, 3)
    merged = merge.load([base_state, concurrent] + ([update] if update else []))
    assert merge.text_of(merged) == prefix + new
