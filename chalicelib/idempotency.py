"""Idempotency keys: a retried request carrying the same ``Idempotency-Key``
gets the first result back without being applied again.

The record is written in the same transaction as the change it answers, so a change and its
replayable response commit together. Keys are scoped to the token that sent them. A memory in
the response is stored as a reference to the revision that holds it, never as a copy, so a purge
(which deletes the purged memory's revisions) leaves no trace of the text here either, and the
request it first answered is kept as a keyed digest (``digests.keyed``, scoped to the token), never
as a plain hash of a body holding the text. The caller of a replay decides what is true now
(``Replay.bank_key``: the bank incarnation the first answer was written in).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from pydantic import Field, ValidationError
from pynamodb.exceptions import DoesNotExist
from pynamodb.transactions import TransactWrite

from .core.records import Memory, SaveResult
from .core.store import get_revision_record
from .digests import keyed, keyed_if_any
from .errors import BadRequest, Conflict
from .settings import get_settings
from .storage.tables import IdempotencyModel, bind
from .usage import meter
from .validation import Model

# The record's ``status`` when ``body[RESULT]`` holds the domain result (``_StoredSave``). Records
# written before hold an HTTP status (200/201) and the rendered body, whose memory is
# ``{REF: {"bank_key", "seq"}}``, read back from that revision.
DOMAIN = 0
RESULT = "result"
REF = "$revision"


@dataclass(frozen=True)
class IdemKey:
    """A request's idempotency identity: ``key`` (scoped: token, route, client key), the token
    and the SHA-256 of the request (in memory only: what is stored is ``digest()``)."""

    key: str
    request_digest: str
    token_id: str = ""

    def digest(self, *, create: bool = True) -> str | None:
        """The stored form of the request: keyed under the token's scope (``None`` with
        ``create=False`` while no service secret exists)."""
        fn = keyed if create else keyed_if_any
        return fn(f"token:{self.token_id}", "idempotency-request", self.request_digest)


@dataclass(frozen=True)
class Replay:
    """A stored first answer: the ``result`` and the bank incarnation it was written in
    (``None`` for records that do not say)."""

    result: SaveResult
    bank_key: str | None


def make(token_id: str, route: str, client_key: str | None, body: bytes) -> IdemKey | None:
    """Build the identity for a request, or ``None`` when it carries no key.

    Raises 400 ``validation_error`` for a key over ``Settings.idempotency_key_max_chars``
    characters or with control characters.
    """
    if client_key is None:
        return None
    longest = get_settings().idempotency_key_max_chars
    if not client_key or len(client_key) > longest or any(ord(c) < 32 for c in client_key):
        raise BadRequest(f"Idempotency-Key must be 1 to {longest} printable characters.",
                         details={"field": "Idempotency-Key"})
    digest = hashlib.sha256(route.encode() + b"\n" + (body or b"")).hexdigest()
    return IdemKey(key=f"{token_id}|{route}|{client_key}", request_digest=digest, token_id=token_id)


class _RevisionRef(Model):
    bank_key: str
    seq: int


class _StoredSave(Model):
    """The stored form of a ``SaveResult``: the memory as a reference to its revision."""

    created: bool
    memory: _RevisionRef | None = None
    tags_dropped: list[str] = Field(default_factory=list)
    bank_created: bool = False


def lookup(idem: IdemKey | None) -> SaveResult | None:
    """The ``SaveResult`` stored for ``idem``, or ``None`` (``replay`` without its source)."""
    found = replay(idem)
    return found.result if found is not None else None


def replay(idem: IdemKey | None) -> Replay | None:
    """The first answer stored for ``idem``, or ``None``. Reads both the current record (status
    ``DOMAIN``, the result in ``body[RESULT]``) and the older one (the HTTP status and rendered
    body), which stays replayable until its TTL ends.

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
    # records written before requests were keyed hold the plain SHA-256
    if row.request_digest not in (idem.digest(create=False), idem.request_digest):
        raise Conflict("This Idempotency-Key was already used for a different request.",
                       details={"field": "Idempotency-Key"})
    damaged = Conflict("The response stored for this Idempotency-Key is damaged and cannot be replayed; "
                       "send the request with a new key.", details={"field": "Idempotency-Key"})
    if row.damaged or not isinstance(row.body, dict) or not isinstance(row.status, (int, float)):
        raise damaged
    bank_key = None
    try:
        if row.status == DOMAIN:
            stored = _StoredSave.model_validate(row.body.get(RESULT))
            bank_key = stored.memory.bank_key if stored.memory is not None else None
            result = SaveResult(created=stored.created, tags_dropped=stored.tags_dropped,
                                bank_created=stored.bank_created,
                                memory=_revision_memory(stored.memory.bank_key, stored.memory.seq)
                                if stored.memory is not None else None)
        else:
            result = _from_body(row.body)
    except ValidationError:
        raise damaged from None
    meter.replayed()  # the first response answers again: a request (and its rate limit), not a second save
    return Replay(result, bank_key)


def _from_body(body: dict[str, Any]) -> SaveResult:
    """A ``SaveResult`` from a record of the older shape: ``{created, memory, details?}`` with the
    memory as a ``REF`` to its revision."""
    memory = body.get("memory")
    rec = None
    if isinstance(memory, dict) and REF in memory:
        ref = memory[REF]
        try:
            rec = _revision_memory(str(ref["bank_key"]), int(ref["seq"]))
        except (KeyError, TypeError, ValueError):  # a damaged reference: answer without the memory
            rec = None
    elif memory is not None:
        rec = Memory.model_validate(memory)
    details = body.get("details")
    dropped = details.get("tags_dropped", []) if isinstance(details, dict) else []
    return SaveResult(created=body.get("created") is True, memory=rec, tags_dropped=dropped)


def _revision_memory(bank_key: str, seq: int) -> Memory | None:
    """The record of revision ``seq`` of an incarnation, or ``None`` when it is gone (the bank's
    records were deleted) or damaged."""
    rec = get_revision_record(bank_key, seq)
    return rec if isinstance(rec, Memory) else None


def add_to(tx: TransactWrite, idem: IdemKey | None, result: SaveResult, *, revision: tuple[str, int]) -> None:
    """Record ``result`` for ``idem`` inside ``tx`` (no-op without a key). The condition makes a
    concurrent twin's transaction fail, so its retry replays this result.

    ``revision`` = ``(bank_key, seq)`` of the revision, written in ``tx`` too, whose record is
    ``result.memory``: the memory is stored as that reference and read back on replay.
    """
    if idem is None:
        return
    bind()
    ttl = get_settings().idempotency_ttl_s
    stored = _StoredSave(created=result.created, tags_dropped=result.tags_dropped, bank_created=result.bank_created,
                         memory=_RevisionRef(bank_key=revision[0], seq=int(revision[1])))
    row = IdempotencyModel(key=idem.key, request_digest=idem.digest(), status=DOMAIN,
                           body={RESULT: stored.model_dump(mode="json")}, expires_at=int(time.time()) + ttl)
    tx.save(row, condition=IdempotencyModel.key.does_not_exist() | (IdempotencyModel.expires_at < int(time.time())))
