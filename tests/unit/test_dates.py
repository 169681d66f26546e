"""The dates a text states (``chalicelib.core.dates``): each expression's range, resolved against
when the text was said, and the words that are no date."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.core import dates
from chalicelib.core.records import MAX_DATES, Memory

SAID = int(datetime(2026, 5, 1, 15, 30, tzinfo=UTC).timestamp() * 1000)  # a Friday afternoon


def day(y: int, m: int, d: int) -> int:
    return int(datetime(y, m, d, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(("text", "expression", "start", "end"), [
    ("The launch moved to July 20, 2026 because of the delay", "July 20, 2026", day(2026, 7, 20), day(2026, 7, 21)),
    ("launch on 2026-07-20", "2026-07-20", day(2026, 7, 20), day(2026, 7, 21)),
    ("launch on 2026/7/20", "2026/7/20", day(2026, 7, 20), day(2026, 7, 21)),
    ("We ship on the 20th of July", "the 20th of July", day(2026, 7, 20), day(2026, 7, 21)),
    ("Invoices go out Jan. 5, 2027", "Jan. 5, 2027", day(2027, 1, 5), day(2027, 1, 6)),
    ("Budget review in March 2026", "March 2026", day(2026, 3, 1), day(2026, 4, 1)),
    ("The audit is in December", "December", day(2025, 12, 1), day(2026, 1, 1)),  # nearer than next December
    ("Pricing lands in Q3", "Q3", day(2026, 7, 1), day(2026, 10, 1)),
    ("Q4 2026 planning starts", "Q4 2026", day(2026, 10, 1), day(2027, 1, 1)),
    ("We moved offices in 2025", "in 2025", day(2025, 1, 1), day(2026, 1, 1)),
    ("Let's meet next Friday", "next Friday", day(2026, 5, 8), day(2026, 5, 9)),
    ("We met last Friday", "last Friday", day(2026, 4, 24), day(2026, 4, 25)),
    ("The demo is this Monday", "this Monday", day(2026, 5, 4), day(2026, 5, 5)),
    ("Standup moved on Thursday", "on Thursday", day(2026, 4, 30), day(2026, 5, 1)),
    ("I ran a marathon yesterday", "yesterday", day(2026, 4, 30), day(2026, 5, 1)),
    ("The contract arrives tomorrow", "tomorrow", day(2026, 5, 2), day(2026, 5, 3)),
    ("I adopted a cat 3 days ago", "3 days ago", day(2026, 4, 28), day(2026, 4, 29)),
    ("The freeze starts next week", "next week", day(2026, 5, 4), day(2026, 5, 11)),
    ("Hiring resumes next month", "next month", day(2026, 6, 1), day(2026, 7, 1)),
    ("We went hiking last weekend", "last weekend", day(2026, 4, 25), day(2026, 4, 27)),
])
def test_each_expression_names_its_range_as_said(text, expression, start, end):
    got = dates.stated(text, SAID)
    assert [(d.text, d.start, d.end) for d in got] == [(expression, start, end)]


@pytest.mark.parametrize("text", [
    "We use 5 replicas across 2 regions", "We met at the office", "I may go to the party",
    "Use dec and inc for counters", "Built in 1965", "31 February 2026",
    "Port 2026 is open", "Fridays are for demos",
])
def test_words_that_are_no_date_give_none(text):
    assert dates.stated(text, SAID) == []


def test_a_text_keeps_at_most_max_dates_in_order():
    text = " ".join(f"2026-01-{d:02d}" for d in range(1, 20))
    got = dates.stated(text, SAID)
    assert [d.start for d in got] == [day(2026, 1, d) for d in range(1, MAX_DATES + 1)]


def test_attach_sets_bank_memories_dates_and_leaves_structured_ones_alone():
    bank = Memory(id="fp0000000000000001", text="Launch on 2026-07-20", created_at=SAID, updated_at=SAID)
    plain = Memory(id="fp0000000000000002", text="Tea over coffee", created_at=SAID, updated_at=SAID)
    structured = Memory(id="x", text="Launch on 2026-07-20", name="launch", description="d", type="project",
                        created_at=SAID, updated_at=SAID)
    purged = Memory(id="fp0000000000000003", text="", created_at=SAID, updated_at=SAID, purged_at=SAID)
    dates.attach([bank, plain, structured, purged])
    assert bank.dates is not None and [(d.start, d.end) for d in bank.dates] == [(day(2026, 7, 20), day(2026, 7, 21))]
    assert plain.dates is None and structured.dates is None and purged.dates is None


def test_ranges_read_a_record_written_before_dates_were_stored_from_its_text():
    old = Memory(id="fp0000000000000001", text="We met last Friday", created_at=SAID, updated_at=SAID)
    assert old.dates is None
    assert dates.ranges(old) == [(day(2026, 4, 24), day(2026, 4, 25))]
