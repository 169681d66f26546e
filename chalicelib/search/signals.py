"""Recall signals beyond BM25F, entity, corroboration, pinned and recency; none calls a model.
Each has a weight in ``MemoryTuning`` (0 turns it off: not computed, not in the hit's
``signals``) and adds to the full score (``scorer.full_scores``) as follows:

``score = (base + w_prf * prf) * recency * (1 + w_time * time) + w_neighbour * neighbour``

- **prf** (pseudo-relevance feedback, RM3-style): the first pass's top ``prf_docs`` candidates
  (by score) are analysed like the query; each term's weight is the candidates' score-weighted
  mean of its share of their tokens, times its idf in ``text``. The best ``prf_terms`` terms not in
  the query, weights scaled to sum 1, form the expansion; ``prf`` is a document's BM25F over
  them, each term's score times its weight. The ``fetch_limit`` best documents by ``prf`` join
  the candidates (a second pass over the postings, in the same recall).
- **time** (0 to 1): a query with a date expression (``in May 2023``, ``last week``, ``3 days
  ago``, ``yesterday``, ``2026-07-20``, ``Q3``, ``next Friday``; ranges in UTC, relative to the
  recall's ``now``) favours memories whose ``created_at`` falls in one of its ranges (1) or that
  state a date (``core.dates``: the record's ``dates``) inside a date the query states (the share
  of the memory's date inside it: the very day 1, its month 1/31); a question about when
  (``when``, ``what date``, ``how long ago``) without one favours memories that state a date (1)
  over those that only mention a time (a weekday, ``ago``, an ordinal...: ``VAGUE_TIME``).
- **neighbour**: the best ``neighbour_hits`` candidates after the above (score > 0) are strong
  hits; a memory of the same ``source.session_id`` whose ``created_at`` and ``updated_at`` are
  within ``neighbour_window_minutes`` of a strong hit's ``created_at`` (the ``NEIGHBOUR_SCAN``
  such memories nearest it by ``updated_at``, then id, the hit itself among them) gets that hit's score as
  ``neighbour`` (the greatest, over strong hits other than itself) and joins the candidates, so
  evidence split over a session's turns surfaces together.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from .. import patterns
from ..core import dates
from ..core.records import Memory
from ..tuning import MemoryTuning
from .analyzers import memory_analyzer

Key = tuple[int, int]  # (leaf, document number)
MINUTE_MS = 60_000
NEIGHBOUR_SCAN = 64  # documents examined per strong hit: a bulk import saves thousands at one time
VAGUE_TIME = 0.5  # a "when" question's time signal for a memory that mentions a time but states no date
TEXT_FIELDS = ("text", "name", "description")


def active(tuning: MemoryTuning) -> bool:
    """Whether any signal of this module runs."""
    return tuning.w_prf > 0 or tuning.w_time > 0 or tuning.w_neighbour > 0


# The parts of ``base``, feedback's among them: signal -> (its weight in the tuning, what it weighs).
BASE_PARTS: dict[str, tuple[str, Callable[[float], float]]] = {
    "bm25": ("w_bm25", float), "entity": ("w_entity", float), "corroboration": ("w_corroboration", math.log1p),
    "pinned": ("w_pinned", float), "prf": ("w_prf", float)}


def contributions(signals: dict[str, float], tuning: MemoryTuning, *, semantic_weight: float = 0.0) -> dict[str, float]:
    """Each of a hit's ``signals``' share of its score, in the same order, summing to the score
    (up to rounding): a part of ``base`` (``BASE_PARTS``, ``prf`` among them) is its weighted value;
    ``recency`` what its factor takes from them, ``(base + w_prf*prf) * (recency - 1)`` (0 or
    less); ``time`` what its factor adds, ``(base + w_prf*prf) * recency * w_time * time``;
    ``neighbour`` is ``w_neighbour * neighbour``; ``semantic`` is ``semantic_weight * semantic``
    (the hit's weight of it, ``search.fusion``). A signal it does not know raises ``KeyError``."""
    parts = {s: getattr(tuning, w) * f(signals[s]) for s, (w, f) in BASE_PARTS.items() if s in signals}
    base = sum(parts.values())
    rec = signals.get("recency", 1.0)
    parts["recency"] = base * (rec - 1.0)
    parts["time"] = base * rec * tuning.w_time * signals.get("time", 0.0)
    parts["neighbour"] = tuning.w_neighbour * signals.get("neighbour", 0.0)
    parts["semantic"] = semantic_weight * signals.get("semantic", 0.0)
    return {s: parts[s] for s in signals}


@dataclass
class Ranking:
    """What a recall's first pass knows, for the signals: ``query`` (the raw text, ``None`` when
    only analysed terms were given), ``terms`` (analysed), the corpus ``stats``, ``readers``,
    ``data`` (per-leaf ``SegmentData``), ``allowed`` (per-leaf bool masks), ``record`` (a key's
    record or ``None``), ``accept`` (the caller's filter over keys or ``None``), ``bm25f(pairs,
    allowed)`` (per leaf: sorted matched documents and their BM25F) and ``pick(data, docs, score,
    fetch, accept)`` (recall's own helpers), ``base(keys)``
    (``(updated_at, totals, signals)`` arrays of ``scorer.full_scores``), ``now`` (ms) and
    ``tuning``."""

    query: str | None
    terms: tuple[str, ...]
    stats: Any
    readers: list[Any]
    data: list[Any]
    allowed: list[np.ndarray]
    record: Callable[[Key], Memory | None]
    accept: Callable[[Key], bool] | None
    bm25f: Callable[..., list[tuple[np.ndarray, np.ndarray]]]
    pick: Callable[..., list[Key]]
    base: Callable[[list[Key]], tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]]
    now: int
    tuning: MemoryTuning


def apply(r: Ranking, keys: list[Key], totals: np.ndarray,
          upd: np.ndarray) -> tuple[list[Key], np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The candidates ``keys`` (first pass: ``totals``, ``upd`` aligned) with this module's
    signals: ``(keys, updated_at, totals, signals)``, candidates added by feedback and
    neighbourhood at the end, ``signals`` holding ``scorer.full_scores``'s plus the active ones."""
    t = r.tuning
    prf: list[np.ndarray] | None = None
    if t.w_prf > 0:
        prf = _feedback(r, keys, totals, upd)
        if prf is not None:
            matched = [np.flatnonzero(p > 0) for p in prf]
            keys = list(dict.fromkeys(keys + r.pick(r.data, matched, [p[m] for p, m in zip(prf, matched, strict=True)],
                                                    t.fetch_limit, r.accept)))
    time_of = _time_test(r) if t.w_time > 0 else None

    def score(ks: list[Key]) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        u, tot, sig = r.base(ks)
        if t.w_prf > 0:
            p = np.array([prf[i][d] for i, d in ks]) if prf is not None else np.zeros(len(ks))
            rec = sig["recency"]
            tot = tot + t.w_prf * p * rec
            sig["prf"] = p
        if t.w_time > 0:
            tm = time_of(ks) if time_of is not None else np.zeros(len(ks))
            tot = tot * (1.0 + t.w_time * tm)
            sig["time"] = tm
        return u, tot, sig

    upd, totals, sig = score(keys)
    if t.w_neighbour > 0:
        share = _neighbours(r, keys, totals, upd)
        new = [k for k in share if k not in set(keys)]
        if new:
            u2, t2, s2 = score(new)
            keys = keys + new
            upd, totals = np.concatenate([upd, u2]), np.concatenate([totals, t2])
            sig = {k: np.concatenate([v, s2[k]]) for k, v in sig.items()}
        nb = np.array([share.get(k, 0.0) for k in keys], dtype=np.float64)
        totals = totals + t.w_neighbour * nb
        sig["neighbour"] = nb
    return keys, upd, totals, sig


def _top(keys: list[Key], totals: np.ndarray, upd: np.ndarray, n: int, data: list[Any]) -> list[int]:
    """Positions of the best ``n`` of ``keys`` with a score above 0 (score desc, ``updated_at``
    desc, id asc)."""
    pos = np.flatnonzero(totals > 0)
    if len(pos) > n:  # only those at least as good as the n-th (ties included) can make the cut
        pos = pos[totals[pos] >= np.partition(totals[pos], len(pos) - n)[len(pos) - n]]
    order = sorted(pos.tolist(), key=lambda j: (-totals[j], -upd[j], data[keys[j][0]].ids[keys[j][1]]))
    return order[:n]


# --- pseudo-relevance feedback ---------------------------------------------------------------

def _tokens(rec: Memory) -> list[str]:
    text = " ".join(x for x in (rec.text, rec.name, rec.description) if x)
    return [tok.text for tok in memory_analyzer()(text)]


def expansion(r: Ranking, docs: list[tuple[Memory, float]]) -> list[tuple[str, float]]:
    """The expansion terms of ``docs`` (``(record, first-pass score)``) with their weights,
    summing to 1, best first (module docstring); empty when none is left."""
    total = sum(s for _rec, s in docs) or 1.0
    rel: dict[str, float] = {}
    for rec, s in docs:
        toks = _tokens(rec)
        if not toks:
            continue
        for term, n in Counter(toks).items():
            rel[term] = rel.get(term, 0.0) + (s / total) * n / len(toks)
    query = set(r.terms)
    scored = [(term, w * r.stats.idf("text", term)) for term, w in rel.items() if term not in query]
    scored = [x for x in scored if x[1] > 0]
    scored.sort(key=lambda x: (-x[1], x[0]))
    scored = scored[:r.tuning.prf_terms]
    norm = sum(w for _t, w in scored)
    return [(term, w / norm) for term, w in scored] if norm > 0 else []


def _feedback(r: Ranking, keys: list[Key], totals: np.ndarray, upd: np.ndarray) -> list[np.ndarray] | None:
    """Per leaf, every document's ``prf`` (float64; 0 where none matched), or ``None`` without
    expansion terms."""
    docs = []
    for j in _top(keys, totals, upd, r.tuning.prf_docs, r.data):
        rec = r.record(keys[j])
        if rec is not None:
            docs.append((rec, float(totals[j])))
    terms = expansion(r, docs)
    if not terms:
        return None
    out = [np.zeros(len(a), dtype=np.float64) for a in r.allowed]
    for term, w in terms:
        for i, (ids, vals) in enumerate(r.bm25f([(f, term) for f in TEXT_FIELDS], r.allowed)):
            out[i][ids] += w * vals
    return out


# --- time ------------------------------------------------------------------------------------

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december"]
_MON = "|".join(m for m in _MONTHS) + "|" + "|".join(m[:3] for m in _MONTHS if m != "may") + "|sept"
# RE2 (``patterns``): a word boundary is a non-word character matched around the group ``hit``
# (Python's Unicode classes); the expressions with spans are read with ``hits``.
_S, _D, _B0, _B1 = f"[{patterns.SPACE}]", f"[{patterns.DIGIT}]", patterns.BEFORE_WORD, patterns.AFTER_WORD
_WHEN = patterns.compile(rf"(?i){_B0}(?:when|what (?:year|month|day|date|time)|which (?:year|month|day)|how long ago"
                         rf"|since when|what (?:week|weekend)){_B1}")
_MONTH_DATE = patterns.compile(rf"(?i){_B0}(?P<hit>(?:(?P<d1>{_D}{{1,2}}){_S}+)?(?P<mon>{_MON})\.?"
                               rf"(?:{_S}+(?P<d2>{_D}{{1,2}})(?:st|nd|rd|th)?)?,?(?:{_S}+(?P<yr>{_D}{{4}}))?){_B1}")
_YEAR = patterns.compile(rf"(?i){_B0}(?P<hit>(?:in|during|of|since){_S}+(?P<year>(?:19|20){_D}{_D})){_B1}")
_RELATIVE = patterns.compile(rf"(?i){_B0}(?P<hit>(?P<w>yesterday|today|tonight|last (?:week|weekend|month|year)"
                             rf"|this (?:week|month|year)|(?P<n>{_D}+|a|one|two|three|four|five|six) "
                             rf"(?P<unit>day|week|month|year)s? ago)){_B1}")
_STATES_TIME = patterns.compile(rf"(?i){_B0}(?:{_MON}|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
                                r"|yesterday|today|tonight|tomorrow|weekend|last (?:week|month|year|night)"
                                rf"|next (?:week|month|year)|ago|(?:19|20){_D}{_D}|{_D}{{1,2}}(?:st|nd|rd|th)){_B1}")
_NUM = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
DAY = timedelta(days=1)


def _month_index(word: str) -> int:
    w = word.lower()[:3]
    return [m[:3] for m in _MONTHS].index(w) + 1


def _month_range(y: int, m: int) -> tuple[datetime, datetime]:
    start = datetime(y, m, 1, tzinfo=UTC)
    end = datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=UTC)
    return start, end


def date_ranges(query: str, now: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges (ms, UTC) of ``query``'s date expressions, relative to ``now``
    (ms): a month with or without a day and year (a month without a year: its latest
    occurrence not after ``now``), ``in 2023``, ``yesterday``, ``today``, ``last week``/
    ``weekend``/``month``/``year``, ``this week``/``month``/``year``, ``N days``/``weeks``/
    ``months``/``years ago`` (a span around that day: a day, a week, a month, a year), and the
    dates it states as a memory would (``core.dates.stated``: ``2026-07-20``, ``Q3``, ``next
    Friday``...)."""
    ref = datetime.fromtimestamp(now / 1000, tz=UTC)
    day0 = ref.replace(hour=0, minute=0, second=0, microsecond=0)
    out: list[tuple[datetime, datetime]] = []
    for m in _MONTH_DATE.hits(query):
        d1, mon, d2, yr = m["d1"], m["mon"] or "", m["d2"], m["yr"]
        if mon.lower() == "may" and not (d1 or d2 or yr):
            continue  # "may" alone is a verb
        mi = _month_index(mon)
        y = int(yr) if yr else (ref.year if mi <= ref.month else ref.year - 1)
        day = d1 or d2
        try:
            if day:
                start = datetime(y, mi, int(day), tzinfo=UTC)
                out.append((start - DAY, start + 2 * DAY))
            else:
                out.append(_month_range(y, mi))
        except ValueError:
            continue  # 31 February: no date
    for m in _YEAR.hits(query):
        y = int(m["year"] or 0)
        out.append((datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC)))
    out += [_relative(m, ref, day0) for m in _RELATIVE.hits(query)]
    spans = [(int(a.timestamp() * 1000), int(b.timestamp() * 1000)) for a, b in out]
    return list(dict.fromkeys(spans + [(d.start, d.end) for d in dates.stated(query, now)]))


def _relative(m: patterns.Match, ref: datetime, day0: datetime) -> tuple[datetime, datetime]:
    """The range of one relative expression (``_RELATIVE``) as of ``ref`` (``day0``: its day)."""
    w = (m["w"] or "").lower()
    if w == "yesterday":
        return day0 - DAY, day0
    if w in ("today", "tonight"):
        return day0, day0 + DAY
    if w in ("last week", "last weekend"):
        return day0 - 14 * DAY, day0
    if w == "this week":
        return day0 - 7 * DAY, day0 + DAY
    if w in ("last month", "this month"):
        return day0 - (62 if w == "last month" else 31) * DAY, day0 + DAY
    if w in ("last year", "this year"):
        y = ref.year - (w == "last year")
        return datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC)
    count, unit_word = m["n"] or "", (m["unit"] or "").lower()
    n = int(count) if count.isdigit() else _NUM[count.lower()]
    unit = {"day": 1, "week": 7, "month": 30, "year": 365}[unit_word]
    centre = day0 - n * unit * DAY
    return centre - unit * DAY, centre + (unit + 1) * DAY


def is_when(query: str) -> bool:
    """Whether ``query`` asks about when something happened."""
    return bool(_WHEN.search(query))


def states_time(text: str) -> bool:
    """Whether ``text`` states a time (a month, weekday, year, ordinal day, ``yesterday``, ``ago``...)."""
    return bool(_STATES_TIME.search(text))


def time_value(query_ranges: list[tuple[int, int]], spans: list[tuple[int, int]], when: bool, rec: Memory) -> float:
    """The ``time`` signal of record ``rec`` (module docstring) for a query with the date ranges
    ``query_ranges`` (``date_ranges``, for ``created_at``) and the dates it states ``spans``
    (``core.dates.stated``, exact) or, with neither, asking when (``when``): 1 when ``created_at``
    falls in a range, else the greatest share of a date ``rec`` states that lies in a span (a
    memory stating that very day 1, one stating its month 1/31)."""
    if query_ranges:
        if any(a <= rec.created_at < b for a, b in query_ranges):
            return 1.0
        return max((max(0, min(b, e) - max(a, s)) / (e - s) for a, b in spans for s, e in dates.ranges(rec) if e > s),
                   default=0.0)
    if not when:
        return 0.0
    return 1.0 if dates.ranges(rec) else VAGUE_TIME if states_time(rec.text or "") else 0.0


def _time_test(r: Ranking) -> Callable[[list[Key]], np.ndarray] | None:
    """The ``time`` signal (module docstring) of a list of keys, as float64 in [0, 1], or
    ``None`` when the query neither names a date nor asks when. A date range is matched on the
    ``created_at`` column first; the dates a memory states need its record (0 when it does not
    decode)."""
    if not r.query:
        return None
    ranges = date_ranges(r.query, r.now)
    spans = [(d.start, d.end) for d in dates.stated(r.query, r.now)]
    when = not ranges and is_when(r.query)
    if not ranges and not when:
        return None

    def one(k: Key) -> float:
        c = int(r.data[k[0]].created_at[k[1]])
        if any(a <= c < b for a, b in ranges):
            return 1.0
        rec = r.record(k)
        return 0.0 if rec is None else time_value(ranges, spans, when, rec)

    def test(ks: list[Key]) -> np.ndarray:
        return np.array([one(k) for k in ks], dtype=np.float64)
    return test


# --- neighbourhood ---------------------------------------------------------------------------

def _neighbours(r: Ranking, keys: list[Key], totals: np.ndarray, upd: np.ndarray) -> dict[Key, float]:
    """Per neighbour of a strong hit (module docstring), the greatest strong hit's score it
    shares. Sessions and times come from the segments' columns: no record is decoded but for the
    caller's filter."""
    window = r.tuning.neighbour_window_minutes * MINUTE_MS
    out: dict[Key, float] = {}
    for j in _top(keys, totals, upd, r.tuning.neighbour_hits, r.data):
        i0, d0 = keys[j]
        sid = int(r.data[i0].session[d0])
        if not sid:
            continue
        t = int(r.data[i0].created_at[d0])
        near: list[tuple[int, str, Key]] = []
        for i, sd in enumerate(r.data):
            idx = np.flatnonzero((sd.session == sid) & r.allowed[i])
            if not len(idx):
                continue
            dist = np.abs(sd.updated_at[idx] - t)
            ok = (dist <= window) & (np.abs(sd.created_at[idx] - t) <= window)
            idx, dist = idx[ok], dist[ok]
            if len(idx) > NEIGHBOUR_SCAN:  # only the nearest (ties included) can make the cut
                kth = np.partition(dist, NEIGHBOUR_SCAN - 1)[NEIGHBOUR_SCAN - 1]
                idx, dist = idx[dist <= kth], dist[dist <= kth]
            near += [(x, sd.ids[d], (i, d)) for x, d in zip(dist.tolist(), idx.tolist(), strict=True)]
        near.sort()
        for _dist, _id, key in near[:NEIGHBOUR_SCAN]:
            if key == keys[j] or out.get(key, -math.inf) >= totals[j]:
                continue
            if r.accept is not None and not r.accept(key):
                continue
            out[key] = float(totals[j])
    return out


__all__ = ["BASE_PARTS", "VAGUE_TIME", "Ranking", "active", "apply", "contributions", "date_ranges", "expansion",
           "is_when", "states_time", "time_value"]
