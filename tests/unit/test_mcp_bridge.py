"""``cairn-mcp`` (cairn_client.mcp) without a server: the protocol headers of each era, how HTTP
answers and failures become JSON-RPC lines, retries, concurrency and the end of stdin. The bridge's
own ``httpx`` transport is replaced by ``httpx.MockTransport``; tests/e2e/test_mcp_e2e.py runs it
against the local stack."""

from __future__ import annotations

import io
import json
import threading

import httpx
import pytest
from cairn_client import mcp as bridge
from cairn_client.mcp import Bridge, Config, ConfigError, http_answers, protocol_headers, unreachable

MODERN = "2026-07-28"
URL = "https://cairn.example"


def modern(method: str, params: dict | None = None, rid: int | None = 1) -> dict:
    params = {**(params or {}), "_meta": {bridge.VERSION_META_KEY: MODERN,
                                          "io.modelcontextprotocol/clientCapabilities": {}}}
    msg = {"jsonrpc": "2.0", "method": method, "params": params}
    return msg if rid is None else {**msg, "id": rid}


# --- headers ---------------------------------------------------------------------------------

def test_a_modern_message_carries_its_version_method_and_name():
    assert protocol_headers(modern("tools/call", {"name": "memory_save", "arguments": {}}), None) == {
        "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "memory_save"}
    # the _meta version wins over a negotiated one; a method without a name gets no Mcp-Name
    assert protocol_headers(modern("tools/list"), "2025-06-18") == {
        "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}


def test_a_handshake_message_carries_the_negotiated_version_but_initialize_none():
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert protocol_headers(ping, None) == {}
    assert protocol_headers(ping, "2025-11-25") == {"MCP-Protocol-Version": "2025-11-25"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    assert protocol_headers(init, "2025-06-18") == {}
    assert protocol_headers([ping], "2025-11-25") == {}  # a batch: forwarded for the server to refuse


def test_a_name_that_is_not_plain_ascii_is_base64_wrapped():
    headers = protocol_headers(modern("tools/call", {"name": "mémoire"}), None)
    assert headers["Mcp-Name"] == "=?base64?bcOpbW9pcmU=?="
    assert bridge.encode_header_value(" padded") == "=?base64?IHBhZGRlZA==?="
    assert bridge.encode_header_value("memory_recall") == "memory_recall"


# --- answers ---------------------------------------------------------------------------------

def test_a_notification_202_writes_nothing_a_request_is_always_answered():
    assert http_answers(None, 202, "", b"") == []
    [unanswered] = http_answers(7, 202, "", b"")  # a request is answered even when the server did not
    assert unanswered["id"] == 7 and unanswered["error"]["data"] == {"code": "http_error", "status": 202}
    body = {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}
    assert http_answers(7, 200, "application/json", json.dumps(body).encode()) == [body]


def test_an_http_error_with_a_jsonrpc_body_is_forwarded_with_the_request_id():
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "No token.",
                                                    "data": {"code": "unauthorized"}}}
    [answer] = http_answers("abc", 401, "application/json", json.dumps(body).encode())
    assert answer["id"] == "abc" and answer["error"] == body["error"]
    [limited] = http_answers(3, 429, "application/json", json.dumps({**body, "id": 3}).encode(), retry_after_s=2.0)
    assert limited["id"] == 3 and limited["error"]["data"] == {"code": "unauthorized", "retry_after": 2.0}


def test_a_body_that_is_not_jsonrpc_becomes_an_error_with_the_status():
    [answer] = http_answers(5, 502, "text/html", b"<html>Bad Gateway</html>")
    assert answer["id"] == 5 and answer["error"]["code"] == bridge.INTERNAL_ERROR
    assert answer["error"]["data"] == {"code": "http_error", "status": 502}
    assert "502" in answer["error"]["message"]
    [rest] = http_answers(5, 404, "application/json", b'{"error": "no route", "code": "not_found"}')
    assert rest["error"]["data"]["code"] == "http_error"
    assert http_answers(None, 500, "text/plain", b"boom", one_way=True) == []  # a notification is never answered
    [batch] = http_answers(None, 500, "text/plain", b"boom")  # a line without an id may still be a request
    assert batch["id"] is None and batch["error"]["data"] == {"code": "http_error", "status": 500}


def test_an_event_stream_answer_gives_its_messages():
    stream = b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'
    assert http_answers(1, 200, "text/event-stream", stream) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


def test_no_answer_from_the_server_is_an_error_naming_cairn_url():
    refused = unreachable(9, URL, httpx.ConnectError("Connection refused"))
    assert refused["id"] == 9 and refused["error"]["code"] == -32603
    assert refused["error"]["data"] == {"code": "backend_unavailable", "url": URL}
    assert "CAIRN_URL" in refused["error"]["message"] and URL in refused["error"]["message"]
    slow = unreachable(9, URL, httpx.ReadTimeout("timed out"))
    assert slow["error"]["data"]["code"] == "backend_timeout"


@pytest.mark.parametrize("exc", [httpx.ReadError("Connection reset by peer"), httpx.WriteError("Broken pipe"),
                                 httpx.RemoteProtocolError("Server disconnected without sending a response"),
                                 httpx.ReadTimeout("timed out")])
def test_a_connection_lost_after_the_request_went_out_may_have_applied_the_call(exc):
    answer = unreachable(9, URL, exc)
    assert answer["error"]["data"] == {"code": "backend_timeout", "url": URL}
    assert "may have been applied" in answer["error"]["message"]


@pytest.mark.parametrize("exc", [httpx.ConnectError("Connection refused"), httpx.ConnectTimeout("timed out"),
                                 httpx.PoolTimeout("no connection")])
def test_only_a_connection_never_made_says_cairn_is_unavailable(exc):
    answer = unreachable(9, URL, exc)
    assert answer["error"]["data"] == {"code": "backend_unavailable", "url": URL}
    assert "may have been applied" not in answer["error"]["message"]


# --- settings --------------------------------------------------------------------------------

def test_settings_come_from_the_environment():
    config = Config.from_env({"CAIRN_URL": URL + "/", "CAIRN_TOKEN": "cairn_x", "CAIRN_BANK": "notes"})
    assert (config.endpoint, config.token, config.bank) == (URL + "/mcp", "cairn_x", "notes")
    assert Config.from_env({"CAIRN_URL": URL, "CAIRN_TOKEN": "t"}).bank is None
    with pytest.raises(ConfigError, match="CAIRN_URL and CAIRN_TOKEN"):
        Config.from_env({})
    with pytest.raises(ConfigError, match="CAIRN_TOKEN"):
        Config.from_env({"CAIRN_URL": URL})
    with pytest.raises(ConfigError, match="http"):
        Config.from_env({"CAIRN_URL": "cairn.example", "CAIRN_TOKEN": "t"})


@pytest.mark.parametrize(("name", "value"), [("CAIRN_TOKEN", "cairn_abc\ndef"), ("CAIRN_TOKEN", "cairn_tökén"),
                                           ("CAIRN_TOKEN", "cairn abc"), ("CAIRN_BANK", "bänk"),
                                           ("CAIRN_BANK", "my bank")])
def test_a_token_or_bank_that_cannot_go_in_a_header_is_a_setting_error(name, value):
    env = {"CAIRN_URL": URL, "CAIRN_TOKEN": "cairn_x", name: value}
    with pytest.raises(ConfigError, match=name) as err:
        Config.from_env(env)
    assert value not in str(err.value)  # a token is a secret: never echoed
    # edge whitespace is trimmed, not refused (a value pasted with its newline)
    assert Config.from_env({**env, name: " ok-value\n"}) is not None


class Untouchable(io.BytesIO):
    def __iter__(self):
        raise AssertionError("stdin was read")


def test_missing_settings_exit_2_before_reading_stdin(monkeypatch, capsys):
    monkeypatch.delenv("CAIRN_URL", raising=False)
    monkeypatch.delenv("CAIRN_TOKEN", raising=False)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(Untouchable()))
    assert bridge.main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "CAIRN_URL" in captured.err


def test_an_unusable_bank_exits_2_before_reading_stdin(monkeypatch, capsys):
    monkeypatch.setenv("CAIRN_URL", URL)
    monkeypatch.setenv("CAIRN_TOKEN", "cairn_x")
    monkeypatch.setenv("CAIRN_BANK", "bänk")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(Untouchable()))
    assert bridge.main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "CAIRN_BANK" in captured.err and "printable ASCII" in captured.err


@pytest.mark.parametrize("timeout", ["-1", "0", "nan", "inf", "1e308", "soon"])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_exits_2(monkeypatch, capsys, timeout):
    monkeypatch.setenv("CAIRN_URL", URL)
    monkeypatch.setenv("CAIRN_TOKEN", "cairn_x")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(Untouchable()))
    with pytest.raises(SystemExit) as exited:
        bridge.main(["--timeout", timeout])
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--timeout" in captured.err and "seconds" in captured.err
    assert bridge.positive_seconds("2.5") == 2.5


# --- the bridge over a mock transport --------------------------------------------------------

class Server:
    """A mock /mcp: records requests; ``answer(request) -> httpx.Response``."""

    def __init__(self, answer):
        self.answer, self.seen = answer, []
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            self.seen.append(request)
        return self.answer(request)


def result_for(request: httpx.Request, result: dict | None = None) -> httpx.Response:
    msg = json.loads(request.content)
    if "id" not in msg:
        return httpx.Response(202)
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": msg["id"], "result": result or {}})


def make(answer, bank: str | None = None, **kw) -> tuple[Bridge, Server, list[float]]:
    server, slept = Server(answer), []
    b = Bridge(Config(URL, "cairn_secret", bank), transport=httpx.MockTransport(server), sleep=slept.append, **kw)
    return b, server, slept


def serve(b: Bridge, *lines: str | bytes) -> list[dict]:
    stdin = io.BytesIO(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    out = io.BytesIO()
    assert b.serve(stdin, out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_each_message_is_posted_unchanged_with_the_token_and_bank():
    b, server, _ = make(result_for, bank="notes")
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "memory_save", "arguments": {"text": "Café au lait, no sugar."}}}
    line = json.dumps(message, ensure_ascii=False).encode()
    assert serve(b, line) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    [request] = server.seen
    assert str(request.url) == URL + "/mcp" and request.method == "POST"
    assert request.content == line  # the very bytes read
    h = request.headers
    assert h["authorization"] == "Bearer cairn_secret" and h["x-cairn-bank"] == "notes"
    assert h["content-type"] == "application/json"
    assert h["accept"] == "application/json, text/event-stream"


def test_initialize_negotiates_the_version_later_messages_carry():
    def answer(request):
        msg = json.loads(request.content)
        if msg.get("method") == "initialize":
            return result_for(request, {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "serverInfo": {"name": "cairn", "version": "1"}})
        return result_for(request)

    b, server, _ = make(answer)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    out = serve(b, json.dumps(init), '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
                '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')
    assert sorted(a["id"] for a in out) == [1, 2]  # the notification's 202 wrote nothing
    versions = {json.loads(r.content).get("method"): r.headers.get("mcp-protocol-version") for r in server.seen}
    assert versions == {"initialize": None, "notifications/initialized": "2025-06-18", "tools/list": "2025-06-18"}


def test_a_bad_line_is_a_parse_error_and_the_bridge_goes_on():
    b, _, _ = make(result_for)
    out = serve(b, "not json", b"\xff\xfe", "", '{"jsonrpc": "2.0", "id": 4, "method": "ping"}')
    errors = [a for a in out if "error" in a]
    assert [(a["id"], a["error"]["code"], a["error"]["data"]["code"]) for a in errors] == \
        [(None, -32700, "invalid_json")] * 2
    assert {"jsonrpc": "2.0", "id": 4, "result": {}} in out


def refusing(request: httpx.Request) -> httpx.Response:
    """What POST /mcp answers a body that is no JSON-RPC message: 400, a JSON-RPC error, id null."""
    msg = json.loads(request.content)
    if isinstance(msg, dict) and isinstance(msg.get("method"), str):
        return result_for(request)
    if isinstance(msg, dict) and ("result" in msg or "error" in msg):
        return httpx.Response(202)
    return httpx.Response(400, json={"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "The request body must be a JSON object.", "data": {"code": "validation_error"}}})


def test_every_line_that_may_be_a_request_is_answered_with_the_servers_verdict():
    b, server, _ = make(refusing)
    out = serve(b, '[{"jsonrpc":"2.0","id":11,"method":"ping"},{"jsonrpc":"2.0","id":12,"method":"tools/list"}]',
                '{"jsonrpc":"2.0","id":21,"method":5}', '{"jsonrpc":"2.0","id":"x22"}', "42",
                '{"jsonrpc":"2.0","id":[23],"method":null}',
                '{"jsonrpc":"2.0","method":"notifications/initialized"}', '{"jsonrpc":"2.0","id":25,"result":{}}',
                '{"jsonrpc":"2.0","id":99,"method":"ping"}')
    assert len(server.seen) == 8  # every JSON line goes to the server, which decides
    refused = [a for a in out if "error" in a]
    assert sorted(map(str, (a["id"] for a in refused))) == ["21", "None", "None", "None", "x22"]
    assert {a["error"]["code"] for a in refused} == {-32600}
    assert [a for a in out if "result" in a] == [{"jsonrpc": "2.0", "id": 99, "result": {}}]  # 202s wrote nothing


def test_a_line_too_deeply_nested_to_read_is_a_parse_error_and_the_bridge_goes_on():
    b, server, _ = make(result_for)
    deep = '{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":' + "[" * 100_000 + "]" * 100_000 + "}}"
    out = serve(b, deep, '{"jsonrpc": "2.0", "id": 4, "method": "ping"}')
    assert out[0]["id"] is None and out[0]["error"]["code"] == -32700
    assert out[0]["error"]["data"]["code"] == "invalid_json" and "nested" in out[0]["error"]["message"]
    assert out[1] == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert len(server.seen) == 1


def test_a_tool_call_whose_connection_breaks_after_sending_may_have_been_applied():
    def answer(request):
        if json.loads(request.content)["method"] == "tools/call":
            raise httpx.RemoteProtocolError("Server disconnected without sending a response")
        raise httpx.ReadError("Connection reset by peer")

    b, server, _ = make(answer)
    out = {a["id"]: a for a in serve(b, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "memory_save", "arguments": {"text": "x"}}}), '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')}
    assert out[1]["error"]["data"]["code"] == "backend_timeout"
    assert "may have been applied" in out[1]["error"]["message"]
    assert out[2]["error"]["data"]["code"] == "backend_timeout"
    assert [json.loads(r.content)["method"] for r in server.seen].count("tools/call") == 1  # never resent


def test_an_idempotent_method_is_retried_after_retry_after_and_a_tool_call_never():
    statuses = {"ping": [429, 503, 200], "tools/call": [503, 200]}

    def answer(request):
        msg = json.loads(request.content)
        status = statuses[msg["method"]].pop(0)
        if status != 200:
            return httpx.Response(status, headers={"Retry-After": "3"}, json={
                "jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "busy",
                                                        "data": {"code": "backend_unavailable"}}})
        return result_for(request)

    b, server, slept = make(answer)
    [pong] = serve(b, '{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    assert pong == {"jsonrpc": "2.0", "id": 1, "result": {}} and slept == [3.0, 3.0]
    [call] = serve(b, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                  "params": {"name": "memory_save", "arguments": {}}}))
    assert call["id"] == 2 and call["error"]["data"] == {"code": "backend_unavailable", "retry_after": 3.0}
    assert statuses["tools/call"] == [200]  # sent once
    assert len(server.seen) == 4


def test_a_ping_is_answered_while_a_tool_call_is_still_running():
    ping_done = threading.Event()

    def answer(request):
        msg = json.loads(request.content)
        if msg["method"] == "tools/call":
            # answered only once the ping overtook it: a bridge forwarding one at a time never does
            overtaken = ping_done.wait(timeout=30)
            return result_for(request, {"overtaken": overtaken})
        response = result_for(request)
        ping_done.set()
        return response

    b, _, _ = make(answer)
    out = serve(b, json.dumps({"jsonrpc": "2.0", "id": "call", "method": "tools/call",
                               "params": {"name": "memory_recall", "arguments": {}}}),
                '{"jsonrpc": "2.0", "id": "ping", "method": "ping"}')
    assert [a["id"] for a in out] == ["ping", "call"]
    assert out[1]["result"] == {"overtaken": True}


def test_a_failing_transport_answers_every_request_and_the_bridge_lives_on():
    def answer(request):
        if json.loads(request.content)["id"] == 1:
            raise httpx.ConnectError("Connection refused")
        raise RuntimeError("a bug in a transport")

    b, _, _ = make(answer)
    out = {a["id"]: a for a in serve(b, '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
                                     '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')}
    assert out[1]["error"]["data"]["code"] == "backend_unavailable"
    assert out[2]["error"]["data"]["code"] == "bridge_error"
