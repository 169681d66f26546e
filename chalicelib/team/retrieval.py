"""Retrieval of accepted team memory and its attribution.

``retrieve`` ranks the accepted revisions of the readable spaces asked for with the recall core
(``chalicelib.search.recall.recall`` over the namespaces ``!space/<id>`` as ONE corpus), so
drafts and pending changes can never be served, and writes one attribution record per space
(which entries and revisions were served, to whom, when; never the query or the text).
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from .. import clock
from ..auth.principal import Principal
from ..errors import BadRequest
from ..storage.tables import TeamAttributionModel, bind
from ..storage.txn import run_transaction
from ..validation import Line
from . import permissions
from .accept import namespace
from .entries import iso


class RetrieveBody(BaseModel):
    """Body of ``POST /api/v1/context/memory/retrieve``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    space_ids: list[Line] = Field(alias="spaceIds", min_length=1, max_length=20)
    query: StrictStr = Field(min_length=1, max_length=4000)
    limit: int = Field(10, ge=1, le=50)


def retrieve(principal: Principal, body: RetrieveBody) -> dict[str, Any]:
    """``{results: [{entryId, revision, kind, title, text, score, metadata: {memory, spaceId}}],
    attributionId, retrieval}``; 404 ``not_found`` when a space is not readable."""
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
        results.append({"entryId": meta.get("entryId", hit.memory.id), "revision": meta.get("revision"),
                        "kind": meta.get("kind"), "title": meta.get("title"), "text": hit.memory.text,
                        "score": hit.score, "metadata": {"memory": meta, "spaceId": banks.get(hit.bank)}})
    attribution_id = "att_" + uuid.uuid4().hex[:20]
    now = clock.now_ms()
    bind()

    def attempt(tx):
        for bank, sid in banks.items():
            served = [{"entryId": r["entryId"], "revision": r["revision"]} for r in results
                      if r["metadata"]["spaceId"] == sid]
            tx.save(TeamAttributionModel(space_key=f"{org}#{sid}", sk=f"{now:013d}#{attribution_id}",
                                         attribution_id=attribution_id, actor=principal.actor, entries=served, at=now))

    run_transaction(attempt)
    return {"results": results, "attributionId": attribution_id, "retrieval": res.retrieval}


def attributions(principal: Principal, space_id: str | None, limit: int = 100) -> dict[str, Any]:
    """``{attributions: [{id, actor, entries: [{entryId, revision}], at}]}`` of a space, newest
    first (``context:admin``; 404 ``not_found`` for an unknown space)."""
    from . import spaces
    if not space_id:
        raise BadRequest("spaceId is required.", details={"field": "spaceId"})
    spaces.require_space(principal.org_id, space_id)
    bind()
    rows = TeamAttributionModel.query(f"{principal.org_id}#{space_id}", scan_index_forward=False, limit=limit,
                                      consistent_read=True)
    return {"attributions": [{"id": r.attribution_id, "actor": r.actor,
                              "entries": r.entries if isinstance(r.entries, list) else [],
                              "at": iso(r.at)} for r in rows]}
