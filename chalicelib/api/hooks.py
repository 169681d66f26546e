"""Extraction hooks, forget-session and the doctor over HTTP.

``POST /v1/hooks/turn-completed`` (``memory:write``, the named bank in the token's allow-list)
answers 202 once the job is queued (or ran inline without a queue); ``POST
/v1/hooks/session-deleted`` (``memory:write``) drops the session's cursor, which spans every bank
the session's turns named, so a token with a bank allow-list is refused it; ``POST
/v1/banks/{bank}/forget-session`` ``GET /v1/doctor`` and ``GET /v1/status`` need ``admin.memories``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

from chalice import Blueprint

from .. import doctor, status
from ..auth.principal import Permission
from ..extraction import service
from ..validation import Model
from .http import Ctx, IntRange, Reply, ResponseModels, endpoint, parse_query

bp = Blueprint(__name__)
m = ResponseModels("chalicelib.api.banks_models")

WRITE, ADMIN = Permission.MEMORY_WRITE, Permission.ADMIN_MEMORIES


@endpoint(bp, "/v1/hooks/turn-completed", ["POST"], permission=WRITE, body=service.TurnCompletedRequest,
          bank_scoped=True, responses={202: m.TurnAccepted}, errors=("invalid_name",))
def turn_completed(ctx: Ctx):
    """Extract memories from a completed turn (queued): 202 ``{accepted, bank, session_id, turn_id,
    queued, outcome?}`` (``{accepted: false, reason, bank, session_id, turn_id}`` when extraction is
    disabled)."""
    r = service.submit_turn(ctx.principal, ctx.body)
    base = {"bank": r.bank, "session_id": r.session_id, "turn_id": r.turn_id}
    if r.run is None:
        return Reply(202, {"accepted": False, "reason": r.reason, **base})
    ran = {"outcome": r.run.outcome.as_dict()} if r.run.outcome is not None else {}
    return Reply(202, {"accepted": True, **base, "queued": r.run.queued, **ran})


@endpoint(bp, "/v1/hooks/session-deleted", ["POST"], permission=WRITE, body=service.SessionDeletedRequest,
          responses={200: m.SessionDropped}, meter="exempt")
def session_deleted(ctx: Ctx):
    """Drop a deleted session's extraction cursor: ``{session_id, dropped}``."""
    return {"session_id": ctx.body.session_id, "dropped": service.session_deleted(ctx.principal, ctx.body)}


@endpoint(bp, "/v1/banks/{bank}/forget-session", ["POST"], permission=ADMIN, body=service.ForgetSessionRequest,
          bank_scoped=True, responses={200: m.SessionForgotten}, errors=("bank_not_found", "damaged"), meter="exempt")
def forget_session(ctx: Ctx, bank: str):
    """Retire (or, with ``purge``, erase) every memory a session taught in a bank:
    ``{session_id, retired, purged, memory_ids}``."""
    return dataclasses.asdict(service.forget_session(ctx.principal, bank, ctx.body))


@endpoint(bp, "/v1/doctor", ["GET"], permission=ADMIN, responses={200: m.DoctorReport})
def run_doctor(ctx: Ctx):
    """Check the deployment end to end: ``{ok, checks: [{name, ok, required, detail, ms}]}``."""
    return doctor.run_checks(ctx.principal.actor, ctx.principal.org_id)


class StatusQuery(Model):
    """``GET /v1/status?limit=&cursor=``: ``limit`` within 1..``status.PAGE_MAX`` (default
    ``status.PAGE_DEFAULT``); ``cursor`` from the previous page."""

    limit: Annotated[int, IntRange(1, status.PAGE_MAX)] | None = None
    cursor: str | None = None


@endpoint(bp, "/v1/status", ["GET"], permission=ADMIN, query=StatusQuery, responses={200: m.ServiceStatus})
def service_status(ctx: Ctx):
    """What the org holds right now, a page of banks at a time: ``{config_version,
    org_config_version, banks: [{name, seq, memories, snapshot: {key, seq, at} | null, vectors: {model,
    with_vector, live}}], next_cursor?}``
    (``status.org_status``; ``next_cursor`` only when more banks follow)."""
    q = parse_query(ctx.query, StatusQuery)
    page = status.org_status(ctx.principal.org_id, limit=q.limit or status.PAGE_DEFAULT, cursor=q.cursor)
    body = dataclasses.asdict(page)
    if body["next_cursor"] is None:
        del body["next_cursor"]
    return body
