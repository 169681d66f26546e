"""Today's recall ranking with a semantic signal added, reproduced offline (``bench.embeddings``).

Today's ranking: Cairn's own ``search.recall._rank`` over the bank's cached index, with the
default tuning, as of the set's ``now``, every candidate kept with its full score (BM25F, entity,
feedback, time and neighbour candidates, no cut). Fused:

``final = today + w * sem(cos)`` for today's candidates, plus the vector top ``k`` (by cosine
over the whole bank) that are not among them and whose cosine is at least ``floor``, at
``w * sem(cos)`` (their own BM25F and entity parts are 0, and neither the paraphrase set nor
LoCoMo pins or corroborates a memory). ``sem`` is ``cos`` (form ``raw``) or
``max(0, cos - floor)`` (form ``shifted``: the floor is also the signal's zero, so weakly related
memories add nothing); form ``scaled`` is ``shifted`` with today's scores divided by the query's
best one first (BM25F's scale varies from query to query; the order of today's candidates among
themselves is unchanged). ``w = 0`` is today's ranking exactly. Ties: score desc, then the order today
gave, then index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import locomo, paraphrase

DEPTH = locomo.DEPTH
VECTOR_K = 50  # vector candidates per query: recall's fetch_limit
FORMS = ("raw", "shifted", "scaled")
Candidates = list[tuple[int, float]]  # (document index, today's score), today's order


@dataclass(frozen=True)
class Fusion:
    w: float
    floor: float
    form: str = "raw"  # "raw", "shifted" or "scaled"
    k: int = VECTOR_K


def fuse(today: Candidates, cos: np.ndarray, f: Fusion) -> list[int]:
    """The fused top ``DEPTH`` document indexes (module docstring); ``cos`` over every document."""
    if f.w == 0:
        return [d for d, _s in today[:DEPTH]]

    def sem(c: float) -> float:
        return c if f.form == "raw" else max(0.0, c - f.floor)

    top_score = max((s for _d, s in today), default=0.0)
    div = top_score if f.form == "scaled" and top_score > 0 else 1.0
    rows = [(-(s / div + f.w * sem(float(cos[d]))), j, d) for j, (d, s) in enumerate(today)]
    seen = {d for d, _s in today}
    k = min(f.k, len(cos))
    top = np.argpartition(-cos, k - 1)[:k] if k < len(cos) else np.arange(len(cos))
    for d in top.tolist():
        if d not in seen and cos[d] >= f.floor:
            rows.append((-(f.w * sem(float(cos[d]))), len(today) + d, d))
    rows.sort()
    return [d for _s, _j, d in rows[:DEPTH]]


def semantic_only(cos: np.ndarray) -> list[int]:
    """The top ``DEPTH`` documents by cosine alone (index breaks ties)."""
    return sorted(range(len(cos)), key=lambda d: (-cos[d], d))[:DEPTH]


def mean_metrics(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    rows = list(rows)
    return {k: round(sum(r[k] for r in rows) / max(len(rows), 1), 4) for k in ("R@5", "R@10", "MRR")} | {
        "n": len(rows)}


# --- today's candidates, from Cairn's own ranking ------------------------------------------------

def _scored(org: str, bank: str, now: int, tuning: Any) -> Callable[[str], list[tuple[str, float, float]]]:
    """A ranker returning every candidate ``(memory id, score, BM25F)`` of today's ranking,
    checked equal to a full ``recall`` (top ``DEPTH``) on its first call."""
    from chalicelib.search import index as index_mod
    from chalicelib.search.recall import _rank, read_rows, recall

    entry = index_mod.active_cache().fresh(org, bank, read_rows(org, [bank])[bank])
    leaves = [(leaf, entry.stats_cache, bank) for leaf, _off in entry.reader().leaf_readers()]
    checked = False

    def rank(q: str) -> list[tuple[str, float, float]]:
        nonlocal checked
        hits, _n = _rank(leaves, q, limit=10**6, tag=None, include_superseded=False, tuning=tuning, filter=None,
                         now=now)
        if not checked:
            full = recall(org, [bank], q, limit=DEPTH, now=now, tuning=tuning).hits
            assert [h.memory.id for h in full] == [h.memory.id for h in hits[:DEPTH]], "ranking != recall"
            checked = True
        return [(h.memory.id, h.score, h.signals["bm25"]) for h in hits]
    return rank


def query_idf(org: str, bank: str) -> Callable[[str], list[tuple[str, float]]]:
    """Inside a backend: per query, its analysed ``text`` terms (recall's ``analyse``) with their
    idf in the bank's ``text`` field (``scorer.CorpusStats.idf``, the idf BM25F uses)."""
    from chalicelib.search import index as index_mod
    from chalicelib.search.recall import analyse, read_rows
    from chalicelib.search.scorer import CorpusStats

    entry = index_mod.active_cache().fresh(org, bank, read_rows(org, [bank])[bank])
    stats = CorpusStats([(leaf, entry.stats_cache) for leaf, _off in entry.reader().leaf_readers()], False)
    return lambda q: [(t, stats.idf("text", t)) for t in analyse(q).terms]


def paraphrase_candidates(org: str = "bench", bank: str = "paraphrase") -> dict[str, Any]:
    """Inside a backend: the set imported into ``bank``; per question id of both splits, today's
    candidates as ``[[memory index, score], ...]``; also the entity signal's candidates alone
    (BM25F and the other signals off) under ``"entity_only"``."""
    from chalicelib.tuning import get_tuning

    fp_to_id = paraphrase.import_bank(org, bank)
    index = {m.id: i for i, m in enumerate(paraphrase.memories())}
    tuning = get_tuning()
    entity = tuning.model_copy(update={"w_bm25": 0.0, "w_prf": 0.0, "w_time": 0.0, "w_neighbour": 0.0})
    out: dict[str, Any] = {"today": {}, "entity_only": {}}
    for key, t in (("today", tuning), ("entity_only", entity)):
        rank = _scored(org, bank, paraphrase.NOW, t)
        for q in paraphrase.all_questions():
            out[key][q.id] = [[index[fp_to_id[m]], s] for m, s, _b in rank(q.question) if s > 0 or key == "today"]
    return out


def locomo_candidates(convs: list[locomo.Conversation], org: str = "bench") -> dict[str, list[Candidates]]:
    """Inside a backend: each conversation imported as ``bench.locomo`` does; per conversation, per
    question (in ``conv.questions`` order), today's candidates as ``(doc index, score)``."""
    from chalicelib.tuning import get_tuning

    tuning = get_tuning()
    out: dict[str, list[Candidates]] = {}
    for c in convs:
        ids = locomo.import_conversation(org, c.sample_id, c)
        rank = _scored(org, c.sample_id, c.now, tuning)
        out[c.sample_id] = [[(ids[m], s) for m, s, _b in rank(q.text) if m in ids] for q in c.questions]
    return out


# --- metrics ---------------------------------------------------------------------------------------

def paraphrase_metrics(qs: list[paraphrase.Question], rank: Callable[[paraphrase.Question], list[int]]
                       ) -> dict[str, Any]:
    """R@5, R@10 and MRR (first gold within ``DEPTH``) over ``qs``, and per category."""
    index = {m.id: i for i, m in enumerate(paraphrase.memories())}
    rows: list[tuple[str, dict[str, float]]] = []
    for q in qs:
        m = locomo.score_ranking(rank(q), {index[g] for g in q.gold})
        rows.append((q.category, m))
    out: dict[str, Any] = mean_metrics(r for _c, r in rows)
    out["by_category"] = {c: mean_metrics(r for cc, r in rows if cc == c) for c in paraphrase.CATEGORIES}
    return out


def locomo_metrics(convs: list[locomo.Conversation], rank: Callable[[str, int], list[int]]) -> dict[str, Any]:
    """LoCoMo's aggregate (``locomo.aggregate``: per category and 1-4) of ``rank(sample_id,
    question number)`` over ``convs``."""
    rows = []
    for c in convs:
        for j, q in enumerate(c.questions):
            rows.append((q.category, locomo.score_ranking(rank(c.sample_id, j), q.evidence)))
    return locomo.aggregate(rows)
