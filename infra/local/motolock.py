"""Serialize moto's DynamoDB ``transact_write_items`` with one process-wide lock.

moto copies whole tables per transaction without a lock, so concurrent transactions lose
committed writes (STACK-NOTES.md). Real DynamoDB needs no such lock; this lives in launcher and
test code only, never in chalicelib.
"""

from __future__ import annotations

import functools
import threading

_LOCK = threading.RLock()
_installed = False


def install() -> None:
    """Wrap moto's DynamoDB backend operations with the lock (idempotent)."""
    global _installed
    if _installed:
        return
    from moto.dynamodb.models import DynamoDBBackend

    # Transactions deep-copy the tables they touch, so plain reads and writes that run while one
    # copies can crash it ("dictionary changed size during iteration"): they take the lock too.
    for name in ("transact_write_items", "transact_get_items", "put_item", "update_item", "delete_item",
                 "get_item", "query", "scan", "batch_write_item", "batch_get_item"):
        original = getattr(DynamoDBBackend, name, None)
        if original is None:
            continue

        def locked(self, *args, __original=original, **kwargs):
            with _LOCK:
                return __original(self, *args, **kwargs)

        functools.update_wrapper(locked, original)
        setattr(DynamoDBBackend, name, locked)
    _installed = True


def lock() -> threading.RLock:
    """The lock itself, for code that must not interleave with a transaction (state dumps)."""
    return _LOCK
