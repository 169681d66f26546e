"""Keyed digests: what Cairn keeps instead of an id or text it must not keep in the clear.

A memory's id is the fingerprint of its text (``fingerprint.py``): anyone holding the id of a
short text (a PIN, a date) can find the text by fingerprinting guesses. Where a record must refer
to content without being such an oracle (a purged memory's tombstone and audit event, an
idempotency record's request, an extraction job's progress), it keeps
``keyed(scope, purpose, *parts)`` instead: HMAC-SHA256 under a key of the ``scope`` (an org or a
token) derived from the service secret (``storage.secret``), which no tenant can read. The same
inputs give the same digest in every container.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from functools import lru_cache

from .storage.secret import service_secret


@lru_cache(maxsize=1024)
def _scope_key(secret: bytes, scope: str) -> bytes:
    return hmac.new(secret, b"cairn-scope\x00" + scope.encode("utf-8"), hashlib.sha256).digest()


def _mac(secret: bytes, scope: str, purpose: str, parts: tuple[str, ...]) -> str:
    msg = json.dumps([purpose, *parts], ensure_ascii=False).encode("utf-8")
    return hmac.new(_scope_key(secret, scope), msg, hashlib.sha256).hexdigest()


def keyed(scope: str, purpose: str, *parts: str) -> str:
    """HMAC-SHA256 (64 hex digits) of ``purpose`` and ``parts`` under ``scope``'s key; makes the
    service secret on first use."""
    secret = service_secret()
    assert secret is not None  # made above
    return _mac(secret, scope, purpose, parts)


def keyed_if_any(scope: str, purpose: str, *parts: str) -> str | None:
    """``keyed(...)``, or ``None`` while no service secret exists (nothing was keyed yet): for
    readers, which must write nothing."""
    secret = service_secret(create=False)
    return _mac(secret, scope, purpose, parts) if secret is not None else None
