"""Structured memory over HTTP: the Turnstone-compatible REST API
(``/v1/api/memories``), workstreams, projects, sessions with their memory tool and per-turn
context, and the admin API (``/v1/api/admin/memories``, ``/v1/api/admin/audit``). Routes parse,
call one service function in ``chalicelib.structured`` and render; every 2xx body is a JSON object.
None of these routes is ``bank_scoped``: structured memory lives outside every bank, so a token with
a bank allow-list gets 403 ``forbidden`` on all of them."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from chalice import Blueprint
from pydantic import ConfigDict, Field, ValidationInfo, WithJsonSchema, field_validator

from .. import validation
from ..auth.principal import Permission
from ..core.records import Memory
from ..errors import BadRequest
from ..inject.render import BYTES_PER_TOKEN
from ..structured import (
    admin,
    context,
    listing,
    memories,
    projects,
    scopes,
    sessions,
    tool,
    workstreams,
)
from ..usage import meter
from .http import Ctx, IntRange, Reply, ResponseModels, damaged_header, endpoint, parse_query, render_history

bp = Blueprint(__name__)
sm = ResponseModels("chalicelib.api.structured_models")

READ, WRITE, ADMIN = Permission.MEMORY_READ, Permission.MEMORY_WRITE, Permission.ADMIN_MEMORIES


def _rows(rows: list[memories.Row]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(r) for r in rows]


def _listing(result: memories.Listing) -> Reply:
    """``{memories, total}``, with the count of damaged records left out in the
    ``X-Cairn-Damaged`` header: Turnstone's SDK validates the body, so it stays exactly Turnstone's shape."""
    found = _rows(result.memories)
    return Reply(200, {"memories": found, "total": len(found)}, headers=damaged_header(result.damaged))


def _tool(result: tool.ToolResult) -> Any:
    """A tool call's result as its REST equivalent renders it."""
    if isinstance(result, memories.Listing):
        return _listing(result)
    if isinstance(result, memories.Saved):
        return Reply(201 if result.created else 200, dataclasses.asdict(result.row))
    if isinstance(result, memories.Deleted):
        return {"status": "ok", "name": result.name}
    return dataclasses.asdict(result)


# --- query strings -----------------------------------------------------------------------------

def _clamp(raw: str | None, default: int, hi: int) -> int:
    """An admin listing's limit clamped to ``1..hi``; 400 ``limit must be an integer`` when not a number."""
    if raw is None or raw == "":
        return default
    n = validation.as_int(raw)
    if n is None:
        raise BadRequest("limit must be an integer", details={"field": "limit"})
    return max(1, min(hi, n))


def _type(v: str) -> str:
    return scopes.check_type(v, allow_empty=True) or ""


def _scope(v: str) -> str:
    return scopes.check_scope(v, scopes.SCOPES) if v else v


def _words(*words: str, description: str) -> WithJsonSchema:
    """A string parameter's schema: one of ``words`` (``""``: no filter)."""
    return WithJsonSchema({"type": "string", "enum": ["", *words], "description": description})


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)  # an absent parameter reads as None, which is no string


def _required_text(schema: dict[str, Any]) -> None:
    _no_default(schema)
    schema["pattern"] = r"\S"  # not blank


def _int_param(description: str, lo: int = -validation.MAX_SAFE_INT,
               hi: int = validation.MAX_SAFE_INT) -> WithJsonSchema:
    """An integer parameter's schema: an empty value reads as absent (the default)."""
    return WithJsonSchema({"anyOf": [{"type": "integer", "minimum": lo, "maximum": hi},
                                     {"type": "string", "maxLength": 0}], "description": description})


_ABSENT = Field(json_schema_extra=_no_default)
TypeParam = Annotated[str, _words(*sorted(scopes.TYPES), description="Only memories of this type.")]
AnyScopeParam = Annotated[str, _words(*scopes.SCOPES, description="Only memories of this scope.")]
RestScopeParam = Annotated[str | None, _words(*scopes.PUBLIC_SCOPES, description="The scope (global when empty)."),
                           _ABSENT]
ScopeIdParam = Annotated[str | None, WithJsonSchema({"type": "string", "description": "The scope's qualifier."}),
                         _ABSENT]
CursorParam = Annotated[str | None, WithJsonSchema(
    {"type": "string", "description": "The `next_cursor` of the previous page."}), _ABSENT]


class AdminMemoryListQuery(validation.Model):
    """``GET /v1/api/admin/memories?type=&scope=&scope_id=&limit=``, checked in this order with
    the REST API's messages (400 ``invalid_type``, ``invalid_scope``, ``limit must be an
    integer``); limit clamped to 1..200 (default 100)."""

    model_config = ConfigDict(extra="ignore")
    type: TypeParam = ""
    scope: AnyScopeParam = ""
    scope_id: str = ""
    limit: Annotated[int, _int_param("At most this many (clamped to 1..200).")] = 100

    _check_type = field_validator("type")(_type)
    _check_scope = field_validator("scope")(_scope)

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, v: Any) -> int:
        return _clamp(v, 100, 200)


class AdminMemorySearchQuery(validation.Model):
    """``GET /v1/api/admin/memories/search?q=&type=&scope=&scope_id=&limit=``: ``q`` first (400
    ``query is required``), then as ``AdminMemoryListQuery``; limit clamped to 1..50 (default 20)."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"required": ["q"]})
    q: str = Field("", validate_default=True, description="The search query (not blank).",
                   json_schema_extra=_required_text)
    type: TypeParam = ""
    scope: AnyScopeParam = ""
    scope_id: str = ""
    limit: Annotated[int, _int_param("At most this many (clamped to 1..50).")] = 20

    _check_type = field_validator("type")(_type)
    _check_scope = field_validator("scope")(_scope)

    @field_validator("q")
    @classmethod
    def _q(cls, v: str) -> str:
        if not v.strip():
            raise BadRequest("query is required", details={"field": "q"})
        return v.strip()

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, v: Any) -> int:
        return _clamp(v, 20, 50)


class MemoryAuditQuery(validation.Model):
    """``GET /v1/api/admin/audit?action=&since=&cursor=&limit=``: ``action`` one of
    ``admin.AUDIT_ACTIONS`` (all when empty), ``since`` ms since the epoch, limit clamped to
    1..500 (default 100)."""

    model_config = ConfigDict(extra="ignore")
    action: Annotated[str, _words(*admin.AUDIT_ACTIONS, description="Only events of this action.")] = ""
    since: Annotated[int, _int_param("Only events at or after this time, ms since the epoch.")] = 0
    limit: Annotated[int, _int_param("At most this many (clamped to 1..500).")] = 100
    cursor: CursorParam = None

    @field_validator("action")
    @classmethod
    def _action(cls, v: str) -> str:
        if v and v not in admin.AUDIT_ACTIONS:
            raise BadRequest(f"action must be one of {list(admin.AUDIT_ACTIONS)}.", details={"field": "action"})
        return v

    @field_validator("since", mode="before")
    @classmethod
    def _since(cls, v: Any) -> int:
        n = validation.as_int(v or "0")
        if n is None:
            raise BadRequest("since must be an integer (ms since epoch).", details={"field": "since"})
        return n

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, v: Any) -> int:
        return _clamp(v, 100, 500)


class StructuredPageQuery(validation.Model):
    """``GET /v1/api/workstreams|projects|sessions?limit=&cursor=``: ``limit`` within
    1..``listing.PAGE_MAX`` (default ``listing.PAGE_DEFAULT``)."""

    limit: Annotated[int, IntRange(1, listing.PAGE_MAX),
                     _int_param("At most this many.", 1, listing.PAGE_MAX)] = listing.PAGE_DEFAULT
    cursor: CursorParam = None


def _page(name: str, page: listing.Page[Any], render: Any = dataclasses.asdict) -> Reply:
    """``{<name>: [...], next_cursor?}`` (``next_cursor`` only when more follow); objects left
    out as damaged are counted in ``X-Cairn-Damaged``."""
    body: dict[str, Any] = {name: [render(it) for it in page.items]}
    if page.next_cursor is not None:
        body["next_cursor"] = page.next_cursor
    return Reply(200, body, headers=damaged_header(page.damaged))


class RestListQuery(validation.Model):
    """``GET /v1/api/memories?type=&scope=&scope_id=``: type checked (400 ``invalid_type``); the
    scope rules are ``scopes.rest_envelope``'s, and they answer before ``limit`` is read
    (``RestListLimit``)."""

    model_config = ConfigDict(extra="ignore")
    type: TypeParam = ""
    scope: RestScopeParam = None
    scope_id: ScopeIdParam = None

    _check_type = field_validator("type")(_type)


class RestListLimit(validation.Model):
    """``?limit=`` of ``GET /v1/api/memories``: 1..200 (default 100) with Turnstone's messages."""

    model_config = ConfigDict(extra="ignore")
    limit: Annotated[int, IntRange(1, 200, turnstone=True), _int_param("At most this many.", 1, 200)] = 100


class MemoryListQuery(RestListLimit, RestListQuery):
    """The query string of ``GET /v1/api/memories`` as the document shows it: the view reads it
    in two steps (``RestListQuery``, then ``RestListLimit``) so that the scope rules answer first."""


class MemoryTargetQuery(validation.Model):
    """``?scope=&scope_id=`` of ``GET``/``DELETE /v1/api/memories/{name}``, checked by
    ``scopes.rest_target`` (global when empty)."""

    model_config = ConfigDict(extra="ignore")
    scope: RestScopeParam = None
    scope_id: ScopeIdParam = None


class RestSearchBody(validation.Model):
    """Body of ``POST /v1/api/memories/search``: ``{query, type?, limit?, scope?, scope_id?}``,
    checked in this order with Turnstone's messages: query (400 ``query is required``), type
    ("type must be a string", ``invalid_type``), limit 1..50 (default 20), scope and scope_id
    ("<field> must be a string"); the scope rules are then ``scopes.rest_envelope``'s."""

    query: str = Field("", validate_default=True)
    type: str | None = None
    limit: Annotated[int, IntRange(1, 50, turnstone=True)] = 20
    scope: str | None = None
    scope_id: str | None = None

    # each check raises a CairnError, which pydantic lets through: the first bad field answers
    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, v: object) -> object:
        if not isinstance(v, str) or not v.strip():
            raise BadRequest("query is required", details={"field": "query"})
        return v  # searched as sent

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: object) -> str | None:
        return scopes.check_type(scopes.optional_str(v, "type") or "", allow_empty=True) or None

    @field_validator("scope", "scope_id", mode="before")
    @classmethod
    def _scope(cls, v: object, info: ValidationInfo) -> str | None:
        return scopes.optional_str(v, info.field_name or "scope")


# --- REST memory API --------------------------------------------------------------------------

# what the REST scope rules (``scopes.rest_target``/``rest_envelope``) and a type filter answer
_REST_SCOPE_ERRORS = ("invalid_type", "invalid_scope", "workstream_not_found", "damaged")
# what managing a project answers (``projects._manage``)
_PROJECT_ERRORS = ("project_not_found", "damaged")

@endpoint(bp, "/v1/api/memories", ["GET"], permission=READ, query=MemoryListQuery,
          responses={200: sm.StructuredMemoryList}, errors=_REST_SCOPE_ERRORS)
def list_structured_memories(ctx: Ctx):
    """List structured memories, newest first.

    ``{memories, total}``; without a scope: global plus the caller's user namespace."""
    q = parse_query(ctx.query, RestListQuery)
    targets = scopes.rest_envelope(ctx.principal, q.scope, q.scope_id)
    limit = parse_query(ctx.query, RestListLimit).limit  # after the scope rules, which may answer 403/404
    return _listing(memories.list_rows(ctx.principal.org_id, targets, type_=q.type or None, limit=limit))


@endpoint(bp, "/v1/api/memories", ["POST"], permission=WRITE, body=memories.RestSave,
          responses={201: sm.StructuredMemory, 200: sm.StructuredMemory},
          errors=("invalid_name", *_REST_SCOPE_ERRORS, "quota_exceeded"))
def save_structured_memory(ctx: Ctx):
    """Save a structured memory (an upsert of its name, scope and scope_id).

    201 with the memory when created, 200 when the identity existed (memory_id kept)."""
    saved = memories.save_rest(ctx.principal, ctx.body)
    return Reply(201 if saved.created else 200, dataclasses.asdict(saved.row))


@endpoint(bp, "/v1/api/memories/search", ["POST"], permission=READ, body=RestSearchBody,
          responses={200: sm.StructuredMemoryList}, errors=_REST_SCOPE_ERRORS, meter="read")
def search_structured_memories(ctx: Ctx):
    """Search structured memories, best first.

    ``{memories, total}``: BM25F over what the caller may see (without a scope: global plus the
    caller's user namespace)."""
    b = ctx.body
    targets = scopes.rest_envelope(ctx.principal, b.scope, b.scope_id)
    meter.note(recall=1)
    return _listing(memories.search_rows(ctx.principal.org_id, targets, b.query, type_=b.type, limit=b.limit))


@endpoint(bp, "/v1/api/memories/{name}", ["GET"], permission=READ, query=MemoryTargetQuery,
          responses={200: sm.StructuredMemory}, errors=("invalid_name", "memory_not_found", *_REST_SCOPE_ERRORS))
def get_structured_memory(ctx: Ctx, name: str):
    """Get a structured memory by name.

    The memory of ``(name, scope, scope_id)`` (scope defaults to global)."""
    q = parse_query(ctx.query, MemoryTargetQuery)
    target = scopes.rest_target(ctx.principal, q.scope, q.scope_id)
    return dataclasses.asdict(memories.get(ctx.principal.org_id, target, name))


@endpoint(bp, "/v1/api/memories/{name}", ["DELETE"], permission=WRITE, query=MemoryTargetQuery,
          responses={200: sm.StructuredMemoryDeleted},
          errors=("invalid_name", "memory_not_found", *_REST_SCOPE_ERRORS))
def delete_structured_memory(ctx: Ctx, name: str):
    """Delete a structured memory by name.

    ``{"status": "ok", "name": name}``; 404 ``Memory '<name>' not found``."""
    p = ctx.principal
    q = parse_query(ctx.query, MemoryTargetQuery)
    target = scopes.rest_target(p, q.scope, q.scope_id)
    return {"status": "ok", "name": memories.delete(p.org_id, target, name, actor=p.actor, surface="rest").name}


# --- workstreams, projects, sessions --------------------------------------------------------

@endpoint(bp, "/v1/api/workstreams", ["POST"], permission=WRITE, body=workstreams.WorkstreamRequest,
          responses={201: sm.Workstream}, errors=("workstream_exists",))
def create_workstream(ctx: Ctx):
    """Create a workstream owned by the caller.

    201 ``{workstream_id, title, owner}``."""
    return Reply(201, dataclasses.asdict(workstreams.create(ctx.principal, ctx.body)))


@endpoint(bp, "/v1/api/workstreams", ["GET"], permission=READ, query=StructuredPageQuery,
          responses={200: sm.WorkstreamPage})
def list_workstreams(ctx: Ctx):
    """List workstreams by id.

    ``{workstreams: [{workstream_id, title, owner}], next_cursor?}``: the caller's own (a
    ``service`` principal: every one of the org)."""
    q = parse_query(ctx.query, StructuredPageQuery)
    return _page("workstreams", workstreams.list_page(ctx.principal, limit=q.limit, cursor=q.cursor))


@endpoint(bp, "/v1/api/projects", ["GET"], permission=READ, query=StructuredPageQuery,
          responses={200: sm.ProjectPage})
def list_projects(ctx: Ctx):
    """List projects by id.

    ``{projects: [{project_id, name, active, owner}], next_cursor?}``: those the caller owns or is a
    member of (active ones); an ``admin.memories`` principal: every one of the org."""
    q = parse_query(ctx.query, StructuredPageQuery)
    return _page("projects", projects.list_page(ctx.principal, limit=q.limit, cursor=q.cursor))


@endpoint(bp, "/v1/api/projects", ["POST"], permission=WRITE, body=projects.ProjectRequest,
          responses={201: sm.Project}, errors=("project_exists",))
def create_project(ctx: Ctx):
    """Create a project owned by the caller.

    201 ``{project_id, name, active, owner}``."""
    return Reply(201, dataclasses.asdict(projects.create(ctx.principal, ctx.body)))


@endpoint(bp, "/v1/api/projects/{project_id}", ["PATCH"], permission=WRITE, body=projects.ProjectPatch,
          responses={200: sm.Project}, errors=_PROJECT_ERRORS)
def patch_project(ctx: Ctx, project_id: str):
    """Activate or deactivate a project.

    The project; by its owner or an ``admin.memories`` principal."""
    return dataclasses.asdict(projects.set_active(ctx.principal, project_id, ctx.body.active))


@endpoint(bp, "/v1/api/projects/{project_id}/members/{user_id}", ["PUT"], permission=WRITE,
          body=projects.MemberRequest, responses={200: sm.ProjectMember}, errors=_PROJECT_ERRORS)
def put_project_member(ctx: Ctx, project_id: str, user_id: str):
    """Add a project member or change its access.

    ``{project_id, user_id, access}``; by the owner or an ``admin.memories`` principal."""
    return dataclasses.asdict(projects.set_member(ctx.principal, project_id, user_id, ctx.body.access))


@endpoint(bp, "/v1/api/projects/{project_id}/members/{user_id}", ["DELETE"], permission=WRITE,
          responses={200: sm.ProjectMemberRemoved}, errors=(*_PROJECT_ERRORS, "member_not_found"))
def delete_project_member(ctx: Ctx, project_id: str, user_id: str):
    """Remove a project member.

    ``{status: "ok"}``; by the owner or an ``admin.memories`` principal."""
    projects.remove_member(ctx.principal, project_id, user_id)
    return {"status": "ok"}


def _session(s: sessions.Session) -> dict[str, Any]:
    """``{session_id, kind, user_id, workstream_id, project_id, parent_session_id, memory_enabled}``."""
    return {"session_id": s.session_id, "kind": s.kind, "user_id": s.user_id, "workstream_id": s.workstream_id,
            "project_id": s.project_id, "parent_session_id": s.parent_session_id,
            "memory_enabled": s.memory_enabled}


@endpoint(bp, "/v1/api/sessions", ["POST"], permission=READ, body=sessions.SessionRequest,
          responses={201: sm.StructuredSession},
          errors=("coordinator_requires_user", "project_access_denied", "workstream_not_found",
                  "project_not_found", "session_not_found", "conflict", "damaged"))
def create_session(ctx: Ctx):
    """Start a session.

    201 ``{session_id, kind, user_id, workstream_id, project_id, parent_session_id,
    memory_enabled}``."""
    return Reply(201, _session(sessions.create(ctx.principal, ctx.body)))


@endpoint(bp, "/v1/api/sessions", ["GET"], permission=READ, query=StructuredPageQuery,
          responses={200: sm.StructuredSessionPage})
def list_sessions(ctx: Ctx):
    """List sessions by id.

    ``{sessions: [session], next_cursor?}``: the sessions the caller may use (its user's; an
    anonymous token's own; a ``service`` principal: every one of the org)."""
    q = parse_query(ctx.query, StructuredPageQuery)
    return _page("sessions", sessions.list_page(ctx.principal, limit=q.limit, cursor=q.cursor), _session)


@endpoint(bp, "/v1/api/sessions/{session_id}", ["DELETE"], permission=READ, responses={200: sm.SessionEnded},
          errors=("session_not_found", "damaged"))
def delete_session(ctx: Ctx, session_id: str):
    """End a session (its memories stay).

    ``{status: "ok", session_id}``."""
    sessions.delete(ctx.principal, session_id)
    return {"status": "ok", "session_id": session_id}


@endpoint(bp, "/v1/api/sessions/{session_id}/memory", ["POST"], permission=READ, body=tool.ToolCall,
          responses={201: sm.StructuredMemory, 200: sm.MemoryToolResult},
          errors=("invalid_name", "invalid_type", "invalid_scope", "scope_unavailable", "scope_forbidden",
                  "coordinator_only", "project_access_denied", "project_read_only", "session_not_found",
                  "memory_not_found", "project_inactive", "damaged", "quota_exceeded"))
def session_memory(ctx: Ctx, session_id: str):
    """Run the memory tool in a session: save, get, search, delete or list.

    The REST equivalent's body and status (save: 201 created, 200 updated)."""
    return _tool(tool.run(ctx.principal, session_id, ctx.body))


@endpoint(bp, "/v1/api/sessions/{session_id}/context", ["POST"], permission=READ, body=context.ContextRequest,
          responses={200: sm.SessionContext}, errors=("session_not_found", "damaged"), meter="read")
def session_context(ctx: Ctx, session_id: str):
    """Get a turn's memory injection for a session.

    ``{system_message, injected, candidates, in_scope, nudge}``: ``injected`` the memory_ids."""
    t = context.turn(ctx.principal, session_id, ctx.body)
    size = len(t.system_message.encode("utf-8"))
    meter.note(context=1, inj_chars=len(t.system_message), inj_tok=size // BYTES_PER_TOKEN)
    return {"system_message": t.system_message, "injected": [r.memory_id for r in t.injected],
            "candidates": t.candidates, "in_scope": t.in_scope, "nudge": t.nudge}


# --- admin ------------------------------------------------------------------------------------

@endpoint(bp, "/v1/api/admin/memories", ["GET"], permission=ADMIN, query=AdminMemoryListQuery,
          responses={200: sm.StructuredMemoryList}, errors=("invalid_type", "invalid_scope", "damaged"))
def admin_list_memories(ctx: Ctx):
    """List memories across every scope (admin), newest first.

    ``{memories, total}``."""
    q = parse_query(ctx.query, AdminMemoryListQuery)
    return _listing(admin.list_all(ctx.principal.org_id, type_=q.type or None, scope=q.scope, scope_id=q.scope_id,
                                   limit=q.limit))


@endpoint(bp, "/v1/api/admin/memories/search", ["GET"], permission=ADMIN, query=AdminMemorySearchQuery,
          responses={200: sm.StructuredMemoryList}, errors=("invalid_type", "invalid_scope", "damaged"))
def admin_search_memories(ctx: Ctx):
    """Search memories across every scope (admin), best first.

    ``{memories, total}``."""
    q = parse_query(ctx.query, AdminMemorySearchQuery)
    return _listing(admin.search_all(ctx.principal.org_id, q.q, type_=q.type or None, scope=q.scope,
                                     scope_id=q.scope_id, limit=q.limit))


@endpoint(bp, "/v1/api/admin/memories/import", ["POST"], permission=ADMIN,
          body_types=("application/x-ndjson", "application/json", "text/plain"),
          responses={200: sm.MemoryImportReport}, errors=("damaged", "quota_exceeded"))
def admin_import(ctx: Ctx):
    """Import Turnstone memory rows (admin) from ndjson.

    ``{imported, skipped, errors: [{line, error, code}]}``."""
    r = admin.import_ndjson(ctx.principal.org_id, ctx.raw_body, actor=ctx.principal.actor)
    return {"imported": r.imported, "skipped": r.skipped,
            "errors": [{"line": line, "error": error, "code": code} for line, error, code in r.errors]}


@endpoint(bp, "/v1/api/admin/memories/{memory_id}", ["GET"], permission=ADMIN, responses={200: sm.StructuredMemory},
          errors=("memory_not_found", "damaged"))
def admin_get_memory(ctx: Ctx, memory_id: str):
    """Get a memory by id (admin).

    The memory; 404 ``Memory not found``."""
    return dataclasses.asdict(admin.get_by_id(ctx.principal.org_id, memory_id))


@endpoint(bp, "/v1/api/admin/memories/{memory_id}", ["PATCH"], permission=ADMIN, body=admin.DescriptionPatch,
          responses={200: sm.StructuredMemory}, errors=("memory_not_found", "damaged"))
def admin_patch_memory(ctx: Ctx, memory_id: str):
    """Change a memory's description (admin).

    The memory with its new description."""
    return dataclasses.asdict(admin.patch_description(ctx.principal.org_id, memory_id, ctx.body.description,
                                                      actor=ctx.principal.actor))


@endpoint(bp, "/v1/api/admin/memories/{memory_id}", ["DELETE"], permission=ADMIN,
          responses={200: sm.AdminMemoryDeleted}, errors=("memory_not_found", "damaged"))
def admin_delete_memory(ctx: Ctx, memory_id: str):
    """Delete a memory by id (admin).

    ``{"status": "ok"}``; 404 ``Memory not found`` with no audit event."""
    admin.delete_by_id(ctx.principal.org_id, memory_id, actor=ctx.principal.actor)
    return {"status": "ok"}


def _revision_row(rec: Memory) -> dict[str, Any]:
    """A revision as Turnstone's row (touch counters not kept per revision) plus its
    ``updated_at`` in ms."""
    return {**dataclasses.asdict(memories.row(rec)), "updated_at": rec.updated_at}


@endpoint(bp, "/v1/api/admin/memories/{memory_id}/history", ["GET"], permission=ADMIN,
          responses={200: sm.StructuredMemoryHistory}, errors=("memory_not_found", "damaged"))
def admin_memory_history(ctx: Ctx, memory_id: str):
    """A memory's revisions by id (admin), oldest first, a deleted memory's included.

    ``{revisions: [memory + {op, seq, actor, updated_at}], damaged?}``; 404 ``Memory not found``."""
    return render_history(admin.history_by_id(ctx.principal.org_id, memory_id), _revision_row)


@endpoint(bp, "/v1/api/admin/audit", ["GET"], permission=ADMIN, query=MemoryAuditQuery,
          responses={200: sm.MemoryAuditPage})
def admin_memory_audit(ctx: Ctx):
    """List memory audit events (admin), oldest first.

    ``{events, next_cursor}``."""
    q = parse_query(ctx.query, MemoryAuditQuery)
    page = admin.audit_page(ctx.principal.org_id, action=q.action, since=q.since, cursor=q.cursor, limit=q.limit)
    return {"events": page.events, "next_cursor": page.next_cursor}
