"""Retrieval of accepted team memory and its attribution.

``retrieve`` ranks the accepted revisions of the readable spaces asked for with the recall core
(``chalicelib.search.recall.recall`` over the namespaces ``!space/<id>`` as ONE corpus), so
drafts and pending changes can never be served, and writes one attribution record per space
(which entries and revisions were served, to whom, when; never the query or the text).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field, StrictStr

from .. import clock
from ..auth.principal import Principal
from ..errors import BadRequest
from ..validation import Line, Model
from . import permissions, store
from .accept import namespace
from .store import Attribution, Tx

MAX_SPACES = 20  # spaces one retrieval searches


class RetrieveBody(Model):
    """Body of ``POST /api/v1/context/memory/retrieve``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    space_ids: list[Line] = Field(alias="spaceIds", min_length=1, max_length=MAX_SPACES)
    query: StrictStr = Field(min_length=1, max_length=4000)
    limit: int = Field(10, ge=1, le=50)


@dataclass(frozen=True)
class Retrieved:
    """One accepted revision served: from its projection's ``meta`` (entryId, revision, kind,
    title, acceptedAt), its indexed text, its score and the space it came from."""

    entry_id: str
    revision: Any
    kind: Any
    title: Any
    text: str
    score: float
    meta: dict[str, Any]
    space_id: str | None


@dataclass(frozen=True)
class Retrieval:
    """The ranked ``results``, the attribution id recorded for them and the retrieval mode that ran."""

    results: list[Retrieved]
    attribution_id: str
    retrieval: str


def retrieve(principal: Principal, body: RetrieveBody) -> Retrieval:
    """Rank the accepted revisions of the spaces asked for; 404 ``not_found`` when a space is not
    readable. Records one attribution per space."""
    from ..search.recall import (
        recall,  # the recall core; imported lazily, it loads Whoosh
    )

    org = principal.org_id
    space_ids = list(dict.fromkeys(body.space_ids))
    for sid in space_ids:
        permissions.readable(principal, sid)
    banks = {namespace(sid): sid for sid in space_ids}
    res = recall(org, list(banks), body.query, limit=body.limit)
    results = []
    for hit in res.hits:
        meta = hit.memory.meta or {}
        results.append(Retrieved(entry_id=meta.get("entryId", hit.memory.id), revision=meta.get("revision"),
                                 kind=meta.get("kind"), title=meta.get("title"), text=hit.memory.text,
                                 score=hit.score, meta=meta, space_id=banks.get(hit.bank)))
    attribution_id = "att_" + uuid.uuid4().hex[:20]
    now = clock.now_ms()

    def attempt(tx: Tx) -> None:
        for sid in banks.values():
            served = [{"entryId": r.entry_id, "revision": r.revision} for r in results if r.space_id == sid]
            store.stage_attribution(tx, org, sid, Attribution(id=attribution_id, actor=principal.actor,
                                                              entries=served, at=now), now)

    store.write(attempt)
    return Retrieval(results=results, attribution_id=attribution_id, retrieval=res.retrieval)


def attributions(principal: Principal, space_id: str | None, limit: int = 100) -> list[Attribution]:
    """A space's attributions, newest first (``context:admin``); 400 ``validation_error``
    without ``space_id``, 404 ``not_found`` for an unknown space."""
    from . import spaces
    if not space_id:
        raise BadRequest("spaceId is required.", details={"field": "spaceId"})
    spaces.require_space(principal.org_id, space_id)
    return store.attributions(principal.org_id, space_id, limit)
