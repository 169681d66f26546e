"""The bodies the team-memory routes answer (``chalicelib.api.team`` renders them): spaces and
their members and deny rules in snake_case as stored, entries and everything about them in
camelCase. Times of entries are ISO 8601 UTC with milliseconds (``2026-11-29T14:04:41.123Z``);
times of spaces are ms since epoch; Yjs bytes are base64."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    """A response body: it describes the OpenAPI document and MCP output schemas, so its schema
    is built on first use (``defer_build``), not at ``import app``."""

    model_config = ConfigDict(defer_build=True)

# --- spaces -----------------------------------------------------------------------------------


class TeamSpace(_Body):
    """A team space, with its stored fields and how many entries it holds."""

    id: str
    name: str
    kind: str = Field(description="`team` or `personal` (no entries in personal spaces).")
    classification: str = Field(description="`public`, `internal`, `confidential` or `restricted`.")
    dlp_policy: str | None = Field(None, description="`redact`, `drop` or `block_source`.")
    team_memory_enabled: bool | None = Field(None, description="Whether entries may be created, changed "
                                             "and accepted (the collaboration policy's switch).")
    created_at: int | None = Field(None, description="ms since epoch.")
    updated_at: int | None = Field(None, description="ms since epoch.")
    created_by: str | None = Field(None, description="The actor that created the space.")
    entries: int = Field(description="Entries of the space that are not archived.")


class TeamSpacePage(_Body):
    """A page of the spaces the caller may see, by id."""

    spaces: list[TeamSpace]
    next_cursor: str | None = Field(None, description="Present when there is a next page: pass it as `cursor`.")


class TeamSpaceMember(_Body):
    """A member's grants in a space."""

    spaceId: str
    memberId: str = Field(description="A user id (persons, services) or a token id (API keys).")
    permissions: list[str] = Field(description="Sorted grants: `context:space:read`, `context:space:write`.")


class TeamSpaceMemberRemoved(_Body):
    """Whether the member was removed."""

    removed: bool = Field(description="False when the member was not in the space.")


class TeamDenyRule(_Body):
    """One org deny rule: the member loses these grants in the space (every space when `spaceId` is null)."""

    memberId: str
    spaceId: str | None
    permissions: list[str]


class TeamDenyRules(_Body):
    """The org's deny rules (the whole list)."""

    rules: list[TeamDenyRule]


# --- entries ----------------------------------------------------------------------------------


class TeamEntry(_Body):
    """A team-memory entry's metadata (its title passes DLP like its text)."""

    id: str
    spaceId: str
    kind: Literal["decision", "convention", "note", "glossary"]
    title: str
    status: Literal["draft", "accepted", "superseded", "archived"]
    links: list[str] = Field(description="https URLs, `source:<id>` or `entry:<id>` of the same space.")
    supersedes: str | None = Field(description="The entry this one replaces.")
    supersededBy: str | None = Field(description="The entry that replaced this one.")
    classification: str
    metaVersion: int = Field(description="Counts metadata changes; `ifMetaVersion` of a PATCH names it.")
    revision: int = Field(description="Accepted revisions (0 for a draft never accepted).")
    createdBy: str = Field(description="The creator's member id.")
    createdAt: str | None = Field(description="ISO 8601 UTC with milliseconds.")
    updatedAt: str | None = Field(description="ISO 8601 UTC with milliseconds.")
    acceptedAt: str | None = Field(description="ISO 8601 UTC with milliseconds; null when never accepted.")
    acceptedBy: str | None = Field(description="The last accepter's member id.")


class TeamListedEntry(TeamEntry):
    """An entry of a listing, with a snippet of its text when a query matched it."""

    snippet: str | None = Field(None, description="Up to 200 characters around the match, DLP-gated.")


class TeamEntryPage(_Body):
    """A page of a space's entries, oldest first."""

    entries: list[TeamListedEntry]
    cursor: str | None = Field(None, description="Present when there is a next page: pass it as `cursor`.")


class TeamMemoryLimits(_Body):
    """The team-memory caps in force."""

    maxUpdateBytes: int = Field(description="One update, in bytes.")
    maxTextBytes: int = Field(description="An entry's text, in UTF-8 bytes.")
    maxUnits: int = Field(description="UTF-16 units of a document, live and deleted.")
    maxUpdatesPerEntry: int = Field(description="Rows of an entry's edit log.")
    updatesPerMinute: int = Field(description="Updates one author may add to one entry per minute.")
    entriesPerSpace: int = Field(description="Entries (not archived) in a space.")
    compactAfter: int = Field(description="Retained update payloads that trigger compaction.")


class TeamDraft(TeamEntry):
    """A draft entry as the ``team_draft`` MCP tool leaves it: its metadata, its DLP-gated text
    and the hash a reviewer accepts it by."""

    text: str = Field(description="The merged plain text, DLP-gated.")
    dlpFindings: list[str] = Field(description="The kinds of secret DLP found in the title or text.")
    documentSha256: str = Field(description="SHA-256 (hex) of the document a reviewer accepts.")
    seq: int = Field(description="The last edit's sequence number.")


class TeamEntryDetail(TeamEntry):
    """An entry with its DLP-gated text, its hashes, its Yjs state and the caps."""

    text: str = Field(description="The merged plain text, DLP-gated.")
    dlpFindings: list[str] = Field(description="The kinds of secret DLP found in the title or text.")
    documentSha256: str = Field(description="SHA-256 (hex) of the document accept would index: "
                                "what `POST .../accept` takes.")
    projectionSha256: str | None = Field(description="SHA-256 (hex) of the last accepted document.")
    stateVector: str = Field(description="The Yjs state vector, base64.")
    snapshot: str = Field(description="The whole document as one Yjs V1 update, base64.")
    seq: int = Field(description="The last edit's sequence number.")
    limits: TeamMemoryLimits


class TeamUpdateResult(_Body):
    """The outcome of a posted update."""

    duplicate: bool = Field(description="True when these bytes were already posted under this updateId.")
    seq: int = Field(description="The update's sequence number in the edit log.")
    stateVector: str | None = Field(None, description="The merged Yjs state vector, base64 (not on a duplicate).")


class TeamEdit(_Body):
    """One edit of an entry's log."""

    seq: int
    updateId: str | None
    update: str = Field(description="The Yjs V1 update, base64.")
    author: str | None = Field(description="The author's member id.")
    at: str | None = Field(description="ISO 8601 UTC with milliseconds.")


class TeamCatchUp(_Body):
    """What a replica applies to catch up to `seq`: exactly one of `update`, `snapshot` or `updates`."""

    seq: int = Field(description="The entry's last edit sequence number.")
    update: str | None = Field(None, description="The diff against the state vector given, base64.")
    snapshot: str | None = Field(None, description="The whole document, base64: the edits asked for were compacted.")
    updates: list[TeamEdit] | None = Field(None, description="The edits above `sinceSeq`, oldest first.")


class TeamHistoryEvent(_Body):
    """One line of an entry's history: a status or metadata event, or an edit."""

    type: Literal["status", "meta", "edit"]
    action: str = Field(description="`create`, `accept`, `patch`... for events; `update` for edits.")
    author: str | None = Field(description="The member id of who did it.")
    at: str | None = Field(description="ISO 8601 UTC with milliseconds.")
    details: dict[str, Any] | None = Field(None, description="What the event changed (events only).")
    seq: int | None = Field(None, description="The edit's sequence number (edits only).")
    updateId: str | None = Field(None, description="The edit's updateId (edits only).")
    size: int | None = Field(None, alias="bytes", description="The edit's size in bytes (edits only).")


class TeamEntryHistory(_Body):
    """An entry's status and metadata events and its edits, oldest first."""

    events: list[TeamHistoryEvent]


class TeamAcceptedRevision(_Body):
    """An entry's last accepted revision, as retrieval serves it."""

    entryId: str
    revision: int
    title: str = Field(description="DLP-gated.")
    text: str = Field(description="DLP-gated.")
    dlpFindings: list[str] = Field(description="The kinds of secret DLP found in the title or text.")
    documentSha256: str = Field(description="SHA-256 (hex) of the document the reviewer accepted.")
    acceptedBy: str | None = Field(description="The accepter's member id.")
    acceptedAt: str | None = Field(description="ISO 8601 UTC with milliseconds.")


# --- retrieval --------------------------------------------------------------------------------


class TeamRetrievedMetadata(_Body):
    """Where a retrieved revision comes from."""

    memory: dict[str, Any] = Field(description="The accepted revision's `entryId`, `revision`, `kind`, "
                                   "`title` and `acceptedAt`.")
    spaceId: str | None


class TeamRetrievedEntry(_Body):
    """One accepted revision served by retrieval."""

    entryId: str
    revision: int | None
    kind: str | None
    title: str | None
    text: str = Field(description="The indexed document: the title, a blank line, the text.")
    score: float
    metadata: TeamRetrievedMetadata


class TeamRetrieval(_Body):
    """The ranked accepted revisions and the attribution recorded for them."""

    results: list[TeamRetrievedEntry]
    attributionId: str
    retrieval: str = Field(description="The retrieval mode that ran.")


class TeamServedRevision(_Body):
    """An entry revision a retrieval served."""

    entryId: str
    revision: int | None


class TeamAttribution(_Body):
    """What one retrieval served from a space, and to whom."""

    id: str
    actor: str
    entries: list[TeamServedRevision]
    at: str | None = Field(description="ISO 8601 UTC with milliseconds.")


class TeamAttributionList(_Body):
    """A space's attributions, newest first."""

    attributions: list[TeamAttribution]
