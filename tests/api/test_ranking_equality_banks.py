"""Recall across many small banks ranks them as ONE corpus: on a seeded corpus split over 40
banks of 10 to 300 memories (each built in several commits, so banks hold several segments,
replaced and retired documents among them), ``recall._rank`` over the banks' leaves gives

- the plain-Python reference's hits (``tests/api/ranking_reference.py``) over the union of the
  banks' records, in the same order, each score and signal within 1e-9, each hit naming the bank
  its memory is in (semantic weight 0: the reference has no semantic signal);
- exactly the hits, scores, signals, contributions and matches of one index holding every
  record, with every signal on, the semantic one included (its mean, spread and joining
  candidates are taken over every bank's vectors).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from chalicelib.core.records import Memory
from chalicelib.search import recall as recall_mod
from chalicelib.search.index import BankIndex
from chalicelib.tuning import MemoryTuning
from tests.api.ranking_reference import Reference
from tests.api.test_ranking_equality import (
    DAY,
    NOW,
    OFF,
    _new_index,
    _queries,
    _records,
    _unit,
    _vocab,
    _with_vector,
)

BANKS = 40


def _index(path: str, name: str, recs: list[Memory], rng: random.Random) -> tuple[BankIndex, dict[str, Memory]]:
    """A bank index of ``recs`` built in two commits, then some rewritten and some retired."""
    entry, apply, current = _new_index(path, name, "inc-" + name)
    half = len(recs) // 2
    apply(recs[:half])
    apply(recs[half:])
    picks = rng.sample(recs, len(recs) // 5)
    apply([_with_vector(r.model_copy(update={"text": r.text + " revised", "updated_at": r.updated_at + DAY}), rng)
           for r in picks[: len(picks) // 2]]
          + [r.model_copy(update={"invalid_at": NOW - DAY}) for r in picks[len(picks) // 2:]])
    return entry, current


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """``(many-bank leaves, one-index leaves, reference, vocabulary, bank of each id)``."""
    rng = random.Random(20261207)
    vocab = _vocab(rng)
    recs = _records(rng, vocab)[:6000]
    sizes = [rng.randint(10, 300) for _ in range(BANKS)]
    starts = np.cumsum([0, *sizes])
    entries, bank_of, current = [], {}, {}
    for b in range(BANKS):
        part = recs[starts[b]:starts[b + 1]]
        entry, cur = _index(str(tmp_path_factory.mktemp(f"b{b}")), f"b{b:02d}", part, random.Random(b))
        entries.append(entry)
        current.update(cur)
        bank_of.update(dict.fromkeys(cur, entry.bank))
    whole, _cur = _index(str(tmp_path_factory.mktemp("whole")), "whole", [], random.Random(0))
    whole.apply(list(enumerate(current.values(), start=1)))
    many = [(leaf, e.stats_cache, e.bank) for e in entries for leaf, _off in e.reader().leaf_readers()]
    one = [(leaf, whole.stats_cache, "whole") for leaf, _off in whole.reader().leaf_readers()]
    assert len(many) > BANKS and any(leaf.has_deletions() for leaf, _c, _b in many)
    yield many, one, Reference(list(current.values())), vocab, bank_of
    for e in [*entries, whole]:
        e.close_reader()


def _rank(leaves, q: str, tuning: MemoryTuning, vector: np.ndarray | None, limit: int = 20, **kw):
    return recall_mod._rank(leaves, q, limit=limit, tuning=tuning, filter=None, now=NOW, tag=kw.get("tag"),
                            include_superseded=kw.get("include_superseded", False), query_vector=vector)[0]


@pytest.mark.parametrize("kw", [{}, {"tag": "ops"}, {"include_superseded": True}], ids=["live", "tag", "retired"])
def test_many_banks_rank_as_the_reference_ranks_their_union(corpus, kw):
    many, _one, reference, vocab, bank_of = corpus
    tuning = MemoryTuning(w_semantic=0.0)
    rng = random.Random(11)
    compared = 0
    for q in _queries(vocab):
        hits = _rank(many, q, tuning, _unit(rng), limit=30, **kw)
        want = reference.rank(q, limit=30, tuning=tuning, now=NOW, **kw)
        assert [h.memory.id for h in hits] == [w.id for w in want], q
        for h, w in zip(hits, want, strict=True):
            assert h.bank == bank_of[h.memory.id]
            assert h.score == pytest.approx(w.score, abs=1e-9, rel=0), (q, w.id)
            for s, v in w.signals.items():
                assert h.signals[s] == pytest.approx(v, abs=1e-9, rel=0), (q, w.id, s)
        compared += len(want)
    assert compared > 300


@pytest.mark.parametrize("weights", [{}, {**OFF, "w_prf": 1.0}, {"semantic_floor": 0.0}],
                         ids=["defaults", "feedback", "semantic-wide"])
def test_many_banks_rank_exactly_as_one_index_of_the_same_records(corpus, weights):
    many, one, _reference, vocab, bank_of = corpus
    tuning = MemoryTuning(**weights)
    rng = random.Random(5)
    semantic = 0
    for q in _queries(vocab):
        vector = _unit(rng)
        split, whole = _rank(many, q, tuning, vector), _rank(one, q, tuning, vector)
        assert [(h.memory.id, h.score, h.signals, h.contributions, h.match) for h in split] == \
            [(h.memory.id, h.score, h.signals, h.contributions, h.match) for h in whole], q
        assert all(h.bank == bank_of[h.memory.id] for h in split)
        semantic += sum(h.signals.get("semantic", 0) > 0 for h in split)
    assert semantic > 0 or weights.get("w_prf")
