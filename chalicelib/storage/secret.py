"""The service secret: 32 random bytes that key every digest of content Cairn keeps
(``chalicelib.digests``), so a digest of a short text cannot be recomputed by anyone who can only
guess the text.

Kept in the ``banks`` table, org ``_system`` (no token belongs to it), row ``!secret`` (a name no
bank can take), attribute ``secret`` (64 hex digits). The first container that needs it makes it
with a conditional put; a container that loses that race reads the winner's. Every container
keeps it in memory once read. No route returns it; an operator who can read the table can.
Rotating it changes every digest made afterwards (tombstone ids, idempotency records, extraction
progress): delete the row only together with the idempotency and extraction-progress records.
"""

from __future__ import annotations

import os
import secrets
import threading

from pynamodb.exceptions import DoesNotExist, PutError

from .. import patterns
from ..clock import now_ms
from ..errors import ConfigError
from .tables import BankModel, bind

SECRET_ORG = "_system"
SECRET_NAME = "!secret"
_HEX64 = patterns.compile(r"[0-9a-f]{64}")

_lock = threading.Lock()
_cache: dict[tuple[str, str, str], bytes] = {}


def _read() -> BankModel | None:
    try:
        return BankModel.get(SECRET_ORG, SECRET_NAME, consistent_read=True)
    except DoesNotExist:
        return None


def service_secret(*, create: bool = True) -> bytes | None:
    """The service secret (32 bytes), made on first use; with ``create=False``, ``None`` while
    none exists (a reader: nothing can have been keyed by it yet, and a read writes nothing).
    Raises ``ConfigError`` when the stored row does not hold 64 hex digits (a hand edit: restore
    it, or delete it with the records keyed by it)."""
    settings = bind()
    # a test process may switch backends (endpoint) or table prefixes: each has its own secret
    where = (settings.table_prefix, settings.region, os.environ.get("AWS_ENDPOINT_URL", ""))
    got = _cache.get(where)
    if got is not None:
        return got
    with _lock:
        row = _read()
        if row is None and not create:
            return None
        if row is None:
            now = now_ms()
            fresh = BankModel(SECRET_ORG, SECRET_NAME, bank_name=SECRET_NAME, incarnation=secrets.token_hex(16),
                              secret=secrets.token_hex(32), created_at=now, updated_at=now)
            try:
                fresh.save(condition=BankModel.name.does_not_exist())
                row = fresh
            except PutError:
                row = _read()  # another container made it first
        value = row.secret if row is not None else None
        if not isinstance(value, str) or not _HEX64.fullmatch(value):
            raise ConfigError(f"The service secret (banks table, {SECRET_ORG}/{SECRET_NAME}) is missing or "
                              "damaged: restore the row.")
        _cache[where] = bytes.fromhex(value)
        return _cache[where]


def forget_cached() -> None:
    """Drop the secrets read so far (tests that replace the backend under the same names)."""
    with _lock:
        _cache.clear()
