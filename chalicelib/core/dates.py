"""The dates a text states, resolved against when it was said.

``stated(text, said_at)`` finds the explicit date expressions of ``text`` (at most ``MAX_DATES``,
in order) and resolves each to a ``[start, end)`` range in ms since epoch (UTC) relative to
``said_at`` (ms: a memory's ``created_at``):

- a day: ``2026-07-20``, ``2026/07/20``, ``July 20, 2026``, ``20 July 2026``, ``Jul 20th``, ``the
  20th of July`` (without a year: its occurrence nearest ``said_at``);
- a month: ``March 2026``, ``March`` (nearest); a month alone is not read when it is ``may`` (a
  verb) or an abbreviation (``mar``, ``dec``: words too);
- a quarter: ``Q3``, ``Q3 2026``, ``2026 Q3`` (without a year: nearest);
- a year after ``in``, ``during``, ``since``, ``by``, ``until``, ``of``, ``before``, ``after``
  (a bare number is too often a count): ``in 2026``;
- a day named from ``said_at``: ``yesterday``, ``today``, ``tonight``, ``tomorrow``, ``next
  Friday`` (the first after it), ``last Friday`` (the last before it), ``this``/``coming Friday``
  (on or after it), ``on Friday`` (the nearest);
- a period named from ``said_at``: ``next``/``last``/``this`` ``week`` (Monday to Sunday),
  ``weekend``, ``month``, ``year``; ``3 days ago``, ``in 2 weeks`` (a day; a week around it; the
  calendar month; the calendar year).

A date before 1970 or after 9999 is left out. The expressions are RE2 patterns (``patterns``), so
a search is linear in the text; no library call guesses at numbers (a parser that reads ``We`` as
Wednesday or ``5 replicas`` as the 5th is worse than none).
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from .. import patterns
from ..storage.damage import MAX_TIME_MS
from .records import MAX_DATES, Memory, StatedDate

MAX_TEXT = 64  # characters of an expression kept with its date
DAY = timedelta(days=1)
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december"]
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MON = "|".join(_MONTHS) + "|" + "|".join(m[:3] for m in _MONTHS if m != "may") + "|sept"
_WDAY = "|".join(_WEEKDAYS)
_NUMBER = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_N = rf"(?:[{patterns.DIGIT}]{{1,3}}|" + "|".join(_NUMBER) + ")"
_S, _D = f"[{patterns.SPACE}]", f"[{patterns.DIGIT}]"
_Y = rf"(?:19|20){_D}{_D}"
_ORD = "(?:st|nd|rd|th)?"
_EXPRESSION = patterns.compile(
    rf"(?i){patterns.BEFORE_WORD}(?P<hit>"
    rf"(?P<iy>{_Y})[-/](?P<im>{_D}{{1,2}})[-/](?P<id>{_D}{{1,2}})"
    rf"|(?:(?:the{_S}+)?(?P<d1>{_D}{{1,2}}){_ORD}{_S}+(?:of{_S}+)?)?(?P<mon>{_MON})\.?"
    rf"(?:{_S}+(?P<d2>{_D}{{1,2}}){_ORD})?(?:,?{_S}+(?P<my>{_Y}))?"
    rf"|(?:(?P<qy1>{_Y}){_S}+)?[qQ](?P<qn>[1-4])(?:{_S}+(?P<qy2>{_Y}))?"
    rf"|(?:in|during|since|by|until|of|before|after){_S}+(?P<y>{_Y})"
    r"|(?P<rel>the day before yesterday|the day after tomorrow|yesterday|today|tonight|tomorrow)"
    rf"|(?P<wq>next|last|this|coming|on){_S}+(?P<wd>{_WDAY})"
    rf"|(?P<pq>next|last|this){_S}+(?P<pu>week|weekend|month|year)"
    rf"|(?P<an>{_N}){_S}+(?P<au>day|week|month|year)s?{_S}+ago"
    rf"|in{_S}+(?P<inn>{_N}){_S}+(?P<inu>day|week|month|year)s?"
    rf"){patterns.AFTER_WORD}")

Span = tuple[datetime, datetime]
_ANY_DAY = datetime(2000, 6, 15, tzinfo=UTC)  # whether an expression names a date does not depend on the day


def stated(text: str, said_at: int) -> list[StatedDate]:
    """The dates ``text`` states (module docstring), resolved against ``said_at`` (ms)."""
    ref = datetime.fromtimestamp(said_at / 1000, tz=UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    out: list[StatedDate] = []
    for m in _EXPRESSION.hits(text):
        span = _resolve(m, ref)
        if span is None:
            continue
        start, end = (int(x.timestamp() * 1000) for x in span)
        if start < 0 or end > MAX_TIME_MS + 1:
            continue
        words = " ".join((m["hit"] or "").split())[:MAX_TEXT]
        out.append(StatedDate(text=words, start=start, end=end))
        if len(out) == MAX_DATES:
            break
    return out


def expressions(text: str) -> list[str]:
    """The date expressions of ``text`` as written (``stated``'s, whatever day they resolve to):
    the words a question asks a date with, which the time signal matches, not the text."""
    return [m["hit"] or "" for m in _EXPRESSION.hits(text) if _resolve(m, _ANY_DAY) is not None]


def ranges(rec: Memory) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges (ms) of the dates ``rec`` states: the stored ones, or for a
    record written before dates were stored, its text's read now against its ``created_at``."""
    got = rec.dates if rec.dates is not None else stated(rec.text or "", rec.created_at)
    return [(d.start, d.end) for d in got]


def attach(records: Iterable[Memory]) -> None:
    """Set each bank memory's ``dates`` from its text and ``created_at`` (``None`` when it states
    none, and for a purged one); structured memories and team projections keep theirs (none)."""
    for rec in records:
        if rec.name is not None or rec.description is not None or rec.meta is not None:
            continue
        rec.dates = (stated(rec.text, rec.created_at) or None) if rec.purged_at is None else None


def _resolve(m: patterns.Match, ref: datetime) -> Span | None:
    """The span of one expression (``_EXPRESSION``) as said on the day ``ref``; ``None`` when it
    names no date (31 February, ``may`` alone) or one out of range."""
    try:
        if m["iy"]:
            return _day(datetime(int(m["iy"]), int(m["im"]), int(m["id"]), tzinfo=UTC))
        if m["mon"]:
            return _month_date(m, ref)
        if m["qn"]:
            return _quarter(int(m["qn"]), m["qy1"] or m["qy2"], ref)
        if m["y"]:
            y = int(m["y"])
            return datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC)
        if m["rel"]:
            shift = {"the day before yesterday": -2, "yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1,
                     "the day after tomorrow": 2}[" ".join(m["rel"].lower().split())]
            return _day(ref + shift * DAY)
        if m["wd"]:
            return _weekday(m["wq"].lower(), _WEEKDAYS.index(m["wd"].lower()), ref)
        if m["pu"]:
            return _period(m["pq"].lower(), m["pu"].lower(), ref)
        if m["au"]:
            return _offset(-_count(m["an"]), m["au"].lower(), ref)
        return _offset(_count(m["inn"]), m["inu"].lower(), ref)
    except (ValueError, OverflowError):
        return None


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER[word.lower()]


def _day(d: datetime) -> Span:
    return d, d + DAY


def _month(y: int, m: int) -> Span:
    return datetime(y, m, 1, tzinfo=UTC), datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=UTC)


def _nearest(ref: datetime, make: Iterable[Span]) -> Span:
    """Of the candidate spans, the one whose start is nearest ``ref`` (the earlier on a tie)."""
    return min(make, key=lambda s: (abs((s[0] - ref).total_seconds()), s[0]))


def _month_date(m: patterns.Match, ref: datetime) -> Span | None:
    mon, day, year = m["mon"].lower(), m["d1"] or m["d2"], m["my"]
    if not day and not year and (mon == "may" or mon not in _MONTHS):
        return None  # "may" alone is a verb; "mar", "dec" alone are words
    mi = [x[:3] for x in _MONTHS].index(mon[:3]) + 1
    if day:
        d = int(day)
        if year:
            return _day(datetime(int(year), mi, d, tzinfo=UTC))
        years = [y for y in (ref.year - 1, ref.year, ref.year + 1) if d <= calendar.monthrange(y, mi)[1]]
        if not years:
            return None
        return _nearest(ref, (_day(datetime(y, mi, d, tzinfo=UTC)) for y in years))
    if year:
        return _month(int(year), mi)
    return _nearest(ref, (_month(y, mi) for y in (ref.year - 1, ref.year, ref.year + 1)))


def _quarter(q: int, year: str | None, ref: datetime) -> Span:
    def span(y: int) -> Span:
        return datetime(y, 3 * q - 2, 1, tzinfo=UTC), _month(y, 3 * q)[1]
    if year:
        return span(int(year))
    return _nearest(ref, (span(y) for y in (ref.year - 1, ref.year, ref.year + 1)))


def _weekday(qualifier: str, wd: int, ref: datetime) -> Span:
    ahead = (wd - ref.weekday()) % 7  # days to the next such weekday, 0 when it is today
    if qualifier == "next":
        return _day(ref + (ahead or 7) * DAY)
    if qualifier == "last":
        return _day(ref - ((7 - ahead) % 7 or 7) * DAY)
    if qualifier in ("this", "coming"):
        return _day(ref + ahead * DAY)
    return _day(ref + (ahead if ahead <= 3 else ahead - 7) * DAY)  # "on Friday": the nearest


def _period(qualifier: str, unit: str, ref: datetime) -> Span:
    step = {"next": 1, "last": -1, "this": 0}[qualifier]
    if unit in ("week", "weekend"):
        monday = ref - ref.weekday() * DAY + 7 * step * DAY
        return (monday, monday + 7 * DAY) if unit == "week" else (monday + 5 * DAY, monday + 7 * DAY)
    if unit == "month":
        k = ref.year * 12 + ref.month - 1 + step
        return _month(k // 12, k % 12 + 1)
    return datetime(ref.year + step, 1, 1, tzinfo=UTC), datetime(ref.year + step + 1, 1, 1, tzinfo=UTC)


def _offset(n: int, unit: str, ref: datetime) -> Span:
    """``n`` units from ``ref`` (negative: ago): the day, the week around it, the calendar month
    or year."""
    if unit == "day":
        return _day(ref + n * DAY)
    if unit == "week":
        centre = ref + 7 * n * DAY
        return centre - 3 * DAY, centre + 4 * DAY
    if unit == "month":
        k = ref.year * 12 + ref.month - 1 + n
        return _month(k // 12, k % 12 + 1)
    return datetime(ref.year + n, 1, 1, tzinfo=UTC), datetime(ref.year + n + 1, 1, 1, tzinfo=UTC)


__all__ = ["MAX_DATES", "attach", "expressions", "ranges", "stated"]
