"""The bodies the memory-bank routes answer (``/v1/banks``, recall, injection, hooks, doctor,
reload), as the OpenAPI document describes them. Each is exactly what its renderer in
``chalicelib.api.banks`` / ``recall`` / ``inject`` / ``hooks`` produces; times are ms since epoch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    """A response body: it describes the OpenAPI document and MCP output schemas, so its schema
    is built on first use (``defer_build``), not at ``import app``."""

    model_config = ConfigDict(defer_build=True)


class BankMemorySource(_Body):
    """Provenance of a memory: only the fields that are set."""

    session_id: str | None = None
    """The session whose turn taught it (extraction) or that saved it."""
    entry_id: str | None = None
    agent: str | None = None


class StatedDate(_Body):
    """A date a memory's text states, resolved against when the memory was said."""

    text: str
    """The expression as written (``July 20, 2026``, ``next Friday``, ``Q3``)."""
    start: int
    """Start of the range it names (ms since epoch, UTC)."""
    end: int
    """End of that range, exclusive (ms)."""


class BankMemory(_Body):
    """A bank memory: one sentence, its entities and tags, and how well established it is."""

    id: str
    """``fp`` and 16 hex digits: the fingerprint of the text it was first saved with."""
    text: str
    """Empty once purged."""
    entities: list[str]
    tags: list[str]
    confidence: Literal["stated", "inferred", "extracted"]
    corroboration: int
    """How many times the same text was saved again (reinforcements)."""
    pinned: bool
    source: BankMemorySource
    created_at: int
    updated_at: int
    invalid_at: int | None = None
    """When it was tombstoned or superseded (ms); absent while live."""
    superseded_by: str | None = None
    """The id of the memory that replaced it."""
    conflicts_with: list[str] | None = None
    """Live memories detected, when one of the two was saved, to state the same thing about the
    same subject with another value; cleared when either side retires."""
    observed_at: int | None = None
    """When the statement was made (ms), as its writer gave it (save, import line, extraction);
    absent when that is when it was saved."""
    revision: int
    """0 when created, +1 per change."""
    purged_at: int | None = None
    """When its content was erased (ms)."""
    dates: list[StatedDate] | None = None
    """The dates its text states (at most 8), which recall's time signal matches; absent when it
    states none or was saved before dates were read (recall then reads its text)."""


class DamagedRecord(_Body):
    """A stored record that could not be read, left out of a listing."""

    id: str
    reason: str


class DamagedRevision(_Body):
    """A stored revision that could not be read, left out of a history."""

    id: str
    seq: int
    reason: str


class BankSettingsOut(_Body):
    """A bank's settings (``PATCH /v1/banks/{bank}`` changes them)."""

    on_conflict: Literal["flag", "supersede"]
    """When a save detects a conflicting live memory: ``flag`` keeps both and links them,
    ``supersede`` retires the older one (never a pinned one)."""
    match_threshold: float | None
    """The lowest match a recall, preview or hook hit may have (0..1; 0: every hit); ``null``:
    the service's default (``defaults``)."""
    ambient_floor: bool | None = None
    """Whether the hook pads fewer than 3 matches with the bank's top pinned and corroborated
    memories (marked ambient); ``null``: the service's default (``defaults``)."""
    feed: Literal["hooks", "tools", "both"] | None = None
    """How the bank gets its memories, which the injected system-prompt section tells the model:
    ``hooks`` (the host's turn-completed hook, automatic), ``tools`` (only the model's own
    memory_save / memory_observe calls) or ``both``; ``null``: not stated (the section says what
    is true either way)."""


class BankSettingsDefaults(_Body):
    """What a bank's settings left ``null`` stand for now (the service's tuning)."""

    match_threshold: float
    ambient_floor: bool


class MemoryBank(_Body):
    """A memory bank, its counts and its settings."""

    name: str
    description: str
    memories: int
    """Live memories."""
    pinned: int
    """Live pinned memories."""
    rules: int
    settings: BankSettingsOut
    defaults: BankSettingsDefaults


class TrashedBank(_Body):
    """A bank in the trash, restorable whole by ``trashed_to``."""

    name: str
    trashed_to: str
    """The trash entry's id: what ``POST /v1/banks/{bank}/restore`` takes."""
    trashed_at: int


class BankCreated(_Body):
    """The bank, and whether this request created it."""

    bank: MemoryBank
    created: bool


class BankListPage(_Body):
    """Banks by name, a page at a time; with ``trashed=true``, the trash entries (one page)."""

    banks: list[MemoryBank | TrashedBank]
    next_cursor: str | None = None
    """Present only when more banks follow: pass it back as ``cursor``."""


class BankReply(_Body):
    """One bank."""

    bank: MemoryBank


class BankTrashReply(_Body):
    """The bank moved to the trash."""

    trashed_to: str
    """The trash entry's id, for restoring it."""


class BankRule(_Body):
    """A markdown rule of a bank."""

    name: str
    content: str
    updated_at: int | None = None


class BudgetUse(_Body):
    """How much of one injection budget a turn uses, in UTF-8 bytes."""

    used_bytes: int
    limit_bytes: int


class RulesBudget(BudgetUse):
    """The rules' share of the injection: rendered rule bytes against ``max_rule_chars``."""

    truncated: bool
    """A rule is cut or omitted from the injection."""


class BankRuleList(_Body):
    """The bank's rules in name order, and their size against the injection budget."""

    rules: list[BankRule]
    budget: RulesBudget


class InjectionBudget(_Body):
    """Budget use of a previewed turn: the rules (``max_rule_chars`` bytes) and the memories
    (``recall_budget_tokens`` * 4 bytes of text)."""

    rules: RulesBudget
    memories: BudgetUse


class BankRuleReply(_Body):
    """One rule, as the listing shows it."""

    rule: BankRule


class BankRuleState(_Body):
    """Whether the rule exists after the change."""

    exists: bool


class SaveDetails(_Body):
    """What a reinforcement could not keep."""

    tags_dropped: list[str]
    """Tags beyond the cap that were not merged."""


class RelatedMemory(_Body):
    """A live memory the write found to say the same thing (``duplicate``) or the same thing about
    the same subject with another value (``conflict``)."""

    id: str
    relation: Literal["duplicate", "conflict"]
    score: float
    """Sentence similarity of the two memories, in [-1, 1]."""
    why: str
    """Why, in a sentence (the values that differ, the correction word)."""
    action: Literal["linked", "superseded", "none"] = "none"
    """What the write did: ``linked`` (both memories' ``conflicts_with``), ``superseded`` (the
    bank's ``on_conflict: supersede`` retired it), ``none`` (a duplicate: consider not saving it,
    or ``supersedes`` to replace it)."""
    text: str | None = None
    """Its text; absent for a caller that may not read the bank."""


class MemoryUpdated(_Body):
    """The memory as updated and, for a new text, the live memories it duplicates or contradicts."""

    memory: BankMemory
    related: list[RelatedMemory] = Field(default_factory=list)
    related_checked: bool = True


class MemorySaved(_Body):
    """The memory as saved: ``created`` for new (or revived) text, else a reinforcement."""

    created: bool
    related: list[RelatedMemory] = Field(default_factory=list)
    """Up to 5 live memories this one duplicates or contradicts, best first."""
    related_checked: bool = True
    """False when the bank's index was not loaded in this container and the look-up was skipped."""
    bank_created: bool = False
    """True when this save created the bank (a bank is created on first use: a misspelt name makes a
    new bank)."""
    memory: BankMemory | None = None
    """Absent only when an idempotent replay finds its bank's records gone."""
    details: SaveDetails | None = None


class OpenConflict(_Body):
    """A live memory and the live memories it conflicts with that were said before it."""

    memory: BankMemory
    earlier: list[BankMemory]


class ConflictPage(_Body):
    """Open conflicts, newest first, a page at a time."""

    conflicts: list[OpenConflict]
    next_cursor: str | None
    """Pass it back as ``cursor`` for the next page; null on the last."""


class BankMemoryPage(_Body):
    """Memories newest first, a page at a time."""

    memories: list[BankMemory]
    total: int | None
    """Memories listed by this query across every page, from the bank's counters; null for a `q`
    listing (a text filter's matches are not counted: that would read every memory)."""
    next_cursor: str | None
    """Pass it back as ``cursor`` for the next page; null on the last."""
    damaged: list[DamagedRecord] | None = None
    """Records left out because they could not be read (only when there are some)."""


class BankMemoryReply(_Body):
    """One memory."""

    memory: BankMemory


class MemoryRevision(BankMemory):
    """One revision of a memory: the record as it was, the operation that wrote it, its sequence."""

    op: str
    """What wrote it: ``create``, ``reinforce``, ``revive`` (``resurrect`` before saves needed
    ``revive``), ``update``, ``pin``, ``delete``, ``supersede``, ``purge``, ``import``..."""
    seq: int
    actor: str | None
    """Who wrote it, as the audit trail names actors (``person:alice``, ``api_key:tok_...``,
    ``system:extraction``); ``null`` for revisions written before revisions named their author."""
    why: str | None = None
    """Why, when the change was made on another call's behalf: ``superseded by <id> on its save``,
    or a bank setting acting on a detected conflict."""


class MemoryHistory(_Body):
    """A memory's revisions, oldest first."""

    revisions: list[MemoryRevision]
    damaged: list[DamagedRevision] | None = None
    """Revisions left out because they could not be read (only when there are some)."""


class BankTag(_Body):
    """A tag and how many live memories carry it."""

    tag: str
    count: int


class BankTagList(_Body):
    """Tags over live memories, most used first."""

    tags: list[BankTag]


class ExportLink(_Body):
    """A presigned GET of the export (``memories.jsonl``) when it is over the inline limit."""

    url: str
    expires_at: int
    damaged: int | None = None
    """How many exported lines mark a damaged record (only when there are some)."""


class ImportLineError(_Body):
    """A line the import rejected."""

    line: int
    """1-based line number."""
    error: str
    code: Literal["validation_error", "duplicate_text", "memory_retired", "quota_exceeded"]
    """Why, stable: ``validation_error`` (the line is not a valid record), ``duplicate_text``,
    ``memory_retired`` (its text is a retired memory's; an import never revives), ``quota_exceeded``."""


class ImportLineRelated(_Body):
    """A line of an import and the live memories its memory duplicates or contradicts."""

    line: int
    related: list[RelatedMemory]


class ImportReport(_Body):
    """What an import wrote and rejected."""

    imported: int
    skipped: int
    errors: list[ImportLineError]
    related: list[ImportLineRelated] | None = None
    """Lines (the first 50 live ones) whose memory duplicates or contradicts a live memory the bank
    held before the import: reported, not linked."""
    related_checked: bool = True
    """False when some lines were not checked (past the first 50, or the bank's index not loaded)."""


class ImportUpload(_Body):
    """A presigned PUT for a large ndjson import file."""

    url: str
    s3_key: str
    """What ``POST /v1/banks/{bank}/import`` takes as ``{s3_key}`` once the file is uploaded."""
    expires_at: int


class RecallSignals(_Body):
    """The parts of a recall score."""

    bm25: float
    entity: float
    """Query entities the memory names."""
    corroboration: float
    pinned: float
    """1 when pinned, else 0."""
    recency: float
    """The recency factor, within the tuning's floor and 1."""
    prf: float | None = None
    """BM25F over the query's feedback terms (when ``w_prf`` > 0)."""
    time: float | None = None
    """1 when the memory's time matches the query's date or when-question (when ``w_time`` > 0)."""
    neighbour: float | None = None
    """The score of a strong hit of the same session it neighbours (when ``w_neighbour`` > 0)."""
    semantic: float | None = None
    """How far the memory's meaning is above the bank's usual closeness to the query: its
    cosine's z-score over the bank, over 5, at least 0; 0 without a vector (when ``w_semantic`` > 0)."""


class RecallHit(_Body):
    """A recalled memory, its score and the signals the score is made of."""

    memory: BankMemory
    score: float
    signals: RecallSignals
    contributions: RecallSignals
    """Each signal's share of ``score``, summing to it: a weighted part of the base; ``recency``
    what its factor takes away (0 or less); ``time`` what its factor adds; ``neighbour`` and
    ``semantic`` their weighted values."""
    match: float
    """How well the memory matches the query, 0 to 1: the greater of the share of the query's
    distinctive words (idf-weighted) it holds and its closeness in meaning (sentence vectors)."""


class RecallMatch(_Body):
    """How well the best hit matched, and the bar hits were held to."""

    level: Literal["strong", "partial", "weak", "none"]
    """``strong`` (match >= 0.8): the memory holds the question's distinctive words or says the
    same in other words; ``partial`` (>= 0.35, the default threshold): it shares part of them
    or of the meaning; ``weak`` (below 0.35, returned only when the bank's threshold is lower):
    a look-alike, likely not the answer; ``none``: no memory matched, the bank does not know."""
    score: float | None
    """The best hit's ``match`` (0 to 1), ``null`` without a hit."""
    threshold: float
    """The bank's match threshold: no hit under it is returned (0: off)."""


class BankRecall(_Body):
    """The best-ranked memories, how well the best one matched, and the retrieval mode that ran."""

    memories: list[RecallHit]
    match: RecallMatch
    retrieval: str
    """``bm25-entity``, ``bm25-entity+semantic`` when the semantic signal ran,
    ``bm25-entity+semantic-unavailable`` when its model is not available (``+as_of``,
    ``+last-good-tuning`` when these apply)."""


class InjectedMemory(_Body):
    """A memory picked for injection, its score and match (0 for an ambient one), and whether the
    ambient floor added it (the injection marks those as not matched to the message)."""

    memory: BankMemory
    score: float
    match: float
    ambient: bool


class InjectionPreview(_Body):
    """Exactly what a turn asking ``query`` would get injected."""

    system_prompt_section: str
    """The rules section appended to the system prompt."""
    rules: int
    """Rules in the section."""
    rules_truncated: bool
    memories: list[InjectedMemory]
    match: RecallMatch
    message: str | None = None
    """The memory message appended to the conversation (only when memories are injected)."""
    retrieval: str
    budget: InjectionBudget


class HookMessage(_Body):
    """A message to append to the conversation."""

    role: Literal["user"]
    content: str


class HookMutations(_Body):
    """What the runtime applies to the turn."""

    system_prompt_append: str
    append_messages: list[HookMessage]


class HookInjection(_Body):
    """The mutations for this turn and the retrieval mode that ran."""

    mutations: HookMutations
    retrieval: str


class ReloadResult(_Body):
    """The org's new config version and how many of its banks' caches were dropped here."""

    config_version: int
    banks: int


class ExtractionOutcome(_Body):
    """What an inline extraction job did."""

    status: str
    """``applied``, ``duplicate``, ``too_small``, ``disabled`` or ``deferred`` (the org spent its extraction
    tokens of the UTC day, or an earlier turn of the session waits: the job runs the next day)."""
    saved: int
    reinforced: int
    skipped: int
    rule_lines: int
    model_called: bool


class TurnAccepted(_Body):
    """Whether the turn's extraction was accepted, and how it ran."""

    accepted: bool
    bank: str
    session_id: str
    turn_id: str
    reason: str | None = None
    """Why it was not accepted (``extraction_disabled``)."""
    queued: bool | None = None
    """Accepted: true when the job went to the queue, false when it ran inline."""
    outcome: ExtractionOutcome | None = None
    """What the job did when it ran inline."""


class SessionDropped(_Body):
    """Whether the session had an extraction cursor to drop."""

    session_id: str
    dropped: bool


class SessionForgotten(_Body):
    """The memories the session taught, retired or purged."""

    session_id: str
    retired: int
    purged: int
    memory_ids: list[str]


class DoctorCheck(_Body):
    """One check's result."""

    name: str
    ok: bool
    required: bool
    detail: str
    """What was done, or what failed."""
    ms: float
    """Its duration in milliseconds."""


class DoctorReport(_Body):
    """Every check; ``ok`` when every required one passed."""

    ok: bool
    checks: list[DoctorCheck]


class IndexSnapshot(_Body):
    """A bank's newest index snapshot in S3."""

    key: str
    seq: int
    """The bank's ``seq`` the snapshot was taken at."""
    at: int
    """Its upload, ms since epoch."""


class VectorCoverage(_Body):
    """How many of a bank's live memories the semantic recall signal can reach (from counters)."""

    model: str
    """The sentence model counted (the service's current one)."""
    with_vector: int
    """Live memories carrying that model's vector of their current text."""
    live: int
    """Live memories."""


class BankStatus(_Body):
    """One live bank's position."""

    name: str
    seq: int
    """Every change the bank committed (its lanes included)."""
    memories: int
    snapshot: IndexSnapshot | None
    vectors: VectorCoverage


class ServiceStatus(_Body):
    """What the service holds right now."""

    config_version: int
    """The global config version (bumped by each global reload)."""
    org_config_version: int
    """The caller's org's config version (bumped by ``POST /v1/reload``)."""
    banks: list[BankStatus]
    next_cursor: str | None = None
    """Present only when more banks follow: pass it back as ``cursor``."""
