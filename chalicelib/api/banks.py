"""``/v1/banks``: memory banks over HTTP. Reads need ``memory:read``, changes
``memory:write`` (purge ``admin.memories``), always within the token's bank allow-list."""

from __future__ import annotations

from chalice import Blueprint

from .. import idempotency
from ..auth.principal import Permission
from ..banks import rules, service, transfer
from ..banks.records import (
    BankRequest,
    PinRequest,
    RestoreRequest,
    RuleRequest,
    SaveRequest,
    SupersedeRequest,
    UpdateRequest,
)
from ..names import check_name
from .http import Ctx, Reply, damaged_header, endpoint, query_bool, query_int

bp = Blueprint(__name__)

READ, WRITE, ADMIN = Permission.MEMORY_READ, Permission.MEMORY_WRITE, Permission.ADMIN_MEMORIES


def _bank(ctx: Ctx, bank: str) -> str:
    check_name(bank)
    ctx.principal.require_bank(bank)
    return bank


@endpoint(bp, "/v1/banks", ["POST"], permission=WRITE, body=BankRequest, bank_scoped=True)
def create_bank(ctx: Ctx):
    """Create or ensure a bank: 201 ``{bank, created: true}`` or 200 ``{bank, created: false}``."""
    name = _bank(ctx, ctx.body.name)
    bank, created = service.ensure_bank(ctx.principal.org_id, name, ctx.body.description, actor=ctx.principal.actor)
    return (201 if created else 200), {"bank": bank, "created": created}


@endpoint(bp, "/v1/banks", ["GET"], permission=READ, bank_scoped=True)
def list_banks(ctx: Ctx):
    """``{banks}``; with ``?trashed=true`` the trash entries ``{name, trashed_to, trashed_at}``."""
    org = ctx.principal.org_id
    rows = service.list_trash(org) if query_bool(ctx.query, "trashed") else service.list_banks(org)
    if ctx.principal.banks is not None:
        rows = [r for r in rows if r["name"] in ctx.principal.banks]
    return {"banks": rows}


@endpoint(bp, "/v1/banks/{bank}", ["GET"], permission=READ, bank_scoped=True)
def get_bank(ctx: Ctx, bank: str):
    """``{bank}``."""
    return {"bank": service.bank_public(service.require_bank(ctx.principal.org_id, _bank(ctx, bank)))}


@endpoint(bp, "/v1/banks/{bank}", ["DELETE"], permission=WRITE, bank_scoped=True)
def trash_bank(ctx: Ctx, bank: str):
    """Move the bank to trash: ``{trashed_to}``."""
    return {"trashed_to": service.trash_bank(ctx.principal.org_id, _bank(ctx, bank), actor=ctx.principal.actor)}


@endpoint(bp, "/v1/banks/{bank}/restore", ["POST"], permission=WRITE, body=RestoreRequest, bank_scoped=True)
def restore_bank(ctx: Ctx, bank: str):
    """Restore a trashed bank whole: ``{bank}``; 409 ``bank_exists`` when the name is taken."""
    return {"bank": service.restore_bank(ctx.principal.org_id, _bank(ctx, bank), ctx.body.trashed_to,
                                         actor=ctx.principal.actor)}


@endpoint(bp, "/v1/banks/{bank}/rules", ["GET"], permission=READ, bank_scoped=True)
def list_rules(ctx: Ctx, bank: str):
    """``{rules: [{name, content, updated_at}]}``."""
    return {"rules": rules.list_rules(ctx.principal.org_id, _bank(ctx, bank))}


@endpoint(bp, "/v1/banks/{bank}/rules/{name}", ["PUT"], permission=WRITE, body=RuleRequest, bank_scoped=True)
def set_rule(ctx: Ctx, bank: str, name: str):
    """Create, replace or (empty content) remove a rule: ``{exists}``."""
    check_name(name, "rule")
    return {"exists": rules.set_rule(ctx.principal.org_id, _bank(ctx, bank), name, ctx.body.content)}


@endpoint(bp, "/v1/banks/{bank}/memories", ["POST"], permission=WRITE, body=SaveRequest, bank_scoped=True)
def save_memory(ctx: Ctx, bank: str):
    """Save: 201 ``{created: true, memory}`` / 200 ``{created: false, memory}``."""
    bank = _bank(ctx, bank)
    idem = idempotency.make(ctx.principal.token_id, f"save:{bank}", ctx.header("idempotency-key"), ctx.raw_body)
    status, body = service.save_memory(ctx.principal.org_id, bank, ctx.body, actor=ctx.principal.actor, idem=idem)
    return Reply(status, body)


@endpoint(bp, "/v1/banks/{bank}/memories", ["GET"], permission=READ, bank_scoped=True)
def list_memories(ctx: Ctx, bank: str):
    """``{memories, total, next_cursor}``, newest first."""
    return service.list_memories(ctx.principal.org_id, _bank(ctx, bank),
                                 limit=query_int(ctx.query, "limit", service.LIST_DEFAULT, 1, service.LIST_MAX),
                                 cursor=ctx.query.get("cursor"), tag=ctx.query.get("tag"),
                                 include_superseded=query_bool(ctx.query, "include_superseded"))


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}", ["GET"], permission=READ, bank_scoped=True)
def get_memory(ctx: Ctx, bank: str, memory_id: str):
    """``{memory}``, retired ones included."""
    return {"memory": service.get_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id)}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}", ["PATCH"], permission=WRITE, body=UpdateRequest,
          bank_scoped=True)
def update_memory(ctx: Ctx, bank: str, memory_id: str):
    """``{memory}`` after an in-place revision."""
    return {"memory": service.update_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id, ctx.body,
                                            actor=ctx.principal.actor)}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}", ["DELETE"], permission=WRITE, bank_scoped=True)
def delete_memory(ctx: Ctx, bank: str, memory_id: str):
    """Tombstone: ``{memory}``."""
    return {"memory": service.delete_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id,
                                            actor=ctx.principal.actor)}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}/pin", ["POST"], permission=WRITE, body=PinRequest,
          bank_scoped=True)
def pin_memory(ctx: Ctx, bank: str, memory_id: str):
    """``{memory}`` pinned or unpinned."""
    return {"memory": service.pin_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id, ctx.body.pinned,
                                         actor=ctx.principal.actor)}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}/supersede", ["POST"], permission=WRITE, body=SupersedeRequest,
          bank_scoped=True)
def supersede_memory(ctx: Ctx, bank: str, memory_id: str):
    """``{memory}`` retired in favour of ``superseded_by``."""
    return {"memory": service.supersede_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id,
                                               ctx.body.superseded_by, actor=ctx.principal.actor)}


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}/history", ["GET"], permission=READ, bank_scoped=True)
def memory_history(ctx: Ctx, bank: str, memory_id: str):
    """``{revisions}`` oldest first."""
    return service.history(ctx.principal.org_id, _bank(ctx, bank), memory_id)


@endpoint(bp, "/v1/banks/{bank}/memories/{memory_id}/purge", ["POST"], permission=ADMIN, bank_scoped=True)
def purge_memory(ctx: Ctx, bank: str, memory_id: str):
    """Erase content everywhere: ``{memory}`` (a content-free tombstone)."""
    return {"memory": service.purge_memory(ctx.principal.org_id, _bank(ctx, bank), memory_id,
                                           actor=ctx.principal.actor)}


@endpoint(bp, "/v1/banks/{bank}/tags", ["GET"], permission=READ, bank_scoped=True)
def list_tags(ctx: Ctx, bank: str):
    """``{tags: [{tag, count}]}`` over live memories, most used first."""
    return service.tags(ctx.principal.org_id, _bank(ctx, bank))


@endpoint(bp, "/v1/banks/{bank}/export", ["GET"], permission=READ, bank_scoped=True)
def export_bank(ctx: Ctx, bank: str):
    """``memories.jsonl`` inline up to the inline limit, else ``{url, expires_at, damaged?}``;
    inline, the count of damaged-record marker lines is the ``X-Cairn-Damaged`` header."""
    result = transfer.export_bank(ctx.principal.org_id, _bank(ctx, bank), history=query_bool(ctx.query, "history"))
    if "data" in result:
        return Reply(200, raw=result["data"], content_type="application/x-ndjson",
                     headers={"Content-Disposition": 'attachment; filename="memories.jsonl"',
                              **damaged_header(result["damaged"])})
    return result


@endpoint(bp, "/v1/banks/{bank}/import", ["POST"], permission=WRITE,
          body_types=("application/x-ndjson", "application/json", "text/plain"), bank_scoped=True)
def import_bank(ctx: Ctx, bank: str):
    """ndjson body, or JSON ``{s3_key}`` of an uploaded file: ``{imported, skipped, errors}``."""
    bank = _bank(ctx, bank)
    ctype = (ctx.header("content-type") or "").split(";")[0].strip().lower()
    if ctype == "application/json":
        from .http import parse_json
        req = parse_json(ctx.raw_body, transfer.ImportUploadRequest)
        return transfer.import_upload(ctx.principal.org_id, bank, req.s3_key, actor=ctx.principal.actor)
    return transfer.import_ndjson(ctx.principal.org_id, bank, ctx.raw_body, actor=ctx.principal.actor)


@endpoint(bp, "/v1/banks/{bank}/import-uploads", ["POST"], permission=WRITE, bank_scoped=True)
def import_upload_url(ctx: Ctx, bank: str):
    """``{url, s3_key, expires_at}``: a presigned PUT for a large ndjson file."""
    return transfer.create_upload(ctx.principal.org_id, _bank(ctx, bank))
