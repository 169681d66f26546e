"""The extraction set (bench/extraction): its size and frozen split, transcripts in the hook's
shape that fit one extraction window, gold memories consistent with their own transcript, and the
scorer's matching rule (bench/extraction/README.md)."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from bench import extraction_set as X
from chalicelib.extraction.transcript import MAX_MESSAGE_BYTES, message_text, window
from chalicelib.tuning import MemoryTuning

# the split is frozen: moving, adding or removing a transcript changes these
COUNTS = {"tune": 37, "eval": 36}
ID_DIGESTS = {"tune": "a1b7ebf37456dda06ec1f2991d35a8d427918af3b6328663d7507eb8827875fa",
              "eval": "cd9a2bdd8925b840c1e7f2f0a525bccef0a23a0b9df6eb3b6daa3d754df7676c"}


def _digest(split: str) -> str:
    return hashlib.sha256("\n".join(sorted(t.id for t in X.transcripts(split))).encode()).hexdigest()


def _said(t: X.Transcript) -> str:
    """What the user and the assistant said (the window's text, injected memories left out)."""
    return window(list(t.messages), position=None, last_id=None, size=len(t.messages)).text


def test_split_sizes_are_frozen_and_disjoint():
    tune, ev = X.transcripts("tune"), X.transcripts("eval")
    assert {s: len(X.transcripts(s)) for s in X.SPLITS} == COUNTS
    assert len(tune) + len(ev) >= 60
    assert {s: _digest(s) for s in X.SPLITS} == ID_DIGESTS
    ids = [t.id for t in X.all_transcripts()]
    assert len(set(ids)) == len(ids)
    assert not {t.id for t in tune} & {t.id for t in ev}
    said = {s: {message_text(m) for t in X.transcripts(s) for m in t.messages if m["role"] == "user"} for s in X.SPLITS}
    assert not said["tune"] & said["eval"]
    with pytest.raises(ValueError, match="split"):
        X.transcripts("all")


def test_every_category_is_in_both_splits_and_empty_gold_is_there():
    for split in X.SPLITS:
        per = Counter(t.category for t in X.transcripts(split))
        assert set(per) == set(X.CATEGORIES), split
        assert per["empty"] >= 5, split
    for t in X.all_transcripts():
        assert (t.category == "empty") == (not t.gold), t.id


def test_transcripts_have_the_hook_shape_and_fit_one_window():
    size = MemoryTuning().extraction_window
    for t in X.all_transcripts():
        assert len(t.messages) <= size, t.id
        assert all(set(m) <= {"role", "content", "id"} for m in t.messages), t.id
        assert all(len(message_text(m).encode("utf-8")) <= MAX_MESSAGE_BYTES for m in t.messages), t.id
        w = window(list(t.messages), position=None, last_id=None, size=size)
        assert w.lines[0][0] == "user" and not w.too_small, t.id


def test_gold_memories_hold_their_values_and_come_from_the_conversation():
    for t in X.all_transcripts():
        said = _said(t)
        for g in t.gold:
            assert g.values and all(g.values), (t.id, g.fact)
            assert X.matches(g.fact, g), (t.id, g.fact)  # the reference sentence is itself a match
            for spellings in g.values:
                assert any(X.holds(said, s) for s in spellings), (t.id, spellings)
            for f in g.forbidden:  # a superseded value, said in the conversation
                assert X.holds(said, f), (t.id, f)


def test_subjects_are_the_named_speaker():
    named = [t for t in X.all_transcripts() if t.speaker]
    assert len(named) >= 15
    for t in X.all_transcripts():
        for g in t.gold:
            assert g.subject is None or g.subject == t.speaker, (t.id, g.fact)
        if t.speaker:
            assert X.holds(_said(t), t.speaker), t.id
            assert any(X.holds(g.fact, t.speaker) for g in t.gold if g.subject), t.id


def test_the_trial_transcript_is_in_tune():
    trial = [t for t in X.transcripts("tune") if t.speaker == "Priya"]
    assert len(trial) == 1
    gold = trial[0].gold
    assert any(("Priya",) in g.values for g in gold)
    assert any(("db-staging.internal",) in g.values for g in gold)
    assert any(g.subject == "Priya" and "prefers" in g.fact for g in gold)
    launch = [g for g in gold if ("launch",) in g.values]
    assert len(launch) == 1 and launch[0].forbidden == ("June 30",)


# --- the scorer ------------------------------------------------------------------------------------

def test_a_value_is_found_case_insensitively_and_never_inside_a_longer_word():
    assert X.holds("The launch is on JULY 20.", "July 20")
    assert X.holds("db  at\ndb-staging.internal:5432", "db-staging.internal")
    assert X.holds("logs in /var/log/cairn/app.log", "/var/log/cairn")
    assert not X.holds("launch on June 30", "June 3")
    assert not X.holds("Priya prefers small changes", "PR")
    assert not X.holds("pinned to v2.3.1", "2.3.1")
    assert X.holds("pinned to v2.3.1 and 2.3.1", "2.3.1")  # a later occurrence counts
    assert not X.holds("anything", "")


def test_a_memory_matches_with_every_value_and_no_forbidden_one():
    g = X.Gold("The launch is on July 20.", (("launch",), ("July 20", "20 July")), ("June 30",))
    assert X.matches("Launch: 20 July.", g)
    assert not X.matches("The launch is on July 21.", g)
    assert not X.matches("The launch moved from June 30 to July 20.", g)


def test_pairs_are_greedy_and_one_to_one():
    a = X.Gold("A", (("alpha",),))
    b = X.Gold("B", (("beta",),))
    # one memory holding both facts pairs with the first gold only; a repeat pairs with nothing
    assert X.pair(["alpha and beta", "alpha again", "beta"], [a, b]) == [(0, 0), (2, 1)]
    assert X.pair(["alpha", "alpha"], [a]) == [(0, 0)]
    s = X.score(["alpha", "alpha", "gamma"], [a, b])
    assert (s.extracted, s.gold, s.matched) == (3, 2, 1)
    assert s.precision == pytest.approx(1 / 3) and s.recall == pytest.approx(1 / 2)


def test_scores_sum_and_undefined_ratios_are_none():
    empty = X.score([], [])
    assert empty.precision is None and empty.recall is None
    named = X.Gold("Priya likes tea.", (("tea",),), subject="Priya")
    s = X.total([X.score(["Priya likes tea."], [named]), X.score(["I like tea."], [named]), X.score(["noise"], [])])
    assert (s.extracted, s.gold, s.matched, s.with_subject, s.named) == (3, 2, 2, 2, 1)
    assert s.as_dict()["precision"] == pytest.approx(2 / 3) and s.as_dict()["recall"] == 1.0
