"""The pair rules of write-time related memories (chalicelib/banks/related.py): values and their
kinds, the subject, and the verdicts on pairs of the knowledge-update kinds."""

from __future__ import annotations

import pytest

from chalicelib.banks import related as r


def st(text, *handles):
    return r.statement(text, frozenset(handles))


def verdict(first, second, sim, handles=("heron",)):
    a, b = st(first, *handles), st(second, *handles)
    return r.judge(a, b, sim, subject=r.same_subject(frozenset(handles), frozenset(handles), a, b))


@pytest.mark.parametrize("value, kind", [("https://x.example.com/a", "url"), ("fridays", "weekday"),
                                          ("july", "date"), ("2026", "date"), ("12th", "date"),
                                          ("10:00", "time"), ("$55,000", "number"), ("4.2", "number"),
                                          ("us-west-2", "code"), ("utc+3", "code"), ("stripe", "name")])
def test_each_value_has_its_kind(value, kind):
    assert r.kind(value) == kind


def test_values_names_and_cues_leave_out_the_subject_and_the_opening_word():
    s = st("Heron's public launch moved from June 15 to July 20 because of Stripe.", "heron")
    assert s.values == {"june", "15", "july", "20", "stripe"}
    assert s.names == {"stripe"} and "moved" in s.cues
    assert "launc" in s.stems and "heron" not in s.words - {"heron"}


def test_a_sentence_opening_with_a_two_word_name_names_both_words():
    assert st("Aisha Bello leads the Linnet project.", "linnet").names == {"aisha", "bello"}
    assert st("Production runs Linnet 3.0.", "linnet").names == set()  # one capitalised opening word
    v = verdict("Aisha Bello leads the Linnet project.", "If Linnet needs a decision, Aisha Bello makes the call.",
                0.8, handles=("linnet",))
    assert v is not None and v.relation == "duplicate"


def test_another_value_of_one_kind_on_one_attribute_is_a_conflict():
    v = verdict("Heron launches on June 15.", "Heron's launch is on July 20.", 0.8)
    assert v is not None and v.relation == "conflict" and "july" in v.why


def test_values_of_one_kind_on_another_attribute_are_no_conflict():
    assert verdict("The Heron design doc is at https://docs.example.com/heron.",
                   "The Heron code lives at https://git.example.com/heron.", 0.8) is None


def test_a_correction_word_alone_makes_a_conflict_and_never_a_duplicate():
    v = verdict("Mei Chen likes sparkling water.", "Mei Chen drinks oat flat white now.", 0.7, ("mei chen",))
    assert v is not None and v.relation == "conflict"


def test_the_same_statement_in_other_words_is_a_duplicate_and_a_new_value_is_not():
    assert verdict("Heron stores its data in PostgreSQL 16.",
                   "We picked PostgreSQL 16 to hold everything Heron persists.", 0.8).relation == "duplicate"
    assert verdict("Heron stores its data in PostgreSQL 16.", "Heron stores its data in MySQL.", 0.8,
                   ).relation == "conflict"


def test_another_subject_is_never_related():
    a, b = st("Production runs Curlew 3.1.", "curlew"), st("Production runs Bunting 4.2.", "bunting")
    assert not r.same_subject(frozenset({"curlew"}), frozenset({"bunting"}), a, b)
    assert r.judge(a, b, 0.95, subject=False) is None


def test_one_side_without_handles_is_the_subject_when_it_names_a_handle():
    a, b = st("Heron launches on June 15.", "heron"), st("Heron's launch moved to July 20.")
    assert r.same_subject(frozenset({"heron"}), frozenset(), a, b)
    assert not r.same_subject(frozenset({"heron"}), frozenset(), a, st("Puffin launches on July 20."))


def test_relate_judges_only_the_nearest_of_the_subject_and_a_conflict_needs_a_margin():
    later = st("Heron's launch is on July 20.", "heron")
    near = r.Candidate("a", st("Heron launches on June 15.", "heron"), frozenset({"heron"}), 0.8)
    close = r.Candidate("b", st("Heron's beta is on June 1.", "heron"), frozenset({"heron"}), 0.78)
    far = r.Candidate("c", st("Heron's beta is on June 1.", "heron"), frozenset({"heron"}), 0.5)
    other = r.Candidate("d", st("Puffin launches on June 15.", "puffin"), frozenset({"puffin"}), 0.95)
    assert [i for i, _v in r.relate(later, frozenset({"heron"}), [near, far, other])] == ["a"]
    assert r.relate(later, frozenset({"heron"}), [near, close]) == []  # too close to call


def test_a_correction_naming_the_old_value_needs_no_margin():
    later = st("Stonechat was moved from us-west-2 to ca-central-1.", "stonechat")
    hosted = r.Candidate("a", st("We host Stonechat out of us-west-2.", "stonechat"), frozenset({"stonechat"}), 0.64)
    code = r.Candidate("b", st("Stonechat's repository is https://git.example.com/stonechat.", "stonechat"),
                       frozenset({"stonechat"}), 0.62)
    got = r.relate(later, frozenset({"stonechat"}), [hosted, code])
    assert [(i, v.relation) for i, v in got] == [("a", "conflict")]
    unnamed = st("Stonechat now runs in ca-central-1.", "stonechat")  # no value of the old memory: a margin
    assert r.relate(unnamed, frozenset({"stonechat"}), [hosted, code]) == []
