"""Injection routes: preview, the per-turn pre-generate hook, reload."""

from __future__ import annotations

from chalice import Blueprint

from ..inject import reload, service
from .banks import ADMIN, READ, _bank
from .http import Ctx, endpoint

bp = Blueprint(__name__)


@endpoint(bp, "/v1/banks/{bank}/preview", ["POST"], permission=READ, body=service.PreviewRequest)
def preview(ctx: Ctx, bank: str):
    """``{system_prompt_section, rules, rules_truncated, memories, message?, retrieval}``."""
    return service.preview(ctx.principal.org_id, _bank(ctx, bank), ctx.body.query)


@endpoint(bp, "/v1/hooks/pre-generate", ["POST"], permission=READ, body=service.HookRequest)
def pre_generate(ctx: Ctx):
    """``{mutations: {system_prompt_append, append_messages}, retrieval}`` for the session's
    bank; never denies (``service.hook``)."""
    return service.hook(ctx.principal, ctx.body)


@endpoint(bp, "/v1/reload", ["POST"], permission=ADMIN)
def reload_caches(ctx: Ctx):
    """Validate the tuning, drop this container's indexes and rules and bump the config version:
    ``{config_version, banks}``; 400 ``invalid_config`` naming what is wrong."""
    return reload.reload()
