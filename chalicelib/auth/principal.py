"""The authenticated caller and the permission vocabulary."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ..errors import Forbidden

KINDS = ("person", "api_key", "service")



class Permission(StrEnum):
    """The permission vocabulary, in one place: a token holds a set of these (stored and sent as
    their string values)."""

    MEMORY_READ = "memory:read"
    MEMORY_WRITE = "memory:write"
    ADMIN_MEMORIES = "admin.memories"
    ADMIN_TOKENS = "admin.tokens"
    SERVICE = "service"
    CONTEXT_ADMIN = "context:admin"
    ADMIN_USAGE = "admin.usage"


PERMISSIONS = tuple(p.value for p in Permission)


@dataclass(frozen=True)
class Principal:
    """Who is calling: ``token_id``, ``org_id``, ``kind`` (person | api_key | service), ``user_id``
    (None for api_key), ``permissions``, an optional bank allow-list (None = every bank) and the
    token's ``expires_at`` (ms since epoch, None = never).

    A token with a bank allow-list is *bank-confined*: it reaches only those banks, through the
    routes that name a bank; everything else (structured memory, sessions, admin memories and
    audit, team memory, reload, doctor) is refused (``require_org_wide``)."""

    token_id: str
    org_id: str
    kind: str
    user_id: str | None
    permissions: frozenset[str] = field(default_factory=frozenset)
    banks: tuple[str, ...] | None = None
    expires_at: int | None = None

    def has(self, permission: str) -> bool:
        """True when the principal holds ``permission``."""
        return permission in self.permissions

    def require(self, permission: str) -> None:
        """Raise 403 ``forbidden`` unless the principal holds ``permission``."""
        if permission not in self.permissions:
            raise Forbidden(f"This token lacks the '{permission}' permission.",
                            details={"required": permission})

    def require_bank(self, bank: str) -> None:
        """Raise 403 ``forbidden`` when the token's bank allow-list excludes ``bank``."""
        if self.banks is not None and bank not in self.banks:
            raise Forbidden(f"This token may not use bank '{bank}'.", details={"bank": bank})

    @property
    def bank_confined(self) -> bool:
        """True when the token carries a bank allow-list."""
        return self.banks is not None

    def require_org_wide(self) -> None:
        """Raise 403 ``forbidden`` when the token has a bank allow-list: the data of a route that
        names no bank (structured memory, sessions, admin, team memory) is outside every bank."""
        if self.banks is not None:
            raise Forbidden("This token has a bank allow-list, so it can use only the routes of those "
                            "banks; this route needs a token without one.", details={"banks": list(self.banks)})

    @property
    def actor(self) -> str:
        """The audit actor string: ``<kind>:<user_id or token_id>``."""
        return f"{self.kind}:{self.user_id or self.token_id}"
