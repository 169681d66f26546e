"""``python -m bench.match [--split tune|eval] [--threshold T]``: the match threshold
(``chalicelib.search.match``) on the knowledge-update set's questions and the paraphrase set.

Both banks are indexed in memory with their sentence vectors (the shipped model), and ranked by
recall's own ``_rank`` at the default tuning, limit ``LIMIT`` (the REST default). Per threshold:

- **unanswerable with no hit**: the share of the knowledge-update ``no_answer`` questions whose
  results are empty;
- **gold loss**: among the ``current`` and ``lookalike`` questions (knowledge-update) and the
  paraphrase questions whose gold memory is in the results with the threshold off, the share
  whose gold memory is missing with it on (``score_questions``' rule).

Without ``--threshold`` it sweeps ``THRESHOLDS`` and the semantic part's mapping (``ZEROS``,
``ONES``) on the split (choose on ``tune`` only); with it, it reports that one threshold. Thread
counts are pinned to 1. Writes nothing.

Chosen on ``tune`` (the most unanswerable questions left empty with both gold losses at most
5%): threshold 0.35, cosines mapped from 0.1 to 0.4. Figures (limit 6):

| part | unanswerable with no hit | knowledge-update gold lost | paraphrase gold lost |
|---|---|---|---|
| tune | 16/24 (0.667) | 2/109 (0.018) | 1/57 (0.018) |
| eval | 18/28 (0.643) | 3/98 (0.031) | 5/47 (0.106) |
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# isort: split
import argparse
import json
from dataclasses import dataclass
from typing import Any

from chalicelib import semantic
from chalicelib.core import vectors
from chalicelib.core.records import Memory
from chalicelib.search import index as index_mod
from chalicelib.search import recall as recall_mod
from chalicelib.search.match import PARTIAL, SEM_ONE, SEM_ZERO, Matcher, combine
from chalicelib.search.scorer import CorpusStats
from chalicelib.tuning import MemoryTuning

from . import knowledge_update as ku
from . import paraphrase

LIMIT = recall_mod.LIMIT_DEFAULT
DEPTH = 50  # candidates kept per question: a threshold reaches past the first LIMIT
THRESHOLDS = tuple(round(0.3 + 0.05 * i, 2) for i in range(12))
ZEROS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35)
ONES = (0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8)


def _leaves(records: list[Memory]) -> list[tuple[Any, dict, str]]:
    vectors.attach([(r, None) for r in records])
    ix = index_mod.transient_index(records)
    return [(leaf, {}, "b") for leaf, _off in ix.reader().leaf_readers()]


def _ku_bank() -> list[Memory]:
    out = []
    for m in ku.bank():
        t = ku.saved_at(m)
        out.append(Memory(id=m.id, text=m.text, entities=list(m.entities), created_at=t, updated_at=t))
    return out


def _para_bank() -> list[Memory]:
    out = []
    for i, m in enumerate(paraphrase.memories()):
        t = paraphrase.saved_at(i)
        out.append(Memory(id=m.id, text=m.text, entities=list(m.entities), created_at=t, updated_at=t))
    return out


def components(leaves: list[tuple[Any, dict, str]], questions: list[tuple[str, str]],
               now: int) -> dict[str, list[tuple[str, float, float | None, bool]]]:
    """Question id -> its ranked candidates (threshold off, up to ``DEPTH``), each ``(memory id,
    lexical part, cosine, whether the query names something unknown)`` as
    ``search.match.Matcher`` computes them. A threshold passes over
    the candidates under it and keeps the first ``LIMIT`` of the rest, as ``_rank`` does."""
    tuning = MemoryTuning()
    readers = [r for r, _c, _b in leaves]
    stats = CorpusStats([(r, c) for r, c, _b in leaves], False)
    data = [stats.data(i) for i in range(len(readers))]
    where = {data[i].ids[d]: (i, d) for i in range(len(readers)) for d in range(readers[i].doc_count_all())}
    out = {}
    for qid, text in questions:
        vec = recall_mod.query_vector(text, tuning)[0]
        q = recall_mod.analyse(text)
        hits, _n = recall_mod._rank(leaves, q, limit=DEPTH, tag=None, include_superseded=False, tuning=tuning,
                                    filter=None, now=now, query_vector=vec)
        m = Matcher(stats, readers, data, q.terms, q.cjk, q.entity_keys, vec, text)
        out[qid] = [(h.memory.id, *m.parts(where[h.memory.id]), m.unknown_name()) for h in hits]
    return out


def results(comp: dict[str, list[tuple[str, float, float | None, bool]]], threshold: float,
            zero: float = SEM_ZERO, one: float = SEM_ONE) -> dict[str, list[str]]:
    """Question id -> the ids returned at ``threshold`` with the semantic part mapped from
    ``zero`` to ``one``."""
    return {q: [i for i, lex, cos, un in c if combine(lex, cos, un, zero, one) >= threshold][:LIMIT]
            for q, c in comp.items()}


def _loss(results: dict[str, list[str]], base: dict[str, list[str]], gold: dict[str, set[str]]) -> tuple[int, int]:
    kept = [q for q, g in gold.items() if g & set(base.get(q, ()))]
    return sum(1 for q in kept if not gold[q] & set(results.get(q, ()))), len(kept)


@dataclass
class Data:
    """One split's candidates: the knowledge-update questions' and the paraphrase questions'."""

    split: str
    ku: dict[str, list[tuple[str, float, float | None, bool]]]
    para: dict[str, list[tuple[str, float, float | None, bool]]]
    ku_gold: dict[str, set[str]]
    para_gold: dict[str, set[str]]


def load(split: str) -> Data:
    kq = ku.split_questions(split)
    pq = paraphrase.questions(split)
    ku_now = ku.START + (len(ku.bank()) + 1) * ku.HOUR_MS
    return Data(split, components(_leaves(_ku_bank()), [(q.id, q.question) for q in kq], ku_now),
                components(_leaves(_para_bank()), [(q.id, q.question) for q in pq], paraphrase.NOW),
                {q.id: set(q.gold) for q in kq if q.gold}, {q.id: set(q.gold) for q in pq})


def row(d: Data, t: float, zero: float = SEM_ZERO, one: float = SEM_ONE) -> dict[str, Any]:
    """The figures of one threshold and mapping (module docstring)."""
    ku_base, para_base = results(d.ku, 0.0), results(d.para, 0.0)
    got, para = results(d.ku, t, zero, one), results(d.para, t, zero, one)
    scores = ku.score_questions(got, d.split, baseline=ku_base)
    lost, kept = _loss(got, ku_base, d.ku_gold)
    plost, pkept = _loss(para, para_base, d.para_gold)
    return {"threshold": t, "sem_zero": zero, "sem_one": one, "no_answer_empty": round(scores.no_answer_empty, 3),
            "ku_gold_loss": round(scores.gold_loss, 3), "ku_lost": f"{lost}/{kept}",
            "para_gold_loss": round(plost / pkept if pkept else 0.0, 3), "para_lost": f"{plost}/{pkept}"}


def sweep(d: Data, max_loss: float) -> list[dict[str, Any]]:
    """Every threshold and mapping of the grid whose gold losses are both at most ``max_loss``,
    the most unanswerable questions left empty first."""
    rows = [row(d, t, z, o) for t in THRESHOLDS for z in ZEROS for o in ONES if o > z + 0.05]
    ok = [r for r in rows if r["ku_gold_loss"] <= max_loss and r["para_gold_loss"] <= max_loss]
    return sorted(ok, key=lambda r: (-r["no_answer_empty"], r["ku_gold_loss"] + r["para_gold_loss"]))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--split", choices=ku.SPLITS, default="tune")
    ap.add_argument("--threshold", type=float, default=None, help=f"one threshold (default: sweep; shipped {PARTIAL})")
    ap.add_argument("--max-loss", type=float, default=0.03, help="the sweep's bound on both gold losses")
    ap.add_argument("--top", type=int, default=15, help="rows of the sweep to print")
    a = ap.parse_args(argv)
    if not semantic.available():
        raise SystemExit(f"the semantic model is not available: {semantic.unavailable_reason()}")
    d = load(a.split)
    if a.threshold is None:
        for r in sweep(d, a.max_loss)[:a.top]:
            print(json.dumps({"split": a.split, **r}))
    else:
        print(json.dumps({"split": a.split, **row(d, a.threshold)}))


if __name__ == "__main__":
    main()
