"""The response bodies of the structured-memory routes (``chalicelib.api.structured``), as the
OpenAPI document describes them. The memory shapes are Turnstone's, which its SDK validates: a
field here is a field on the wire, no more and no fewer (``extra="forbid"``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from .banks_models import DamagedRevision


class _Body(BaseModel):
    # a response body: its schema is built on first use (OpenAPI, MCP), not at import app
    model_config = ConfigDict(extra="forbid", defer_build=True)


class StructuredMemory(_Body):
    """A structured memory: Turnstone's memory row."""

    memory_id: str = Field(description="The memory's UUID; kept across updates.")
    name: str = Field(description="Normalized snake_case name, unique within (scope, scope_id).")
    description: str = Field(description="The relevance summary.")
    type: str = Field(description="One of user, general, feedback, reference.")
    scope: str = Field(description="One of global, workstream, user, coordinator, project.")
    scope_id: str = Field(description="The scope's qualifier: empty for global.")
    created: str = Field(description="UTC time YYYY-MM-DDTHH:MM:SS.")
    updated: str = Field(description="UTC time YYYY-MM-DDTHH:MM:SS.")
    last_accessed: str = Field(description="UTC time YYYY-MM-DDTHH:MM:SS of the last injection; empty until then.")
    access_count: int = Field(description="How many turns injected this memory.")
    content: str


class StructuredMemoryList(_Body):
    """Structured memories, newest first (a listing) or best first (a search).

    Damaged stored records left out are counted in the ``X-Cairn-Damaged`` header."""

    memories: list[StructuredMemory]
    total: int = Field(description="How many memories this body holds.")


class StructuredMemoryDeleted(_Body):
    """The memory was deleted."""

    status: Literal["ok"]
    name: str = Field(description="The normalized name of the memory deleted.")


class MemoryToolResult(RootModel[StructuredMemory | StructuredMemoryList | StructuredMemoryDeleted]):
    """The memory tool's result: what the REST equivalent answers (a memory for save and get, a
    list for search and list, the deletion for delete)."""

    model_config = ConfigDict(defer_build=True)


class Workstream(_Body):
    """A workstream."""

    workstream_id: str
    title: str
    owner: str | None = Field(description="The creator's user id; null for an anonymous creator.")


class WorkstreamPage(_Body):
    """A page of workstreams by id."""

    workstreams: list[Workstream]
    next_cursor: str | None = Field(None, description="Present only when more follow: pass it as `cursor`.")


class Project(_Body):
    """A project."""

    project_id: str
    name: str
    active: bool
    owner: str | None = Field(description="The creator's user id; null for an anonymous creator.")


class ProjectPage(_Body):
    """A page of projects by id."""

    projects: list[Project]
    next_cursor: str | None = Field(None, description="Present only when more follow: pass it as `cursor`.")


class ProjectMember(_Body):
    """A project member and its access."""

    project_id: str
    user_id: str
    access: Literal["read", "write"]


class ProjectMemberRemoved(_Body):
    """The member was removed."""

    status: Literal["ok"]


class StructuredSession(_Body):
    """A session: its kind, acting user and attachments."""

    session_id: str
    kind: str = Field(description="interactive or coordinator.")
    user_id: str | None = Field(description="The acting user; null for an anonymous session.")
    workstream_id: str | None
    project_id: str | None
    parent_session_id: str | None = Field(description="The parent session of a coordinator's child; else null.")
    memory_enabled: bool = Field(description="False: turns get no memory injection and no nudge.")


class StructuredSessionPage(_Body):
    """A page of sessions by id."""

    sessions: list[StructuredSession]
    next_cursor: str | None = Field(None, description="Present only when more follow: pass it as `cursor`.")


class SessionEnded(_Body):
    """The session was ended (its memories stay)."""

    status: Literal["ok"]
    session_id: str


class SessionContext(_Body):
    """One turn's memory injection."""

    system_message: str = Field(description="The <memories> block and the hint; empty when nothing is injected.")
    injected: list[str] = Field(description="The memory_ids injected, in order.")
    candidates: int = Field(description="How many memories matched the turn's context.")
    in_scope: int = Field(description="How many live memories the session's visibility envelope holds.")
    nudge: str | None = Field(description="A prompt to save a memory, or null.")


class MemoryImportProblem(_Body):
    """A line the import refused."""

    line: int = Field(description="The line's number, from 1.")
    error: str
    code: str = Field(description="Why, stable: `validation_error` (the line is not a valid row) or `conflict` "
                                  "(its memory_id belongs to another memory).")


class MemoryImportReport(_Body):
    """What an ndjson import did."""

    imported: int = Field(description="Memories created or updated.")
    skipped: int = Field(description="Rows not newer than what is stored.")
    errors: list[MemoryImportProblem] = Field(description="Refused lines, by line number.")


class AdminMemoryDeleted(_Body):
    """The memory was deleted."""

    status: Literal["ok"]


class StructuredMemoryRevision(StructuredMemory):
    """One revision of a structured memory: the row as that revision wrote it (touch counters
    are not kept per revision: ``last_accessed`` ``""``, ``access_count`` 0), what wrote it and
    who."""

    op: str = Field(description="What wrote it: save, update, delete or import.")
    seq: int = Field(description="Its position in the namespace's change log.")
    actor: str | None = Field(description="Who wrote it, as the audit trail names actors (person:alice, "
                              "api_key:tok_...); null for revisions written before revisions named their author.")
    updated_at: int = Field(description="When it was written, ms since the epoch (`updated` to the second).")


class StructuredMemoryHistory(_Body):
    """A structured memory's revisions, oldest first.

    A deleted memory's last one is its tombstone (``op`` ``delete``), with the content it had."""

    revisions: list[StructuredMemoryRevision]
    damaged: list[DamagedRevision] | None = Field(
        None, description="Revisions left out because they could not be read (only when there are some).")


class MemoryAuditEvent(_Body):
    """A memory audit event (ids, name, scope and type in ``details``; never content)."""

    id: str = Field(description="The event's key.")
    action: str
    actor: str
    target: str | None = Field(description="The memory_id.")
    details: dict[str, Any]
    at: int | None = Field(description="ms since the epoch.")


class MemoryAuditPage(_Body):
    """Memory audit events, oldest first."""

    events: list[MemoryAuditEvent]
    next_cursor: str | None = Field(description="null on the last page.")
