"""Who may read and change a space's entries.

Member grants are per space (``context:space:read``, ``context:space:write``); persons and
service principals are members by ``user_id``, API keys by ``token_id``. Org deny rules override
grants. Write access requires read access: a write grant alone never lets anyone edit what they
cannot read. An unreadable space, and another org's, answer exactly like a missing one (404
``not_found``), so existence never leaks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .. import patterns
from ..auth.principal import Permission, Principal
from ..core.store import decode_cursor, encode_cursor
from ..errors import BadRequest, Forbidden, NotFound
from ..storage.damage import Damaged
from . import spaces
from .store import DenyRuleJSON, Space


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
    have = _granted(principal, space_id, spaces.deny_rules(principal.org_id))
    read = spaces.READ in have
    return Access(space=space, read=read, write=read and spaces.WRITE in have)


def _granted(principal: Principal, space_id: str, rules: list[DenyRuleJSON]) -> set[str]:
    """The caller's member grants in the space less what the org's deny ``rules`` take away."""
    mid = member_id(principal)
    return _less_denied(spaces.grants(principal.org_id, space_id, mid), mid, space_id, rules)


def _less_denied(have: set[str], mid: str, space_id: str, rules: list[DenyRuleJSON]) -> set[str]:
    """Member ``mid``'s grants ``have`` in the space less what the deny ``rules`` take away."""
    for rule in rules:
        if rule.get("memberId") == mid and rule.get("spaceId") in (None, space_id):
            have -= set(rule.get("permissions") or spaces.GRANTS)
    return have


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


SPACES_PAGE_DEFAULT = 50  # spaces per page of the listing when no limit is given
SPACES_PAGE_MAX = 200
GRANTS_BATCH = 100  # spaces whose grants one BatchGetItem reads
_SPACE_ID_RE = patterns.compile(r"[^#~]{1,128}")  # a space id as its key holds it


@dataclass(frozen=True)
class SpacePage:
    """One page of the spaces the caller may see, by id; ``next_cursor`` ``None`` on the last
    page; ``damaged`` counts stored spaces read that could not be decoded and were left out."""

    spaces: list[Space]
    next_cursor: str | None
    damaged: int


def _after(principal: Principal, cursor: str | None) -> str | None:
    start = decode_cursor(cursor, "context.spaces", principal.org_id, {"after": str})
    after = str(start["after"]) if start is not None else None
    if after is not None and not _SPACE_ID_RE.fullmatch(after):
        raise BadRequest("Invalid cursor: it is malformed or was issued by another listing.",
                         details={"field": "cursor"})
    return after


def visible_spaces(principal: Principal, *, limit: int = SPACES_PAGE_DEFAULT, cursor: str | None = None) -> SpacePage:
    """A page of the spaces the caller may see, by id: every space of the org for a
    ``context:admin`` principal (the space routes' rule), else those it may read (``readable``:
    a read grant no deny rule takes away). Up to ``limit`` (1..``SPACES_PAGE_MAX``) after the
    ``cursor`` of the previous page. Raises 400 ``validation_error`` for a limit out of range or
    a cursor of another listing or org; 409 ``damaged`` when the deny rules cannot be read."""
    if not 1 <= limit <= SPACES_PAGE_MAX:
        raise BadRequest(f"limit must be between 1 and {SPACES_PAGE_MAX}.", details={"field": "limit"})
    after = _after(principal, cursor)
    admin = principal.has(Permission.CONTEXT_ADMIN)
    rules = [] if admin else spaces.deny_rules(principal.org_id)
    found: list[Space] = []
    last, more, damaged = "", False, 0
    mid = member_id(principal)
    for chunk in _chunks(spaces.iter_spaces(principal.org_id, after), GRANTS_BATCH):
        # one batched read of the caller's grants per chunk of spaces, not one read per space
        have = {} if admin else spaces.grants_in(
            principal.org_id, [sid for sid, sp in chunk if not isinstance(sp, Damaged)], mid)
        for space_id, space in chunk:
            if isinstance(space, Damaged):
                damaged += 1
                continue
            if not admin and spaces.READ not in _less_denied(have[space_id], mid, space_id, rules):
                continue
            if len(found) == limit:
                more = True
                break
            found.append(space)
            last = space_id
        if more:
            break
    next_cursor = encode_cursor("context.spaces", principal.org_id, {"after": last}) if more else None
    return SpacePage(spaces=found, next_cursor=next_cursor, damaged=damaged)


def _chunks(items: Iterator[tuple[str, Space | Damaged]], size: int) -> Iterator[list[tuple[str, Space | Damaged]]]:
    chunk: list[tuple[str, Space | Damaged]] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
