"""The local stack's patched ``chalice local`` server (infra/local/chalice_local.py): TCP_NODELAY,
one write per response, an access log without query strings, and Cairn's JSON errors for what
the server answers itself (unknown methods, paths no route matches)."""

from __future__ import annotations

import http.client
import json
import socket
import socketserver
import threading

import pytest
from chalice import Chalice
from chalice import local as chalice_local_mod
from chalice.config import Config

from infra.local.chalice_local import HTTPServer, create_local_server

SECRET = "Bearer cairn_secret_do_not_echo_0123456789"


def _nodelay(server_cls) -> int:
    server = server_cls(("127.0.0.1", 0), socketserver.BaseRequestHandler)
    try:
        with socket.create_connection(server.server_address):
            conn, _ = server.get_request()
            with conn:
                return conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        server.server_close()


def test_accepted_sockets_have_tcp_nodelay():
    assert _nodelay(HTTPServer) != 0
    assert _nodelay(chalice_local_mod.ThreadedHTTPServer) == 0  # what Chalice's own server does


@pytest.fixture
def served():
    """A tiny Chalice app behind the patched local server on a free port: yields the port."""
    app = Chalice("local-server-test")

    @app.route("/hello/{name}", methods=["GET", "POST"])
    def hello(name):
        return {"hello": name, "q": app.current_request.query_params}

    server = create_local_server(app, Config(), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server.server_address[1]
    finally:
        server.shutdown()
        server.server.server_close()


def _request(port, method, path, headers=None, conn=None):
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        if own:
            conn.close()


def test_keep_alive_connection_serves_several_requests(served):
    conn = http.client.HTTPConnection("127.0.0.1", served, timeout=10)
    try:
        for name in ("a", "b", "c"):
            status, headers, body = _request(served, "GET", f"/hello/{name}", conn=conn)
            assert status == 200 and json.loads(body)["hello"] == name
            assert int(headers["Content-Length"]) == len(body)
    finally:
        conn.close()


def test_access_log_drops_the_query_string(served, capsys):
    status, _, _ = _request(served, "GET", "/hello/x?query=my-secret-search-term&token=abc")
    assert status == 200
    err = capsys.readouterr().err
    assert '"GET /hello/x HTTP/1.1" 200' in err
    assert "my-secret-search-term" not in err and "token=abc" not in err


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "CONNECT", "BREW"])
def test_unknown_methods_get_a_json_405(served, method):
    status, headers, body = _request(served, method, "/hello/x", headers={"Authorization": SECRET})
    assert status == 405
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["code"] == "method_not_allowed" and set(json.loads(body)) == {"error", "code"}
    assert "GET" in headers["Allow"] and headers["X-Request-Id"]
    assert b"cairn_secret" not in body and b"<" not in body


def test_a_path_no_route_matches_gets_a_json_404_without_echoing_authorization(served):
    path = "/" + "/".join(f"s{i}" for i in range(12)) + "?q=1"
    status, headers, body = _request(served, "GET", path, headers={"Authorization": SECRET})
    assert status == 404
    assert headers["Content-Type"] == "application/json"
    data = json.loads(body)
    assert data["code"] == "not_found" and set(data) == {"error", "code"} and headers["X-Request-Id"]
    assert "cairn_secret" not in body.decode() and "cairn_secret" not in json.dumps(headers)


def test_a_malformed_request_line_gets_json_without_echoing_it(served):
    with socket.create_connection(("127.0.0.1", served), timeout=10) as s:
        s.sendall(b"GET /hello/x?secret=hunter2 BAD/1.1\r\n\r\n")
        raw = s.makefile("rb").read()
    body = raw.partition(b"\r\n\r\n")[2] if raw.startswith(b"HTTP/") else raw  # HTTP/0.9 style: body only
    assert json.loads(body)["code"] == "bad_request"
    assert b"hunter2" not in raw
