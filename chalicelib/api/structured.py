"""Structured memory over HTTP: the Turnstone-compatible REST API
(``/v1/api/memories``), workstreams, projects, sessions with their memory tool and per-turn
context, and the admin API (``/v1/api/admin/memories``, ``/v1/api/admin/audit``). Routes parse,
call one service function in ``chalicelib.structured`` and render; every 2xx body is a JSON object.
None of these routes is ``bank_scoped``: structured memory lives outside every bank, so a token with
a bank allow-list gets 403 ``forbidden`` on all of them."""

from __future__ import annotations

from typing import Any

from chalice import Blueprint

from ..auth.principal import Permission
from ..errors import BadRequest
from ..structured import (
    admin,
    context,
    memories,
    projects,
    scopes,
    sessions,
    tool,
    workstreams,
)
from .http import Ctx, IntRange, Reply, damaged_header, endpoint

bp = Blueprint(__name__)

READ, WRITE, ADMIN = Permission.MEMORY_READ, Permission.MEMORY_WRITE, Permission.ADMIN_MEMORIES


def _listing(body: dict[str, Any], status: int = 200) -> Reply:
    """A list body with its count of damaged records left out moved to the ``X-Cairn-Damaged``
    header: Turnstone's SDK validates the body, so it stays exactly Turnstone's shape."""
    n = body.pop("damaged", 0) if isinstance(body, dict) else 0
    return Reply(status, body, headers=damaged_header(n))


def _obj(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.", details={"field": "body"})
    return body


def _str(body: dict[str, Any], field: str) -> str:
    value = body.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"{field} must be a string", details={"field": field})
    return value


# --- REST memory API --------------------------------------------------------------------------

@endpoint(bp, "/v1/api/memories", ["GET"], permission=READ)
def list_memories(ctx: Ctx):
    """``{memories, total}`` newest first; without scope: global plus the caller's user namespace."""
    q = ctx.query
    type_ = scopes.check_type(q.get("type") or "", allow_empty=True) or None
    targets = scopes.rest_envelope(ctx.principal, q.get("scope"), q.get("scope_id"))
    return _listing(memories.list_rows(ctx.principal.org_id, targets, type_=type_,
                                       limit=IntRange(1, 200, turnstone=True).parse(q.get("limit"), "limit", 100)))


@endpoint(bp, "/v1/api/memories", ["POST"], permission=WRITE)
def save_memory(ctx: Ctx):
    """Upsert: 201 with the row when created, 200 when the identity existed."""
    created, row = memories.save_rest(ctx.principal, _obj(ctx.body))
    return Reply(201 if created else 200, row)


@endpoint(bp, "/v1/api/memories/search", ["POST"], permission=READ)
def search_memories(ctx: Ctx):
    """``{memories, total}`` best first (BM25F over what the caller may see)."""
    b = _obj(ctx.body)
    query = b.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("query is required", details={"field": "query"})
    type_ = scopes.check_type(_str(b, "type"), allow_empty=True) or None
    limit = IntRange(1, 50, turnstone=True).parse(b.get("limit"), "limit", 20)
    targets = scopes.rest_envelope(ctx.principal, _str(b, "scope"), _str(b, "scope_id"))
    return memories.search_rows(ctx.principal.org_id, targets, query, type_=type_, limit=limit)


@endpoint(bp, "/v1/api/memories/{name}", ["GET"], permission=READ)
def get_memory(ctx: Ctx, name: str):
    """The row of ``(name, scope, scope_id)`` (scope defaults to global)."""
    target = scopes.rest_target(ctx.principal, ctx.query.get("scope"), ctx.query.get("scope_id"))
    return memories.get(ctx.principal.org_id, target, name)


@endpoint(bp, "/v1/api/memories/{name}", ["DELETE"], permission=WRITE)
def delete_memory(ctx: Ctx, name: str):
    """``{"status": "ok", "name": name}``; 404 ``Memory '<name>' not found``."""
    p = ctx.principal
    target = scopes.rest_target(p, ctx.query.get("scope"), ctx.query.get("scope_id"))
    return memories.delete(p.org_id, target, name, actor=p.actor, surface="rest")


# --- workstreams, projects, sessions --------------------------------------------------------

@endpoint(bp, "/v1/api/workstreams", ["POST"], permission=WRITE, body=workstreams.WorkstreamRequest)
def create_workstream(ctx: Ctx):
    """201 ``{workstream_id, title, owner}``."""
    return Reply(201, workstreams.create(ctx.principal, ctx.body))


@endpoint(bp, "/v1/api/projects", ["POST"], permission=WRITE, body=projects.ProjectRequest)
def create_project(ctx: Ctx):
    """201 ``{project_id, name, active, owner}``."""
    return Reply(201, projects.create(ctx.principal, ctx.body))


@endpoint(bp, "/v1/api/projects/{project_id}", ["PATCH"], permission=WRITE, body=projects.ProjectPatch)
def patch_project(ctx: Ctx, project_id: str):
    """Activate or deactivate: the project."""
    return projects.set_active(ctx.principal, project_id, ctx.body.active)


@endpoint(bp, "/v1/api/projects/{project_id}/members/{user_id}", ["PUT"], permission=WRITE,
          body=projects.MemberRequest)
def put_member(ctx: Ctx, project_id: str, user_id: str):
    """``{project_id, user_id, access}``."""
    return projects.set_member(ctx.principal, project_id, user_id, ctx.body.access)


@endpoint(bp, "/v1/api/projects/{project_id}/members/{user_id}", ["DELETE"], permission=WRITE)
def delete_member(ctx: Ctx, project_id: str, user_id: str):
    """``{status: "ok"}``."""
    return projects.remove_member(ctx.principal, project_id, user_id)


@endpoint(bp, "/v1/api/sessions", ["POST"], permission=READ, body=sessions.SessionRequest)
def create_session(ctx: Ctx):
    """201 ``{session_id, kind, user_id, workstream_id, project_id, ...}``."""
    return Reply(201, sessions.create(ctx.principal, ctx.body))


@endpoint(bp, "/v1/api/sessions/{session_id}", ["DELETE"], permission=READ)
def delete_session(ctx: Ctx, session_id: str):
    """``{status: "ok", session_id}``."""
    return sessions.delete(ctx.principal, session_id)


@endpoint(bp, "/v1/api/sessions/{session_id}/memory", ["POST"], permission=READ, body=tool.ToolCall)
def session_memory(ctx: Ctx, session_id: str):
    """The memory tool: the REST equivalent's body and status."""
    status, body = tool.run(ctx.principal, session_id, ctx.body)
    return _listing(body, status)


@endpoint(bp, "/v1/api/sessions/{session_id}/context", ["POST"], permission=READ, body=context.ContextRequest)
def session_context(ctx: Ctx, session_id: str):
    """``{system_message, injected, candidates, nudge}``."""
    return context.turn(ctx.principal, session_id, ctx.body)


# --- admin ------------------------------------------------------------------------------------

@endpoint(bp, "/v1/api/admin/memories", ["GET"], permission=ADMIN)
def admin_list(ctx: Ctx):
    """``{memories, total}`` across every scope."""
    return _listing(admin.list_all(ctx.principal.org_id, ctx.query))


@endpoint(bp, "/v1/api/admin/memories/search", ["GET"], permission=ADMIN)
def admin_search(ctx: Ctx):
    """``{memories, total}`` best first."""
    return admin.search_all(ctx.principal.org_id, ctx.query)


@endpoint(bp, "/v1/api/admin/memories/import", ["POST"], permission=ADMIN,
          body_types=("application/x-ndjson", "application/json", "text/plain"))
def admin_import(ctx: Ctx):
    """ndjson of Turnstone rows: ``{imported, skipped, errors}``."""
    return admin.import_ndjson(ctx.principal.org_id, ctx.raw_body, actor=ctx.principal.actor)


@endpoint(bp, "/v1/api/admin/memories/{memory_id}", ["GET"], permission=ADMIN)
def admin_get(ctx: Ctx, memory_id: str):
    """The row; 404 ``Memory not found``."""
    return admin.get_by_id(ctx.principal.org_id, memory_id)


@endpoint(bp, "/v1/api/admin/memories/{memory_id}", ["PATCH"], permission=ADMIN, body=admin.DescriptionPatch)
def admin_patch(ctx: Ctx, memory_id: str):
    """The row with its new description."""
    return admin.patch_description(ctx.principal.org_id, memory_id, ctx.body.description, actor=ctx.principal.actor)


@endpoint(bp, "/v1/api/admin/memories/{memory_id}", ["DELETE"], permission=ADMIN)
def admin_delete(ctx: Ctx, memory_id: str):
    """``{"status": "ok"}``; 404 ``Memory not found`` with no audit event."""
    return admin.delete_by_id(ctx.principal.org_id, memory_id, actor=ctx.principal.actor)


@endpoint(bp, "/v1/api/admin/audit", ["GET"], permission=ADMIN)
def admin_audit(ctx: Ctx):
    """``{events, next_cursor}``: memory audit events, oldest first."""
    return admin.audit_page(ctx.principal.org_id, ctx.query)
