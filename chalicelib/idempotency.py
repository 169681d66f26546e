"""Idempotency keys: a retried request carrying the same ``Idempotency-Key``
gets the first response back without being applied again.

The record is written in the same transaction as the change it answers, so a change and its
replayable response commit together. Keys are scoped to the token that sent them. A memory in
the response is stored as a reference to the revision that holds it, never as a copy, so a purge
(which scrubs revisions) leaves no trace of the text here either.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import DoesNotExist
from pynamodb.transactions import TransactWrite

from .errors import BadRequest, Conflict
from .settings import get_settings
from .storage.tables import IdempotencyModel, RevisionModel, bind

MAX_KEY_CHARS = 255
REF = "$revision"  # body["memory"] = {REF: {"bank_key", "seq"}}: read back from that revision


@dataclass(frozen=True)
class IdemKey:
    """A request's idempotency identity: ``key`` (scoped: token, route, client key) and the
    SHA-256 of the request it first answered."""

    key: str
    request_digest: str


def make(token_id: str, route: str, client_key: str | None, body: bytes) -> IdemKey | None:
    """Build the identity for a request, or ``None`` when it carries no key.

    Raises 400 ``validation_error`` for a key over 255 characters or with control characters.
    """
    if client_key is None:
        return None
    if not client_key or len(client_key) > MAX_KEY_CHARS or any(ord(c) < 32 for c in client_key):
        raise BadRequest("Idempotency-Key must be 1 to 255 printable characters.",
                         details={"field": "Idempotency-Key"})
    digest = hashlib.sha256(route.encode() + b"\n" + (body or b"")).hexdigest()
    return IdemKey(key=f"{token_id}|{route}|{client_key}", request_digest=digest)


def lookup(idem: IdemKey | None) -> tuple[int, dict[str, Any]] | None:
    """The stored ``(status, body)`` for ``idem``, or ``None``.

    Raises 409 ``conflict`` when the key was first used for a different request, or when the
    stored response cannot be read (a damaged record is never replayed, nor silently re-run).
    """
    if idem is None:
        return None
    bind()
    try:
        row = IdempotencyModel.get(idem.key, consistent_read=True)
    except DoesNotExist:
        return None
    if not isinstance(row.expires_at, (int, float)) or row.expires_at < time.time():
        return None
    if row.request_digest != idem.request_digest:
        raise Conflict("This Idempotency-Key was already used for a different request.",
                       details={"field": "Idempotency-Key"})
    if row.damaged or not isinstance(row.body, dict) or not isinstance(row.status, (int, float)):
        raise Conflict("The response stored for this Idempotency-Key is damaged and cannot be replayed; "
                       "send the request with a new key.", details={"field": "Idempotency-Key"})
    return int(row.status), _resolve(row.body)


def _resolve(body: dict[str, Any]) -> dict[str, Any]:
    memory = body.get("memory")
    if not isinstance(memory, dict) or REF not in memory:
        return body
    from .core.store import (
        revision_record,  # the core imports this module's users, not the reverse
    )
    ref = memory[REF]
    without = {k: v for k, v in body.items() if k != "memory"}
    try:
        rev = RevisionModel.get(str(ref["bank_key"]), int(ref["seq"]), consistent_read=True)
    except DoesNotExist:  # the bank's records are gone: answer without the memory
        return without
    except (KeyError, TypeError, ValueError):  # a damaged reference
        return without
    rec = revision_record(rev)
    return without if isinstance(rec, Exception) else {**body, "memory": rec.public()}


def add_to(tx: TransactWrite, idem: IdemKey | None, status: int, body: dict[str, Any], *,
           revision: tuple[str, int] | None = None) -> None:
    """Record ``(status, body)`` for ``idem`` inside ``tx`` (no-op without a key). The condition
    makes a concurrent twin's transaction fail, so its retry replays this response.

    ``revision`` = ``(bank_key, seq)`` of the revision, written in ``tx`` too, whose record is
    ``body["memory"]``: the memory is then stored as that reference and read back on replay.
    """
    if idem is None:
        return
    bind()
    ttl = get_settings().idempotency_ttl_s
    if revision is not None and "memory" in body:
        body = {**body, "memory": {REF: {"bank_key": revision[0], "seq": int(revision[1])}}}
    row = IdempotencyModel(key=idem.key, request_digest=idem.request_digest, status=status,
                           body=json.loads(json.dumps(body)), expires_at=int(time.time()) + ttl)
    tx.save(row, condition=IdempotencyModel.key.does_not_exist() | (IdempotencyModel.expires_at < int(time.time())))
