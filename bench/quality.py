"""The quality part of ``python -m bench``: the paraphrase set through the service's recall
(``bench.paraphrase_recall``), then LoCoMo (see ``bench.locomo``).

LoCoMo systems: plain and stemmed BM25, Cairn with the signals this ranking had before
pseudo-relevance feedback, neighbourhood, time and the semantic signal (``cairn-before``: those
weights at 0), Cairn's defaults, and one ablation row per new signal (the defaults with that
signal's weight at 0). ``--tune`` runs a coordinate search of the new signals' keys on the tuning
conversations only (``tune_split``). Each distinct question's sentence vector is computed once and
reused by every system (``_memoised_queries``): the rankings are the same, and ``ms_per_question``
includes the query's forward pass only for the first system that asks it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from . import locomo, paraphrase_recall
from .harness import backend, fast_moto_transactions

ORG = "bench"
CAT5_MARGIN = 0.0
# the new signals: their weight key (0 turns a signal off; its ablation row) and the values the
# coordinate search tries on the tune split, in order
SIGNALS = {"prf": "w_prf", "neighbour": "w_neighbour", "time": "w_time", "semantic": "w_semantic"}
# a signal off by default is shown on at the weight the coordinate search chose on the tuning
# conversations (feedback: +0.010 R@10, -0.004 MRR there, for a second pass over the postings)
SIGNAL_ON = {"w_prf": 0.5, "w_neighbour": 0.3, "w_time": 0.75}
GRID: dict[str, list[Any]] = {
    "w_time": [0.0, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0],
    "w_neighbour": [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4],
    "neighbour_window_minutes": [1.0, 2.0, 3.0, 5.0, 10.0],
    "neighbour_hits": [1, 2, 3, 5],
    "w_prf": [0.0, 0.1, 0.2, 0.3, 0.5, 0.75],
    "prf_docs": [2, 3, 5, 8],
    "prf_terms": [5, 10, 20],
}


def tune_split(convs: list[locomo.Conversation]) -> list[locomo.Conversation]:
    """The tuning conversations (``locomo.TUNE``) of ``convs``: all the tuning code ever sees."""
    return [c for c in convs if c.sample_id in locomo.TUNE]


def _targets(res: dict) -> dict[str, Any]:
    """The goals on the held-out conversations: defaults against ``cairn-before``."""
    new, old = res["cairn-defaults"]["heldout4"], res["cairn-before"]["heldout4"]
    plain = res["rank-bm25"]["heldout4"]
    out: dict[str, Any] = {}
    for k in ("R@10", "MRR"):
        out[f"heldout4 1-4 {k} >= before + 0.035"] = [new["1-4"][k], round(old["1-4"][k] + 0.035, 4),
                                                     new["1-4"][k] >= old["1-4"][k] + 0.035]
    out["heldout4 cat 1 R@10 >= before + 0.05"] = [new["1"]["R@10"], round(old["1"]["R@10"] + 0.05, 4),
                                                   new["1"]["R@10"] >= old["1"]["R@10"] + 0.05]
    for cat in ("1", "2", "3", "4", "5"):
        for k in ("R@10", "MRR"):
            out[f"heldout4 cat {cat} {k} >= before - 0.01"] = [new[cat][k], round(old[cat][k] - 0.01, 4),
                                                              new[cat][k] >= old[cat][k] - 0.01]
    out["heldout4 cat 5 R@10 >= plain BM25"] = [new["5"]["R@10"], plain["5"]["R@10"],
                                                new["5"]["R@10"] >= plain["5"]["R@10"]]
    lexical = res["cairn-defaults without semantic"]["heldout4"]
    for cat in ("1", "2", "3", "4"):  # the semantic signal may cost at most one question per category
        for k in ("R@10", "MRR"):
            floor = round(lexical[cat][k] - 1 / lexical[cat]["n"], 4)
            out[f"heldout4 cat {cat} {k} >= without semantic - one question"] = [
                new[cat][k], floor, new[cat][k] >= floor - 1e-9]
    return out


@contextlib.contextmanager
def _memoised_queries() -> Iterator[None]:
    """Within the block, ``semantic.embed_query`` computes each distinct text once (a copy of the
    same vector each time): the systems ask the same questions."""
    from chalicelib import semantic

    original, seen = semantic.embed_query, {}

    def embed_query(text: str):
        if text not in seen:
            seen[text] = original(text)
        vec = seen[text]
        return None if vec is None else vec.copy()

    semantic.embed_query = embed_query
    try:
        yield
    finally:
        semantic.embed_query = original


def run(*, tune: bool = False) -> tuple[dict, list[str]]:
    """``(json, markdown lines)``: the paraphrase set always; LoCoMo skipped cleanly (``skipped``
    says why) when its folder is absent."""
    fast_moto_transactions()
    with backend(), _memoised_queries():
        para = paraphrase_recall.run()
    para_md = paraphrase_recall.markdown(para)
    path = locomo.data_dir() / "locomo-dev7.json"
    if not path.exists():
        msg = f"LoCoMo data not found at {path} (set CAIRN_LOCOMO_DIR): its quality part skipped."
        print(msg)
        return {"paraphrase": para, "skipped": msg}, [*para_md, "## Quality (LoCoMo)", "", msg, ""]
    data, md = run_locomo(path, tune=tune)
    return {"paraphrase": para, **data}, para_md + md


def run_locomo(path: Any, *, tune: bool = False) -> tuple[dict, list[str]]:
    """LoCoMo's ``(json, markdown lines)`` from the file at ``path``."""
    from chalicelib.tuning import MemoryTuning, get_tuning

    started = time.perf_counter()
    convs = locomo.load(path)
    out: dict[str, Any] = {"data": str(path), "conversations": [c.sample_id for c in convs],
                           "questions": sum(len(c.questions) for c in convs),
                           "memories": sum(len(c.docs) for c in convs), "tune_split": list(locomo.TUNE),
                           "depth": locomo.DEPTH,
                           "time": "each conversation's own dates, a turn a minute; recall as of its last turn"}
    fast_moto_transactions()
    with backend(), _memoised_queries():
        defaults = get_tuning()
        ids: dict[str, dict[str, int]] = {}
        for c in convs:
            ids[c.sample_id] = locomo.import_conversation(ORG, c.sample_id, c)
        print(f"quality: {len(convs)} conversations imported ({time.perf_counter() - started:.0f} s)", flush=True)

        def cairn(t: MemoryTuning) -> dict[str, locomo.Ranker]:
            return {c.sample_id: locomo.cairn_ranker(ORG, c.sample_id, ids[c.sample_id], c.now, t) for c in convs}

        before = defaults.model_copy(update={k: 0.0 for k in SIGNALS.values()})
        systems: dict[str, dict[str, locomo.Ranker]] = {
            "rank-bm25": {c.sample_id: locomo.plain_bm25(c) for c in convs},
            "bm25s-stemmed": {c.sample_id: locomo.stemmed_bm25(c) for c in convs},
            "cairn-before": cairn(before), "cairn-defaults": cairn(defaults)}
        for name, key in SIGNALS.items():  # one ablation row per signal: the default turned over
            if getattr(defaults, key):
                systems[f"cairn-defaults without {name}"] = cairn(defaults.model_copy(update={key: 0.0}))
            else:
                systems[f"cairn-defaults with {name}"] = cairn(defaults.model_copy(update={key: SIGNAL_ON[key]}))
        res: dict[str, Any] = {}
        out["ms_per_question"] = {}
        for name, rankers in systems.items():
            t0 = time.perf_counter()
            res.update(locomo.evaluate(convs, {name: rankers}))
            out["ms_per_question"][name] = round((time.perf_counter() - t0) * 1000 / out["questions"], 2)
            print(f"quality: {name} ({time.perf_counter() - started:.0f} s)", flush=True)
        if tune:
            out["search"] = search(tune_split(convs), cairn, before)
    out["results"] = res
    out["tuning_defaults"] = defaults.model_dump()
    out["targets"] = _targets(res)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out, markdown(out)


def _objective(agg: dict[str, Any]) -> float:
    return agg["1-4"]["R@10"] + agg["1-4"]["MRR"]


def search(convs: list[locomo.Conversation], cairn: Callable[[Any], dict[str, locomo.Ranker]],
           start: Any) -> list[dict[str, Any]]:
    """Coordinate search of ``GRID`` on ``convs`` (the tune split: ``tune_split``): key by key in
    order, each value tried with the others at the best so far, kept when categories 1-4 R@10 +
    MRR rise and category 5 R@10 stays at least at the start's minus ``CAT5_MARGIN``. Returns
    every row tried, ``{key, value, R@10, MRR, cat5 R@10, kept}``; the last kept values are the
    choice."""
    def score(t: Any) -> dict[str, Any]:
        return locomo.evaluate(convs, {"x": cairn(t)})["x"]["all7"]

    best_t = start
    base = score(best_t)
    best, floor5 = _objective(base), base["5"]["R@10"] - CAT5_MARGIN
    rows: list[dict[str, Any]] = []
    for key, values in GRID.items():
        for v in values:
            if getattr(best_t, key) == v:
                continue
            t = best_t.model_copy(update={key: v})
            agg = score(t)
            kept = _objective(agg) > best + 1e-9 and agg["5"]["R@10"] >= floor5
            rows.append({"key": key, "value": v, "R@10": agg["1-4"]["R@10"], "MRR": agg["1-4"]["MRR"],
                         "cat1 R@10": agg["1"]["R@10"], "cat5 R@10": agg["5"]["R@10"], "kept": kept})
            print(f"search: {key}={v} R@10 {agg['1-4']['R@10']} MRR {agg['1-4']['MRR']} "
                  f"cat5 {agg['5']['R@10']}{' kept' if kept else ''}", flush=True)
            if kept:
                best, best_t = _objective(agg), t
    return rows


def markdown(out: dict[str, Any]) -> list[str]:
    res = out["results"]
    md = ["## Quality (LoCoMo)", "",
          f"{len(out['conversations'])} conversations, {out['memories']} memories, {out['questions']} questions "
          f"with evidence; tune split {', '.join(out['tune_split'])}; MRR within the top {out['depth']}. "
          f"Time: {out['time']}.", ""]
    for part, title in (("heldout4", "The four held-out conversations"), ("all7", "All seven conversations"),
                        ("tune3", "The three tuning conversations")):
        md += [f"### {title}", "", "| system | cat | n | R@5 | R@10 | All@10 | MRR |", "|---|---|---|---|---|---|---|"]
        for system, parts in res.items():
            for cat in ("1-4", "1", "2", "3", "4", "5"):
                m = parts[part].get(cat)
                if m:
                    md.append(f"| {system} | {cat} | {m['n']} | {m['R@5']} | {m['R@10']} | {m['All@10']} "
                              f"| {m['MRR']} |")
        md.append("")
    md += ["### Targets (cairn-defaults against cairn-before, held-out)", "", "| target | figures | met |",
           "|---|---|---|"]
    for k, v in out["targets"].items():
        md.append(f"| {k} | {' vs '.join(str(x) for x in v[:-1])} | {'yes' if v[-1] else 'NO'} |")
    md += ["", "### Time per question (whole recall, moto backend)", "", "| system | ms |", "|---|---|"]
    md += [f"| {k} | {v} |" for k, v in out["ms_per_question"].items()]
    md.append("")
    if out.get("search"):
        md += ["### Coordinate search on the tune split", "",
               "| key | value | R@10 | MRR | cat 1 R@10 | cat 5 R@10 | kept |", "|---|---|---|---|---|---|---|"]
        md += [f"| {r['key']} | {r['value']} | {r['R@10']} | {r['MRR']} | {r['cat1 R@10']} | {r['cat5 R@10']} "
               f"| {'yes' if r['kept'] else ''} |" for r in out["search"]]
        md.append("")
    return md
