"""The quality benchmark's ranker is recall's ranking, the semantic signal included: a paraphrase
question finds its memory through it (as through a full ``recall``), and the paraphrase part's
``semantic alone`` system ranks by meaning only."""

from __future__ import annotations

import pytest

from bench import locomo, paraphrase, paraphrase_recall
from chalicelib import semantic
from chalicelib.banks.transfer import import_lines
from chalicelib.fingerprint import fingerprint
from chalicelib.search.recall import recall
from chalicelib.tuning import MemoryTuning

pytestmark = pytest.mark.skipif(not semantic.available(), reason="the model artifact is not built")

QUESTION, GOLD = "what database did we choose and why?", "o_db"


def _bank() -> tuple[dict[str, int], list[str]]:
    """The gold memory and the set's other orders-service memories (its distractors), imported."""
    mems = [m for m in paraphrase.memories() if m.topic == "orders service"]
    assert any(m.id == GOLD for m in mems)
    result = import_lines("default", "para", paraphrase.import_lines_of(tuple(mems)), actor="test")
    assert not result.errors
    return {fingerprint(m.text): i for i, m in enumerate(mems)}, [m.id for m in mems]


def test_the_benchmark_ranker_is_recall_with_the_semantic_signal(aws):
    """Equal to a full recall question by question, and not today's lexical ranking (the
    benchmark once ranked without the query's vector, so its fused rows were lexical)."""
    ids, _set_ids = _bank()
    tuning = MemoryTuning()
    asked = [q.question for q in paraphrase.all_questions()
             if any(m.id in q.gold and m.topic == "orders service" for m in paraphrase.memories())]
    asked.append("which orders database runs the checkout service?")
    rank = locomo.cairn_ranker("default", "para", ids, paraphrase.NOW, tuning)
    lexical = locomo.cairn_ranker("default", "para", ids, paraphrase.NOW,
                                  tuning.model_copy(update={"w_semantic": 0.0}))
    differ = 0
    for q in asked:
        full = [ids[h.memory.id] for h in recall("default", ["para"], q, limit=locomo.DEPTH, now=paraphrase.NOW,
                                                  tuning=tuning).hits]
        assert rank(q) == full, q
        differ += full != lexical(q)
    assert differ > 0


def test_semantic_alone_scores_by_meaning_only(aws):
    ids, set_ids = _bank()
    alone = paraphrase_recall.systems(MemoryTuning())["semantic alone"]
    hits = recall("default", ["para"], QUESTION, limit=5, now=paraphrase.NOW, tuning=alone).hits
    assert GOLD in [set_ids[ids[h.memory.id]] for h in hits]
    for h in hits:
        assert h.score == pytest.approx(h.contributions["semantic"], abs=1e-9) and h.score > 0
