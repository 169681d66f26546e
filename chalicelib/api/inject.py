"""Injection routes: preview, the per-turn pre-generate hook, reload."""

from __future__ import annotations

from typing import Any

from chalice import Blueprint

from ..inject import reload, service
from . import banks_models as m
from .banks import ADMIN, READ, _bank, rules_budget
from .http import Ctx, endpoint

bp = Blueprint(__name__)


@endpoint(bp, "/v1/banks/{bank}/preview", ["POST"], permission=READ, body=service.PreviewRequest, bank_scoped=True,
          responses={200: m.InjectionPreview}, errors=("bank_not_found", "damaged"))
def preview(ctx: Ctx, bank: str):
    """Preview exactly what a turn asking ``query`` would get injected: ``{system_prompt_section,
    rules, rules_truncated, memories: [{memory, score}], message?, retrieval}``; 404
    ``bank_not_found``."""
    return render_preview(service.preview(ctx.principal.org_id, _bank(ctx, bank), ctx.body.query))


@endpoint(bp, "/v1/hooks/pre-generate", ["POST"], permission=READ, body=service.HookRequest, bank_scoped=True,
          responses={200: m.HookInjection})
def pre_generate(ctx: Ctx):
    """The rules and memories to inject into this turn: ``{mutations: {system_prompt_append,
    append_messages}, retrieval}`` for the session's bank; never denies (``service.hook``)."""
    return render_hook(service.hook(ctx.principal, ctx.body))


@endpoint(bp, "/v1/reload", ["POST"], permission=ADMIN, responses={200: m.ReloadResult},
          errors=("invalid_config",))
def reload_caches(ctx: Ctx):
    """Reload the org's tuning and rules everywhere. Validate the tuning, drop the caller's org's
    indexes and rules here and bump the org's config version, so every container drops that org's
    caches and no other org's: ``{config_version, banks}``; 400 ``invalid_config`` naming what is
    wrong."""
    done = reload.reload_org(ctx.principal.org_id)
    return {"config_version": done.config_version, "banks": done.banks}


def render_preview(turn: service.Injected) -> dict[str, Any]:
    """A preview as the route answers it (``message`` only when a memory message is injected)."""
    injection = turn.injection
    out: dict[str, Any] = {
        "system_prompt_section": injection.section.text,
        "rules": injection.section.rules,
        "rules_truncated": injection.section.truncated,
        "memories": [{"memory": p.memory.public(), "score": p.score} for p in injection.memories],
        "retrieval": turn.retrieval,
        "budget": {"rules": rules_budget(injection.section),
                   "memories": {"used_bytes": injection.memory_bytes, "limit_bytes": injection.memory_limit}},
    }
    if injection.message is not None:
        out["message"] = injection.message
    return out


def render_hook(result: service.HookResult) -> dict[str, Any]:
    """``{mutations: {system_prompt_append, append_messages: [{role: "user", content}]}, retrieval}``."""
    return {"mutations": {"system_prompt_append": result.system_prompt_append,
                          "append_messages": [{"role": "user", "content": m} for m in result.append_messages]},
            "retrieval": result.retrieval}
