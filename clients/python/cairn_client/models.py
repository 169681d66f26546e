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


class BankPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    description: Annotated[str, Field(max_length=1000, title="Description")]


class BankRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    name: Annotated[str, Field(title="Name")]
    description: Annotated[str | None, Field(max_length=1000, title="Description")] = ""


class ContextRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    messages: Annotated[
        list[dict[str, Any]] | None, Field(max_length=10000, title="Messages")
    ] = None


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


class ForgetSessionRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    session_id: Annotated[str, Field(max_length=256, min_length=1, title="Session Id")]
    purge: Annotated[bool | None, Field(title="Purge")] = False


class HookMetadata(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    memory_bank: Annotated[str | None, Field(title="Memory Bank")] = None


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
        list[str] | None, Field(max_length=6, title="Permissions")
    ] = None
    label: Annotated[Label | None, Field(title="Label")] = None
    expires_at: Annotated[
        ExpiresAt | None, Field(description="ms since epoch", title="Expires At")
    ] = None
    banks: Annotated[Banks | None, Field(title="Banks")] = None


class PinRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    pinned: Annotated[bool, Field(title="Pinned")]


class PreviewRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    query: Annotated[str, Field(max_length=4000, title="Query")]


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
    include_superseded: Annotated[bool | None, Field(title="Include Superseded")] = (
        False
    )
    as_of: Annotated[AsOf | None, Field(title="As Of")] = None


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


class RestSearchBody(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    query: Annotated[str | None, Field(title="Query")] = ""
    type: Annotated[str | None, Field(title="Type")] = None
    limit: Annotated[int | None, Field(ge=1, le=50, title="Limit")] = 20
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
    content: Annotated[str, Field(max_length=65536, title="Content")]


class Entities(RootModel[list[str]]):
    root: Annotated[list[str], Field(max_length=64, title="Entities")] = None


class Tags(RootModel[list[str]]):
    root: Annotated[list[str], Field(max_length=64, title="Tags")] = None


class SessionId1(RootModel[str]):
    root: Annotated[str, Field(max_length=256, min_length=1, title="Session Id")] = None


class SaveRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    text: Annotated[str, Field(title="Text")]
    entities: Annotated[Entities | None, Field(title="Entities")] = None
    tags: Annotated[Tags | None, Field(title="Tags")] = None
    pinned: Annotated[bool | None, Field(title="Pinned")] = None
    session_id: Annotated[SessionId1 | None, Field(title="Session Id")] = None


class SessionDeletedRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    session_id: Annotated[str, Field(max_length=256, min_length=1, title="Session Id")]


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


class WorkstreamRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    workstream_id: Annotated[WorkstreamId | None, Field(title="Workstream Id")] = None
    title: Annotated[str | None, Field(max_length=512, title="Title")] = ""
