"""Team spaces, memberships and org deny rules.

A space ``{id, name, kind, classification, dlp_policy, team_memory_enabled, created_at,
updated_at, created_by}`` belongs to one org (times in ms since epoch). ``kind`` is ``team`` or
``personal`` (no entries in personal spaces); ``classification`` one of ``CLASSIFICATIONS``
(ordered, loosest first); ``dlp_policy`` one of ``redact`` (default), ``drop``, ``block_source``;
``team_memory_enabled`` gates create, patch, update and accept. Admin routes (``context:admin``)
create and change spaces, put and delete members, and replace the org's deny rules (stored by
``team.store``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import ConfigDict, Field, StrictBool

from .. import audit, clock
from ..errors import BadRequest, NotFound
from ..storage.damage import Damaged
from ..validation import Line, Model, check_line
from . import store
from .dlp import POLICIES
from .store import Space, Tx

CLASSIFICATIONS = ("public", "internal", "confidential", "restricted")
Grant = Literal["context:space:read", "context:space:write"]
GRANTS: tuple[Grant, ...] = ("context:space:read", "context:space:write")
READ, WRITE = GRANTS

Classification = Literal["public", "internal", "confidential", "restricted"]
Policy = Literal["redact", "drop", "block_source"]
assert set(POLICIES) == {"redact", "drop", "block_source"}


class _In(Model):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SpaceCreate(_In):
    """Body of ``POST /api/v1/context/spaces`` (snake_case or camelCase names)."""

    name: Line = Field(min_length=1, max_length=200)
    kind: Literal["team", "personal"] = "team"
    classification: Classification = "internal"
    dlp_policy: Policy = Field("redact", alias="dlpPolicy")
    team_memory_enabled: StrictBool = Field(True, alias="teamMemoryEnabled")


class SpacePatch(_In):
    """Body of ``PATCH /api/v1/context/spaces/{id}``: any subset of the fields."""

    name: Line | None = Field(None, min_length=1, max_length=200)
    classification: Classification | None = None
    dlp_policy: Policy | None = Field(None, alias="dlpPolicy")
    team_memory_enabled: StrictBool | None = Field(None, alias="teamMemoryEnabled")


class MemberPut(_In):
    """Body of ``PUT /spaces/{id}/members/{member_id}``: the member's grants in this space."""

    permissions: list[Grant] = Field(max_length=2)


class DenyRule(_In):
    """One org deny rule: ``member_id`` loses ``permissions`` (default both) in ``space_id``
    (``None`` = every space). Deny rules override grants."""

    member_id: Line = Field(min_length=1, max_length=256, alias="memberId")
    space_id: Line | None = Field(None, max_length=64, alias="spaceId")
    permissions: list[Grant] = Field(default_factory=lambda: list(GRANTS), max_length=2)


class DenyRules(_In):
    """Body of ``PUT /api/v1/context/deny-rules``: the org's whole rule list (replaced)."""

    rules: list[DenyRule] = Field(max_length=1000)


def rank(classification: str) -> int:
    """Position of a classification, loosest (public) = 0."""
    return CLASSIFICATIONS.index(classification)


def get_space(org_id: str, space_id: str) -> Space | None:
    """The space (with ``entries_live``), or ``None``; consistent read. 409 ``damaged`` when the
    stored space lacks a field or has an unknown classification."""
    return store.get_space(org_id, space_id, CLASSIFICATIONS)


def iter_spaces(org_id: str, after: str | None) -> Iterator[tuple[str, Space | Damaged]]:
    """``(space id, space or its Damaged)`` of the org's spaces by id, after space id ``after``
    (``None``: from the first); a lazy key query."""
    return store.iter_spaces(org_id, after, CLASSIFICATIONS)


def require_space(org_id: str, space_id: str) -> Space:
    """The space, or 404 ``not_found`` (another org's space answers the same)."""
    space = get_space(org_id, space_id)
    if space is None:
        raise NotFound("No such space.", code="not_found")
    return space


def create_space(org_id: str, req: SpaceCreate, actor: str) -> Space:
    """Create a space; returns it. Audited ``context.space.create``."""
    now = clock.now_ms()
    space_id = "spc_" + uuid.uuid4().hex[:20]
    data: dict[str, Any] = {"id": space_id, "name": req.name, "kind": req.kind,
            "classification": req.classification, "dlp_policy": req.dlp_policy,
            "team_memory_enabled": req.team_memory_enabled, "created_at": now, "updated_at": now,
            "created_by": actor}

    def attempt(tx: Tx) -> None:
        store.stage_new_space(tx, org_id, data, now)
        audit.add_to(tx, org_id, "context.space.create", actor, space_id, {"kind": req.kind})

    store.write(attempt)
    return Space(data=data, entries_live=0)


def patch_space(org_id: str, space_id: str, req: SpacePatch, actor: str) -> Space:
    """Change name, classification, DLP policy or the collaboration switch; 404 ``not_found``."""
    changes = req.model_dump(exclude_none=True)

    def attempt(tx: Tx) -> Space:
        space = store.stage_space_change(tx, org_id, space_id, changes, clock.now_ms())
        if space is None:
            raise NotFound("No such space.", code="not_found")
        audit.add_to(tx, org_id, "context.space.patch", actor, space_id, {"fields": sorted(changes)})
        return space

    return store.write(attempt)


@dataclass(frozen=True)
class Membership:
    """A member's grants in a space."""

    space_id: str
    member_id: str
    permissions: list[str]


def put_member(org_id: str, space_id: str, member_id: str, req: MemberPut, actor: str) -> Membership:
    """Set a member's grants in a space (replacing earlier ones); 400 ``validation_error`` when
    ``member_id`` is not one line of at most 256 characters, 404 ``not_found``."""
    if len(check_line(member_id, "member_id")) > 256:
        raise BadRequest("member_id must be at most 256 characters.", details={"field": "member_id"})
    require_space(org_id, space_id)
    perms: list[str] = sorted(set(req.permissions))
    now = clock.now_ms()

    def attempt(tx: Tx) -> None:
        store.stage_member(tx, org_id, space_id, member_id, perms, now)
        audit.add_to(tx, org_id, "context.space.member", actor, space_id,
                     {"member_id": member_id, "permissions": perms})

    store.write(attempt)
    return Membership(space_id=space_id, member_id=member_id, permissions=perms)


def delete_member(org_id: str, space_id: str, member_id: str, actor: str) -> bool:
    """Remove a member from a space: whether there was one to remove; 404 ``not_found``."""
    require_space(org_id, space_id)

    def attempt(tx: Tx) -> bool:
        if not store.stage_member_removed(tx, org_id, space_id, member_id):
            return False
        audit.add_to(tx, org_id, "context.space.member_remove", actor, space_id, {"member_id": member_id})
        return True

    return store.write(attempt)


def grants(org_id: str, space_id: str, member_id: str) -> set[str]:
    """The member's grants in the space (empty when not a member, and when the stored
    membership cannot be read: a damaged grant grants nothing)."""
    try:
        perms = store.member_grants(org_id, space_id, member_id)
    except Damaged:
        return set()
    return {p for p in perms if p in GRANTS}


def grants_in(org_id: str, space_ids: list[str], member_id: str) -> dict[str, set[str]]:
    """``{space id: the member's grants}`` for each of ``space_ids`` (empty where it is no
    member, or where the stored membership cannot be read), in batched reads."""
    stored = store.members_grants(org_id, space_ids, member_id)
    return {sid: {p for p in perms if p in GRANTS} if isinstance(perms := stored.get(sid, []), list) else set()
            for sid in space_ids}


def deny_rules(org_id: str) -> list[store.DenyRuleJSON]:
    """The org's deny rules as dicts ``{memberId, spaceId, permissions}``; 409 ``damaged`` when
    the stored rules cannot be read (every team read then fails closed rather than ignore them)."""
    return store.deny_rules(org_id)


def put_deny_rules(org_id: str, req: DenyRules, actor: str) -> list[store.DenyRuleJSON]:
    """Replace the org's deny rules; returns them. Audited ``context.deny_rules``."""
    rules = [cast(store.DenyRuleJSON, r.model_dump(by_alias=True)) for r in req.rules]
    now = clock.now_ms()

    def attempt(tx: Tx) -> None:
        store.stage_deny_rules(tx, org_id, rules, now)
        audit.add_to(tx, org_id, "context.deny_rules", actor, None, {"count": len(rules)})

    store.write(attempt)
    return rules
