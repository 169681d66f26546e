"""``GET|PUT /v1/usage/limits``: the caller's org's limits (``admin.memories``, the org admin).

An org admin may only lower its org's limits (``PUT``); raising one above the operator's limit is
400 ``validation_error`` naming the field. Only the operator raises, through the CLI
(``cairn limits set``). See ``chalicelib.usage.limits``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from chalice import Blueprint
from pydantic import ConfigDict, Field, StrictInt

from .. import audit
from ..auth.principal import Permission
from ..settings import LIMIT_MAX
from ..usage import limits
from ..validation import Model
from .http import Ctx, endpoint

bp = Blueprint(__name__)

Bound = Annotated[StrictInt | None, Field(ge=1, le=LIMIT_MAX)]


class LimitValues(Model):
    """One value per limit (0 = no limit)."""

    requests_per_minute: int = Field(description="Requests per minute of one token (bucket refill).")
    burst: int = Field(description="Requests an idle token may send at once.")
    as_of_cost: int = Field(description="Bucket tokens an `as_of` recall spends.")
    memories_per_bank: int = Field(description="Live memories of one bank.")
    banks_per_org: int = Field(description="Live banks of the org.")
    extraction_tokens_per_day: int = Field(description="Extraction model tokens (input + output) per UTC day.")
    org_requests_per_minute: int = Field(description="Requests per minute of all the org's tokens together.")
    org_burst: int = Field(description="Requests all the org's tokens may send at once.")


class OrgLimitValues(Model):
    """The org admin's own values (null: none set, the operator's limit applies)."""

    requests_per_minute: int | None = None
    burst: int | None = None
    memories_per_bank: int | None = None
    banks_per_org: int | None = None
    extraction_tokens_per_day: int | None = None
    org_requests_per_minute: int | None = None
    org_burst: int | None = None


class UsageLimits(Model):
    """``effective``: the limits in force; ``operator``: the ceilings (the defaults unless the
    operator set the org's own), which an org admin cannot pass; ``org``: the org admin's own
    lower values."""

    effective: LimitValues
    operator: LimitValues
    org: OrgLimitValues


class LimitsPatch(Model):
    """Body of ``PUT /v1/usage/limits``: the org's own values to set (at least 1, at most the
    operator's limit), ``null`` to drop one (back to the operator's limit); an absent field is
    left as it is."""

    model_config = ConfigDict(extra="forbid")
    requests_per_minute: Bound = None
    burst: Bound = None
    memories_per_bank: Bound = None
    banks_per_org: Bound = None
    extraction_tokens_per_day: Bound = None
    org_requests_per_minute: Bound = None
    org_burst: Bound = None


def _render(org_id: str) -> dict:
    ov = limits.overrides(org_id)
    return {"effective": asdict(limits.combine(limits.defaults(), ov)), "operator": asdict(limits.ceilings(org_id, ov)),
            "org": {k: ov.org.get(k) for k in limits.ORG_FIELDS}}


@endpoint(bp, "/v1/usage/limits", ["GET"], permission=Permission.ADMIN_MEMORIES, responses={200: UsageLimits})
def get_usage_limits(ctx: Ctx):
    """The org's limits: ``{effective, operator, org}`` (``UsageLimits``)."""
    return _render(ctx.principal.org_id)


@endpoint(bp, "/v1/usage/limits", ["PUT"], permission=Permission.ADMIN_MEMORIES, body=LimitsPatch,
          responses={200: UsageLimits})
def put_usage_limits(ctx: Ctx):
    """Lower the org's own limits (``LimitsPatch``): ``{effective, operator, org}``; 400
    ``validation_error`` naming the field (``details.max``: the operator's limit) for a value above
    it. Audited as ``usage.limits``."""
    org = ctx.principal.org_id
    values = {k: getattr(ctx.body, k) for k in ctx.body.model_fields_set}
    limits.set_org(org, values)
    audit.record(org, "usage.limits", ctx.principal.actor, org, {"org": values})
    return _render(org)
