"""The error taxonomy shared by every surface.

Every error reaches the client as ``{"error": <message>, "code": <stable snake_case code>,
"details": {...}?}`` with the status below. Domain code raises these; only
``chalicelib.api.http`` renders them. Raising one before any write is the rule that keeps
"no error leaves anything written" true.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class ErrorBody(TypedDict):
    """An error's JSON body: ``{error, code, details?}``."""

    error: str
    code: str
    details: NotRequired[dict[str, Any]]


class CairnError(Exception):
    """Base of every client-visible error.

    Attributes: ``status`` (HTTP status int), ``code`` (stable machine-readable snake_case),
    ``message`` (a sentence a person understands), ``details`` (optional JSON object),
    ``headers`` (extra response headers, e.g. Retry-After).
    """

    status = 500
    code = "internal_error"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None,
                 status: int | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.details = details
        self.headers = headers or {}

    def body(self) -> ErrorBody:
        """The JSON body: ``{error, code, details?}``."""
        out: ErrorBody = {"error": self.message, "code": self.code}
        if self.details:
            out["details"] = self.details
        return out


class BadRequest(CairnError):
    """400: malformed input. Codes: ``invalid_json``, ``validation_error``, ``invalid_name``."""

    status = 400
    code = "validation_error"


class Unauthorized(CairnError):
    """401 ``unauthorized``: missing, unknown, revoked or expired bearer token."""

    status = 401
    code = "unauthorized"


class Forbidden(CairnError):
    """403 ``forbidden``: authenticated but lacking a permission or bank grant."""

    status = 403
    code = "forbidden"


class NotFound(CairnError):
    """404: ``not_found``, ``bank_not_found``, ``memory_not_found`` and surface-specific codes."""

    status = 404
    code = "not_found"


class MethodNotAllowed(CairnError):
    """405 ``method_not_allowed``."""

    status = 405
    code = "method_not_allowed"


class Conflict(CairnError):
    """409: ``conflict``, ``bank_exists``, ``memory_retired``, ``duplicate_text``."""

    status = 409
    code = "conflict"


class PayloadTooLarge(CairnError):
    """413 ``payload_too_large``."""

    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(CairnError):
    """415 ``unsupported_media_type``."""

    status = 415
    code = "unsupported_media_type"


class Unprocessable(CairnError):
    """422 ``unprocessable``."""

    status = 422
    code = "unprocessable"


class RateLimited(CairnError):
    """429 ``rate_limited``; carries a ``Retry-After`` header in seconds."""

    status = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after_s: int = 1, **kw: Any) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, int(retry_after_s)))}, **kw)


class QuotaExceeded(CairnError):
    """429 ``quota_exceeded``: the write would take the org past a quota that no wait lifts
    (memories per bank, banks per org), so no ``Retry-After``; ``details: {limit, max, used}``.
    Deletes, forgets, purges, trash and exports never meet one."""

    status = 429
    code = "quota_exceeded"

    def __init__(self, limit: str, max_: int, used: int, message: str | None = None) -> None:
        super().__init__(message or f"The {limit.replace('_', ' ')} quota ({max_}) is reached: delete something, "
                                    "or ask your operator to raise it.",
                         details={"limit": limit, "max": max_, "used": used})


class BackendUnavailable(CairnError):
    """503 ``backend_unavailable``: a throttled or unreachable backend; safe to retry."""

    status = 503
    code = "backend_unavailable"

    def __init__(self, message: str = "The storage backend is unavailable; retry shortly.", **kw: Any) -> None:
        kw.setdefault("headers", {"Retry-After": "1"})
        super().__init__(message, **kw)


class WriteContended(BackendUnavailable):
    """503 ``write_contention``: a write lost its race to concurrent writers on every attempt of
    its retry budget; nothing was written and the request is safe to retry (``Retry-After``)."""

    code = "write_contention"

    def __init__(self, message: str = "The write kept losing to concurrent writes; nothing was written. "
                                      "Retry shortly.", **kw: Any) -> None:
        super().__init__(message, **kw)


class ConfigError(Exception):
    """A setting is invalid; the message names the variable or file and the key.

    ``problems``: ``[{source, key, problem}]`` where known (``source`` a file, ``s3 <key>`` or
    ``environment``; ``key`` e.g. ``memory.fetch_limit`` or ``CAIRN_MEMORY_FETCH_LIMIT``)."""

    def __init__(self, message: str, *, problems: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


CODES: dict[str, tuple[int, str]] = {
    # the request pipeline: any route
    "validation_error": (400, "A field, parameter or path segment is invalid; details.field names it."),
    "invalid_json": (400, "The body is not JSON within the edge limits (depth, size, numbers, text)."),
    "unauthorized": (401, "The bearer token is missing, unknown, revoked or expired."),
    "forbidden": (403, "The token lacks the permission or the bank this route needs."),
    "not_found": (404, "No such route, or no such object."),
    "method_not_allowed": (405, "The path exists; the Allow header lists its methods."),
    "payload_too_large": (413, "The body is over the size limit; details.limit_bytes gives it."),
    "unsupported_media_type": (415, "The Content-Type is not one this route takes."),
    "internal_error": (500, "An unexpected failure; details.request_id identifies it in the logs."),
    "misconfigured": (500, "The operator's configuration is invalid; the message names the setting."),
    "backend_unavailable": (503, "A storage backend is throttled or unreachable; retry after Retry-After."),
    "write_contention": (503, "A write lost to concurrent writes on every retry; nothing was written."),
    "rate_limited": (429, "Too many requests; retry after Retry-After seconds."),
    "quota_exceeded": (429, "The write would pass an org quota (details.limit names it); no wait helps: delete "
                            "something or have the operator raise it."),
    # the MCP endpoint (as data.code of a JSON-RPC error)
    "invalid_request": (400, "The body is not one JSON-RPC 2.0 message (a batch, or a malformed message)."),
    "header_mismatch": (400, "An MCP header (MCP-Protocol-Version, Mcp-Method, Mcp-Name) disagrees with the body."),
    "unsupported_protocol_version": (400, "The MCP protocol version is not one this server speaks; data.supported "
                                          "lists them."),
    "unknown_tool": (400, "No tool of that name."),
    "method_not_found": (404, "The JSON-RPC method is not one this server offers."),
    "origin_not_allowed": (403, "The Origin header names a site that may not call this endpoint."),
    "not_acceptable": (406, "The Accept header excludes application/json."),
    # names and values
    "invalid_name": (400, "A name breaks the naming rule; details.pattern gives it."),
    "invalid_config": (400, "A configuration value is invalid."),
    "invalid_type": (400, "A structured memory's type is not one of the known types."),
    "invalid_scope": (400, "A structured memory's scope is not one this session or route may use."),
    "scope_unavailable": (400, "The scope needs a workstream, project or user this request lacks."),
    "coordinator_requires_user": (400, "A coordinator session needs a user token."),
    # permissions beyond the token's grant
    "scope_forbidden": (403, "The session's kind may not use this scope."),
    "coordinator_only": (403, "Only a coordinator session may do this."),
    "project_access_denied": (403, "The caller is not a member of the project."),
    "project_read_only": (403, "The caller's project role is read-only."),
    "client_id_owned": (403, "This Yjs client id belongs to another author."),
    "context.person_required": (403, "Only a signed-in person (a person token) may do this."),
    "context.memory.self_accept": (403, "The creator or a recent author cannot accept the entry; another member must."),
    "context.collab_policy.capability_disabled": (403, "The space's policy turns this capability off."),
    # objects that do not exist
    "bank_not_found": (404, "No live bank of that name in the caller's org."),
    "memory_not_found": (404, "No memory of that id or name."),
    "rule_not_found": (404, "No rule of that name in the bank."),
    "workstream_not_found": (404, "No workstream of that id."),
    "project_not_found": (404, "No project of that id."),
    "session_not_found": (404, "No session of that id."),
    "member_not_found": (404, "No member of that id."),
    "entry_not_accepted": (404, "The team entry has no accepted revision yet."),
    # state conflicts
    "conflict": (409, "The change conflicts with the current state."),
    "bank_exists": (409, "A bank of that name exists (live or in the trash)."),
    "duplicate_text": (409, "Another live memory has the same text."),
    "memory_retired": (409, "The memory is forgotten or superseded: it cannot change, and saving its text "
                          "writes nothing unless the save says revive: true."),
    "workstream_exists": (409, "A workstream of that id exists."),
    "project_exists": (409, "A project of that id exists."),
    "project_inactive": (409, "The project is archived."),
    "meta_version_conflict": (409, "The entry's metadata changed since the version given."),
    "update_id_reused": (409, "The update id was used for a different update."),
    "document_changed": (409, "The entry's text changed since the hash given; review it again."),
    "invalid_transition": (409, "The entry's status does not allow this change."),
    "entry_read_only": (409, "The entry is archived or superseded."),
    "missing_dependency": (409, "The Yjs update depends on updates the server has not seen."),
    "space_entry_limit": (409, "The space holds its maximum of entries; details name the variable and limit."),
    "update_log_full": (409, "The entry's edit log is full; continue in a new entry that supersedes it."),
    "damaged": (409, "A stored record is unreadable; the operator's doctor reports it."),
    # well-formed but not acceptable
    "unprocessable": (422, "The request is well-formed but cannot be processed."),
    "personal_space": (422, "A personal space cannot take this change."),
    "dlp_blocked": (422, "The text holds what looks like a secret; details name the findings."),
    "unsupported_update": (422, "The Yjs update changes something other than the entry's text."),
    "unit_cap_reached": (422, "The entry reached its unit cap and accepts deletions only."),
    "text_too_large": (422, "The entry's text would exceed its size limit; details name the variable."),
    "update_too_large": (413, "The Yjs update is over its size limit; details name the variable and limit."),
}
"""Every stable error ``code`` a client can get: code -> (HTTP status, what it means). A route's
``errors`` name codes from here (``chalicelib.api.http.endpoint``) and the OpenAPI document lists
them per status."""
