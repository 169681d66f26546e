"""The knowledge-update set (bench/knowledge_update): the files load, the labelled pairs keep their
rules (conflicts carry values their texts state, duplicates are reworded, look-alikes are about
another subject), the no-answer questions' subjects are absent from the bank, the frozen split
is disjoint by subject, the generator reproduces the files, and the scorers count as documented."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bench import knowledge_update as ku
from bench.knowledge_update import generate
from chalicelib.fingerprint import fingerprint

# The frozen split: (label or question kind, split) -> count. Changing the set changes this table.
FROZEN = {
    ("conflict", "tune"): 111, ("conflict", "eval"): 109,
    ("duplicate", "tune"): 59, ("duplicate", "eval"): 59,
    ("unrelated", "tune"): 60, ("unrelated", "eval"): 60,
    ("current", "tune"): 111, ("current", "eval"): 109,
    ("lookalike", "tune"): 60, ("lookalike", "eval"): 60,
    ("no_answer", "tune"): 24, ("no_answer", "eval"): 28,
}


def _words(text: str) -> set[str]:
    """Lower-cased runs of letters and digits."""
    out, word = set(), ""
    for ch in text.lower() + " ":
        if ch.isalnum():
            word += ch
        elif word:
            out.add(word)
            word = ""
    return out


def _jaccard(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / len(wa | wb)


def _texts() -> dict[str, str]:
    return {m.id: m.text for m in ku.bank()}


def test_files_are_json_and_the_loader_reads_every_record():
    for name, loaded in (("bank.json", ku.bank()), ("pairs.json", ku.pairs()), ("questions.json", ku.questions()),
                         ("wild.json", ku.wild())):
        rows = json.loads((ku.DIR / name).read_text(encoding="utf-8"))
        assert isinstance(rows, list) and len(rows) == len(loaded) > 0, name
    assert [m.order for m in ku.bank()] == list(range(1, len(ku.bank()) + 1))
    assert ku.saved_at(ku.bank()[1]) - ku.saved_at(ku.bank()[0]) == ku.HOUR_MS


def test_the_generator_reproduces_the_files():
    for name, text in generate.files().items():
        on_disk = (ku.DIR / name).read_text(encoding="utf-8")
        assert on_disk == text, f"{name} is stale: run python -m bench.knowledge_update.generate"


def test_counts_per_label_kind_and_split_are_the_frozen_ones():
    got = Counter((p.label, p.split) for p in ku.pairs()) + Counter((q.kind, q.split) for q in ku.questions())
    assert dict(got) == FROZEN
    per = Counter(p.label for p in ku.pairs())
    assert per["conflict"] >= 200 and per["duplicate"] >= 100 and per["unrelated"] >= 100
    assert sum(q.kind == "no_answer" for q in ku.questions()) >= 50
    wild = Counter(p.label for p in ku.wild())
    assert sum(wild.values()) >= 30 and set(wild) == set(ku.LABELS)


def test_the_bank_holds_at_least_300_distractors():
    in_pairs = {i for p in ku.pairs() for i in (p.first, p.second)}
    assert sum(m.id not in in_pairs for m in ku.bank()) >= 300


def test_ids_do_not_collide_and_every_text_is_its_own_memory():
    for rows in (ku.bank(), ku.pairs(), ku.questions(), ku.wild()):
        ids = [r.id for r in rows]
        assert len(set(ids)) == len(ids)
    # a text saved twice would reinforce one memory (its id is the content fingerprint)
    assert len({fingerprint(m.text) for m in ku.bank()}) == len(ku.bank())


def test_every_pair_names_two_saved_memories_in_order_with_different_texts():
    by_id = {m.id: m for m in ku.bank()}
    for p in ku.pairs():
        a, b = by_id[p.first], by_id[p.second]
        assert a.order < b.order, p.id
        assert a.text != b.text and p.label in ku.LABELS, p.id
    assert all(p.first != p.second and p.label in ku.LABELS for p in ku.wild())


@pytest.mark.parametrize("source", ["bank", "wild"])
def test_conflicts_carry_a_field_and_values_their_texts_state(source):
    texts = _texts()
    rows = ku.pairs() if source == "bank" else ku.wild()
    for p in (p for p in rows if p.label == "conflict"):
        first, second = (texts[p.first], texts[p.second]) if source == "bank" else (p.first, p.second)
        assert p.field in ku.FIELDS and p.old and p.new and p.old != p.new, p.id
        assert p.old in first and p.new in second, p.id
    for p in (p for p in rows if p.label != "conflict"):
        assert p.field is None and p.old is None and p.new is None, p.id


def test_every_field_is_corrected():
    assert {p.field for p in ku.pairs() if p.label == "conflict"} == set(ku.FIELDS)


@pytest.mark.parametrize("source", ["bank", "wild"])
def test_most_duplicates_are_reworded(source):
    texts = _texts()
    dups = [(texts[p.first], texts[p.second]) if source == "bank" else (p.first, p.second)
            for p in (ku.pairs() if source == "bank" else ku.wild()) if p.label == "duplicate"]
    low = [a for a, b in dups if _jaccard(a, b) < 0.5]
    assert len(low) * 2 >= len(dups)


def test_jaccard_is_word_overlap():
    assert _jaccard("Heron's launch is June 15.", "heron launch: june 15") == pytest.approx(4 / 6)


def test_lookalikes_are_about_two_subjects_of_one_attribute():
    by_id = {m.id: m for m in ku.bank()}
    for p in (p for p in ku.pairs() if p.label == "unrelated"):
        a, b = by_id[p.first], by_id[p.second]
        assert a.subject != b.subject and list(p.subjects) == [a.subject, b.subject], p.id
        assert p.first.split(".")[1] == p.second.split(".")[1] == p.attribute, p.id
    for p in ku.pairs():
        if p.label != "unrelated":
            assert len(p.subjects) == 1 and by_id[p.first].subject == by_id[p.second].subject == p.subjects[0]


def test_questions_point_at_the_current_memory_not_the_corrected_one():
    corrected = {p.second: p.first for p in ku.pairs() if p.label == "conflict"}
    lookalike = {p.second for p in ku.pairs() if p.label == "unrelated"}
    for q in ku.questions():
        assert q.kind in ku.QUESTION_KINDS and q.question.endswith("?"), q.id
        if q.kind == "current":
            assert len(q.gold) == 1 and q.stale == (corrected[q.gold[0]],), q.id
        elif q.kind == "lookalike":
            assert len(q.gold) == 1 and q.gold[0] in lookalike and q.stale == (), q.id
        else:
            assert q.gold == () and q.stale == (), q.id
    assert len({q.gold[0] for q in ku.questions() if q.kind == "current"}) == len(corrected)


def test_no_answer_subjects_appear_nowhere_in_the_bank():
    bank_words = [f" {' '.join(sorted(_words(m.text)))} " for m in ku.bank()]
    texts = [f" {m.text.lower()} " for m in ku.bank()]
    subjects = {m.subject.lower() for m in ku.bank()}
    for q in (q for q in ku.questions() if q.kind == "no_answer"):
        name = q.subject.lower()
        assert name not in subjects and name in q.question.lower(), q.id
        assert not any(name in t for t in texts), q.id
        # nor any proper noun of it ("Albatross", "Petrov", "PDF"; a common word like "finance" may)
        for w in _words(" ".join(w for w in q.subject.split() if w[0].isupper())):
            assert not any(f" {w} " in t for t in bank_words), (q.id, w)


def test_split_is_disjoint_by_subject_and_about_half():
    by_id = {m.id: m for m in ku.bank()}
    where: dict[str, set[str]] = {}
    for m in ku.bank():
        where.setdefault(m.subject, set()).add(m.split)
    for p in ku.pairs():
        for s in p.subjects:
            where.setdefault(s, set()).add(p.split or "")
        assert {by_id[p.first].split, by_id[p.second].split} == {p.split}, p.id
    for q in ku.questions():
        where.setdefault(q.subject, set()).add(q.split)
        assert all(by_id[g].split == q.split for g in q.gold + q.stale), q.id
    assert {s: v for s, v in where.items() if len(v) != 1} == {}
    per = Counter(v.pop() for v in where.values())
    assert set(per) == set(ku.SPLITS) and abs(per["tune"] - per["eval"]) <= 4
    assert len(ku.split_pairs("tune")) + len(ku.split_pairs("eval")) == len(ku.pairs())
    with pytest.raises(ValueError, match="split"):
        ku.split_questions("all")


# A hand-made bank for the scorers: Heron's launch corrected, its database reworded, and a look-alike.
GOLD = [
    ku.Pair("c1", "conflict", "h.launch.old", "h.launch.new", "date", "June 15", "July 20"),
    ku.Pair("c2", "conflict", "h.lead.old", "h.lead.new", "name", "Marta Silva", "Ben Okoro"),
    ku.Pair("d1", "duplicate", "h.db.fact", "h.db.dup", None, None, None),
    ku.Pair("u1", "unrelated", "h.ci.fact", "o.ci.fact", None, None, None),
]


def test_score_pairs_counts_each_link_against_its_gold_label():
    predicted = [
        ku.Prediction("h.launch.new", "h.launch.old", "conflict"),  # right, either order
        ku.Prediction("h.db.fact", "h.db.dup", "conflict"),  # a duplicate called a conflict
        ku.Prediction("h.ci.fact", "o.ci.fact", "duplicate"),  # a look-alike linked: retired
    ]
    s = ku.score_pairs(predicted, gold=GOLD)
    assert (s.conflict.tp, s.conflict.fp, s.conflict.fn) == (1, 1, 1)
    assert (s.duplicate.tp, s.duplicate.fp, s.duplicate.fn) == (0, 1, 1)
    assert s.conflict.precision == 0.5 and s.conflict.recall == 0.5
    assert s.duplicate.precision == 0.0 and s.duplicate.recall == 0.0
    assert (s.lookalikes_linked, s.lookalikes, s.lookalikes_retired_share) == (1, 1, 1.0)
    perfect = ku.score_pairs([ku.Prediction(p.first, p.second, p.label) for p in GOLD[:3]], gold=GOLD)
    assert perfect.conflict.precision == perfect.conflict.recall == perfect.duplicate.recall == 1.0
    assert perfect.lookalikes_retired_share == 0.0


def test_score_pairs_on_the_set_scores_one_split_and_refuses_unknowns():
    tune = ku.split_pairs("tune")
    gold_links = [ku.Prediction(p.first, p.second, p.label) for p in ku.pairs() if p.label != "unrelated"]
    s = ku.score_pairs(gold_links, "tune")
    assert s.conflict.tp == sum(p.label == "conflict" for p in tune) and s.conflict.fp == s.conflict.fn == 0
    assert s.duplicate.recall == 1.0 and s.lookalikes == sum(p.label == "unrelated" for p in tune)
    with pytest.raises(ValueError, match="not in the bank"):
        ku.score_pairs([ku.Prediction("nope", tune[0].second, "conflict")], "tune")
    with pytest.raises(ValueError, match="label"):
        ku.score_pairs([ku.Prediction(tune[0].first, tune[0].second, "unrelated")], "tune")
    with pytest.raises(ValueError, match="split"):
        ku.score_pairs([], None)
    # a prediction on an eval memory does not count in tune
    eval_dup = next(p for p in ku.split_pairs("eval") if p.label == "duplicate")
    assert ku.score_pairs([ku.Prediction(eval_dup.first, eval_dup.second, "conflict")], "tune").conflict.fp == 0
    assert ku.score_pairs([ku.Prediction(eval_dup.first, eval_dup.second, "conflict")], "eval").conflict.fp == 1


def test_score_pairs_scores_the_wild_pairs_by_their_texts():
    wild = ku.wild()
    guess = [ku.Prediction(p.first, p.second, "conflict") for p in wild]  # everything called a conflict
    s = ku.score_pairs(guess, gold=wild)
    n_conflicts = sum(p.label == "conflict" for p in wild)
    assert (s.conflict.tp, s.conflict.fp, s.conflict.fn) == (n_conflicts, len(wild) - n_conflicts, 0)
    assert s.lookalikes_retired_share == 1.0 and s.duplicate.recall == 0.0


def test_score_questions_reads_first_hits_empty_answers_and_gold_loss():
    qs = ku.split_questions("eval")
    current = [q for q in qs if q.kind == "current"]
    none = [q for q in qs if q.kind == "no_answer"]
    answered = [q for q in qs if q.gold]
    baseline = {q.id: [q.gold[0]] for q in answered}
    results = {q.id: [q.gold[0], q.stale[0]] for q in current[:10]}  # 10 right, the rest stale first
    results |= {q.id: [q.stale[0], q.gold[0]] for q in current[10:]}
    results |= {q.id: [] for q in none[:5]} | {q.id: ["x"] for q in none[5:]}
    s = ku.score_questions(results, "eval", baseline)
    assert s.current_first == pytest.approx(10 / len(current))
    assert s.no_answer_empty == pytest.approx(5 / len(none))
    # the look-alike questions got nothing back: their gold, found by the baseline, is lost
    assert s.gold_loss == pytest.approx((len(answered) - len(current)) / len(answered))
    assert ku.score_questions(results, "eval").gold_loss == 0.0
