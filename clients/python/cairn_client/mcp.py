"""``cairn-mcp``: the Model Context Protocol over stdio for desktop agents (Claude Desktop, Cursor,
Claude Code), bridged to a Cairn deployment's ``POST /mcp``.

    CAIRN_URL=https://cairn.example CAIRN_TOKEN=cairn_... [CAIRN_BANK=notes] cairn-mcp
    python -m cairn_client.mcp   # the same

It reads newline-delimited JSON-RPC messages on stdin and POSTs each, unchanged, to
``$CAIRN_URL/mcp`` (bearer token; ``CAIRN_BANK`` as ``X-Cairn-Bank``, the connection's default
bank), writing each JSON answer as one line on stdout; a notification's 202 writes nothing. The
bridge knows no tool: names, schemas and annotations come from the server, and so does the verdict
on a line that is JSON but no valid request (a batch, ``42``, an object without a method): the
server's JSON-RPC error is written, with the line's id when it had one.

Messages are forwarded concurrently (a ping may overtake a running tool call); every line that may
be a request gets exactly one answer line, a JSON-RPC error when Cairn cannot be reached or answers
something that is not JSON-RPC (``error.data.code``: ``backend_unavailable``, ``backend_timeout``,
``http_error``, ``bridge_error``), and a line that is not JSON (or too deeply nested to read)
-32700 ``invalid_json``. Logs go to stderr only: stdout is the protocol. End of stdin: the answers
in flight are written, then the process exits 0. Missing or unusable settings: a message on
stderr, exit 2, stdin unread.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any

import httpx

from ._core import RetryPolicy, header_token_problem, retry_after

log = logging.getLogger("cairn_client.mcp")

ENV_URL, ENV_TOKEN, ENV_BANK = "CAIRN_URL", "CAIRN_TOKEN", "CAIRN_BANK"
USER_AGENT = "cairn-mcp/0.1 (cairn-client-python)"

# JSON-RPC codes
PARSE_ERROR = -32700
INTERNAL_ERROR = -32603

# the per-request era (2026-07-28) names a request's version in params._meta under this key
VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
# methods whose params member the Mcp-Name header repeats
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
# a repeat answers the same and changes nothing: retried after 429/503 or a dropped connection
IDEMPOTENT_METHODS = frozenset({"initialize", "ping", "server/discover", "tools/list"})
RETRY_STATUSES = frozenset({429, 503})
MAX_TIMEOUT_S = 86400.0
_HEADER_SAFE = re.compile(r"^[\x20-\x7E]*$")
# errors raised before any byte of the request went out: the server cannot have applied it
_NOTHING_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol,
                 httpx.ProxyError)
_B64_SENTINEL = re.compile(r"^=\?base64\?.*\?=$")

Message = dict[str, Any]


class ConfigError(Exception):
    """A setting is missing or unusable (the message says which and how to set it)."""


def positive_seconds(text: str) -> float:
    """``--timeout``'s value: seconds, above 0 and at most ``MAX_TIMEOUT_S`` (a socket cannot wait
    much longer); raises ``argparse.ArgumentTypeError``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_TIMEOUT_S:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}, "
                                         f"got {text[:50]!r}")
    return value


@dataclass(frozen=True)
class Config:
    """``url`` (the deployment's base URL, no trailing slash), ``token`` (a bearer token) and
    ``bank`` (the default bank sent as ``X-Cairn-Bank``, or None)."""

    url: str
    token: str
    bank: str | None = None

    @property
    def endpoint(self) -> str:
        return self.url + "/mcp"

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Config:
        """Read ``CAIRN_URL``, ``CAIRN_TOKEN`` and ``CAIRN_BANK``; raises ``ConfigError``."""
        url = (environ.get(ENV_URL) or "").strip().rstrip("/")
        token = (environ.get(ENV_TOKEN) or "").strip()
        missing = [name for name, value in ((ENV_URL, url), (ENV_TOKEN, token)) if not value]
        if missing:
            raise ConfigError(f"set {' and '.join(missing)} in the environment (CAIRN_URL: the Cairn API's base URL, "
                              "e.g. https://cairn.example.com; CAIRN_TOKEN: a bearer token; CAIRN_BANK optional: "
                              "the default bank)")
        if not re.match(r"^https?://[^/\s]+", url):
            raise ConfigError(f"{ENV_URL} must be an http:// or https:// URL, got {url[:200]!r}")
        bank = (environ.get(ENV_BANK) or "").strip() or None
        # both travel in HTTP headers: refused here rather than failing every request later
        for name, value in ((ENV_TOKEN, token), (ENV_BANK, bank)):
            problem = header_token_problem(value) if value is not None else None
            if problem is not None:
                raise ConfigError(f"{name} {problem}; check the value you set")
        return cls(url, token, bank)


# --- pure parts: headers and answers ---------------------------------------------------------

def encode_header_value(value: str) -> str:
    """``value`` as an HTTP header value: printable ASCII without edge whitespace verbatim, else
    ``=?base64?<UTF-8 bytes, base64>?=`` (the MCP transport's encoding)."""
    if _HEADER_SAFE.match(value) and value == value.strip() and not _B64_SENTINEL.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def protocol_headers(message: Any, negotiated: str | None) -> dict[str, str]:
    """The MCP headers of one message's POST. A per-request-era message (its ``params._meta``
    names the protocol version) gets ``MCP-Protocol-Version`` (that version), ``Mcp-Method`` and,
    for a name-bearing method (``tools/call``...), ``Mcp-Name``; any other message but
    ``initialize`` gets the version an ``initialize`` negotiated (``negotiated``), when one did."""
    if not isinstance(message, dict):
        return {}
    method = message.get("method")
    params = _object(message.get("params"))
    meta = _object(params.get("_meta"))
    version = meta.get(VERSION_META_KEY)
    if isinstance(version, str):
        headers = {"MCP-Protocol-Version": encode_header_value(version)}
        if isinstance(method, str):
            headers["Mcp-Method"] = encode_header_value(method)
            key = NAME_BEARING.get(method)
            if key is not None and isinstance(params.get(key), str):
                headers["Mcp-Name"] = encode_header_value(params[key])
        return headers
    if negotiated is not None and method != "initialize":
        return {"MCP-Protocol-Version": negotiated}
    return {}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def is_one_way(message: Any) -> bool:
    """True for a notification (an object with a string ``method`` and no ``id``) or a response
    (an object with ``result`` or ``error`` and no ``method``): the server answers them 202 and
    nothing is written. Any other JSON value may be a request and is always answered."""
    if not isinstance(message, dict):
        return False
    if "method" in message:
        return isinstance(message["method"], str) and "id" not in message
    return "result" in message or "error" in message


def request_id_of(message: Any) -> Any:
    """The id an answer to ``message`` carries: its ``id`` when that is a string or a number, else
    None (a batch, a non-object, a missing or malformed id)."""
    if isinstance(message, dict) and not is_one_way(message):
        rid = message.get("id")
        if isinstance(rid, str | int | float) and not isinstance(rid, bool):
            return rid
    return None


def error_answer(request_id: Any, rpc_code: int, message: str, code: str, **data: Any) -> Message:
    """A JSON-RPC error response with the stable ``code`` (and ``data``) in ``error.data``."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": rpc_code, "message": message,
                                                           "data": {"code": code, **data}}}


def unreachable(request_id: Any, url: str, exc: Exception) -> Message:
    """The answer to a request whose POST got no HTTP answer: ``backend_unavailable`` when the
    connection failed before anything was sent, else ``backend_timeout``: the request went out and
    no answer came (too slow, or the connection reset or broke), so a tool call may have been applied."""
    if not isinstance(exc, _NOTHING_SENT):
        what = "did not answer in time" if isinstance(exc, httpx.TimeoutException) else "dropped the connection"
        return error_answer(request_id, INTERNAL_ERROR,
                            f"Cairn at {url} (CAIRN_URL) {what} after the request was sent "
                            f"({type(exc).__name__}: {exc}); a tool call may have been applied.", "backend_timeout",
                            url=url)
    return error_answer(request_id, INTERNAL_ERROR,
                        f"Cannot reach Cairn at {url} (CAIRN_URL): {exc or type(exc).__name__}. Check the URL and "
                        "that the service is running.", "backend_unavailable", url=url)


def _sse_messages(text: str) -> list[Any]:
    """The JSON data of each event of a ``text/event-stream`` body (events without data skipped)."""
    out: list[Any] = []
    data: list[str] = []
    for line in [*text.splitlines(), ""]:
        if not line:
            if data:
                out.append(json.loads("\n".join(data)))
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return out


def http_answers(request_id: Any, status: int, content_type: str, content: bytes,
                 retry_after_s: float | None = None, *, one_way: bool = False) -> list[Message]:
    """The lines to write for one POST's HTTP answer to a message with ``request_id``
    (``request_id_of``; None when the line had none). ``one_way`` (a notification or a response,
    ``is_one_way``): only a 2xx body's messages, nothing for an error status (logged). Otherwise:

    - 2xx with a JSON (or event-stream) body: its message(s), as they are; with an id but without
      the response to it (a 202, say), an ``http_error`` too: a request is always answered. A line
      without an id answered 202 writes nothing.
    - an error status whose body is a JSON-RPC error: that error, with ``request_id`` when its id
      is null (the server could not read it, e.g. a 401 or a batch); ``data.retry_after``
      (seconds) from a ``Retry-After``.
    - anything else: a JSON-RPC error (-32603, ``data.code`` ``http_error``, ``data.status``).
    """
    ctype = content_type.split(";")[0].strip().lower()
    messages: list[Any] | None = None
    try:
        if ctype == "text/event-stream":
            messages = _sse_messages(content.decode("utf-8"))
        elif content.strip():
            messages = [json.loads(content)]
        else:
            messages = []
    except (ValueError, UnicodeDecodeError):
        messages = None
    if one_way:
        if status >= 300:
            log.warning("Cairn answered a notification with HTTP %s: %s", status, content[:500])
        return [m for m in messages or [] if isinstance(m, dict)] if status < 300 else []
    if 200 <= status < 300 and messages is not None:
        found = [_with_id(m, request_id, None) for m in messages if isinstance(m, dict)]
        if request_id is None or any(m.get("id") == request_id for m in found):
            return found
        return [*found, error_answer(request_id, INTERNAL_ERROR, f"Cairn answered HTTP {status} without a "
                                     "response to this request.", "http_error", status=status)]
    if messages and isinstance(messages[0], dict) and isinstance(messages[0].get("error"), dict):
        return [_with_id(messages[0], request_id, retry_after_s)]
    snippet = content[:200].decode("utf-8", "replace").strip()
    detail = f": {snippet}" if snippet else ""
    return [error_answer(request_id, INTERNAL_ERROR, f"Cairn answered HTTP {status} without a JSON-RPC message"
                         f"{detail}", "http_error", status=status)]


def _with_id(answer: Any, request_id: Any, retry_after_s: float | None) -> Any:
    """An error ``answer`` with ``request_id`` when its id is null, and ``data.retry_after``."""
    if not (isinstance(answer, dict) and isinstance(answer.get("error"), dict)):
        return answer
    answer = dict(answer)
    if answer.get("id") is None:
        answer["id"] = request_id
    data = answer["error"].get("data")
    if retry_after_s is not None and isinstance(data, dict) and "retry_after" not in data:
        answer["error"] = {**answer["error"], "data": {**data, "retry_after": retry_after_s}}
    return answer


def negotiated_version(message: Any, answers: Iterable[Message]) -> str | None:
    """The protocol version an ``initialize`` request's answer agreed, or None."""
    if not (isinstance(message, dict) and message.get("method") == "initialize"):
        return None
    for answer in answers:
        result = answer.get("result") if isinstance(answer, dict) else None
        if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
            return str(result["protocolVersion"])
    return None


# --- the bridge ------------------------------------------------------------------------------

class Bridge:
    """Forwards messages to ``config.endpoint`` over one keep-alive ``httpx.Client``.
    ``transport`` (an ``httpx`` transport) replaces the network in tests; ``timeout`` is per POST,
    seconds; ``retry`` bounds the retries of idempotent methods; ``workers`` messages run at once."""

    def __init__(self, config: Config, *, timeout: float = 120.0, retry: RetryPolicy | None = None,
                 transport: httpx.BaseTransport | None = None, workers: int = 8,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self.retry = retry or RetryPolicy(max_retries=2, max_retry_after=30.0)
        self.workers, self.sleep = workers, sleep
        headers = {"Authorization": f"Bearer {config.token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", "User-Agent": USER_AGENT}
        if config.bank:
            headers["X-Cairn-Bank"] = config.bank
        self.http = httpx.Client(headers=headers, transport=transport,
                                 timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)))
        self.negotiated: str | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Bridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def forward(self, message: Any, raw: bytes | None = None) -> list[Message]:
        """POST ``message`` (a decoded JSON value; ``raw``, the bytes it was read from, are sent
        when given) and return the lines to write; never raises."""
        request_id = request_id_of(message)
        try:
            answers = self._post(message, raw, request_id)
        except Exception as exc:  # a request is always answered; the bridge lives on
            log.exception("forwarding failed")
            if is_one_way(message):
                return []
            return [error_answer(request_id, INTERNAL_ERROR, f"cairn-mcp failed to forward the message: {exc!r}",
                                 "bridge_error")]
        version = negotiated_version(message, answers)
        if version is not None:
            self.negotiated = version
        return answers

    def _post(self, message: Any, raw: bytes | None, request_id: Any) -> list[Message]:
        method = message.get("method") if isinstance(message, dict) else None
        retries = self.retry.max_retries if method in IDEMPOTENT_METHODS else 0
        body = raw if raw is not None else json.dumps(message, ensure_ascii=False).encode("utf-8")
        headers = protocol_headers(message, self.negotiated)
        one_way = is_one_way(message)
        attempt = 0
        while True:
            try:
                response = self.http.post(self.config.endpoint, content=body, headers=headers)
            except httpx.RemoteProtocolError as exc:  # a keep-alive connection the server had closed
                if attempt < retries:
                    self.sleep(self.retry.delay(attempt, None))
                    attempt += 1
                    continue
                return [] if one_way else [unreachable(request_id, self.config.url, exc)]
            except httpx.TransportError as exc:
                log.warning("cannot reach %s: %s", self.config.endpoint, exc)
                return [] if one_way else [unreachable(request_id, self.config.url, exc)]
            if response.status_code in RETRY_STATUSES and attempt < retries:
                self.sleep(self.retry.delay(attempt, response))
                attempt += 1
                continue
            return http_answers(request_id, response.status_code, response.headers.get("content-type", ""),
                                response.content, retry_after(response), one_way=one_way)

    def serve(self, stdin: IO[bytes], stdout: IO[bytes]) -> int:
        """Forward every line of ``stdin`` until its end, writing answers to ``stdout``; 0 once
        every answer in flight is written."""

        def write(answers: list[Message]) -> None:
            if not answers:
                return
            data = b"".join(json.dumps(a, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
                            for a in answers)
            with self._lock:
                stdout.write(data)
                stdout.flush()

        def handle(message: Any, raw: bytes) -> None:
            try:
                write(self.forward(message, raw))
            except Exception:  # a closed stdout must not kill the reader
                log.exception("cannot write an answer")

        def refuse(exc: BaseException) -> None:
            reason = "is nested too deeply to read" if isinstance(exc, RecursionError) else f"is not JSON: {exc}"
            try:
                write([error_answer(None, PARSE_ERROR, f"The line {reason}.", "invalid_json")])
            except Exception:
                log.exception("cannot write an answer")

        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="cairn-mcp") as pool:
            for raw in stdin:
                line = raw.strip()
                if not line:
                    continue
                try:
                    message = json.loads(line.decode("utf-8"))
                except Exception as exc:  # noqa: BLE001 - RecursionError too: no line may end the bridge
                    refuse(exc)
                    continue
                if isinstance(message, dict) and message.get("method") == "initialize" and not is_one_way(message):
                    handle(message, line)  # what follows may depend on the version it negotiates
                else:
                    pool.submit(handle, message, line)
        return 0


def main(argv: list[str] | None = None) -> int:
    """The ``cairn-mcp`` command: 0 at the end of stdin, 2 when a setting is missing or unusable
    (argparse's own exit 2 for a bad ``--timeout``)."""
    parser = argparse.ArgumentParser(
        prog="cairn-mcp", description="MCP over stdio, forwarded to a Cairn deployment's /mcp endpoint. "
        "Settings: CAIRN_URL (the API's base URL), CAIRN_TOKEN (a bearer token), CAIRN_BANK (optional default bank).")
    parser.add_argument("--timeout", type=positive_seconds, default=120.0,
                        help="seconds to wait for one answer (default 120)")
    args = parser.parse_args(argv)
    level = logging.getLevelName(os.environ.get("CAIRN_MCP_LOG_LEVEL", "WARNING").upper())
    logging.basicConfig(stream=sys.stderr, level=level if isinstance(level, int) else logging.WARNING,
                        format="cairn-mcp %(levelname)s %(message)s")
    try:
        config = Config.from_env(os.environ)
    except ConfigError as exc:
        print(f"cairn-mcp: {exc}", file=sys.stderr)
        return 2
    with Bridge(config, timeout=args.timeout) as bridge:
        try:
            return bridge.serve(sys.stdin.buffer, sys.stdout.buffer)
        except KeyboardInterrupt:
            return 130


if __name__ == "__main__":
    sys.exit(main())
