"""The vectorised ranking (``chalicelib.search.recall._rank``) against the plain-Python reference
(``tests/api/ranking_reference.py``) on a seeded corpus of 10,000 memories indexed directly
(several segments, replaced documents still in their segments, retired memories, structured and
CJK ones): every query of the set, common words and rare ones, gives the same hits in the same
order, each score and signal within 1e-9."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import pytest
from whoosh import index as whoosh_index

from chalicelib import semantic
from chalicelib.core import vectors
from chalicelib.core.records import Memory
from chalicelib.core.store import Clock
from chalicelib.search import recall as recall_mod
from chalicelib.search.index import INDEX_NAME, BankIndex
from chalicelib.search.schema import schema
from chalicelib.tuning import MemoryTuning
from tests.api.ranking_reference import Reference

N = 10_000
NOW = 1_900_000_000_000
DAY = 86_400_000
SYL = ["ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "pi", "qua", "zen", "bri", "mon", "tal", "ux", "ne"]
PEOPLE = [f"person{i}" for i in range(40)] + ["alice", "bob smith", "user"]
TAGS = ["ops", "home", "work", "travel"]


def _vocab(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < 3000:
        words.add("".join(rng.choice(SYL) for _ in range(rng.randint(2, 4))))
    out = sorted(words)
    rng.shuffle(out)
    return out


def _unit(rng: random.Random) -> np.ndarray:
    v = np.array([rng.gauss(0, 1) for _ in range(semantic.DIM)], dtype=np.float32)
    return v / np.linalg.norm(v)


def _with_vector(rec: Memory, rng: random.Random) -> Memory:
    """``rec`` carrying a random current vector (all but every seventh memory: old ones have none)."""
    if rng.random() < 6 / 7:
        rec.set_vector_blob(vectors.encode(_unit(rng), vectors.embedded_text(rec)))
    return rec


def _records(rng: random.Random, vocab: list[str]) -> list[Memory]:
    weights = [1.0 / (r + 1) for r in range(len(vocab))]
    recs = []
    for i in range(N):
        words = rng.choices(vocab, weights=weights, k=rng.randint(3, 30))
        if i % 97 == 0:
            words += ["東京都の天気は晴れです"]
        if i % 89 == 0:
            words += ["os.path.join", "parseHttpHeader"]
        if i % 13 == 0:
            words += ["yesterday"]  # states a time (the time signal)
        t = NOW - rng.randint(0, 400) * DAY - rng.randint(0, 3) * 1000  # many equal updated_at
        structured = i % 10 == 0
        recs.append(_with_vector(Memory(
            id=f"m{i:05d}", text=" ".join(words), created_at=t, updated_at=t,
            source={"session_id": f"s{i % 3}"},  # same day, same session: neighbours
            entities=rng.sample(PEOPLE, rng.randint(0, 2)), tags=rng.sample(TAGS, rng.randint(0, 2)),
            pinned=rng.random() < 0.05, corroboration=rng.choice([0, 0, 0, 1, 2, 7]),
            name=f"note_{words[0]}" if structured else None,
            description=" ".join(rng.choices(vocab, weights=weights, k=4)) if structured else None), rng))
    return recs


def _new_index(path: str, name: str, inc: str) -> tuple[BankIndex, Callable[[list[Memory]], None], dict[str, Memory]]:
    """``(entry, apply, current)``: an empty bank index of bank ``name`` (incarnation ``inc``) in
    ``path``, the function that applies a batch of records to it as its next changes (positions
    from 1, one commit a batch) and the records it holds by id, kept up to date by ``apply``."""
    entry = BankIndex("o", name, inc, path, whoosh_index.create_in(path, schema(), indexname=INDEX_NAME),
                      clock=Clock((0,)))
    current: dict[str, Memory] = {}
    seq = itertools.count(1)

    def apply(batch: list[Memory]) -> None:
        changes = [(next(seq), r) for r in batch]
        current.update((r.id, r) for r in batch)
        if changes:
            entry.apply(changes)

    return entry, apply, current


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """``(leaves, current records)``: the index built in batches, then some memories rewritten
    and some retired, so segments hold deleted and dead documents."""
    rng = random.Random(20261201)
    vocab = _vocab(rng)
    recs = _records(rng, vocab)
    entry, apply, current = _new_index(str(tmp_path_factory.mktemp("rank")), "b", "inc")
    for i in range(0, N, 2500):
        apply(recs[i:i + 2500])
    for _round in range(3):  # small commits: replaced and retired documents in older segments
        picks = rng.sample(recs, 150)
        apply([_with_vector(r.model_copy(update={"text": r.text + " " + " ".join(rng.sample(vocab[:50], 3)),
                                                 "updated_at": r.updated_at + DAY}), rng) for r in picks[:100]]
              + [r.model_copy(update={"invalid_at": NOW - DAY}) for r in picks[100:]])
    leaves = [(leaf, entry.stats_cache, "b") for leaf, _off in entry.reader().leaf_readers()]
    assert len(leaves) > 1 and any(leaf.has_deletions() for leaf, _c, _b in leaves)
    yield leaves, Reference(list(current.values())), vocab
    entry.close_reader()


def _queries(vocab: list[str]) -> list[str]:
    rng = random.Random(7)
    common = [" ".join(rng.sample(vocab[:10], 3)) for _ in range(12)]
    rare = [" ".join(rng.sample(vocab[1500:3000], 2)) for _ in range(12)]
    mixed = [f"{vocab[i]} {vocab[2000 + i]}" for i in range(6)]
    return common + rare + mixed + [
        "what does alice think of " + vocab[3], "bob smith " + vocab[700], "my " + vocab[0], "person7",
        "東京 天気", "os.path.join", "parse http header", "note_" + vocab[1], vocab[0], "zzzz nothing",
        f"when did {vocab[5]} {vocab[1800]} happen", f"{vocab[2]} {vocab[1700]} last month",
        f"what happened on 3 {_month(NOW - 40 * DAY)}", f"{vocab[2100]} {vocab[4]} 2 weeks ago"]


def _month(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%B %Y")


def _check(corpus, tuning: MemoryTuning, limit: int, sample: bool = False, **kw) -> int:
    """Hits compared over every query of the set (``sample``: every fourth, and the dated ones),
    each query with a sentence vector (the semantic signal's input: ``w_semantic`` is 0 here)."""
    leaves, reference, vocab = corpus
    compared = 0
    qs = _queries(vocab)
    rng = random.Random(11)
    for q in (qs[:-4:4] + qs[-4:]) if sample else qs:
        hits, _n = recall_mod._rank(leaves, q, limit=limit, tuning=tuning, filter=None, now=NOW,
                                    tag=kw.get("tag"), include_superseded=kw.get("include_superseded", False),
                                    query_vector=_unit(rng))
        want = reference.rank(q, limit=limit, tuning=tuning, now=NOW, **kw)
        assert [h.memory.id for h in hits] == [w.id for w in want], q
        for h, w in zip(hits, want, strict=True):
            assert h.score == pytest.approx(w.score, abs=1e-9, rel=0), (q, w.id)
            assert h.signals.keys() == w.signals.keys()
            for s, v in w.signals.items():
                assert h.signals[s] == pytest.approx(v, abs=1e-9, rel=0), (q, w.id, s)
        compared += len(want)
    return compared


# the signals of chalicelib.search.signals off, and the semantic signal: weight 0 is today's ranking exactly
OFF = {"w_prf": 0.0, "w_time": 0.0, "w_neighbour": 0.0, "w_semantic": 0.0}


def test_ranking_equals_the_reference_with_the_new_signals_off(corpus):
    assert _check(corpus, MemoryTuning(**OFF), limit=100) > 1000


def test_ranking_equals_the_reference_with_a_small_fetch_and_other_weights(corpus):
    """A fetch limit of 7 makes the candidate cut (ties included) decide what ranks."""
    tuning = MemoryTuning(fetch_limit=7, w_entity=0.2, w_corroboration=1.1, w_pinned=2.0, decay_half_life_days=3,
                          recency_floor=0.1, **OFF)
    assert _check(corpus, tuning, limit=10) > 100


def test_ranking_equals_the_reference_with_a_tag_and_retired_memories(corpus):
    assert _check(corpus, MemoryTuning(**OFF), limit=30, tag="ops") > 100
    assert _check(corpus, MemoryTuning(**OFF), limit=30, include_superseded=True) > 100


def test_ranking_equals_the_reference_with_the_default_signals(corpus):
    """The shipped defaults (time and neighbourhood on, feedback off) on every query, the semantic
    signal at weight 0 (the reference has none; its vectors are in the corpus and the query)."""
    defaults = MemoryTuning(w_semantic=0.0)
    assert defaults.w_time and defaults.w_neighbour, "the defaults run no new signal"
    assert _check(corpus, defaults, limit=30) > 1000


@pytest.mark.parametrize("one", [{"w_prf": 1.0}, {"w_time": 2.0}, {"w_neighbour": 0.5, "neighbour_hits": 5},
                                 {"w_neighbour": 0.5, "neighbour_window_minutes": 3 * 1440}],  # past the 64 examined
                         ids=["feedback", "time", "neighbour", "neighbour-wide"])
def test_ranking_equals_the_reference_with_one_signal_strong(corpus, one):
    """Each signal alone at a strong weight (feedback, off by default, included), on a sample."""
    assert _check(corpus, MemoryTuning(**{**OFF, **one}), limit=20, sample=True) > 150


def test_each_new_signal_changes_some_ranking(corpus):
    """Each signal reaches the hits it should (the check above cannot pass with a signal dead)."""
    leaves, _ref, vocab = corpus
    for key, name in (("w_prf", "prf"), ("w_time", "time"), ("w_neighbour", "neighbour")):
        tuning = MemoryTuning(**{**OFF, key: 1.0})
        seen = [h.signals.get(name, 0.0) for q in _queries(vocab)
                for h in recall_mod._rank(leaves, q, limit=20, tuning=tuning, filter=None, now=NOW, tag=None,
                                          include_superseded=False)[0]]
        assert any(v > 0 for v in seen), name


def test_the_semantic_signal_reaches_the_ranking_when_weighted(corpus):
    """The same corpus and query vectors at the default semantic weight: some ranking changes, so
    the weight-0 checks above compare against a signal that is alive."""
    leaves, reference, vocab = corpus
    tuning = MemoryTuning(**{**OFF, "w_semantic": 24.0, "semantic_floor": 0.0})
    rng = random.Random(11)
    changed = 0
    for q in _queries(vocab):
        hits, _n = recall_mod._rank(leaves, q, limit=20, tuning=tuning, filter=None, now=NOW, tag=None,
                                    include_superseded=False, query_vector=_unit(rng))
        want = reference.rank(q, limit=20, tuning=tuning, now=NOW)
        assert all("semantic" in h.signals for h in hits)
        changed += [h.memory.id for h in hits] != [w.id for w in want]
    assert changed > 0
