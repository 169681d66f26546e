"""Team memory over HTTP (keystone-team-memory.md "Routes"): spaces and members
(``context:admin``) under ``/api/v1/context``, entries under ``/api/v1/context/memory``. Per-space
access (member grants, deny rules) is checked by ``chalicelib.team.permissions``; a route parses,
calls one service function and renders."""

from __future__ import annotations

from chalice import Blueprint

from ..auth.principal import Permission
from ..errors import BadRequest
from ..team import accept, entries, retrieval, spaces
from ..team.limits import get_limits
from .http import Ctx, Reply, damaged_header, endpoint, query_int

bp = Blueprint(__name__)

ADMIN = Permission.CONTEXT_ADMIN
BASE = "/api/v1/context"
MEM = f"{BASE}/memory"


def _limits(ctx: Ctx) -> None:
    get_limits()  # an invalid KEYSTONE_CONTEXT_MEMORY_* value fails here as a configuration error


@endpoint(bp, f"{BASE}/spaces", ["POST"], permission=ADMIN, body=spaces.SpaceCreate)
def create_space(ctx: Ctx):
    """201 the space."""
    return 201, spaces.create_space(ctx.principal.org_id, ctx.body, ctx.principal.actor)


@endpoint(bp, f"{BASE}/spaces/{{space_id}}", ["PATCH"], permission=ADMIN, body=spaces.SpacePatch)
def patch_space(ctx: Ctx, space_id: str):
    """The changed space."""
    return spaces.patch_space(ctx.principal.org_id, space_id, ctx.body, ctx.principal.actor)


@endpoint(bp, f"{BASE}/spaces/{{space_id}}", ["GET"], permission=ADMIN)
def get_space(ctx: Ctx, space_id: str):
    """The space."""
    return spaces.public(spaces.require_space(ctx.principal.org_id, space_id))


@endpoint(bp, f"{BASE}/spaces/{{space_id}}/members/{{member_id}}", ["PUT"], permission=ADMIN, body=spaces.MemberPut)
def put_member(ctx: Ctx, space_id: str, member_id: str):
    """``{spaceId, memberId, permissions}``."""
    return spaces.put_member(ctx.principal.org_id, space_id, member_id, ctx.body, ctx.principal.actor)


@endpoint(bp, f"{BASE}/spaces/{{space_id}}/members/{{member_id}}", ["DELETE"], permission=ADMIN)
def delete_member(ctx: Ctx, space_id: str, member_id: str):
    """``{removed}``."""
    return spaces.delete_member(ctx.principal.org_id, space_id, member_id, ctx.principal.actor)


@endpoint(bp, f"{BASE}/deny-rules", ["PUT"], permission=ADMIN, body=spaces.DenyRules)
def put_deny_rules(ctx: Ctx):
    """``{rules}`` (the whole list, replaced)."""
    return spaces.put_deny_rules(ctx.principal.org_id, ctx.body, ctx.principal.actor)


@endpoint(bp, f"{BASE}/deny-rules", ["GET"], permission=ADMIN)
def get_deny_rules(ctx: Ctx):
    """``{rules}``."""
    return {"rules": spaces.deny_rules(ctx.principal.org_id)}


@endpoint(bp, f"{MEM}/entries", ["POST"], body=entries.EntryCreate)
def create_entry(ctx: Ctx):
    """201 the new draft."""
    _limits(ctx)
    return 201, entries.create(ctx.principal, ctx.body)


@endpoint(bp, f"{MEM}/entries", ["GET"])
def list_entries(ctx: Ctx):
    """``{entries, cursor?}``; entries left out as damaged are counted in ``X-Cairn-Damaged``."""
    body = entries.list_entries(ctx.principal, ctx.query.get("spaceId"), status=ctx.query.get("status"),
                                kind=ctx.query.get("kind"), q=ctx.query.get("q"),
                                limit=query_int(ctx.query, "limit", 50, 1, 200), cursor=ctx.query.get("cursor"))
    return Reply(200, body, headers=damaged_header(body.pop("damaged", 0)))


@endpoint(bp, f"{MEM}/entries/{{entry_id}}", ["GET"])
def get_entry(ctx: Ctx, entry_id: str):
    """The entry with text, hashes, state vector, snapshot and limits."""
    _limits(ctx)
    return entries.get(ctx.principal, entry_id)


@endpoint(bp, f"{MEM}/entries/{{entry_id}}", ["PATCH"], body=entries.EntryPatch)
def patch_entry(ctx: Ctx, entry_id: str):
    """The entry."""
    return entries.patch(ctx.principal, entry_id, ctx.body)


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/updates", ["POST"], body=entries.UpdatePost)
def post_update(ctx: Ctx, entry_id: str):
    """``{duplicate, seq, stateVector?}``."""
    _limits(ctx)
    return entries.post_update(ctx.principal, entry_id, ctx.body)


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/updates", ["GET"])
def get_updates(ctx: Ctx, entry_id: str):
    """``{updates}``, ``{snapshot}`` or ``{update}``."""
    sv = ctx.query.get("stateVector")
    if sv is not None and "sinceSeq" in ctx.query:
        raise BadRequest("Give sinceSeq or stateVector, not both.", details={"field": "stateVector"})
    return entries.get_updates(ctx.principal, entry_id, since_seq=query_int(ctx.query, "sinceSeq", 0, 0, 10**12),
                               state_vector=sv)


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/accept", ["POST"], body=accept.AcceptBody)
def accept_entry(ctx: Ctx, entry_id: str):
    """The accepted entry."""
    return accept.accept(ctx.principal, entry_id, ctx.body)


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/supersede", ["POST"], body=accept.SupersedeBody)
def supersede_entry(ctx: Ctx, entry_id: str):
    """The superseded entry."""
    return accept.supersede(ctx.principal, entry_id, ctx.body)


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/archive", ["POST"])
def archive_entry(ctx: Ctx, entry_id: str):
    """The archived entry."""
    return accept.archive(ctx.principal, entry_id)


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/history", ["GET"])
def entry_history(ctx: Ctx, entry_id: str):
    """``{events}``."""
    return entries.history(ctx.principal, entry_id)


@endpoint(bp, f"{MEM}/retrieve", ["POST"], body=retrieval.RetrieveBody)
def retrieve(ctx: Ctx):
    """``{results, attributionId, retrieval}``."""
    return retrieval.retrieve(ctx.principal, ctx.body)


@endpoint(bp, f"{MEM}/attributions", ["GET"], permission=ADMIN)
def list_attributions(ctx: Ctx):
    """``{attributions}``."""
    return retrieval.attributions(ctx.principal, ctx.query.get("spaceId"),
                                  limit=query_int(ctx.query, "limit", 100, 1, 1000))
