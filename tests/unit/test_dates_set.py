"""The date-question set (``bench/dates``): the generator rewrites the same bytes, the split is by
subject, and every question's gold memory is in the bank and states a date."""

from __future__ import annotations

from bench import dates
from bench.dates import generate


def test_the_generator_rewrites_the_same_set():
    assert generate.OUT.read_text(encoding="utf-8") == generate.dumps()


def test_the_split_is_by_subject_and_each_gold_is_a_dated_memory_of_its_split():
    from chalicelib.core.dates import stated

    data = dates.data()
    by_id = {m["id"]: m for m in data["memories"]}
    splits = {m["subject"]: m["split"] for m in data["memories"]}
    assert all(splits[m["subject"]] == m["split"] for m in data["memories"])
    assert set(splits.values()) == set(dates.SPLITS)
    for q in data["questions"]:
        assert q["kind"] in dates.KINDS
        (gold,) = [by_id[g] for g in q["gold"]]
        assert gold["split"] == q["split"]
        assert stated(gold["text"], dates.saved_at(gold)), gold["text"]
