"""JSON-RPC 2.0 error objects as ``/mcp`` answers them, light enough for the request pipeline to
import (``mcp_types``, which ``mcp_protocol`` parses with, takes most of a second to import, so only an
MCP request pays for it).

An error object is ``{"jsonrpc": "2.0", "id": <request id or null>, "error": {"code": <JSON-RPC
code>, "message": <a sentence>, "data": {"code": <stable code of chalicelib.errors.CODES>,
"details"?: {...}}}}``: the JSON-RPC code says what kind of failure it is, ``data.code`` which one.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import CairnError

# JSON-RPC 2.0 and MCP error codes (equal to mcp_types.jsonrpc's: a unit test compares them)
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
UNSUPPORTED_PROTOCOL_VERSION = -32022


def error_object(rpc_code: int, message: str, code: str, details: dict[str, Any] | None = None,
                 request_id: Any = None, **extra: Any) -> dict[str, Any]:
    """A JSON-RPC error response: ``rpc_code`` (a JSON-RPC code above), ``message``, the stable
    ``code`` and optional ``details`` in ``data`` (with ``extra`` keys a protocol error defines,
    such as ``supported`` of an unsupported version); ``request_id`` None renders ``"id": null``."""
    data: dict[str, Any] = {"code": code, **extra}
    if details:
        data["details"] = details
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": rpc_code, "message": message, "data": data}}


def request_id_of(raw: bytes) -> int | str | None:
    """The ``id`` of the JSON-RPC request in ``raw`` when it can be read at all (the edge rules
    refused the body, so it is read leniently here, for nothing but the id), else None."""
    if not raw or len(raw) > 1_000_000:
        return None
    try:
        data = json.loads(raw)
    except Exception:  # noqa: BLE001 - any unreadable body (bad UTF-8, too deep) simply has no id
        return None
    found = data.get("id") if isinstance(data, dict) else None
    if isinstance(found, int) and not isinstance(found, bool):
        return found if abs(found) < 2**53 else None
    return found if isinstance(found, str) and found.isprintable() and len(found) <= 256 else None


def from_cairn(err: CairnError, request_id: Any = None) -> dict[str, Any]:
    """``err`` as a JSON-RPC error response: a body that is not JSON is ``PARSE_ERROR``, a field
    of ``params`` refused by the edge rules ``INVALID_PARAMS``, a 5xx ``INTERNAL_ERROR``, any other
    refusal of the HTTP request (400, 401, 403, 413, 415...) ``INVALID_REQUEST``; the code and
    details in ``data``."""
    rpc_code = INTERNAL_ERROR if err.status >= 500 else INVALID_REQUEST
    if err.code == "invalid_json":
        rpc_code = PARSE_ERROR
    elif err.code == "validation_error" and str((err.details or {}).get("field", "")).startswith("params."):
        rpc_code = INVALID_PARAMS
    return error_object(rpc_code, err.message, err.code, err.details, request_id)
