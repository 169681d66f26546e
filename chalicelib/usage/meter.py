"""The request meter: what one request spends of its rate limits, what it counts, and where both
are written.

``start(principal, operation, kind, scope)`` opens a ``Meter`` for the request (a ``ContextVar``,
so code anywhere below the route reports with ``note(name=n, ...)``, and does nothing when no
meter is open: the CLI, scheduled jobs). Limits are checked before the work: the pipeline calls
``admit`` before the view (``api/http.py``; an MCP tool call, after ``retarget`` names what it
runs). ``kind`` decides what that spends and how the request counts:

- ``read``: ``admit`` spends the token's read bucket and the org's bucket (all its tokens
  together): two conditional ``UpdateItem`` calls sent at once (one round trip of wall time), on
  items that hold a bucket and nothing else; a container busy for an org takes a few of the org's
  tokens ahead and spends them without a call (``LEASE_MAX``), so most requests update one bucket.
  Over either limit: 429 ``rate_limited`` (what the token's bucket granted is given back; the
  org's tokens stay with the container); a bucket update that fails: 503 ``backend_unavailable``.
  The view never runs then. After the answer ``finish`` adds the counters with one ``ADD``
  (``count_read``); a failure of that write is swallowed and emits a ``usage_lost`` metric.
- ``hook``: a read that is never denied (the per-turn hook): over a limit, or when a bucket update
  fails, ``admit`` records why (``limited()``) and the hook injects the rules only.
- ``write``: ``admit`` spends the token's write bucket and the org's bucket the same way (a
  write refused there does nothing). Its counters go inside its write transactions
  (``storage.txn`` hooks, ``install``): one ``ADD`` on the token's counter shard of the hour, so
  a cancelled transaction counts nothing; a write request that commits nothing counts in a
  transaction of its own (``settle``), an idempotent replay too (as a request, never its stored
  changes again). Like a read, a write spends whatever its answer: a failed one counts nothing,
  but has spent its tokens.
- ``exempt`` (deletes, forgets, purges): counted the same way, never rate limited.
- ``tool`` (the MCP endpoint): a tool call counts and spends as the operation it runs
  (``retarget``); any other MCP message as a read, after its answer.
- ``none``: not counted (the usage report itself).

Counters: ``req_<operation>`` per request, ``w_<op>`` per stored change (``core.store``), and the
names of ``keys.COUNTERS`` / ``bytes_<kind>`` that code notes; each counter item holds one scope's
(``keys``).
"""

from __future__ import annotations

import contextvars
import secrets
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field, replace
from typing import Any

from botocore.exceptions import ClientError
from pynamodb.expressions.operand import Path
from pynamodb.transactions import TransactWrite

from .. import clock, metrics, timing
from ..auth.principal import Principal
from ..errors import BackendUnavailable, RateLimited
from ..settings import get_settings
from ..storage import tables, txn
from ..storage.tables import UsageModel
from . import bucket, keys, limits

KINDS = ("read", "write", "exempt", "hook", "tool", "none")
LIMITED = RateLimited.code  # why a hook answers rules only: over a limit ...
UNAVAILABLE = BackendUnavailable.code  # ... or its buckets could not be read
BUCKET_TTL_DAYS = 2  # a bucket item outlives two idle days
_hints: dict[tuple[str, str], int] = {}  # last tat seen per bucket item (this container)
_hints_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


@dataclass
class Meter:
    """One request's counting state (see the module). Counts are keyed ``(scope, name)``."""

    principal: Principal
    operation: str
    kind: str
    scope: str = ""
    cost: int = 1
    counted: bool = False  # the request counter is written (a transaction or the read update)
    admitted: bool = False  # ``admit`` ran
    replayed: bool = False  # an idempotent replay answered: its stored changes count nothing
    failed: bool = False
    limited: str | None = None  # a hook's reason to inject the rules only (``LIMITED``, ``UNAVAILABLE``)
    outside: Counter = field(default_factory=Counter)  # noted outside a transaction
    noted: Counter = field(default_factory=Counter)  # everything noted (the metric line)
    attempt: Counter = field(default_factory=Counter)  # noted by the running transaction attempt
    in_tx: int = 0
    lane: int | None = None  # the first write lane the attempt touches (the counter shard)
    lanes: int = 1
    staged: int | None = None  # id of the transaction the attempt's counters are staged in
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
    """Count the open meter's request under ``scope`` (a bank the body names, not the path; or
    ``keys.UNKNOWN`` once the bank it names turns out not to exist)."""
    m = current()
    if m is not None:
        m.scope = scope


def failed() -> None:
    """The request failed (an MCP tool call answered an error): ``finish`` counts nothing more."""
    m = current()
    if m is not None:
        m.failed = True


def replayed() -> None:
    """An idempotent replay answered the request: it counts (and spends) as a request, its stored
    changes not again."""
    m = current()
    if m is not None:
        m.replayed = True


def set_cost(cost: int) -> None:
    """Bucket tokens the request spends (an ``as_of`` recall: ``Limits.as_of_cost``); set before
    ``admit``."""
    m = current()
    if m is not None:
        m.cost = max(1, cost)


def limited() -> str | None:
    """Why the open hook request answers rules only (``LIMITED`` or ``UNAVAILABLE``), else None."""
    m = current()
    return m.limited if m is not None else None


# --- buckets -------------------------------------------------------------------------------

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


def _client() -> Any:
    tables.bind()
    return UsageModel._get_connection().connection.client


def _bucket_update(key: tuple[str, str], plan: bucket.Plan) -> Mapping[str, Any]:
    """The conditional ``UpdateItem`` of ``plan`` on bucket item ``key`` (``bucket``'s two forms)."""
    values: dict[str, Any] = {":e": {"N": str(_expires(BUCKET_TTL_DAYS))}}
    if plan.form == "busy":
        expr, cond = "SET #e = :e ADD #t :add", "#t BETWEEN :lo AND :hi"
        values.update({":add": {"N": str(plan.add)}, ":lo": {"N": str(plan.lo)}, ":hi": {"N": str(plan.hi)}})
    else:
        expr, cond = "SET #t = :set, #e = :e", "attribute_not_exists(#t) OR #t < :now"
        values.update({":set": {"N": str(plan.set_to)}, ":now": {"N": str(plan.now_us)}})
    return dict(TableName=UsageModel.Meta.table_name, Key={"pk": {"S": key[0]}, "sk": {"S": key[1]}},
                UpdateExpression=expr, ConditionExpression=cond,
                ExpressionAttributeNames={"#t": "tat", "#e": "expires_at"}, ExpressionAttributeValues=values,
                ReturnValues="UPDATED_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD")


def _spend(key: tuple[str, str], r: bucket.Rate, cost: int, now: int) -> bucket.Plan | bucket.Verdict:
    """Spend ``cost`` of bucket ``key``: the plan applied, or the deny ``Verdict`` (nothing
    written). One conditional update, a second when this container guessed the bucket's form
    wrong (another container moved it)."""
    hint, form = _hint(key), None
    for _ in range(3):
        plan = bucket.choose(hint, now, r, cost, form)
        try:
            got = _client().update_item(**_bucket_update(key, plan))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            old = exc.response.get("Item", {}).get("tat", {}).get("N")
            old_tat = int(old) if old is not None else None
            v = bucket.verdict(old_tat, bucket.choose(old_tat, now, r, cost, "busy"))
            if v.deny:
                _set_hint(key, old_tat)
                return v
            hint, form = old_tat, "idle" if old_tat is None or old_tat < now else "busy"
            continue
        tat = got.get("Attributes", {}).get("tat", {}).get("N")
        _set_hint(key, int(tat) if tat is not None else None)
        return plan
    raise RuntimeError("a rate-limit bucket did not settle in 3 updates")


def _refund(spends: list[tuple[tuple[str, str], int]]) -> None:
    """Give back bucket spends (``(key, µs)``) of a request another bucket refused; a ``tat`` set
    from the past comes back to ``now``, which is a full bucket. Best effort."""
    for key, add_us in spends:
        try:
            _client().update_item(TableName=UsageModel.Meta.table_name,
                                  Key={"pk": {"S": key[0]}, "sk": {"S": key[1]}}, UpdateExpression="ADD #t :n",
                                  ConditionExpression="attribute_exists(#t)", ExpressionAttributeNames={"#t": "tat"},
                                  ExpressionAttributeValues={":n": {"N": str(-add_us)}})
            hint = _hint(key)
            _set_hint(key, hint - add_us if hint is not None else None)
        except Exception:  # noqa: BLE001 - a refund lost costs the org one token, never the answer
            _set_hint(key, None)
    spends.clear()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cairn-bucket")
        return _pool


Outcome = bucket.Plan | bucket.Verdict | Exception


@dataclass(frozen=True)
class _Bucket:
    key: tuple[str, str]
    rate: bucket.Rate
    limit: str  # the field of ``limits.Limits`` it enforces
    cost: int = 1  # the tokens this request takes from it


def _spend_all(jobs: list[_Bucket], now: int) -> list[Outcome]:
    """Spend every bucket of ``jobs`` at once (the others on worker threads, so two buckets cost
    one round trip of wall time): each one's plan, deny verdict or failure."""

    def one(b: _Bucket) -> Outcome:
        try:
            return _spend(b.key, b.rate, b.cost, now)
        except Exception as exc:  # noqa: BLE001 - reported to the caller, which decides
            return exc

    rest = [_executor().submit(contextvars.copy_context().run, one, b) for b in jobs[1:]]
    return [one(jobs[0]), *(f.result() for f in rest)] if jobs else []


# --- the org's bucket, taken ahead ---------------------------------------------------------
# A container busy for one org takes up to LEASE_MAX of the org's tokens in one update and spends
# them locally for LEASE_US, so most requests update only their token's bucket. Taken tokens are
# gone from the org's bucket (never more pass than it holds); those a container leaves unspent
# lapse. The size follows the container's own pace: one request a second takes one at a time.

LEASE_US = 1_000_000
LEASE_MAX = 10


@dataclass
class _Lease:
    until_us: int = 0
    left: int = 0
    second: int = -1  # the second ``seen`` counts
    seen: int = 0  # this container's requests for the org in that second
    pace: int = 0  # ... in the second before


_leases: dict[str, _Lease] = {}
_leases_lock = threading.Lock()


def _lease_take(org_id: str, cost: int, now: int) -> bool:
    """Spend ``cost`` of the org's tokens this container holds; False when it holds too few."""
    sec = now // bucket.US
    with _leases_lock:
        lease = _leases.setdefault(org_id, _Lease())
        if sec != lease.second:
            lease.pace = lease.seen if sec == lease.second + 1 else 0
            lease.second, lease.seen = sec, 0
        lease.seen += 1
        if lease.until_us >= now and lease.left >= cost:
            lease.left -= cost
            return True
        return False


def _lease_size(org_id: str, cost: int, burst: int) -> int:
    """How many org tokens to take ahead: this container's pace, at most ``LEASE_MAX`` and a tenth
    of the org's burst, at least ``cost``."""
    with _leases_lock:
        pace = _leases[org_id].pace if org_id in _leases else 0
    return max(cost, min(LEASE_MAX, burst // 10, pace))


def forget_leases() -> None:
    """Drop every org token this container took ahead (a test's fresh backend)."""
    with _leases_lock:
        _leases.clear()


def _lease_keep(org_id: str, left: int, now: int) -> None:
    with _leases_lock:
        lease = _leases.setdefault(org_id, _Lease())
        lease.until_us, lease.left = now + LEASE_US, max(0, left)


def _lease_return(org_id: str, cost: int) -> None:
    """Give back to this container's lease what a request another bucket refused took from it."""
    with _leases_lock:
        if org_id in _leases:
            _leases[org_id].left += cost


def _own_bucket(m: Meter, lim: limits.Limits) -> _Bucket | None:
    """The token's read (or write) bucket; None when its limit is 0."""
    r = bucket.rate(lim.requests_per_minute, lim.burst)
    key = keys.write_bucket_key(m.org_id, m.token_id) if m.kind == "write" else keys.read_bucket_key(
        m.org_id, m.token_id)
    return _Bucket(key, r, "requests_per_minute", m.cost) if r is not None else None


def _org_spend(m: Meter, lim: limits.Limits, now: int) -> tuple[_Bucket | None, bool]:
    """``(the org bucket's job, or None; whether the request took its tokens from a lease)``."""
    r = bucket.rate(lim.org_requests_per_minute, lim.org_burst)
    if r is None:
        return None, False
    if _lease_take(m.org_id, m.cost, now):
        return None, True
    size = _lease_size(m.org_id, m.cost, lim.org_burst)
    return _Bucket(keys.org_bucket_key(m.org_id), r, "org_requests_per_minute", size), False


def _settled(m: Meter, jobs: list[_Bucket], outcomes: list[Outcome], now: int) -> list[Outcome]:
    """``outcomes`` with an org bucket that refused a lease retried for the request's own cost (it
    may hold fewer tokens than the lease, enough for this request), and a granted lease kept."""
    out = list(outcomes)
    for i, (b, o) in enumerate(zip(jobs, outcomes, strict=True)):
        if b.limit != "org_requests_per_minute":
            continue
        if isinstance(o, bucket.Verdict) and b.cost > m.cost:
            b = replace(b, cost=m.cost)
            out[i] = o = _spend_all([b], now)[0]
        if isinstance(o, bucket.Plan):
            _lease_keep(m.org_id, b.cost - m.cost, now)
    return out


@timing.phase("usage")
def admit() -> None:
    """Spend the open meter's buckets before the request's work (see the module). Reads and
    writes: 429 ``rate_limited`` over a limit, 503 ``backend_unavailable`` when a bucket cannot be
    updated; nothing is written then. A hook is never refused: ``limited()`` says why it answers
    rules only. Once per request; nothing for ``exempt``, ``tool`` and ``none``."""
    m = current()
    if m is None or m.admitted or m.kind not in ("read", "hook", "write"):
        return
    m.admitted = True
    lim, now = limits.effective(m.org_id), _now_us()
    own = _own_bucket(m, lim)
    org, leased = _org_spend(m, lim, now)
    jobs = [b for b in (own, org) if b is not None]
    outcomes = _settled(m, jobs, _spend_all(jobs, now), now)
    denied = [(b, o) for b, o in zip(jobs, outcomes, strict=True) if isinstance(o, bucket.Verdict)]
    broken = [o for o in outcomes if isinstance(o, Exception)]
    if not denied and not broken:
        return
    _refund([(b.key, o.add) for b, o in zip(jobs, outcomes, strict=True)
             if isinstance(o, bucket.Plan) and b.limit == "requests_per_minute"])
    if leased or (org is not None and isinstance(outcomes[-1], bucket.Plan)):  # the org's job is the last
        _lease_return(m.org_id, m.cost)  # the org's tokens stay with this container for the next request
    if broken:
        _lost(m, broken[0])
    if m.kind == "hook":
        m.limited = LIMITED if denied else UNAVAILABLE
        return
    if denied:
        b, v = denied[0]
        raise _limited(m, b.limit, v.retry_after_s, "writes" if m.kind == "write" else "reads")
    raise BackendUnavailable("The rate limits cannot be checked right now; retry shortly.")


def _limited(m: Meter, limit: str, retry_after_s: int, what: str) -> RateLimited:
    lim = limits.effective(m.org_id)
    metrics.emit("usage", {"RateLimited": 1}, {"operation": m.operation, "org": m.org_id})
    if limit == "org_requests_per_minute":
        top, burst = lim.org_requests_per_minute, lim.org_burst
        who = "This org (all its tokens together)"
    else:
        top, burst, who = lim.requests_per_minute, lim.burst, "This token"
    return RateLimited(f"{who} is over its rate limit of {top} requests per minute ({what}); retry after "
                       f"{retry_after_s} s.", retry_after_s=retry_after_s,
                       details={"limit": limit, "max": top, "burst": burst, "retry_after_s": retry_after_s})


# --- write transactions --------------------------------------------------------------------

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
    """Stage the meter's counters into ``tx`` (the request's own in its first transaction)."""
    m = current()
    if m is None or m.kind not in ("write", "exempt") or m.staged is not None:
        return
    counts = _write_counts(m)
    if not counts:
        return
    shard = m.lane if m.lane is not None else secrets.randbelow(get_settings().usage_shards)
    hour = keys.hour_of(clock.now_ms())
    # the item of the scope the transaction writes: one bank per transaction, plus the org's requests
    scope = m.scope or next((s for s, _n in sorted(counts) if s), "")
    tx.update(UsageModel(keys.partition(m.org_id), keys.write_sk(hour, m.token_id, shard, scope)),
              actions=[Path([keys.counter(s, n)]).add(v) for (s, n), v in sorted(counts.items())]
              + [UsageModel.expires_at.set(_expires())])
    m.staged = id(tx)


def _end(tx: TransactWrite, committed: bool) -> None:
    m = current()
    if m is None:
        return
    m.in_tx = max(0, m.in_tx - 1)
    if committed and m.staged == id(tx):
        m.counted = True
        m.outside.clear()
    if committed:
        for (_scope, name), n in m.attempt.items():
            m.noted[name] += n
        m.attempt.clear()
    m.staged = None if committed else m.staged


def settle() -> None:
    """Count the open meter's request now, in a transaction of its own, unless a transaction
    already did: for writes whose effect is not a transaction (a rule's file, a presigned upload)
    and requests that committed nothing (an idempotent replay)."""
    m = current()
    if m is None or m.counted or m.kind not in ("write", "exempt"):
        return

    def attempt(tx: TransactWrite) -> None:
        _stage(tx)

    txn.run_transaction(attempt)


# --- reads ---------------------------------------------------------------------------------

def _read_counts(m: Meter) -> Counter:
    counts = Counter(m.outside)
    counts[(m.scope, f"req_{m.operation}")] += 1
    return counts


def _count_update(m: Meter, scope: str, counts: Mapping[str, int]) -> Mapping[str, Any]:
    """The unconditional ``ADD`` of ``counts`` (name -> n) on the token's read item of ``scope``."""
    names = {"#e": "expires_at"}
    values: dict[str, Any] = {":e": {"N": str(_expires())}}
    adds = []
    for i, (name, n) in enumerate(sorted(counts.items())):
        names[f"#c{i}"] = keys.counter(scope, name)
        values[f":c{i}"] = {"N": str(n)}
        adds.append(f"#c{i} :c{i}")
    sk = keys.read_sk(keys.hour_of(clock.now_ms()), m.token_id, scope)
    return dict(TableName=UsageModel.Meta.table_name, Key={"pk": {"S": keys.partition(m.org_id)}, "sk": {"S": sk}},
                UpdateExpression="SET #e = :e ADD " + ", ".join(adds), ExpressionAttributeNames=names,
                ExpressionAttributeValues=values)


@timing.phase("usage")
def count_read() -> None:
    """Add the open read meter's counters: one ``ADD`` per scope it noted (one, nearly always); a
    failure emits ``usage_lost`` and never fails the answer it counts."""
    m = current()
    if m is None or m.counted:
        return
    by_scope: dict[str, dict[str, int]] = {}
    for (scope, name), n in _read_counts(m).items():
        by_scope.setdefault(scope, {})[name] = n
    try:
        for scope, counts in sorted(by_scope.items()):
            _client().update_item(**_count_update(m, scope, counts))
    except Exception as exc:  # noqa: BLE001 - counting must never fail the answer it counts
        _lost(m, exc)
    m.counted = True


def _lost(m: Meter, exc: Exception) -> None:
    metrics.emit("usage", {"UsageLost": 1}, {"operation": m.operation, "org": m.org_id, "error": type(exc).__name__})


def finish() -> None:
    """After the view answered: count the open meter's request as its kind says (``count_read``
    for reads, ``settle`` for writes no transaction counted) and emit its ``usage`` metric line.
    An MCP message that ran no tool is a read, admitted here (its answer is small)."""
    m = current()
    if m is None or m.failed or m.kind == "none":
        return
    if m.kind == "tool":
        m.kind = "read"
        admit()
    if m.kind in ("read", "hook"):
        count_read()
    else:
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


install()
