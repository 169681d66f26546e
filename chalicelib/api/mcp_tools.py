"""The MCP tools, in one registry: each tool runs the view of one REST operation through
``http.invoke``, so it takes the same checks (permission, bank allow-list, space grants), the same
limits (its input schema is built from the route's own body model) and gives the same body (its
output schema is the route's response model). A tool call counts as its REST operation.

A tool is listed to a token that holds its ``permission`` (a read-only token, ``memory:read``,
lists only the read-only tools) and, unless the tool names a bank, has no bank allow-list. A
failure is a result with ``isError`` whose ``structuredContent`` is the REST error body
``{error, code, details?}``; arguments are validated before anything runs.

``bank`` arguments default to the connection's bank (the ``X-Cairn-Bank`` header, which
``cairn-mcp`` sets from ``CAIRN_BANK``); without one they are required.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError
from pydantic.json_schema import models_json_schema

from ..auth.principal import Permission, Principal
from ..banks import service as bank_service
from ..banks.records import (
    MAX_TEXT_BYTES,
    MIN_TEXT_BYTES,
    BankRequest,
    PinRequest,
    RuleRequest,
    SaveRequest,
    SupersedeRequest,
    UpdateRequest,
)
from ..errors import BadRequest, CairnError, Forbidden
from ..inject.service import PreviewRequest
from ..structured.tool import ToolCall
from ..team import entries
from ..team.retrieval import RetrieveBody
from ..usage import meter as usage_meter
from ..validation import Line, Text
from . import banks, inject, recall, structured, team
from . import team_models as tm
from .http import ROUTES, IntRange, Route, as_cairn_error, invoke, validation_failure

log = logging.getLogger("cairn.mcp")

READ = Permission.MEMORY_READ.value
WRITE = Permission.MEMORY_WRITE.value
BANK_HELP = ("The bank's name (lowercase letters, digits, '-' and '_'). Optional when the connection names a "
             "default bank.")


# --- arguments ------------------------------------------------------------------------------

class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class BankArgs(_Args):
    bank: StrictStr = Field(min_length=1, max_length=200, description=BANK_HELP)


class MemoryArgs(BankArgs):
    memory_id: StrictStr = Field(min_length=1, max_length=200, description="The memory's id, as recall and "
                                 "listings give it.")


class BankListArgs(_Args):
    limit: Annotated[int, IntRange(1, bank_service.BANKS_PAGE_MAX, strict=True)] | None = Field(
        None, description="Banks per page.")
    cursor: Line | None = Field(None, max_length=2000, description="next_cursor of the previous page.")
    trashed: StrictBool = Field(False, description="List the trash instead of the live banks.")


class BankCreateArgs(BankRequest, _Args):
    pass


class MemorySaveArgs(BankArgs, SaveRequest):
    pass


class RecallArgs(BankArgs, recall.RecallRequest):
    pass


class MemoryListArgs(BankArgs):
    limit: int | None = Field(None, ge=1, description="Memories per page (the service's page maximum applies).")
    cursor: Line | None = Field(None, max_length=2000, description="next_cursor of the previous page.")
    tag: Line | None = Field(None, max_length=64, description="Only memories with this tag.")
    include_superseded: StrictBool = Field(False, description="Include forgotten and superseded memories.")


class MemoryUpdateArgs(MemoryArgs, UpdateRequest):
    pass


class MemoryPinArgs(MemoryArgs, PinRequest):
    pass


class MemorySupersedeArgs(MemoryArgs, SupersedeRequest):
    pass


class RuleSetArgs(BankArgs, RuleRequest):
    name: StrictStr = Field(min_length=1, max_length=200, description="The rule's name (the naming rule of banks).")


class PreviewArgs(BankArgs, PreviewRequest):
    pass


class StructuredArgs(ToolCall):
    session_id: StrictStr = Field(min_length=1, max_length=200, description="The Turnstone session's id.")


class TeamSearchArgs(RetrieveBody):
    pass


class TeamDraftArgs(_Args):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    entry_id: Line | None = Field(None, alias="entryId", max_length=64,
                                  description="The draft to edit; omit it to create a new draft.")
    space_id: Line | None = Field(None, alias="spaceId", max_length=64,
                                  description="The team space of a new draft (required to create one).")
    kind: Literal["decision", "convention", "note", "glossary"] | None = Field(
        None, description="What the entry records (required to create one).")
    title: Line | None = Field(None, min_length=1, max_length=200, description="The entry's title "
                               "(required to create one).")
    text: Text = Field(description="The entry's whole text (markdown).")
    seq: int | None = Field(None, ge=0, description="The seq a previous team_draft returned: your text is then "
                            "merged with the edits others made since. Without it, your text replaces the "
                            "draft's current text.")


# --- the registry ---------------------------------------------------------------------------

@cache
def _route(view: Callable[..., Any]) -> Route:
    """The declaration of the REST view ``view`` (looked up once: tools ask on every call)."""
    return next(r for r in ROUTES if r.view is view)


@dataclass(frozen=True)
class Tool:
    """One MCP tool: it runs ``view`` (a REST view; ``route`` is its declaration) with the
    arguments named in ``path`` as path parameters and the others as the JSON body, or as the query
    string when ``query``; ``run`` replaces that for a tool of several calls."""

    name: str
    title: str
    description: str
    arguments: type[BaseModel]
    view: Callable[..., Any]
    permission: str | None
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    path: tuple[str, ...] = ()
    query: bool = False
    run: Callable[[Principal, Any], Any] | None = None
    output: type[BaseModel] | None = None

    @property
    def route(self) -> Route:
        """The REST operation the tool runs (the one it counts as)."""
        return _route(self.view)

    def permitted(self, principal: Principal) -> bool:
        """True when ``principal`` may list and call the tool: it holds ``permission`` (a tool without
        one relies on its route's own checks, as team memory's space grants) and, unless the route
        applies a bank allow-list itself, has none."""
        held = self.permission is None or principal.has(self.permission)
        return held and (self.route.bank_scoped or not principal.bank_confined)


def _draft(principal: Principal, args: TeamDraftArgs) -> tuple[int, dict[str, Any]]:
    """Create a draft (``spaceId``, ``kind``, ``title``) or change an entry (``entryId``): its text
    ``text`` and, given, its title and kind. ``(status, TeamDraft body)``. What would refuse the
    text is checked before anything is created; an edit writes the text before the metadata, so a
    refused text leaves the entry as it was."""
    meta = args.model_dump(by_alias=True, exclude_unset=True, exclude={"entry_id", "space_id", "text", "seq"})
    if args.entry_id is None:
        entry_id = _create_draft(principal, args, meta)
    else:
        entry_id = args.entry_id
        if args.space_id is not None:
            raise BadRequest("spaceId names the space of a new draft; an entry does not move.",
                             details={"field": "spaceId"})
        # write_text refuses an entry the caller may not change, a read-only one and a bad seq first
        entries.write_text(principal, entry_id, args.text, base_seq=args.seq)
        if meta:
            invoke(_route(team.patch_entry), principal, {"entry_id": entry_id}, body=meta)
    detail = team.render_detail(entries.get(principal, entry_id))
    return 200, {k: v for k, v in detail.items() if k in tm.TeamDraft.model_fields}


def _create_draft(principal: Principal, args: TeamDraftArgs, meta: dict[str, Any]) -> str:
    """The new draft's id, its text written."""
    for name in ("space_id", "kind", "title"):
        if getattr(args, name) is None:
            field = TeamDraftArgs.model_fields[name].alias or name
            raise BadRequest(f"{field} is required to create a draft (or give entryId to edit one).",
                             details={"field": field})
    if args.seq is not None:
        raise BadRequest("seq belongs to an edit (with entryId): a new draft has no earlier state.",
                         details={"field": "seq"})
    entries.check_new_text(principal, args.text)
    _, created = invoke(_route(team.create_entry), principal, {}, body={"spaceId": args.space_id, **meta})
    entry_id = str(created["id"])
    try:
        entries.write_text(principal, entry_id, args.text)
    except CairnError as err:  # only a backend failure or a race past the checks above gets here
        err.details = {**(err.details or {}), "entryId": entry_id}  # the draft exists: a retry edits it
        raise
    return entry_id


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("bank_list", "List memory banks", "List the memory banks of the organisation with their counts "
         "(memories, pinned, rules). Use it to find which bank to read or write.",
         BankListArgs, banks.list_banks, READ, read_only=True, idempotent=True, query=True),
    Tool("bank_create", "Create a memory bank", "Create a memory bank, or confirm it exists (created: false). "
         "A bank is an isolated store of markdown rules and one-sentence memories.",
         BankCreateArgs, banks.create_bank, WRITE, read_only=False, idempotent=True),
    Tool("memory_save", "Save a memory", "Save one fact, preference or decision worth remembering, as one "
         f"self-contained sentence ({MIN_TEXT_BYTES} to {MAX_TEXT_BYTES} UTF-8 bytes). Saving a text the bank "
         "already holds reinforces it (corroboration) instead of duplicating it. Add entities (people, projects, "
         "tools) and tags to make it easier to recall.", MemorySaveArgs, banks.save_memory, WRITE, read_only=False,
         path=("bank",)),
    Tool("memory_recall", "Recall memories", "Find the memories of a bank best ranked for a query (BM25F over "
         "text, entities and tags, plus entity match, corroboration, pinning and recency), each with its "
         "score and signals. Call it before answering anything that may depend on what was remembered.",
         RecallArgs, recall.recall, READ, read_only=True, idempotent=True, path=("bank",)),
    Tool("memory_get", "Read a memory", "Read one memory by id, with its entities, tags, corroboration and "
         "state (live, forgotten or superseded).", MemoryArgs, banks.get_memory, READ, read_only=True,
         idempotent=True, path=("bank", "memory_id")),
    Tool("memory_list", "List memories", "List a bank's memories, newest first, a page at a time; filter by "
         "tag; forgotten and superseded ones only on request.", MemoryListArgs, banks.list_memories, READ,
         read_only=True, idempotent=True, path=("bank",), query=True),
    Tool("memory_update", "Correct a memory", "Change a memory's text, entities, tags or pinning; the earlier "
         "revision stays in its history.", MemoryUpdateArgs, banks.update_memory, WRITE, read_only=False,
         destructive=True, path=("bank", "memory_id")),
    Tool("memory_forget", "Forget a memory", "Forget a memory that is wrong or no longer wanted: it leaves "
         "recall and injection at once (its history is kept for audit; saving the same text again brings it "
         "back).",
         MemoryArgs, banks.delete_memory, WRITE, read_only=False, destructive=True, idempotent=True,
         path=("bank", "memory_id")),
    Tool("memory_pin", "Pin or unpin a memory", "Pin a memory so it ranks first and is always injected "
         "(pinned: true), or unpin it.", MemoryPinArgs, banks.pin_memory, WRITE, read_only=False,
         idempotent=True, path=("bank", "memory_id")),
    Tool("memory_supersede", "Supersede a memory", "Retire a memory in favour of a newer one of the same bank "
         "(superseded_by: its id), when a fact changed.", MemorySupersedeArgs, banks.supersede_memory, WRITE,
         read_only=False, destructive=True, idempotent=True, path=("bank", "memory_id")),
    Tool("memory_history", "A memory's history", "Every revision of a memory, oldest first: saves, "
         "reinforcements, edits, pinning, forgetting.", MemoryArgs, banks.memory_history, READ, read_only=True,
         idempotent=True, path=("bank", "memory_id")),
    Tool("rules_list", "List rules", "List a bank's rules: the markdown instructions injected into every "
         "turn, with their sizes.", BankArgs, banks.list_rules, READ, read_only=True, idempotent=True,
         path=("bank",)),
    Tool("rule_set", "Write a rule", "Create or replace a bank's rule: markdown (up to 65,536 UTF-8 bytes) "
         "injected into every turn before the memories.", RuleSetArgs, banks.set_rule, WRITE, read_only=False,
         destructive=True, idempotent=True, path=("bank", "name")),
    Tool("context_preview", "Preview the injection", "Show the exact text a turn with this user message "
         "would get injected from the bank (rules, then recalled memories), with its budget use and what "
         "was cut.", PreviewArgs, inject.preview, READ, read_only=True, idempotent=True, path=("bank",)),
    Tool("structured_memory", "Session memory (Turnstone)", "The Turnstone memory tool of a session: action "
         "save (name, content, type, scope, description), get (name, scope), search (query), list or delete "
         "(name, scope). The session's kind decides which scopes it may use.", StructuredArgs,
         structured.session_memory, WRITE, read_only=False, destructive=True, path=("session_id",)),
    Tool("team_search", "Search team memory", "Search the accepted entries of team spaces (drafts are never "
         "served); each result names its entry and revision, and the retrieval is attributed.",
         TeamSearchArgs, team.retrieve_entries, None, read_only=True),
    Tool("team_draft", "Draft a team entry", "Create a draft team-memory entry (spaceId, kind, title, text) "
         "or change a draft's text (entryId, text, and the seq you last saw so that others' edits since merge "
         "in). A draft is never retrieved until a person other than its authors reviews and accepts it.",
         TeamDraftArgs, team.create_entry, WRITE, read_only=False, destructive=True, run=_draft,
         output=tm.TeamDraft),
)}
"""Every tool by name, in the order ``tools/list`` shows them."""


# --- schemas --------------------------------------------------------------------------------

def _inline(node: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """``node`` with every local ``$ref`` replaced by its definition (the models are not recursive)."""
    if depth > 32:
        raise ValueError("schema nesting too deep to inline")
    if isinstance(node, dict):
        if "$ref" in node:
            target = _inline(defs[node["$ref"].rsplit("/", 1)[-1]], defs, depth + 1)
            rest = {k: _inline(v, defs, depth + 1) for k, v in node.items() if k != "$ref"}
            return {**target, **rest}
        return {k: _inline(v, defs, depth + 1) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline(v, defs, depth + 1) for v in node]
    return node


def _schema(models: list[type[BaseModel]], mode: Literal["validation", "serialization"]) -> dict[str, Any]:
    refs, top = models_json_schema([(m, mode) for m in models], ref_template="#/$defs/{model}")
    defs = top.get("$defs", {})
    parts = [_inline(refs[(m, mode)], defs) for m in models]
    if len(parts) == 1:
        return {**parts[0], "type": "object"}
    return {"type": "object", "anyOf": parts}


@cache
def _definition(name: str) -> dict[str, Any]:
    tool = TOOLS[name]
    outputs = [tool.output] if tool.output else [
        m for s, m in sorted(tool.route.responses.items()) if s < 300 and isinstance(m, type)]
    annotations = {"title": tool.title, "readOnlyHint": tool.read_only, "idempotentHint": tool.idempotent,
                   "openWorldHint": False}
    if not tool.read_only:
        annotations["destructiveHint"] = tool.destructive
    return {"name": tool.name, "title": tool.title, "description": tool.description,
            "inputSchema": _schema([tool.arguments], "validation"),
            "outputSchema": _schema(list(dict.fromkeys(outputs)), "serialization"), "annotations": annotations}


def definition(name: str, default_bank: str | None = None) -> dict[str, Any]:
    """Tool ``name`` as ``tools/list`` shows it (a wire ``Tool``: name, title, description,
    inputSchema, outputSchema, annotations); with ``default_bank``, ``bank`` is optional and
    defaults to it."""
    out = json.loads(json.dumps(_definition(name)))  # a copy the caller may change
    props = out["inputSchema"].get("properties", {})
    if default_bank is not None and "bank" in props:
        props["bank"]["default"] = default_bank
        out["inputSchema"]["required"] = [r for r in out["inputSchema"].get("required", []) if r != "bank"]
    return out


# --- calls ----------------------------------------------------------------------------------

def _query(args: dict[str, Any]) -> dict[str, str]:
    """Typed arguments as a query string's values (booleans as ``true``/``false``; None left out)."""
    return {k: ("true" if v else "false") if isinstance(v, bool) else str(v) for k, v in args.items() if v is not None}


def run(principal: Principal, tool: Tool, arguments: dict[str, Any]) -> tuple[int, Any]:
    """Validate ``arguments`` and run ``tool`` for ``principal``: ``(status, body)``. Raises the
    ``CairnError`` the REST operation would answer (403 ``forbidden`` for a tool not permitted)."""
    if not tool.permitted(principal):
        if tool.permission is not None and not principal.has(tool.permission):
            raise Forbidden(f"This token lacks the '{tool.permission}' permission the {tool.name} tool needs.",
                            details={"required": tool.permission})
        principal.require_org_wide()
    try:
        args = tool.arguments.model_validate(arguments)
    except ValidationError as exc:
        raise validation_failure(exc) from None
    if tool.run is not None:
        # a tool of several calls counts and spends as its route, checked before the first of them
        usage_meter.retarget(tool.route.name, tool.route.meter)
        usage_meter.admit()
        return tool.run(principal, args)
    values = args.model_dump(by_alias=True, exclude_unset=True)
    params = {name: values.pop(name) for name in tool.path}
    if tool.query:
        return invoke(tool.route, principal, params, query=_query(values))
    return invoke(tool.route, principal, params, body=values)


class Toolbox:
    """The tools of one caller on one connection (``default_bank``: the ``X-Cairn-Bank`` header)."""

    def __init__(self, principal: Principal, default_bank: str | None, request_id: str) -> None:
        self.principal, self.default_bank, self.request_id = principal, default_bank, request_id

    def listed(self) -> list[dict[str, Any]]:
        """The caller's tools as wire ``Tool`` objects, in registry order."""
        return [definition(t.name, self.default_bank) for t in TOOLS.values() if t.permitted(self.principal)]

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """Run tool ``name``: a wire ``CallToolResult`` (``isError`` with the REST error body on a
        failure, never a traceback), or None when no tool has that name."""
        tool = TOOLS.get(name)
        if tool is None:
            return None
        args = dict(arguments)
        if self.default_bank is not None and "bank" in tool.arguments.model_fields and args.get("bank") is None:
            args["bank"] = self.default_bank
        status, code = 200, None
        try:
            status, body = run(self.principal, tool, args)
            result = {"content": [{"type": "text", "text": json.dumps(body, ensure_ascii=False)}],
                      "structuredContent": body, "isError": False}
        except Exception as exc:  # noqa: BLE001 - every failure is a result the model can read
            err = as_cairn_error(exc, self.request_id)
            status, code = err.status, err.code
            usage_meter.failed()  # a refused or failed tool call counts nothing
            result = {"content": [{"type": "text", "text": f"{err.message} (code: {err.code})"}],
                      "structuredContent": dict(err.body()), "isError": True}
        log.info(json.dumps({"msg": "mcp tool", "request_id": self.request_id, "tool": name,
                             "operation": tool.route.name, "status": status, "code": code,
                             "principal_id": self.principal.token_id}))
        return result
