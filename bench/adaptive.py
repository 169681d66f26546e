"""Fusion that knows when lexical evidence is strong: today's ranking plus a semantic signal whose
weight falls as BM25F explains the query better (``bench.semantic`` measures it).

Everything here is computable in the service per recall from what ranking already has: the
candidates' scores and BM25F, the query's analysed ``text`` terms and their idf, which terms each
candidate matches (its postings), the candidates' cosines, and statistics of the bank's cosines
for the query (one matrix-vector product gives all of them: ``mean``, ``std``, ``max``, ranks).

Per query (``Query``): ``attainable = sum(idf)`` over its terms, the BM25F a memory of average
length matching each term once would get (BM25's ``tf*(k1+1)/(tf+k1*(1-b+b*len/avgfl))`` is 1 at
``tf = 1``, ``len = avgfl``). The lexical **coverage** (``COVERAGES``), in [0, 1], 0 for a query
without terms:

- ``bm25``: the best candidate's BM25F over ``attainable`` (capped at 1);
- ``idf``: the largest share of the query's idf mass one candidate matches;
- ``top``: the share of the idf mass today's first candidate matches;
- ``none``: 0 (a plain weighted sum, round 1's fusion).

``w_eff = w * (1 - coverage) ** p``, or with a ``ramp`` ``(lo, hi)``: ``w`` up to a coverage of
``lo``, 0 from ``hi``, linear between. The signal ``sem`` (``SIGNALS``) of a cosine ``c``, with
``mu``, ``sd``, ``mx`` the mean, standard deviation and maximum of the query's cosines over the
bank and ``r`` the memory's 0-based rank by cosine: ``raw`` ``c``; ``shifted`` ``max(0, c -
floor + lift * top)``; ``z`` ``max(0, (c - mu) / sd) / 5``; ``rel`` ``max(0, (c - mu) / (mx - mu))``; ``rank``
``RANK_K / (RANK_K + r)``. Lexical scores are today's divided by ``attainable`` when ``norm`` is
``attainable`` (so a candidate's lexical part is about the share of the query it matches), else
as today.

Fused: each of today's candidates scores ``lexical + rerank * w_eff * sem(c)`` (``rerank`` 0: the
signal only brings memories in, today's candidates keep today's order); the ``k`` memories with
the greatest cosine that are not among them join at ``w_eff * sem(c)`` when ``w_eff > 0`` and
they clear the floor: ``c + lift * top >= floor``, ``top`` the mean of the query's ``TOP_K``
greatest cosines over the bank. With ``lift`` 0 the floor is absolute; with ``lift`` > 0 it is
lower for a query the bank has much to say about (many memories near it) and higher for one it
has little (a lone memory near it): an off-topic question finds one weakly related memory, an
in-domain paraphrase finds its subject's memories. ``w = 0`` is today's ranking exactly. Ties:
score desc, then today's order, then memory index.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

COVERAGES = ("none", "bm25", "idf", "top")
SIGNALS = ("raw", "shifted", "z", "rel", "rank")
NORMS = ("none", "attainable")
RANK_K = 5.0
TOP_K = 20  # the query's greatest cosines whose mean ``top`` lifts the floor
Z_SCALE = 5.0
VECTOR_K = 50  # vector candidates per query: recall's fetch_limit


@dataclass(frozen=True)
class Adaptive:
    """One fusion (module docstring)."""

    w: float
    p: float = 0.0
    coverage: str = "none"
    signal: str = "raw"
    floor: float = 0.35
    lift: float = 0.0
    norm: str = "none"
    ramp: tuple[float, float] | None = None
    rerank: float = 1.0
    k: int = VECTOR_K


class Query:
    """What ranking has for one query: today's candidates ``docs`` (memory indexes, today's order)
    with their ``score`` and ``bm25``, the query terms' ``idf``, ``matched`` (candidates x terms,
    bool), and the cosines ``cos`` of the query against every memory of the bank."""

    def __init__(self, docs: Iterable[int], score: Iterable[float], bm25: Iterable[float], idf: Iterable[float],
                 matched: np.ndarray, cos: np.ndarray, k: int = VECTOR_K) -> None:
        self.docs = np.asarray(list(docs), dtype=np.int64)
        self.score = np.asarray(list(score), dtype=np.float64)
        self.bm25 = np.asarray(list(bm25), dtype=np.float64)
        self.idf = np.asarray(list(idf), dtype=np.float64)
        self.matched = np.asarray(matched, dtype=bool).reshape(len(self.docs), len(self.idf))
        cos = np.asarray(cos, dtype=np.float64)
        self.attainable = float(self.idf.sum())
        self.mu, self.sd, self.mx = float(cos.mean()), float(cos.std()) or 1.0, float(cos.max())
        order = np.argsort(-cos, kind="stable")
        self.top = float(cos[order[:TOP_K]].mean())
        rank = np.empty(len(cos), dtype=np.int64)
        rank[order] = np.arange(len(cos))
        seen = set(self.docs.tolist())
        self.vdocs = np.asarray([d for d in order[:k + len(seen)].tolist() if d not in seen][:k], dtype=np.int64)
        self.cd, self.cv = cos[self.docs], cos[self.vdocs]
        self.rd, self.rv = rank[self.docs], rank[self.vdocs]
        self.cov = {c: coverage(self, c) for c in COVERAGES}


def coverage(q: Query, kind: str) -> float:
    """The query's lexical coverage in [0, 1] (module docstring); raises ``ValueError`` for an
    unknown kind."""
    if kind not in COVERAGES:
        raise ValueError(f"coverage must be one of {COVERAGES}, got {kind!r}")
    if kind == "none" or q.attainable <= 0 or not len(q.docs):
        return 0.0
    if kind == "bm25":
        return min(1.0, float(q.bm25.max()) / q.attainable)
    shares = (q.matched * q.idf).sum(1) / q.attainable
    return float(shares.max() if kind == "idf" else shares[0])


def weight(f: Adaptive, cov: float) -> float:
    """``w_eff`` (module docstring)."""
    if f.ramp is not None:
        lo, hi = f.ramp
        return f.w * min(1.0, max(0.0, (hi - cov) / (hi - lo)))
    return f.w * (1.0 - cov) ** f.p


def signal(f: Adaptive, q: Query, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``sem`` of cosines ``c`` with bank ranks ``r`` (module docstring)."""
    if f.signal == "raw":
        return c
    if f.signal == "shifted":
        return np.maximum(0.0, c + f.lift * q.top - f.floor)
    if f.signal == "z":
        return np.maximum(0.0, (c - q.mu) / q.sd) / Z_SCALE
    if f.signal == "rel":
        return np.maximum(0.0, (c - q.mu) / max(q.mx - q.mu, 1e-9))
    if f.signal == "rank":
        return RANK_K / (RANK_K + r)
    raise ValueError(f"signal must be one of {SIGNALS}, got {f.signal!r}")


def admitted(f: Adaptive, q: Query) -> np.ndarray:
    """The vector-only candidates (bool over ``q.vdocs``) that clear the floor."""
    return q.cv + f.lift * q.top >= f.floor


def gate(q: Query, lift: float) -> float:
    """The greatest ``c + lift * top`` of the query's vector-only candidates (-inf without one):
    the floor must exceed it for the query to get no semantic candidate."""
    return float(q.cv.max() + lift * q.top) if len(q.cv) else float("-inf")


def fuse(q: Query, f: Adaptive, depth: int) -> list[int]:
    """The fused top ``depth`` memory indexes (module docstring)."""
    w = weight(f, q.cov[f.coverage]) if f.w > 0 else 0.0
    lex = q.score / q.attainable if f.norm == "attainable" and q.attainable > 0 else q.score
    if w <= 0:
        return q.docs[:depth].tolist()
    s = lex + (f.rerank * w) * signal(f, q, q.cd, q.rd) if f.rerank else lex
    keep = admitted(f, q)
    v = q.vdocs[keep]
    scores = np.concatenate([s, w * signal(f, q, q.cv[keep], q.rv[keep])])
    ties = np.concatenate([np.arange(len(q.docs)), len(q.docs) + v])
    order = np.lexsort((ties, -scores))[:depth]
    return np.concatenate([q.docs, v])[order].tolist()


def semantic_empty(q: Query, f: Adaptive) -> bool:
    """Whether no vector-only candidate joins (a question about nothing in the bank: nothing back)."""
    return f.w <= 0 or weight(f, q.cov[f.coverage]) <= 0 or not admitted(f, q).any()


def calibrated_floor(probes: list[Query], lift: float, empty: float) -> float:
    """The least floor (rounded up to 0.001) at which at least ``empty`` of ``probes`` get no
    semantic candidate, with ``lift``."""
    g = sorted((gate(q, lift) for q in probes), reverse=True)
    allowed = int(np.floor(len(g) * (1 - empty) + 1e-9))  # probes that may keep a candidate
    top = g[allowed] if allowed < len(g) else float("-inf")
    return float(np.floor(top * 1000) + 1) / 1000 if np.isfinite(top) else -1.0
