"""``chalice local`` fit for the local stack: ``python -m infra.local.chalice_local local --host ...
--port ... --stage local --no-autoreload`` (the ``chalice`` CLI's own arguments).

It runs Chalice's CLI unchanged with its local server patched (``install()``):

- listen backlog 128 (socketserver's 5 resets connections when 20 clients connect at once);
- TCP_NODELAY on every accepted socket, and each response written in one piece: Chalice writes
  the headers and the body separately, and with Nagle's algorithm on the body waited for the
  client's delayed ACK, about 40 ms per request on a keep-alive connection;
- the access log line without the query string (a search term or a secret in it would be kept);
- the errors the server answers itself are Cairn's ``{error, code}`` JSON, never HTML or an
  echoed header: an unsupported method (TRACE, PROPFIND, ...) 405 ``method_not_allowed``; a path
  no route matches (deeper than the app's catch-all routes) 404 ``not_found``, where Chalice
  answered 403 quoting the Authorization header; a malformed request its 4xx/5xx status; each
  with an ``X-Request-Id`` as the app's own answers have;
- with ``CAIRN_CONTRACT_LOG`` set (the test mode), every response is checked against the OpenAPI
  document and each violation appended to that file (``infra.local.contract``);
- the process dies with the launcher (``PR_SET_PDEATHSIG`` on Linux, a watchdog thread elsewhere)
  when ``CAIRN_LOCAL_PARENT_PID`` names it, and SIGTERM exits through ``sys.exit`` so atexit
  handlers run (the private index directory is removed).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from chalice import local

from chalicelib.errors import CairnError, MethodNotAllowed, NotFound

from .contract import ContractLog, from_environment

BACKLOG = 128
WRITE_BUFFER = 64 * 1024
PARENT_PID_ENV = "CAIRN_LOCAL_PARENT_PID"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_PR_SET_PDEATHSIG = 1
# http.server's own error statuses -> Cairn code and message (501, no such method, becomes a 405).
# Its messages are not used: they quote the request line, query string included.
_ERRORS = {400: ("bad_request", "The request is malformed."),
           408: ("request_timeout", "The request was not received in time."),
           414: ("uri_too_long", "The request line is too long."),
           431: ("headers_too_large", "The request headers are too large."),
           505: ("http_version_not_supported", "The HTTP version is not supported.")}


def _path_only(target: str) -> str:
    """A request target without its query string or fragment."""
    return urlsplit(target).path if target else target


_CONTRACT: ContractLog | None = None


class NoRoute(Exception):
    """No route of the app matches the request's path."""


class Gateway(local.LocalGateway):
    """Chalice's local API Gateway, answering an unmatched path with Cairn's JSON 404."""

    def _generate_lambda_event(self, method: str, path: str, headers: Any, body: Any) -> Any:
        try:
            return super()._generate_lambda_event(method, path, headers, body)
        except ValueError:
            raise NoRoute(path) from None

    def handle_request(self, method: str, path: str, headers: Any, body: Any) -> Any:
        response = self._answer(method, path, headers, body)
        if _CONTRACT is not None:
            _CONTRACT.record(method, _path_only(path), response["statusCode"], response.get("headers") or {},
                             response.get("body") or b"")
        return response

    def _answer(self, method: str, path: str, headers: Any, body: Any) -> Any:
        try:
            return super().handle_request(method, path, headers, body)
        except NoRoute:
            err = NotFound(f"No route for {method} {_path_only(path)[:200]}.", code="not_found")
            return {"statusCode": err.status,
                    "headers": {"Content-Type": "application/json", "X-Request-Id": uuid.uuid4().hex},
                    "multiValueHeaders": {}, "body": json.dumps(err.body(), ensure_ascii=False, separators=(",", ":"))}


class RequestHandler(local.ChaliceRequestHandler):
    """Chalice's request handler with a buffered writer (one write per response), JSON errors
    and an access log without query strings."""

    wbufsize = WRITE_BUFFER  # handle_one_request flushes once, after the whole response

    def __init__(self, request: Any, client_address: Any, server: Any, app_object: Any, config: Any) -> None:
        # what ChaliceRequestHandler.__init__ does, with this module's gateway
        self.local_gateway = Gateway(app_object, config)
        BaseHTTPRequestHandler.__init__(self, request, client_address, server)

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        line = f"{self.command} {_path_only(self.path)} {self.request_version}" if self.command else "-"
        self.log_message('"%s" %s %s', line, getattr(code, "value", code), size)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if code == 501:  # http.server: no do_<METHOD> for this method
            err: CairnError = MethodNotAllowed(
                f"Method {str(self.command)[:32]} is not supported; use one of {', '.join(METHODS)}.",
                headers={"Allow": ", ".join(METHODS)})
        else:
            name, text = _ERRORS.get(code, ("bad_request", "The request is malformed.") if code < 500
                                     else ("internal_error", "The server could not handle the request."))
            err = CairnError(text, code=name, status=code)
        body = json.dumps(err.body(), ensure_ascii=False, separators=(",", ":")).encode()
        self.log_error("code %d, message %s", err.status, err.code)
        self.send_response(err.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-Id", uuid.uuid4().hex)
        for name, value in err.headers.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()


class HTTPServer(local.ThreadedHTTPServer):
    """Chalice's threaded server with a listen backlog of 128 and TCP_NODELAY on accepted sockets."""

    request_queue_size = BACKLOG

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr


def create_local_server(app_obj: Any, config: Any, host: str, port: int) -> local.LocalDevServer:
    """``chalice.local.create_local_server`` with this module's handler and server classes."""
    local.CustomLocalChalice.__bases__ = (local.LocalChalice, app_obj.__class__)
    app_obj.__class__ = local.CustomLocalChalice
    return local.LocalDevServer(app_obj, config, host, port, handler_cls=RequestHandler, server_cls=HTTPServer)


def die_with_parent(parent_pid: int) -> None:
    """End this process when ``parent_pid`` (the launcher) ends, even by SIGKILL. Linux sends
    the signal when the *thread* that started this process ends: the launcher starts it from its
    main thread."""
    libc_name = ctypes.util.find_library("c")
    prctl = getattr(ctypes.CDLL(libc_name, use_errno=True), "prctl", None) if libc_name else None
    if prctl is not None and prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)
        return

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="cairn-parent-watch", daemon=True).start()


def install() -> None:
    """Patch ``chalice.local`` so the CLI's ``local`` command builds the server above."""
    local.create_local_server = create_local_server


def main() -> int:
    """Run Chalice's CLI with the patches; SIGTERM exits cleanly."""
    from chalice.cli import main as chalice_main

    parent = os.environ.get(PARENT_PID_ENV)
    if parent:
        die_with_parent(int(parent))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    install()
    global _CONTRACT
    _CONTRACT = from_environment()
    sys.argv[0] = "chalice"
    return chalice_main()


if __name__ == "__main__":
    sys.exit(main())
