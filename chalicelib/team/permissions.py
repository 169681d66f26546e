"""Who may read and change a space's entries.

Member grants are per space (``context:space:read``, ``context:space:write``); persons and
service principals are members by ``user_id``, API keys by ``token_id``. Org deny rules override
grants. Write access requires read access: a write grant alone never lets anyone edit what they
cannot read. An unreadable space, and another org's, answer exactly like a missing one (404
``not_found``), so existence never leaks.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..auth.principal import Principal
from ..errors import Forbidden, NotFound
from . import spaces
from .store import Space


def member_id(principal: Principal) -> str:
    """The id a principal is a member by: user_id (persons, services) or token_id (API keys)."""
    return principal.user_id if principal.kind != "api_key" and principal.user_id else principal.token_id


@dataclass(frozen=True)
class Access:
    """The caller's effective access to one space."""

    space: Space
    read: bool
    write: bool


def access(principal: Principal, space_id: str) -> Access | None:
    """Effective access, or ``None`` when the space does not exist in the caller's org."""
    space = spaces.get_space(principal.org_id, space_id)
    if space is None:
        return None
    mid = member_id(principal)
    have = spaces.grants(principal.org_id, space_id, mid)
    for rule in spaces.deny_rules(principal.org_id):
        if rule.get("memberId") == mid and rule.get("spaceId") in (None, space_id):
            have -= set(rule.get("permissions") or spaces.GRANTS)
    read = spaces.READ in have
    return Access(space=space, read=read, write=read and spaces.WRITE in have)


def readable(principal: Principal, space_id: str) -> Space:
    """The space if the caller may read it, else 404 ``not_found``."""
    acc = access(principal, space_id)
    if acc is None or not acc.read:
        raise NotFound("No such space.", code="not_found")
    return acc.space


def writable(principal: Principal, space_id: str, *, not_found: str = "No such space.") -> Space:
    """The space if the caller may change it: 404 ``not_found`` when unreadable, 403 ``forbidden``
    when readable without a write grant."""
    acc = access(principal, space_id)
    if acc is None or not acc.read:
        raise NotFound(not_found, code="not_found")
    if not acc.write:
        raise Forbidden("You may read this space but not change it.", details={"required": spaces.WRITE})
    return acc.space


def require_collab(space: Space) -> None:
    """403 ``context.collab_policy.capability_disabled`` when the space's team-memory switch is off."""
    if not space.team_memory_enabled:
        raise Forbidden("Team memory is disabled for this space (collaboration policy).",
                        code="context.collab_policy.capability_disabled", details={"capability": "team_memory"})
