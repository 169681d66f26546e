# Generated from openapi.json by clients/python/scripts/generate.py: do not edit.

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel


class AcceptBody(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    documentSha256: Annotated[
        str, Field(pattern="^[0-9a-f]{64}$", title="Documentsha256")
    ]


class AdminMemoryDeleted(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    status: Annotated[Literal["ok"], Field(title="Status")]


class Limit(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="At most this many (clamped to 1..200).",
            ge=-9007199254740991,
            le=9007199254740991,
            title="Limit",
        ),
    ] = 100


class Limit1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="At most this many (clamped to 1..200).",
            max_length=0,
            title="Limit",
        ),
    ] = 100


class AdminMemoryListQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    type: Annotated[
        Literal["", "feedback", "general", "reference", "user"] | None,
        Field(description="Only memories of this type.", title="Type"),
    ] = ""
    scope: Annotated[
        Literal["", "global", "workstream", "user", "coordinator", "project"] | None,
        Field(description="Only memories of this scope.", title="Scope"),
    ] = ""
    scope_id: Annotated[str | None, Field(title="Scope Id")] = ""
    limit: Annotated[
        Limit | Limit1 | None,
        Field(
            description="At most this many (clamped to 1..200).",
            title="Limit",
            validate_default=True,
        ),
    ] = 100


class Limit2(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="At most this many (clamped to 1..50).",
            ge=-9007199254740991,
            le=9007199254740991,
            title="Limit",
        ),
    ] = 20


class Limit3(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="At most this many (clamped to 1..50).",
            max_length=0,
            title="Limit",
        ),
    ] = 20


class AdminMemorySearchQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    q: Annotated[
        str,
        Field(description="The search query (not blank).", pattern="\\S", title="Q"),
    ]
    type: Annotated[
        Literal["", "feedback", "general", "reference", "user"] | None,
        Field(description="Only memories of this type.", title="Type"),
    ] = ""
    scope: Annotated[
        Literal["", "global", "workstream", "user", "coordinator", "project"] | None,
        Field(description="Only memories of this scope.", title="Scope"),
    ] = ""
    scope_id: Annotated[str | None, Field(title="Scope Id")] = ""
    limit: Annotated[
        Limit2 | Limit3 | None,
        Field(
            description="At most this many (clamped to 1..50).",
            title="Limit",
            validate_default=True,
        ),
    ] = 20


class Limit4(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=1000, title="Limit")] = 100


class AttributionsQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    limit: Annotated[
        Limit4 | Literal[""] | None, Field(title="Limit", validate_default=True)
    ] = 100
    spaceId: Annotated[str, Field(description="The space's id.", min_length=1)]


class BankMemorySource(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    session_id: Annotated[str | None, Field(title="Session Id")] = None
    entry_id: Annotated[str | None, Field(title="Entry Id")] = None
    agent: Annotated[str | None, Field(title="Agent")] = None


class Description(RootModel[str]):
    root: Annotated[str, Field(max_length=1000, title="Description")] = None


class BankRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(pattern="^[a-z0-9][a-z0-9_-]{0,63}$", title="Name")]
    description: Annotated[str | None, Field(max_length=1000, title="Description")] = ""


class BankRule(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(title="Name")]
    content: Annotated[str, Field(title="Content")]
    updated_at: Annotated[int | None, Field(title="Updated At")] = None


class BankRuleReply(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    rule: BankRule


class BankRuleState(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    exists: Annotated[bool, Field(title="Exists")]


class MatchThreshold(RootModel[float]):
    root: Annotated[float, Field(ge=0.0, le=1.0, title="Match Threshold")] = None


class BankSettings(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    on_conflict: Annotated[
        Literal["flag", "supersede"] | None, Field(title="On Conflict")
    ] = "flag"
    match_threshold: Annotated[
        MatchThreshold | None, Field(title="Match Threshold")
    ] = None
    ambient_floor: Annotated[bool | None, Field(title="Ambient Floor")] = None
    feed: Annotated[Literal["hooks", "tools", "both"] | None, Field(title="Feed")] = (
        None
    )


class BankSettingsDefaults(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    match_threshold: Annotated[float, Field(title="Match Threshold")]
    ambient_floor: Annotated[bool, Field(title="Ambient Floor")]


class BankSettingsOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    on_conflict: Annotated[Literal["flag", "supersede"], Field(title="On Conflict")]
    match_threshold: Annotated[float | None, Field(title="Match Threshold")]
    ambient_floor: Annotated[bool | None, Field(title="Ambient Floor")] = None
    feed: Annotated[Literal["hooks", "tools", "both"] | None, Field(title="Feed")] = (
        None
    )


class BankTag(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    tag: Annotated[str, Field(title="Tag")]
    count: Annotated[int, Field(title="Count")]


class BankTagList(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    tags: Annotated[list[BankTag], Field(title="Tags")]


class BankTrashReply(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    trashed_to: Annotated[str, Field(title="Trashed To")]


class Limit5(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=200, title="Limit")] = None


class BanksQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    limit: Annotated[Limit5 | Literal[""] | None, Field(title="Limit")] = None
    cursor: Annotated[str | None, Field(title="Cursor")] = None
    trashed: Annotated[
        Literal["true", "false", "1", "0", "yes", "no", ""] | None,
        Field(title="Trashed"),
    ] = "false"


class BudgetUse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    used_bytes: Annotated[int, Field(title="Used Bytes")]
    limit_bytes: Annotated[int, Field(title="Limit Bytes")]


class CallerToken(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    token_id: Annotated[str, Field(title="Token Id")]
    org_id: Annotated[str, Field(title="Org Id")]
    kind: Annotated[
        str, Field(description="`person`, `api_key` or `service`.", title="Kind")
    ]
    user_id: Annotated[
        str | None,
        Field(
            description="The person or service; null for an API key.", title="User Id"
        ),
    ]
    permissions: Annotated[list[str], Field(description="Sorted.", title="Permissions")]
    banks: Annotated[
        list[str] | None,
        Field(description="The bank allow-list; null: every bank.", title="Banks"),
    ]
    expires_at: Annotated[
        int | None,
        Field(description="ms since epoch; null: never.", title="Expires At"),
    ]


class Limit6(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=100, title="Limit")] = 20


class ConflictsQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    limit: Annotated[
        Limit6 | Literal[""] | None, Field(title="Limit", validate_default=True)
    ] = 20
    cursor: Annotated[str | None, Field(title="Cursor")] = None


class ContextRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    messages: Annotated[
        list[dict[str, Any]] | None, Field(max_length=10000, title="Messages")
    ] = None


class DamagedRecord(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    reason: Annotated[str, Field(title="Reason")]


class DamagedRevision(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    seq: Annotated[int, Field(title="Seq")]
    reason: Annotated[str, Field(title="Reason")]


class SpaceId(RootModel[str]):
    root: Annotated[str, Field(max_length=64, title="Spaceid")] = None


class DenyRule(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memberId: Annotated[str, Field(max_length=256, min_length=1, title="Memberid")]
    spaceId: Annotated[SpaceId | None, Field(title="Spaceid")] = None
    permissions: Annotated[
        list[Literal["context:space:read", "context:space:write"]] | None,
        Field(max_length=2, title="Permissions"),
    ] = None


class DenyRules(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    rules: Annotated[list[DenyRule], Field(max_length=1000, title="Rules")]


class DescriptionPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    description: Annotated[Any | None, Field(title="Description")] = None


class DoctorCheck(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(title="Name")]
    ok: Annotated[bool, Field(title="Ok")]
    required: Annotated[bool, Field(title="Required")]
    detail: Annotated[str, Field(title="Detail")]
    ms: Annotated[float, Field(title="Ms")]


class DoctorReport(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    ok: Annotated[bool, Field(title="Ok")]
    checks: Annotated[list[DoctorCheck], Field(title="Checks")]


class Limit7(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=200, title="Limit")] = 50


class EntriesQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    limit: Annotated[
        Limit7 | Literal[""] | None, Field(title="Limit", validate_default=True)
    ] = 50
    spaceId: Annotated[str, Field(description="The space's id.", min_length=1)]
    status: Annotated[
        Literal["draft", "accepted", "superseded", "archived"] | Literal["draft", "accepted", "superseded", "archived"] | None,
        Field(title="Status"),
    ] = None
    kind: Annotated[
        Literal["decision", "convention", "note", "glossary"] | Literal["decision", "convention", "note", "glossary"] | None,
        Field(title="Kind"),
    ] = None
    q: Annotated[str | None, Field(title="Q")] = None
    cursor: Annotated[str | None, Field(title="Cursor")] = None


class EntryCreate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    spaceId: Annotated[str, Field(max_length=64, min_length=1, title="Spaceid")]
    kind: Annotated[
        Literal["decision", "convention", "note", "glossary"], Field(title="Kind")
    ]
    title: Annotated[str, Field(max_length=200, min_length=1, title="Title")]
    links: Annotated[list[str] | None, Field(max_length=50, title="Links")] = None
    supersedes: Annotated[str | None, Field(title="Supersedes")] = None
    classification: Annotated[
        Literal["public", "internal", "confidential", "restricted"] | None,
        Field(title="Classification"),
    ] = None


class Title(RootModel[str]):
    root: Annotated[str, Field(max_length=200, min_length=1, title="Title")] = None


class Links(RootModel[list[str]]):
    root: Annotated[list[str], Field(max_length=50, title="Links")] = None


class IfMetaVersion(RootModel[int]):
    root: Annotated[int, Field(ge=1, title="Ifmetaversion")] = None


class EntryPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    title: Annotated[Title | None, Field(title="Title")] = None
    kind: Annotated[
        Literal["decision", "convention", "note", "glossary"] | None,
        Field(title="Kind"),
    ] = None
    links: Annotated[Links | None, Field(title="Links")] = None
    supersedes: Annotated[str | None, Field(title="Supersedes")] = None
    classification: Annotated[
        Literal["public", "internal", "confidential", "restricted"] | None,
        Field(title="Classification"),
    ] = None
    ifMetaVersion: Annotated[IfMetaVersion | None, Field(title="Ifmetaversion")] = None


class Error(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    error: Annotated[str, Field(title="Error")]
    code: Annotated[str, Field(title="Code")]
    details: Annotated[dict[str, Any] | None, Field(title="Details")] = None


class Actor(RootModel[str]):
    root: Annotated[str, Field(max_length=300, title="Actor")] = None


class Target(RootModel[str]):
    root: Annotated[str, Field(max_length=1000, title="Target")] = None


class Since(RootModel[int]):
    root: Annotated[int, Field(ge=0, le=9999999999999, title="Since")] = 0


class Until(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=9999999999999, title="Until")] = None


class Limit8(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=500, title="Limit")] = 100


class EventsQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    action: Annotated[
        Literal["memory.save", "memory.update", "memory.delete", "memory.pin", "memory.supersede", "memory.purge", "bank.create", "bank.update", "bank.trash", "bank.restore", "bank.import", "bank.backfill", "rule.set", "rule.delete", "rule.reload", "config.reload", "token.mint", "token.revoke", "session.forget", "hook.refused", "usage.limits", "extraction.run", "extraction.reset", "session.create", "session.delete", "workstream.create", "project.create", "project.update", "project.member", "project.member_remove", "context.space.create", "context.space.patch", "context.space.member", "context.space.member_remove", "context.deny_rules", "context.memory.create", "context.memory.patch", "context.memory.update", "context.memory.accept", "context.memory.supersede", "context.memory.archive", ""] | Literal["memory.save", "memory.update", "memory.delete", "memory.pin", "memory.supersede", "memory.purge", "bank.create", "bank.update", "bank.trash", "bank.restore", "bank.import", "bank.backfill", "rule.set", "rule.delete", "rule.reload", "config.reload", "token.mint", "token.revoke", "session.forget", "hook.refused", "usage.limits", "extraction.run", "extraction.reset", "session.create", "session.delete", "workstream.create", "project.create", "project.update", "project.member", "project.member_remove", "context.space.create", "context.space.patch", "context.space.member", "context.space.member_remove", "context.deny_rules", "context.memory.create", "context.memory.patch", "context.memory.update", "context.memory.accept", "context.memory.supersede", "context.memory.archive", ""] | None,
        Field(title="Action"),
    ] = None
    actor: Annotated[Actor | None, Field(title="Actor")] = None
    target: Annotated[Target | None, Field(title="Target")] = None
    since: Annotated[
        Since | Literal[""] | None, Field(title="Since", validate_default=True)
    ] = 0
    until: Annotated[Until | Literal[""] | None, Field(title="Until")] = None
    limit: Annotated[
        Limit8 | Literal[""] | None, Field(title="Limit", validate_default=True)
    ] = 100
    cursor: Annotated[str | None, Field(title="Cursor")] = None


class ExportLink(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    url: Annotated[str, Field(title="Url")]
    expires_at: Annotated[int, Field(title="Expires At")]
    damaged: Annotated[int | None, Field(title="Damaged")] = None


class ExportQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    history: Annotated[
        Literal["true", "false", "1", "0", "yes", "no", ""] | None,
        Field(title="History"),
    ] = "false"


class ExtractionOutcome(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    status: Annotated[str, Field(title="Status")]
    saved: Annotated[int, Field(title="Saved")]
    reinforced: Annotated[int, Field(title="Reinforced")]
    skipped: Annotated[int, Field(title="Skipped")]
    rule_lines: Annotated[int, Field(title="Rule Lines")]
    model_called: Annotated[bool, Field(title="Model Called")]


class ForgetSessionRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    session_id: Annotated[str, Field(max_length=256, min_length=1, title="Session Id")]
    purge: Annotated[bool | None, Field(title="Purge")] = False


class HookMessage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    role: Annotated[Literal["user"], Field(title="Role")]
    content: Annotated[str, Field(title="Content")]


class HookMetadata(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory_bank: Annotated[str | None, Field(title="Memory Bank")] = None


class HookMutations(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    system_prompt_append: Annotated[str, Field(title="System Prompt Append")]
    append_messages: Annotated[list[HookMessage], Field(title="Append Messages")]


class SessionId(RootModel[str]):
    root: Annotated[str, Field(max_length=256, title="Session Id")] = None


class HookRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    messages: Annotated[
        list[dict[str, Any]] | None, Field(max_length=10000, title="Messages")
    ] = None
    metadata: HookMetadata | None = None
    session_id: Annotated[SessionId | None, Field(title="Session Id")] = None
    step: Annotated[int | None, Field(ge=0, title="Step")] = 0


class ImportLineError(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    line: Annotated[int, Field(title="Line")]
    error: Annotated[str, Field(title="Error")]
    code: Annotated[
        Literal["validation_error", "duplicate_text", "memory_retired", "quota_exceeded"],
        Field(title="Code"),
    ]


class ImportUpload(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    url: Annotated[str, Field(title="Url")]
    s3_key: Annotated[str, Field(title="S3 Key")]
    expires_at: Annotated[int, Field(title="Expires At")]


class IndexSnapshot(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    key: Annotated[str, Field(title="Key")]
    seq: Annotated[int, Field(title="Seq")]
    at: Annotated[int, Field(title="At")]


class LimitValues(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    requests_per_minute: Annotated[
        int,
        Field(
            description="Requests per minute of one token (bucket refill).",
            title="Requests Per Minute",
        ),
    ]
    burst: Annotated[
        int,
        Field(description="Requests an idle token may send at once.", title="Burst"),
    ]
    as_of_cost: Annotated[
        int,
        Field(
            description="Bucket tokens an `as_of` recall spends.", title="As Of Cost"
        ),
    ]
    memories_per_bank: Annotated[
        int, Field(description="Live memories of one bank.", title="Memories Per Bank")
    ]
    banks_per_org: Annotated[
        int, Field(description="Live banks of the org.", title="Banks Per Org")
    ]
    extraction_tokens_per_day: Annotated[
        int,
        Field(
            description="Extraction model tokens (input + output) per UTC day.",
            title="Extraction Tokens Per Day",
        ),
    ]
    org_requests_per_minute: Annotated[
        int,
        Field(
            description="Requests per minute of all the org's tokens together.",
            title="Org Requests Per Minute",
        ),
    ]
    org_burst: Annotated[
        int,
        Field(
            description="Requests all the org's tokens may send at once.",
            title="Org Burst",
        ),
    ]


class RequestsPerMinute(RootModel[int]):
    root: Annotated[
        int, Field(ge=1, le=1000000000000000, title="Requests Per Minute")
    ] = None


class Burst(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=1000000000000000, title="Burst")] = None


class MemoriesPerBank(RootModel[int]):
    root: Annotated[
        int, Field(ge=1, le=1000000000000000, title="Memories Per Bank")
    ] = None


class BanksPerOrg(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=1000000000000000, title="Banks Per Org")] = None


class ExtractionTokensPerDay(RootModel[int]):
    root: Annotated[
        int, Field(ge=1, le=1000000000000000, title="Extraction Tokens Per Day")
    ] = None


class OrgRequestsPerMinute(RootModel[int]):
    root: Annotated[
        int, Field(ge=1, le=1000000000000000, title="Org Requests Per Minute")
    ] = None


class OrgBurst(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=1000000000000000, title="Org Burst")] = None


class LimitsPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    requests_per_minute: Annotated[
        RequestsPerMinute | None, Field(title="Requests Per Minute")
    ] = None
    burst: Annotated[Burst | None, Field(title="Burst")] = None
    memories_per_bank: Annotated[
        MemoriesPerBank | None, Field(title="Memories Per Bank")
    ] = None
    banks_per_org: Annotated[BanksPerOrg | None, Field(title="Banks Per Org")] = None
    extraction_tokens_per_day: Annotated[
        ExtractionTokensPerDay | None, Field(title="Extraction Tokens Per Day")
    ] = None
    org_requests_per_minute: Annotated[
        OrgRequestsPerMinute | None, Field(title="Org Requests Per Minute")
    ] = None
    org_burst: Annotated[OrgBurst | None, Field(title="Org Burst")] = None


class McpErrorData(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    code: Annotated[
        str,
        Field(
            description="Stable and machine-readable: one of the codes this operation lists.",
            title="Code",
        ),
    ]
    details: Annotated[dict[str, Any] | None, Field(title="Details")] = None


class McpErrorObject(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    code: Annotated[
        int,
        Field(
            description="The JSON-RPC code: -32700 parse error, -32600 invalid request, -32601 method not found, -32602 invalid params, -32603 internal error, -32020 header mismatch, -32022 unsupported protocol version.",
            title="Code",
        ),
    ]
    message: Annotated[str, Field(title="Message")]
    data: McpErrorData


class McpMessage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    jsonrpc: Annotated[Literal["2.0"], Field(title="Jsonrpc")]
    id: Annotated[int | str | None, Field(title="Id")] = None
    method: Annotated[
        str | None,
        Field(
            description="`initialize`, `ping`, `server/discover`, `tools/list`, `tools/call` or a notification's method.",
            title="Method",
        ),
    ] = None
    params: Annotated[dict[str, Any] | None, Field(title="Params")] = None


class McpResult(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    jsonrpc: Annotated[Literal["2.0"], Field(title="Jsonrpc")]
    id: Annotated[int | str, Field(title="Id")]
    result: Annotated[dict[str, Any], Field(title="Result")]


class MemberPut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    permissions: Annotated[
        list[Literal["context:space:read", "context:space:write"]],
        Field(max_length=2, title="Permissions"),
    ]


class MemberRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    access: Annotated[Literal["read", "write"], Field(title="Access")]


class Limit9(RootModel[int]):
    root: Annotated[int, Field(ge=1, title="Limit")]


class MemoriesQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    limit: Annotated[Limit9 | Literal[""] | None, Field(title="Limit")] = None
    cursor: Annotated[str | None, Field(title="Cursor")] = None
    tag: Annotated[str | None, Field(title="Tag")] = None
    q: Annotated[
        str | None,
        Field(
            description="Only memories whose text contains this, ignoring case; the listing's `total` is then null (matches are not counted).",
            title="Q",
        ),
    ] = None
    include_superseded: Annotated[
        Literal["true", "false", "1", "0", "yes", "no", ""] | None,
        Field(title="Include Superseded"),
    ] = "false"


class MemoryAuditEvent(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(description="The event's key.", title="Id")]
    action: Annotated[str, Field(title="Action")]
    actor: Annotated[str, Field(title="Actor")]
    target: Annotated[str | None, Field(description="The memory_id.", title="Target")]
    details: Annotated[dict[str, Any], Field(title="Details")]
    at: Annotated[int | None, Field(description="ms since the epoch.", title="At")]


class MemoryAuditPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    events: Annotated[list[MemoryAuditEvent], Field(title="Events")]
    next_cursor: Annotated[
        str | None, Field(description="null on the last page.", title="Next Cursor")
    ]


class Since1(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="Only events at or after this time, ms since the epoch.",
            ge=-9007199254740991,
            le=9007199254740991,
            title="Since",
        ),
    ] = 0


class Since2(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Only events at or after this time, ms since the epoch.",
            max_length=0,
            title="Since",
        ),
    ] = 0


class Limit10(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="At most this many (clamped to 1..500).",
            ge=-9007199254740991,
            le=9007199254740991,
            title="Limit",
        ),
    ] = 100


class Limit11(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="At most this many (clamped to 1..500).",
            max_length=0,
            title="Limit",
        ),
    ] = 100


class MemoryAuditQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    action: Annotated[
        Literal["", "memory.save", "memory.update", "memory.delete"] | None,
        Field(description="Only events of this action.", title="Action"),
    ] = ""
    since: Annotated[
        Since1 | Since2 | None,
        Field(
            description="Only events at or after this time, ms since the epoch.",
            title="Since",
            validate_default=True,
        ),
    ] = 0
    limit: Annotated[
        Limit10 | Limit11 | None,
        Field(
            description="At most this many (clamped to 1..500).",
            title="Limit",
            validate_default=True,
        ),
    ] = 100
    cursor: Annotated[
        str | None,
        Field(description="The `next_cursor` of the previous page.", title="Cursor"),
    ] = None


class MemoryBank(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(title="Name")]
    description: Annotated[str, Field(title="Description")]
    memories: Annotated[int, Field(title="Memories")]
    pinned: Annotated[int, Field(title="Pinned")]
    rules: Annotated[int, Field(title="Rules")]
    settings: BankSettingsOut
    defaults: BankSettingsDefaults


class MemoryImportProblem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    line: Annotated[int, Field(description="The line's number, from 1.", title="Line")]
    error: Annotated[str, Field(title="Error")]
    code: Annotated[
        str,
        Field(
            description="Why, stable: `validation_error` (the line is not a valid row) or `conflict` (its memory_id belongs to another memory).",
            title="Code",
        ),
    ]


class MemoryImportReport(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    imported: Annotated[
        int, Field(description="Memories created or updated.", title="Imported")
    ]
    skipped: Annotated[
        int, Field(description="Rows not newer than what is stored.", title="Skipped")
    ]
    errors: Annotated[
        list[MemoryImportProblem],
        Field(description="Refused lines, by line number.", title="Errors"),
    ]


class Limit12(RootModel[int]):
    root: Annotated[
        int, Field(description="At most this many.", ge=1, le=200, title="Limit")
    ] = 100


class Limit13(RootModel[str]):
    root: Annotated[
        str, Field(description="At most this many.", max_length=0, title="Limit")
    ] = 100


class MemoryListQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    type: Annotated[
        Literal["", "feedback", "general", "reference", "user"] | None,
        Field(description="Only memories of this type.", title="Type"),
    ] = ""
    scope: Annotated[
        Literal["", "global", "user", "workstream"] | None,
        Field(description="The scope (global when empty).", title="Scope"),
    ] = None
    scope_id: Annotated[
        str | None, Field(description="The scope's qualifier.", title="Scope Id")
    ] = None
    limit: Annotated[
        Limit12 | Limit13 | None,
        Field(description="At most this many.", title="Limit", validate_default=True),
    ] = 100


class MemoryTargetQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    scope: Annotated[
        Literal["", "global", "user", "workstream"] | None,
        Field(description="The scope (global when empty).", title="Scope"),
    ] = None
    scope_id: Annotated[
        str | None, Field(description="The scope's qualifier.", title="Scope Id")
    ] = None


class UserId(RootModel[str]):
    root: Annotated[str, Field(max_length=128, min_length=1, title="User Id")] = None


class Label(RootModel[str]):
    root: Annotated[str, Field(max_length=200, title="Label")] = None


class ExpiresAt(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="ms since epoch", gt=0, le=253402300799999, title="Expires At"
        ),
    ] = None


class Banks(RootModel[list[str]]):
    root: Annotated[list[str], Field(max_length=100, title="Banks")] = None


class MintRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    user_id: Annotated[UserId | None, Field(title="User Id")] = None
    kind: Annotated[str, Field(title="Kind")]
    permissions: Annotated[
        list[str] | None, Field(max_length=7, title="Permissions")
    ] = None
    label: Annotated[Label | None, Field(title="Label")] = None
    expires_at: Annotated[
        ExpiresAt | None, Field(description="ms since epoch", title="Expires At")
    ] = None
    banks: Annotated[Banks | None, Field(title="Banks")] = None


class MintedToken(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    token_id: Annotated[str, Field(title="Token Id")]
    kind: Annotated[
        str | None,
        Field(
            description="person, service or api_key; null in a damaged record.",
            title="Kind",
        ),
    ]
    user_id: Annotated[str | None, Field(title="User Id")]
    permissions: Annotated[list[str], Field(title="Permissions")]
    label: Annotated[str | None, Field(title="Label")]
    expires_at: Annotated[
        int | None,
        Field(
            description="ms since the epoch; null: never expires.", title="Expires At"
        ),
    ]
    banks: Annotated[
        list[str] | None,
        Field(description="The bank allow-list; null: every bank.", title="Banks"),
    ]
    created_at: Annotated[
        int | None, Field(description="ms since the epoch.", title="Created At")
    ]
    last_used_at: Annotated[
        int | None,
        Field(
            description="ms since the epoch; null until first used.",
            title="Last Used At",
        ),
    ]
    revoked_at: Annotated[
        int | None,
        Field(
            description="ms since the epoch; null unless revoked.", title="Revoked At"
        ),
    ]
    damaged: Annotated[
        bool | None,
        Field(
            description="Present (true) only when the stored record could not be fully read: such a token never authenticates.",
            title="Damaged",
        ),
    ] = None
    token: Annotated[
        str, Field(description="The secret bearer token, `cairn_...`.", title="Token")
    ]


class OpenApiDocument(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )


class OrgAuditEvent(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[
        str,
        Field(description="The event's position: `<at, 13 digits>#<hex>`.", title="Id"),
    ]
    action: Annotated[
        str,
        Field(description="One of the actions `action` filters by.", title="Action"),
    ]
    actor: Annotated[
        str, Field(description="`<kind>:<user or token id>`.", title="Actor")
    ]
    target: Annotated[
        str | None,
        Field(
            description="The object acted on (a bank, memory id, space or entry id...).",
            title="Target",
        ),
    ]
    details: Annotated[
        dict[str, Any],
        Field(
            description="What the action changed (`{}` when nothing).", title="Details"
        ),
    ]
    at: Annotated[int | None, Field(description="ms since epoch.", title="At")]


class OrgAuditEventPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    events: Annotated[list[OrgAuditEvent], Field(title="Events")]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Pass it as `cursor` for the next page; null on the last.",
            title="Next Cursor",
        ),
    ]


class OrgLimitValues(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    requests_per_minute: Annotated[int | None, Field(title="Requests Per Minute")] = (
        None
    )
    burst: Annotated[int | None, Field(title="Burst")] = None
    memories_per_bank: Annotated[int | None, Field(title="Memories Per Bank")] = None
    banks_per_org: Annotated[int | None, Field(title="Banks Per Org")] = None
    extraction_tokens_per_day: Annotated[
        int | None, Field(title="Extraction Tokens Per Day")
    ] = None
    org_requests_per_minute: Annotated[
        int | None, Field(title="Org Requests Per Minute")
    ] = None
    org_burst: Annotated[int | None, Field(title="Org Burst")] = None


class PinRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    pinned: Annotated[bool, Field(title="Pinned")]


class Project(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    project_id: Annotated[str, Field(title="Project Id")]
    name: Annotated[str, Field(title="Name")]
    active: Annotated[bool, Field(title="Active")]
    owner: Annotated[
        str | None,
        Field(
            description="The creator's user id; null for an anonymous creator.",
            title="Owner",
        ),
    ]


class ProjectMember(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    project_id: Annotated[str, Field(title="Project Id")]
    user_id: Annotated[str, Field(title="User Id")]
    access: Annotated[Literal["read", "write"], Field(title="Access")]


class ProjectMemberRemoved(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    status: Annotated[Literal["ok"], Field(title="Status")]


class ProjectPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    projects: Annotated[list[Project], Field(title="Projects")]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Present only when more follow: pass it as `cursor`.",
            title="Next Cursor",
        ),
    ] = None


class ProjectPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    active: Annotated[bool, Field(title="Active")]


class ProjectId(RootModel[str]):
    root: Annotated[str, Field(max_length=128, min_length=1, title="Project Id")] = None


class ProjectRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    project_id: Annotated[ProjectId | None, Field(title="Project Id")] = None
    name: Annotated[str, Field(max_length=256, min_length=1, title="Name")]
    active: Annotated[bool | None, Field(title="Active")] = True


class EntitiesAnyItem(RootModel[str]):
    root: Annotated[str, Field(max_length=64, min_length=1)]


class EntitiesAny(RootModel[list[EntitiesAnyItem]]):
    root: Annotated[
        list[EntitiesAnyItem],
        Field(
            description="Only memories carrying at least one of these entities.",
            examples=[["alice", "billing-service"]],
            max_length=8,
            min_length=1,
            title="Entities Any",
        ),
    ] = None


class EntitiesAllItem(RootModel[str]):
    root: Annotated[str, Field(max_length=64, min_length=1)]


class EntitiesAll(RootModel[list[EntitiesAllItem]]):
    root: Annotated[
        list[EntitiesAllItem],
        Field(
            description="Only memories carrying every one of these entities.",
            examples=[["alice"]],
            max_length=8,
            min_length=1,
            title="Entities All",
        ),
    ] = None


class TagsAnyItem(RootModel[str]):
    root: Annotated[str, Field(max_length=64, min_length=1)]


class TagsAny(RootModel[list[TagsAnyItem]]):
    root: Annotated[
        list[TagsAnyItem],
        Field(
            description="Only memories carrying at least one of these tags.",
            examples=[["preference", "decision"]],
            max_length=8,
            min_length=1,
            title="Tags Any",
        ),
    ] = None


class TagsAllItem(RootModel[str]):
    root: Annotated[str, Field(max_length=64, min_length=1)]


class TagsAll(RootModel[list[TagsAllItem]]):
    root: Annotated[
        list[TagsAllItem],
        Field(
            description="Only memories carrying every one of these tags.",
            examples=[["preference"]],
            max_length=8,
            min_length=1,
            title="Tags All",
        ),
    ] = None


class CreatedAfter(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="Only memories first saved after this time (ms since epoch, exclusive).",
            examples=[1764547200000],
            ge=0,
            le=253402300799999,
            title="Created After",
        ),
    ] = None


class CreatedBefore(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="Only memories first saved before this time (ms since epoch, exclusive).",
            examples=[1767225600000],
            ge=0,
            le=253402300799999,
            title="Created Before",
        ),
    ] = None


class SessionId1(RootModel[str]):
    root: Annotated[
        str,
        Field(
            description="Only memories first taught by this conversation session (their source.session_id: saved with it, or extracted from its turns).",
            examples=["conv-2026-12-07"],
            max_length=256,
            min_length=1,
            title="Session Id",
        ),
    ] = None


class RecallFilter(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    entities_any: Annotated[
        EntitiesAny | None,
        Field(
            description="Only memories carrying at least one of these entities.",
            examples=[["alice", "billing-service"]],
            title="Entities Any",
        ),
    ] = None
    entities_all: Annotated[
        EntitiesAll | None,
        Field(
            description="Only memories carrying every one of these entities.",
            examples=[["alice"]],
            title="Entities All",
        ),
    ] = None
    tags_any: Annotated[
        TagsAny | None,
        Field(
            description="Only memories carrying at least one of these tags.",
            examples=[["preference", "decision"]],
            title="Tags Any",
        ),
    ] = None
    tags_all: Annotated[
        TagsAll | None,
        Field(
            description="Only memories carrying every one of these tags.",
            examples=[["preference"]],
            title="Tags All",
        ),
    ] = None
    created_after: Annotated[
        CreatedAfter | None,
        Field(
            description="Only memories first saved after this time (ms since epoch, exclusive).",
            examples=[1764547200000],
            title="Created After",
        ),
    ] = None
    created_before: Annotated[
        CreatedBefore | None,
        Field(
            description="Only memories first saved before this time (ms since epoch, exclusive).",
            examples=[1767225600000],
            title="Created Before",
        ),
    ] = None
    session_id: Annotated[
        SessionId1 | None,
        Field(
            description="Only memories first taught by this conversation session (their source.session_id: saved with it, or extracted from its turns).",
            examples=["conv-2026-12-07"],
            title="Session Id",
        ),
    ] = None


class RecallMatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    level: Annotated[Literal["strong", "partial", "weak", "none"], Field(title="Level")]
    score: Annotated[float | None, Field(title="Score")]
    threshold: Annotated[float, Field(title="Threshold")]


class Tag(RootModel[str]):
    root: Annotated[str, Field(max_length=64, min_length=1, title="Tag")] = None


class AsOf(RootModel[int]):
    root: Annotated[int, Field(ge=0, le=253402300799999, title="As Of")] = None


class RecallRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    query: Annotated[str, Field(max_length=4000, min_length=1, title="Query")]
    limit: Annotated[int | None, Field(ge=1, le=100, title="Limit")] = 6
    tag: Annotated[Tag | None, Field(title="Tag")] = None
    filter: RecallFilter | None = None
    include_superseded: Annotated[bool | None, Field(title="Include Superseded")] = (
        False
    )
    as_of: Annotated[AsOf | None, Field(title="As Of")] = None


class RecallSignals(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    bm25: Annotated[float, Field(title="Bm25")]
    entity: Annotated[float, Field(title="Entity")]
    corroboration: Annotated[float, Field(title="Corroboration")]
    pinned: Annotated[float, Field(title="Pinned")]
    recency: Annotated[float, Field(title="Recency")]
    prf: Annotated[float | None, Field(title="Prf")] = None
    time: Annotated[float | None, Field(title="Time")] = None
    neighbour: Annotated[float | None, Field(title="Neighbour")] = None
    semantic: Annotated[float | None, Field(title="Semantic")] = None


class RelatedMemory(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    relation: Annotated[Literal["duplicate", "conflict"], Field(title="Relation")]
    score: Annotated[float, Field(title="Score")]
    why: Annotated[str, Field(title="Why")]
    action: Annotated[
        Literal["linked", "superseded", "none"] | None, Field(title="Action")
    ] = "none"
    text: Annotated[str | None, Field(title="Text")] = None


class ReloadResult(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    config_version: Annotated[int, Field(title="Config Version")]
    banks: Annotated[int, Field(title="Banks")]


class RestSave(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[Any | None, Field(title="Name")] = None
    description: Annotated[Any | None, Field(title="Description")] = None
    content: Annotated[Any | None, Field(title="Content")] = None
    type: Annotated[str | None, Field(title="Type")] = None
    scope: Annotated[str | None, Field(title="Scope")] = None
    scope_id: Annotated[str | None, Field(title="Scope Id")] = None


class Limit14(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=50, title="Limit")] = 20


class RestSearchBody(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    query: Annotated[str | None, Field(title="Query")] = ""
    type: Annotated[str | None, Field(title="Type")] = None
    limit: Annotated[
        Limit14 | Literal[""] | None, Field(title="Limit", validate_default=True)
    ] = 20
    scope: Annotated[str | None, Field(title="Scope")] = None
    scope_id: Annotated[str | None, Field(title="Scope Id")] = None


class RestoreRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    trashed_to: Annotated[str, Field(max_length=200, min_length=1, title="Trashed To")]


class RetrieveBody(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    spaceIds: Annotated[list[str], Field(max_length=20, min_length=1, title="Spaceids")]
    query: Annotated[str, Field(max_length=4000, min_length=1, title="Query")]
    limit: Annotated[int | None, Field(ge=1, le=50, title="Limit")] = 10


class RuleRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    content: Annotated[
        str,
        Field(
            description="Markdown, at most 65,536 UTF-8 bytes.",
            max_length=65536,
            title="Content",
        ),
    ]


class RulesBudget(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    used_bytes: Annotated[int, Field(title="Used Bytes")]
    limit_bytes: Annotated[int, Field(title="Limit Bytes")]
    truncated: Annotated[bool, Field(title="Truncated")]


class SaveDetails(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    tags_dropped: Annotated[list[str], Field(title="Tags Dropped")]


class Entities(RootModel[list[str]]):
    root: Annotated[list[str], Field(max_length=64, title="Entities")] = None


class Tags(RootModel[list[str]]):
    root: Annotated[list[str], Field(max_length=64, title="Tags")] = None


class SessionId2(RootModel[str]):
    root: Annotated[str, Field(max_length=256, min_length=1, title="Session Id")] = None


class Supersede(RootModel[str]):
    root: Annotated[str, Field(max_length=64, min_length=1)]


class Supersedes(RootModel[list[Supersede]]):
    root: Annotated[
        list[Supersede],
        Field(
            description="Ids of memories this one replaces: each is retired (superseded_by this memory) in the same transaction as the save, or nothing is written.",
            max_length=10,
            title="Supersedes",
        ),
    ] = None


class ObservedAt(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="When the statement was made (ms since epoch), when it was not just now (a transcript, a note from earlier): between two conflicting memories the later statement ranks first. At most 5 minutes ahead of the server's clock.",
            ge=0,
            le=253402300799999,
            title="Observed At",
        ),
    ] = None


class SaveRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    text: Annotated[str, Field(title="Text")]
    entities: Annotated[Entities | None, Field(title="Entities")] = None
    tags: Annotated[Tags | None, Field(title="Tags")] = None
    pinned: Annotated[bool | None, Field(title="Pinned")] = None
    session_id: Annotated[SessionId2 | None, Field(title="Session Id")] = None
    supersedes: Annotated[
        Supersedes | None,
        Field(
            description="Ids of memories this one replaces: each is retired (superseded_by this memory) in the same transaction as the save, or nothing is written.",
            title="Supersedes",
        ),
    ] = None
    revive: Annotated[
        bool | None,
        Field(
            description="Bring back the retired (forgotten or superseded) memory with this text; without it such a save is 409 memory_retired and writes nothing.",
            title="Revive",
        ),
    ] = None
    observed_at: Annotated[
        ObservedAt | None,
        Field(
            description="When the statement was made (ms since epoch), when it was not just now (a transcript, a note from earlier): between two conflicting memories the later statement ranks first. At most 5 minutes ahead of the server's clock.",
            title="Observed At",
        ),
    ] = None


class ServiceHealth(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    status: Annotated[Literal["ok"], Field(title="Status")]


class SessionContext(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    system_message: Annotated[
        str,
        Field(
            description="The <memories> block and the hint; empty when nothing is injected.",
            title="System Message",
        ),
    ]
    injected: Annotated[
        list[str],
        Field(description="The memory_ids injected, in order.", title="Injected"),
    ]
    candidates: Annotated[
        int,
        Field(
            description="How many memories matched the turn's context.",
            title="Candidates",
        ),
    ]
    in_scope: Annotated[
        int,
        Field(
            description="How many live memories the session's visibility envelope holds.",
            title="In Scope",
        ),
    ]
    nudge: Annotated[
        str | None,
        Field(description="A prompt to save a memory, or null.", title="Nudge"),
    ]


class SessionDeletedRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    session_id: Annotated[str, Field(max_length=256, min_length=1, title="Session Id")]


class SessionDropped(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    session_id: Annotated[str, Field(title="Session Id")]
    dropped: Annotated[bool, Field(title="Dropped")]


class SessionEnded(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    status: Annotated[Literal["ok"], Field(title="Status")]
    session_id: Annotated[str, Field(title="Session Id")]


class SessionForgotten(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    session_id: Annotated[str, Field(title="Session Id")]
    retired: Annotated[int, Field(title="Retired")]
    purged: Annotated[int, Field(title="Purged")]
    memory_ids: Annotated[list[str], Field(title="Memory Ids")]


class WorkstreamId(RootModel[str]):
    root: Annotated[str, Field(max_length=128, min_length=1, title="Workstream Id")] = (
        None
    )


class ParentSessionId(RootModel[str]):
    root: Annotated[
        str, Field(max_length=128, min_length=1, title="Parent Session Id")
    ] = None


class SessionRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    kind: Annotated[
        Literal["interactive", "coordinator"] | None, Field(title="Kind")
    ] = "interactive"
    workstream_id: Annotated[WorkstreamId | None, Field(title="Workstream Id")] = None
    project_id: Annotated[ProjectId | None, Field(title="Project Id")] = None
    parent_session_id: Annotated[
        ParentSessionId | None, Field(title="Parent Session Id")
    ] = None
    memory_enabled: Annotated[bool | None, Field(title="Memory Enabled")] = True
    user_id: Annotated[UserId | None, Field(title="User Id")] = None


class SpaceCreate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(max_length=200, min_length=1, title="Name")]
    kind: Annotated[Literal["team", "personal"] | None, Field(title="Kind")] = "team"
    classification: Annotated[
        Literal["public", "internal", "confidential", "restricted"] | None,
        Field(title="Classification"),
    ] = "internal"
    dlpPolicy: Annotated[
        Literal["redact", "drop", "block_source"] | None, Field(title="Dlppolicy")
    ] = "redact"
    teamMemoryEnabled: Annotated[bool | None, Field(title="Teammemoryenabled")] = True


class Name(RootModel[str]):
    root: Annotated[str, Field(max_length=200, min_length=1, title="Name")] = None


class SpacePatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[Name | None, Field(title="Name")] = None
    classification: Annotated[
        Literal["public", "internal", "confidential", "restricted"] | None,
        Field(title="Classification"),
    ] = None
    dlpPolicy: Annotated[
        Literal["redact", "drop", "block_source"] | None, Field(title="Dlppolicy")
    ] = None
    teamMemoryEnabled: Annotated[bool | None, Field(title="Teammemoryenabled")] = None


class Limit15(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=200, title="Limit")] = 50


class SpacesQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    limit: Annotated[
        Limit15 | Literal[""] | None, Field(title="Limit", validate_default=True)
    ] = 50
    cursor: Annotated[str | None, Field(title="Cursor")] = None


class StatedDate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    text: Annotated[str, Field(title="Text")]
    start: Annotated[int, Field(title="Start")]
    end: Annotated[int, Field(title="End")]


class Limit16(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=200, title="Limit")] = None


class StatusQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    limit: Annotated[Limit16 | Literal[""] | None, Field(title="Limit")] = None
    cursor: Annotated[str | None, Field(title="Cursor")] = None


class StructuredMemory(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory_id: Annotated[
        str,
        Field(description="The memory's UUID; kept across updates.", title="Memory Id"),
    ]
    name: Annotated[
        str,
        Field(
            description="Normalized snake_case name, unique within (scope, scope_id).",
            title="Name",
        ),
    ]
    description: Annotated[
        str, Field(description="The relevance summary.", title="Description")
    ]
    type: Annotated[
        str,
        Field(description="One of user, general, feedback, reference.", title="Type"),
    ]
    scope: Annotated[
        str,
        Field(
            description="One of global, workstream, user, coordinator, project.",
            title="Scope",
        ),
    ]
    scope_id: Annotated[
        str,
        Field(description="The scope's qualifier: empty for global.", title="Scope Id"),
    ]
    created: Annotated[
        str, Field(description="UTC time YYYY-MM-DDTHH:MM:SS.", title="Created")
    ]
    updated: Annotated[
        str, Field(description="UTC time YYYY-MM-DDTHH:MM:SS.", title="Updated")
    ]
    last_accessed: Annotated[
        str,
        Field(
            description="UTC time YYYY-MM-DDTHH:MM:SS of the last injection; empty until then.",
            title="Last Accessed",
        ),
    ]
    access_count: Annotated[
        int,
        Field(description="How many turns injected this memory.", title="Access Count"),
    ]
    content: Annotated[str, Field(title="Content")]


class StructuredMemoryDeleted(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    status: Annotated[Literal["ok"], Field(title="Status")]
    name: Annotated[
        str,
        Field(description="The normalized name of the memory deleted.", title="Name"),
    ]


class StructuredMemoryList(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memories: Annotated[list[StructuredMemory], Field(title="Memories")]
    total: Annotated[
        int, Field(description="How many memories this body holds.", title="Total")
    ]


class StructuredMemoryRevision(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory_id: Annotated[
        str,
        Field(description="The memory's UUID; kept across updates.", title="Memory Id"),
    ]
    name: Annotated[
        str,
        Field(
            description="Normalized snake_case name, unique within (scope, scope_id).",
            title="Name",
        ),
    ]
    description: Annotated[
        str, Field(description="The relevance summary.", title="Description")
    ]
    type: Annotated[
        str,
        Field(description="One of user, general, feedback, reference.", title="Type"),
    ]
    scope: Annotated[
        str,
        Field(
            description="One of global, workstream, user, coordinator, project.",
            title="Scope",
        ),
    ]
    scope_id: Annotated[
        str,
        Field(description="The scope's qualifier: empty for global.", title="Scope Id"),
    ]
    created: Annotated[
        str, Field(description="UTC time YYYY-MM-DDTHH:MM:SS.", title="Created")
    ]
    updated: Annotated[
        str, Field(description="UTC time YYYY-MM-DDTHH:MM:SS.", title="Updated")
    ]
    last_accessed: Annotated[
        str,
        Field(
            description="UTC time YYYY-MM-DDTHH:MM:SS of the last injection; empty until then.",
            title="Last Accessed",
        ),
    ]
    access_count: Annotated[
        int,
        Field(description="How many turns injected this memory.", title="Access Count"),
    ]
    content: Annotated[str, Field(title="Content")]
    op: Annotated[
        str,
        Field(description="What wrote it: save, update, delete or import.", title="Op"),
    ]
    seq: Annotated[
        int,
        Field(description="Its position in the namespace's change log.", title="Seq"),
    ]
    actor: Annotated[
        str | None,
        Field(
            description="Who wrote it, as the audit trail names actors (person:alice, api_key:tok_...); null for revisions written before revisions named their author.",
            title="Actor",
        ),
    ]
    updated_at: Annotated[
        int,
        Field(
            description="When it was written, ms since the epoch (`updated` to the second).",
            title="Updated At",
        ),
    ]


class Limit17(RootModel[int]):
    root: Annotated[
        int, Field(description="At most this many.", ge=1, le=200, title="Limit")
    ] = 50


class Limit18(RootModel[str]):
    root: Annotated[
        str, Field(description="At most this many.", max_length=0, title="Limit")
    ] = 50


class StructuredPageQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    limit: Annotated[
        Limit17 | Limit18 | None,
        Field(description="At most this many.", title="Limit", validate_default=True),
    ] = 50
    cursor: Annotated[
        str | None,
        Field(description="The `next_cursor` of the previous page.", title="Cursor"),
    ] = None


class StructuredSession(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    session_id: Annotated[str, Field(title="Session Id")]
    kind: Annotated[str, Field(description="interactive or coordinator.", title="Kind")]
    user_id: Annotated[
        str | None,
        Field(
            description="The acting user; null for an anonymous session.",
            title="User Id",
        ),
    ]
    workstream_id: Annotated[str | None, Field(title="Workstream Id")]
    project_id: Annotated[str | None, Field(title="Project Id")]
    parent_session_id: Annotated[
        str | None,
        Field(
            description="The parent session of a coordinator's child; else null.",
            title="Parent Session Id",
        ),
    ]
    memory_enabled: Annotated[
        bool,
        Field(
            description="False: turns get no memory injection and no nudge.",
            title="Memory Enabled",
        ),
    ]


class StructuredSessionPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    sessions: Annotated[list[StructuredSession], Field(title="Sessions")]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Present only when more follow: pass it as `cursor`.",
            title="Next Cursor",
        ),
    ] = None


class SupersedeBody(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    supersededBy: Annotated[
        str, Field(max_length=64, min_length=1, title="Supersededby")
    ]


class SupersedeRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    superseded_by: Annotated[
        str, Field(max_length=64, min_length=1, title="Superseded By")
    ]


class TeamAcceptedRevision(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    entryId: Annotated[str, Field(title="Entryid")]
    revision: Annotated[int, Field(title="Revision")]
    title: Annotated[str, Field(description="DLP-gated.", title="Title")]
    text: Annotated[str, Field(description="DLP-gated.", title="Text")]
    dlpFindings: Annotated[
        list[str],
        Field(
            description="The kinds of secret DLP found in the title or text.",
            title="Dlpfindings",
        ),
    ]
    documentSha256: Annotated[
        str,
        Field(
            description="SHA-256 (hex) of the document the reviewer accepted.",
            title="Documentsha256",
        ),
    ]
    acceptedBy: Annotated[
        str | None, Field(description="The accepter's member id.", title="Acceptedby")
    ]
    acceptedAt: Annotated[
        str | None,
        Field(description="ISO 8601 UTC with milliseconds.", title="Acceptedat"),
    ]


class TeamDenyRule(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memberId: Annotated[str, Field(title="Memberid")]
    spaceId: Annotated[str | None, Field(title="Spaceid")]
    permissions: Annotated[list[str], Field(title="Permissions")]


class TeamDenyRules(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    rules: Annotated[list[TeamDenyRule], Field(title="Rules")]


class TeamEdit(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    seq: Annotated[int, Field(title="Seq")]
    updateId: Annotated[str | None, Field(title="Updateid")]
    update: Annotated[
        str, Field(description="The Yjs V1 update, base64.", title="Update")
    ]
    author: Annotated[
        str | None, Field(description="The author's member id.", title="Author")
    ]
    at: Annotated[
        str | None, Field(description="ISO 8601 UTC with milliseconds.", title="At")
    ]


class TeamEntry(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    spaceId: Annotated[str, Field(title="Spaceid")]
    kind: Annotated[
        Literal["decision", "convention", "note", "glossary"], Field(title="Kind")
    ]
    title: Annotated[str, Field(title="Title")]
    status: Annotated[
        Literal["draft", "accepted", "superseded", "archived"], Field(title="Status")
    ]
    links: Annotated[
        list[str],
        Field(
            description="https URLs, `source:<id>` or `entry:<id>` of the same space.",
            title="Links",
        ),
    ]
    supersedes: Annotated[
        str | None,
        Field(description="The entry this one replaces.", title="Supersedes"),
    ]
    supersededBy: Annotated[
        str | None,
        Field(description="The entry that replaced this one.", title="Supersededby"),
    ]
    classification: Annotated[str, Field(title="Classification")]
    metaVersion: Annotated[
        int,
        Field(
            description="Counts metadata changes; `ifMetaVersion` of a PATCH names it.",
            title="Metaversion",
        ),
    ]
    revision: Annotated[
        int,
        Field(
            description="Accepted revisions (0 for a draft never accepted).",
            title="Revision",
        ),
    ]
    createdBy: Annotated[
        str, Field(description="The creator's member id.", title="Createdby")
    ]
    createdAt: Annotated[
        str | None,
        Field(description="ISO 8601 UTC with milliseconds.", title="Createdat"),
    ]
    updatedAt: Annotated[
        str | None,
        Field(description="ISO 8601 UTC with milliseconds.", title="Updatedat"),
    ]
    acceptedAt: Annotated[
        str | None,
        Field(
            description="ISO 8601 UTC with milliseconds; null when never accepted.",
            title="Acceptedat",
        ),
    ]
    acceptedBy: Annotated[
        str | None,
        Field(description="The last accepter's member id.", title="Acceptedby"),
    ]


class TeamHistoryEvent(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    type: Annotated[Literal["status", "meta", "edit"], Field(title="Type")]
    action: Annotated[
        str,
        Field(
            description="`create`, `accept`, `patch`... for events; `update` for edits.",
            title="Action",
        ),
    ]
    author: Annotated[
        str | None, Field(description="The member id of who did it.", title="Author")
    ]
    at: Annotated[
        str | None, Field(description="ISO 8601 UTC with milliseconds.", title="At")
    ]
    details: Annotated[
        dict[str, Any] | None,
        Field(description="What the event changed (events only).", title="Details"),
    ] = None
    seq: Annotated[
        int | None,
        Field(description="The edit's sequence number (edits only).", title="Seq"),
    ] = None
    updateId: Annotated[
        str | None,
        Field(description="The edit's updateId (edits only).", title="Updateid"),
    ] = None
    bytes: Annotated[
        int | None,
        Field(description="The edit's size in bytes (edits only).", title="Bytes"),
    ] = None


class TeamListedEntry(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    spaceId: Annotated[str, Field(title="Spaceid")]
    kind: Annotated[
        Literal["decision", "convention", "note", "glossary"], Field(title="Kind")
    ]
    title: Annotated[str, Field(title="Title")]
    status: Annotated[
        Literal["draft", "accepted", "superseded", "archived"], Field(title="Status")
    ]
    links: Annotated[
        list[str],
        Field(
            description="https URLs, `source:<id>` or `entry:<id>` of the same space.",
            title="Links",
        ),
    ]
    supersedes: Annotated[
        str | None,
        Field(description="The entry this one replaces.", title="Supersedes"),
    ]
    supersededBy: Annotated[
        str | None,
        Field(description="The entry that replaced this one.", title="Supersededby"),
    ]
    classification: Annotated[str, Field(title="Classification")]
    metaVersion: Annotated[
        int,
        Field(
            description="Counts metadata changes; `ifMetaVersion` of a PATCH names it.",
            title="Metaversion",
        ),
    ]
    revision: Annotated[
        int,
        Field(
            description="Accepted revisions (0 for a draft never accepted).",
            title="Revision",
        ),
    ]
    createdBy: Annotated[
        str, Field(description="The creator's member id.", title="Createdby")
    ]
    createdAt: Annotated[
        str | None,
        Field(description="ISO 8601 UTC with milliseconds.", title="Createdat"),
    ]
    updatedAt: Annotated[
        str | None,
        Field(description="ISO 8601 UTC with milliseconds.", title="Updatedat"),
    ]
    acceptedAt: Annotated[
        str | None,
        Field(
            description="ISO 8601 UTC with milliseconds; null when never accepted.",
            title="Acceptedat",
        ),
    ]
    acceptedBy: Annotated[
        str | None,
        Field(description="The last accepter's member id.", title="Acceptedby"),
    ]
    snippet: Annotated[
        str | None,
        Field(
            description="Up to 200 characters around the match, DLP-gated.",
            title="Snippet",
        ),
    ] = None


class TeamMemoryLimits(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    maxUpdateBytes: Annotated[
        int, Field(description="One update, in bytes.", title="Maxupdatebytes")
    ]
    maxTextBytes: Annotated[
        int, Field(description="An entry's text, in UTF-8 bytes.", title="Maxtextbytes")
    ]
    maxUnits: Annotated[
        int,
        Field(
            description="UTF-16 units of a document, live and deleted.",
            title="Maxunits",
        ),
    ]
    maxUpdatesPerEntry: Annotated[
        int,
        Field(description="Rows of an entry's edit log.", title="Maxupdatesperentry"),
    ]
    updatesPerMinute: Annotated[
        int,
        Field(
            description="Updates one author may add to one entry per minute.",
            title="Updatesperminute",
        ),
    ]
    entriesPerSpace: Annotated[
        int,
        Field(
            description="Entries (not archived) in a space.", title="Entriesperspace"
        ),
    ]
    compactAfter: Annotated[
        int,
        Field(
            description="Retained update payloads that trigger compaction.",
            title="Compactafter",
        ),
    ]


class TeamRetrievedMetadata(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory: Annotated[
        dict[str, Any],
        Field(
            description="The accepted revision's `entryId`, `revision`, `kind`, `title` and `acceptedAt`.",
            title="Memory",
        ),
    ]
    spaceId: Annotated[str | None, Field(title="Spaceid")]


class TeamServedRevision(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    entryId: Annotated[str, Field(title="Entryid")]
    revision: Annotated[int | None, Field(title="Revision")]


class TeamSpace(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    name: Annotated[str, Field(title="Name")]
    kind: Annotated[
        str,
        Field(
            description="`team` or `personal` (no entries in personal spaces).",
            title="Kind",
        ),
    ]
    classification: Annotated[
        str,
        Field(
            description="`public`, `internal`, `confidential` or `restricted`.",
            title="Classification",
        ),
    ]
    dlp_policy: Annotated[
        str | None,
        Field(description="`redact`, `drop` or `block_source`.", title="Dlp Policy"),
    ] = None
    team_memory_enabled: Annotated[
        bool | None,
        Field(
            description="Whether entries may be created, changed and accepted (the collaboration policy's switch).",
            title="Team Memory Enabled",
        ),
    ] = None
    created_at: Annotated[
        int | None, Field(description="ms since epoch.", title="Created At")
    ] = None
    updated_at: Annotated[
        int | None, Field(description="ms since epoch.", title="Updated At")
    ] = None
    created_by: Annotated[
        str | None,
        Field(description="The actor that created the space.", title="Created By"),
    ] = None
    entries: Annotated[
        int,
        Field(
            description="Entries of the space that are not archived.", title="Entries"
        ),
    ]


class TeamSpaceMember(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    spaceId: Annotated[str, Field(title="Spaceid")]
    memberId: Annotated[
        str,
        Field(
            description="A user id (persons, services) or a token id (API keys).",
            title="Memberid",
        ),
    ]
    permissions: Annotated[
        list[str],
        Field(
            description="Sorted grants: `context:space:read`, `context:space:write`.",
            title="Permissions",
        ),
    ]


class TeamSpaceMemberRemoved(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    removed: Annotated[
        bool,
        Field(
            description="False when the member was not in the space.", title="Removed"
        ),
    ]


class TeamSpacePage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    spaces: Annotated[list[TeamSpace], Field(title="Spaces")]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Present when there is a next page: pass it as `cursor`.",
            title="Next Cursor",
        ),
    ] = None


class TeamUpdateResult(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    duplicate: Annotated[
        bool,
        Field(
            description="True when these bytes were already posted under this updateId.",
            title="Duplicate",
        ),
    ]
    seq: Annotated[
        int,
        Field(description="The update's sequence number in the edit log.", title="Seq"),
    ]
    stateVector: Annotated[
        str | None,
        Field(
            description="The merged Yjs state vector, base64 (not on a duplicate).",
            title="Statevector",
        ),
    ] = None


class TokenInfo(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    token_id: Annotated[str, Field(title="Token Id")]
    kind: Annotated[
        str | None,
        Field(
            description="person, service or api_key; null in a damaged record.",
            title="Kind",
        ),
    ]
    user_id: Annotated[str | None, Field(title="User Id")]
    permissions: Annotated[list[str], Field(title="Permissions")]
    label: Annotated[str | None, Field(title="Label")]
    expires_at: Annotated[
        int | None,
        Field(
            description="ms since the epoch; null: never expires.", title="Expires At"
        ),
    ]
    banks: Annotated[
        list[str] | None,
        Field(description="The bank allow-list; null: every bank.", title="Banks"),
    ]
    created_at: Annotated[
        int | None, Field(description="ms since the epoch.", title="Created At")
    ]
    last_used_at: Annotated[
        int | None,
        Field(
            description="ms since the epoch; null until first used.",
            title="Last Used At",
        ),
    ]
    revoked_at: Annotated[
        int | None,
        Field(
            description="ms since the epoch; null unless revoked.", title="Revoked At"
        ),
    ]
    damaged: Annotated[
        bool | None,
        Field(
            description="Present (true) only when the stored record could not be fully read: such a token never authenticates.",
            title="Damaged",
        ),
    ] = None


class TokenList(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    tokens: Annotated[list[TokenInfo], Field(title="Tokens")]


class ToolCall(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    action: Annotated[
        Literal["save", "get", "search", "delete", "list"], Field(title="Action")
    ]
    name: Annotated[Any | None, Field(title="Name")] = None
    content: Annotated[Any | None, Field(title="Content")] = None
    description: Annotated[Any | None, Field(title="Description")] = None
    type: Annotated[str | None, Field(title="Type")] = None
    scope: Annotated[str | None, Field(title="Scope")] = None
    query: Annotated[str | None, Field(title="Query")] = None
    limit: Annotated[Any | None, Field(title="Limit")] = None


class TrashedBank(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(title="Name")]
    trashed_to: Annotated[str, Field(title="Trashed To")]
    trashed_at: Annotated[int, Field(title="Trashed At")]


class TurnAccepted(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    accepted: Annotated[bool, Field(title="Accepted")]
    bank: Annotated[str, Field(title="Bank")]
    session_id: Annotated[str, Field(title="Session Id")]
    turn_id: Annotated[str, Field(title="Turn Id")]
    reason: Annotated[str | None, Field(title="Reason")] = None
    queued: Annotated[bool | None, Field(title="Queued")] = None
    outcome: ExtractionOutcome | None = None


class Status(RootModel[str]):
    root: Annotated[str, Field(max_length=64, title="Status")] = None


class TurnCompletedRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    session_id: Annotated[str, Field(max_length=256, min_length=1, title="Session Id")]
    turn_id: Annotated[str, Field(max_length=256, min_length=1, title="Turn Id")]
    status: Annotated[Status | None, Field(title="Status")] = None
    messages: Annotated[list[Any], Field(max_length=10000, title="Messages")]
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None
    exchange: Annotated[bool | None, Field(title="Exchange")] = False


class UpdatePost(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    updateId: Annotated[str, Field(pattern="^[A-Za-z0-9_-]{8,64}$", title="Updateid")]
    update: Annotated[str, Field(max_length=200000, min_length=1, title="Update")]


class UpdateRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    text: Annotated[str | None, Field(title="Text")] = None
    entities: Annotated[Entities | None, Field(title="Entities")] = None
    tags: Annotated[Tags | None, Field(title="Tags")] = None
    pinned: Annotated[bool | None, Field(title="Pinned")] = None


class SinceSeq(RootModel[int]):
    root: Annotated[int, Field(ge=0, le=1000000000000, title="Sinceseq")] = 0


class UpdatesQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    stateVector: Annotated[str | None, Field(title="Statevector")] = None
    sinceSeq: Annotated[
        SinceSeq | Literal[""] | None, Field(title="Sinceseq", validate_default=True)
    ] = 0


class UsageLimits(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    effective: LimitValues
    operator: LimitValues
    org: OrgLimitValues


class UsagePoint(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    requests: Annotated[int, Field(title="Requests")]
    saved: Annotated[int, Field(title="Saved")]
    reinforced: Annotated[int, Field(title="Reinforced")]
    recalls: Annotated[int, Field(title="Recalls")]
    previews: Annotated[int, Field(title="Previews")]
    hooks: Annotated[int, Field(title="Hooks")]
    contexts: Annotated[int, Field(title="Contexts")]
    injected_chars: Annotated[int, Field(title="Injected Chars")]
    injected_tokens: Annotated[int, Field(title="Injected Tokens")]
    extraction_jobs: Annotated[int, Field(title="Extraction Jobs")]
    model_input_tokens: Annotated[int, Field(title="Model Input Tokens")]
    model_output_tokens: Annotated[int, Field(title="Model Output Tokens")]
    model_cost_usd: Annotated[float, Field(title="Model Cost Usd")]
    stored_bytes_delta: Annotated[int, Field(title="Stored Bytes Delta")]
    operations: Annotated[dict[str, int], Field(title="Operations")]
    start: Annotated[int, Field(title="Start")]


class From(RootModel[int]):
    root: Annotated[int, Field(ge=0, le=9999999999999, title="From")] = None


class To(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=9999999999999, title="To")] = None


class UsageQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    from_: Annotated[From | Literal[""] | None, Field(alias="from", title="From")] = (
        None
    )
    to: Annotated[To | Literal[""] | None, Field(title="To")] = None
    granularity: Annotated[
        Literal["hour", "day"] | None, Field(title="Granularity")
    ] = "hour"
    group_by: Annotated[
        Literal["bank", "token", "operation"] | None, Field(title="Group By")
    ] = "bank"
    format: Annotated[Literal["json", "csv"] | None, Field(title="Format")] = "json"


class UsageTotals(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    requests: Annotated[int, Field(title="Requests")]
    saved: Annotated[int, Field(title="Saved")]
    reinforced: Annotated[int, Field(title="Reinforced")]
    recalls: Annotated[int, Field(title="Recalls")]
    previews: Annotated[int, Field(title="Previews")]
    hooks: Annotated[int, Field(title="Hooks")]
    contexts: Annotated[int, Field(title="Contexts")]
    injected_chars: Annotated[int, Field(title="Injected Chars")]
    injected_tokens: Annotated[int, Field(title="Injected Tokens")]
    extraction_jobs: Annotated[int, Field(title="Extraction Jobs")]
    model_input_tokens: Annotated[int, Field(title="Model Input Tokens")]
    model_output_tokens: Annotated[int, Field(title="Model Output Tokens")]
    model_cost_usd: Annotated[float, Field(title="Model Cost Usd")]
    stored_bytes_delta: Annotated[int, Field(title="Stored Bytes Delta")]
    operations: Annotated[dict[str, int], Field(title="Operations")]


class VectorCoverage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    model: Annotated[str, Field(title="Model")]
    with_vector: Annotated[int, Field(title="With Vector")]
    live: Annotated[int, Field(title="Live")]


class Workstream(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    workstream_id: Annotated[str, Field(title="Workstream Id")]
    title: Annotated[str, Field(title="Title")]
    owner: Annotated[
        str | None,
        Field(
            description="The creator's user id; null for an anonymous creator.",
            title="Owner",
        ),
    ]


class WorkstreamPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    workstreams: Annotated[list[Workstream], Field(title="Workstreams")]
    next_cursor: Annotated[
        str | None,
        Field(
            description="Present only when more follow: pass it as `cursor`.",
            title="Next Cursor",
        ),
    ] = None


class WorkstreamRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    workstream_id: Annotated[WorkstreamId | None, Field(title="Workstream Id")] = None
    title: Annotated[str | None, Field(max_length=512, title="Title")] = ""


class BankCreated(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    bank: MemoryBank
    created: Annotated[bool, Field(title="Created")]


class BankListPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    banks: Annotated[list[MemoryBank | TrashedBank], Field(title="Banks")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")] = None


class BankMemory(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    text: Annotated[str, Field(title="Text")]
    entities: Annotated[list[str], Field(title="Entities")]
    tags: Annotated[list[str], Field(title="Tags")]
    confidence: Annotated[
        Literal["stated", "inferred", "extracted"], Field(title="Confidence")
    ]
    corroboration: Annotated[int, Field(title="Corroboration")]
    pinned: Annotated[bool, Field(title="Pinned")]
    source: BankMemorySource
    created_at: Annotated[int, Field(title="Created At")]
    updated_at: Annotated[int, Field(title="Updated At")]
    invalid_at: Annotated[int | None, Field(title="Invalid At")] = None
    superseded_by: Annotated[str | None, Field(title="Superseded By")] = None
    conflicts_with: Annotated[list[str] | None, Field(title="Conflicts With")] = None
    observed_at: Annotated[int | None, Field(title="Observed At")] = None
    revision: Annotated[int, Field(title="Revision")]
    purged_at: Annotated[int | None, Field(title="Purged At")] = None
    dates: Annotated[list[StatedDate] | None, Field(title="Dates")] = None


class BankMemoryPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memories: Annotated[list[BankMemory], Field(title="Memories")]
    total: Annotated[int | None, Field(title="Total")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]
    damaged: Annotated[list[DamagedRecord] | None, Field(title="Damaged")] = None


class BankMemoryReply(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory: BankMemory


class BankPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    description: Annotated[Description | None, Field(title="Description")] = None
    settings: BankSettings | None = None


class BankReply(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    bank: MemoryBank


class BankRuleList(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    rules: Annotated[list[BankRule], Field(title="Rules")]
    budget: RulesBudget


class BankStatus(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(title="Name")]
    seq: Annotated[int, Field(title="Seq")]
    memories: Annotated[int, Field(title="Memories")]
    snapshot: IndexSnapshot | None
    vectors: VectorCoverage


class HookInjection(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    mutations: HookMutations
    retrieval: Annotated[str, Field(title="Retrieval")]


class ImportLineRelated(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    line: Annotated[int, Field(title="Line")]
    related: Annotated[list[RelatedMemory], Field(title="Related")]


class ImportReport(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    imported: Annotated[int, Field(title="Imported")]
    skipped: Annotated[int, Field(title="Skipped")]
    errors: Annotated[list[ImportLineError], Field(title="Errors")]
    related: Annotated[list[ImportLineRelated] | None, Field(title="Related")] = None
    related_checked: Annotated[bool | None, Field(title="Related Checked")] = True


class InjectedMemory(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory: BankMemory
    score: Annotated[float, Field(title="Score")]
    match: Annotated[float, Field(title="Match")]
    ambient: Annotated[bool, Field(title="Ambient")]


class InjectionBudget(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    rules: RulesBudget
    memories: BudgetUse


class InjectionPreview(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    system_prompt_section: Annotated[str, Field(title="System Prompt Section")]
    rules: Annotated[int, Field(title="Rules")]
    rules_truncated: Annotated[bool, Field(title="Rules Truncated")]
    memories: Annotated[list[InjectedMemory], Field(title="Memories")]
    match: RecallMatch
    message: Annotated[str | None, Field(title="Message")] = None
    retrieval: Annotated[str, Field(title="Retrieval")]
    budget: InjectionBudget


class McpError(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    jsonrpc: Annotated[Literal["2.0"], Field(title="Jsonrpc")]
    id: Annotated[int | str | None, Field(title="Id")]
    error: McpErrorObject


class MemoryRevision(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    text: Annotated[str, Field(title="Text")]
    entities: Annotated[list[str], Field(title="Entities")]
    tags: Annotated[list[str], Field(title="Tags")]
    confidence: Annotated[
        Literal["stated", "inferred", "extracted"], Field(title="Confidence")
    ]
    corroboration: Annotated[int, Field(title="Corroboration")]
    pinned: Annotated[bool, Field(title="Pinned")]
    source: BankMemorySource
    created_at: Annotated[int, Field(title="Created At")]
    updated_at: Annotated[int, Field(title="Updated At")]
    invalid_at: Annotated[int | None, Field(title="Invalid At")] = None
    superseded_by: Annotated[str | None, Field(title="Superseded By")] = None
    conflicts_with: Annotated[list[str] | None, Field(title="Conflicts With")] = None
    observed_at: Annotated[int | None, Field(title="Observed At")] = None
    revision: Annotated[int, Field(title="Revision")]
    purged_at: Annotated[int | None, Field(title="Purged At")] = None
    dates: Annotated[list[StatedDate] | None, Field(title="Dates")] = None
    op: Annotated[str, Field(title="Op")]
    seq: Annotated[int, Field(title="Seq")]
    actor: Annotated[str | None, Field(title="Actor")]
    why: Annotated[str | None, Field(title="Why")] = None


class MemorySaved(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    created: Annotated[bool, Field(title="Created")]
    related: Annotated[list[RelatedMemory] | None, Field(title="Related")] = None
    related_checked: Annotated[bool | None, Field(title="Related Checked")] = True
    bank_created: Annotated[bool | None, Field(title="Bank Created")] = False
    memory: BankMemory | None = None
    details: SaveDetails | None = None


class MemoryToolResult(
    RootModel[StructuredMemory | StructuredMemoryList | StructuredMemoryDeleted]
):
    root: Annotated[
        StructuredMemory | StructuredMemoryList | StructuredMemoryDeleted,
        Field(
            description="The memory tool's result: what the REST equivalent answers (a memory for save and get, a\nlist for search and list, the deletion for delete).",
            title="MemoryToolResult",
        ),
    ]


class MemoryUpdated(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory: BankMemory
    related: Annotated[list[RelatedMemory] | None, Field(title="Related")] = None
    related_checked: Annotated[bool | None, Field(title="Related Checked")] = True


class OpenConflict(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory: BankMemory
    earlier: Annotated[list[BankMemory], Field(title="Earlier")]


class PreviewRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    query: Annotated[str, Field(max_length=4000, title="Query")]
    filter: RecallFilter | None = None


class RecallHit(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory: BankMemory
    score: Annotated[float, Field(title="Score")]
    signals: RecallSignals
    contributions: RecallSignals
    match: Annotated[float, Field(title="Match")]


class RevokedToken(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    token: TokenInfo


class ServiceStatus(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    config_version: Annotated[int, Field(title="Config Version")]
    org_config_version: Annotated[int, Field(title="Org Config Version")]
    banks: Annotated[list[BankStatus], Field(title="Banks")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")] = None


class StructuredMemoryHistory(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    revisions: Annotated[list[StructuredMemoryRevision], Field(title="Revisions")]
    damaged: Annotated[
        list[DamagedRevision] | None,
        Field(
            description="Revisions left out because they could not be read (only when there are some).",
            title="Damaged",
        ),
    ] = None


class TeamAttribution(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    actor: Annotated[str, Field(title="Actor")]
    entries: Annotated[list[TeamServedRevision], Field(title="Entries")]
    at: Annotated[
        str | None, Field(description="ISO 8601 UTC with milliseconds.", title="At")
    ]


class TeamAttributionList(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    attributions: Annotated[list[TeamAttribution], Field(title="Attributions")]


class TeamCatchUp(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    seq: Annotated[
        int, Field(description="The entry's last edit sequence number.", title="Seq")
    ]
    update: Annotated[
        str | None,
        Field(
            description="The diff against the state vector given, base64.",
            title="Update",
        ),
    ] = None
    snapshot: Annotated[
        str | None,
        Field(
            description="The whole document, base64: the edits asked for were compacted.",
            title="Snapshot",
        ),
    ] = None
    updates: Annotated[
        list[TeamEdit] | None,
        Field(description="The edits above `sinceSeq`, oldest first.", title="Updates"),
    ] = None


class TeamEntryDetail(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, Field(title="Id")]
    spaceId: Annotated[str, Field(title="Spaceid")]
    kind: Annotated[
        Literal["decision", "convention", "note", "glossary"], Field(title="Kind")
    ]
    title: Annotated[str, Field(title="Title")]
    status: Annotated[
        Literal["draft", "accepted", "superseded", "archived"], Field(title="Status")
    ]
    links: Annotated[
        list[str],
        Field(
            description="https URLs, `source:<id>` or `entry:<id>` of the same space.",
            title="Links",
        ),
    ]
    supersedes: Annotated[
        str | None,
        Field(description="The entry this one replaces.", title="Supersedes"),
    ]
    supersededBy: Annotated[
        str | None,
        Field(description="The entry that replaced this one.", title="Supersededby"),
    ]
    classification: Annotated[str, Field(title="Classification")]
    metaVersion: Annotated[
        int,
        Field(
            description="Counts metadata changes; `ifMetaVersion` of a PATCH names it.",
            title="Metaversion",
        ),
    ]
    revision: Annotated[
        int,
        Field(
            description="Accepted revisions (0 for a draft never accepted).",
            title="Revision",
        ),
    ]
    createdBy: Annotated[
        str, Field(description="The creator's member id.", title="Createdby")
    ]
    createdAt: Annotated[
        str | None,
        Field(description="ISO 8601 UTC with milliseconds.", title="Createdat"),
    ]
    updatedAt: Annotated[
        str | None,
        Field(description="ISO 8601 UTC with milliseconds.", title="Updatedat"),
    ]
    acceptedAt: Annotated[
        str | None,
        Field(
            description="ISO 8601 UTC with milliseconds; null when never accepted.",
            title="Acceptedat",
        ),
    ]
    acceptedBy: Annotated[
        str | None,
        Field(description="The last accepter's member id.", title="Acceptedby"),
    ]
    text: Annotated[
        str, Field(description="The merged plain text, DLP-gated.", title="Text")
    ]
    dlpFindings: Annotated[
        list[str],
        Field(
            description="The kinds of secret DLP found in the title or text.",
            title="Dlpfindings",
        ),
    ]
    documentSha256: Annotated[
        str,
        Field(
            description="SHA-256 (hex) of the document accept would index: what `POST .../accept` takes.",
            title="Documentsha256",
        ),
    ]
    projectionSha256: Annotated[
        str | None,
        Field(
            description="SHA-256 (hex) of the last accepted document.",
            title="Projectionsha256",
        ),
    ]
    stateVector: Annotated[
        str, Field(description="The Yjs state vector, base64.", title="Statevector")
    ]
    snapshot: Annotated[
        str,
        Field(
            description="The whole document as one Yjs V1 update, base64.",
            title="Snapshot",
        ),
    ]
    seq: Annotated[
        int, Field(description="The last edit's sequence number.", title="Seq")
    ]
    limits: TeamMemoryLimits


class TeamEntryHistory(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    events: Annotated[list[TeamHistoryEvent], Field(title="Events")]


class TeamEntryPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    entries: Annotated[list[TeamListedEntry], Field(title="Entries")]
    cursor: Annotated[
        str | None,
        Field(
            description="Present when there is a next page: pass it as `cursor`.",
            title="Cursor",
        ),
    ] = None


class TeamRetrievedEntry(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    entryId: Annotated[str, Field(title="Entryid")]
    revision: Annotated[int | None, Field(title="Revision")]
    kind: Annotated[str | None, Field(title="Kind")]
    title: Annotated[str | None, Field(title="Title")]
    text: Annotated[
        str,
        Field(
            description="The indexed document: the title, a blank line, the text.",
            title="Text",
        ),
    ]
    score: Annotated[float, Field(title="Score")]
    metadata: TeamRetrievedMetadata


class UsageGroup(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    key: Annotated[str, Field(title="Key")]
    totals: UsageTotals
    series: Annotated[list[UsagePoint], Field(title="Series")]


class UsageReport(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    org: Annotated[str, Field(title="Org")]
    from_: Annotated[int, Field(alias="from", title="From")]
    to: Annotated[int, Field(title="To")]
    granularity: Annotated[Literal["hour", "day"], Field(title="Granularity")]
    group_by: Annotated[Literal["bank", "token", "operation"], Field(title="Group By")]
    totals: UsageTotals
    groups: Annotated[list[UsageGroup], Field(title="Groups")]


class BankRecall(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memories: Annotated[list[RecallHit], Field(title="Memories")]
    match: RecallMatch
    retrieval: Annotated[str, Field(title="Retrieval")]


class ConflictPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    conflicts: Annotated[list[OpenConflict], Field(title="Conflicts")]
    next_cursor: Annotated[str | None, Field(title="Next Cursor")]


class McpAnswer(RootModel[McpResult | McpError]):
    root: Annotated[
        McpResult | McpError,
        Field(
            description="The answer to a request: its result, or the error of a request that was read (protocol\nversions before 2026-07-28 answer those with 200).",
            title="McpAnswer",
        ),
    ]


class MemoryHistory(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    revisions: Annotated[list[MemoryRevision], Field(title="Revisions")]
    damaged: Annotated[list[DamagedRevision] | None, Field(title="Damaged")] = None


class TeamRetrieval(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    results: Annotated[list[TeamRetrievedEntry], Field(title="Results")]
    attributionId: Annotated[str, Field(title="Attributionid")]
    retrieval: Annotated[
        str, Field(description="The retrieval mode that ran.", title="Retrieval")
    ]
