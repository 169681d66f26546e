"""The service's own routes: ``GET /v1/health`` and ``GET /v1/openapi.json`` (no authentication),
``GET /v1/me`` (who the calling token is)."""

from __future__ import annotations

from typing import Any, Literal

from chalice import Blueprint
from pydantic import ConfigDict, Field

from ..auth.principal import Principal
from ..validation import Model
from . import openapi
from .http import Ctx, Reply, endpoint

bp = Blueprint(__name__)


class ServiceHealth(Model):
    """The service is up."""

    status: Literal["ok"]


class CallerToken(Model):
    """The calling token: who it is and what it may do, never its secret."""

    token_id: str
    org_id: str
    kind: str = Field(description="`person`, `api_key` or `service`.")
    user_id: str | None = Field(description="The person or service; null for an API key.")
    permissions: list[str] = Field(description="Sorted.")
    banks: list[str] | None = Field(description="The bank allow-list; null: every bank.")
    expires_at: int | None = Field(description="ms since epoch; null: never.")


class OpenApiDocument(Model):
    """The OpenAPI 3.1 document of this API."""

    model_config = ConfigDict(extra="allow")


def render_me(p: Principal) -> dict[str, Any]:
    """``{token_id, org_id, kind, user_id, permissions, banks, expires_at}`` (``CallerToken``):
    ``permissions`` sorted, ``banks`` the allow-list (``null``: every bank), ``expires_at`` ms
    since epoch or ``null``; never the secret."""
    return {"token_id": p.token_id, "org_id": p.org_id, "kind": p.kind, "user_id": p.user_id,
            "permissions": sorted(p.permissions), "banks": list(p.banks) if p.banks is not None else None,
            "expires_at": p.expires_at}


@endpoint(bp, "/v1/health", ["GET"], public=True, responses={200: ServiceHealth})
def health():
    """Health check: ``{status: "ok"}`` for load balancers and uptime checks: no token, no storage call (an outage
    of a backend shows on the routes that use it, and in ``/v1/doctor``), never cached."""
    return Reply(200, {"status": "ok"}, headers={"Cache-Control": "no-store"})


# bank_scoped: it names no bank and shows only the caller's own token, so a bank-confined token may ask
@endpoint(bp, "/v1/me", ["GET"], bank_scoped=True, responses={200: CallerToken})
def me(ctx: Ctx):
    """Who the calling token is (``render_me``): any valid token, no permission needed."""
    return render_me(ctx.principal)


@endpoint(bp, "/v1/openapi.json", ["GET"], public=True, responses={200: OpenApiDocument})
def openapi_document():
    """The OpenAPI 3.1 document of this API: every route, its parameters and their limits, its
    bodies, and every status it can answer with the error codes behind it. No token needed."""
    return openapi.document()
