"""``POST /mcp``: the Model Context Protocol on the API itself (streamable HTTP, stateless, JSON
responses), so a deployed Cairn is an MCP server with no other process. The bearer token is the
caller, as on every route; the tools (``mcp_tools``) run the REST views behind the same checks.
``GET`` and ``DELETE`` answer 405: no server-sent stream and no session to end.

The ``Origin`` header, when present, must be one of ``Settings.mcp_allowed_origins`` (403
``origin_not_allowed``): a web page cannot drive a user's agent tools through the user's browser.
Every error, of the pipeline too, is a JSON-RPC error object with the stable code in
``error.data.code``.
"""

from __future__ import annotations

from typing import Any, Literal

from chalice import Blueprint
from pydantic import ConfigDict, Field, RootModel, StrictInt, StrictStr

from ..errors import CairnError, Forbidden
from ..names import check_name
from ..settings import get_settings
from ..validation import Model
from .http import NO_BODY, Ctx, Reply, endpoint

bp = Blueprint(__name__)

SERVER_NAME = "cairn"
SERVER_VERSION = "1.0.0"
INSTRUCTIONS = ("Cairn is this agent's long-term memory. Before answering anything that may depend on what was "
                "learned earlier, call memory_recall (or context_preview to see the exact injection). When the user "
                "states a lasting fact, preference or decision, save it with memory_save as one self-contained "
                "sentence; correct a wrong memory with memory_update, retire an outdated one with memory_supersede "
                "or memory_forget. Team knowledge: team_search reads accepted entries of the spaces space_list "
                "names; team_draft proposes one for a person to review. Pass only ids an earlier result gave.")
BANK_HEADER = "x-cairn-bank"


class McpMessage(Model):
    """One JSON-RPC 2.0 message: a request (``id``, ``method``, ``params``), a notification (no
    ``id``) or a response to the server (``result`` or ``error``)."""

    model_config = ConfigDict(extra="allow")
    jsonrpc: Literal["2.0"]
    id: StrictInt | StrictStr | None = None
    method: StrictStr | None = Field(None, description="`initialize`, `ping`, `server/discover`, `tools/list`, "
                                     "`tools/call` or a notification's method.")
    params: dict[str, Any] | None = None


class McpErrorData(Model):
    """What ``data`` of an error from Cairn holds."""

    model_config = ConfigDict(extra="allow")
    code: str = Field(description="Stable and machine-readable: one of the codes this operation lists.")
    details: dict[str, Any] | None = None


class McpErrorObject(Model):
    """The ``error`` member."""

    code: int = Field(description="The JSON-RPC code: -32700 parse error, -32600 invalid request, -32601 method "
                      "not found, -32602 invalid params, -32603 internal error, -32020 header mismatch, -32022 "
                      "unsupported protocol version.")
    message: str
    data: McpErrorData


class McpError(Model):
    """A JSON-RPC error response (``id`` null when the request's could not be read)."""

    jsonrpc: Literal["2.0"]
    id: int | str | None
    error: McpErrorObject


class McpResult(Model):
    """A JSON-RPC response with the method's ``result`` (an MCP ``InitializeResult``,
    ``DiscoverResult``, ``ListToolsResult``, ``CallToolResult``...)."""

    jsonrpc: Literal["2.0"]
    id: int | str
    result: dict[str, Any]


class McpAnswer(RootModel[McpResult | McpError]):
    """The answer to a request: its result, or the error of a request that was read (protocol
    versions before 2026-07-28 answer those with 200)."""

    model_config = ConfigDict(defer_build=True)


def _check_origin(ctx: Ctx) -> None:
    # only a browser sends Origin, and no page needs this endpoint unless the operator lists it; the
    # Host header is no evidence of the page's site (a DNS-rebinding page sets both)
    origin = ctx.header("origin")
    if origin is None:
        return
    allowed = {o.strip().rstrip("/").lower() for o in get_settings().mcp_allowed_origins.split(",") if o.strip()}
    if origin.rstrip("/").lower() in allowed:
        return
    raise Forbidden("This Origin may not call the MCP endpoint; add it to CAIRN_MCP_ALLOWED_ORIGINS.",
                    code="origin_not_allowed", details={"origin": origin[:200]})


def _default_bank(ctx: Ctx) -> str | None:
    """The ``X-Cairn-Bank`` header: a bank name (400 ``invalid_name`` otherwise), or None."""
    bank = ctx.header(BANK_HEADER)
    if not bank:
        return None
    check_name(bank, "X-Cairn-Bank")
    return bank


def _check_accept(ctx: Ctx) -> None:
    accept = (ctx.header("accept") or "").lower()
    if accept and not any(a.split(";")[0].strip() in ("application/json", "application/*", "*/*")
                          for a in accept.split(",")):
        raise CairnError("Accept must include application/json: this server answers JSON, never a stream.",
                         code="not_acceptable", status=406)


@endpoint(bp, "/mcp", ["POST"], body=McpMessage, bank_scoped=True, envelope="jsonrpc",
          responses={200: McpAnswer, 202: NO_BODY},
          errors=("invalid_name", "invalid_request", "header_mismatch", "unsupported_protocol_version",
                  "unknown_tool", "origin_not_allowed", "method_not_found", "not_acceptable"), meter="tool")
def mcp_endpoint(ctx: Ctx):
    """Model Context Protocol (streamable HTTP, stateless, JSON responses): one JSON-RPC message
    per POST. A request gets its JSON-RPC response; a notification or response 202 and no body.

    Tools: bank_list, bank_create, memory_save, memory_recall, memory_get, memory_list,
    memory_update, memory_forget, memory_pin, memory_supersede, memory_history, rules_list,
    rule_set, context_preview, session_open, structured_memory, space_list, team_search, team_draft;
    a token lists those its permissions allow. ``X-Cairn-Bank`` names the connection's default bank."""
    _check_origin(ctx)
    _check_accept(ctx)
    # imported on the first MCP request: the SDK's types take most of a second to import
    from . import mcp_protocol as protocol
    from .mcp_tools import Toolbox
    toolbox = Toolbox(ctx.principal, _default_bank(ctx), ctx.request_id)
    answer = protocol.handle(ctx.body.model_dump(exclude_unset=True), ctx.headers, toolbox,
                             protocol.Server(SERVER_NAME, SERVER_VERSION, INSTRUCTIONS))
    if answer.body is None:
        return Reply(answer.status, raw="", content_type="text/plain")
    return Reply(answer.status, answer.body)
