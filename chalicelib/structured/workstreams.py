"""Workstreams: ``POST /v1/api/workstreams {workstream_id?, title}``; the caller
owns it. A workstream's memories live in the ``workstream`` scope keyed by its id; only its owner
or a ``service`` principal may use them over REST (``Cannot access another user's workstream
memories``). The item's ``access_count`` counts the sessions attached so far: a new session on a workstream that
had one before is *resuming* it (the resume nudge)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pydantic import ConfigDict, Field

from ..auth.principal import Permission, Principal
from ..errors import BadRequest, Conflict, NotFound
from ..validation import Line, Model
from . import listing, objects

ID_RE = objects.ID_RE


class WorkstreamRequest(Model):
    """Body of ``POST /v1/api/workstreams``."""

    model_config = ConfigDict(extra="forbid")
    workstream_id: Line | None = Field(None, min_length=1, max_length=128)
    title: Line = Field("", max_length=512)


def check_id(value: str, field: str) -> str:
    """An object id usable as a key and in a namespace name; 400 ``validation_error`` otherwise."""
    if not ID_RE.fullmatch(value):
        raise BadRequest(f"{field} must be 1 to 128 characters of letters, digits, '_', '.', ':' or '-'.",
                         details={"field": field})
    return value


@dataclass(frozen=True)
class Workstream:
    """A workstream: ``{workstream_id, title, owner}`` (``owner`` ``None`` for an anonymous creator)."""

    workstream_id: str
    title: str
    owner: str | None


def _of(d: objects.Stored) -> Workstream:
    return Workstream(d.text("workstream_id"), d.text("title"), d.opt("owner"))


def create(p: Principal, req: WorkstreamRequest) -> Workstream:
    """Create a workstream owned by the caller's user; 409 ``workstream_exists`` when the id is taken."""
    wid = check_id(req.workstream_id or "ws_" + uuid.uuid4().hex, "workstream_id")
    item = objects.new(p.org_id, "workstream", (wid,),
                       {"workstream_id": wid, "title": req.title, "owner": p.user_id})
    objects.insert(item, Conflict(f"Workstream '{wid}' already exists.", code="workstream_exists"),
                   objects.Event("workstream.create", p.actor, wid, {}))
    return _of(objects.Stored(item.data))


def get(org_id: str, workstream_id: str) -> Workstream | None:
    """The workstream, or ``None``; 409 ``damaged`` when it cannot be read."""
    d = objects.data(org_id, "workstream", workstream_id)
    return _of(d) if d is not None else None


def require(org_id: str, workstream_id: str) -> Workstream:
    """The workstream; 404 ``workstream_not_found`` (message ``Workstream not found``)."""
    ws = get(org_id, workstream_id)
    if ws is None:
        raise NotFound("Workstream not found", code="workstream_not_found")
    return ws


def sessions_attached(org_id: str, workstream_id: str) -> int:
    """How many sessions were attached to the workstream so far."""
    return objects.count_of(org_id, "workstream", workstream_id)


def visible_to(p: Principal, ws: Workstream) -> bool:
    """True when ``p`` may see the workstream: its owner (a signed-in user), or a ``service``
    principal, the callers that may use its memories."""
    return p.has(Permission.SERVICE) or (p.user_id is not None and ws.owner == p.user_id)


def list_page(p: Principal, *, limit: int, cursor: str | None) -> listing.Page[Workstream]:
    """A page of the workstreams ``p`` may see, by id (``listing.page``'s limit and errors)."""
    def shown(d: objects.Stored) -> Workstream | None:
        ws = _of(d)
        return ws if visible_to(p, ws) else None

    return listing.page(p.org_id, "workstream", shown, limit=limit, cursor=cursor)
