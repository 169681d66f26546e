"""``/v1/api/admin/tokens``: the token admin API (``admin.tokens``).

An org-wide administrator mints for any user of its org (never a permission it lacks) and
revokes any token of its org; a bank-confined one mints, lists and revokes only ``api_key``
tokens within its own permissions and banks (``tokens.check_grant``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from chalice import Blueprint
from pydantic import ConfigDict, Field

from ..auth import tokens
from ..auth.principal import Permission
from ..validation import Model
from .http import Ctx, endpoint

bp = Blueprint(__name__)


class TokenInfo(Model):
    """A token as the API shows it: never its secret (times in ms since the epoch, null when unset)."""

    model_config = ConfigDict(extra="forbid")
    token_id: str
    kind: str | None = Field(description="person, service or api_key; null in a damaged record.")
    user_id: str | None
    permissions: list[str]
    label: str | None
    expires_at: int | None = Field(description="ms since the epoch; null: never expires.")
    banks: list[str] | None = Field(description="The bank allow-list; null: every bank.")
    created_at: int | None = Field(description="ms since the epoch.")
    last_used_at: int | None = Field(description="ms since the epoch; null until first used.")
    revoked_at: int | None = Field(description="ms since the epoch; null unless revoked.")
    damaged: bool | None = Field(None, description="Present (true) only when the stored record could not be "
                                 "fully read: such a token never authenticates.")


class MintedToken(TokenInfo):
    """The token just minted, with its secret: shown this once."""

    token: str = Field(description="The secret bearer token, `cairn_...`.")


class TokenList(Model):
    """The org's tokens, oldest first, without secrets."""

    model_config = ConfigDict(extra="forbid")
    tokens: list[TokenInfo]


class RevokedToken(Model):
    """The token revoked (``revoked_at`` set)."""

    model_config = ConfigDict(extra="forbid")
    token: TokenInfo


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
          bank_scoped=True, responses={201: MintedToken}, errors=("invalid_name",))
def mint_token(ctx: Ctx):
    """Mint a token.

    201 ``{token, token_id, kind, user_id, permissions, label, expires_at, banks, ...}``: the
    secret is shown this once."""
    return 201, render(tokens.mint(ctx.principal.org_id, ctx.body, created_by=ctx.principal.actor,
                                   grantor=ctx.principal))


@endpoint(bp, "/v1/api/admin/tokens", ["GET"], permission=Permission.ADMIN_TOKENS, bank_scoped=True,
          responses={200: TokenList})
def list_tokens(ctx: Ctx):
    """List the org's tokens.

    ``{tokens: [...]}`` with ``last_used_at``; never a secret (a bank-confined caller sees its own
    token and those it could have minted)."""
    return {"tokens": [render(t) for t in tokens.list_tokens(ctx.principal.org_id, viewer=ctx.principal)]}


@endpoint(bp, "/v1/api/admin/tokens/{token_id}", ["DELETE"], permission=Permission.ADMIN_TOKENS, bank_scoped=True,
          responses={200: RevokedToken}, errors=("not_found",))
def revoke_token(ctx: Ctx, token_id: str):
    """Revoke a token.

    ``{token}`` (revoked_at set); it fails on every container from now on."""
    return {"token": render(tokens.revoke(ctx.principal.org_id, token_id, actor=ctx.principal.actor,
                                          grantor=ctx.principal))}
