"""``POST /mcp`` in process: the JSON-RPC exchange of both protocol eras, the tools' listing per
token, their results and errors, and that a refused call writes nothing. The SDK's own clients
drive the same endpoint over HTTP in tests/e2e/test_mcp_e2e.py."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import Api, mint

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
READ_TOOLS = {"bank_list", "memory_recall", "memory_get", "memory_list", "memory_history", "rules_list",
              "context_preview", "session_list", "space_list", "team_search"}
ALL_TOOLS = READ_TOOLS | {"bank_create", "memory_save", "memory_observe", "memory_update", "memory_forget",
                          "memory_pin", "memory_supersede", "rule_set", "session_open", "structured_memory",
                          "team_draft"}
_ids = iter(range(1, 1_000_000))


class Mcp:
    """JSON-RPC over the test client: ``rpc(method, params)`` -> ``(status, body)``."""

    def __init__(self, client, token: str, headers: dict[str, str] | None = None):
        self.client, self.token, self.headers = client, token, headers or {}

    def post(self, body, headers: dict[str, str] | None = None, raw: bytes | None = None):
        h = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
             "Accept": "application/json, text/event-stream", **self.headers, **(headers or {})}
        resp = self.client.http.post("/mcp", headers=h, body=raw if raw is not None else json.dumps(body))
        return resp.status_code, (json.loads(resp.body) if resp.body else None)

    def rpc(self, method: str, params: dict | None = None, headers: dict[str, str] | None = None):
        body = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
        if params is not None:
            body["params"] = params
        return self.post(body, headers)

    def tools(self) -> dict[str, dict]:
        status, body = self.rpc("tools/list")
        assert status == 200, body
        return {t["name"]: t for t in body["result"]["tools"]}

    def call(self, tool: str, **arguments) -> dict:
        status, body = self.rpc("tools/call", {"name": tool, "arguments": arguments})
        assert status == 200, body
        return body["result"]


def _modern(method: str, params: dict | None = None, name: str | None = None):
    """A 2026-07-28 request's params and headers."""
    params = dict(params or {})
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                       "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return params, headers


@pytest.fixture
def mcp(client, token):
    return Mcp(client, token)


@pytest.fixture
def api_(client, token):
    return Api(client, token)


def test_initialize_negotiates_a_handshake_version_and_offers_tools(mcp):
    status, body = mcp.rpc("initialize", {"protocolVersion": HANDSHAKE, "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "1"}})
    assert status == 200, body
    result = body["result"]
    assert result["protocolVersion"] == HANDSHAKE
    assert result["serverInfo"]["name"] == "cairn" and "tools" in result["capabilities"]
    assert "memory_recall" in result["instructions"]
    status, body = mcp.rpc("initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "1"}})
    assert body["result"]["protocolVersion"] == HANDSHAKE  # ours, for a version we do not speak


def test_notifications_and_client_responses_get_202_without_a_body(mcp):
    assert mcp.post({"jsonrpc": "2.0", "method": "notifications/initialized"}) == (202, None)
    assert mcp.post({"jsonrpc": "2.0", "id": 7, "result": {}}) == (202, None)


def test_ping_answers_an_empty_result(mcp):
    status, body = mcp.rpc("ping")
    assert (status, body["result"]) == (200, {})


def test_discover_and_a_modern_call(mcp, api_):
    params, headers = _modern("server/discover")
    status, body = mcp.rpc("server/discover", params, headers)
    assert status == 200, body
    assert MODERN in body["result"]["supportedVersions"] and HANDSHAKE in body["result"]["supportedVersions"]
    assert body["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "cairn"
    api_.post("/v1/banks", {"name": "main"})
    params, headers = _modern("tools/call", {"name": "memory_save", "arguments": {
        "bank": "main", "text": "The deploy runs on Fridays."}}, name="memory_save")
    status, body = mcp.rpc("tools/call", params, headers)
    assert status == 200 and body["result"]["isError"] is False, body
    assert body["result"]["structuredContent"]["created"] is True


@pytest.mark.parametrize("mutate,code", [
    (lambda p, h: h.update({"Mcp-Method": "tools/list"}), "header_mismatch"),
    (lambda p, h: h.update({"Mcp-Name": "memory_get"}), "header_mismatch"),
    (lambda p, h: p["_meta"].update({"io.modelcontextprotocol/protocolVersion": HANDSHAKE}), "header_mismatch"),
    (lambda p, h: p.pop("_meta"), "validation_error"),
])
def test_a_modern_request_whose_headers_disagree_is_refused_and_writes_nothing(mcp, api_, mutate, code):
    api_.post("/v1/banks", {"name": "main"})
    params, headers = _modern("tools/call", {"name": "memory_save", "arguments": {
        "bank": "main", "text": "Nothing should be saved here."}}, name="memory_save")
    mutate(params, headers)
    status, body = mcp.rpc("tools/call", params, headers)
    assert status == 400 and body["error"]["data"]["code"] == code, body
    assert api_.get("/v1/banks/main")[1]["bank"]["memories"] == 0


def test_an_unknown_protocol_version_is_refused_with_the_supported_list(mcp):
    status, body = mcp.rpc("tools/list", None, {"MCP-Protocol-Version": "2030-01-01"})
    assert status == 400
    assert body["error"]["code"] == -32022 and "2026-07-28" in body["error"]["data"]["supported"]


@pytest.mark.parametrize("raw,rpc,code,rid", [
    (b"{not json", -32700, "invalid_json", None),
    (b"[]", -32600, "validation_error", None),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, "validation_error", None),
    (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600, "validation_error", 1),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600, "validation_error", None),
    (b'{"jsonrpc":"2.0","id":"q7","method":"tools/call","params":{"name":"memory_save",'
     b'"arguments":{"bank":"main","text":"bad\\u0000text"}}}', -32602, "validation_error", "q7"),
    (b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"memory_save",'
     b'"arguments":{"bank":"main","text":"\\ud800"}}}', -32602, "validation_error", 9),
    (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', -32600, "validation_error", None),
])
def test_what_is_not_one_readable_message_is_a_jsonrpc_error(mcp, raw, rpc, code, rid):
    """Refused at the edge, before the message is parsed: the id is answered when it can be read."""
    status, body = mcp.post(None, raw=raw)
    assert status == 400
    assert body["jsonrpc"] == "2.0" and body["id"] == rid
    assert (body["error"]["code"], body["error"]["data"]["code"]) == (rpc, code)


def test_an_unknown_method_and_bad_params_are_jsonrpc_errors(mcp):
    status, body = mcp.rpc("resources/list")
    assert (status, body["error"]["code"], body["error"]["data"]["code"]) == (200, -32601, "method_not_found")
    status, body = mcp.rpc("no/such/method")
    assert (status, body["error"]["code"]) == (200, -32601)
    status, body = mcp.rpc("tools/call", {"arguments": {}})
    assert (status, body["error"]["code"], body["error"]["data"]["code"]) == (200, -32602, "validation_error")
    status, body = mcp.rpc("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert (body["error"]["code"], body["error"]["data"]["code"]) == (-32602, "unknown_tool")
    params, headers = _modern("no/such")
    status, body = mcp.rpc("no/such", params, headers)
    assert (status, body["error"]["code"]) == (404, -32601)


def test_no_token_is_401_as_a_jsonrpc_error(client):
    resp = client.http.post("/mcp", headers={"Content-Type": "application/json"},
                            body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    body = json.loads(resp.body)
    assert resp.status_code == 401
    assert body["error"]["code"] == -32600 and body["error"]["data"]["code"] == "unauthorized"


def test_get_and_delete_answer_405_as_jsonrpc_errors(client, token):
    for method in ("GET", "DELETE", "PUT"):
        resp = client.http.request(method, "/mcp", headers={"Authorization": f"Bearer {token}"}, body=b"")
        assert resp.status_code == 405 and "POST" in resp.headers["Allow"]
        assert json.loads(resp.body)["error"]["data"]["code"] == "method_not_allowed"


def test_an_origin_is_refused_unless_the_operator_allows_it(mcp, monkeypatch):
    status, body = mcp.rpc("ping", headers={"Origin": "https://evil.example"})
    assert status == 403 and body["error"]["data"]["code"] == "origin_not_allowed"
    # a DNS-rebinding page names the same host in Origin and Host: no evidence of the page's site
    status, _ = mcp.rpc("ping", headers={"Origin": "http://rebind.example:8000", "Host": "rebind.example:8000"})
    assert status == 403
    monkeypatch.setenv("CAIRN_MCP_ALLOWED_ORIGINS", "https://console.example, https://other.example")
    assert mcp.rpc("ping", headers={"Origin": "https://console.example"})[0] == 200
    assert mcp.rpc("ping", headers={"Origin": "evil://console.example"})[0] == 403
    assert mcp.rpc("ping", headers={"Origin": ""})[0] == 403  # present, and not listed
    assert mcp.rpc("ping", headers={"Origin": "https://evil.example"})[0] == 403


def test_a_request_with_a_null_id_is_refused_not_dropped(mcp):
    status, body = mcp.post({"jsonrpc": "2.0", "id": None, "method": "tools/list"})
    assert status == 400 and body["error"]["data"]["code"] == "invalid_request"


def test_a_default_bank_that_is_no_bank_name_is_refused(mcp):
    status, body = mcp.rpc("tools/list", headers={"X-Cairn-Bank": "Not A Bank!"})
    assert status == 400 and body["error"]["data"]["code"] == "invalid_name"


def test_an_accept_header_without_json_is_406(mcp):
    status, body = mcp.rpc("ping", headers={"Accept": "text/event-stream"})
    assert status == 406 and body["error"]["data"]["code"] == "not_acceptable"


def test_a_token_lists_only_the_tools_its_permissions_allow(client, mcp):
    assert set(mcp.tools()) == ALL_TOOLS
    read_only = Mcp(client, mint(permissions=["memory:read"]))
    listed = read_only.tools()
    assert set(listed) == READ_TOOLS
    assert all(t["annotations"]["readOnlyHint"] is True for t in listed.values())
    confined = Mcp(client, mint(permissions=["memory:read", "memory:write"], banks=["main"]))
    assert set(confined.tools()) == ALL_TOOLS - {"session_open", "session_list", "structured_memory", "space_list",
                                                 "team_search", "team_draft"}
    assert "bank_list" in confined.tools()  # lists only its own banks, as the REST route does
    nothing = Mcp(client, mint(permissions=[]))
    assert set(nothing.tools()) == {"space_list", "team_search"}  # as the REST routes, they rely on space grants


def test_every_tool_is_described_with_schemas_and_annotations(mcp):
    for name, tool in mcp.tools().items():
        assert len(tool["description"]) > 40, name
        assert tool["inputSchema"]["type"] == "object" and tool["outputSchema"]["type"] == "object", name
        ann = tool["annotations"]
        assert isinstance(ann["readOnlyHint"], bool) and isinstance(ann["idempotentHint"], bool), name
        assert ann["readOnlyHint"] or isinstance(ann["destructiveHint"], bool), name
        assert "$ref" not in json.dumps(tool["inputSchema"]), name


def test_input_schemas_carry_the_rest_limits(mcp):
    tools = mcp.tools()
    recall = tools["memory_recall"]["inputSchema"]["properties"]
    assert recall["query"]["maxLength"] == 4000 and recall["limit"]["maximum"] == 100
    assert tools["rule_set"]["inputSchema"]["properties"]["content"]["maxLength"] == 65536
    assert tools["memory_save"]["inputSchema"]["additionalProperties"] is False


def test_a_default_bank_makes_bank_optional(client, token, api_):
    api_.post("/v1/banks", {"name": "main"})
    mcp = Mcp(client, token, {"X-Cairn-Bank": "main"})
    schema = mcp.tools()["memory_save"]["inputSchema"]
    assert "bank" not in schema["required"] and schema["properties"]["bank"]["default"] == "main"
    saved = mcp.call("memory_save", text="Invoices are sent on the first of the month.")
    assert saved["isError"] is False, saved
    assert api_.get("/v1/banks/main")[1]["bank"]["memories"] == 1
    plain = Mcp(client, token)
    assert "bank" in plain.tools()["memory_save"]["inputSchema"]["required"]
    missing = plain.call("memory_save", text="No bank was named for this one.")
    assert missing["isError"] is True and missing["structuredContent"]["code"] == "validation_error"


def test_save_recall_preview_forget_and_the_forgotten_never_returns(mcp, api_):
    api_.post("/v1/banks", {"name": "main"})
    saved = mcp.call("memory_save", bank="main", text="The staging database is called heron.",
                     entities=["heron"], tags=["infra"])
    assert saved["isError"] is False
    assert saved["content"][0]["text"].startswith('Saved a new memory: "The staging database is called heron."')
    mid = saved["structuredContent"]["memory"]["id"]
    hits = mcp.call("memory_recall", bank="main", query="what is the staging database called?")
    assert [h["memory"]["id"] for h in hits["structuredContent"]["memories"]] == [mid]
    _, rest = api_.post("/v1/banks/main/recall", {"query": "what is the staging database called?"})
    # the very body of the REST operation (scores move with the clock's recency)
    assert [(h["memory"], h["signals"]["bm25"]) for h in hits["structuredContent"]["memories"]] == \
        [(h["memory"], h["signals"]["bm25"]) for h in rest["memories"]]
    preview = mcp.call("context_preview", bank="main", query="which database is staging?")
    assert "heron" in json.dumps(preview["structuredContent"])
    forgot = mcp.call("memory_forget", bank="main", memory_id=mid)
    assert forgot["isError"] is False
    assert mcp.call("memory_recall", bank="main", query="staging database heron")["structuredContent"]["memories"] == []
    assert "heron" not in json.dumps(mcp.call("context_preview", bank="main", query="heron")["structuredContent"])
    again = mcp.call("memory_get", bank="main", memory_id=mid)["structuredContent"]
    assert again["memory"]["invalid_at"] is not None


@pytest.mark.parametrize("name,arguments,code", [
    ("memory_save", {"bank": "main", "text": 42}, "validation_error"),
    ("memory_save", {"bank": "main", "text": "A fine memory text.", "colour": "red"}, "validation_error"),
    ("memory_save", {"bank": "main", "text": "x"}, "validation_error"),
    ("memory_save", {"bank": "Main Bank!", "text": "A fine memory text."}, "invalid_name"),
    ("memory_save", {"bank": "secret", "text": "A fine memory text."}, "forbidden"),
    ("memory_recall", {"bank": "main", "query": ""}, "validation_error"),
    ("memory_recall", {"bank": "main", "query": "q", "limit": 1000}, "validation_error"),
    ("rule_set", {"bank": "main", "name": "style", "content": "x" * 70000}, "validation_error"),
    ("bank_create", {"name": "secret"}, "forbidden"),
    ("memory_list", {"bank": "main", "limit": 0}, "validation_error"),
])
def test_bad_arguments_and_foreign_banks_are_error_results_that_write_nothing(client, api_, name, arguments, code):
    api_.post("/v1/banks", {"name": "main"})
    api_.post("/v1/banks", {"name": "secret"})
    confined = Mcp(client, mint(permissions=["memory:read", "memory:write"], banks=["main"]))
    before = [api_.get(f"/v1/banks/{b}")[1] for b in ("main", "secret")]
    result = confined.call(name, **arguments)
    assert result["isError"] is True, result
    assert result["structuredContent"]["code"] == code, result
    assert "Traceback" not in json.dumps(result)
    assert [api_.get(f"/v1/banks/{b}")[1] for b in ("main", "secret")] == before


def test_a_tool_the_token_may_not_use_is_forbidden(client, api_):
    api_.post("/v1/banks", {"name": "main"})
    reader = Mcp(client, mint(permissions=["memory:read"]))
    result = reader.call("memory_save", bank="main", text="A read-only token cannot save.")
    assert result["isError"] is True and result["structuredContent"]["code"] == "forbidden"
    assert api_.get("/v1/banks/main")[1]["bank"]["memories"] == 0


def test_a_header_value_sent_base64_wrapped_is_compared_decoded(mcp):
    """Clients send a name that is not plain printable ASCII as ``=?base64?...?=``: an unknown
    tool so named is ``unknown_tool``, not a header mismatch; a malformed wrapper still mismatches."""
    params, headers = _modern("tools/call", {"name": "mémoire", "arguments": {}})
    headers["Mcp-Name"] = "=?base64?bcOpbW9pcmU=?="
    status, body = mcp.rpc("tools/call", params, headers)
    assert (status, body["error"]["data"]["code"]) == (400, "unknown_tool"), body
    headers["Mcp-Name"] = "=?base64?not base64!?="
    status, body = mcp.rpc("tools/call", params, headers)
    assert (status, body["error"]["data"]["code"]) == (400, "header_mismatch"), body


def test_a_rule_is_at_most_64_kib_of_utf8_over_rest_and_mcp(mcp, api_):
    api_.post("/v1/banks", {"name": "main"})
    wide = "\U0001f600" * 16385  # 65,540 UTF-8 bytes in 16,385 characters
    status, body = api_.put("/v1/banks/main/rules/style", {"content": wide})
    assert (status, body["code"]) == (400, "validation_error")
    result = mcp.call("rule_set", bank="main", name="style", content=wide)
    assert result["isError"] is True and result["structuredContent"]["code"] == "validation_error"
    assert api_.get("/v1/banks/main")[1]["bank"]["rules"] == 0
    assert api_.put("/v1/banks/main/rules/style", {"content": "\U0001f600" * 16384})[0] == 200
