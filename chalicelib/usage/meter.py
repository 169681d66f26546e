"""The request meter: what one request counts, and where it is written.

``start(principal, operation, kind, scope)`` opens a ``Meter`` for the request (a ``ContextVar``,
so code anywhere below the route reports with ``note(name=n, ...)``, and does nothing when no
meter is open: the CLI, scheduled jobs). ``kind`` decides how it counts:

- ``write``: inside each write transaction (``storage.txn`` hooks, ``install``): one ``ADD`` on the
  token's counter shard of the hour, and, in the request's first transaction, the spend of a
  write rate-limit bucket shard (conditional). A transaction that is cancelled counts nothing; an
  idempotent replay stages nothing and counts nothing. A write request that commits no
  transaction of its own is settled after its view (``settle``).
- ``exempt`` (deletes, forgets, purges, exports): counted the same way, never rate limited.
- ``read``: after the answer is computed, ONE conditional ``UpdateItem`` (``finish``) spends the
  token's read bucket and adds the request's counters. A deny raises 429 ``rate_limited`` (nothing
  written); any other failure of that write is swallowed and emits a ``usage_lost`` metric.
- ``hook``: a read that is never denied (the per-turn hook: over the limit it answers rules only,
  ``spend_read(deny=False)`` then ``count_read``).
- ``none``: not counted (the usage report itself).

Counters: ``req_<operation>`` per request, ``w_<op>`` per stored change (``core.store``), and the
names of ``keys.COUNTERS`` / ``bytes_<kind>`` that code notes.
"""

from __future__ import annotations

import secrets
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field, replace
from typing import Any

from botocore.exceptions import ClientError
from pynamodb.expressions.operand import Path
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from .. import clock, metrics, timing
from ..auth.principal import Principal
from ..errors import RateLimited
from ..settings import get_settings
from ..storage import tables, txn
from ..storage.tables import UsageModel
from . import bucket, keys, limits

KINDS = ("read", "write", "exempt", "hook", "none")
HINT_TTL_S = 2 * 24 * 3600  # a write bucket item outlives two idle days
_hints: dict[tuple[str, str], int] = {}  # last tat seen per bucket item (this container)
_hints_lock = threading.Lock()


@dataclass
class Meter:
    """One request's counting state (see the module). Counts are keyed ``(scope, name)``."""

    principal: Principal
    operation: str
    kind: str
    scope: str = ""
    cost: int = 1
    counted: bool = False  # the request counter is written (a transaction or the read update)
    spent: bool = False  # the request's rate-limit tokens are spent
    replayed: bool = False  # an idempotent replay answered: count nothing
    failed: bool = False
    outside: Counter = field(default_factory=Counter)  # noted outside a transaction
    noted: Counter = field(default_factory=Counter)  # everything noted (the metric line)
    attempt: Counter = field(default_factory=Counter)  # noted by the running transaction attempt
    in_tx: int = 0
    lane: int | None = None  # the first write lane the attempt touches (the counter shard)
    lanes: int = 1
    staged: Any = None  # (tx id, bucket plan, bucket key, reason index) of the attempt
    retargeted: bool = False

    @property
    def org_id(self) -> str:
        return self.principal.org_id

    @property
    def token_id(self) -> str:
        return self.principal.token_id


_current: ContextVar[Meter | None] = ContextVar("cairn_meter", default=None)


def current() -> Meter | None:
    """The open meter of this request, or None."""
    return _current.get()


def start(principal: Principal, operation: str, kind: str, scope: str = "") -> Token:
    """Open a meter for the request; returns the token ``stop`` takes."""
    if kind not in KINDS:
        raise ValueError(f"meter kind {kind!r} is not one of {KINDS}")
    return _current.set(Meter(principal, operation, kind, scope))


def stop(token: Token) -> None:
    """Close the meter ``start`` opened."""
    _current.reset(token)


@contextmanager
def metering(principal: Principal, operation: str, kind: str, scope: str = "") -> Iterator[Meter]:
    """``start`` ... ``stop`` around a block; yields the meter."""
    tok = start(principal, operation, kind, scope)
    m = current()
    assert m is not None  # start() just set it
    try:
        yield m
    finally:
        stop(tok)


def retarget(operation: str, kind: str, scope: str = "") -> None:
    """Count the open meter's request as ``operation`` of ``kind`` (an MCP tool call counts as its
    REST route); only the first retarget of a request applies."""
    m = current()
    if m is not None and not m.retargeted:
        m.operation, m.kind, m.retargeted = operation, kind, True
        if scope:
            m.scope = scope


def note(scope: str | None = None, **counts: int) -> None:
    """Add ``counts`` (``recall=1``, ``inj_chars=n``, ``x_in=n``, ``bytes_rules=delta``...) to the
    open meter, under ``scope`` (default: the request's). Inside a transaction attempt they commit
    with it; outside, with the request's read update or settle. No meter: nothing."""
    add(counts, scope)


def add(counts: Mapping[str, int], scope: str | None = None) -> None:
    """``note`` with the counter names in a mapping."""
    m = current()
    if m is None:
        return
    target = m.attempt if m.in_tx else m.outside
    for name, n in counts.items():
        if n:
            target[(m.scope if scope is None else scope, name)] += int(n)
            if not m.in_tx:
                m.noted[name] += int(n)


def clear_noted() -> None:
    """Forget what the open meter noted outside transactions (an answer replaced by another)."""
    m = current()
    if m is not None:
        m.outside.clear()
        m.noted.clear()


def note_lane(lane: int, lanes: int) -> None:
    """The write lane a transaction attempt touches first (its counter shard), of ``lanes``."""
    m = current()
    if m is not None and m.in_tx and m.lane is None:
        m.lane, m.lanes = lane, lanes


def set_scope(scope: str) -> None:
    """Count the open meter's request under ``scope`` (a bank the body names, not the path)."""
    m = current()
    if m is not None:
        m.scope = scope


def failed() -> None:
    """The request failed (an MCP tool call answered an error): ``finish`` counts nothing more."""
    m = current()
    if m is not None:
        m.failed = True


def replayed() -> None:
    """An idempotent replay answered the request: it counts nothing."""
    m = current()
    if m is not None:
        m.replayed = True


def set_cost(cost: int) -> None:
    """Bucket tokens the request spends (an ``as_of`` recall: ``Limits.as_of_cost``)."""
    m = current()
    if m is not None:
        m.cost = max(1, cost)


# --- write transactions --------------------------------------------------------------------

def _now_us() -> int:
    return clock.now_ms() * 1000


def _expires(days: int | None = None) -> int:
    return clock.now_ms() // 1000 + (days if days is not None else get_settings().usage_retention_days) * 86400


def _hint(key: tuple[str, str]) -> int | None:
    with _hints_lock:
        return _hints.get(key)


def _set_hint(key: tuple[str, str], tat: int | None) -> None:
    with _hints_lock:
        if tat is None:
            _hints.pop(key, None)
        else:
            _hints[key] = tat


def _write_counts(m: Meter) -> Counter:
    counts = Counter(m.attempt)
    if not m.counted:
        counts[(m.scope, f"req_{m.operation}")] += 1
        counts.update(m.outside)
    return counts


def _begin() -> None:
    m = current()
    if m is not None:
        m.in_tx += 1
        m.attempt.clear()
        m.lane, m.staged = None, None


def _stage(tx: TransactWrite) -> None:
    """Stage the meter's counters (and the first transaction's bucket spend) into ``tx``."""
    m = current()
    if m is None or m.kind not in ("write", "exempt") or m.replayed or m.staged is not None:
        return
    counts = _write_counts(m)
    if not counts:
        return
    shard = m.lane if m.lane is not None else secrets.randbelow(get_settings().usage_shards)
    hour = keys.hour_of(clock.now_ms())
    tx.update(UsageModel(keys.partition(m.org_id), keys.write_sk(hour, m.token_id, shard)),
              actions=[Path([keys.counter(s, n)]).add(v) for (s, n), v in sorted(counts.items())]
              + [UsageModel.expires_at.set(_expires())])
    m.staged = (id(tx), None, None, -1)
    if m.kind == "write" and not m.spent:
        m.staged = _stage_bucket(tx, m)


def _stage_bucket(tx: TransactWrite, m: Meter) -> Any:
    """Stage the spend of the token's write bucket shard of the attempt's lane (conditional; the
    old item comes back on a failed condition); returns what ``_cancelled`` needs."""
    lim = limits.effective(m.org_id)
    k = min(keys.BUCKET_SHARDS, m.lanes) if m.lane is not None else 1
    r = bucket.rate(lim.requests_per_minute, lim.burst, k)
    if r is None:
        return (id(tx), None, None, -1)
    key = keys.bucket_key(m.org_id, m.token_id, (m.lane or 0) % k)
    # slack of one burst: concurrent writes of the token nearly always take the commutative form
    plan = bucket.choose(_hint(key), _now_us(), r, m.cost, slack_us=r.cap_us)
    index = len(tx._condition_check_items) + len(tx._delete_items) + len(tx._put_items) + len(tx._update_items)
    tat = Path(["tat"])
    act: Action = tat.add(plan.add) if plan.form == "busy" else tat.set(plan.set_to)
    cond = tat.between(plan.lo, plan.hi) if plan.form == "busy" else tat.does_not_exist() | (tat < plan.lo)
    tx.update(UsageModel(*key), actions=[act, UsageModel.expires_at.set(_expires(2))], condition=cond,
              return_values="ALL_OLD")
    return (id(tx), (plan, r), key, index)


def _end(tx: TransactWrite, committed: bool) -> None:
    m = current()
    if m is None:
        return
    m.in_tx = max(0, m.in_tx - 1)
    if committed and m.staged is not None and m.staged[0] == id(tx):
        m.counted = True
        m.outside.clear()
        _, plan, key, _ = m.staged
        if plan is not None:
            m.spent = True
            p, _r = plan
            hint = _hint(key)
            _set_hint(key, hint + p.add if p.form == "busy" and hint is not None else p.set_to)
    if committed:
        for (_scope, name), n in m.attempt.items():
            m.noted[name] += n
        m.attempt.clear()
    m.staged = None if committed else m.staged


def _cancelled(exc: Any) -> None:
    """A cancelled transaction: a bucket that denies raises 429 (never retried); a wrong guess of
    the bucket's form flips this container's hint, and the normal retry follows."""
    m = current()
    if m is None or m.staged is None or m.staged[1] is None:
        return
    _, (plan, r), key, index = m.staged
    reasons = list(exc.cancellation_reasons or [])
    reason = reasons[index] if 0 <= index < len(reasons) else None
    if reason is None or reason.code != "ConditionalCheckFailed":
        return
    old = (reason.raw_item or {}).get("tat", {}).get("N")
    old_tat = int(old) if old is not None else None
    v = bucket.verdict(old_tat, plan)
    if v.deny:
        _set_hint(key, old_tat)
        raise _limited(m, r, v.retry_after_s, "writes")
    _set_hint(key, old_tat if old_tat is not None and old_tat >= plan.lo else None)


def _limited(m: Meter, r: bucket.Rate, retry_after_s: int, what: str) -> RateLimited:
    lim = limits.effective(m.org_id)
    metrics.emit("usage", {"RateLimited": 1}, {"operation": m.operation, "org": m.org_id})
    return RateLimited(f"This token is over its rate limit of {lim.requests_per_minute} requests per minute "
                       f"({what}); retry after {retry_after_s} s.", retry_after_s=retry_after_s,
                       details={"limit": "requests_per_minute", "max": lim.requests_per_minute,
                                "burst": lim.burst, "retry_after_s": retry_after_s})


def settle() -> None:
    """Count (and, for ``write``, rate limit) the open meter's request now, in a transaction of its
    own, unless a transaction already did: for writes whose effect is not a transaction (a rule's
    file, a presigned upload), called before the effect so a 429 changes nothing. 429
    ``rate_limited`` over the limit."""
    m = current()
    if m is None or m.counted or m.replayed or m.kind not in ("write", "exempt"):
        return
    def attempt(tx: TransactWrite) -> None:
        _stage(tx)

    txn.run_transaction(attempt)


# --- reads ---------------------------------------------------------------------------------

def _read_update(m: Meter, counts: Counter, plan: bucket.Plan | None) -> Mapping[str, Any]:
    names = {"#e": "expires_at"}
    values: dict[str, Any] = {":e": {"N": str(_expires())}}
    sets, adds, cond = ["#e = :e"], [], None
    for i, ((scope, name), n) in enumerate(sorted(counts.items())):
        names[f"#c{i}"] = keys.counter(scope, name)
        values[f":c{i}"] = {"N": str(n)}
        adds.append(f"#c{i} :c{i}")
    if plan is not None:
        names["#t"] = "tat"
        if plan.form == "busy":
            adds.append("#t :add")
            values.update({":add": {"N": str(plan.add)}, ":lo": {"N": str(plan.lo)}, ":hi": {"N": str(plan.hi)}})
            cond = "#t BETWEEN :lo AND :hi"
        else:
            sets.append("#t = :set")
            values.update({":set": {"N": str(plan.set_to)}, ":now": {"N": str(plan.now_us)}})
            cond = "attribute_not_exists(#t) OR #t < :now"
    tables.bind()
    hour = keys.hour_of(plan.now_us // 1000 if plan is not None else clock.now_ms())
    kw: dict[str, Any] = dict(
        TableName=UsageModel.Meta.table_name,
        Key={"pk": {"S": keys.partition(m.org_id)}, "sk": {"S": keys.read_sk(hour, m.token_id)}},
        UpdateExpression="SET " + ", ".join(sets) + (" ADD " + ", ".join(adds) if adds else ""),
        ExpressionAttributeNames=names, ExpressionAttributeValues=values, ReturnValues="UPDATED_NEW")
    if cond is not None:
        kw.update(ConditionExpression=cond, ReturnValuesOnConditionCheckFailure="ALL_OLD")
    return kw


def _client() -> Any:
    tables.bind()
    return UsageModel._get_connection().connection.client


def _read_counts(m: Meter) -> Counter:
    counts = Counter(m.outside)
    counts[(m.scope, f"req_{m.operation}")] += 1
    return counts


@timing.phase("usage")
def spend_read(*, deny: bool = True) -> bucket.Verdict | None:
    """Spend the open read meter's bucket tokens and write its counters: one conditional
    ``UpdateItem`` (a second one only when another container moved the bucket, or at a new hour).
    Over the limit, nothing is written: with ``deny``, 429 ``rate_limited``; without, the deny
    ``Verdict`` is returned (the per-turn hook then answers rules only and calls ``count_read``).
    A failure of the write itself never fails the request: it emits ``usage_lost``."""
    m = current()
    if m is None or m.counted or m.kind not in ("read", "hook"):
        return None
    r: bucket.Rate | None = None
    try:
        lim = limits.effective(m.org_id)
        r = bucket.rate(lim.requests_per_minute, lim.burst)
        if r is None:
            _client().update_item(**_read_update(m, _read_counts(m), None))
        else:
            v = _spend(m, r)
            if v is not None:
                if deny:
                    raise _limited(m, r, v.retry_after_s, "reads")
                return v
    except RateLimited:
        raise
    except Exception as exc:  # noqa: BLE001 - counting must never fail the answer it counts
        _lost(m, exc)
    m.counted = m.spent = True
    return None


@timing.phase("usage")
def count_read() -> None:
    """Add the open read meter's counters without spending (a request answered over its limit,
    such as the per-turn hook's rules-only answer); a failure emits ``usage_lost``."""
    m = current()
    if m is None or m.counted:
        return
    try:
        _client().update_item(**_read_update(m, _read_counts(m), None))
    except Exception as exc:  # noqa: BLE001 - counting must never fail the answer it counts
        _lost(m, exc)
    m.counted = True


def _lost(m: Meter, exc: Exception) -> None:
    metrics.emit("usage", {"UsageLost": 1}, {"operation": m.operation, "org": m.org_id, "error": type(exc).__name__})


def _spend(m: Meter, r: bucket.Rate) -> bucket.Verdict | None:
    """The read bucket's conditional update(s): None when spent, the deny ``Verdict`` otherwise."""
    counts = _read_counts(m)
    key = (keys.partition(m.org_id), f"{m.token_id}#r")
    now = _now_us()
    hint, form, carry = _hint(key), None, None
    for _ in range(3):
        plan = bucket.choose(hint, now, r, m.cost, form)
        if carry is not None:
            plan = replace(plan, set_to=carry + plan.add)
        try:
            got = _client().update_item(**_read_update(m, counts, plan))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            old = exc.response.get("Item", {}).get("tat", {}).get("N")
            old_tat = int(old) if old is not None else None
            if old_tat is None and carry is None and hint is not None and hint >= now:
                old_tat = carry = hint  # a new hour's item: this container's bucket carries over
            v = bucket.verdict(old_tat, bucket.choose(old_tat, now, r, m.cost, "busy"))
            if v.deny:
                _set_hint(key, old_tat)
                return v
            hint = old_tat
            form = "idle" if carry is not None or old_tat is None or old_tat < now else "busy"
            continue
        tat = got.get("Attributes", {}).get("tat", {}).get("N")
        _set_hint(key, int(tat) if tat is not None else None)
        return None
    raise RuntimeError("the read bucket did not settle in 3 updates")


def finish() -> None:
    """After the view answered: count the open meter's request as its kind says (``spend_read`` for
    reads, ``settle`` for writes no transaction counted) and emit its ``usage`` metric line."""
    m = current()
    if m is None or m.failed or m.kind == "none":
        return
    if m.kind in ("read", "hook"):
        spend_read(deny=m.kind == "read")
    elif not m.replayed:
        settle()
    emit(m)


def emit(m: Meter) -> None:
    """The request's ``usage`` EMF line: ``Requests`` and the counters it noted."""
    values: Counter = Counter({"Requests": 1})
    values.update(m.noted)
    metrics.emit("usage", values, {"operation": m.operation, "org": m.org_id, "kind": m.kind})


def install() -> None:
    """Register the write-transaction hooks (idempotent; done on import)."""
    txn.on_attempt(_begin)
    txn.before_commit(_stage)
    txn.after_attempt(_end)
    txn.on_cancel(_cancelled)


install()
