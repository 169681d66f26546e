"""The semantic signal: the query's sentence vector against the memories' stored vectors, fused
into the full score where lexical evidence is weak (``bench/adaptive.py`` chose the form).

Per recall (``fuse``), with the query embedded once (``chalicelib.semantic.embed_query``) and
``c`` a memory's cosine with it (dot product of unit vectors; the index keeps each memory's
vector, ``scorer.SegmentData.vectors``):

- the cosines of every memory that may rank (live unless retired ones rank, the tag filter) and
  has a vector give ``mean``, ``std`` and ``top20`` (the mean of the 20 greatest; a bank of
  fewer counts 0 for the rest, so a handful of memories never lowers the floor much);
- ``semantic`` (the signal, in ``signals``) = ``max(0, (c - mean) / std) / 5``; 0 for a memory
  without a vector;
- ``coverage``: the share of the query's idf mass (its ``text`` terms' idf) that today's first
  candidate matches in ``text``; ``w_eff = w_semantic * (1 - coverage)``: a query today's
  ranking already answers word for word gets little of the signal;
- each of today's candidates adds ``semantic_rerank * w_eff * semantic``;
- up to ``fetch_limit`` memories with the greatest cosine that are not candidates (and that the
  caller's filter accepts) join with their full score plus ``w_eff * semantic``, only when
  ``c >= semantic_floor - semantic_lift * top20``: a question about nothing in the bank finds no
  memory near enough, and still returns nothing.

``w_semantic`` 0 is today's ranking exactly (nothing here runs). A hit's ``contributions`` names
the signal's share (``semantic_weight`` per hit: ``semantic_rerank * w_eff`` or ``w_eff``).
Cost: one matrix-vector product over the bank's vectors (384 float32 per memory) per recall and
the query's forward pass (``chalicelib.semantic``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tuning import MemoryTuning

Key = tuple[int, int]  # (leaf, document number)
TOP_K = 20  # the query's greatest cosines whose mean lowers the floor
Z_SCALE = 5.0


@dataclass
class Inputs:
    """What the first pass knows: ``stats`` (``scorer.CorpusStats``), ``readers``, ``data``
    (per-leaf ``SegmentData``), ``allowed`` (per-leaf bool masks), ``terms`` (the query's
    analysed terms), ``accept`` (the caller's filter over keys or ``None``), ``base(keys)``
    (``(updated_at, totals, signals)`` of ``scorer.full_scores``), ``ids(key)`` (a key's memory
    id), ``query`` (the unit query vector; ``None``: the signal does not run) and ``tuning``."""

    stats: Any
    readers: list[Any]
    data: list[Any]
    allowed: list[np.ndarray]
    terms: tuple[str, ...]
    accept: Callable[[Key], bool] | None
    base: Callable[[list[Key]], tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]]
    ids: Callable[[Key], str]
    query: np.ndarray | None
    tuning: MemoryTuning


@dataclass
class Fused:
    """The candidates after fusion: ``keys``, ``upd``, ``totals``, ``signals`` (``semantic``
    added) aligned, and ``weights``, each key's weight of ``semantic`` in its total."""

    keys: list[Key]
    upd: np.ndarray
    totals: np.ndarray
    signals: dict[str, np.ndarray]
    weights: np.ndarray


def coverage(x: Inputs, first: Key) -> float:
    """The share of the query's ``text`` idf mass that document ``first`` matches, in [0, 1]; 0
    for a query without terms."""
    idf = [x.stats.idf("text", t) for t in x.terms]
    total = sum(idf)
    if total <= 0:
        return 0.0
    i, d = first
    if "text" not in x.data[i].fields:
        return 0.0
    got = 0.0
    for t, w in zip(x.terms, idf, strict=True):
        ids, _w = x.data[i].postings(x.readers[i], "text", t)  # document numbers ascending
        pos = int(np.searchsorted(ids, d))
        got += w if pos < len(ids) and int(ids[pos]) == d else 0.0
    return min(1.0, got / total)


def _cosines(x: Inputs) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per leaf: every document's cosine with the query (0 without a vector) and the mask of the
    documents that may rank and have a vector."""
    assert x.query is not None
    cos, mask = [], []
    for i, reader in enumerate(x.readers):
        mat, present = x.data[i].vectors(reader)
        # einsum, not BLAS: a row's dot product is then the same whatever the matrix around it, so
        # two containers whose segments differ give a memory the same cosine
        cos.append(np.einsum("ij,j->i", mat, x.query) if mat.shape[1] == len(x.query)
                   else np.zeros(len(present), dtype=np.float32))
        mask.append(present & x.allowed[i] if mat.shape[1] == len(x.query) else np.zeros(len(present), dtype=bool))
    return cos, mask


def _joining(x: Inputs, cos: list[np.ndarray], mask: list[np.ndarray], floor: float,
             taken: set[Key]) -> list[Key]:
    """Up to ``fetch_limit`` documents, greatest cosine first (ties: id asc), at or above
    ``floor``, not ``taken``, that the caller's filter accepts."""
    fetch = x.tuning.fetch_limit
    found: list[tuple[float, int, int]] = []
    for i, (c, m) in enumerate(zip(cos, mask, strict=True)):
        docs = np.flatnonzero(m & (c >= floor))
        limit = fetch + len(taken)
        if len(docs) > limit:
            docs = docs[np.argpartition(-c[docs], limit - 1)[:limit]]
        found += [(-float(c[d]), i, int(d)) for d in docs.tolist()]
    found.sort(key=lambda f: (f[0], x.ids((f[1], f[2]))))
    out: list[Key] = []
    for _c, i, d in found:
        key = (i, d)
        if key in taken or (x.accept is not None and not x.accept(key)):
            continue
        out.append(key)
        if len(out) >= fetch:
            break
    return out


def fuse(x: Inputs, keys: list[Key], upd: np.ndarray, totals: np.ndarray, signals: dict[str, np.ndarray]) -> Fused:
    """``keys`` (today's candidates, with their ``upd``, ``totals`` and ``signals``) with the
    semantic signal (module docstring)."""
    t = x.tuning
    cos, mask = _cosines(x)
    # sorted before summing: containers whose segments differ still agree on mean, std, top20
    pooled = np.sort(np.concatenate([c[m] for c, m in zip(cos, mask, strict=True)]).astype(np.float64))
    if not len(pooled):
        signals = {**signals, "semantic": np.zeros(len(keys))}
        return Fused(keys, upd, totals, signals, np.zeros(len(keys)))
    mu, sd = float(pooled.mean()), float(pooled.std()) or 1.0
    top = float(pooled[-TOP_K:].sum()) / TOP_K  # a bank of fewer memories: the rest count 0

    def sem(ks: list[Key]) -> np.ndarray:
        c = np.array([float(cos[i][d]) if mask[i][d] else mu for i, d in ks], dtype=np.float64)
        return np.maximum(0.0, (c - mu) / sd) / Z_SCALE

    if keys:
        first = min(range(len(keys)), key=lambda j: (-totals[j], -upd[j], x.ids(keys[j])))
        w_eff = t.w_semantic * (1.0 - coverage(x, keys[first]))
    else:
        w_eff = t.w_semantic
    s_old = sem(keys)
    weights = np.full(len(keys), t.semantic_rerank * w_eff)
    totals = totals + weights * s_old
    signals = {**signals, "semantic": s_old}
    joining = _joining(x, cos, mask, t.semantic_floor - t.semantic_lift * top, set(keys)) if w_eff > 0 else []
    if not joining:
        return Fused(keys, upd, totals, signals, weights)
    u2, tot2, sig2 = x.base(joining)
    s_new = sem(joining)
    sig2 = {name: sig2.get(name, np.zeros(len(joining))) for name in signals}
    sig2["semantic"] = s_new
    return Fused(keys + joining, np.concatenate([upd, u2]), np.concatenate([totals, tot2 + w_eff * s_new]),
                 {name: np.concatenate([signals[name], sig2[name]]) for name in signals},
                 np.concatenate([weights, np.full(len(joining), w_eff)]))
