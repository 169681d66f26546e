"""``GET /v1/usage`` (``admin.usage``): what the caller's org used over a time range, as totals and
a series by hour or day, grouped by bank, token or operation; JSON or CSV
(``chalicelib.usage.report``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from chalice import Blueprint
from pydantic import ConfigDict, Field, model_validator

from .. import clock
from ..auth.principal import Permission
from ..errors import BadRequest
from ..usage import report
from ..validation import Model
from .http import Ctx, IntRange, Raw, Reply, endpoint, parse_query

bp = Blueprint(__name__)
MAX_MS = 9_999_999_999_999


class UsageQuery(Model):
    """``?from=&to=&granularity=hour|day&group_by=bank|token|operation&format=json|csv``: ``from``
    and ``to`` in ms since the epoch (default: the last 24 hours up to now), at most 93 days apart;
    every UTC hour overlapping ``[from, to)`` counts."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    from_: Annotated[int, IntRange(0, MAX_MS)] | None = Field(None, alias="from")
    to: Annotated[int, IntRange(1, MAX_MS)] | None = None
    granularity: Literal["hour", "day"] = "hour"
    group_by: Literal["bank", "token", "operation"] = "bank"
    format: Literal["json", "csv"] = "json"

    @model_validator(mode="after")
    def _window(self) -> UsageQuery:
        to = self.to if self.to is not None else clock.now_ms()
        start = self.from_ if self.from_ is not None else to - report.DAY_MS
        if to <= start:
            raise BadRequest("to must be greater than from (ms since epoch).", details={"field": "to"})
        if to - start > report.MAX_RANGE_MS:
            raise BadRequest("from must be at most 93 days before to.", details={"field": "from"})
        self.from_, self.to = start, to
        return self


class UsageTotals(Model):
    """Summed counters: requests (``operations``: by operation), memories saved (created or
    resurrected) and reinforced, recalls, previews, per-turn hooks, session contexts, characters and
    estimated tokens injected (UTF-8 bytes / 4), extraction jobs with the model's input and output
    tokens and their cost in USD, and the stored-bytes delta."""

    model_config = ConfigDict(extra="allow")
    requests: int
    saved: int
    reinforced: int
    recalls: int
    previews: int
    hooks: int
    contexts: int
    injected_chars: int
    injected_tokens: int
    extraction_jobs: int
    model_input_tokens: int
    model_output_tokens: int
    model_cost_usd: float
    stored_bytes_delta: int
    operations: dict[str, int]


class UsagePoint(UsageTotals):
    """The totals of one period: ``start`` (ms since the epoch, a UTC hour or day)."""

    start: int


class UsageGroup(Model):
    """One bank (``space:<id>``, ``scope:<namespace>``, ``org`` for requests naming no bank), token
    or operation: its totals and series. Grouped by operation, a group counts its requests only."""

    key: str
    totals: UsageTotals
    series: list[UsagePoint]


class UsageReport(Model):
    """What the org used over ``[from, to)``."""

    model_config = ConfigDict(populate_by_name=True)
    org: str
    from_: int = Field(alias="from")
    to: int
    granularity: Literal["hour", "day"]
    group_by: Literal["bank", "token", "operation"]
    totals: UsageTotals
    groups: list[UsageGroup]


@endpoint(bp, "/v1/usage", ["GET"], permission=Permission.ADMIN_USAGE, query=UsageQuery,
          responses={200: (UsageReport, Raw("text/csv", "start,group,<counters>: one row per period and group."))},
          meter="none")
def usage(ctx: Ctx) -> Any:
    """The org's usage over a time range: ``{org, from, to, granularity, group_by, totals,
    groups: [{key, totals, series: [{start, ...}]}]}`` (``format=csv``: one row per period and
    group); 400 ``validation_error`` naming ``from`` for a range over 93 days."""
    q = parse_query(ctx.query, UsageQuery)
    assert q.from_ is not None and q.to is not None  # the validator fills both
    rep = report.report(ctx.principal.org_id, q.from_, q.to, granularity=q.granularity, group_by=q.group_by)
    if q.format == "csv":
        return Reply(raw=rep.as_csv(), content_type="text/csv")
    return rep.as_json()
