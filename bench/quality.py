"""The LoCoMo quality part of ``python -m bench`` (see ``bench.locomo``)."""

from __future__ import annotations

import functools
import itertools
import time
from typing import Any

from . import locomo
from .harness import backend, fast_moto_transactions

ORG = "bench"
# The weights the benchmark recommends, chosen by ``choose`` over ``GRID`` on the tune split
# (run with --tune to re-check; docs/banks.md, "How recall ranks"). Empty = the tuning's defaults.
TUNED: dict[str, Any] = {"w_entity": 1.5, "recency_floor": 0.9, "decay_half_life_days": 30.0}
CAT5_MARGIN = 0.01
GRID = {"w_entity": [0.0, 0.3, 0.6, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0],
        "recency_floor": [0.35, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0],
        "decay_half_life_days": [30.0, 90.0, 365.0]}


def _targets(res: dict, system: str) -> dict[str, Any]:
    a, h = res[system]["all7"], res[system]["heldout4"]
    sh, pa = res["bm25s-stemmed"]["heldout4"], res["rank-bm25"]["all7"]
    return {
        "all7 1-4 R@10 >= 0.58": [a["1-4"]["R@10"], a["1-4"]["R@10"] >= 0.58],
        "all7 1-4 MRR >= 0.42": [a["1-4"]["MRR"], a["1-4"]["MRR"] >= 0.42],
        "heldout4 1-4 R@10 >= stemmed + 0.02": [h["1-4"]["R@10"], round(sh["1-4"]["R@10"] + 0.02, 4),
                                                 h["1-4"]["R@10"] >= sh["1-4"]["R@10"] + 0.02],
        "heldout4 1-4 MRR >= stemmed + 0.02": [h["1-4"]["MRR"], round(sh["1-4"]["MRR"] + 0.02, 4),
                                                h["1-4"]["MRR"] >= sh["1-4"]["MRR"] + 0.02],
        "all7 cat 5 R@10 >= plain BM25": [a["5"]["R@10"], pa["5"]["R@10"], a["5"]["R@10"] >= pa["5"]["R@10"]],
    }


def _rerank_query(by_q: dict[str, Any], tuning: Any, now: Any, q: str) -> list[int]:
    """Cairn's ranking of question ``q`` from its stored candidates (a ``locomo.Ranker``)."""
    return locomo.rerank(by_q[q], tuning, now)


def run(*, tune: bool = False) -> tuple[dict, list[str]]:
    """``(json, markdown lines)``; skips cleanly when the LoCoMo folder is absent."""
    path = locomo.data_dir() / "locomo-dev7.json"
    if not path.exists():
        msg = f"LoCoMo data not found at {path} (set CAIRN_LOCOMO_DIR): quality part skipped."
        print(msg)
        return {"skipped": msg}, ["## Quality (LoCoMo)", "", msg, ""]
    from chalicelib.tuning import get_tuning

    started = time.perf_counter()
    now = locomo.NOW
    convs = locomo.load(path, now_ms=now)
    out: dict[str, Any] = {"data": str(path), "conversations": [c.sample_id for c in convs],
                           "questions": sum(len(c.questions) for c in convs),
                           "memories": sum(len(c.docs) for c in convs), "tune_split": list(locomo.TUNE),
                           "depth": locomo.DEPTH,
                           "recency": "relative: each conversation shifted so its last session is the fixed "
                                      "NOW (2026-01-01), recall run as of NOW"}
    fast_moto_transactions()
    with backend():
        defaults = get_tuning()
        cands: dict[str, list[list[dict]]] = {}
        for c in convs:
            ids = locomo.import_conversation(ORG, c.sample_id, c)
            cands[c.sample_id] = [locomo.cairn_candidates(ORG, c.sample_id, ids, q.text, now) for q in c.questions]
            print(f"quality: {c.sample_id} imported and queried ({time.perf_counter() - started:.0f} s)", flush=True)
        # the offline re-ranking reproduces the recall's own order (checked on the defaults)
        check = [h["doc"] for h in cands[convs[0].sample_id][0]][:locomo.DEPTH]
        assert locomo.rerank(cands[convs[0].sample_id][0], defaults, now) == check, "rerank != recall"
    tuned = defaults.model_copy(update=TUNED)

    def cairn(t) -> dict[str, locomo.Ranker]:
        rankers: dict[str, locomo.Ranker] = {}
        for c in convs:
            by_q = {q.text: cs for q, cs in zip(c.questions, cands[c.sample_id], strict=False)}
            rankers[c.sample_id] = functools.partial(_rerank_query, by_q, t, now)
        return rankers

    rankers = {"rank-bm25": {c.sample_id: locomo.plain_bm25(c) for c in convs},
               "bm25s-stemmed": {c.sample_id: locomo.stemmed_bm25(c) for c in convs},
               "cairn-defaults": cairn(defaults)}
    if TUNED:
        rankers["cairn-tuned"] = cairn(tuned)
    res = locomo.evaluate(convs, rankers)
    if tune:
        out["grid"] = grid(convs, cairn, defaults)
        out["grid_choice"] = choose(out["grid"], res["rank-bm25"]["tune3"]["5"]["R@10"])
    out["results"] = res
    out["tuning_defaults"] = defaults.model_dump()
    out["tuned_overrides"] = TUNED
    main = "cairn-tuned" if TUNED else "cairn-defaults"
    out["targets"] = _targets(res, main)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out, markdown(out, main)


def grid(convs, cairn, defaults) -> list[dict[str, Any]]:
    """Every GRID combination scored on the tune split only, best (1-4 R@10 + MRR) first."""
    tune_convs = [c for c in convs if c.sample_id in locomo.TUNE]
    rows = []
    keys = list(GRID)
    for values in itertools.product(*(GRID[k] for k in keys)):
        upd = dict(zip(keys, values, strict=False))
        r = locomo.evaluate(tune_convs, {"x": cairn(defaults.model_copy(update=upd))})["x"]["all7"]
        rows.append({**upd, "R@10": r["1-4"]["R@10"], "MRR": r["1-4"]["MRR"], "cat5 R@10": r["5"]["R@10"]})
    rows.sort(key=lambda x: -(x["R@10"] + x["MRR"]))
    return rows


def choose(rows: list[dict[str, Any]], plain_cat5: float) -> dict[str, Any] | None:
    """The rule behind ``TUNED``: on the tune split, the best R@10 + MRR over categories 1-4 among
    settings that keep recency (``recency_floor`` < 1) and keep category 5 (adversarial: the
    question names the wrong speaker, so entity weight hurts it) at least ``CAT5_MARGIN`` above
    plain BM25's category-5 R@10."""
    ok = [r for r in rows if r["recency_floor"] < 1 and r["cat5 R@10"] >= plain_cat5 + CAT5_MARGIN]
    return ok[0] if ok else None


def markdown(out: dict[str, Any], main: str) -> list[str]:
    res = out["results"]
    md = ["## Quality (LoCoMo)", "",
          f"{len(out['conversations'])} conversations, {out['memories']} memories, {out['questions']} questions "
          f"with evidence; tune split {', '.join(out['tune_split'])}; MRR within the top {out['depth']}. "
          f"Recency: {out['recency']}. Tuned overrides: `{out['tuned_overrides'] or 'none (defaults)'}`.", ""]
    for part, title in (("all7", "All seven conversations"), ("heldout4", "The four held-out conversations"),
                        ("tune3", "The three tuning conversations")):
        md += [f"### {title}", "", "| system | cat | n | R@5 | R@10 | All@10 | MRR |", "|---|---|---|---|---|---|---|"]
        for system, parts in res.items():
            for cat in ("1-4", "1", "2", "3", "4", "5"):
                m = parts[part].get(cat)
                if m:
                    md.append(f"| {system} | {cat} | {m['n']} | {m['R@5']} | {m['R@10']} | {m['All@10']} "
                              f"| {m['MRR']} |")
        md.append("")
    md += [f"### Targets ({main})", "", "| target | figures | met |", "|---|---|---|"]
    for k, v in out["targets"].items():
        md.append(f"| {k} | {' vs '.join(str(x) for x in v[:-1])} | {'yes' if v[-1] else 'NO'} |")
    md.append("")
    if out.get("grid_choice"):
        md += [f"Grid choice (best 1-4 R@10 + MRR on the tune split with recency kept and cat 5 R@10 >= plain "
               f"BM25 + {CAT5_MARGIN}): `{out['grid_choice']}`.", ""]
    if out.get("grid"):
        md += ["### Weight grid on the tune split (best 10 by R@10 + MRR)", "",
               "| w_entity | recency_floor | half-life (d) | R@10 | MRR | cat 5 R@10 |", "|---|---|---|---|---|---|"]
        for r in out["grid"][:10]:
            md.append(f"| {r['w_entity']} | {r['recency_floor']} | {r['decay_half_life_days']} | {r['R@10']} | "
                      f"{r['MRR']} | {r['cat5 R@10']} |")
        md.append("")
    return md
