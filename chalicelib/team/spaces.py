"""Team spaces, memberships and org deny rules.

A space ``{id, name, kind, classification, dlp_policy, team_memory_enabled, created_at,
updated_at, created_by}`` belongs to one org (times in ms since epoch). ``kind`` is ``team`` or
``personal`` (no entries in personal spaces); ``classification`` one of ``CLASSIFICATIONS``
(ordered, loosest first); ``dlp_policy`` one of ``redact`` (default), ``drop``, ``block_source``;
``team_memory_enabled`` gates create, patch, update and accept. Admin routes (``context:admin``)
create and change spaces, put and delete members, and replace the org's deny rules. Storage:
``TeamSpaceModel`` rows ``space#<id>``, ``member#<space>#<member>``, ``deny``.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool
from pynamodb.exceptions import DoesNotExist

from .. import audit, clock
from ..errors import BadRequest, NotFound
from ..storage.damage import Damaged
from ..storage.tables import TeamSpaceModel, bind
from ..storage.txn import run_transaction
from ..validation import Line, check_line
from .dlp import POLICIES

CLASSIFICATIONS = ("public", "internal", "confidential", "restricted")
GRANTS = ("context:space:read", "context:space:write")
READ, WRITE = GRANTS

Classification = Literal["public", "internal", "confidential", "restricted"]
Policy = Literal["redact", "drop", "block_source"]
assert set(POLICIES) == {"redact", "drop", "block_source"}


class _In(BaseModel):
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

    permissions: list[Literal["context:space:read", "context:space:write"]] = Field(max_length=2)


class DenyRule(_In):
    """One org deny rule: ``member_id`` loses ``permissions`` (default both) in ``space_id``
    (``None`` = every space). Deny rules override grants."""

    member_id: Line = Field(min_length=1, max_length=256, alias="memberId")
    space_id: Line | None = Field(None, max_length=64, alias="spaceId")
    permissions: list[Literal["context:space:read", "context:space:write"]] = Field(
        default_factory=lambda: list(GRANTS), max_length=2)


class DenyRules(_In):
    """Body of ``PUT /api/v1/context/deny-rules``: the org's whole rule list (replaced)."""

    rules: list[DenyRule] = Field(max_length=1000)


def rank(classification: str) -> int:
    """Position of a classification, loosest (public) = 0."""
    return CLASSIFICATIONS.index(classification)


def _data(row: TeamSpaceModel, kind: str, required: dict[str, Any]) -> dict[str, Any]:
    """The one decoder of a stored space, membership or deny-rule row: its ``data`` dict with
    each ``required`` field of its type, else ``Damaged`` (409 ``damaged``)."""
    if "data" in row.damaged or not isinstance(row.data, dict):
        raise Damaged(kind, row.sk, f"data: {row.damaged.get('data', 'not a JSON object')}")
    for name, typ in required.items():
        if not isinstance(row.data.get(name), typ):
            raise Damaged(kind, row.sk, f"{name}: missing or wrong type")
    return row.data


def get_space(org_id: str, space_id: str) -> dict[str, Any] | None:
    """The space dict (with ``entries_live``), or ``None``; consistent read. 409 ``damaged``
    when the stored space lacks a field or has an unknown classification."""
    bind()
    try:
        row = TeamSpaceModel.get(org_id, f"space#{space_id}", consistent_read=True)
    except DoesNotExist:
        return None
    data = _data(row, "team space", {"id": str, "name": str, "kind": str, "classification": str})
    if data["classification"] not in CLASSIFICATIONS:
        raise Damaged("team space", row.sk, "classification: unknown value")
    entries_live = row.entries_live if isinstance(row.entries_live, (int, float)) else 0
    return {**data, "entries_live": int(entries_live)}


def require_space(org_id: str, space_id: str) -> dict[str, Any]:
    """The space, or 404 ``not_found`` (another org's space answers the same)."""
    space = get_space(org_id, space_id)
    if space is None:
        raise NotFound("No such space.", code="not_found")
    return space


def public(space: dict[str, Any]) -> dict[str, Any]:
    """The space as the API shows it."""
    return {k: space[k] for k in ("id", "name", "kind", "classification", "dlp_policy", "team_memory_enabled",
                                  "created_at", "updated_at", "created_by") if k in space} | \
        {"entries": int(space.get("entries_live", 0))}


def create_space(org_id: str, req: SpaceCreate, actor: str) -> dict[str, Any]:
    """Create a space; returns it. Audited ``context.space.create``."""
    bind()
    now = clock.now_ms()
    space = {"id": "spc_" + uuid.uuid4().hex[:20], "name": req.name, "kind": req.kind,
             "classification": req.classification, "dlp_policy": req.dlp_policy,
             "team_memory_enabled": req.team_memory_enabled, "created_at": now, "updated_at": now,
             "created_by": actor}

    def attempt(tx):
        tx.save(TeamSpaceModel(org_id=org_id, sk=f"space#{space['id']}", data=space, entries_live=0, version=1,
                               updated_at=now), condition=TeamSpaceModel.sk.does_not_exist())
        audit.add_to(tx, org_id, "context.space.create", actor, space["id"], {"kind": req.kind})

    run_transaction(attempt)
    return public({**space, "entries_live": 0})


def patch_space(org_id: str, space_id: str, req: SpacePatch, actor: str) -> dict[str, Any]:
    """Change name, classification, DLP policy or the collaboration switch; 404 ``not_found``."""
    bind()
    changes = req.model_dump(exclude_none=True)

    def attempt(tx):
        try:
            row = TeamSpaceModel.get(org_id, f"space#{space_id}", consistent_read=True)
        except DoesNotExist:
            raise NotFound("No such space.", code="not_found") from None
        data = {**_data(row, "team space", {}), **changes, "updated_at": clock.now_ms()}
        tx.update(row, actions=[TeamSpaceModel.data.set(data), TeamSpaceModel.version.add(1),
                                TeamSpaceModel.updated_at.set(data["updated_at"])],
                  condition=TeamSpaceModel.version == row.version)
        audit.add_to(tx, org_id, "context.space.patch", actor, space_id, {"fields": sorted(changes)})
        return {**data, "entries_live": int(row.entries_live or 0)}

    return public(run_transaction(attempt))


def put_member(org_id: str, space_id: str, member_id: str, req: MemberPut, actor: str) -> dict[str, Any]:
    """Set a member's grants in a space (replacing earlier ones): ``{spaceId, memberId, permissions}``;
    400 ``validation_error`` when ``member_id`` is not one line of at most 256 characters."""
    if len(check_line(member_id, "member_id")) > 256:
        raise BadRequest("member_id must be at most 256 characters.", details={"field": "member_id"})
    require_space(org_id, space_id)
    perms = sorted(set(req.permissions))
    now = clock.now_ms()

    def attempt(tx):
        tx.save(TeamSpaceModel(org_id=org_id, sk=f"member#{space_id}#{member_id}",
                               data={"space_id": space_id, "member_id": member_id, "permissions": perms},
                               updated_at=now))
        audit.add_to(tx, org_id, "context.space.member", actor, space_id, {"member_id": member_id, "permissions": perms})

    run_transaction(attempt)
    return {"spaceId": space_id, "memberId": member_id, "permissions": perms}


def delete_member(org_id: str, space_id: str, member_id: str, actor: str) -> dict[str, Any]:
    """Remove a member from a space: ``{removed: bool}``."""
    require_space(org_id, space_id)
    bind()

    def attempt(tx):
        try:
            row = TeamSpaceModel.get(org_id, f"member#{space_id}#{member_id}", consistent_read=True)
        except DoesNotExist:
            return False
        tx.delete(row)
        audit.add_to(tx, org_id, "context.space.member_remove", actor, space_id, {"member_id": member_id})
        return True

    return {"removed": run_transaction(attempt)}


def grants(org_id: str, space_id: str, member_id: str) -> set[str]:
    """The member's grants in the space (empty when not a member, and when the stored
    membership cannot be read: a damaged grant grants nothing)."""
    bind()
    try:
        row = TeamSpaceModel.get(org_id, f"member#{space_id}#{member_id}", consistent_read=True)
        perms = _data(row, "team membership", {"permissions": list})["permissions"]
    except (DoesNotExist, Damaged):
        return set()
    return {p for p in perms if p in GRANTS}


def deny_rules(org_id: str) -> list[dict[str, Any]]:
    """The org's deny rules as dicts ``{memberId, spaceId, permissions}``; 409 ``damaged`` when
    the stored rules cannot be read (every team read then fails closed rather than ignore them)."""
    bind()
    try:
        row = TeamSpaceModel.get(org_id, "deny", consistent_read=True)
    except DoesNotExist:
        return []
    rules = _data(row, "team deny rules", {"rules": list})["rules"]
    if not all(isinstance(r, dict) for r in rules):  # a deny rule never reads as absent: refuse instead
        raise Damaged("team deny rules", row.sk, "rules: an element is not an object")
    return list(rules)


def put_deny_rules(org_id: str, req: DenyRules, actor: str) -> dict[str, Any]:
    """Replace the org's deny rules: ``{rules}``. Audited ``context.deny_rules``."""
    bind()
    rules = [r.model_dump(by_alias=True) for r in req.rules]
    now = clock.now_ms()

    def attempt(tx):
        tx.save(TeamSpaceModel(org_id=org_id, sk="deny", data={"rules": rules}, updated_at=now))
        audit.add_to(tx, org_id, "context.deny_rules", actor, None, {"count": len(rules)})

    run_transaction(attempt)
    return {"rules": rules}
