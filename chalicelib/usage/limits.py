"""The limits in force for an org: the ``Settings`` defaults, overridden per org.

``effective(org_id)`` is the one place every check reads a limit from. A value of 0 means no limit.

Overrides live in one usage-table item, ``q#<org>`` / ``limits``: ``op_<field>`` (the operator's
value, set only through the CLI ``cairn limits set``: the only way to raise a limit) and
``org_<field>`` (the org admin's own value, set through ``PUT /v1/usage/limits``, which may only
lower). The effective value of a field is the tighter of the org value and the operator's (or,
without one, the default). Every value is at most ``LIMIT_MAX`` (10^15, below 2^53). The org-wide
rate (``org_requests_per_minute``, ``org_burst``: all the org's tokens together, so minting more
tokens never multiplies what an org may send) is, unless set, ``ORG_FACTOR`` times one token's.
Each container caches the item for ``CACHE_S`` seconds, so a change reaches other containers
within a minute; the writer's own container sees it at once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, fields, replace
from typing import Any

from ..errors import BadRequest
from ..settings import LIMIT_MAX, Settings, get_settings

CACHE_S = 60.0
LIMITS_SK = "limits"
ORG_FACTOR = 10  # the org-wide rate and burst, unless set: this many tokens' worth


@dataclass(frozen=True)
class Limits:
    """Limits of one org. Rates are per token, and per org over all its tokens (``org_*``); quotas
    per bank (memories), per org (banks) or per org and UTC day (extraction model tokens). 0 = no
    limit."""

    requests_per_minute: int
    burst: int
    as_of_cost: int
    memories_per_bank: int
    banks_per_org: int
    extraction_tokens_per_day: int
    org_requests_per_minute: int
    org_burst: int


FIELDS = tuple(f.name for f in fields(Limits))
# what an org admin may set: a lower value of these bounds the org tighter. ``as_of_cost`` is a
# price, not a bound (a lower price would loosen the rate limit), so only the operator sets it.
ORG_FIELDS = ("requests_per_minute", "burst", "memories_per_bank", "banks_per_org", "extraction_tokens_per_day",
              "org_requests_per_minute", "org_burst")
# 0 means "no limit" for these; ``burst``, ``org_burst`` and ``as_of_cost`` are at least 1
UNBOUNDED_ZERO = ("requests_per_minute", "memories_per_bank", "banks_per_org", "extraction_tokens_per_day",
                  "org_requests_per_minute")
# derived from one token's field when neither the setting nor the operator gives a value
_ORG_OF = {"org_requests_per_minute": "requests_per_minute", "org_burst": "burst"}


def defaults(settings: Settings | None = None) -> Limits:
    """The limits of an org without overrides, from ``Settings`` (``CAIRN_RATE_*``, ``CAIRN_QUOTA_*``)."""
    s = settings or get_settings()
    return _with_org(Limits(
        requests_per_minute=s.rate_requests_per_minute, burst=s.rate_burst, as_of_cost=s.rate_as_of_cost,
        memories_per_bank=s.quota_memories_per_bank, banks_per_org=s.quota_banks_per_org,
        extraction_tokens_per_day=s.quota_extraction_tokens_per_day,
        org_requests_per_minute=-1 if s.rate_org_requests_per_minute is None else s.rate_org_requests_per_minute,
        org_burst=-1 if s.rate_org_burst is None else s.rate_org_burst))


def _with_org(lim: Limits) -> Limits:
    """``lim`` with each org-wide field that is unset (-1) at ``ORG_FACTOR`` times the token's."""
    return replace(lim, **{k: min(LIMIT_MAX, ORG_FACTOR * getattr(lim, token))
                           for k, token in _ORG_OF.items() if getattr(lim, k) < 0})


def _unset_org(lim: Limits, settings: Settings | None = None) -> Limits:
    """``lim`` with the org-wide fields the settings leave unset back at -1 (to derive again)."""
    s = settings or get_settings()
    given = {"org_requests_per_minute": s.rate_org_requests_per_minute, "org_burst": s.rate_org_burst}
    return replace(lim, **{k: -1 for k, v in given.items() if v is None})


@dataclass(frozen=True)
class Overrides:
    """An org's stored overrides: ``operator`` and ``org`` values by field (absent = not set)."""

    operator: dict[str, int]
    org: dict[str, int]


_cache: dict[tuple[str, str], tuple[float, Overrides]] = {}  # (table, org) -> (expiry, overrides)
_lock = threading.Lock()


def _tighter(name: str, a: int, b: int) -> int:
    """The tighter of two values of limit ``name`` (0 = no limit for the unbounded-zero fields)."""
    if name in UNBOUNDED_ZERO:
        if a == 0:
            return b
        if b == 0:
            return a
    return min(a, b)


def ceilings(org_id: str, ov: Overrides | None = None, settings: Settings | None = None) -> Limits:
    """The operator's limits of ``org_id``: its own values, else the defaults. An org admin may not
    go above these."""
    ov = ov if ov is not None else overrides(org_id)
    return _with_org(replace(_unset_org(defaults(settings), settings), **ov.operator))


def combine(base: Limits, ov: Overrides) -> Limits:
    """``base`` (``defaults()``) with the operator's values, tightened by the org's own. An
    org-wide field neither the settings nor the operator set follows the operator's token value
    (``ORG_FACTOR`` times it)."""
    ceil = _with_org(replace(_unset_org(base), **ov.operator))
    return replace(ceil, **{k: _tighter(k, v, getattr(ceil, k)) for k, v in ov.org.items()})


def effective(org_id: str) -> Limits:
    """The limits in force for ``org_id`` (the stored overrides cached ``CACHE_S`` seconds per
    container)."""
    return combine(defaults(), overrides(org_id))


def raw_client() -> Any:
    """The boto3 DynamoDB client of the usage table (raw items: counters are undeclared attributes)."""
    from ..storage.tables import UsageModel, bind  # lazily: the CLI's parser reads FIELDS without the AWS SDK
    bind()
    return UsageModel._get_connection().connection.client


def usage_table() -> str:
    """The usage table's physical name."""
    from ..storage.tables import UsageModel, bind
    bind()
    return str(UsageModel.Meta.table_name)


def _key(org_id: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"q#{org_id}"}, "sk": {"S": LIMITS_SK}}


def _decode(item: dict[str, Any]) -> Overrides:
    op: dict[str, int] = {}
    org: dict[str, int] = {}
    for name in FIELDS:
        for prefix, out in (("op_", op), ("org_", org)):
            raw = item.get(prefix + name, {}).get("N")
            if raw is not None:
                try:
                    value = int(raw)
                except ValueError:
                    continue  # a hand-edited value that is no integer: not an override
                if 0 <= value <= LIMIT_MAX:  # a hand-edited value out of range: not an override either
                    out[name] = value
    return Overrides(op, org)


def overrides(org_id: str, *, fresh: bool = False) -> Overrides:
    """The org's stored overrides (one consistent GetItem, then cached ``CACHE_S`` seconds unless
    ``fresh``)."""
    now = time.monotonic()
    key = (usage_table(), org_id)
    with _lock:
        hit = _cache.get(key)
    if hit is not None and not fresh and hit[0] > now:
        return hit[1]
    got = raw_client().get_item(TableName=usage_table(), Key=_key(org_id), ConsistentRead=True).get("Item") or {}
    ov = _decode(got)
    with _lock:
        _cache[key] = (now + CACHE_S, ov)
    return ov


def forget_cached(org_id: str | None = None) -> None:
    """Drop the cached overrides of ``org_id`` (every org when ``None``)."""
    with _lock:
        for key in [k for k in _cache if org_id is None or k[1] == org_id]:
            del _cache[key]


def _write(org_id: str, prefix: str, values: dict[str, int | None]) -> None:
    sets = {k: v for k, v in values.items() if v is not None}
    removes = [k for k, v in values.items() if v is None]
    parts, names, vals = [], {}, {}
    for i, (k, v) in enumerate(sets.items()):
        names[f"#s{i}"], vals[f":s{i}"] = prefix + k, {"N": str(int(v))}
        parts.append(f"#s{i} = :s{i}")
    expr = ("SET " + ", ".join(parts)) if parts else ""
    if removes:
        for i, k in enumerate(removes):
            names[f"#r{i}"] = prefix + k
        expr += (" " if expr else "") + "REMOVE " + ", ".join(f"#r{i}" for i in range(len(removes)))
    if not expr:
        return
    kw: dict[str, Any] = {"ExpressionAttributeNames": names}
    if vals:
        kw["ExpressionAttributeValues"] = vals
    raw_client().update_item(TableName=usage_table(), Key=_key(org_id), UpdateExpression=expr, **kw)
    forget_cached(org_id)


def set_operator(org_id: str, values: dict[str, int | None]) -> Limits:
    """Set the operator's values of ``org_id`` (``None`` drops one: back to the default); may
    raise or lower any limit. Returns the limits then in force. Raises ``ValueError`` for an
    unknown field or a value out of range (negative; ``burst``/``org_burst``/``as_of_cost`` below
    1; any above ``LIMIT_MAX``), before anything is written."""
    for name, v in values.items():
        if name not in FIELDS:
            raise ValueError(f"unknown limit {name!r}; one of {list(FIELDS)}")
        low = 0 if name in UNBOUNDED_ZERO else 1
        if v is not None and not low <= v <= LIMIT_MAX:
            raise ValueError(f"{name} must be between {low} and {LIMIT_MAX}")
    _write(org_id, "op_", values)
    return combine(defaults(), overrides(org_id, fresh=True))


def set_org(org_id: str, values: dict[str, int | None]) -> Limits:
    """Set the org admin's own values (``None`` drops one: back to the operator's limit): each
    at least 1 and at most the operator's limit (``ceilings``). Returns the limits then in force.
    Raises 400 ``validation_error`` naming the field (``details: {field, max}``) for a value above
    the operator's limit (nothing written)."""
    ov = overrides(org_id, fresh=True)
    ceil = ceilings(org_id, ov)
    for name, v in values.items():
        if name not in ORG_FIELDS:
            raise BadRequest(f"{name} cannot be set by an org admin.", details={"field": name})
        top = getattr(ceil, name)
        if v is not None and v < 1:
            raise BadRequest(f"{name} must be at least 1.", details={"field": name, "min": 1})
        if v is not None and top != 0 and v > top:
            raise BadRequest(f"{name} may only be lowered: {v} is above the operator's limit {top}; "
                             "ask the operator to raise it.", details={"field": name, "max": top})
    _write(org_id, "org_", values)
    return combine(defaults(), overrides(org_id, fresh=True))
