"""Bearer tokens: minting, authentication, listing and revocation.

A token is ``cairn_`` + 43 URL-safe random characters, shown once. Only its SHA-256 is stored;
the row's key is ``tok_`` + the digest's first 32 hex digits, so authenticating is one consistent
GetItem and a revocation is seen by every container on its next request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field, StrictInt, StrictStr, field_validator

from .. import clock
from ..errors import BadRequest, Conflict, Forbidden, NotFound, Unauthorized
from ..names import check_name
from ..settings import get_settings
from ..validation import MAX_TIME_MS, Line, Model
from . import store
from .principal import KINDS, PERMISSIONS, Principal
from .store import TokenRow


class MintRequest(Model):
    """Body of ``POST /v1/api/admin/tokens``."""

    model_config = ConfigDict(extra="forbid")

    # strict types: a wrong JSON type is a 400 naming the field, never a silent coercion
    user_id: Line | None = Field(None, min_length=1, max_length=128)
    kind: StrictStr
    permissions: list[StrictStr] = Field(default_factory=list, max_length=len(PERMISSIONS))
    label: Line | None = Field(None, max_length=200)
    expires_at: StrictInt | None = Field(None, description="ms since epoch", gt=0, le=MAX_TIME_MS)
    banks: list[StrictStr] | None = Field(None, max_length=100)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}")
        return v

    @field_validator("permissions")
    @classmethod
    def _perms(cls, v: list[str]) -> list[str]:
        unknown = [p for p in v if p not in PERMISSIONS]
        if unknown:
            raise ValueError(f"unknown permission(s) {unknown}; known: {list(PERMISSIONS)}")
        return sorted(set(v))


def check_grant(grantor: Principal, kind: str, permissions: list[str] | frozenset[str],
                banks: list[str] | None) -> None:
    """The token administrator's rule, in one place: ``grantor`` may hold (mint, list, revoke) a
    token of ``kind`` with ``permissions`` and bank allow-list ``banks`` (None = every bank) only
    when it holds every one of those permissions; a bank-confined grantor, moreover, only an
    ``api_key`` whose non-empty allow-list is within its own (never a person or service token,
    never an unscoped one). Raises 403 ``forbidden`` saying which part exceeds the grant."""
    missing = sorted(set(permissions) - grantor.permissions)
    if missing:
        raise Forbidden(f"You cannot grant permissions you do not hold: {missing}.",
                        details={"permissions": missing})
    if grantor.banks is None:
        return
    if kind != "api_key":
        raise Forbidden(f"A token with a bank allow-list administers only api_key tokens, not {kind} tokens.",
                        details={"kind": kind})
    if not banks:
        raise Forbidden("A token with a bank allow-list administers only tokens confined to some of its "
                        "banks; give a non-empty banks list.", details={"banks": list(grantor.banks)})
    outside = sorted(set(banks) - set(grantor.banks))
    if outside:
        raise Forbidden("You cannot grant banks outside your own allow-list.", details={"banks": outside})


def digest(token: str) -> str:
    """SHA-256 hex digest of a token's UTF-8 bytes."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_id_for(token: str) -> str:
    """The row key of ``token``: ``tok_`` + the first 32 hex digits of its SHA-256."""
    return "tok_" + digest(token)[:32]


def _ms(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _list(value: Any) -> list[str]:
    # a stored list of strings, as read (a damaged row's cleaned values included)
    return list(value)


@dataclass(frozen=True, kw_only=True)
class TokenInfo:
    """A token as the API shows it, never its secret or digest. Times in ms since epoch (None
    when unset). ``damaged``: the stored row could not be fully read (it never authenticates);
    the fields hold what could be."""

    token_id: str
    kind: str | None
    user_id: str | None
    permissions: list[str]
    label: str | None
    expires_at: int | None
    banks: list[str] | None
    created_at: int | None
    last_used_at: int | None
    revoked_at: int | None
    damaged: bool = False


@dataclass(frozen=True, kw_only=True)
class MintedToken(TokenInfo):
    """A token just minted: its ``TokenInfo`` and the secret ``token``, shown this once."""

    token: str


def public(row: TokenRow) -> TokenInfo:
    """A token row as the API shows it (``TokenInfo``): never the secret or its digest."""
    return TokenInfo(token_id=row.token_id, kind=row.kind, user_id=row.user_id,
                     permissions=_list(row.permissions or []), label=row.label, expires_at=_ms(row.expires_at),
                     banks=_list(row.banks) if row.banks is not None else None,
                     created_at=_ms(row.created_at), last_used_at=_ms(row.last_used_at) or None,
                     revoked_at=_ms(row.revoked_at) or None, damaged=bool(row.damaged))


def _check_mint(req: MintRequest, grantor: Principal | None) -> list[str] | None:
    """The mint request's checks, in order; returns its bank allow-list, names checked."""
    if req.kind == "person" and not req.user_id:
        raise BadRequest("A person token needs a user_id.", details={"field": "user_id"})
    if req.kind == "api_key" and req.user_id:
        raise BadRequest("An api_key token has no user_id.", details={"field": "user_id"})
    if req.expires_at is not None and req.expires_at <= clock.now_ms():
        raise BadRequest("expires_at must be in the future (ms since epoch).", details={"field": "expires_at"})
    banks = [check_name(b) for b in req.banks] if req.banks is not None else None
    if grantor is None:
        return banks
    check_grant(grantor, req.kind, req.permissions, banks)
    if grantor.expires_at is not None and (req.expires_at is None or req.expires_at > grantor.expires_at):
        raise Forbidden("A token that expires cannot mint one that outlives it: set expires_at at or "
                        f"before {grantor.expires_at} (ms since epoch).",
                        details={"field": "expires_at", "limit": grantor.expires_at})
    return banks


def mint(org_id: str, req: MintRequest, *, created_by: str, token: str | None = None,
         grantor: Principal | None = None) -> MintedToken:
    """Create a token for ``org_id``; returns it with its secret (the only time it is shown).

    ``grantor``, when given, must be able to grant the token (``check_grant``: 403 ``forbidden``),
    and an expiring grantor cannot mint a token that outlives it (403 ``forbidden``).
    ``token`` fixes the secret (the local stack's ``CAIRN_DEV_TOKEN``); minting an existing one
    is a no-op that returns it (409 ``conflict`` when it was revoked). Raises 400
    ``validation_error`` for a person without user_id, an api_key with one, or an expiry in the
    past. Audited as ``token.mint``.
    """
    banks = _check_mint(req, grantor)
    secret = token or "cairn_" + secrets.token_urlsafe(32)
    row = store.new(token_id=token_id_for(secret), digest=digest(secret), org_id=org_id, kind=req.kind,
                    user_id=req.user_id, permissions=list(req.permissions), label=req.label,
                    expires_at=req.expires_at, banks=banks, created_at=clock.now_ms(), created_by=created_by)
    existing = store.insert(row, actor=created_by, if_absent=token is not None,
                            details={"kind": req.kind, "permissions": list(req.permissions), "label": req.label or ""})
    if existing is not None and existing.revoked_at is not None:
        raise Conflict("This token value was revoked; choose another one.")
    return MintedToken(**vars(public(row)), token=secret)


def _bearer(authorization: str | None) -> str:
    if not authorization:
        raise Unauthorized("Missing bearer token: send 'Authorization: Bearer <token>'.")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("Malformed Authorization header: expected 'Bearer <token>'.")
    return token


def authenticate(authorization: str | None) -> Principal:
    """Resolve an ``Authorization: Bearer <token>`` header to a ``Principal``.

    Raises 401 ``unauthorized`` when the header is missing or malformed, or the token is unknown,
    revoked or expired. Updates ``last_used_at`` at most once per ``token_touch_interval_s``.
    """
    token = _bearer(authorization)
    row = store.get(token_id_for(token))
    if row is None or not isinstance(row.digest, str) or not row.digest.isascii() \
            or not hmac.compare_digest(row.digest, digest(token)):
        raise Unauthorized("Unknown token.")
    if row.damaged:  # a half-read row could lose its expiry or revocation: fail closed
        raise Unauthorized("This token's stored record is damaged; mint a new token.")
    now = clock.now_ms()
    if row.revoked_at is not None:
        raise Unauthorized("This token was revoked.")
    if row.expires_at is not None and row.expires_at <= now:
        raise Unauthorized("This token has expired.")
    interval_ms = get_settings().token_touch_interval_s * 1000
    if row.last_used_at is None or now - row.last_used_at >= interval_ms:
        store.touch(row, now)
    return Principal(token_id=row.token_id, org_id=row.org_id, kind=row.kind, user_id=row.user_id,
                     permissions=frozenset(row.permissions or []),
                     banks=tuple(row.banks) if row.banks is not None else None,
                     expires_at=int(row.expires_at) if row.expires_at is not None else None)


def _grant_of(row: TokenRow) -> tuple[list[str], list[str] | None]:
    return _list(row.permissions or []), _list(row.banks) if row.banks is not None else None


def may_manage(grantor: Principal, row: TokenRow) -> bool:
    """True when ``grantor`` could have minted ``row`` (``check_grant``)."""
    try:
        check_grant(grantor, row.kind, *_grant_of(row))
    except Forbidden:
        return False
    return True


def list_tokens(org_id: str, viewer: Principal | None = None) -> list[TokenInfo]:
    """Every token of ``org_id``, oldest first, without secrets (``public``). A bank-confined
    ``viewer`` sees only its own token and those it could have minted."""
    rows = store.list_org(org_id)
    if viewer is not None and viewer.bank_confined:
        rows = (r for r in rows if r.token_id == viewer.token_id or may_manage(viewer, r))
    return [public(r) for r in rows]


def revoke(org_id: str, token_id: str, *, actor: str, grantor: Principal | None = None) -> TokenInfo:
    """Revoke one token of ``org_id``; it fails authentication from the next request on.

    Idempotent: revoking a revoked token returns it unchanged (no second audit event).
    Raises 404 ``not_found`` for an unknown or other org's token, and 403 ``forbidden`` when a
    bank-confined ``grantor`` could not have minted it (``check_grant``; an org-wide one revokes
    any token of its org). Audited as ``token.revoke``. Returns the token (``public``).
    """
    def check(row: TokenRow) -> None:
        if grantor is not None and grantor.bank_confined:
            check_grant(grantor, row.kind, *_grant_of(row))

    row = store.revoke(org_id, token_id, actor=actor, check=check)
    if row is None:
        raise NotFound(f"Token '{token_id}' not found.")
    return public(row)
