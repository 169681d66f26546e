"""Storage of bearer tokens: the ``tokens`` table, one item per token keyed by ``token_id``
(``tok_`` + the first 32 hex digits of the secret's SHA-256), listed per org through
``org-index`` oldest first. Every read is a consistent GetItem or that index query.

Each change is one transaction with its audit event (``audit.add_to``), so a token change and
its event commit or fail together."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

from pynamodb.exceptions import DoesNotExist
from pynamodb.transactions import TransactWrite

from .. import audit
from ..clock import now_ms
from ..storage.tables import TokenModel, bind
from ..storage.txn import run_transaction

# A stored token as the domain reads it (attributes of ``TokenModel``; ``damaged`` lists the
# attributes that could not be read).
TokenRow: TypeAlias = TokenModel


def new(**fields: Any) -> TokenRow:
    """A token item not yet written (``TokenModel`` attributes as keywords)."""
    return TokenModel(**fields)


def get(token_id: str) -> TokenRow | None:
    """The token item (consistent read), or ``None``."""
    bind()
    try:
        return TokenModel.get(token_id, consistent_read=True)
    except DoesNotExist:
        return None


def list_org(org_id: str) -> Iterator[TokenRow]:
    """Every token item of ``org_id``, oldest first."""
    bind()
    return iter(TokenModel.by_org.query(org_id))


def insert(row: TokenRow, *, actor: str, details: dict[str, Any], if_absent: bool) -> TokenRow | None:
    """Write ``row`` with its ``token.mint`` audit event; returns ``None``.

    ``if_absent``: a row with the same ``token_id`` is read first and, when there is one, returned
    with nothing written (a fixed secret minted again). Otherwise the write is conditioned on
    the id being new (a lost race is retried, then 409 ``conflict``)."""
    bind()

    def attempt(tx: TransactWrite) -> TokenRow | None:
        if if_absent:
            existing = get(row.token_id)
            if existing is not None:
                return existing
        tx.save(row, condition=TokenModel.token_id.does_not_exist())
        audit.add_to(tx, row.org_id, "token.mint", actor, row.token_id, details)
        return None

    return run_transaction(attempt)


def revoke(org_id: str, token_id: str, *, actor: str, check: Callable[[TokenRow], None]) -> TokenRow | None:
    """Set ``revoked_at`` (ms since epoch) on token ``token_id`` of ``org_id`` with its
    ``token.revoke`` audit event; returns the row as it is now, or ``None`` when there is no such
    token in that org. ``check(row)`` runs on the row read first and may raise (nothing is
    written then). A revoked token is returned unchanged (no second event)."""
    bind()

    def attempt(tx: TransactWrite) -> TokenRow | None:
        row = get(token_id)
        if row is None or row.org_id != org_id:
            return None
        check(row)
        if row.revoked_at is not None:
            return row
        now = now_ms()
        tx.update(row, actions=[TokenModel.revoked_at.set(now)],
                  condition=TokenModel.revoked_at.does_not_exist() & (TokenModel.org_id == org_id))
        audit.add_to(tx, org_id, "token.revoke", actor, token_id, None)
        row.revoked_at = now
        return row

    return run_transaction(attempt)


def touch(row: TokenRow, now: int) -> None:
    """Set ``last_used_at`` to ``now`` (ms) unless the token was revoked or deleted meanwhile.
    Best effort: a lost touch must never fail the request, so every error is swallowed."""
    with contextlib.suppress(Exception):
        row.update(actions=[TokenModel.last_used_at.set(now)],
                   condition=TokenModel.token_id.exists() & TokenModel.revoked_at.does_not_exist())
