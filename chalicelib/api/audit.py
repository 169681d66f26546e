"""``GET /v1/audit``: every audit event of the caller's org (``admin.memories``), filtered by
action, actor, target and time, never with memory text. The Turnstone-compatible
``/v1/api/admin/audit`` keeps its memory-only listing beside it."""

from __future__ import annotations

from typing import Annotated, Any

from chalice import Blueprint
from pydantic import ConfigDict, Field, field_validator, model_validator

from .. import audit
from ..auth.principal import Permission
from ..errors import BadRequest
from ..validation import Model
from .http import Ctx, IntRange, endpoint, parse_query

bp = Blueprint(__name__)

MAX_MS = 9_999_999_999_999  # the 13 digits an event's time key holds
PAGE_MAX, PAGE_DEFAULT = 500, 100


class EventsQuery(Model):
    """``?action=&actor=&target=&since=&until=&limit=&cursor=``: ``action`` one of
    ``audit.ACTIONS``; ``actor`` (``<kind>:<user or token id>``) and ``target`` exact values; events
    with ``since <= at < until`` (ms since the epoch, ``until`` greater than ``since``); ``limit``
    within 1..500 (default 100). An empty parameter is no filter."""

    model_config = ConfigDict(extra="ignore")
    action: str | None = Field(None, json_schema_extra={"enum": [*audit.ACTIONS, "", None]})
    actor: str | None = Field(None, max_length=300)
    target: str | None = Field(None, max_length=1000)
    since: Annotated[int, IntRange(0, MAX_MS)] = 0
    until: Annotated[int, IntRange(1, MAX_MS)] | None = None
    limit: Annotated[int, IntRange(1, PAGE_MAX)] = PAGE_DEFAULT
    cursor: str | None = None

    @field_validator("action", "actor", "target", "until", mode="before")
    @classmethod
    def _empty_is_absent(cls, v: Any) -> Any:
        return None if v == "" else v

    @field_validator("action")
    @classmethod
    def _action(cls, v: str | None) -> str | None:
        if v is not None and v not in audit.ACTIONS:
            raise BadRequest(f"action must be one of {list(audit.ACTIONS)}.", details={"field": "action"})
        return v

    @model_validator(mode="after")
    def _window(self) -> EventsQuery:
        if self.until is not None and self.until <= self.since:
            raise BadRequest("until must be greater than since (ms since epoch).", details={"field": "until"})
        return self


class OrgAuditEvent(Model):
    """One audit event: who did what to which target, never memory text."""

    id: str = Field(description="The event's position: `<at, 13 digits>#<hex>`.")
    action: str = Field(description="One of the actions `action` filters by.")
    actor: str = Field(description="`<kind>:<user or token id>`.")
    target: str | None = Field(description="The object acted on (a bank, memory id, space or entry id...).")
    details: dict[str, Any] = Field(description="What the action changed (`{}` when nothing).")
    at: int | None = Field(description="ms since epoch.")


class OrgAuditEventPage(Model):
    """A page of the org's audit events, oldest first."""

    events: list[OrgAuditEvent]
    next_cursor: str | None = Field(description="Pass it as `cursor` for the next page; null on the last.")


@endpoint(bp, "/v1/audit", ["GET"], permission=Permission.ADMIN_MEMORIES, query=EventsQuery,
          responses={200: OrgAuditEventPage})
def list_events(ctx: Ctx):
    """List the org's audit events, oldest first, filtered by action, actor, target and time:
    ``{events: [{id, action, actor, target, details, at}], next_cursor}`` (``OrgAuditEventPage``)."""
    q = parse_query(ctx.query, EventsQuery)
    flt = audit.Filter(action=q.action, actor=q.actor, target=q.target, since=q.since, until=q.until)
    page = audit.page(ctx.principal.org_id, flt, cursor=q.cursor, limit=q.limit)
    return {"events": page.events, "next_cursor": page.next_cursor}
