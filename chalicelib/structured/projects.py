"""Projects and their members: ``POST /v1/api/projects {project_id?, name,
active}`` (the caller owns it), ``PUT/DELETE /v1/api/projects/{id}/members/{user_id}`` by the owner
or an ``admin.memories`` principal. A project's memories live in the ``project`` scope; a user's
access (``write`` for the owner, else the member row's ``read``/``write``, else none) is resolved
live on every call, so a removal or deactivation takes effect on the next call."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..auth.principal import Permission, Principal
from ..errors import Conflict, Forbidden, NotFound
from ..storage.tables import StructuredModel
from ..storage.txn import run_transaction
from ..validation import Line
from . import objects
from .workstreams import check_id

Access = Literal["read", "write"]


class ProjectRequest(BaseModel):
    """Body of ``POST /v1/api/projects``."""

    model_config = ConfigDict(extra="forbid")
    project_id: Line | None = Field(None, min_length=1, max_length=128)
    name: Line = Field(min_length=1, max_length=256)
    active: bool = True


class MemberRequest(BaseModel):
    """Body of ``PUT /v1/api/projects/{id}/members/{user_id}``."""

    model_config = ConfigDict(extra="forbid")
    access: Access


class ProjectPatch(BaseModel):
    """Body of ``PATCH /v1/api/projects/{id}``: activate or deactivate."""

    model_config = ConfigDict(extra="forbid")
    active: bool


def public(d: dict[str, Any]) -> dict[str, Any]:
    """``{project_id, name, active, owner}``."""
    return {"project_id": d["project_id"], "name": d["name"], "active": bool(d.get("active", True)),
            "owner": d.get("owner")}


def create(p: Principal, req: ProjectRequest) -> dict[str, Any]:
    """Create a project owned by the caller; 409 ``project_exists`` when the id is taken."""
    pid = check_id(req.project_id or "prj_" + uuid.uuid4().hex, "project_id")
    item = objects.new(p.org_id, "project", (pid,),
                       {"project_id": pid, "name": req.name, "active": req.active, "owner": p.user_id})
    objects.insert(item, Conflict(f"Project '{pid}' already exists.", code="project_exists"))
    return public(item.data)


def require(org_id: str, project_id: str) -> dict[str, Any]:
    """The project; 404 ``project_not_found``."""
    d = objects.data(org_id, "project", project_id)
    if d is None:
        raise NotFound(f"Project '{project_id}' not found.", code="project_not_found")
    return d


def access(org_id: str, project: dict[str, Any] | None, user_id: str | None) -> str | None:
    """The live access of ``user_id`` to ``project``: ``"write"`` (owner), the member row's
    ``"read"``/``"write"``, or ``None`` (no project, inactive project, anonymous, no row or a
    damaged one)."""
    if project is None or not project.get("active", True) or not user_id:
        return None
    if project.get("owner") == user_id:
        return "write"
    m = objects.data(org_id, "member", project["project_id"], user_id, strict=False)  # damaged: no access
    return m["access"] if m and m["access"] in ("read", "write") else None


def _manage(p: Principal, project_id: str) -> dict[str, Any]:
    proj = require(p.org_id, project_id)
    if proj.get("owner") != p.user_id and not p.has(Permission.ADMIN_MEMORIES):
        raise Forbidden("Only the project's owner or an admin.memories principal manages its members.")
    return proj


def set_member(p: Principal, project_id: str, user_id: str, level: str) -> dict[str, Any]:
    """Grant ``user_id`` ``read`` or ``write`` access: ``{project_id, user_id, access}``."""
    check_id(user_id, "user_id")
    _manage(p, project_id)
    item = objects.new(p.org_id, "member", (project_id, user_id),
                       {"project_id": project_id, "user_id": user_id, "access": level})
    item.save()
    return dict(item.data)


def remove_member(p: Principal, project_id: str, user_id: str) -> dict[str, Any]:
    """Remove a member: ``{status: "ok"}``; 404 ``member_not_found`` when absent."""
    _manage(p, project_id)
    item = objects.get(p.org_id, "member", project_id, user_id)
    if item is None:
        raise NotFound(f"User '{user_id}' is not a member of project '{project_id}'.", code="member_not_found")
    item.delete()
    return {"status": "ok"}


def set_active(p: Principal, project_id: str, active: bool) -> dict[str, Any]:
    """Activate or deactivate a project (owner or ``admin.memories``): the project."""
    _manage(p, project_id)

    def attempt(tx):
        item = objects.get(p.org_id, "project", project_id)
        d = objects.decode(item, "project")
        d["active"] = active
        tx.update(item, actions=[StructuredModel.data.set(d)], condition=StructuredModel.sk.exists())
        return d

    return public(run_transaction(attempt))
