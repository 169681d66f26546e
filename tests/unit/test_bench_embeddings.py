"""The semantic-signal measurements' own arithmetic (bench.fusion, bench.embedders), on small
made-up data: no model weights needed."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from bench import embedders, fusion


def test_weight_zero_is_todays_ranking_exactly():
    today = [(3, 5.0), (1, 2.0), (0, 2.0)]
    cos = np.array([0.9, 0.1, 0.95, 0.2], dtype=np.float32)
    for form in fusion.FORMS:
        assert fusion.fuse(today, cos, fusion.Fusion(0.0, 0.0, form)) == [3, 1, 0]


def test_vector_candidates_must_clear_the_floor():
    today = [(0, 1.0)]
    cos = np.array([0.1, 0.8, 0.45, 0.2], dtype=np.float32)
    assert fusion.fuse(today, cos, fusion.Fusion(2.0, 0.5)) == [1, 0]  # 1 joins; 2 (0.45) stays out
    assert fusion.fuse(today, cos, fusion.Fusion(2.0, 0.4)) == [1, 0, 2]
    assert fusion.fuse([], cos, fusion.Fusion(2.0, 0.9)) == []  # nothing in the bank: nothing back


def test_forms_add_the_weighted_signal():
    today = [(0, 1.0), (1, 0.9)]
    cos = np.array([0.3, 0.5], dtype=np.float32)
    # raw: 1 + 0.3 < 0.9 + 0.5; shifted at floor 0.45: 1 + 0 > 0.9 + 0.05
    assert fusion.fuse(today, cos, fusion.Fusion(1.0, 0.45, "raw")) == [1, 0]
    assert fusion.fuse(today, cos, fusion.Fusion(1.0, 0.45, "shifted")) == [0, 1]
    # today's 10 and 9: shifted at 0.35 adds 0 and 0.15 (10 wins); scaled first divides by 10 (0.9 + 0.15 wins)
    big = [(0, 10.0), (1, 9.0)]
    assert fusion.fuse(big, cos, fusion.Fusion(1.0, 0.35, "shifted")) == [0, 1]
    assert fusion.fuse(big, cos, fusion.Fusion(1.0, 0.35, "scaled")) == [1, 0]


def test_semantic_only_and_metrics():
    cos = np.array([0.1, 0.7, 0.7, 0.3])
    assert fusion.semantic_only(cos)[:3] == [1, 2, 3]
    m = fusion.mean_metrics([{"R@5": 1.0, "R@10": 1.0, "MRR": 0.5}, {"R@5": 0.0, "R@10": 1.0, "MRR": 0.1}])
    assert m == {"R@5": 0.5, "R@10": 1.0, "MRR": 0.3, "n": 2}


class _Tok:
    """A tokenizer double for StaticTable: one id per word, from a fixed vocabulary."""

    class _Enc:
        def __init__(self, ids: list[int]) -> None:
            self.ids = ids

    vocab: ClassVar[dict[str, int]] = {"[UNK]": 0, "coffee": 1, "tea": 2, "black": 3}

    def encode(self, text: str, add_special_tokens: bool = True) -> _Enc:
        return self._Enc([self.vocab.get(w, 0) for w in text.lower().split()])


def test_static_table_averages_known_pieces_within_the_window():
    table = np.array([[9, 9], [1, 0], [0, 1], [1, 1]], dtype=np.float16)
    skip = np.array([True, False, False, False])
    st = embedders.StaticTable("t", table, _Tok(), skip, window=2)
    v = st.encode(["coffee tea black", "unknown words", "coffee"])
    assert np.allclose(v[0], [np.sqrt(0.5), np.sqrt(0.5)])  # black is past the window, [UNK] never counts
    assert np.allclose(v[1], [0, 0])  # nothing known: a zero vector, never a candidate
    assert np.allclose(v[2], [1, 0]) and v.dtype == np.float32


def test_int8_scores_approximate_the_cosines():
    rng = np.random.default_rng(1)
    docs = embedders.normalise(rng.standard_normal((200, 64)).astype(np.float32))
    q = docs[5]
    codes, scale = embedders.quantise_int8(docs)
    assert codes.dtype == np.int8
    assert np.max(np.abs(embedders.int8_scores(codes, scale, q) - docs @ q)) < 0.02


def test_distill_keeps_skipped_rows_zero_and_weights_frequent_tokens_down():
    rng = np.random.default_rng(2)
    raw = rng.standard_normal((50, 16)).astype(np.float32)
    skip = np.zeros(50, dtype=bool)
    skip[:3] = True
    table = embedders.distill(raw, skip, 8)
    assert table.shape == (50, 8) and not table[:3].any()
    # the same direction at rank 0 and rank 46: the rarer token weighs more (SIF)
    raw[3] = raw[49] = raw[10]
    t2 = embedders.distill(raw, skip, 8)
    assert np.linalg.norm(t2[49]) > np.linalg.norm(t2[3])


def test_erf_matches_math():
    import math

    xs = np.linspace(-4, 4, 81)
    assert np.max(np.abs(embedders._erf(xs) - np.array([math.erf(x) for x in xs]))) < 2e-7


@pytest.mark.parametrize(("text", "ok"), [
    ("when do we go live?", True), ("quando é o lançamento?", True), ("2027?", True),
    ("我们什么时候关闭旧系统", False), ("когда мы отключаем старую систему?", False),
    ("ask Priya about 東京 tomorrow", True),
])
def test_scripts_an_english_model_covers(text, ok):
    assert embedders.covered(text) is ok
