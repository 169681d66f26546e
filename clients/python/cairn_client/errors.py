"""Errors raised by the client: one class per HTTP status under ``CairnError``.

The server answers every error as ``{"error": message, "code": code, "details"?: {...}}`` with an
``X-Request-Id`` header; each exception carries those as ``message``, ``code``, ``details`` and
``request_id``, with ``status`` the HTTP status. A status without its own class raises
``CairnError`` itself. ``CairnConnectionError`` is raised when no response arrived (after retries).
"""

from __future__ import annotations

from typing import Any

import httpx


class CairnError(Exception):
    """An error answer from Cairn: ``status`` (HTTP status), ``code`` (stable machine-readable code,
    e.g. ``bank_not_found``; ``None`` when the body had none), ``message`` (for a person),
    ``details`` (dict, possibly empty) and ``request_id`` (the ``X-Request-Id`` header, or ``None``)."""

    status: int = 0

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 details: dict[str, Any] | None = None, request_id: str | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        self.message = message
        self.code = code
        self.details = details or {}
        self.request_id = request_id

    def __str__(self) -> str:
        code = f" {self.code}" if self.code else ""
        rid = f" (request {self.request_id})" if self.request_id else ""
        return f"{self.status}{code}: {self.message}{rid}"


class BadRequest(CairnError):
    status = 400


class Unauthorized(CairnError):
    status = 401


class Forbidden(CairnError):
    status = 403


class NotFound(CairnError):
    status = 404


class Conflict(CairnError):
    status = 409


class PayloadTooLarge(CairnError):
    status = 413


class UnsupportedMediaType(CairnError):
    status = 415


class Unprocessable(CairnError):
    status = 422


class RateLimited(CairnError):
    status = 429


class ServerError(CairnError):
    status = 500


class ServiceUnavailable(CairnError):
    status = 503


class CairnConnectionError(CairnError):
    """No response: the connection failed or timed out (``status`` 0), after any retries."""

    status = 0


BY_STATUS: dict[int, type[CairnError]] = {cls.status: cls for cls in (
    BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PayloadTooLarge, UnsupportedMediaType,
    Unprocessable, RateLimited, ServerError, ServiceUnavailable)}


def from_response(response: httpx.Response) -> CairnError:
    """The exception for an error ``response`` (a status of 400 or more), read from its envelope; a
    body that is not the JSON envelope gives its text (cut to 500 characters) as the message."""
    message, code, details = "", None, None
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):  # a JSON-RPC error (the MCP endpoint)
        body = {"error": body["error"].get("message"), **(body["error"].get("data") or {})}
    if isinstance(body, dict):
        message = str(body.get("error") or body.get("message") or "")
        code = body.get("code") if isinstance(body.get("code"), str) else None
        details = body.get("details") if isinstance(body.get("details"), dict) else None
    if not message:
        message = response.text[:500] or response.reason_phrase
    cls = BY_STATUS.get(response.status_code, CairnError)
    return cls(message, status=response.status_code, code=code, details=details,
               request_id=response.headers.get("x-request-id"))
