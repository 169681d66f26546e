"""Extraction's model use: tokens and cost counted per org and UTC day, the daily token quota, and
the pointers to sessions whose jobs wait for the next day.

Usage-table items (counters are top-level number attributes, added with ``ADD``):

- ``u#<org>`` / ``<yyyymmddhh>#<token_id>#x``: the counters ``<bank>|x_jobs`` (model calls),
  ``<bank>|x_in`` and ``<bank>|x_out`` (the model's input and output tokens, from its own
  response), ``<bank>|x_nusd`` (their cost in nano-USD at ``Settings.model_prices``), per UTC hour,
  bank and the token that sent the turn, in the usage report's key scheme (``usage.keys``);
- ``q#<org>`` / ``x#<yyyymmdd>``: ``tokens`` (input + output) of the org's UTC day, what the quota
  ``extraction_tokens_per_day`` is checked against;
- ``defer`` / ``<yyyymmdd>#<org>#<session_key>``: a session with jobs parked until that UTC day
  (``chalicelib.extraction.job`` parks them; its ``resume_deferred`` runs them again).

Days and hours come from ``clock.now_ms()`` (UTC).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pynamodb.expressions.operand import Path
from pynamodb.transactions import TransactWrite

from .. import clock
from ..settings import get_settings, parse_prices
from ..storage.tables import UsageModel, bind, connection
from . import keys, limits

QUOTA_DAYS = 8  # a day's token total is needed only while that day is being checked
DEFER_PK = "defer"


def day(ms: int | None = None) -> str:
    """``yyyymmdd`` of the UTC day of ``ms`` (default now)."""
    return dt.datetime.fromtimestamp((clock.now_ms() if ms is None else ms) / 1000, dt.UTC).strftime("%Y%m%d")


def next_day(ms: int | None = None) -> str:
    """``yyyymmdd`` of the UTC day after that of ``ms`` (default now)."""
    when = dt.datetime.fromtimestamp((clock.now_ms() if ms is None else ms) / 1000, dt.UTC)
    return (when + dt.timedelta(days=1)).strftime("%Y%m%d")


def cost_nusd(model: str, input_tokens: int, output_tokens: int) -> int:
    """The cost of one call in nano-USD at ``Settings.model_prices`` (USD per million tokens = µUSD
    per token = 1,000 nUSD per token); 0 for a model without a price."""
    price = parse_prices(get_settings().model_prices).get(model)
    if price is None:
        return 0
    return round(input_tokens * price[0] * 1000 + output_tokens * price[1] * 1000)


def _expiry(days: int) -> int:
    return clock.now_ms() // 1000 + days * 86400


def record(org_id: str, bank: str, token_id: str, model: str, input_tokens: int, output_tokens: int) -> int:
    """Count one model call of an extraction job: the hour counters and the day's token total, in
    one transaction (no condition: a count never fails the job). Returns the cost in nUSD."""
    bind()
    now = clock.now_ms()
    nusd = cost_nusd(model, input_tokens, output_tokens)
    counters = {"x_jobs": 1, "x_in": input_tokens, "x_out": output_tokens, "x_nusd": nusd}
    sk = f"{keys.hour_of(now)}#{token_id or 'extraction'}#x"
    with TransactWrite(connection=connection()) as tx:
        tx.update(UsageModel(keys.partition(org_id), sk),
                  actions=[*(Path([keys.counter(bank, k)]).add(v) for k, v in counters.items()),
                           UsageModel.expires_at.set(_expiry(get_settings().usage_retention_days))])
        tx.update(UsageModel(f"q#{org_id}", f"x#{day(now)}"),
                  actions=[Path(["tokens"]).add(input_tokens + output_tokens),
                           UsageModel.expires_at.set(_expiry(QUOTA_DAYS))])
    return nusd


def tokens_today(org_id: str) -> int:
    """The org's extraction model tokens of the current UTC day (one consistent GetItem)."""
    got = limits.raw_client().get_item(TableName=limits.usage_table(), ConsistentRead=True,
                                       Key={"pk": {"S": f"q#{org_id}"}, "sk": {"S": f"x#{day()}"}}).get("Item") or {}
    try:
        return int(got.get("tokens", {}).get("N", "0"))
    except ValueError:
        return 0


def over_quota(org_id: str) -> tuple[bool, int, int]:
    """``(over, used, limit)``: whether the org spent its extraction tokens of the UTC day
    (``limits.effective(org).extraction_tokens_per_day``; 0 = no limit: never over)."""
    top = limits.effective(org_id).extraction_tokens_per_day
    if not top:
        return False, 0, 0
    used = tokens_today(org_id)
    return used >= top, used, top


@dataclass(frozen=True)
class Pointer:
    """A session whose parked jobs may run again from UTC day ``day`` on."""

    day: str
    org_id: str
    session_key: str

    @property
    def sk(self) -> str:
        return f"{self.day}#{self.org_id}#{self.session_key}"


def put_pointer(org_id: str, session_key: str, when: str) -> Pointer:
    """Point at a session with parked jobs, to resume on UTC day ``when``."""
    bind()
    p = Pointer(when, org_id, session_key)
    UsageModel(DEFER_PK, p.sk, expires_at=_expiry(get_settings().usage_retention_days)).save()
    return p


def drop_pointer(p: Pointer) -> None:
    bind()
    UsageModel(DEFER_PK, p.sk).delete()


def _pointers(cond: Any = None) -> Iterator[Pointer]:
    bind()
    for it in UsageModel.query(DEFER_PK, cond, consistent_read=True):
        d, org, key = it.sk.split("#", 2)
        yield Pointer(d, org, key)


def due_pointers() -> list[Pointer]:
    """Every pointer whose day has come (its day <= today, UTC), oldest first."""
    return list(_pointers(UsageModel.sk < next_day()))


def org_pointers(org_id: str) -> list[Pointer]:
    """The org's pointers (a query of the ``defer`` partition, filtered: it holds only sessions
    with parked jobs)."""
    return [p for p in _pointers() if p.org_id == org_id]
