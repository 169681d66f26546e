"""The scope rules and the visibility envelope, in one place (the
seed's "Inherited target and coordinator scope").

A memory's identity is ``(name, scope, scope_id)`` within an org; each ``(scope, scope_id)`` is an
internal namespace, the bank row ``!scope/<scope>/<scope_id>`` (``!scope/global/`` for global), a
key no bank name can take. Isolation is enforced by session kind, never by secrecy of an id:

| session kind                     | visibility envelope (search/list without scope)       |
|----------------------------------|-------------------------------------------------------|
| interactive (a coordinator's child included) | global, its workstream, its user, the attached project |
| coordinator                      | ``coordinator/<acting user>``, the attached project    |

- Save, get and delete without a scope use the *inherited target*: an attached active project's
  ``project`` scope (read access permits get; save and delete are 403 ``project_read_only``, no
  fall-back to a broader scope; no access is 403 ``project_access_denied``; a project deactivated
  (or gone) since the session started is 409 ``project_inactive``, never a fall-back to
  ``global``); without a project, ``global`` for interactive sessions and ``coordinator`` for
  coordinator sessions.
- An explicit valid scope selects exactly that scope. Interactive sessions are 403
  ``coordinator_only`` on the coordinator scope; coordinator sessions are 403 ``scope_forbidden``
  on global, workstream and user; a scope the session has no id for (no workstream, anonymous
  user, no project) is 400 ``scope_unavailable``; the ``project`` scope of a deactivated project is
  409 ``project_inactive``.
- Project access is resolved live on every call (``projects.access``).

The REST API (``rest_target``, ``rest_envelope``) accepts only global, user and workstream, with
Turnstone's messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..auth.principal import Principal
from ..errors import BadRequest, Conflict, Forbidden, NotFound
from ..storage.damage import Damaged
from . import projects, workstreams
from .sessions import Session, is_service

SCOPES = ("global", "workstream", "user", "coordinator", "project")
PUBLIC_SCOPES = ("global", "user", "workstream")
TYPES = ("feedback", "general", "reference", "user")
NAMESPACE = "!scope/"
READ_ACTIONS = ("get", "search", "list")


@dataclass(frozen=True)
class Target:
    """One namespace: ``scope`` and ``scope_id`` (``""`` for global)."""

    scope: str
    scope_id: str = ""

    @property
    def bank(self) -> str:
        """The namespace's BankModel name: ``!scope/<scope>/<scope_id>``."""
        return f"{NAMESPACE}{self.scope}/{self.scope_id}"


def parse_bank(bank: str) -> Target:
    """The inverse of ``Target.bank``."""
    scope, _, scope_id = bank[len(NAMESPACE):].partition("/")
    return Target(scope, scope_id)


def check_type(value: str | None, *, allow_empty: bool = False) -> str | None:
    """A memory type, or ``None``/``""``; 400 ``invalid_type`` with Turnstone's message."""
    if value is None or (allow_empty and value == ""):
        return value
    if value not in TYPES:
        raise BadRequest(f"invalid type: {value}; must be one of {sorted(TYPES)}", code="invalid_type",
                         details={"field": "type"})
    return value


def optional_str(value: object, field: str) -> str | None:
    """``value`` when it is a string or ``None``; 400 ``validation_error`` "<field> must be a
    string" (Turnstone's message) otherwise."""
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"{field} must be a string", details={"field": field})
    return value


def check_scope(value: str, allowed: tuple[str, ...]) -> str:
    """A scope within ``allowed``; 400 ``invalid_scope`` with Turnstone's message."""
    if value not in allowed:
        raise BadRequest(f"invalid scope: {value}; must be one of {sorted(allowed)}", code="invalid_scope",
                         details={"field": "scope"})
    return value


# --- sessions -------------------------------------------------------------------------------


def _project(org_id: str, s: Session) -> tuple[projects.Project | None, str | None]:
    """The attached project if it exists and is active, and the session user's live access."""
    if s.project_id is None:
        return None, None
    try:
        proj = projects.require(org_id, s.project_id)
    except (NotFound, Damaged):  # a damaged project grants nothing: the session works without it
        return None, None
    if not proj.active:
        return None, None
    return proj, projects.access(org_id, proj, s.user_id)


def _inactive(s: Session) -> Conflict:
    """409 ``project_inactive``: the session's project was deactivated (or is gone)."""
    return Conflict(f"This session's project '{s.project_id}' is inactive, so nothing is addressed in its "
                    "place: name a scope explicitly or reactivate the project.", code="project_inactive",
                    details={"project_id": s.project_id})


def _project_target(s: Session, access: str | None, action: str) -> Target:
    if access is None:
        raise Forbidden(f"This session's user has no access to project '{s.project_id}'.",
                        code="project_access_denied")
    if access == "read" and action not in READ_ACTIONS:
        raise Forbidden(f"Project '{s.project_id}' is read-only for this session's user.",
                        code="project_read_only")
    return Target("project", s.project_id or "")


def _inherited(org_id: str, s: Session, action: str) -> Target | str:
    """The inherited target when the session's project decides it, else the scope it falls to
    (``coordinator`` or ``global``)."""
    proj, access = _project(org_id, s)
    if proj is not None:
        return _project_target(s, access, action)
    if s.project_id is not None:  # attached but inactive: never a broader scope in its place
        raise _inactive(s)
    return "coordinator" if s.kind == "coordinator" else "global"


def _explicit_project(org_id: str, s: Session, action: str) -> Target:
    proj, access = _project(org_id, s)
    if proj is None and s.project_id is not None:
        raise _inactive(s)
    if proj is None:
        raise BadRequest("This session has no project.", code="scope_unavailable", details={"field": "scope"})
    return _project_target(s, access, action)


def _interactive_target(s: Session, scope: str) -> Target:
    """An interactive session's ``global``, ``workstream`` or ``user`` namespace."""
    if scope == "global":
        return Target("global", "")
    if scope == "workstream":
        if not s.workstream_id:
            raise BadRequest("This session has no workstream.", code="scope_unavailable", details={"field": "scope"})
        return Target("workstream", s.workstream_id)
    if not s.user_id:  # user
        raise BadRequest("This session has no user.", code="scope_unavailable", details={"field": "scope"})
    return Target("user", s.user_id)


def session_target(org_id: str, s: Session, action: str, scope: str | None) -> Target:
    """The one namespace a save, get or delete (``action``) addresses; ``scope`` ``None`` or
    ``""`` means the inherited target. Raises the 400/403/409 errors of the module docstring."""
    if scope:
        check_scope(scope, SCOPES)
    else:
        inherited = _inherited(org_id, s, action)
        if isinstance(inherited, Target):
            return inherited
        scope = inherited
    if scope == "coordinator":
        if s.kind != "coordinator":
            raise Forbidden("The coordinator scope is available only to coordinator sessions.",
                            code="coordinator_only")
        return Target("coordinator", s.user_id or "")
    if scope == "project":
        return _explicit_project(org_id, s, action)
    if s.kind == "coordinator":
        raise Forbidden(f"Coordinator sessions see only their coordinator and project scopes, not {scope}.",
                        code="scope_forbidden")
    return _interactive_target(s, scope)


def session_envelope(org_id: str, s: Session, scope: str | None = None) -> list[Target]:
    """The namespaces a search or list spans: the whole visibility envelope when ``scope`` is
    empty, else exactly that scope (checked as a get)."""
    if scope:
        return [session_target(org_id, s, "list", scope)]
    proj, access = _project(org_id, s)
    out: list[Target] = []
    if s.kind == "coordinator":
        out.append(Target("coordinator", s.user_id or ""))
    else:
        out.append(Target("global", ""))
        if s.workstream_id:
            out.append(Target("workstream", s.workstream_id))
        if s.user_id:
            out.append(Target("user", s.user_id))
    if proj is not None and access is not None:
        out.append(Target("project", s.project_id or ""))
    return out


# --- REST -----------------------------------------------------------------------------------

def rest_target(p: Principal, scope: str | None, scope_id: str | None, *, default: str = "global") -> Target:
    """The namespace a REST call addresses (``/v1/api/memories``). Only global, user and
    workstream; ``scope_id`` is not allowed with global, required for workstream, bound to the
    caller for user (a ``service`` principal may name any user of its org); workstream access
    needs its owner or a ``service`` principal. Turnstone's messages; 400/403/404."""
    scope = default if scope is None or scope == "" else scope
    scope_id = (scope_id or "").strip()
    check_scope(scope, PUBLIC_SCOPES)
    if scope == "global":
        if scope_id:
            raise BadRequest("scope_id is not allowed with global scope", details={"field": "scope_id"})
        return Target("global", "")
    if scope == "user":
        if is_service(p) and scope_id:
            return Target("user", workstreams.check_id(scope_id, "scope_id"))
        if not p.user_id or (scope_id and scope_id != p.user_id):
            raise Forbidden("Cannot access another user's memories")
        return Target("user", p.user_id)
    if not scope_id:
        raise BadRequest("scope_id is required for workstream scope", details={"field": "scope_id"})
    ws = workstreams.get(p.org_id, scope_id)
    if ws is None:
        raise NotFound("Workstream not found", code="workstream_not_found")
    if not is_service(p) and (not p.user_id or ws.owner != p.user_id):
        raise Forbidden("Cannot access another user's workstream memories")
    return Target("workstream", scope_id)


def rest_envelope(p: Principal, scope: str | None, scope_id: str | None) -> list[Target]:
    """The namespaces of a REST list or search: with ``scope`` that one (``rest_target``); without,
    global plus the caller's user namespace. ``scope_id`` without ``scope`` is 400."""
    if scope:
        return [rest_target(p, scope, scope_id)]
    if (scope_id or "").strip():
        raise BadRequest("scope is required when scope_id is provided", details={"field": "scope"})
    out = [Target("global", "")]
    if p.user_id:
        out.append(Target("user", p.user_id))
    return out
