"""``POST /v1/banks/{bank}/recall``: ranked recall over one bank. Needs
``memory:read`` and the bank in the token's allow-list (the bank routes' ``_bank`` check, which
also rejects every name an internal namespace could take); an ``as_of`` recall is an audit tool
that reads the bank's whole history, so it needs ``admin.memories`` as well."""

from __future__ import annotations

from typing import Annotated, Any

from chalice import Blueprint
from pydantic import ConfigDict, Field, StrictBool, StrictStr

from ..search import match
from ..search.filters import RecallFilter
from ..search.recall import LIMIT_DEFAULT, LIMIT_MAX, MAX_QUERY_CHARS, RecallResult, recall_bank
from ..usage import limits, meter
from ..validation import Line, Millis, Model
from .banks import ADMIN, READ, _bank
from .http import Ctx, IntRange, ResponseModels, endpoint

bp = Blueprint(__name__)
m = ResponseModels("chalicelib.api.banks_models")


class RecallRequest(Model):
    """Body: ``{query, limit?, tag?, filter?, include_superseded?, as_of?}`` (``as_of`` in ms since
    epoch; ``filter``: ``search.filters.RecallFilter``, ``tag`` its ``tags_all: [tag]``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    query: StrictStr = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    limit: Annotated[int, IntRange(1, LIMIT_MAX, strict=True)] = LIMIT_DEFAULT
    tag: Line | None = Field(None, min_length=1, max_length=64)
    filter: RecallFilter | None = None
    include_superseded: StrictBool = False
    as_of: Millis | None = None


def recall_cost(ctx: Ctx) -> int:
    """The bucket tokens a recall spends: 1, or for an ``as_of`` recall (a read of the bank's whole
    history, which needs ``admin.memories``: 403 ``forbidden`` before anything is spent) the org's
    ``as_of_cost``."""
    if ctx.body.as_of is None:
        return 1
    ctx.principal.require(ADMIN)
    return limits.effective(ctx.principal.org_id).as_of_cost


@endpoint(bp, "/v1/banks/{bank}/recall", ["POST"], permission=READ, body=RecallRequest, bank_scoped=True,
          responses={200: m.BankRecall}, errors=("bank_not_found", "damaged"), meter="read", cost=recall_cost)
def recall(ctx: Ctx, bank: str):
    """Recall a bank's memories best ranked for a query: ``{memories: [{memory, score, signals:
    {bm25, entity, corroboration, pinned, recency, ...}, contributions, match}], match: {level,
    score, threshold}, retrieval}`` (``contributions``: each signal's share of ``score``, summing
    to it; ``match``: how well a hit matches the query, 0 to 1; no hit under the bank's
    threshold is returned, and ``match.level`` ``none`` says the bank holds no answer). ``filter``
    ranks only the memories passing it, as if the bank held only them (``search.filters``); 404
    ``bank_not_found``; 403 ``forbidden`` for ``as_of`` without ``admin.memories``."""
    b = ctx.body
    meter.note(recall=1)
    return render_recall(recall_bank(ctx.principal.org_id, _bank(ctx, bank), b.query, limit=b.limit, tag=b.tag,
                                     include_superseded=b.include_superseded, as_of=b.as_of, where=b.filter))


def render_recall(result: RecallResult) -> dict[str, Any]:
    """``{memories: [{memory, score, signals, contributions, match}], match, retrieval}``: a recall
    as the route answers it."""
    return {"memories": [{"memory": h.memory.public(), "score": h.score, "signals": dict(h.signals),
                          "contributions": dict(h.contributions), "match": h.match} for h in result.hits],
            "match": render_match(result.match, result.min_match), "retrieval": result.retrieval}


def render_match(best: float | None, threshold: float | None) -> dict[str, Any]:
    """``{level, score, threshold}`` (``m.RecallMatch``) of a best hit's ``match`` (``None``: no
    hit) under ``threshold`` (``None``: off, shown as 0)."""
    return {"level": match.level(best), "score": best, "threshold": threshold or 0.0}
