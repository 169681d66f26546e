"""Usage reports: the counters of an org (or every org) over a time range, as totals and a series
by hour or day, grouped by bank, token or operation. The route ``GET /v1/usage`` and the operator
CLI's ``usage`` command both use ``report``.

The read is one consistent key query of the org's counter partition between the range's first and
last hours (``keys``), so a report is exact at any moment.
"""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from ..storage.tables import UsageModel, bind
from . import keys

Granularity = Literal["hour", "day"]
GroupBy = Literal["bank", "token", "operation"]
FIELDS = ("requests", "saved", "reinforced", "recalls", "previews", "hooks", "contexts", "injected_chars",
          "injected_tokens", "extraction_jobs", "model_input_tokens", "model_output_tokens", "model_cost_usd",
          "stored_bytes_delta", "queries_embedded", "texts_embedded")
_PLAIN = {"w_create": "saved", "w_resurrect": "saved", "w_revive": "saved", "w_reinforce": "reinforced",
          "recall": "recalls", "preview": "previews", "hook": "hooks", "context": "contexts",
          "inj_chars": "injected_chars", "inj_tok": "injected_tokens", "x_jobs": "extraction_jobs",
          "x_in": "model_input_tokens", "x_out": "model_output_tokens", "emb_q": "queries_embedded",
          "emb_t": "texts_embedded"}
MAX_RANGE_MS = 93 * 86_400_000
HOUR_MS, DAY_MS = 3_600_000, 86_400_000


@dataclass(frozen=True)
class Count:
    """One counter value: ``org``, UTC ``hour`` (``yyyymmddhh``), ``token``, ``scope``, ``name``, ``n``."""

    org: str
    hour: str
    token: str
    scope: str
    name: str
    n: int


@dataclass
class Totals:
    """Summed counters: ``values`` by report field (``FIELDS``; cost in nano-USD until shown) and
    ``operations`` (requests by operation)."""

    values: Counter = field(default_factory=Counter)
    operations: Counter = field(default_factory=Counter)

    def add(self, c: Count) -> None:
        """Add one counter value."""
        if c.name.startswith("req_"):
            self.values["requests"] += c.n
            self.operations[c.name[4:]] += c.n
        elif c.name == "x_nusd":
            self.values["model_cost_usd"] += c.n
        elif c.name.startswith(keys.BYTES_PREFIX):
            self.values["stored_bytes_delta"] += c.n
        elif c.name in _PLAIN:
            self.values[_PLAIN[c.name]] += c.n

    def shown(self) -> dict[str, float | int | dict[str, int]]:
        """``{<field>: n, ..., operations: {op: n}}`` (``model_cost_usd`` in USD)."""
        out: dict[str, float | int | dict[str, int]] = {
            f: (self.values[f] / 1e9 if f == "model_cost_usd" else int(self.values[f])) for f in FIELDS}
        out["operations"] = dict(sorted(self.operations.items()))
        return out


def counts(org_id: str | None, from_ms: int, to_ms: int) -> Iterator[Count]:
    """Every counter value of ``org_id`` (None: every org, a scan) in the hours that overlap
    ``[from_ms, to_ms)``."""
    bind()
    lo, hi = keys.hour_of(from_ms), keys.hour_of(max(from_ms, to_ms - 1))
    client = UsageModel._get_connection().connection.client
    table = UsageModel.Meta.table_name
    if org_id is not None:
        pages = client.get_paginator("query").paginate(
            TableName=table, ConsistentRead=True, KeyConditionExpression="pk = :p AND sk BETWEEN :lo AND :hi",
            ExpressionAttributeValues={":p": {"S": keys.partition(org_id)}, ":lo": {"S": lo}, ":hi": {"S": hi + "~"}})
    else:
        pages = client.get_paginator("scan").paginate(
            TableName=table, ConsistentRead=True, FilterExpression="begins_with(pk, :u)",
            ExpressionAttributeValues={":u": {"S": "u#"}})
    for page in pages:
        for item in page.get("Items", []):
            yield from _item_counts(item, lo, hi)


def _item_counts(item: dict, lo: str, hi: str) -> Iterator[Count]:
    hour, token = keys.split_sk(item["sk"]["S"])
    if not lo <= hour <= hi:
        return
    org = item["pk"]["S"][2:]
    for attr, value in item.items():
        if attr in keys.NON_COUNTERS or keys.SEP not in attr or "N" not in value:
            continue
        scope, name = keys.split_counter(attr)
        yield Count(org, hour, token, scope, name, int(value["N"]))


@dataclass
class Group:
    """One group of a report: its ``key``, ``totals`` and ``series`` (period start ms -> totals)."""

    key: str
    totals: Totals = field(default_factory=Totals)
    series: dict[int, Totals] = field(default_factory=lambda: defaultdict(Totals))


@dataclass
class Report:
    """A usage report (see the module)."""

    org: str | None
    from_ms: int
    to_ms: int
    granularity: Granularity
    group_by: GroupBy
    totals: Totals
    groups: list[Group]

    def as_json(self) -> dict[str, object]:
        """``{org, from, to, granularity, group_by, totals, groups: [{key, totals, series: [{start,
        ...totals}]}]}``."""
        return {"org": self.org, "from": self.from_ms, "to": self.to_ms, "granularity": self.granularity,
                "group_by": self.group_by, "totals": self.totals.shown(),
                "groups": [{"key": g.key, "totals": g.totals.shown(),
                            "series": [{"start": start, **t.shown()} for start, t in sorted(g.series.items())]}
                           for g in self.groups]}

    def rows(self) -> list[list[object]]:
        """One row per (period start, group): ``[start, group, <FIELDS>...]``."""
        out: list[list[object]] = []
        for g in self.groups:
            for start, t in sorted(g.series.items()):
                shown = t.shown()
                out.append([start, g.key, *(shown[f] for f in FIELDS)])
        return sorted(out, key=lambda r: (r[0], str(r[1])))

    def as_csv(self) -> str:
        """The rows as CSV with the header ``start,group,<FIELDS>``; group keys are never formulas
        (``_cell``)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["start", "group", *FIELDS])
        w.writerows([[_cell(v) for v in row] for row in self.rows()])
        return buf.getvalue()


def _cell(value: object) -> object:
    """A CSV cell a spreadsheet shows as text: a string starting with ``=``, ``+``, ``-``, ``@``,
    tab or carriage return gets a leading ``'`` so it never runs as a formula."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _key(c: Count, group_by: GroupBy, all_orgs: bool) -> str | None:
    if group_by == "token":
        key = c.token
    elif group_by == "operation":
        if not c.name.startswith("req_"):
            return None  # only requests have an operation; the rest is in the totals
        key = c.name[4:]
    else:
        key = keys.shown_scope(c.scope)
    return f"{c.org}/{key}" if all_orgs else key


def report(org_id: str | None, from_ms: int, to_ms: int, *, granularity: Granularity = "hour",
           group_by: GroupBy = "bank") -> Report:
    """The usage of ``org_id`` (None: every org; group keys are then ``<org>/<key>``) over
    ``[from_ms, to_ms)``, whole UTC hours overlapping it. Raises ``ValueError`` for a range that is
    empty or over 93 days."""
    if to_ms <= from_ms or to_ms - from_ms > MAX_RANGE_MS:
        raise ValueError("the range must be non-empty and at most 93 days")
    step = HOUR_MS if granularity == "hour" else DAY_MS
    totals, groups = Totals(), dict[str, Group]()
    for c in counts(org_id, from_ms, to_ms):
        totals.add(c)
        key = _key(c, group_by, org_id is None)
        if key is None:
            continue
        g = groups.setdefault(key, Group(key))
        g.totals.add(c)
        start = keys.hour_start_ms(c.hour)
        g.series[start - start % step].add(c)
    return Report(org_id, from_ms, to_ms, granularity, group_by, totals, [groups[k] for k in sorted(groups)])
