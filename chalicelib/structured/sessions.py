"""Sessions: ``POST /v1/api/sessions {kind, workstream_id?, project_id?,
parent_session_id?, memory_enabled?, user_id?}`` -> ``{session_id, kind, user_id, workstream_id,
project_id}``.

- The acting user is the caller's own; a principal with the ``service`` permission may name any
  ``user_id`` of its org; anyone else naming another user is 403 ``forbidden``.
- A coordinator session needs a real user: no anonymous or api_key coordinator (400
  ``coordinator_requires_user``).
- A session with ``parent_session_id`` is interactive and inherits the parent's user (a
  coordinator's child).
- Session routes answer only the session's user (or, for an anonymous session, the token that
  created it) or a ``service`` principal; anyone else gets 404 ``session_not_found``.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Literal

from pydantic import ConfigDict, Field, StrictBool

from ..auth.principal import Permission, Principal
from ..errors import BadRequest, Forbidden, NotFound
from ..validation import Line, Model
from . import listing, objects, projects, workstreams
from .workstreams import check_id


class SessionRequest(Model):
    """Body of ``POST /v1/api/sessions``."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["interactive", "coordinator"] = "interactive"
    workstream_id: Line | None = Field(None, min_length=1, max_length=128)
    project_id: Line | None = Field(None, min_length=1, max_length=128)
    parent_session_id: Line | None = Field(None, min_length=1, max_length=128)
    memory_enabled: StrictBool = True
    user_id: Line | None = Field(None, min_length=1, max_length=128)


@dataclasses.dataclass(frozen=True)
class Session:
    """A session as the scope rules see it. ``child`` is true for a session with a parent."""

    session_id: str
    kind: str
    user_id: str | None
    workstream_id: str | None
    project_id: str | None
    parent_session_id: str | None
    memory_enabled: bool
    resumed: bool
    token_id: str

    @property
    def child(self) -> bool:
        return self.parent_session_id is not None


def is_service(p: Principal) -> bool:
    """True when ``p`` may act for any user of its org (the ``service`` permission)."""
    return p.has(Permission.SERVICE)


def _acting_user(p: Principal, requested: str | None) -> str | None:
    if requested is None or requested == p.user_id:
        return p.user_id
    if not is_service(p):
        raise Forbidden("Only a service principal may act for another user.", details={"field": "user_id"})
    return check_id(requested, "user_id")


def _may_use(p: Principal, s: Session) -> bool:
    if is_service(p):
        return True
    if s.user_id is not None:
        return p.user_id == s.user_id
    return p.token_id == s.token_id


def may_coordinate(p: Principal, user_id: str | None) -> bool:
    """True when ``p`` may open a coordinator session for ``user_id``: an authenticated user, never
    an anonymous session or an API key."""
    return bool(user_id) and p.kind != "api_key"


def kinds(p: Principal) -> tuple[str, ...]:
    """The session kinds ``p`` may open for itself (``create``'s rule, for tools that offer a choice)."""
    return ("interactive", "coordinator") if may_coordinate(p, p.user_id) else ("interactive",)


def _user(p: Principal, req: SessionRequest) -> str | None:
    """The session's user: the parent's for a child session, else the acting user."""
    if req.parent_session_id is None:
        return _acting_user(p, req.user_id)
    if req.kind != "interactive":
        raise BadRequest("A session with a parent_session_id is interactive.", details={"field": "kind"})
    parent = require(p, req.parent_session_id)
    if req.user_id is not None and req.user_id != parent.user_id:
        raise BadRequest("A child session inherits its parent's user.", details={"field": "user_id"})
    return parent.user_id


def _resumes(p: Principal, req: SessionRequest, user_id: str | None) -> bool:
    """Check the attachments (workstream owner, project access): True when the session resumes a
    workstream that had sessions before."""
    resumed = False
    if req.workstream_id is not None:
        ws = workstreams.require(p.org_id, req.workstream_id)
        resumed = workstreams.sessions_attached(p.org_id, req.workstream_id) > 0
        if ws.owner != user_id and not is_service(p):
            raise Forbidden("Cannot access another user's workstream", details={"field": "workstream_id"})
    if req.project_id is not None:
        proj = projects.require(p.org_id, req.project_id)
        if projects.access(p.org_id, proj, user_id) is None:
            raise Forbidden(f"No access to project '{req.project_id}'.", code="project_access_denied")
    return resumed


def create(p: Principal, req: SessionRequest) -> Session:
    """Create a session; see the module docstring for the rules. Raises 400
    ``coordinator_requires_user`` / ``validation_error``, 403 ``forbidden`` (another user's
    workstream) / ``project_access_denied``, 404 ``workstream_not_found`` / ``project_not_found``
    / ``session_not_found`` (parent). Nothing is written on error."""
    user_id = _user(p, req)
    if req.kind == "coordinator" and not may_coordinate(p, user_id):
        raise BadRequest("A coordinator session needs an authenticated user (no anonymous or api_key "
                         "coordinator).", code="coordinator_requires_user")
    resumed = _resumes(p, req, user_id)
    s = Session(session_id="ses_" + uuid.uuid4().hex, kind=req.kind, user_id=user_id,
                workstream_id=req.workstream_id, project_id=req.project_id,
                parent_session_id=req.parent_session_id, memory_enabled=req.memory_enabled, resumed=resumed,
                token_id=p.token_id)
    item = objects.new(p.org_id, "session", (s.session_id,), dataclasses.asdict(s))
    # count attached sessions: a later session is resuming the workstream
    objects.insert_counting(item, ("workstream", (req.workstream_id,)) if req.workstream_id is not None else None,
                            objects.Event("session.create", p.actor, s.session_id, {"kind": req.kind}))
    return s


def _of(d: objects.Stored) -> Session:
    return Session(session_id=d.text("session_id"), kind=d.text("kind"), user_id=d.opt("user_id"),
                   workstream_id=d.opt("workstream_id"), project_id=d.opt("project_id"),
                   parent_session_id=d.opt("parent_session_id"), memory_enabled=d.flag("memory_enabled", True),
                   resumed=d.flag("resumed", False), token_id=d.text("token_id"))


def load(org_id: str, session_id: str) -> Session | None:
    """The session, or ``None``; 409 ``damaged`` when its stored object cannot be read."""
    d = objects.data(org_id, "session", session_id)
    return _of(d) if d is not None else None


def require(p: Principal, session_id: str) -> Session:
    """The session if ``p`` may use it, else 404 ``session_not_found`` (no hint that it exists)."""
    s = load(p.org_id, session_id)
    if s is None or not _may_use(p, s):
        raise NotFound(f"Session '{session_id}' not found.", code="session_not_found")
    return s


def delete(p: Principal, session_id: str) -> None:
    """End a session (its memories stay), audited as ``session.delete``; 404
    ``session_not_found`` as ``require`` (also when a concurrent call ended it first)."""
    require(p, session_id)
    if not objects.remove(p.org_id, "session", session_id,
                          event=objects.Event("session.delete", p.actor, session_id, {})):
        raise NotFound(f"Session '{session_id}' not found.", code="session_not_found")


def list_page(p: Principal, *, limit: int, cursor: str | None) -> listing.Page[Session]:
    """A page of the sessions ``p`` may use (the rule of ``require``), by id (``listing.page``'s
    limit and errors)."""
    def shown(d: objects.Stored) -> Session | None:
        s = _of(d)
        return s if _may_use(p, s) else None

    return listing.page(p.org_id, "session", shown, limit=limit, cursor=cursor)
