"""The arithmetic of the lexical-coverage fusion (bench.adaptive) and of the fast forward pass's
pieces (bench.embedders), on small made-up data: no model weights needed."""

from __future__ import annotations

import numpy as np
import pytest

from bench import adaptive, embedders
from bench.adaptive import Adaptive, Query


def _query(cos: list[float], docs: list[int] | None = None, score: list[float] | None = None,
           bm25: list[float] | None = None, idf: list[float] | None = None,
           matched: list[list[bool]] | None = None) -> Query:
    docs = docs or []
    idf = idf if idf is not None else [1.0]
    matched = matched if matched is not None else [[True] * len(idf) for _ in docs]
    return Query(docs, score or [1.0] * len(docs), bm25 or [1.0] * len(docs), idf,
                 np.array(matched, dtype=bool).reshape(len(docs), len(idf)), np.array(cos), k=3)


def test_weight_zero_is_todays_ranking_exactly():
    q = _query([0.9, 0.1, 0.95, 0.2, 0.8], docs=[3, 1, 0], score=[5.0, 2.0, 2.0])
    for sig in adaptive.SIGNALS:
        for cov in adaptive.COVERAGES:
            assert adaptive.fuse(q, Adaptive(0.0, 2.0, cov, sig, 0.0), 10) == [3, 1, 0]


def test_coverage_forms():
    # two terms of idf 3 and 1 (attainable 4); candidate 0 matches the second only, candidate 1 the first
    q = _query([0.1] * 4, docs=[0, 1], score=[2.0, 1.5], bm25=[1.0, 3.2], idf=[3.0, 1.0],
               matched=[[False, True], [True, False]])
    assert adaptive.coverage(q, "none") == 0.0
    assert adaptive.coverage(q, "bm25") == pytest.approx(0.8)  # 3.2 / 4
    assert adaptive.coverage(q, "idf") == pytest.approx(0.75)  # candidate 1: 3 of 4
    assert adaptive.coverage(q, "top") == pytest.approx(0.25)  # today's first: 1 of 4
    assert adaptive.coverage(_query([0.1, 0.2], idf=[]), "idf") == 0.0  # no terms, no candidates
    with pytest.raises(ValueError):
        adaptive.coverage(q, "other")


def test_effective_weight_falls_with_coverage():
    assert adaptive.weight(Adaptive(8.0, 2.0), 0.5) == pytest.approx(2.0)  # 8 * 0.5^2
    assert adaptive.weight(Adaptive(8.0, 2.0), 1.0) == 0.0
    ramp = Adaptive(8.0, ramp=(0.2, 0.6))
    assert [adaptive.weight(ramp, c) for c in (0.1, 0.2, 0.4, 0.6, 0.9)] == pytest.approx([8, 8, 4, 0, 0])


def test_full_lexical_coverage_leaves_todays_ranking_and_adds_nothing():
    q = _query([0.2, 0.1, 0.9, 0.8], docs=[1, 0], score=[3.0, 1.0], bm25=[3.0, 1.0])
    f = Adaptive(16.0, 2.0, "idf", "raw", 0.3)
    assert adaptive.fuse(q, f, 10) == [1, 0]
    assert adaptive.semantic_empty(q, f)


def test_floor_with_lift_admits_by_the_querys_top_cosines():
    # no lexical candidate; top20 is the mean of every cosine here (4 memories): 0.4
    q = _query([0.5, 0.45, 0.4, 0.25], idf=[2.0])
    assert q.top == pytest.approx(0.4)
    absolute = Adaptive(1.0, floor=0.47)
    assert adaptive.fuse(q, absolute, 10) == [0]
    lifted = Adaptive(1.0, floor=0.47 + 0.4, lift=1.0)  # the same cut for this query
    assert adaptive.fuse(q, lifted, 10) == [0]
    assert adaptive.fuse(q, Adaptive(1.0, floor=0.8, lift=1.0), 10) == [0, 1, 2]  # 0.4 + 0.4 clears, 0.25 not
    assert adaptive.semantic_empty(q, Adaptive(1.0, floor=0.95, lift=1.0))
    assert adaptive.gate(q, 1.0) == pytest.approx(0.9)


def test_calibrated_floor_leaves_the_share_asked_empty():
    probes = [_query([c, 0.0, 0.0, 0.0], idf=[1.0]) for c in (0.1, 0.3, 0.5, 0.7)]
    floor = adaptive.calibrated_floor(probes, 0.0, 1.0)
    assert floor == pytest.approx(0.701)
    assert all(adaptive.semantic_empty(q, Adaptive(1.0, floor=floor)) for q in probes)
    assert adaptive.calibrated_floor(probes, 0.0, 0.75) == pytest.approx(0.501)  # one of four keeps a candidate


def test_signals_and_rerank():
    q = _query([0.2, 0.6, 0.3, 0.1], docs=[0, 1], score=[1.0, 0.9], idf=[1.0], matched=[[False], [False]])
    raw = Adaptive(1.0, signal="raw", floor=0.5)
    assert adaptive.fuse(q, raw, 10) == [1, 0]  # 0.9 + 0.6 beats 1 + 0.2; memory 2 (0.3) is below the floor
    assert adaptive.fuse(q, Adaptive(1.0, signal="raw", floor=0.5, rerank=0.0), 10) == [0, 1]
    assert adaptive.fuse(q, Adaptive(1.0, signal="raw", floor=0.5, rerank=0.2), 10) == [0, 1]  # 0.9 + 0.12 < 1 + 0.04
    rel = adaptive.signal(Adaptive(1.0, signal="rel"), q, np.array([0.6, 0.3]), np.array([0, 1]))
    assert rel == pytest.approx([1.0, (0.3 - 0.3) / (0.6 - 0.3)])
    rank = adaptive.signal(Adaptive(1.0, signal="rank"), q, np.array([0.6, 0.3]), np.array([0, 1]))
    assert rank == pytest.approx([1.0, adaptive.RANK_K / (adaptive.RANK_K + 1)])


def test_vector_candidates_are_the_nearest_not_already_candidates():
    q = _query([0.9, 0.8, 0.7, 0.6, 0.5], docs=[0], score=[1.0], idf=[1.0], matched=[[False]])
    assert q.vdocs.tolist() == [1, 2, 3]  # k = 3


def test_gelu_forms_and_in_place_layer_norm():
    x = np.linspace(-6, 6, 241, dtype=np.float32).reshape(1, -1)
    exact = embedders._gelu(x.astype(np.float64))
    for kind, tol in (("erf", 1e-6), ("tanh", 1e-3), ("sigmoid", 2.1e-2)):
        y = x.copy()
        embedders.gelu_(y, kind, np.empty_like(y))
        assert np.abs(y - exact).max() < tol, kind
    with pytest.raises(ValueError):
        embedders.gelu_(x.copy(), "relu", np.empty_like(x))
    rng = np.random.default_rng(1)
    h = rng.standard_normal((3, 8)).astype(np.float32)
    g, b = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    want = embedders._layer_norm(h, g, b)
    embedders.layer_norm_(h, g, b)
    assert np.allclose(h, want, atol=1e-5)
