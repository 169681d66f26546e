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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError
from pydantic.json_schema import models_json_schema

from ..auth.principal import Permission, Principal
from ..banks import service as bank_service
from ..banks.records import (
    MAX_SESSION_ID,
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
from ..extraction import service as extraction
from ..inject.service import PreviewRequest
from ..structured import listing, sessions
from ..structured import tool as structured_tool
from ..structured.names import MAX_DESCRIPTION, MAX_NAME
from ..structured.scopes import SCOPES, TYPES
from ..team import entries
from ..team.permissions import SPACES_PAGE_MAX
from ..team.retrieval import MAX_SPACES, RetrieveBody
from ..usage import meter as usage_meter
from ..validation import Line, Model, Text
from . import banks, hooks, inject, recall, structured, team
from . import mcp_text as text
from . import structured_models as sm
from . import team_models as tm
from .http import ROUTES, IntRange, Route, as_cairn_error, invoke, validation_failure

log = logging.getLogger("cairn.mcp")

READ = Permission.MEMORY_READ.value
WRITE = Permission.MEMORY_WRITE.value
BANK_HELP = ("The bank's name (lowercase letters, digits, '-' and '_'). Optional when the connection names a "
             "default bank.")


# --- arguments ------------------------------------------------------------------------------

class _Args(Model):
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


class ObservedMessage(_Args):
    role: Literal["user", "assistant"]
    content: StrictStr = Field(min_length=1)


class ObserveArgs(BankArgs):
    """A finished exchange for extraction (the turn-completed hook's bounds)."""

    messages: list[ObservedMessage] = Field(min_length=1, max_length=extraction.MAX_HOOK_MESSAGES)
    session_id: Line | None = Field(None, min_length=1, max_length=MAX_SESSION_ID)
    turn_id: Line | None = Field(None, min_length=1, max_length=MAX_SESSION_ID)


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


class StructuredArgs(_Args):
    """The Turnstone memory tool's call, typed: the REST route (``ToolCall``) checks the values with
    Turnstone's messages, so its model stays loose."""

    model_config = ConfigDict(extra="forbid", strict=True)
    session_id: StrictStr = Field(min_length=1, max_length=128)
    action: Literal["save", "get", "search", "delete", "list"]
    name: StrictStr | None = Field(None, min_length=1, max_length=MAX_NAME)
    content: StrictStr | None = None  # its cap is the deployment's ``max_content`` tuning, checked by the route
    description: StrictStr | None = Field(None, max_length=MAX_DESCRIPTION)
    type: Literal[TYPES] | None = None  # type: ignore[valid-type]  # the scope rules' tuple
    scope: Literal[SCOPES] | None = None  # type: ignore[valid-type]  # the scope rules' tuple
    query: StrictStr | None = Field(None, min_length=1)
    limit: Annotated[int, IntRange(1, structured_tool.MAX_LIMIT, strict=True)] | None = None


class TeamSearchArgs(RetrieveBody):
    """``RetrieveBody`` with the snake_case name (``spaceIds`` still read, deprecated)."""

    model_config = ConfigDict(extra="forbid")
    space_ids: list[Line] = Field(validation_alias=AliasChoices("space_ids", "spaceIds"),
                                  serialization_alias="spaceIds", min_length=1, max_length=MAX_SPACES)


class SpaceListArgs(_Args):
    limit: Annotated[int, IntRange(1, SPACES_PAGE_MAX, strict=True)] | None = None
    cursor: Line | None = Field(None, max_length=2000)


class SessionOpenArgs(_Args):
    """The part of ``SessionRequest`` an agent picks: no workstream, project or other user."""

    kind: Literal["interactive", "coordinator"] = "interactive"
    memory_enabled: StrictBool = True
    parent_session_id: Line | None = Field(None, min_length=1, max_length=128)


class SessionListArgs(_Args):
    """``GET /v1/api/sessions``'s query, typed."""

    limit: Annotated[int, IntRange(1, listing.PAGE_MAX, strict=True)] | None = None
    cursor: Line | None = Field(None, max_length=2000)


class TeamDraftArgs(_Args):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    entry_id: Line | None = Field(default=None, validation_alias=AliasChoices("entry_id", "entryId"), max_length=64,
                                  description="The draft to edit; omit it to create a new draft.")
    space_id: Line | None = Field(default=None, validation_alias=AliasChoices("space_id", "spaceId"), max_length=64,
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
class Param:
    """A tool parameter as ``tools/list`` describes it: what it does and one example value."""

    description: str
    example: Any


@dataclass(frozen=True)
class IdSource:
    """Where a model gets the value of an id parameter: the field ``field`` of tool ``tool``'s
    output (a dotted path through its output schema, lists crossed: ``memories.memory.id``)."""

    tool: str
    field: str


@dataclass(frozen=True)
class Tool:
    """One MCP tool: it runs ``view`` (a REST view; ``route`` is its declaration) with the
    arguments named in ``path`` as path parameters and the others as the JSON body, or as the query
    string when ``query``; ``run`` replaces that for a tool of several calls.

    ``params`` describe the arguments (over ``COMMON_PARAMS``); ``id_sources`` name, for each
    ``*_id``/``*_ids`` argument, the tool whose output gives its value; ``summary`` renders the
    result's text content from the REST body; ``choices`` narrows an argument's ``enum`` to what
    the caller may pass (the REST route still decides)."""

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
    outputs: tuple[type[BaseModel], ...] = ()
    params: Mapping[str, Param] = field(default_factory=dict)
    id_sources: Mapping[str, IdSource] = field(default_factory=dict)
    summary: Callable[[Any], str] = text.compact
    choices: Callable[[Principal], Mapping[str, list[str]]] | None = None

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
    """Create a draft (``space_id``, ``kind``, ``title``) or change an entry (``entry_id``): its text
    ``text`` and, given, its title and kind. ``(status, TeamDraft body)``. What would refuse the
    text is checked before anything is created; an edit writes the text before the metadata, so a
    refused text leaves the entry as it was."""
    meta = args.model_dump(by_alias=True, exclude_unset=True, exclude={"entry_id", "space_id", "text", "seq"})
    if args.entry_id is None:
        entry_id = _create_draft(principal, args, meta)
    else:
        entry_id = args.entry_id
        if args.space_id is not None:
            raise BadRequest("space_id names the space of a new draft; an entry does not move.",
                             details={"field": "space_id"})
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
            raise BadRequest(f"{name} is required to create a draft (or give entry_id to edit one).",
                             details={"field": name})
    if args.seq is not None:
        raise BadRequest("seq belongs to an edit (with entry_id): a new draft has no earlier state.",
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


def _observe(principal: Principal, args: ObserveArgs) -> tuple[int, Any]:
    """Hand the exchange to the turn-completed hook (its checks, its job): ``(202, TurnAccepted body)``."""
    messages = [m.model_dump() for m in args.messages]
    session_id, turn_id = extraction.observed_ids(messages, args.session_id, args.turn_id)
    body = {"session_id": session_id, "turn_id": turn_id, "messages": messages,
            "metadata": {"memory_bank": args.bank}, "exchange": True}
    return invoke(_route(hooks.turn_completed), principal, {}, body=body)


MEMORY_ID = "fp3f9a0c1d2e4b5a67"
SPACE_ID = "spc_8c1f0e2d3b4a59687a6b"
ENTRY_ID = "ent_5d4c3b2a190817263544"
SESSION_ID = "ses_0f1e2d3c4b5a69788796a5b4c3d2e1f0"
CURSOR = "eyJrIjoibWFpbiJ9"
MEMORY_IDS = {"memory_id": IdSource("memory_list", "memories.id")}
COMMON_PARAMS = {
    "bank": Param(BANK_HELP + " A bank that does not exist is created by memory_save; bank_list names them.", "main"),
    "memory_id": Param("The memory's id: `memory.id` of memory_save, `memories[].memory.id` of memory_recall or "
                       "`memories[].id` of memory_list.", MEMORY_ID),
    "cursor": Param("`next_cursor` of the previous page; omit it for the first page.", CURSOR),
    "entities": Param("People, projects, tools or places the memory is about (at most 8, each up to 64 characters, "
                      "lower-cased). They RANK recall: a query naming one lifts the memories that carry it.",
                      ["alice", "billing-service"]),
    "tags": Param("Labels to FILTER by later (at most 8, each up to 64 characters, lower-cased): recall and "
                  "memory_list return only memories with a given tag. Tags are not searched as text.",
                  ["preference"]),
    "pinned": Param("true: the memory ranks first and is injected into every turn; false: unpin it.", True),
    "include_superseded": Param("true: also return forgotten and superseded memories (their history).", False),
}


FILTER_PARAM = Param(
    "Only memories passing every field given compete, as if the bank held only them: entities_any / "
    "entities_all and tags_any / tags_all (1 to 8 lower-cased handles: at least one / every one carried), "
    "created_after / created_before (ms since epoch, exclusive, on the memory's first save) and session_id "
    "(the conversation that first taught the memory: `session_id` of memory_observe, or a memory's "
    "`source.session_id`).",
    {"entities_any": ["alice"], "tags_all": ["preference"], "created_after": 1764547200000})


def _memory_tool(name: str, title: str, description: str, args: type[BaseModel], view: Callable[..., Any],
                 permission: str, read_only: bool, **kw: Any) -> Tool:
    """A tool on one memory (``bank`` and ``memory_id`` in the path) whose result is ``{memory}``."""
    return Tool(name, title, description, args, view, permission, read_only=read_only, path=("bank", "memory_id"),
                id_sources=MEMORY_IDS | kw.pop("id_sources", {}), summary=kw.pop("summary", text.memory), **kw)


def _session_kinds(principal: Principal) -> Mapping[str, list[str]]:
    return {"kind": list(sessions.kinds(principal))}


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("bank_list", "List memory banks", "List the memory banks of the organisation with their counts "
         "(memories, pinned, rules). Use it to find which bank to read or write, or to check a bank's name "
         "before saving (memory_save creates a bank it does not find).",
         BankListArgs, banks.list_banks, READ, read_only=True, idempotent=True, query=True, summary=text.banks,
         params={"limit": Param(f"Banks per page (1 to {bank_service.BANKS_PAGE_MAX}).", 50),
                 "trashed": Param("true: list the trash (restorable banks) instead of the live banks.", False)}),
    Tool("bank_create", "Create a memory bank", "Create a memory bank, or confirm it exists (created: false). "
         "A bank is an isolated store of markdown rules and one-sentence memories.",
         BankCreateArgs, banks.create_bank, WRITE, read_only=False, idempotent=True, summary=text.bank_created,
         params={"name": Param("The new bank's name: lowercase letters, digits, '-' and '_'.", "project-atlas"),
                 "description": Param("What the bank holds (up to 1000 characters).", "Facts about project Atlas")}),
    Tool("memory_save", "Save a memory", "Save one fact, preference or decision worth remembering, as one "
         f"self-contained sentence ({MIN_TEXT_BYTES} to {MAX_TEXT_BYTES} UTF-8 bytes). Saving a text the bank "
         "already holds reinforces it (corroboration) instead of duplicating it. entities make it rank for "
         "queries naming them; tags let recall filter on them. The bank is created on first use: the result "
         "says so (bank_created: true), so check a new bank's name. To correct a fact, save the new sentence "
         "with supersedes: [the old memory's id] (one call retires the old one). A text that was forgotten "
         "or superseded answers memory_retired unless revive: true. The result lists related memories: a "
         "duplicate (the same in other words: keep one) or a conflict (the same subject with another value: "
         "if the new sentence corrects the old, supersede the old one; if unsure, ask the user).",
         MemorySaveArgs, banks.save_memory, WRITE,
         read_only=False, path=("bank",), summary=text.memory_saved,
         id_sources={"session_id": IdSource("session_open", "session_id")},
         params={"text": Param(f"The memory: one self-contained sentence of {MIN_TEXT_BYTES} to {MAX_TEXT_BYTES} UTF-8 "
                               "bytes, with names rather than pronouns.",
                               "Alice prefers Postgres for new services."),
                 "pinned": Param("true: the memory ranks first and is injected into every turn.", False),
                 "session_id": Param("The conversation session the memory comes from (provenance; memories of "
                                     "one session recall together): `session_id` of session_open.", SESSION_ID),
                 "supersedes": Param("Ids of memories this one corrects (at most 10, from memory_recall or "
                                     "memory_list): each is retired in the same write, or nothing is written.",
                                     ["3f2a9c0d5e7b1a64"]),
                 "revive": Param("true: bring back the forgotten or superseded memory with exactly this text.",
                                 False),
                 "observed_at": Param("When the statement was made, in ms since epoch, when that was not just now "
                                      "(from an older transcript or note): of two conflicting memories the one said "
                                      "later ranks first. Leave it out for something said now.", 1796600000000)}),
    Tool("memory_recall", "Recall memories", "Find the memories of a bank best ranked for a query: BM25F over "
         "the memories' text and closeness in meaning (a question worded differently still finds its memory), plus a "
         "boost for entities the query names, corroboration, pinning and recency; "
         "each hit has its score and signals. `filter` narrows which memories compete (entities, tags, creation "
         "time, source session) before ranking, so `limit` hits come back whenever that many pass; `tag` is a "
         "one-tag filter. Tags are never searched as text. Call it before answering anything that may depend "
         "on what was remembered.",
         RecallArgs, recall.recall, READ, read_only=True, idempotent=True, path=("bank",), summary=text.recalled,
         params={"query": Param("What to look for, in words the memories would use (up to 4000 characters).",
                                "which database does Alice prefer"),
                 "limit": Param(f"How many memories at most (1 to {recall.LIMIT_MAX}).", 5),
                 "tag": Param("Only memories with this tag (a filter, not a search term).", "preference"),
                 "filter": FILTER_PARAM,
                 "as_of": Param("Recall the bank as it was at this time (ms since epoch); needs the "
                                "admin.memories permission.", 1767225600000)}),
    Tool("memory_observe", "Observe an exchange", "Hand a finished exchange (the user's message and your "
         "answer) to Cairn: the facts, preferences and decisions in it are extracted and saved as memories in "
         "the background, as a host's turn-completed hook does. Call it after each exchange worth remembering; "
         "use memory_save for one fact to keep now. Sending the same session_id and turn_id again extracts "
         "nothing twice.", ObserveArgs, hooks.turn_completed, WRITE, read_only=False, idempotent=True,
         run=_observe, summary=text.observed,
         id_sources={"session_id": IdSource("memory_observe", "session_id"),
                     "turn_id": IdSource("memory_observe", "turn_id")},
         params={"messages": Param(f"The exchange, oldest first (1 to {extraction.MAX_HOOK_MESSAGES} messages): "
                                   "role user or assistant, content its text.",
                                   [{"role": "user", "content": "We moved billing to Postgres 16."},
                                    {"role": "assistant", "content": "Noted: billing now runs on Postgres 16."}]),
                 "session_id": Param("The conversation the exchange belongs to (memories keep it as their "
                                     f"source; default '{extraction.OBSERVED_SESSION}').", "conv-2026-12-07"),
                 "turn_id": Param("The exchange's id within the session: the same id again is extracted once "
                                  "(default: a digest of the messages).", "turn-7")}),
    _memory_tool("memory_get", "Read a memory", "Read one memory by id, with its entities, tags, corroboration "
                 "and state (live, forgotten or superseded).", MemoryArgs, banks.get_memory, READ, True,
                 idempotent=True),
    Tool("memory_list", "List memories", "List a bank's memories, newest first, a page at a time; filter by "
         "tag; forgotten and superseded ones only on request. Use memory_recall to search.", MemoryListArgs,
         banks.list_memories, READ, read_only=True, idempotent=True, path=("bank",), query=True, summary=text.listed,
         params={"limit": Param("Memories per page (the service's page maximum applies).", 20),
                 "tag": Param("Only memories with this tag.", "preference")}),
    _memory_tool("memory_update", "Correct a memory", "Change a memory's text, entities, tags or pinning (only "
                 "the fields given change); the earlier revision stays in its history.", MemoryUpdateArgs,
                 banks.update_memory, WRITE, False, destructive=True,
                 params={"text": Param("The corrected sentence.", "Alice prefers Postgres 16 for new services."),
                         "entities": Param("The new entities (replace the old ones; they RANK recall).",
                                           ["alice"]),
                         "tags": Param("The new tags (replace the old ones; they FILTER recall).", ["preference"])}),
    _memory_tool("memory_forget", "Forget a memory", "Forget a memory that is wrong or no longer wanted: it "
                 "leaves recall and injection at once (its history is kept for audit). Saving the same text "
                 "again is refused (memory_retired) unless memory_save is called with revive: true.", MemoryArgs,
                 banks.delete_memory, WRITE, False, destructive=True,
                 idempotent=True),
    _memory_tool("memory_pin", "Pin or unpin a memory", "Pin a memory so it ranks first and is always injected "
                 "(pinned: true), or unpin it.", MemoryPinArgs, banks.pin_memory, WRITE, False, idempotent=True),
    _memory_tool("memory_supersede", "Supersede a memory", "Retire a memory in favour of a newer one of the "
                 "same bank when a fact changed: save the new fact first, then pass its id as superseded_by.",
                 MemorySupersedeArgs, banks.supersede_memory, WRITE, False, destructive=True, idempotent=True,
                 params={"superseded_by": Param("The id of the newer memory of the same bank (`memory.id` of "
                                                "memory_save).", "fp0a1b2c3d4e5f6789")}),
    _memory_tool("memory_history", "A memory's history", "Every revision of a memory, oldest first: saves, "
                 "reinforcements, edits, pinning, forgetting.", MemoryArgs, banks.memory_history, READ, True,
                 idempotent=True, summary=text.history),
    Tool("rules_list", "List rules", "List a bank's rules: the markdown instructions injected into every "
         "turn, with their sizes.", BankArgs, banks.list_rules, READ, read_only=True, idempotent=True,
         path=("bank",), summary=text.rules),
    Tool("rule_set", "Write a rule", "Create or replace a bank's rule: markdown (up to 65,536 UTF-8 bytes) "
         "injected into every turn before the memories. Use it for standing instructions, memory_save for facts.",
         RuleSetArgs, banks.set_rule, WRITE, read_only=False, destructive=True, idempotent=True,
         path=("bank", "name"), summary=text.rule_state,
         params={"name": Param("The rule's name (lowercase letters, digits, '-' and '_').", "style"),
                 "content": Param("The rule's whole markdown text; it replaces the previous one.",
                                  "# Style\nAnswer in short sentences.\n")}),
    Tool("context_preview", "Preview the injection", "Show the exact text a turn with this user message "
         "would get injected from the bank (rules, then recalled memories), with its budget use and what "
         "was cut.", PreviewArgs, inject.preview, READ, read_only=True, idempotent=True, path=("bank",),
         summary=text.preview,
         params={"query": Param("The user message of the hypothetical turn (up to 4000 characters).",
                                "Which database should the new service use?"),
                 "filter": FILTER_PARAM}),
    Tool("session_open", "Open a structured-memory session", "Open a Turnstone session for structured_memory: "
         "its kind decides which scopes it may use. `kind` lists only the kinds this token may open "
         "(a coordinator needs a signed-in user, never an API key).", SessionOpenArgs,
         structured.create_session, WRITE, read_only=False, summary=text.session, choices=_session_kinds,
         id_sources={"parent_session_id": IdSource("session_open", "session_id")},
         params={"kind": Param("interactive (one user's session) or coordinator (may use the coordinator "
                               "scope and open child sessions).", "interactive"),
                 "memory_enabled": Param("false: the session's turns get no memory injection.", True),
                 "parent_session_id": Param("Open a child (interactive) session of this coordinator session: "
                                            "`session_id` of session_open.", SESSION_ID)}),
    Tool("session_list", "List structured-memory sessions", "List the Turnstone sessions this token may use "
         "(its user's; an API key's own), by id: pick an existing session (one the host opened, or an earlier "
         "conversation's) for structured_memory instead of opening a new one with session_open.",
         SessionListArgs, structured.list_sessions, READ, read_only=True, idempotent=True, query=True,
         summary=text.sessions,
         params={"limit": Param(f"Sessions per page (1 to {listing.PAGE_MAX}).", 50)}),
    Tool("structured_memory", "Session memory (Turnstone)", "The Turnstone memory tool of a session opened "
         "with session_open or picked from session_list: action save (name, content, type, scope, description), "
         "get (name, scope), search (query), list, or delete (name, scope). The session's kind decides which "
         "scopes it may use.",
         StructuredArgs, structured.session_memory, WRITE, read_only=False, destructive=True, path=("session_id",),
         outputs=(sm.StructuredMemory, sm.StructuredMemoryList, sm.StructuredMemoryDeleted),
         summary=text.structured,
         id_sources={"session_id": IdSource("session_list", "sessions.session_id")},
         params={"session_id": Param("The session: `sessions[].session_id` of session_list (an existing one) or "
                                     "`session_id` of session_open (a new one).", SESSION_ID),
                 "action": Param("save, get, search, list or delete.", "save"),
                 "name": Param("The memory's snake_case name (save, get, delete).", "db_choice"),
                 "content": Param("The memory's text (save; at most the deployment's max_content characters, "
                                  "32,768 by default).", "We use Postgres for billing."),
                 "description": Param("A one-line summary used to judge relevance (save).",
                                      "Which database billing uses"),
                 "type": Param("The memory's type (save; default general; a filter for search and list).",
                               "reference"),
                 "scope": Param("Where the memory lives (default: the session's own target for save, get and "
                                "delete; everything visible for search and list).", "user"),
                 "query": Param("What to look for (search).", "postgres billing"),
                 "limit": Param(f"Results at most (search and list; 1 to {structured_tool.MAX_LIMIT}).", 20)}),
    Tool("space_list", "List team spaces", "List the team spaces this token may read (id, name, kind, entry "
         "count). Use it to get the space ids team_search and team_draft take.", SpaceListArgs,
         team.list_spaces, None, read_only=True, idempotent=True, query=True, summary=text.spaces,
         params={"limit": Param(f"Spaces per page (1 to {SPACES_PAGE_MAX}).", 50)}),
    Tool("team_search", "Search team memory", "Search the accepted entries of team spaces (drafts are never "
         "served); each result names its entry and revision, and the retrieval is attributed. It takes space "
         "ids, never names: get them from space_list.", TeamSearchArgs, team.retrieve_entries, None,
         read_only=True, summary=text.team_results,
         id_sources={"space_ids": IdSource("space_list", "spaces.id")},
         params={"space_ids": Param(f"The spaces to search (1 to {MAX_SPACES}): `spaces[].id` of space_list. "
                                    "`spaceIds` is a deprecated name for it.", [SPACE_ID]),
                 "query": Param("What to look for (up to 4000 characters).", "extraction queue choice"),
                 "limit": Param("Results at most (1 to 50).", 10)}),
    Tool("team_draft", "Draft a team entry", "Create a draft team-memory entry (space_id, kind, title, text) "
         "or change a draft's text (entry_id, text, and the seq you last saw so that others' edits since merge "
         "in). A draft is never retrieved until a person other than its authors reviews and accepts it.",
         TeamDraftArgs, team.create_entry, WRITE, read_only=False, destructive=True, run=_draft,
         outputs=(tm.TeamDraft,), summary=text.team_draft,
         id_sources={"space_id": IdSource("space_list", "spaces.id"), "entry_id": IdSource("team_draft", "id")},
         params={"entry_id": Param("The entry to edit (`id` of an earlier team_draft); omit it to create a new "
                                   "draft. `entryId` is a deprecated name for it.", ENTRY_ID),
                 "space_id": Param("The team space of a new draft (`spaces[].id` of space_list; required to "
                                   "create one). `spaceId` is a deprecated name for it.", SPACE_ID),
                 "kind": Param("What the entry records (required to create one).", "decision"),
                 "title": Param("The entry's title (required to create one; up to 200 characters).",
                                "Queue choice"),
                 "text": Param("The entry's whole text (markdown).", "We chose SQS FIFO for the extraction queue."),
                 "seq": Param("The seq a previous team_draft returned: your text is then merged with the edits "
                              "others made since. Without it, your text replaces the draft's current text.", 3)}),
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


def _described(schema: dict[str, Any], tool: Tool) -> dict[str, Any]:
    """``schema`` (an input schema) with each property's description and example from the registry
    (``tool.params`` over ``COMMON_PARAMS``; a model's own description stays when neither has one)."""
    for name, prop in schema.get("properties", {}).items():
        doc = tool.params.get(name) or COMMON_PARAMS.get(name)
        if doc is not None:
            prop["description"] = doc.description
            prop["examples"] = [doc.example]
        prop.pop("title", None)
    return schema


@cache
def _definition(name: str) -> dict[str, Any]:
    tool = TOOLS[name]
    outputs = list(tool.outputs) or [
        m for s, m in sorted(tool.route.responses.items()) if s < 300 and isinstance(m, type)]
    annotations = {"title": tool.title, "readOnlyHint": tool.read_only, "idempotentHint": tool.idempotent,
                   "openWorldHint": False}
    if not tool.read_only:
        annotations["destructiveHint"] = tool.destructive
    return {"name": tool.name, "title": tool.title, "description": tool.description,
            "inputSchema": _described(_schema([tool.arguments], "validation"), tool),
            "outputSchema": _schema(list(dict.fromkeys(outputs)), "serialization"), "annotations": annotations}


def definition(name: str, default_bank: str | None = None, principal: Principal | None = None) -> dict[str, Any]:
    """Tool ``name`` as ``tools/list`` shows it (a wire ``Tool``: name, title, description,
    inputSchema, outputSchema, annotations); with ``default_bank``, ``bank`` is optional and
    defaults to it; with ``principal``, an argument the tool's ``choices`` narrow lists only those."""
    out = json.loads(json.dumps(_definition(name)))  # a copy the caller may change
    props = out["inputSchema"].get("properties", {})
    if default_bank is not None and "bank" in props:
        props["bank"]["default"] = default_bank
        out["inputSchema"]["required"] = [r for r in out["inputSchema"].get("required", []) if r != "bank"]
    choices = TOOLS[name].choices
    if principal is not None and choices is not None:
        for arg, allowed in choices(principal).items():
            props[arg]["enum"] = list(allowed)
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


def _summary(tool: Tool, body: Any) -> str:
    """The result's text: the tool's summary of ``body``, or compact JSON when the summary cannot
    read it (the call succeeded: its result never turns into an error)."""
    try:
        return tool.summary(body)
    except Exception:  # noqa: BLE001 - a body the summary does not expect still answers
        log.warning(json.dumps({"msg": "mcp summary failed", "tool": tool.name}))
        return text.compact(body)


class Toolbox:
    """The tools of one caller on one connection (``default_bank``: the ``X-Cairn-Bank`` header)."""

    def __init__(self, principal: Principal, default_bank: str | None, request_id: str) -> None:
        self.principal, self.default_bank, self.request_id = principal, default_bank, request_id

    def listed(self) -> list[dict[str, Any]]:
        """The caller's tools as wire ``Tool`` objects, in registry order."""
        return [definition(t.name, self.default_bank, self.principal) for t in TOOLS.values()
                if t.permitted(self.principal)]

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
            result = {"content": [{"type": "text", "text": _summary(tool, body)}], "structuredContent": body,
                      "isError": False}
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
