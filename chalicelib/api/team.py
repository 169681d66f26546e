"""Team memory over HTTP (keystone-team-memory.md "Routes"): spaces and members
(``context:admin``) under ``/api/v1/context``, entries under ``/api/v1/context/memory``. Per-space
access (member grants, deny rules) is checked by ``chalicelib.team.permissions``; a route parses,
calls one service function and renders its domain value here (the wire shapes below)."""

from __future__ import annotations

from typing import Annotated, Any

from chalice import Blueprint
from pydantic import ConfigDict, Field, model_validator

from ..auth.principal import Permission
from ..errors import BadRequest
from ..team import accept, dlp, entries, permissions, retrieval, spaces
from ..team.limits import get_limits
from ..team.merge import b64
from ..team.store import KINDS, STATUSES, Attribution, Entry, LogRow, Space
from ..validation import Model
from .http import Ctx, IntRange, Reply, ResponseModels, damaged_header, endpoint, parse_query

bp = Blueprint(__name__)
m = ResponseModels("chalicelib.api.team_models")

ADMIN = Permission.CONTEXT_ADMIN
BASE = "/api/v1/context"
MEM = f"{BASE}/memory"


# --- wire shapes ------------------------------------------------------------------------------

_SPACE_FIELDS = ("id", "name", "kind", "classification", "dlp_policy", "team_memory_enabled", "created_at",
                 "updated_at", "created_by")


def render_space(space: Space) -> dict[str, Any]:
    """``{id, name, kind, classification, dlp_policy, team_memory_enabled, created_at, updated_at,
    created_by, entries}`` (the stored fields there are; times in ms)."""
    return {k: space.data[k] for k in _SPACE_FIELDS if k in space.data} | {"entries": int(space.entries_live)}


def render_entry(e: Entry) -> dict[str, Any]:
    """``{id, spaceId, kind, title, status, links, supersedes, supersededBy, classification,
    metaVersion, revision, createdBy, createdAt, updatedAt, acceptedAt, acceptedBy}``; the title is
    DLP-gated like the text, times ISO 8601 UTC with milliseconds."""
    d = e.doc
    return {"id": e.entry_id, "spaceId": e.space_id, "kind": e.kind, "title": dlp.gated(d["title"])[0],
            "status": e.status, "links": list(d.get("links", [])), "supersedes": d.get("supersedes"),
            "supersededBy": d.get("superseded_by"), "classification": d["classification"],
            "metaVersion": e.meta_version, "revision": e.revision, "createdBy": d["created_by"],
            "createdAt": entries.iso(e.created_at), "updatedAt": entries.iso(e.updated_at),
            "acceptedAt": entries.iso(d.get("accepted_at")), "acceptedBy": d.get("accepted_by")}


def render_detail(got: entries.EntryDetail) -> dict[str, Any]:
    """The entry plus ``text``, ``dlpFindings``, ``documentSha256``, ``projectionSha256``,
    ``stateVector``, ``snapshot`` (base64), ``seq`` and ``limits``."""
    return {**render_entry(got.entry), "text": got.text, "dlpFindings": got.dlp_findings,
            "documentSha256": got.document_sha256, "projectionSha256": got.entry.doc.get("projection_sha256"),
            "stateVector": b64(got.state_vector), "snapshot": b64(got.snapshot), "seq": got.entry.log_seq,
            "limits": got.limits.public()}


def render_page(page: entries.EntryPage) -> dict[str, Any]:
    """``{entries: [entry + snippet?], cursor?}``."""
    listed = [render_entry(it.entry) | ({"snippet": it.snippet} if it.snippet is not None else {})
              for it in page.entries]
    return {"entries": listed, **({"cursor": page.cursor} if page.cursor is not None else {})}


def render_update(res: entries.UpdateResult) -> dict[str, Any]:
    """``{duplicate: false, seq, stateVector}`` or ``{duplicate: true, seq}``."""
    if res.duplicate or res.state_vector is None:
        return {"duplicate": res.duplicate, "seq": res.seq}
    return {"duplicate": False, "seq": res.seq, "stateVector": b64(res.state_vector)}


def _render_edit(row: LogRow) -> dict[str, Any]:
    return {"seq": row.seq, "updateId": row.update_id, "update": b64(row.payload or b""), "author": row.author,
            "at": entries.iso(row.at)}


def render_catch_up(got: entries.CatchUp) -> dict[str, Any]:
    """``{update, seq}``, ``{snapshot, seq}`` or ``{updates: [{seq, updateId, update, author, at}], seq}``."""
    if got.update is not None:
        return {"update": b64(got.update), "seq": got.seq}
    if got.snapshot is not None:
        return {"snapshot": b64(got.snapshot), "seq": got.seq}
    return {"updates": [_render_edit(r) for r in got.updates or []], "seq": got.seq}


def render_history_item(e: entries.HistoryItem) -> dict[str, Any]:
    """``{type, action, author, at, details}`` (status and meta) or ``{type, action, seq,
    updateId, author, bytes, at}`` (edits)."""
    if e.type == "edit":
        return {"type": e.type, "action": e.action, "seq": e.seq, "updateId": e.update_id, "author": e.author,
                "bytes": e.size, "at": entries.iso(e.at)}
    return {"type": e.type, "action": e.action, "author": e.author, "at": entries.iso(e.at), "details": e.details}


def render_retrieval(res: retrieval.Retrieval) -> dict[str, Any]:
    """``{results: [{entryId, revision, kind, title, text, score, metadata: {memory, spaceId}}],
    attributionId, retrieval}``."""
    return {"results": [{"entryId": r.entry_id, "revision": r.revision, "kind": r.kind, "title": r.title,
                         "text": r.text, "score": r.score, "metadata": {"memory": r.meta, "spaceId": r.space_id}}
                        for r in res.results],
            "attributionId": res.attribution_id, "retrieval": res.retrieval}


def render_attribution(a: Attribution) -> dict[str, Any]:
    """``{id, actor, entries: [{entryId, revision}], at}``."""
    return {"id": a.id, "actor": a.actor, "entries": a.entries, "at": entries.iso(a.at)}


# --- query strings ---------------------------------------------------------------------------

def _required_space(schema: dict[str, Any]) -> None:
    # the service answers a missing spaceId itself (its own message), so the model leaves it optional
    schema["properties"]["spaceId"] = {"type": "string", "minLength": 1, "description": "The space's id."}
    schema["required"] = ["spaceId"]


class EntriesQuery(Model):
    """``GET .../entries?spaceId=&status=&kind=&q=&limit=&cursor=``: ``limit`` 1..200 (default 50)
    is read first; ``entries.list_entries`` checks the rest (400 ``validation_error`` naming it)."""

    model_config = ConfigDict(json_schema_extra=_required_space)
    limit: Annotated[int, IntRange(1, 200)] = 50
    spaceId: str | None = None
    status: str | None = Field(None, json_schema_extra={"enum": [*STATUSES, None]})
    kind: str | None = Field(None, json_schema_extra={"enum": [*KINDS, None]})
    q: str | None = None
    cursor: str | None = None


class SpacesQuery(Model):
    """``GET .../spaces?limit=&cursor=``: ``limit`` 1..``permissions.SPACES_PAGE_MAX`` (default
    ``permissions.SPACES_PAGE_DEFAULT``)."""

    limit: Annotated[int, IntRange(1, permissions.SPACES_PAGE_MAX)] = permissions.SPACES_PAGE_DEFAULT
    cursor: str | None = None


class UpdatesQuery(Model):
    """``GET .../entries/{id}/updates?stateVector=`` or ``?sinceSeq=`` (0..10**12, default 0): both
    present, even empty, is 400 "Give sinceSeq or stateVector, not both." before either is read."""

    stateVector: str | None = None
    sinceSeq: Annotated[int, IntRange(0, 10**12)] = 0

    @model_validator(mode="before")
    @classmethod
    def _not_both(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("stateVector") is not None and "sinceSeq" in data:
            raise BadRequest("Give sinceSeq or stateVector, not both.", details={"field": "stateVector"})
        return data


class AttributionsQuery(Model):
    """``GET .../attributions?spaceId=&limit=``: ``limit`` 1..1000 (default 100) is read first;
    ``retrieval.attributions`` checks ``spaceId``."""

    model_config = ConfigDict(json_schema_extra=_required_space)
    limit: Annotated[int, IntRange(1, 1000)] = 100
    spaceId: str | None = None


def _limits(ctx: Ctx) -> None:
    get_limits()  # an invalid KEYSTONE_CONTEXT_MEMORY_* value fails here as a configuration error


@endpoint(bp, f"{BASE}/spaces", ["POST"], permission=ADMIN, body=spaces.SpaceCreate,
          responses={201: m.TeamSpace})
def create_space(ctx: Ctx):
    """Create a team or personal space: 201 the space (snake_case or camelCase names in the body)."""
    return 201, render_space(spaces.create_space(ctx.principal.org_id, ctx.body, ctx.principal.actor))


@endpoint(bp, f"{BASE}/spaces", ["GET"], query=SpacesQuery, responses={200: m.TeamSpacePage},
          errors=("damaged",))
def list_spaces(ctx: Ctx):
    """List the spaces the caller may see, by id: ``{spaces, next_cursor?}``: every space of the
    org for ``context:admin``, else the spaces the caller may read; spaces left out as damaged are
    counted in ``X-Cairn-Damaged``."""
    q = parse_query(ctx.query, SpacesQuery)
    page = permissions.visible_spaces(ctx.principal, limit=q.limit, cursor=q.cursor)
    body: dict[str, Any] = {"spaces": [render_space(s) for s in page.spaces]}
    if page.next_cursor is not None:
        body["next_cursor"] = page.next_cursor
    return Reply(200, body, headers=damaged_header(page.damaged))


@endpoint(bp, f"{BASE}/spaces/{{space_id}}", ["PATCH"], permission=ADMIN, body=spaces.SpacePatch,
          responses={200: m.TeamSpace}, errors=("not_found", "damaged"))
def patch_space(ctx: Ctx, space_id: str):
    """Change a space's name, classification, DLP policy or team-memory switch: the changed space."""
    return render_space(spaces.patch_space(ctx.principal.org_id, space_id, ctx.body, ctx.principal.actor))


@endpoint(bp, f"{BASE}/spaces/{{space_id}}", ["GET"], permission=ADMIN, responses={200: m.TeamSpace},
          errors=("not_found", "damaged"))
def get_space(ctx: Ctx, space_id: str):
    """Read a space."""
    return render_space(spaces.require_space(ctx.principal.org_id, space_id))


@endpoint(bp, f"{BASE}/spaces/{{space_id}}/members/{{member_id}}", ["PUT"], permission=ADMIN, body=spaces.MemberPut,
          responses={200: m.TeamSpaceMember}, errors=("not_found", "damaged"))
def put_space_member(ctx: Ctx, space_id: str, member_id: str):
    """Set a member's grants in a space, replacing earlier ones: ``{spaceId, memberId, permissions}``."""
    m = spaces.put_member(ctx.principal.org_id, space_id, member_id, ctx.body, ctx.principal.actor)
    return {"spaceId": m.space_id, "memberId": m.member_id, "permissions": m.permissions}


@endpoint(bp, f"{BASE}/spaces/{{space_id}}/members/{{member_id}}", ["DELETE"], permission=ADMIN,
          responses={200: m.TeamSpaceMemberRemoved}, errors=("not_found", "damaged"))
def delete_space_member(ctx: Ctx, space_id: str, member_id: str):
    """Remove a member from a space: ``{removed}``, false when it was not a member."""
    return {"removed": spaces.delete_member(ctx.principal.org_id, space_id, member_id, ctx.principal.actor)}


@endpoint(bp, f"{BASE}/deny-rules", ["PUT"], permission=ADMIN, body=spaces.DenyRules,
          responses={200: m.TeamDenyRules})
def put_deny_rules(ctx: Ctx):
    """Replace the org's deny rules: ``{rules}``, the whole list."""
    return {"rules": spaces.put_deny_rules(ctx.principal.org_id, ctx.body, ctx.principal.actor)}


@endpoint(bp, f"{BASE}/deny-rules", ["GET"], permission=ADMIN, responses={200: m.TeamDenyRules},
          errors=("damaged",))
def get_deny_rules(ctx: Ctx):
    """The org's deny rules: ``{rules}``."""
    return {"rules": spaces.deny_rules(ctx.principal.org_id)}


@endpoint(bp, f"{MEM}/entries", ["POST"], body=entries.EntryCreate, responses={201: m.TeamEntry},
          errors=("not_found", "context.collab_policy.capability_disabled", "space_entry_limit", "damaged",
                  "personal_space"))
def create_entry(ctx: Ctx):
    """Create an empty draft entry in a team space: 201 the draft."""
    _limits(ctx)
    return 201, render_entry(entries.create(ctx.principal, ctx.body))


@endpoint(bp, f"{MEM}/entries", ["GET"], query=EntriesQuery, responses={200: m.TeamEntryPage},
          errors=("not_found", "damaged"))
def list_entries(ctx: Ctx):
    """List or search a space's entries, oldest first: ``{entries, cursor?}``; entries left out as
    damaged are counted in ``X-Cairn-Damaged``."""
    q = parse_query(ctx.query, EntriesQuery)
    page = entries.list_entries(ctx.principal, q.spaceId, status=q.status, kind=q.kind, q=q.q, limit=q.limit,
                                cursor=q.cursor)
    return Reply(200, render_page(page), headers=damaged_header(page.damaged))


@endpoint(bp, f"{MEM}/entries/{{entry_id}}", ["GET"], responses={200: m.TeamEntryDetail},
          errors=("not_found", "damaged"))
def get_entry(ctx: Ctx, entry_id: str):
    """Read an entry with its text, hashes, state vector, snapshot and limits."""
    _limits(ctx)
    return render_detail(entries.get(ctx.principal, entry_id))


@endpoint(bp, f"{MEM}/entries/{{entry_id}}", ["PATCH"], body=entries.EntryPatch, responses={200: m.TeamEntry},
          errors=("not_found", "context.collab_policy.capability_disabled", "meta_version_conflict",
                  "entry_read_only", "damaged"))
def patch_entry(ctx: Ctx, entry_id: str):
    """Change an entry's title, kind, links, supersedes or classification: the entry."""
    return render_entry(entries.patch(ctx.principal, entry_id, ctx.body))


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/updates", ["POST"], body=entries.UpdatePost,
          responses={200: m.TeamUpdateResult},
          errors=("rate_limited", "client_id_owned", "not_found", "context.collab_policy.capability_disabled",
                  "update_id_reused", "entry_read_only", "missing_dependency", "update_log_full", "damaged",
                  "update_too_large", "unsupported_update", "unit_cap_reached", "text_too_large"))
def post_entry_update(ctx: Ctx, entry_id: str):
    """Post one Yjs V1 update to an entry's text: ``{duplicate, seq, stateVector?}``."""
    _limits(ctx)
    return render_update(entries.post_update(ctx.principal, entry_id, ctx.body))


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/updates", ["GET"], query=UpdatesQuery, responses={200: m.TeamCatchUp},
          errors=("not_found", "conflict", "damaged"))
def get_entry_updates(ctx: Ctx, entry_id: str):
    """Catch up on an entry's edits: ``{updates}``, ``{snapshot}`` or ``{update}``, with ``seq``."""
    q = parse_query(ctx.query, UpdatesQuery)
    return render_catch_up(entries.get_updates(ctx.principal, entry_id, state_vector=q.stateVector,
                                               since_seq=q.sinceSeq))


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/accept", ["POST"], body=accept.AcceptBody, responses={200: m.TeamEntry},
          errors=("context.person_required", "context.memory.self_accept",
                  "context.collab_policy.capability_disabled", "not_found", "invalid_transition",
                  "document_changed", "damaged", "dlp_blocked"))
def accept_entry(ctx: Ctx, entry_id: str):
    """Accept the entry's current document as a new revision, pinned by its hash: the accepted entry."""
    return render_entry(accept.accept(ctx.principal, entry_id, ctx.body))


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/accepted", ["GET"], responses={200: m.TeamAcceptedRevision},
          errors=("not_found", "entry_not_accepted", "damaged"))
def get_accepted(ctx: Ctx, entry_id: str):
    """Read an entry's last accepted revision: ``{entryId, revision, title, text, dlpFindings,
    documentSha256, acceptedBy, acceptedAt}``; 404 ``entry_not_accepted`` when there is none."""
    a = accept.last_accepted(ctx.principal, entry_id)
    return {"entryId": a.entry_id, "revision": a.revision, "title": a.title, "text": a.text,
            "dlpFindings": a.dlp_findings, "documentSha256": a.document_sha256, "acceptedBy": a.accepted_by,
            "acceptedAt": entries.iso(a.accepted_at)}


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/supersede", ["POST"], body=accept.SupersedeBody,
          responses={200: m.TeamEntry}, errors=("not_found", "invalid_transition", "damaged"))
def supersede_entry(ctx: Ctx, entry_id: str):
    """Supersede an accepted entry by another accepted entry of the same space: the superseded entry."""
    return render_entry(accept.supersede(ctx.principal, entry_id, ctx.body))


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/archive", ["POST"], responses={200: m.TeamEntry},
          errors=("not_found", "invalid_transition", "damaged"))
def archive_entry(ctx: Ctx, entry_id: str):
    """Archive an entry, retiring it from retrieval: the archived entry."""
    return render_entry(accept.archive(ctx.principal, entry_id))


@endpoint(bp, f"{MEM}/entries/{{entry_id}}/history", ["GET"], responses={200: m.TeamEntryHistory},
          errors=("not_found", "damaged"))
def entry_history(ctx: Ctx, entry_id: str):
    """An entry's status events and edits, with authors and times: ``{events}``."""
    return {"events": [render_history_item(e) for e in entries.history(ctx.principal, entry_id)]}


@endpoint(bp, f"{MEM}/retrieve", ["POST"], body=retrieval.RetrieveBody, responses={200: m.TeamRetrieval},
          errors=("not_found", "damaged"))
def retrieve_entries(ctx: Ctx):
    """Rank the accepted entries of the spaces asked for: ``{results, attributionId, retrieval}``."""
    return render_retrieval(retrieval.retrieve(ctx.principal, ctx.body))


@endpoint(bp, f"{MEM}/attributions", ["GET"], permission=ADMIN, query=AttributionsQuery,
          responses={200: m.TeamAttributionList}, errors=("not_found", "damaged"))
def list_attributions(ctx: Ctx):
    """A space's retrieval attributions, newest first: ``{attributions}``."""
    q = parse_query(ctx.query, AttributionsQuery)
    rows = retrieval.attributions(ctx.principal, q.spaceId, limit=q.limit)
    return {"attributions": [render_attribution(a) for a in rows]}
