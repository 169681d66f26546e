"""Dates a memory's text states: parsed at every write, stored with the record (``dates``),
exported and re-derived on import, and matched by recall's time signal against a question's date
expression (besides ``created_at``); a "when" question favours the memory that states a date."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

SAID = int(datetime(2026, 5, 1, 15, 30, tzinfo=UTC).timestamp() * 1000)  # a Friday
DAY = 86_400_000
M = "/v1/banks/main/memories"


def day(y: int, m: int, d: int) -> int:
    return int(datetime(y, m, d, tzinfo=UTC).timestamp() * 1000)


def import_lines(api, bank, lines):
    raw = "".join(json.dumps(x) + "\n" for x in lines)
    s, r = api.post(f"/v1/banks/{bank}/import", raw=raw, headers={"Content-Type": "application/x-ndjson"})
    assert s == 200 and r["errors"] == [], r
    return r


def export_lines(api, bank):
    s, body = api.get(f"/v1/banks/{bank}/export")
    assert s == 200
    if isinstance(body, dict):  # one line decodes as JSON
        return [body]
    text = body.decode() if isinstance(body, bytes) else body
    return [json.loads(x) for x in text.splitlines() if x]


def recall_texts(api, query, monkeypatch, now=SAID):
    """The texts recall ranks for ``query`` as of ``now``, the semantic signal off: these tests
    weigh the time signal, and two sentence vectors alone would decide a two-memory bank."""
    from chalicelib.search import recall as recall_mod
    monkeypatch.setattr(recall_mod, "now_ms", lambda: now)
    monkeypatch.setenv("CAIRN_MEMORY_W_SEMANTIC", "0")
    s, body = api.post("/v1/banks/main/recall", {"query": query})
    assert s == 200, body
    return [h["memory"]["text"] for h in body["memories"]]


def test_a_save_stores_the_dates_its_text_states(api):
    s, body = api.post(M, {"text": "Heron's public launch moved to July 20, 2026 because of the Stripe delay"})
    assert s == 201, body
    want = [{"text": "July 20, 2026", "start": day(2026, 7, 20), "end": day(2026, 7, 21)}]
    assert body["memory"]["dates"] == want
    s, got = api.get(f"{M}/{body['memory']['id']}")
    assert s == 200 and got["memory"]["dates"] == want
    s, plain = api.post(M, {"text": "Alice prefers tea over coffee"})
    assert s == 201 and "dates" not in plain["memory"]


def test_an_update_parses_the_new_text(api):
    s, body = api.post(M, {"text": "The review is on 2026-07-20"})
    assert s == 201
    s, upd = api.patch(f"{M}/{body['memory']['id']}", {"text": "The review moved to 2026-08-03"})
    assert s == 200, upd
    assert [(d["start"], d["end"]) for d in upd["memory"]["dates"]] == [(day(2026, 8, 3), day(2026, 8, 4))]


def test_next_friday_resolves_against_when_it_was_said_and_survives_export_and_import(api):
    import_lines(api, "main", [{"text": "Let's meet Bob next Friday", "created_at": SAID}])
    (line,) = export_lines(api, "main")
    assert line["dates"] == [{"text": "next Friday", "start": day(2026, 5, 8), "end": day(2026, 5, 9)}]
    import_lines(api, "copy", [line])
    (copied,) = export_lines(api, "copy")
    assert copied["dates"] == line["dates"]


def test_an_import_line_cannot_set_dates_its_text_does_not_state(api):
    import_lines(api, "main", [{"text": "Tea over coffee", "created_at": SAID,
                                "dates": [{"text": "x", "start": 0, "end": 1}]}])
    (line,) = export_lines(api, "main")
    assert "dates" not in line


def _audits(api):
    import_lines(api, "main", [
        {"text": "The Heron audit is due on August 14", "created_at": SAID},
        {"text": "The Falcon audit is due on November 2", "created_at": SAID + 1},
    ])


def test_a_question_naming_a_quarter_finds_the_memory_that_states_a_date_in_it(api, cache, monkeypatch):
    _audits(api)
    assert recall_texts(api, "which audit is due in Q3?", monkeypatch)[0] == "The Heron audit is due on August 14"
    assert recall_texts(api, "which audit is due in November?", monkeypatch)[0] == \
        "The Falcon audit is due on November 2"


def test_a_question_with_an_iso_date_matches_the_date_written_in_words(api, cache, monkeypatch):
    _audits(api)
    assert recall_texts(api, "which audit is due on 2026-08-14?", monkeypatch)[0] == \
        "The Heron audit is due on August 14"


def test_a_when_question_favours_the_memory_that_states_a_date(api, cache, monkeypatch):
    import_lines(api, "main", [
        {"text": "The Heron launch is set for July 20", "created_at": SAID},
        {"text": "Heron launch sync: Monday", "created_at": SAID + 1},  # shorter (more BM25), a weekday but no date
    ])
    assert recall_texts(api, "when is the Heron launch?", monkeypatch)[0] == "The Heron launch is set for July 20"


def test_a_memory_saved_before_dates_were_stored_still_matches_a_date_question(api, cache, monkeypatch):
    from chalicelib.core import dates
    with monkeypatch.context() as m:
        m.setattr(dates, "attach", lambda records: None)  # as the code before dates wrote it
        _audits(api)
    assert all("dates" not in x for x in export_lines(api, "main"))
    assert recall_texts(api, "which audit is due in Q3?", monkeypatch)[0] == "The Heron audit is due on August 14"


def test_a_question_naming_a_day_gives_a_memory_stating_its_month_a_share_of_the_time_signal(api, cache, monkeypatch):
    """The very day counts whole; the month that holds it counts as one of its 31 days."""
    import_lines(api, "main", [
        {"text": "The Redstart design review happens on 2026-10-07.", "created_at": SAID},
        {"text": "The Avocet offsite happens in October 2026.", "created_at": SAID + 1},
    ])
    from chalicelib.search import recall as recall_mod
    monkeypatch.setattr(recall_mod, "now_ms", lambda: SAID)
    s, body = api.post("/v1/banks/main/recall", {"query": "What is happening on October 7, 2026?"})
    assert s == 200, body
    time = {h["memory"]["text"]: h["signals"]["time"] for h in body["memories"]}
    assert time == {"The Redstart design review happens on 2026-10-07.": 1.0,
                    "The Avocet offsite happens in October 2026.": pytest.approx(1 / 31)}
