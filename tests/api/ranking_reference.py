"""A plain-Python reference of recall's ranking, written from its documentation (the docstrings of
``chalicelib.search.scorer`` and ``chalicelib.search.recall``), never from its code: the
vectorised ranking is checked against it (``tests/api/test_ranking_equality.py``).

The corpus is a list of records (the bank's current record per id). Per document and text field
(``text``, ``name``, ``description``; ``cjk`` holds the CJK runs of all three) the analyser's
tokens give each term's frequency and the field's length; a length counts as Whoosh stores it
(one byte: ``byte_to_length(length_to_byte(n))``), for the document and for the corpus average.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from whoosh.util.numeric import byte_to_length, length_to_byte

from chalicelib.core import dates
from chalicelib.core.records import Memory
from chalicelib.search.analyzers import cjk_analyzer, entity_keys, has_cjk, memory_analyzer, query_terms
from chalicelib.search.signals import NEIGHBOUR_SCAN, VAGUE_TIME, date_ranges, is_when, states_time
from chalicelib.tuning import MemoryTuning

K1, B = 1.2, 0.75
DAY_MS = 86_400_000
FIELDS = ("text", "name", "description", "cjk")


def _tokens(field: str, value: str) -> list[str]:
    analyzer = cjk_analyzer() if field == "cjk" else memory_analyzer()
    return [t.text for t in analyzer(value)]


@dataclass
class Doc:
    rec: Memory
    tf: dict[str, Counter]  # field -> term -> frequency
    length: dict[str, int]  # field -> length as stored (one byte, decoded)
    pairs: dict[tuple[str, str], int]  # (field, term) -> frequency, the same figures flat


def _doc(rec: Memory) -> Doc:
    values = {"text": rec.text or "", "name": rec.name or "", "description": rec.description or ""}
    joined = " ".join(v for v in (rec.text, rec.name, rec.description) if v)
    values["cjk"] = joined if has_cjk(joined) else ""
    tf = {f: Counter(_tokens(f, v)) if v else Counter() for f, v in values.items()}
    return Doc(rec, tf, {f: byte_to_length(length_to_byte(sum(c.values()))) for f, c in tf.items()},
               {(f, t): k for f, c in tf.items() for t, k in c.items()})


@dataclass
class Ranked:
    id: str
    score: float
    signals: dict[str, float]


@dataclass
class Corpus:
    """The documents that count and their statistics: ``n``, per field the average length and
    per (field, term) the documents holding the term."""

    docs: list[Doc]
    n: int
    avgfl: dict[str, float]
    df: Counter


def _corpus(docs: list[Doc]) -> Corpus:
    n = len(docs)
    df: Counter = Counter()
    for d in docs:
        for f, c in d.tf.items():
            df.update((f, t) for t in c)
    return Corpus(docs, n, {f: (sum(d.length[f] for d in docs) / n if n else 1.0) for f in FIELDS}, df)


class Reference:
    """The records analysed once (``records``: the bank's current record per id); ``rank`` ranks."""

    def __init__(self, records: list[Memory]) -> None:
        docs = [_doc(r) for r in records]
        self.live = _corpus([d for d in docs if d.rec.live])
        self.every = _corpus(docs)

    def rank(self, query: str, *, limit: int, tuning: MemoryTuning, now: int, tag: str | None = None,
             include_superseded: bool = False) -> list[Ranked]:
        """The best ``limit`` records for ``query``, best first (see the module docstring)."""
        return _rank(self.every if include_superseded else self.live, query, limit=limit, tuning=tuning,
                     now=now, tag=tag)


def _rank(c: Corpus, query: str, *, limit: int, tuning: MemoryTuning, now: int,  # noqa: C901 - written plain, in the documentation's order
          tag: str | None) -> list[Ranked]:
    if tag is not None:  # a filter narrows the corpus, its statistics included
        c = _corpus([d for d in c.docs if tag in d.rec.tags])
    corpus, n, avgfl = c.docs, c.n, c.avgfl
    pool = corpus
    terms = query_terms(memory_analyzer(), query)
    pairs = [(f, t) for t in terms for f in ("text", "name", "description")]
    pairs += [("cjk", t) for t in query_terms(cjk_analyzer(), query)]
    keys = entity_keys(query)

    idfs = {(f, t): math.log(1.0 + (n - c.df[(f, t)] + 0.5) / (c.df[(f, t)] + 0.5)) for f, t in pairs}
    bm25: dict[str, float] = {}
    matched: list[Doc] = []
    for d in pool:
        score, hit = 0.0, False
        for f, t in pairs:
            tf = d.pairs.get((f, t))
            if tf:
                hit = True
                length = d.length[f] or 1
                score += idfs[(f, t)] * (tf * (K1 + 1) / (tf + K1 * ((1 - B) + B * length / (avgfl[f] or 1.0))))
        if hit:
            bm25[d.rec.id] = score
            matched.append(d)
    ents = {d.rec.id: e for d in pool if d.rec.entities and (e := sum(1 for k in keys if k in d.rec.entities))}

    def newest(d: Doc) -> tuple[int, str]:
        return -d.rec.updated_at, d.rec.id

    fetch = tuning.fetch_limit
    pick = max(fetch, limit)  # the candidates are never fewer than the recall's limit
    cands = {d.rec.id: d for d in sorted(matched, key=lambda d: (-bm25[d.rec.id], *newest(d)))[:pick]}
    cands.update({d.rec.id: d for d in sorted([d for d in pool if d.rec.id in ents], key=newest)[:pick]})

    def score(d: Doc) -> Ranked:
        r = d.rec
        rec = max(0.5 ** ((max(0, now - r.updated_at) / DAY_MS) / tuning.decay_half_life_days), tuning.recency_floor)
        b = bm25.get(r.id, 0.0)
        e = ents.get(r.id, 0)
        base = (tuning.w_bm25 * b + tuning.w_entity * e
                + tuning.w_corroboration * math.log(1 + r.corroboration) + tuning.w_pinned * (1.0 if r.pinned else 0.0))
        return Ranked(r.id, base * rec, {"bm25": b, "entity": float(e), "corroboration": float(r.corroboration),
                                         "pinned": 1.0 if r.pinned else 0.0, "recency": rec})

    out = {i: score(d) for i, d in cands.items()}
    by_id = {d.rec.id: d for d in corpus}

    def best(ranked: list[Ranked], n: int) -> list[Ranked]:
        return sorted([x for x in ranked if x.score > 0], key=lambda x: (-x.score, *newest(by_id[x.id])))[:n]

    if tuning.w_prf > 0:
        prf = _feedback(c, pool, best(list(out.values()), tuning.prf_docs), set(terms), tuning)
        hits = sorted([d for d in pool if prf.get(d.rec.id, 0) > 0], key=lambda d: (-prf[d.rec.id], *newest(d)))
        for d in hits[:fetch]:
            out.setdefault(d.rec.id, score(d))
        for x in out.values():
            p = prf.get(x.id, 0.0)
            x.score += tuning.w_prf * p * x.signals["recency"]
            x.signals["prf"] = p
    if tuning.w_time > 0:
        for x in out.values():
            t = _time(query, now, by_id[x.id].rec)
            x.score *= 1 + tuning.w_time * t
            x.signals["time"] = t
    if tuning.w_neighbour > 0:
        window = tuning.neighbour_window_minutes * 60_000
        share: dict[str, float] = {}
        for h in best(list(out.values()), tuning.neighbour_hits):
            hr = by_id[h.id].rec
            if not hr.source.session_id:
                continue
            scan = sorted((d for d in pool if d.rec.source.session_id == hr.source.session_id
                           and abs(d.rec.updated_at - hr.created_at) <= window
                           and abs(d.rec.created_at - hr.created_at) <= window),
                          key=lambda d: (abs(d.rec.updated_at - hr.created_at), d.rec.id))[:NEIGHBOUR_SCAN]
            for d in scan:
                if d.rec.id != hr.id:
                    share[d.rec.id] = max(share.get(d.rec.id, 0.0), h.score)
        for i in share:
            if i not in out:
                x = out[i] = score(by_id[i])
                if tuning.w_prf > 0:
                    x.signals["prf"] = prf.get(i, 0.0)
                    x.score += tuning.w_prf * x.signals["prf"] * x.signals["recency"]
                if tuning.w_time > 0:
                    x.signals["time"] = _time(query, now, by_id[i].rec)
                    x.score *= 1 + tuning.w_time * x.signals["time"]
        for x in out.values():
            x.signals["neighbour"] = share.get(x.id, 0.0)
            x.score += tuning.w_neighbour * x.signals["neighbour"]
    ranked = sorted(out.values(), key=lambda x: (-x.score, -by_id[x.id].rec.updated_at, x.id))
    return ranked[:limit]


def _feedback(c: Corpus, pool: list[Doc], top: list[Ranked], query: set[str], tuning: MemoryTuning) -> dict[str, float]:
    """Per record id, its BM25F over the expansion terms of ``top``, each term's score times its weight."""
    by_id = {d.rec.id: d for d in c.docs}
    total = sum(x.score for x in top) or 1.0
    rel: Counter = Counter()
    for x in top:
        r = by_id[x.id].rec
        toks = _tokens("text", " ".join(v for v in (r.text, r.name, r.description) if v))
        for t, k in Counter(toks).items():
            rel[t] += (x.score / total) * k / len(toks)
    n = c.n
    weighted = [(t, w * math.log(1.0 + (n - c.df[("text", t)] + 0.5) / (c.df[("text", t)] + 0.5)))
                for t, w in rel.items() if t not in query]
    weighted = sorted([x for x in weighted if x[1] > 0], key=lambda x: (-x[1], x[0]))[:tuning.prf_terms]
    norm = sum(w for _t, w in weighted)
    out: dict[str, float] = {}
    for t, w in weighted:
        for d in pool:
            s = 0.0
            for f in ("text", "name", "description"):
                tf = d.pairs.get((f, t))
                if tf:
                    idf = math.log(1.0 + (n - c.df[(f, t)] + 0.5) / (c.df[(f, t)] + 0.5))
                    s += idf * (tf * (K1 + 1) / (tf + K1 * ((1 - B) + B * (d.length[f] or 1) / (c.avgfl[f] or 1.0))))
            if s:
                out[d.rec.id] = out.get(d.rec.id, 0.0) + (w / norm) * s
    return out


def _time(query: str, now: int, r: Memory) -> float:
    """1.0 when ``r``'s ``created_at`` falls in one of the query's date ranges, else the greatest
    share (counted in quarter days) of a date it states inside a date the query states or, for a
    question about when with none, 1.0 when it states a date; ``VAGUE_TIME`` when it only mentions
    a time (the expressions are ``chalicelib.search.signals``' and ``chalicelib.core.dates``' own)."""
    ranges = date_ranges(query, now)
    spans = dates.ranges(r)
    if ranges:
        if any(a <= r.created_at < b for a, b in ranges):
            return 1.0
        q = DAY_MS // 4
        shares = [len(set(range(s, e, q)) & set(range(a, b, q))) / len(range(s, e, q))
                  for a, b in ((d.start, d.end) for d in dates.stated(query, now)) for s, e in spans]
        return max(shares, default=0.0)
    if not is_when(query):
        return 0.0
    return 1.0 if spans else VAGUE_TIME if states_time(r.text or "") else 0.0
