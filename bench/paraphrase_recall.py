"""The paraphrase set through the service's own recall (part of ``python -m bench --quality``).

The set (``bench/paraphrase``) is imported into one bank through the import path the REST route
runs (``banks.transfer.import_lines``: every memory embedded at write), under the benchmark's
moto backend, and each question is ranked by recall itself (``locomo.cairn_ranker``: ``_rank``
over the bank's cached index, checked once against a full ``recall``) as of the set's ``NOW``.

Systems (each a ``MemoryTuning`` over the same bank):

- ``lexical``: today's ranking without the signal (``w_semantic`` 0);
- ``fused``: the defaults;
- ``semantic alone``: every other weight 0, ``semantic_rerank`` 1 and no floor, so each ranked
  memory's score is ``w_eff * semantic`` and the order is the cosine's (the top ``fetch_limit``
  non-candidates by cosine join, so the first 50 are the 50 nearest). A question whose first
  lexical hit covers all its words gets ``w_eff`` 0 and no order: ``zero_scored`` counts them.

Reported per split (``eval`` is the figure; ``tune`` beside it), per category on ``eval``, the
ranks of the end-to-end questions' memories, and the share of no-answer probes for which recall
returns nothing (the documented contract)."""

from __future__ import annotations

import time
from typing import Any

from . import locomo, paraphrase
from .semantic import E2E_QUESTIONS, PROBES

ORG = "bench"
BANK = "paraphrase"
METRICS = ("R@5", "R@10", "MRR")


def systems(defaults: Any) -> dict[str, Any]:
    """``{name: MemoryTuning}``: the three rankings compared (see the module docstring)."""
    alone = {k: 0.0 for k in ("w_bm25", "w_entity", "w_corroboration", "w_pinned", "w_prf", "w_time",
                              "w_neighbour")}
    alone.update(semantic_rerank=1.0, semantic_floor=0.0, semantic_lift=0.0)
    return {"lexical (w_semantic 0)": defaults.model_copy(update={"w_semantic": 0.0}),
            "fused (defaults)": defaults,
            "semantic alone": defaults.model_copy(update=alone)}


def _mean(rows: list[dict[str, float]]) -> dict[str, Any]:
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) if rows else 0.0 for k in METRICS} | {"n": len(rows)}


def _first(ranked: list[int], gold: set[int]) -> int | None:
    """1-based rank of the first gold memory within the ranking, ``None`` when absent."""
    return next((i + 1 for i, d in enumerate(ranked) if d in gold), None)


def score_system(rank: Any, index: dict[str, int]) -> dict[str, Any]:
    """One system's figures: per split (and per category on ``eval``) R@5/R@10/MRR, the
    end-to-end questions' first gold rank, and the probes' share returning nothing."""
    rows: dict[str, list[tuple[str, dict[str, float]]]] = {s: [] for s in paraphrase.SPLITS}
    e2e: dict[str, int | None] = {}
    for q in paraphrase.all_questions():
        gold = {index[g] for g in q.gold}
        ranked = rank(q.question)
        rows[q.split].append((q.category, locomo.score_ranking(ranked, gold)))
        if q.question in E2E_QUESTIONS:
            e2e[q.question] = _first(ranked, gold)
    out: dict[str, Any] = {s: _mean([m for _c, m in r]) for s, r in rows.items()}
    out["eval_by_category"] = {c: _mean([m for cc, m in rows["eval"] if cc == c]) for c in paraphrase.CATEGORIES}
    out["e2e_ranks"] = e2e
    out["probes_nothing_back"] = {k: round(sum(not rank(p) for p in ps) / len(ps), 3) for k, ps in PROBES.items()}
    return out


def run() -> dict[str, Any]:
    """Import the set and score every system (inside the benchmark's backend: ``harness.backend``)."""
    from chalicelib.search import recall as recall_mod
    from chalicelib.tuning import get_tuning

    started = time.perf_counter()
    by_id = {m.id: i for i, m in enumerate(paraphrase.memories())}
    ids = {fp: by_id[sid] for fp, sid in paraphrase.import_bank(ORG, BANK).items()}
    out: dict[str, Any] = {"memories": len(ids), "questions": len(paraphrase.all_questions()),
                           "import_seconds": round(time.perf_counter() - started, 1), "depth": locomo.DEPTH,
                           "now": paraphrase.NOW, "systems": {}}
    defaults = get_tuning()
    for name, tuning in systems(defaults).items():
        t0 = time.perf_counter()
        rank = locomo.cairn_ranker(ORG, BANK, ids, paraphrase.NOW, tuning)
        out["systems"][name] = score_system(rank, by_id)
        out["systems"][name]["mode"] = recall_mod.query_vector(E2E_QUESTIONS[0], tuning)[1]
        out["systems"][name]["seconds"] = round(time.perf_counter() - t0, 1)
        print(f"quality: paraphrase {name} ({time.perf_counter() - started:.0f} s)", flush=True)
    out["zero_scored_semantic_alone"] = _zero_scored(systems(defaults)["semantic alone"])
    return out


def _zero_scored(tuning: Any) -> int:
    """Questions whose semantic-alone recall scores every hit 0 (``w_eff`` 0: see the docstring)."""
    from chalicelib.search.recall import recall

    n = 0
    for q in paraphrase.all_questions():
        hits = recall(ORG, [BANK], q.question, limit=5, now=paraphrase.NOW, tuning=tuning).hits
        n += bool(hits) and all(h.score <= 0 for h in hits)
    return n


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Quality (the paraphrase set, through the service's recall)", "",
          f"{out['memories']} memories imported through the import path ({out['import_seconds']} s, each "
          f"embedded at write), {out['questions']} questions; MRR within the top {out['depth']}; recall as of "
          "the set's NOW. `eval` is the figure (nothing was chosen on it); `tune` beside it.", "",
          "| system | retrieval | eval R@5 | eval R@10 | eval MRR | tune R@5 | tune R@10 | tune MRR |",
          "|---|---|---|---|---|---|---|---|"]
    for name, s in out["systems"].items():
        e, t = s["eval"], s["tune"]
        md.append(f"| {name} | {s['mode']} | {e['R@5']} | {e['R@10']} | {e['MRR']} | {t['R@5']} | {t['R@10']} "
                  f"| {t['MRR']} |")
    md += ["", f"Semantic alone: {out['zero_scored_semantic_alone']} questions had every hit scored 0 (their "
           "first lexical hit covers every word, so the signal's weight is 0 there).", "",
           "### Evaluation split per category (R@5 / MRR)", "",
           "| system | " + " | ".join(f"{c} (n)" for c in paraphrase.CATEGORIES) + " |",
           "|---|" + "---|" * len(paraphrase.CATEGORIES)]
    for name, s in out["systems"].items():
        cells = [f"{m['R@5']} / {m['MRR']} ({m['n']})" for m in s["eval_by_category"].values()]
        md.append(f"| {name} | " + " | ".join(cells) + " |")
    md += ["", "### The end-to-end questions (rank of the first gold memory; - beyond 50) and the no-answer "
           "probes (share returning nothing)", "",
           "| system | " + " | ".join(f'"{q}"' for q in E2E_QUESTIONS) + " | " + " | ".join(PROBES) + " |",
           "|---|" + "---|" * (len(E2E_QUESTIONS) + len(PROBES))]
    for name, s in out["systems"].items():
        ranks = [str(s["e2e_ranks"].get(q) or "-") for q in E2E_QUESTIONS]
        empties = [str(s["probes_nothing_back"][k]) for k in PROBES]
        md.append(f"| {name} | " + " | ".join(ranks + empties) + " |")
    md.append("")
    return md
