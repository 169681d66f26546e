"""``/v1/banks``: memory banks over HTTP. Reads need ``memory:read``, changes
``memory:write`` (purge ``admin.memories``), always within the token's bank allow-list."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from chalice import Blueprint
from pydantic import Field, field_validator

from .. import idempotency
from ..auth.principal import Permission
from ..banks import rules, service, settings_read, transfer
from ..banks.records import (
    BankPatch,
    BankRequest,
    PinRequest,
    RestoreRequest,
    RuleRequest,
    SaveRequest,
    SupersedeRequest,
    UpdateRequest,
)
from ..banks.service import Bank, MemoryPage, TrashEntry
from ..banks.transfer import ImportResult
from ..core.records import RelatedMemory, SaveResult
from ..errors import BadRequest
from ..inject.render import Rule, Section, render_section
from ..names import check_name
from ..settings import get_settings
from ..tuning import get_tuning
from ..validation import Model
from .http import (
    Ctx,
    IntRange,
    QueryBool,
    Raw,
    Reply,
    ResponseModels,
    damaged_header,
    endpoint,
    parse_json,
    parse_query,
    render_history,
)

bp = Blueprint(__name__)
m = ResponseModels("chalicelib.api.banks_models")

READ, WRITE, ADMIN = Permission.MEMORY_READ, Permission.MEMORY_WRITE, Permission.ADMIN_MEMORIES


def _defaults(d: settings_read.RecallSettings) -> dict[str, Any]:
    """What a bank's null settings stand for: ``{match_threshold, ambient_floor}`` (``feed`` has no
    service default: null is "not stated")."""
    return {"match_threshold": d.match_threshold, "ambient_floor": d.ambient_floor}


def render_bank(bank: Bank | TrashEntry) -> dict[str, Any]:
    """``{name, description, memories, pinned, rules, settings, defaults}`` (``defaults``: what a
    setting left ``null`` stands for), or a trash entry's ``{name, trashed_to, trashed_at}``."""
    if isinstance(bank, TrashEntry):
        return asdict(bank)
    return {"name": bank.name, "description": bank.description, "memories": bank.memories, "pinned": bank.pinned,
            "rules": bank.rules, "settings": bank.settings.model_dump(),
            "defaults": _defaults(settings_read.defaults(get_tuning()))}


BLIND_WHY = {"conflict": "states the same subject with another value", "duplicate": "says the same in other words"}


def render_related(related: list[RelatedMemory], *, readable: bool) -> list[dict[str, Any]]:
    """A write's ``related``: ``{id, relation, score, why, action, text?}`` each. For a caller that
    may not read the bank no ``text`` and a ``why`` naming no value of the other memory (a
    write-only token learns nothing it could not read)."""
    if readable:
        return [r.model_dump(exclude_none=True) for r in related]
    return [{**r.model_dump(exclude_none=True, exclude={"text"}), "why": BLIND_WHY[r.relation]} for r in related]


def render_save(result: SaveResult, *, readable: bool = True) -> tuple[int, dict[str, Any]]:
    """201 ``{created: true, bank_created, memory, related, related_checked}`` / 200 ``{created:
    false, ...}``, plus ``details.tags_dropped`` when a reinforcement dropped tags. ``readable``:
    whether the caller may read the bank (``render_related``)."""
    body: dict[str, Any] = {"created": result.created, "bank_created": result.bank_created,
                            "related": render_related(result.related, readable=readable),
                            "related_checked": result.related_checked}
    if result.memory is not None:
        body["memory"] = result.memory.public()
    if result.tags_dropped:
        body["details"] = {"tags_dropped": result.tags_dropped}
    return (201 if result.created else 200), body


def rules_budget(section: Section) -> dict[str, Any]:
    """``{used_bytes, limit_bytes, truncated}``: the section's rule content against ``max_rule_chars``."""
    return {"used_bytes": section.used, "limit_bytes": section.limit, "truncated": section.truncated}


def render_page(page: MemoryPage) -> dict[str, Any]:
    """``{memories, total, next_cursor, damaged?}``."""
    body: dict[str, Any] = {"memories": [m.public() for m in page.memories], "total": page.total,
                            "next_cursor": page.next_cursor}
    if page.damaged:
        body["damaged"] = page.damaged
    return body


def render_import(result: ImportResult, *, readable: bool = True) -> dict[str, Any]:
    """``{imported, skipped, errors: [{line, error, code}]}``, plus ``related: [{line, related}]`` when
    lines duplicate or contradict live memories (``render_related``) and ``related_checked: false``
    when some lines were not checked."""
    body: dict[str, Any] = {"imported": result.imported, "skipped": result.skipped,
                            "errors": [asdict(e) for e in result.errors]}
    if result.related:
        body["related"] = [{"line": r.line, "related": render_related(r.related, readable=readable)}
                           for r in result.related]
    if not result.related_checked:
        body["related_checked"] = False
    return body


class BanksQuery(Model):
    """``GET /v1/banks?limit=&cursor=&trashed=``: ``limit`` within 1..``BANKS_PAGE_MAX`` (default
    ``BANKS_PAGE_DEFAULT``); the trash listing (``trashed=true``) is one page, without either."""

    limit: Annotated[int, IntRange(1, service.BANKS_PAGE_MAX)] | None = None
    cursor: str | None = None
    trashed: QueryBool = False


def _page_limit_schema(schema: dict[str, Any]) -> None:
    """The document's ``limit`` of a memories page: an integer from 1 (its maximum is a setting),
    or ``""`` (the default)."""
    schema.pop("type", None)
    schema["anyOf"] = [{"type": "integer", "minimum": 1}, {"const": ""}]


class MemoriesQuery(Model):
    """``GET /v1/banks/{bank}/memories?limit=&cursor=&tag=&include_superseded=``: ``limit`` within
    1..``Settings.memories_page_max`` (default ``Settings.memories_page_default``), read first."""

    limit: int = Field(default_factory=lambda: get_settings().memories_page_default,
                       json_schema_extra=_page_limit_schema)
    cursor: str | None = None
    tag: str | None = None
    q: str | None = Field(None, description="Only memories whose text contains this, ignoring case; the "
                          "listing's `total` is then null (matches are not counted).")
    include_superseded: QueryBool = False

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, v: Any) -> int:
        settings = get_settings()
        return IntRange(1, settings.memories_page_max).parse(v, "limit", settings.memories_page_default)


class ExportQuery(Model):
    """``GET /v1/banks/{bank}/export?history=``."""

    history: QueryBool = False


def _bank(ctx: Ctx, bank: str) -> str:
    check_name(bank)
    ctx.principal.require_bank(bank)
    return bank


@endpoint(bp, "/v1/banks", ["POST"], permission=WRITE, body=BankRequest, bank_scoped=True,
          responses={201: m.BankCreated, 200: m.BankCreated}, errors=("invalid_name", "damaged", "quota_exceeded"))
def create_bank(ctx: Ctx):
    """Create a bank, or ensure it exists: 201 ``{bank, created: true}`` or 200 ``{bank, created: false}``."""
    name = _bank(ctx, ctx.body.name)
    bank, created = service.ensure_bank(ctx.principal.org_id, name, ctx.body.description, actor=ctx.principal.actor)
    return (201 if created else 200), {"bank": render_bank(bank), "created": created}


@endpoint(bp, "/v1/banks", ["GET"], permission=READ, bank_scoped=True, query=BanksQuery,
          responses={200: m.BankListPage}, errors=("damaged",))
def list_banks(ctx: Ctx):
    """List the banks: ``{banks, next_cursor?}`` by name, a page at a time (``next_cursor`` only when more follow);
    with ``?trashed=true`` every trash entry ``{name, trashed_to, trashed_at}``, oldest first.
    A bank-confined token sees only its banks."""
    q = parse_query(ctx.query, BanksQuery)
    org, allowed = ctx.principal.org_id, ctx.principal.banks
    if q.trashed:
        for name in ("limit", "cursor"):
            if getattr(q, name) is not None:
                raise BadRequest(f"The trash listing is one page: {name} applies to the live banks only.",
                                 details={"field": name})
        return {"banks": [render_bank(t) for t in service.list_trash(org) if allowed is None or t.name in allowed]}
    page = service.list_banks(org, limit=q.limit or service.BANKS_PAGE_DEFAULT, cursor=q.cursor, allowed=allowed)
    body: dict[str, Any] = {"banks": [render_bank(b) for b in page.banks]}
    if page.next_cursor is not None:
        body["next_cursor"] = page.next_cursor
    return body


@endpoint(bp, "/v1/banks/{bank}", ["GET"], permission=READ, bank_scoped=True, responses={200: m.BankReply},
          errors=("bank_not_found", "damaged"))
def get_bank(ctx: Ctx, bank: str):
    """Read a bank and its counts: ``{bank}``."""
    return {"bank": render_bank(service.get_bank(ctx.principal.org_id, _bank(ctx, bank)))}


@endpoint(bp, "/v1/banks/{bank}", ["PATCH"], permission=WRITE, body=BankPatch, bank_scoped=True,
          responses={200: m.BankReply}, errors=("bank_not_found", "damaged"))
def update_bank(ctx: Ctx, bank: str):
    """Change a bank's description and/or settings (``on_conflict``, ``match_threshold``,
    ``ambient_floor``, ``feed``; the fields given replace theirs, ``null`` restores the default):
    ``{bank}``; 404 ``bank_not_found``."""
    return {"bank": render_bank(service.update_bank(ctx.principal.org_id, _bank(ctx, bank), ctx.body,
                                                    actor=ctx.principal.actor))}


@endpoint(bp, "/v1/banks/{bank}", ["DELETE"], permission=WRITE, bank_scoped=True,
          responses={200: m.BankTrashReply}, errors=("bank_not_found", "damaged"))
def trash_bank(ctx: Ctx, bank: str):
    """Move a bank to the trash: ``{trashed_to}``."""
    return {"trashed_to": service.trash_bank(ctx.principal.org_id, _bank(ctx, bank), actor=ctx.principal.actor)}


@endpoint(bp, "/v1/banks/{bank}/restore", ["POST"], permission=WRITE, body=RestoreRequest, bank_scoped=True,
          responses={200: m.BankReply}, errors=("not_found", "bank_exists", "damaged", "quota_exceeded"))
def restore_bank(ctx: Ctx, bank: str):
    """Restore a trashed bank whole: ``{bank}``; 409 ``bank_exists`` when the name is taken."""
    return {"bank": render_bank(service.restore_bank(ctx.principal.org_id, _bank(ctx, bank), ctx.body.trashed_to,
                                                     actor=ctx.principal.actor))}


@endpoint(bp, "/v1/banks/{bank}/rules", ["GET"], permission=READ, bank_scoped=True,
          responses={200: m.BankRuleList}, errors=("bank_not_found", "damaged"))
def list_rules(ctx: Ctx, bank: str):
    """List a bank's rules: ``{rules: [{name, content, updated_at}], budget: {used_bytes, limit_bytes,
    truncated}}``: ``budget`` is their rendered size against the tuning's ``max_rule_chars``, as a
    turn's injection counts it."""
    name = _bank(ctx, bank)
    listed = rules.list_rules(ctx.principal.org_id, name)
    section = render_section(name, [Rule(name=r["name"], content=r["content"]) for r in listed],
                             get_tuning().max_rule_chars)
    return {"rules": listed, "budget": rules_budget(section)}


@endpoint(bp, "/v1/banks/{bank}/rules/{name}", ["GET"], permission=READ, bank_scoped=True,
          responses={200: m.BankRuleReply}, errors=("bank_not_found", "rule_not_found", "damaged"))
def get_rule(ctx: Ctx, bank: str, name: str):
    """Read one rule: ``{rule: {name, content, updated_at}}``, as the listing shows it; 404 ``rule_not_found``."""
    return {"rule": rules.get_rule(ctx.principal.org_id, _bank(ctx, bank), name)}


@endpoint(bp, "/v1/banks/{bank}/rules/{name}", ["PUT"], permission=WRITE, body=RuleRequest, bank_scoped=True,
          responses={200: m.BankRuleState}, errors=("damaged", "quota_exceeded"))
def set_rule(ctx: Ctx, bank: str, name: str):
    """Create, replace or (empty content) remove a rule: ``{exists}``; the bank is created on first use."""
    check_name(name, "rule")
    return {"exists": rules.set_rule(ctx.principal.org_id, _bank(ctx, bank), name, ctx.body.content,
                                     actor=ctx.principal.actor)}


@endpoint(bp, "/v1/banks/{bank}/rules/{name}", ["DELETE"], permission=WRITE, bank_scoped=True,
          responses={200: m.BankRuleState}, errors=("bank_not_found", "rule_not_found", "damaged"))
def delete_rule(ctx: Ctx, bank: str, name: str):
    """Remove a rule: ``{exists: false}``; 404 ``rule_not_found`` when there is none."""
    rules.delete_rule(ctx.principal.org_id, _bank(ctx, bank), name, actor=ctx.principal.actor)
    return {"exists": False}


@endpoint(bp, "/v1/banks/{bank}/memories", ["POST"], permission=WRITE, body=SaveRequest, bank_scoped=True,
          responses={201: m.MemorySaved, 200: m.MemorySaved},
          errors=("conflict", "damaged", "quota_exceeded", "bank_not_found", "memory_not_found", "memory_retired"))
def save_memory(ctx: Ctx, bank: str):
    """Save a memory, or reinforce the one with the same text: 201 ``{created: true, memory}`` / 200
    ``{created: false, memory}``. Text of a forgotten or superseded memory writes nothing: 409
    ``memory_retired`` with ``details: {memory_id, superseded_by, invalid_at}``, unless ``revive:
    true`` brings that memory back. ``supersedes: [ids]`` retires those memories in favour of this
    one in the same transaction (404 ``memory_not_found``, 409 ``memory_retired`` or ``conflict``
    for a pinned one: nothing written). The bank is created on first use; an ``Idempotency-Key`` header
    makes a retry return the first result (409 ``conflict`` when reused for another body) while it
    is still true: 404 ``bank_not_found`` once that bank was trashed, 404 ``memory_not_found`` once
    the memory was purged."""
    bank = _bank(ctx, bank)
    idem = idempotency.make(ctx.principal.token_id, f"save:{bank}", ctx.header("idempotency-key"), ctx.raw_body)
    status, body = render_save(service.save_memory(ctx.principal.org_id, bank, ctx.body, actor=ctx.principal.actor,
                                                   idem=idem), readable=ctx.principal.has(READ))
    return Reply(status, body)


@endpoint(bp, "/v1/banks/{bank}/memories", ["GET"], permission=READ, bank_scoped=True, query=MemoriesQuery,
          responses={200: m.BankMemoryPage}, errors=("bank_not_found", "damaged"))
def list_memories(ctx: Ctx, bank: str):
    """List a bank's memories: ``{memories, total, next_cursor}``, newest first; ``q`` keeps those
    whose text contains it, ignoring case (``total`` is then null)."""
    bank = _bank(ctx, bank)  # the bank's name is checked before the query
    q = parse_query(ctx.query, MemoriesQuery)
    return render_page(service.list_memories(ctx.principal.org_id, bank, limit=q.limit, cursor=q.cursor, tag=q.tag,
                                             include_superseded=q.include_superseded, text=q.q))


class ConflictsQuery(Model):
    """``GET /v1/banks/{bank}/conflicts?limit=&cursor=``."""

    limit: Annotated[int, IntRange(1, 100)] = 20
    cursor: str | None = None


@endpoint(bp, "/v1/banks/{bank}/conflicts", ["GET"], permission=READ, bank_scoped=True, query=ConflictsQuery,
          responses={200: m.ConflictPage}, errors=("bank_not_found", "damaged"))
def list_conflicts(ctx: Ctx, bank: str):
    """Open conflicts: ``{conflicts: [{memory, earlier: [memory]}], next_cursor}``, newest first: each
    live memory linked as conflicting with live memories said before it. Resolve one by
    superseding either side (``POST .../memories/{id}/supersede``)."""
    bank = _bank(ctx, bank)
    q = parse_query(ctx.query, ConflictsQuery)
    page = service.list_conflicts(ctx.principal.org_id, bank, limit=q.limit, cursor=q.cursor)
    return {"conflicts": [{"memory": c.memory.public(), "earlier": [e.public() for e in c.earlier]}
                          for c in page.conflicts], "next_cursor": page.next_cursor}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}", ["GET"], permission=READ, bank_scoped=True,
          responses={200: m.BankMemoryReply}, errors=("bank_not_found", "memory_not_found", "damaged"))
def get_memory(ctx: Ctx, bank: str, memory_id: str):
    """Read one memory: ``{memory}``, retired ones included."""
    return {"memory": service.get_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id).public()}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}", ["PATCH"], permission=WRITE, body=UpdateRequest,
          bank_scoped=True, responses={200: m.MemoryUpdated},
          errors=("bank_not_found", "memory_not_found", "memory_retired", "duplicate_text", "damaged"))
def update_memory(ctx: Ctx, bank: str, memory_id: str):
    """Revise a memory in place: ``{memory, related, related_checked}`` (``related``: for a new
    text, the live memories it duplicates or contradicts, reported, not linked)."""
    done = service.update_memory_related(ctx.principal.org_id, _bank(ctx, bank), memory_id, ctx.body,
                                         actor=ctx.principal.actor)
    readable = ctx.principal.has(READ)
    return {"memory": done.memory.public(), "related_checked": done.related_checked,
            "related": render_related(done.related, readable=readable)}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}", ["DELETE"], permission=WRITE, bank_scoped=True,
          responses={200: m.BankMemoryReply}, errors=("bank_not_found", "memory_not_found", "damaged"))
def delete_memory(ctx: Ctx, bank: str, memory_id: str):
    """Tombstone a memory: ``{memory}``."""
    return {"memory": service.delete_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id,
                                            actor=ctx.principal.actor).public()}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}/pin", ["POST"], permission=WRITE, body=PinRequest,
          bank_scoped=True, responses={200: m.BankMemoryReply},
          errors=("bank_not_found", "memory_not_found", "memory_retired", "damaged"))
def pin_memory(ctx: Ctx, bank: str, memory_id: str):
    """Pin or unpin a memory: ``{memory}``."""
    return {"memory": service.pin_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id, ctx.body.pinned,
                                         actor=ctx.principal.actor).public()}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}/supersede", ["POST"], permission=WRITE, body=SupersedeRequest,
          bank_scoped=True, responses={200: m.BankMemoryReply},
          errors=("bank_not_found", "memory_not_found", "memory_retired", "conflict", "damaged"))
def supersede_memory(ctx: Ctx, bank: str, memory_id: str):
    """Retire a memory in favour of ``superseded_by``: ``{memory}``."""
    return {"memory": service.supersede_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id,
                                               ctx.body.superseded_by, actor=ctx.principal.actor).public()}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}/history", ["GET"], permission=READ, bank_scoped=True,
          responses={200: m.MemoryHistory}, errors=("bank_not_found", "memory_not_found", "damaged"))
def memory_history(ctx: Ctx, bank: str, memory_id: str):
    """A memory's revisions: ``{revisions}`` oldest first."""
    return render_history(service.history(ctx.principal.org_id, _bank(ctx, bank), memory_id))


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}/purge", ["POST"], permission=ADMIN, bank_scoped=True,
          responses={200: m.BankMemoryReply}, errors=("bank_not_found", "memory_not_found", "damaged"),
          meter="exempt")
def purge_memory(ctx: Ctx, bank: str, memory_id: str):
    """Erase a memory's content everywhere: ``{memory}`` (a content-free tombstone)."""
    return {"memory": service.purge_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id,
                                           actor=ctx.principal.actor).public()}


@endpoint(bp, "/v1/banks/{bank}/tags", ["GET"], permission=READ, bank_scoped=True, responses={200: m.BankTagList},
          errors=("bank_not_found", "damaged"))
def list_tags(ctx: Ctx, bank: str):
    """Count a bank's tags: ``{tags: [{tag, count}]}`` over live memories, most used first."""
    return {"tags": [asdict(t) for t in service.tags(ctx.principal.org_id, _bank(ctx, bank))]}


@endpoint(bp, "/v1/banks/{bank}/export", ["GET"], permission=READ, bank_scoped=True, query=ExportQuery,
          responses={200: (Raw("application/x-ndjson", "memories.jsonl: one memory (or revision) a line."),
                           m.ExportLink)},
          errors=("bank_not_found", "damaged"))
def export_bank(ctx: Ctx, bank: str):
    """Export a bank: ``memories.jsonl`` inline up to the inline limit, else ``{url, expires_at, damaged?}``;
    inline, the count of damaged-record marker lines is the ``X-Cairn-Damaged`` header."""
    bank = _bank(ctx, bank)  # the bank's name is checked before the query
    result = transfer.export_bank(ctx.principal.org_id, bank, history=parse_query(ctx.query, ExportQuery).history)
    if result.data is not None:
        return Reply(200, raw=result.data, content_type="application/x-ndjson",
                     headers={"Content-Disposition": 'attachment; filename="memories.jsonl"',
                              **damaged_header(result.damaged)})
    link: dict[str, Any] = {"url": result.url, "expires_at": result.expires_at}
    return {**link, "damaged": result.damaged} if result.damaged else link


@endpoint(bp, "/v1/banks/{bank}/import", ["POST"], permission=WRITE,
          body_types=("application/x-ndjson", "application/json", "text/plain"), bank_scoped=True,
          responses={200: m.ImportReport}, errors=("damaged", "quota_exceeded"))
def import_bank(ctx: Ctx, bank: str):
    """Import memories into a bank (created on first use): an ndjson body, or JSON ``{s3_key}`` of an
    uploaded file: ``{imported, skipped, errors}``."""
    bank = _bank(ctx, bank)
    ctype = (ctx.header("content-type") or "").split(";")[0].strip().lower()
    if ctype == "application/json":
        req = parse_json(ctx.raw_body, transfer.ImportUploadRequest)
        return render_import(transfer.import_upload(ctx.principal.org_id, bank, req.s3_key, actor=ctx.principal.actor),
                             readable=ctx.principal.has(READ))
    return render_import(transfer.import_ndjson(ctx.principal.org_id, bank, ctx.raw_body, actor=ctx.principal.actor),
                         readable=ctx.principal.has(READ))


@endpoint(bp, "/v1/banks/{bank}/import-uploads", ["POST"], permission=WRITE, bank_scoped=True,
          responses={200: m.ImportUpload})
def import_upload_url(ctx: Ctx, bank: str):
    """Get a presigned PUT for a large ndjson import file: ``{url, s3_key, expires_at}``."""
    return asdict(transfer.create_upload(ctx.principal.org_id, _bank(ctx, bank)))
