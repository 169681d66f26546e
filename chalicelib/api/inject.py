"""Injection routes: preview, the per-turn pre-generate hook, reload."""

from __future__ import annotations

from typing import Any

from chalice import Blueprint

from ..inject import reload, service
from ..inject.render import BYTES_PER_TOKEN
from ..inject.service import RULES_ONLY
from ..usage import meter
from .banks import ADMIN, READ, _bank, rules_budget
from .http import Ctx, ResponseModels, endpoint
from .recall import render_match

bp = Blueprint(__name__)
m = ResponseModels("chalicelib.api.banks_models")


@endpoint(bp, "/v1/banks/{bank}/preview", ["POST"], permission=READ, body=service.PreviewRequest, bank_scoped=True,
          responses={200: m.InjectionPreview}, errors=("bank_not_found", "damaged"), meter="read")
def preview(ctx: Ctx, bank: str):
    """Preview exactly what a turn asking ``query`` would get injected: ``{system_prompt_section,
    rules, rules_truncated, memories: [{memory, score, match, ambient}], match: {level, score,
    threshold}, message?, retrieval}``; ``filter`` (``search.filters``): only memories passing it
    are recalled or pad the floor; 404 ``bank_not_found``."""
    turn = service.preview(ctx.principal.org_id, _bank(ctx, bank), ctx.body.query, ctx.body.filter)
    injected = turn.injection
    _note_injected("preview", injected.section.text, *([injected.message] if injected.message else []))
    return render_preview(turn)


@endpoint(bp, "/v1/hooks/pre-generate", ["POST"], permission=READ, body=service.HookRequest, bank_scoped=True,
          responses={200: m.HookInjection}, meter="hook")
def pre_generate(ctx: Ctx):
    """The rules and memories to inject into this turn: ``{mutations: {system_prompt_append,
    append_messages}, retrieval}`` for the session's bank; never denies (``service.hook``): over
    the token's or the org's rate limit it injects the rules only, and ``retrieval`` says
    ``rules-only+rate_limited`` (``rules-only+backend_unavailable`` when the limits cannot be
    checked)."""
    bank = service.hook_bank(ctx.body.metadata)
    refused = service.refusal(ctx.principal, bank) is not None
    if not refused:  # a refused bank (bad name, not allowed) is client text: counted under the org
        meter.set_scope(bank)
    why = meter.limited()  # the limits were checked before this view: rules only, counted all the same
    result = service.hook(ctx.principal, ctx.body, rules_only=why is not None)
    if why is not None and not refused:  # a refusal injects nothing already (and is audited once)
        result = service.HookResult(result.system_prompt_append, result.append_messages, f"{RULES_ONLY}+{why}")
    _note_injected("hook", result.system_prompt_append, *result.append_messages)
    return render_hook(result)


def _note_injected(kind: str, *texts: str) -> None:
    """Count one ``kind`` request and the characters and estimated tokens (UTF-8 bytes / 4, the
    injection budget's own estimate) it injects."""
    size = sum(len(t.encode("utf-8")) for t in texts)
    meter.add({kind: 1, "inj_chars": sum(len(t) for t in texts), "inj_tok": size // BYTES_PER_TOKEN})


@endpoint(bp, "/v1/reload", ["POST"], permission=ADMIN, responses={200: m.ReloadResult},
          errors=("invalid_config",))
def reload_caches(ctx: Ctx):
    """Reload the org's tuning and rules everywhere. Validate the tuning, drop the caller's org's
    indexes and rules here and bump the org's config version, so every container drops that org's
    caches and no other org's: ``{config_version, banks}``; 400 ``invalid_config`` naming what is
    wrong."""
    done = reload.reload_org(ctx.principal.org_id, actor=ctx.principal.actor)
    return {"config_version": done.config_version, "banks": done.banks}


def render_preview(turn: service.Injected) -> dict[str, Any]:
    """A preview as the route answers it (``message`` only when a memory message is injected)."""
    injection = turn.injection
    out: dict[str, Any] = {
        "system_prompt_section": injection.section.text,
        "rules": injection.section.rules,
        "rules_truncated": injection.section.truncated,
        "memories": [{"memory": p.memory.public(), "score": p.score, "match": p.match, "ambient": p.ambient}
                     for p in injection.memories],
        "match": render_match(turn.match, turn.threshold),
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
