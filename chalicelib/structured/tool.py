"""The session memory tool: ``POST /v1/api/sessions/{id}/memory {action:
save|get|search|delete|list, name?, content?, description?, type?, scope?, query?, limit?}``.

Parameters and defaults are the Turnstone memory tool's: ``type`` defaults to ``general`` on
create, ``scope`` to the inherited target (save/get/delete) or the whole visibility envelope
(search/list), ``limit`` to 20 capped at 50; content is at most ``max_content`` characters.
Results have the REST bodies: a memory row (save: 201 created / 200 updated); ``{memories,
total}``; ``{status, name}``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict

from ..auth.principal import Permission, Principal
from ..errors import BadRequest
from ..validation import Model
from . import memories, scopes, sessions

DEFAULT_LIMIT, MAX_LIMIT = 20, 50


class ToolCall(Model):
    """Body of ``POST /v1/api/sessions/{id}/memory``; values are checked by ``run`` with
    Turnstone's messages, so they are loosely typed here."""

    model_config = ConfigDict(extra="forbid")
    action: Literal["save", "get", "search", "delete", "list"]
    name: Any = None
    content: Any = None
    description: Any = None
    type: str | None = None
    scope: str | None = None
    query: str | None = None
    limit: Any = None


def _limit(value: Any) -> int:
    if value is None or value == "":
        return DEFAULT_LIMIT
    if isinstance(value, bool):
        raise BadRequest("limit must be an integer", details={"field": "limit"})
    try:
        n = int(value)  # JSON numbers are finite and bounded at the edge; OverflowError is defence
    except (TypeError, ValueError, OverflowError):
        raise BadRequest("limit must be an integer", details={"field": "limit"}) from None
    return max(1, min(MAX_LIMIT, n))


ToolResult = memories.Saved | memories.Row | memories.Listing | memories.Deleted


def run(p: Principal, session_id: str, call: ToolCall) -> ToolResult:
    """Run one tool call in session ``session_id``: what the REST equivalent returns (a
    ``Saved`` for save, a ``Row`` for get, a ``Listing`` for search/list, a ``Deleted``). Errors
    are the scope rules' (``scopes``) and the REST API's; mutations need ``memory:write``."""
    from ..tuning import get_tuning

    s = sessions.require(p, session_id)
    org = p.org_id
    if call.action in ("save", "delete"):
        p.require(Permission.MEMORY_WRITE)
    if call.action in ("search", "list"):
        type_ = scopes.check_type(call.type or "", allow_empty=True) or None
        limit = _limit(call.limit)
        targets = scopes.session_envelope(org, s, call.scope or None)
        if call.action == "list":
            return memories.list_rows(org, targets, type_=type_, limit=limit)
        if not call.query or not call.query.strip():
            raise BadRequest("query is required", details={"field": "query"})
        return memories.search_rows(org, targets, call.query, type_=type_, limit=limit)
    target = scopes.session_target(org, s, call.action, call.scope or None)
    if call.action == "save":
        return memories.save(org, target, call.name, call.content, call.description, call.type or None,
                             actor=p.actor, surface="session", max_content=get_tuning().max_content)
    if call.action == "get":
        return memories.get(org, target, call.name)
    return memories.delete(org, target, call.name, actor=p.actor, surface="session")
