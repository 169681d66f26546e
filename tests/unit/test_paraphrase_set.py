"""The paraphrase set (bench/paraphrase): every question shares no analysed token with its gold
memories (BM25F = 0 through recall's own analysers), names none of their entity handles but
``user``, and the tuning/evaluation split is fixed, complete and stratified by category."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import paraphrase
from chalicelib.banks.records import normalize_handles
from chalicelib.fingerprint import fingerprint
from chalicelib.search.analyzers import entity_keys

# reserved for an end-to-end test over HTTP: allowed in the evaluation part only
RESERVED = ("what database did we choose and why?", "when do we go live?", "what is the release date?")


def _by_id() -> dict[str, paraphrase.Memory]:
    return {m.id: m for m in paraphrase.memories()}


def test_sizes_and_ids():
    mems, qs = paraphrase.memories(), paraphrase.all_questions()
    assert len(mems) >= 500 and len(qs) >= 150
    assert len({m.id for m in mems}) == len(mems) and len({q.id for q in qs}) == len(qs)
    # each text is its own memory in a bank (the id is the content fingerprint)
    assert len({fingerprint(m.text) for m in mems}) == len(mems)
    by_id = _by_id()
    assert all(q.gold and set(q.gold) <= by_id.keys() for q in qs)
    assert {q.category for q in qs} == set(paraphrase.CATEGORIES)


def test_every_question_shares_no_analysed_token_with_its_gold_memories():
    by_id = _by_id()
    found = {(q.id, g): sorted(paraphrase.shared_tokens(q.question, by_id[g]))
             for q in paraphrase.all_questions() for g in q.gold}
    assert {k: v for k, v in found.items() if v} == {}


def test_shared_tokens_sees_what_bm25f_would_match():
    # the check itself: a stemmed word, a split identifier, a CJK bigram and a named handle count
    m = paraphrase.Memory("x", "Orders ship via eu-west-1; 東京都の天気", ("tomás ferreira", "user"), "t")
    assert paraphrase.shared_tokens("which order?", m) == {"order"}
    assert paraphrase.shared_tokens("west or east", m) == {"west"}
    assert paraphrase.shared_tokens("天気は", m) == {"天気"}
    assert paraphrase.shared_tokens("ask Tomás Ferreira", m) == {"tomás ferreira"}
    assert paraphrase.shared_tokens("what do I like", m) == set()  # ``user``: any first-person question


def test_entities_are_stored_handles_and_leak_only_user():
    by_id = _by_id()
    for m in paraphrase.memories():
        assert list(m.entities) == normalize_handles(list(m.entities), "entities")
    for q in paraphrase.all_questions():
        for g in q.gold:
            assert set(entity_keys(q.question)) & set(by_id[g].entities) <= {"user"}, q.id


def test_split_is_fixed_and_stratified():
    qs = paraphrase.all_questions()
    assert {q.split for q in qs} == set(paraphrase.SPLITS)
    per = Counter((q.category, q.split) for q in qs)
    for cat in paraphrase.CATEGORIES:
        assert abs(per[(cat, "tune")] - per[(cat, "eval")]) <= 1, cat
    assert len(paraphrase.questions("tune")) + len(paraphrase.questions("eval")) == len(qs)
    by_text = {q.question: q for q in qs}
    assert all(by_text[r].split == "eval" for r in RESERVED if r in by_text)
    with pytest.raises(ValueError, match="split"):
        paraphrase.questions("all")


def test_import_lines_carry_text_entities_and_times():
    lines = paraphrase.import_lines_of()
    assert len(lines) == len(paraphrase.memories())
    first = paraphrase.memories()[0]
    assert first.text.encode() in lines[0]
    assert paraphrase.saved_at(0) == paraphrase.NOW
    assert all(paraphrase.NOW - 91 * paraphrase.DAY_MS < paraphrase.saved_at(i) <= paraphrase.NOW
               for i in range(len(lines)))
