"""Preview and the per-turn pre-generate hook: one code path, one renderer.

``preview(org, bank, query)`` and ``pre_generate(org, messages, metadata, ...)`` both call
``inject()``, which reads the bank row and the config version (``recall.read_rows``, one
consistent BatchGetItem), takes the rules from the per-container cache keyed by ``rules_version``
and config version (S3 only when they changed), ranks with the recall core
(``chalicelib.search.recall``), pads with the ambient floor when few memories matched, and
renders with ``chalicelib.inject.render`` (the section's wording follows the bank's ``feed``
setting). Recall holds its hits to the bank's match threshold,
and the ambient floor pads only while the bank's setting allows it (``banks.settings_read``);
ambient memories are marked as such in the injection. The recall and the ambient floor rank the
bank as that one read found it, so a warm turn costs one DynamoDB read (plus the token lookup) and no S3 call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field

from .. import audit, timing
from ..auth.principal import Principal
from ..banks.settings_read import recall_settings
from ..core.records import Memory, stated_at
from ..core.store import get_bank_head
from ..errors import BadRequest, Forbidden, NotFound
from ..names import check_name
from ..search.filters import RecallFilter
from ..search.recall import MAX_QUERY_CHARS, RETRIEVAL, read_rows, recall, top_memories
from ..tuning import MemoryTuning, get_tuning
from ..usage import keys, meter
from ..validation import Line, Model
from . import rules_cache
from .render import AMBIENT_FLOOR, Injection, Picked, render

MEMORY_PREFIX = "<memory "  # injected memory messages are never taken as the query
RULES_ONLY = "rules-only"  # retrieval when no recall runs (a later step of the turn)
REFUSED_INVALID_NAME = "none+invalid-bank-name"  # the hook injected nothing: no such bank can exist
REFUSED_NOT_ALLOWED = "none+bank-not-allowed"  # the hook injected nothing: outside the allow-list


class PreviewRequest(Model):
    """``POST /v1/banks/{bank}/preview`` body: ``{query, filter?}`` (the hypothetical user message;
    ``filter``: only memories passing it are recalled or pad the floor, ``search.filters``)."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(max_length=MAX_QUERY_CHARS)
    filter: RecallFilter | None = None


class HookMetadata(Model):
    """The hook's ``metadata``: ``memory_bank`` picks the bank; other keys are the harness's."""

    model_config = ConfigDict(extra="allow")
    memory_bank: str | None = None


class HookRequest(Model):
    """``POST /v1/hooks/pre-generate`` body: ``{messages, metadata?, session_id?, step?}``.
    ``messages``: ``[{role, content}]``, content a string or a list of parts ``{type?, text?}``."""

    model_config = ConfigDict(extra="allow")
    messages: list[dict[str, Any]] = Field(default_factory=list, max_length=10000)
    metadata: HookMetadata = Field(default_factory=HookMetadata)
    session_id: Line | None = Field(None, max_length=256)
    step: int = Field(0, ge=0)


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message: its string content, or its text parts joined by ``\\n``."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def newest_user_text(messages: list[dict[str, Any]]) -> str:
    """The newest user message's text, skipping injected ``<memory `` messages; ``""`` if none."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        text = message_text(message)
        if text.startswith(MEMORY_PREFIX):
            continue
        return text
    return ""


@dataclass(frozen=True)
class Injected:
    """What one turn injects (``injection``), the retrieval mode that ran (``retrieval``:
    ``bm25-entity`` (with ``+last-good-tuning`` while the configured tuning is invalid) or
    ``rules-only`` when no recall ran) and the best recalled hit's ``match`` (``search.match``;
    ``None`` when no memory matched or no recall ran) under the bank's ``threshold`` (``None``:
    off or no recall)."""

    injection: Injection
    retrieval: str
    match: float | None = None
    threshold: float | None = None


@dataclass(frozen=True)
class HookResult:
    """The hook's answer: the text to append to the system prompt, the user messages to append
    (their contents; none, or the memory message) and the retrieval mode (``Injected``, or a
    ``none+...`` refusal)."""

    system_prompt_append: str
    append_messages: tuple[str, ...]
    retrieval: str


def inject(org_id: str, bank: str, query: str, *, with_memories: bool = True, require: bool = False,
           tuning: MemoryTuning | None = None, where: RecallFilter | None = None) -> Injected:
    """Render the injection of ``bank`` for ``query``, its memories (recalled and ambient) only
    those passing ``where`` (``search.filters``).
    ``require``: 404 ``bank_not_found`` for a missing bank, 409 ``damaged`` for a bank row that
    cannot be used (preview); otherwise either renders the bare section (the hook never denies
    a turn)."""
    with timing.phase("bank"):
        rows = read_rows(org_id, [bank])  # the turn's one consistent read; also applies a moved config version
    row = rows.get(bank)
    tuning = tuning or get_tuning()
    if row is None and require:
        get_bank_head(org_id, bank)  # 409 damaged when its row or a lane row is there but unusable
        raise NotFound(f"Bank '{bank}' not found.", code="bank_not_found")
    if row is None:  # a name no bank has: counted under one key, however many a caller makes up
        meter.set_scope(keys.UNKNOWN)
    rules = rules_cache.get_rules(org_id, bank, row.row) if row is not None else []
    wanted = recall_settings(row, tuning)
    hits: list[Picked] = []
    retrieval = RETRIEVAL if with_memories and row is not None else RULES_ONLY
    ambient = []
    match: float | None = None
    threshold: float | None = None
    if with_memories and row is not None and query.strip():
        threshold = wanted.match_threshold or None
        with timing.phase("rank"):
            result = recall(org_id, [bank], query, limit=tuning.recall_limit, tuning=tuning, rows=rows,
                            min_match=threshold, where=where)
        retrieval = result.retrieval
        match = result.match
        hits = newer_side([Picked(memory=h.memory, score=h.score, match=h.match) for h in result.hits])
        floor = min(AMBIENT_FLOOR, tuning.recall_limit)
        if len(hits) < floor and wanted.ambient_floor:
            with timing.phase("floor"):
                ambient = top_memories(org_id, bank, floor + len(hits), rows=rows, where=where)
            ambient = [m for m in ambient if not _said_again(m, [*(h.memory for h in hits), *ambient])]
    with timing.phase("render"):
        injection = render(bank, rules, hits, ambient, recall_limit=tuning.recall_limit,
                           recall_budget_tokens=tuning.recall_budget_tokens, max_rule_chars=tuning.max_rule_chars,
                           with_memories=with_memories, feed=wanted.feed)
    return Injected(injection, retrieval, match, threshold)


def newer_side(hits: list[Picked]) -> list[Picked]:
    """``hits`` without the earlier side of each conflicting pair whose later statement is among
    them (recall ranks the later one first: ``search.recall.newer_first``), so the injection
    shows what is true now, in the same budget."""
    shown: list[Picked] = []
    for h in hits:
        if not _said_again(h.memory, [o.memory for o in shown]):
            shown.append(h)
    return shown


def _said_again(memory: Memory, others: list[Memory]) -> bool:
    """Whether one of ``others`` is a later statement conflicting with ``memory``."""
    return any(memory.id in (o.conflicts_with or []) and stated_at(o) > stated_at(memory) for o in others)


def preview(org_id: str, bank: str, query: str, where: RecallFilter | None = None) -> Injected:
    """Exactly what the hook would inject for ``query`` as the newest user message (with
    ``where``, of the memories passing it only). 404 ``bank_not_found`` when the bank does not
    exist, 409 ``damaged`` when its row is unusable."""
    check_name(bank)
    return inject(org_id, bank, query, require=True, where=where)


def hook_bank(metadata: HookMetadata) -> str:
    """The hook's bank: ``metadata.memory_bank``, else the tuning's ``default_bank`` (unchecked)."""
    return metadata.memory_bank or get_tuning().default_bank


def refusal(principal: Principal, bank: str) -> str | None:
    """Why ``principal`` may see nothing of ``bank`` (a retrieval mode), or None."""
    try:
        check_name(bank)
    except BadRequest:
        return REFUSED_INVALID_NAME
    try:
        principal.require_bank(bank)
    except Forbidden:
        return REFUSED_NOT_ALLOWED
    return None


def hook(principal: Principal, req: HookRequest, *, rules_only: bool = False) -> HookResult:
    """The per-turn hook for ``principal``: ``pre_generate`` of the turn's bank. Never denies: a
    bank the caller may not see (an invalid name, or outside the token's allow-list) injects
    nothing, answers ``retrieval`` ``none+invalid-bank-name`` / ``none+bank-not-allowed`` and is
    counted in the token's ``hook.refused`` event of the hour (``audit.note_refusal``; the first
    name, cut to 100 characters and sanitised). ``rules_only``: no recall (the
    token is over its rate limit)."""
    bank = hook_bank(req.metadata)
    why = refusal(principal, bank)
    if why is None:
        return pre_generate(principal.org_id, bank, req, rules_only=rules_only)
    audit.note_refusal(principal.org_id, principal.actor, principal.token_id,
                       {"bank": bank[:100], "reason": why.split("+", 1)[1]})
    return HookResult("", (), why)


def pre_generate(org_id: str, bank: str, req: HookRequest, *, rules_only: bool = False) -> HookResult:
    """The turn's injection: the query is the newest user message (``<memory `` messages
    skipped); on ``step > 0`` only the rules are returned (no recall). Never denies: a missing
    bank yields the bare section. ``retrieval`` is the mode that ran, as in preview
    (``rules-only`` when no recall ran)."""
    query = newest_user_text(req.messages)[:MAX_QUERY_CHARS]  # a long message is cut, never refused
    turn = inject(org_id, bank, query, with_memories=req.step == 0 and not rules_only)
    messages = () if turn.injection.message is None else (turn.injection.message,)
    return HookResult(turn.injection.section.text, messages, turn.retrieval)
