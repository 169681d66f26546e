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
