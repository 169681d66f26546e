"""Projects and their members: ``POST /v1/api/projects {project_id?, name,
active}`` (the caller owns it), ``PUT/DELETE /v1/api/projects/{id}/members/{user_id}`` by the owner
or an ``admin.memories`` principal. A project's memories live in the ``project`` scope; a user's
access (``write`` for the owner, else the member row's ``read``/``write``, else none) is resolved
live on every call, so a removal or deactivation takes effect on the next call."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from pydantic import ConfigDict, Field, StrictBool

from ..auth.principal import Permission, Principal
from ..errors import Conflict, Forbidden, NotFound
from ..validation import Line, Model
from . import listing, objects
from .workstreams import check_id

Access = Literal["read", "write"]


class ProjectRequest(Model):
    """Body of ``POST /v1/api/projects``."""

    model_config = ConfigDict(extra="forbid")
    project_id: Line | None = Field(None, min_length=1, max_length=128)
    name: Line = Field(min_length=1, max_length=256)
    active: StrictBool = True


class MemberRequest(Model):
    """Body of ``PUT /v1/api/projects/{id}/members/{user_id}``."""

    model_config = ConfigDict(extra="forbid")
    access: Access


class ProjectPatch(Model):
    """Body of ``PATCH /v1/api/projects/{id}``: activate or deactivate."""

    model_config = ConfigDict(extra="forbid")
    active: StrictBool


@dataclass(frozen=True)
class Project:
    """A project: ``{project_id, name, active, owner}``."""

    project_id: str
    name: str
    active: StrictBool
    owner: str | None


@dataclass(frozen=True)
class Member:
    """A project member: ``{project_id, user_id, access}``."""

    project_id: str
    user_id: str
    access: str


def _of(d: objects.Stored) -> Project:
    return Project(d.text("project_id"), d.text("name"), d.flag("active", True), d.opt("owner"))


def create(p: Principal, req: ProjectRequest) -> Project:
    """Create a project owned by the caller; 409 ``project_exists`` when the id is taken."""
    pid = check_id(req.project_id or "prj_" + uuid.uuid4().hex, "project_id")
    item = objects.new(p.org_id, "project", (pid,),
                       {"project_id": pid, "name": req.name, "active": req.active, "owner": p.user_id})
    objects.insert(item, Conflict(f"Project '{pid}' already exists.", code="project_exists"),
                   objects.Event("project.create", p.actor, pid, {}))
    return _of(objects.Stored(item.data))


def _not_found(project_id: str) -> NotFound:
    return NotFound(f"Project '{project_id}' not found.", code="project_not_found")


def require(org_id: str, project_id: str) -> Project:
    """The project; 404 ``project_not_found``; 409 ``damaged`` when it cannot be read."""
    d = objects.data(org_id, "project", project_id)
    if d is None:
        raise _not_found(project_id)
    return _of(d)


def access(org_id: str, project: Project | None, user_id: str | None) -> str | None:
    """The live access of ``user_id`` to ``project``: ``"write"`` (owner), the member row's
    ``"read"``/``"write"``, or ``None`` (no project, inactive project, anonymous, no row or a
    damaged one)."""
    if project is None or not project.active or not user_id:
        return None
    if project.owner == user_id:
        return "write"
    m = objects.data(org_id, "member", project.project_id, user_id, strict=False)  # damaged: no access
    level = m.text("access") if m is not None else ""
    return level if level in ("read", "write") else None


def _manage(p: Principal, project_id: str) -> Project:
    proj = require(p.org_id, project_id)
    if proj.owner != p.user_id and not p.has(Permission.ADMIN_MEMORIES):
        raise Forbidden("Only the project's owner or an admin.memories principal manages its members.")
    return proj


def set_member(p: Principal, project_id: str, user_id: str, level: str) -> Member:
    """Grant ``user_id`` ``read`` or ``write`` access."""
    check_id(user_id, "user_id")
    _manage(p, project_id)
    objects.put(objects.new(p.org_id, "member", (project_id, user_id),
                            {"project_id": project_id, "user_id": user_id, "access": level}),
                objects.Event("project.member", p.actor, project_id, {"user_id": user_id, "access": level}))
    return Member(project_id, user_id, level)


def remove_member(p: Principal, project_id: str, user_id: str) -> None:
    """Remove a member; 404 ``member_not_found`` when absent."""
    _manage(p, project_id)
    if not objects.exists(p.org_id, "member", project_id, user_id):
        raise NotFound(f"User '{user_id}' is not a member of project '{project_id}'.", code="member_not_found")
    objects.remove(p.org_id, "member", project_id, user_id,
                   event=objects.Event("project.member_remove", p.actor, project_id, {"user_id": user_id}))


def set_active(p: Principal, project_id: str, active: bool) -> Project:
    """Activate or deactivate a project (owner or ``admin.memories``): the project."""
    _manage(p, project_id)
    d = objects.update_data(p.org_id, "project", (project_id,), lambda d: d.update(active=active),
                            objects.Event("project.update", p.actor, project_id, {"active": active}))
    if d is None:  # deleted since ``_manage`` read it
        raise _not_found(project_id)
    return _of(d)


def visible_to(p: Principal, project: Project) -> bool:
    """True when ``p`` may see the project: its owner, a member with live access (``access``: an
    inactive project shows to its owner only), or an ``admin.memories`` principal, who manages
    every project's members."""
    if p.has(Permission.ADMIN_MEMORIES) or (p.user_id is not None and project.owner == p.user_id):
        return True
    return access(p.org_id, project, p.user_id) is not None


def list_page(p: Principal, *, limit: int, cursor: str | None) -> listing.Page[Project]:
    """A page of the projects ``p`` may see, by id (``listing.page``'s limit and errors)."""
    def shown(d: objects.Stored) -> Project | None:
        proj = _of(d)
        return proj if visible_to(p, proj) else None

    return listing.page(p.org_id, "project", shown, limit=limit, cursor=cursor)
