"""One Model Context Protocol exchange over streamable HTTP, stateless, with JSON responses: a
POST carries one JSON-RPC message and gets one JSON answer (a notification or a client's response
gets 202 and no body). No session is kept, so a deployed Lambda is an MCP server as it is.

Both eras of the protocol are spoken, parsed and serialised with the SDK's own types
(``mcp_types``):

- handshake era (2024-11-05 .. 2025-11-25): ``initialize`` negotiates a version (the client's when
  we know it, else our newest) and later requests may carry it in ``MCP-Protocol-Version`` (absent,
  it is 2025-03-26, as the transport specification says); ``ping``, ``tools/list``, ``tools/call``.
  Errors of a parsed request answer HTTP 200 with the JSON-RPC error, as clients of this era expect.
- per-request era (2026-07-28): a request whose ``MCP-Protocol-Version`` header is not a handshake
  version carries its version and client capabilities in ``params._meta``, and its
  ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers must agree with the body
  (``HEADER_MISMATCH``); ``server/discover``, ``tools/list``, ``tools/call``. Errors answer the
  status the specification maps their code to (400, 404).

The tools themselves are the ``Toolbox``'s (``chalicelib.api.mcp_tools``); this module knows no
tool. A tool's failure is a result with ``isError``, never a protocol error.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp_types import methods
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)
from pydantic import ValidationError

from .. import patterns
from . import mcp_wire as wire

DEFAULT_VERSION = types.DEFAULT_NEGOTIATED_VERSION  # a handshake-era request without the header
SUPPORTED_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
_B64_SENTINEL = patterns.compile(r"=\?base64\?(.*)\?=")
NAME_BEARING = {"tools/call": "name"}  # of the methods served, those whose name a header repeats
SERVED = frozenset({"initialize", "ping", "server/discover", "tools/list", "tools/call"})
MODERN_STATUS = {wire.PARSE_ERROR: 400, wire.INVALID_REQUEST: 400, wire.INVALID_PARAMS: 400,
                 wire.HEADER_MISMATCH: 400, wire.UNSUPPORTED_PROTOCOL_VERSION: 400, wire.METHOD_NOT_FOUND: 404}


@dataclass(frozen=True)
class Server:
    """What ``initialize`` and ``server/discover`` say of the server."""

    name: str
    version: str
    instructions: str


@dataclass(frozen=True)
class Answer:
    """The HTTP answer to one POST: ``status`` and a JSON ``body`` (None: no body)."""

    status: int
    body: dict[str, Any] | None


class Toolbox(Protocol):
    """The tools a caller may use (``chalicelib.api.mcp_tools.Toolbox``)."""

    def listed(self) -> list[dict[str, Any]]:
        """The caller's tools as wire-shaped ``Tool`` objects (camelCase keys)."""
        ...

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """Run tool ``name``: a wire-shaped ``CallToolResult``, or None when no tool has that name."""
        ...


class RpcError(Exception):
    """A protocol error: JSON-RPC ``rpc_code``, ``message``, the stable ``code`` for ``data.code``
    and ``extra`` keys of ``data``."""

    def __init__(self, rpc_code: int, message: str, code: str, **extra: Any) -> None:
        super().__init__(message)
        self.rpc_code, self.message, self.code, self.extra = rpc_code, message, code, extra


def handle(data: Any, headers: Mapping[str, str], toolbox: Toolbox, server: Server) -> Answer:
    """Answer one POSTed message: ``data``, the body as JSON (the request pipeline decoded it under
    the edge rules; a body that is not JSON never gets here). ``headers`` have lowercase names.
    Never raises for anything a client sends: a batch or a non-message is ``INVALID_REQUEST``
    (400), an unknown method ``METHOD_NOT_FOUND``, bad params ``INVALID_PARAMS``."""
    request_id: Any = None
    modern = False
    try:
        message = _message(data)
        request_id = getattr(message, "id", None)
        if not isinstance(message, types.JSONRPCRequest):
            return Answer(202, None)  # a notification, or a response to a request we never send
        header = headers.get(VERSION_HEADER)
        modern = header is not None and header not in HANDSHAKE_PROTOCOL_VERSIONS
        if header is not None and modern:
            version = _modern_version(message, header, headers)
        else:
            version = _handshake_version(message, header)
        result = _dispatch(message, version, modern, toolbox, server)
        if modern:
            meta = dict(result.get("_meta") or {})
            meta[types.SERVER_INFO_META_KEY] = {"name": server.name, "version": server.version}
            result["_meta"] = meta
        return Answer(200, {"jsonrpc": "2.0", "id": message.id, "result": result})
    except RpcError as err:
        status = MODERN_STATUS.get(err.rpc_code, 200) if modern else _handshake_status(err.rpc_code)
        return Answer(status, wire.error_object(err.rpc_code, err.message, err.code, request_id=request_id,
                                                **err.extra))


def _handshake_status(rpc_code: int) -> int:
    # what cannot be read as a request is refused at the HTTP level; a parsed request's error is its answer
    return 400 if rpc_code in (wire.PARSE_ERROR, wire.INVALID_REQUEST, wire.UNSUPPORTED_PROTOCOL_VERSION) else 200


def _message(data: Any) -> types.JSONRPCMessage:
    if isinstance(data, list):
        raise RpcError(wire.INVALID_REQUEST, "Batches are not supported: send one JSON-RPC message per request.",
                       "invalid_request")
    if isinstance(data, dict) and "method" in data and ("result" in data or "error" in data):
        # a response never runs: read as a request, a client's answer could call a tool
        raise RpcError(wire.INVALID_REQUEST, "A message is a request (method) or a response (result, error), "
                       "never both; a response is not executed.", "invalid_request")
    if isinstance(data, dict) and "method" in data and "id" in data and data["id"] is None:
        # not a notification: a request whose id is null, which MCP forbids (it could not be answered)
        raise RpcError(wire.INVALID_REQUEST, "A request's id must be a string or an integer, not null.",
                       "invalid_request")
    try:
        return types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError:
        raise RpcError(wire.INVALID_REQUEST, "The body is not a JSON-RPC 2.0 message (jsonrpc, id, method, params).",
                       "invalid_request") from None


def _handshake_version(message: types.JSONRPCRequest, header: str | None) -> str:
    """The version of a handshake-era request: the one ``initialize`` negotiates (the client's
    when it is a handshake version we speak), else the header's, else the transport's default."""
    if message.method == "initialize" and header is None:
        offered = (message.params or {}).get("protocolVersion")
        return offered if offered in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    return header or DEFAULT_VERSION


def _modern_version(message: types.JSONRPCRequest, header: str, headers: Mapping[str, str]) -> str:
    """The version of a per-request-era request, once its envelope and headers agree."""
    meta = (message.params or {}).get("_meta")
    if not isinstance(meta, dict) or types.PROTOCOL_VERSION_META_KEY not in meta \
            or types.CLIENT_CAPABILITIES_META_KEY not in meta:
        if header not in MODERN_PROTOCOL_VERSIONS:
            raise _unsupported(header)
        raise RpcError(wire.INVALID_PARAMS, "params._meta must carry the protocol version and the client "
                       "capabilities.", "validation_error")
    if meta[types.PROTOCOL_VERSION_META_KEY] != header:
        raise RpcError(wire.HEADER_MISMATCH, "The MCP-Protocol-Version header does not match params._meta.",
                       "header_mismatch")
    if headers.get(METHOD_HEADER) != message.method:
        raise RpcError(wire.HEADER_MISMATCH, "The Mcp-Method header does not match the method.", "header_mismatch")
    key = NAME_BEARING.get(message.method)
    named = (message.params or {}).get(key) if key else None
    if named is not None and _decoded_header(headers.get(NAME_HEADER)) != named:
        raise RpcError(wire.HEADER_MISMATCH, f"The Mcp-Name header does not match params.{key}.", "header_mismatch")
    if header not in MODERN_PROTOCOL_VERSIONS:
        raise _unsupported(header)
    return header


def _decoded_header(value: str | None) -> str | None:
    """A name header as the client meant it: clients send a value that is not plain printable
    ASCII as ``=?base64?<UTF-8, canonical base64>?=``; a malformed one is None (it matches nothing)."""
    match = _B64_SENTINEL.fullmatch(value or "")
    if match is None:
        return value
    try:
        raw = base64.b64decode(match.group(1), validate=True)
        if base64.b64encode(raw).decode("ascii") != match.group(1):
            return None
        return raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _unsupported(requested: str) -> RpcError:
    return RpcError(wire.UNSUPPORTED_PROTOCOL_VERSION, f"Protocol version {requested!r} is not supported.",
                    "unsupported_protocol_version", supported=list(SUPPORTED_VERSIONS), requested=requested)


def _dispatch(message: types.JSONRPCRequest, version: str, modern: bool, toolbox: Toolbox,
              server: Server) -> dict[str, Any]:
    method = message.method
    try:
        request = methods.parse_client_request(method, version, message.params)
    except KeyError:
        raise RpcError(wire.METHOD_NOT_FOUND, f"Method {method!r} does not exist in protocol version {version}.",
                       "method_not_found") from None
    except ValidationError as exc:
        raise RpcError(wire.INVALID_PARAMS, f"Invalid params of {method}: {_first_error(exc)}",
                       "validation_error") from None
    if method not in SERVED:
        raise RpcError(wire.METHOD_NOT_FOUND, f"This server does not offer {method}.", "method_not_found")
    capabilities = types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False))
    result: types.Result
    if isinstance(request, types.InitializeRequest):
        result = types.InitializeResult(protocol_version=version, capabilities=capabilities,
                                        server_info=types.Implementation(name=server.name, version=server.version),
                                        instructions=server.instructions)
    elif isinstance(request, types.DiscoverRequest):
        result = types.DiscoverResult(supported_versions=list(SUPPORTED_VERSIONS), capabilities=capabilities,
                                      instructions=server.instructions)
    elif isinstance(request, types.PingRequest):
        result = types.EmptyResult()
    elif isinstance(request, types.ListToolsRequest):
        result = types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in toolbox.listed()])
    elif isinstance(request, types.CallToolRequest):
        called = toolbox.call(request.params.name, request.params.arguments or {})
        if called is None:
            raise RpcError(wire.INVALID_PARAMS, f"Unknown tool: {request.params.name}.", "unknown_tool")
        result = types.CallToolResult.model_validate(called)
    else:  # pragma: no cover - SERVED and the branches above name the same methods
        raise RpcError(wire.METHOD_NOT_FOUND, f"This server does not offer {method}.", "method_not_found")
    if modern and isinstance(result, types.EmptyResult):
        result.result_type = "complete"
    # as ``version``'s schema shapes the result of ``method``: fields it lacks are dropped
    return methods.serialize_server_result(method, version,
                                           result.model_dump(by_alias=True, mode="json", exclude_none=True))


def _first_error(exc: ValidationError) -> str:
    errs = exc.errors()
    if not errs:
        return "invalid"
    loc = ".".join(str(p) for p in errs[0].get("loc", ()))
    return f"{loc}: {errs[0].get('msg')}" if loc else str(errs[0].get("msg"))
