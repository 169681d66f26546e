"""Optimistic-concurrency transactions with jittered retry.

Every document write is one DynamoDB transaction conditioned on what it read (the bank's ``seq``,
a record's ``revision``). When a concurrent writer wins, ``run_transaction`` re-runs the whole
read-decide-write attempt after a jittered backoff, so a client never sees a conflict the server
could have resolved.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError
from pynamodb.connection import Connection
from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from .. import metrics
from ..errors import BackendUnavailable, WriteContended
from ..settings import get_settings
from .tables import connection

T = TypeVar("T")

_RETRYABLE_REASONS = {"ConditionalCheckFailed", "TransactionConflict"}
_THROTTLE_CODES = {
    "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
    "ServiceUnavailable", "InternalServerError", "SlowDown", "TransactionInProgressException",
}


TX_ITEMS = 100  # DynamoDB's items per transaction


class TransactionTooLarge(Exception):
    """An attempt staged more than ``TX_ITEMS`` items: nothing was sent (a bulk write splits its
    batch and writes the halves)."""


class _TransactWrite(TransactWrite):
    """A ``TransactWrite`` that sends nothing when an attempt staged nothing: DynamoDB rejects an
    empty ``TransactItems`` list (moto accepts it), and a read that decides to write nothing
    (an idempotent replay, an existing bank) must not fail. Over ``TX_ITEMS`` items it sends
    nothing either and raises ``TransactionTooLarge``."""

    sent = False

    def _items(self) -> int:
        return len(self._condition_check_items) + len(self._delete_items) + len(self._put_items) + len(
            self._update_items)

    def _commit(self):
        if not self._items():
            return None
        for fn in list(_before_commit):
            fn(self)
        if self._items() > TX_ITEMS:
            raise TransactionTooLarge(f"{self._items()} items staged in one transaction")
        self.sent = True
        return super()._commit()


# Observers of every transaction (the usage meter): an attempt starts; before a non-empty commit
# (may stage more items); an attempt ended (committed or not); a commit was cancelled (may raise
# a ``CairnError``, which ends the write with nothing written and no retry).
_on_attempt: list[Callable[[], None]] = []
_before_commit: list[Callable[[TransactWrite], None]] = []
_after_attempt: list[Callable[[TransactWrite, bool], None]] = []
_on_cancel: list[Callable[[TransactWriteError], None]] = []


def _register(hooks: list, fn: Callable) -> None:
    if fn not in hooks:
        hooks.append(fn)


def on_attempt(fn: Callable[[], None]) -> None:
    """Call ``fn()`` as each transaction attempt starts."""
    _register(_on_attempt, fn)


def before_commit(fn: Callable[[TransactWrite], None]) -> None:
    """Call ``fn(tx)`` just before an attempt that staged something commits; it may stage more."""
    _register(_before_commit, fn)


def after_attempt(fn: Callable[[TransactWrite, bool], None]) -> None:
    """Call ``fn(tx, committed)`` when an attempt ends (``committed``: a non-empty commit succeeded)."""
    _register(_after_attempt, fn)


def on_cancel(fn: Callable[[TransactWriteError], None]) -> None:
    """Call ``fn(exc)`` when a commit is cancelled, before any retry; an exception it raises ends
    the write (nothing was written)."""
    _register(_on_cancel, fn)


class Retry(Exception):
    """Raised inside an attempt to ask for another one (e.g. a read saw a half-made state)."""


def _reasons(exc: TransactWriteError) -> set[str]:
    return {r.code for r in (exc.cancellation_reasons or []) if r is not None and r.code}


def run_transaction(attempt: Callable[[TransactWrite], T], *, retries: int | None = None) -> T:
    """Run ``attempt(tx)`` inside a fresh ``TransactWrite`` until it commits.

    ``attempt`` reads what it needs, raises a ``CairnError`` if the request cannot succeed (nothing
    is written then), and adds conditioned writes to ``tx``; its return value is returned after
    the commit; an attempt that staged nothing sends nothing. A cancelled transaction (a
    condition failed or a conflicting transaction) is retried with full-jitter exponential
    backoff (2 ms base, 250 ms cap) up to ``Settings.write_retries`` attempts, then
    ``WriteContended`` (503 ``write_contention``, ``Retry-After``) is raised and nothing is written.
    A write that needed retries, or ran out of them, emits a ``write`` metric line
    (``WriteRetries``, ``WriteContended``).
    """
    settings = get_settings()
    n = retries or settings.write_retries
    conn: Connection = connection(settings)
    for i in range(n):
        tx = _TransactWrite(connection=conn)
        committed = False
        for fn in list(_on_attempt):
            fn()
        try:
            with tx:
                result = attempt(tx)
            committed = tx.sent
            if i:
                metrics.emit("write", {"WriteRetries": i, "WriteContended": 0})
            return result
        except Retry:
            pass
        except TransactWriteError as exc:
            for hook in list(_on_cancel):
                hook(exc)
            reasons = _reasons(exc)
            if not reasons & _RETRYABLE_REASONS and not _is_throttle(exc):
                raise
        finally:
            for end in list(_after_attempt):
                end(tx, committed)
        time.sleep(random.uniform(0, min(0.25, 0.002 * (2 ** min(i, 10)))))
    metrics.emit("write", {"WriteRetries": n - 1, "WriteContended": 1})
    raise WriteContended()


def _is_throttle(exc: BaseException) -> bool:
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, EndpointConnectionError):
            return True
        if isinstance(cur, ClientError) and cur.response.get("Error", {}).get("Code") in _THROTTLE_CODES:
            return True
        code = getattr(cur, "cause_response_code", None)
        if code in _THROTTLE_CODES:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def as_backend_error(exc: BaseException) -> BackendUnavailable | None:
    """Map a throttled or unreachable backend error (boto or pynamodb) to 503, else ``None``."""
    if isinstance(exc, (PynamoDBException, BotoCoreError, ClientError)) and (
        _is_throttle(exc) or (isinstance(exc, BotoCoreError) and not isinstance(exc, ClientError))
    ):
        return BackendUnavailable()
    return None
