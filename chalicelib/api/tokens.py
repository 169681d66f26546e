"""``/v1/api/admin/tokens``: the token admin API (``admin.tokens``).

An org-wide administrator mints for any user of its org (never a permission it lacks) and
revokes any token of its org; a bank-confined one mints, lists and revokes only ``api_key``
tokens within its own permissions and banks (``tokens.check_grant``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from chalice import Blueprint

from ..auth import tokens
from ..auth.principal import Permission
from .http import Ctx, endpoint

bp = Blueprint(__name__)


def render(token: tokens.TokenInfo) -> dict[str, Any]:
    """A token's wire shape: ``{token_id, kind, user_id, permissions, label, expires_at, banks,
    created_at, last_used_at, revoked_at, damaged?, token?}`` (``damaged`` only when true,
    ``token``, the secret, only when just minted)."""
    out = asdict(token)
    damaged = out.pop("damaged")
    secret = out.pop("token", None)
    if damaged:
        out["damaged"] = True
    if secret is not None:
        out["token"] = secret
    return out


@endpoint(bp, "/v1/api/admin/tokens", ["POST"], permission=Permission.ADMIN_TOKENS, body=tokens.MintRequest,
          bank_scoped=True)
def mint_token(ctx: Ctx):
    """201 ``{token, token_id, kind, user_id, permissions, label, expires_at, banks}``: the
    secret is shown this once."""
    return 201, render(tokens.mint(ctx.principal.org_id, ctx.body, created_by=ctx.principal.actor,
                                   grantor=ctx.principal))


@endpoint(bp, "/v1/api/admin/tokens", ["GET"], permission=Permission.ADMIN_TOKENS, bank_scoped=True)
def list_tokens(ctx: Ctx):
    """``{tokens: [...]}`` of the caller's org with ``last_used_at``; never a secret (a
    bank-confined caller sees its own token and those it could have minted)."""
    return {"tokens": [render(t) for t in tokens.list_tokens(ctx.principal.org_id, viewer=ctx.principal)]}


@endpoint(bp, "/v1/api/admin/tokens/{token_id}", ["DELETE"], permission=Permission.ADMIN_TOKENS, bank_scoped=True)
def revoke_token(ctx: Ctx, token_id: str):
    """Revoke: ``{token}`` (revoked_at set); it fails on every container from now on."""
    return {"token": render(tokens.revoke(ctx.principal.org_id, token_id, actor=ctx.principal.actor,
                                          grantor=ctx.principal))}
