"""``python -m bench.semantic``: round 2 of the semantic-signal measurements (``bench.adaptive``).

Commands (``--work DIR`` as ``bench.embeddings``: the extracted model, caches, PCA bases):

- ``candidates``: under in-process moto, today's ranking of every paraphrase question (both
  splits), every probe (``probes.json``'s unrelated questions, ``noanswer.json``) and every
  LoCoMo question: per candidate ``[memory index, score, BM25F]`` and the query's ``text`` terms
  with their idf, kept in ``<work>/cache/ranked.json``.
- ``sweep [--option NAME]``: the tuning split only: every fusion of the grid (``GRID``) on the
  paraphrase ``tune`` questions, LoCoMo's tuning conversations and the no-answer probes; the
  trade-off tables (paraphrase R@5 against LoCoMo loss and the no-answer empty rate).
- ``evaluate --option NAME --fusion JSON``: one fusion on both splits (``eval`` read once, for
  the choice), LoCoMo's tuning and held-out conversations per category, the probes.

Thread counts are pinned to 1 (``bench.embeddings`` does it on import). Results:
``bench/results/semantic-<command>-<UTC time>.md`` and ``.json``.
"""

from __future__ import annotations

from . import embeddings as E  # first: it pins the BLAS thread counts before numpy loads

# isort: split
import argparse
import itertools
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import adaptive, embedders, locomo, paraphrase
from .adaptive import Adaptive, Query

DEPTH = locomo.DEPTH
NOANSWER = json.loads((paraphrase.DIR / "noanswer.json").read_text(encoding="utf-8"))
PROBE_KINDS = ("world", "task", "coding")
# "unrelated": probes.json's 30 general questions; the others noanswer.json's groups
PROBES: dict[str, tuple[str, ...]] = {"unrelated": E.UNRELATED, **{k: tuple(NOANSWER[k]) for k in PROBE_KINDS}}
WEIGHTS = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0)
POWERS = (1.0, 2.0, 3.0, 4.0)
LIFTS = (0.0, 1.0, 2.0, 4.0, 8.0)
RAMPS = ((0.2, 0.5), (0.3, 0.6), (0.4, 0.7))
RERANKS = (0.0, 0.2, 0.35, 0.5, 1.0)
EMPTY_MIN = (0.9, 0.95, 1.0)  # the trade-off table: the share of no-answer probes left empty
LOCOMO_SLACK = (0.0, 0.005, 0.01, 0.02, 0.05)


# --- today's candidates with their BM25F and the query's idf ---------------------------------------

def _ranked(rank: Any, idf: Any, index: dict[str, int], text: str) -> dict[str, Any]:
    return {"c": [[index[m], s, b] for m, s, b in rank(text) if m in index], "t": idf(text)}


def candidates(work: Path) -> dict[str, Any]:
    """The ``candidates`` command's data (module docstring), computed once."""
    path = work / "cache" / "ranked.json"
    if path.exists():
        return json.loads(path.read_text())
    from chalicelib.tuning import get_tuning

    from . import fusion
    from .harness import backend, fast_moto_transactions

    fast_moto_transactions()
    tuning = get_tuning()
    out: dict[str, Any] = {"paraphrase": {}, "locomo": {}}
    with backend():
        fp_to_id = paraphrase.import_bank("bench", "paraphrase")
        index = {m.id: i for i, m in enumerate(paraphrase.memories())}
        ids = {fp: index[sid] for fp, sid in fp_to_id.items()}
        rank = fusion._scored("bench", "paraphrase", paraphrase.NOW, tuning)
        idf = fusion.query_idf("bench", "paraphrase")
        texts = [q.question for q in paraphrase.all_questions()] + [t for ts in PROBES.values() for t in ts]
        for t in texts:
            out["paraphrase"][t] = _ranked(rank, idf, ids, t)
        for c in locomo.load():
            doc_ids = locomo.import_conversation("bench", c.sample_id, c)
            rank = fusion._scored("bench", c.sample_id, c.now, tuning)
            idf = fusion.query_idf("bench", c.sample_id)
            out["locomo"][c.sample_id] = [_ranked(rank, idf, doc_ids, q.text) for q in c.questions]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


# --- the queries each command fuses ---------------------------------------------------------------

class Tokens:
    """Each document's indexed ``text`` tokens (recall's memory analyser), computed once."""

    def __init__(self, docs: list[str]) -> None:
        self.docs = docs
        self.cache: dict[int, set[str]] = {}

    def matched(self, docs: list[int], terms: list[str]) -> np.ndarray:
        from chalicelib.search.analyzers import memory_analyzer

        out = np.zeros((len(docs), len(terms)), dtype=bool)
        for i, d in enumerate(docs):
            if d not in self.cache:
                self.cache[d] = {t.text for t in memory_analyzer()(self.docs[d])}
            out[i] = [t in self.cache[d] for t in terms]
        return out


def query(rec: dict[str, Any], cos: np.ndarray, tokens: Tokens) -> Query:
    docs = [int(d) for d, _s, _b in rec["c"]]
    terms = [t for t, _i in rec["t"]]
    return Query(docs, [s for _d, s, _b in rec["c"]], [b for _d, _s, b in rec["c"]], [i for _t, i in rec["t"]],
                 tokens.matched(docs, terms), cos)


@dataclass
class Split:
    """One split's queries: paraphrase questions (with their gold indexes and categories), LoCoMo
    questions (with evidence and category), and the no-answer probes by kind."""

    para: list[tuple[Query, set[int], str]]
    loc: list[tuple[Query, set[int], int]]
    probes: dict[str, list[Query]]


def covered_cos(enc: E.Encoded, docs: np.ndarray, texts: list[str]) -> np.ndarray:
    """Cosines of ``texts`` against ``docs``; a text the model does not cover gets zeros."""
    cos = enc.cosines(docs, enc.encode(texts))
    for i, t in enumerate(texts):
        if not embedders.covered(t):
            cos[i] = 0.0
    return cos


def load_split(work: Path, enc: E.Encoded, split: str) -> Split:
    ranked = candidates(work)
    mems = paraphrase.memories()
    index = {m.id: i for i, m in enumerate(mems)}
    tokens = Tokens([m.text for m in mems])
    docs = enc.encode([m.text for m in mems])
    qs = paraphrase.questions(split)
    cos = covered_cos(enc, docs, [q.question for q in qs])
    para = [(query(ranked["paraphrase"][q.question], cos[i], tokens), {index[g] for g in q.gold}, q.category)
            for i, q in enumerate(qs)]
    probes = {}
    for kind, texts in PROBES.items():
        pc = covered_cos(enc, docs, list(texts))
        probes[kind] = [query(ranked["paraphrase"][t], pc[i], tokens) for i, t in enumerate(texts)]
    loc = []
    for c in locomo.load():
        if (c.sample_id in locomo.TUNE) != (split == "tune"):
            continue
        ct = Tokens(c.docs)
        lc = covered_cos(enc, enc.encode(c.docs), [q.text for q in c.questions])
        for j, q in enumerate(c.questions):
            loc.append((query(ranked["locomo"][c.sample_id][j], lc[j], ct), q.evidence, q.category))
    return Split(para, loc, probes)


# --- metrics --------------------------------------------------------------------------------------

def _mean(rows: list[dict[str, float]], keys: tuple[str, ...] = ("R@5", "R@10", "MRR")) -> dict[str, float]:
    return {k: round(float(np.mean([r[k] for r in rows])), 4) if rows else 0.0 for k in keys} | {"n": len(rows)}


def metrics(s: Split, f: Adaptive, by_category: bool = False) -> dict[str, Any]:
    """Paraphrase R@5/R@10/MRR, LoCoMo 1-4 (and per category) R@10/MRR, the probes' empty rates."""
    prow = [(locomo.score_ranking(adaptive.fuse(q, f, DEPTH), gold), cat) for q, gold, cat in s.para]
    lrow = [(cat, locomo.score_ranking(adaptive.fuse(q, f, DEPTH), ev)) for q, ev, cat in s.loc]
    out: dict[str, Any] = {"paraphrase": _mean([m for m, _c in prow]),
                           "locomo": locomo.aggregate(lrow) if by_category else
                           {"1-4": _mean([m for c, m in lrow if c in (1, 2, 3, 4)], ("R@10", "MRR"))}}
    if by_category:
        out["paraphrase_by_category"] = {c: _mean([m for m, cc in prow if cc == c]) for c in paraphrase.CATEGORIES}
    sem = {k: float(np.mean([adaptive.semantic_empty(q, f) for q in qs])) for k, qs in s.probes.items()}
    full = {k: float(np.mean([adaptive.semantic_empty(q, f) and not len(q.docs) for q in qs]))
            for k, qs in s.probes.items()}
    every = [adaptive.semantic_empty(q, f) for qs in s.probes.values() for q in qs]
    out["empty"] = {"semantic": {k: round(v, 3) for k, v in sem.items()}, "all": round(float(np.mean(every)), 3),
                    "nothing_back": {k: round(v, 3) for k, v in full.items()}}
    return out


def locomo_categories_ok(base: dict[str, Any], m: dict[str, Any]) -> bool:
    """No LoCoMo category (1-4) down by more than one question's weight in R@10 or MRR."""
    for cat in ("1", "2", "3", "4"):
        a, b = base[cat], m[cat]
        if b["R@10"] < a["R@10"] - 1 / a["n"] - 1e-9 or b["MRR"] < a["MRR"] - 1 / a["n"] - 1e-9:
            return False
    return True


# --- the sweep -------------------------------------------------------------------------------------

def floors(s: Split) -> dict[str, dict[str, float]]:
    """Per lift and empty rate: the floor calibrated on every probe; and, calibrated on half the
    probes (even positions), the other half's empty rate (how well it carries to new questions)."""
    every = [q for qs in s.probes.values() for q in qs]
    out: dict[str, dict[str, float]] = {}
    for lift, e in itertools.product(LIFTS, EMPTY_MIN):
        half = adaptive.calibrated_floor(every[::2], lift, e)
        held = float(np.mean([adaptive.gate(q, lift) < half for q in every[1::2]]))
        out[f"{lift}/{e}"] = {"floor": adaptive.calibrated_floor(every, lift, e), "half_floor": half,
                              "other_half_empty": round(held, 3), "gold_passing": gold_passing(s, lift, half)}
    return out


def gold_passing(s: Split, lift: float, floor: float) -> float:
    """The share of paraphrase gold memories whose ``c + lift * top`` clears ``floor``."""
    vals = []
    for q, gold, _c in s.para:
        cos = dict(zip(q.docs.tolist() + q.vdocs.tolist(), q.cd.tolist() + q.cv.tolist(), strict=True))
        vals += [cos.get(g, -1.0) + lift * q.top >= floor for g in gold]
    return round(float(np.mean(vals)), 3)


def grid(table: dict[str, dict[str, float]], focused: bool) -> list[Adaptive]:
    """Every fusion the sweep measures: signal x norm x (coverage, power) x weight x (lift, the
    floor calibrated for each empty rate); ``focused``: the signals, coverages, weights and
    lifts that led the first sweep, with ramps beside powers and ``RERANKS``."""
    out = []
    shapes: list[tuple[str, float, tuple[float, float] | None]] = []
    if not focused:
        shapes.append(("none", 0.0, None))
        shapes += [(c, p, None) for c in adaptive.COVERAGES[1:] for p in POWERS]
        dims: tuple[Any, ...] = (adaptive.SIGNALS, adaptive.NORMS, shapes, WEIGHTS, LIFTS, EMPTY_MIN, (1.0,))
    else:
        shapes += [(c, p, None) for c in ("idf", "top") for p in POWERS[:3]]
        shapes += [(c, 0.0, r) for c in ("idf", "top") for r in RAMPS]
        dims = (("z", "rel"), adaptive.NORMS, shapes, WEIGHTS[4:], LIFTS[2:], EMPTY_MIN, RERANKS)
    for sig, norm, (cov, p, ramp), w, lift, e, rerank in itertools.product(*dims):
        out.append(Adaptive(w, p, cov, sig, table[f"{lift}/{e}"]["floor"], lift, norm, ramp, rerank))
    return out


ABLATION = (  # what each ingredient adds: (label, signal, coverage, lift, reranks)
    ("round 1: raw cosine, fixed weight, absolute floor", "raw", "none", 0.0, (1.0,)),
    ("+ floor lifted by the query's top-20 mean", "raw", "none", 4.0, (1.0,)),
    ("+ z-score signal", "z", "none", 4.0, (1.0,)),
    ("+ weight by lexical coverage (top)", "z", "top", 4.0, (1.0,)),
    ("+ today's candidates re-ranked less (rerank)", "z", "top", 4.0, RERANKS),
    ("the same with the absolute floor", "z", "top", 0.0, RERANKS),
)


def ablation(s: Split, table: dict[str, dict[str, float]], base: dict[str, Any], empty: float = 0.95
             ) -> list[dict[str, Any]]:
    """Per ``ABLATION`` step: the best fusion over weights, powers and ``reranks`` with no LoCoMo
    loss, the floor calibrated for ``empty``."""
    out = []
    for label, sig, cov, lift, reranks in ABLATION:
        floor = table[f"{lift}/{empty}"]["floor"]
        powers = (0.0,) if cov == "none" else POWERS[:3]
        rows = [row(f, metrics(s, f)) for w, p, rr in itertools.product(WEIGHTS, powers, reranks)
                for f in (Adaptive(w, p, cov, sig, floor, lift, rerank=rr),)]
        out.append({"label": label, "best": best(rows, base, empty, 0.0)})
    return out


def row(f: Adaptive, m: dict[str, Any]) -> dict[str, Any]:
    return {"f": asdict(f), "para": {k: m["paraphrase"][k] for k in ("R@5", "R@10", "MRR")},
            "loc": {k: m["locomo"]["1-4"][k] for k in ("R@10", "MRR")}, "empty": m["empty"]["all"],
            "empty_by_kind": m["empty"]["semantic"]}


def _key(r: dict[str, Any]) -> tuple[float, float, float, float]:
    return (r["para"]["R@5"], r["para"]["MRR"], r["para"]["R@10"], -r["f"]["w"])


def best(rows: list[dict[str, Any]], base: dict[str, Any], empty: float, slack: float) -> dict[str, Any] | None:
    """The best row (paraphrase R@5, then MRR, R@10) whose no-answer empty rate is at least
    ``empty`` and whose LoCoMo 1-4 R@10 and MRR are at most ``slack`` below today's."""
    ok = [r for r in rows if r["empty"] >= empty - 1e-9 and r["loc"]["R@10"] >= base["R@10"] - slack - 1e-9
          and r["loc"]["MRR"] >= base["MRR"] - slack - 1e-9]
    return max(ok, key=_key, default=None)


def sweep(work: Path, name: str, focused: bool = False) -> dict[str, Any]:
    """The ``sweep`` command (module docstring): every row, the trade-off tables, and the best
    rows checked per LoCoMo category."""
    enc = E.Encoded(option(work, name), work)
    s = load_split(work, enc, "tune")
    today = metrics(s, Adaptive(0.0), by_category=True)
    base = today["locomo"]["1-4"]
    rows = []
    started = time.perf_counter()
    table = floors(s)
    for i, f in enumerate(grid(table, focused)):
        rows.append(row(f, metrics(s, f)))
        if i % 5000 == 0:
            print(f"  {i} fusions, {time.perf_counter() - started:.0f} s", flush=True)
    trade = {str(e): {str(sl): best(rows, base, e, sl) for sl in LOCOMO_SLACK} for e in EMPTY_MIN}
    steps = ablation(s, table, base)
    shapes = {}
    for sig, cov in itertools.product(adaptive.SIGNALS, adaptive.COVERAGES):
        shapes[f"{sig}/{cov}"] = best([r for r in rows if r["f"]["signal"] == sig and r["f"]["coverage"] == cov],
                                      base, 0.95, 0.0)
    checked = {}
    for e, cells in trade.items():
        for sl, r in cells.items():
            if r is not None:
                m = metrics(s, Adaptive(**r["f"]), by_category=True)
                checked[f"{e}/{sl}"] = {"categories_ok": locomo_categories_ok(today["locomo"], m["locomo"]),
                                        "locomo": m["locomo"], "paraphrase_by_category": m["paraphrase_by_category"]}
    path = work / f"sweep-{name}{'-focused' if focused else ''}.json"
    path.write_text(json.dumps(rows))
    return {"option": name, "split": "tune", "focused": focused,
            "threads": {v: E.os.environ.get(v) for v in E.THREAD_VARS},
            "floors": table, "grid": {"weights": WEIGHTS, "powers": POWERS, "lifts": LIFTS, "top_k": adaptive.TOP_K,
                     "signals": adaptive.SIGNALS, "coverages": adaptive.COVERAGES, "norms": adaptive.NORMS,
                     "fusions": len(rows)},
            "questions": len(s.para), "locomo_questions": len(s.loc),
            "probes": {k: len(v) for k, v in s.probes.items()}, "today": today,
            "semantic_alone": semantic_alone(s), "tradeoff": trade, "ablation": steps, "shapes": shapes,
            "checked": checked,
            "rows_file": str(path), "seconds": round(time.perf_counter() - started)}


def semantic_alone(s: Split) -> dict[str, float]:
    rows = []
    for q, gold, _c in s.para:
        order = np.concatenate([q.docs, q.vdocs])
        cos = np.concatenate([q.cd, q.cv])
        top = order[np.lexsort((order, -cos))][:DEPTH].tolist()
        rows.append(locomo.score_ranking(top, gold))
    return _mean(rows)


# --- evaluation -----------------------------------------------------------------------------------

def evaluate(work: Path, name: str, f: Adaptive) -> dict[str, Any]:
    """The ``evaluate`` command: today, semantic alone and the fusion on the tuning and the
    evaluation split (paraphrase per category, LoCoMo per category, the probes)."""
    enc = E.Encoded(option(work, name), work)
    out: dict[str, Any] = {"option": name, "fusion": asdict(f),
                           "threads": {v: E.os.environ.get(v) for v in E.THREAD_VARS}}
    for split in ("tune", "eval"):
        s = load_split(work, enc, split)
        today = metrics(s, Adaptive(0.0), by_category=True)
        fused = metrics(s, f, by_category=True)
        qs = paraphrase.questions(split)
        ranks = {qs[i].question: _first_gold(adaptive.fuse(q, f, DEPTH), g)
                 for i, (q, g, _c) in enumerate(s.para) if qs[i].question in E2E_QUESTIONS}
        out[split] = {"today": today, "fused": fused, "semantic_alone": semantic_alone(s), "e2e_ranks": ranks,
                      "locomo_categories_ok": locomo_categories_ok(today["locomo"], fused["locomo"]),
                      "fused_misses_top5": sum(not set(adaptive.fuse(q, f, 5)) & g for q, g, _c in s.para)}
    return out


E2E_QUESTIONS = ("what database did we choose and why?", "when do we go live?", "what is the release date?")


def _first_gold(ranked: list[int], gold: set[int]) -> int | None:
    """1-based rank of the first gold memory, ``None`` when absent."""
    return next((i + 1 for i, d in enumerate(ranked) if d in gold), None)


def markdown_evaluate(out: dict[str, Any]) -> list[str]:
    md = [f"# {out['option']}: {fusion_label(out['fusion'])}", "", f"Threads: {out['threads']}.", ""]
    for split in ("tune", "eval"):
        s = out[split]
        t, f = s["today"], s["fused"]
        md += [f"## Paraphrase set, {split} split", "", "| ranking | R@5 | R@10 | MRR |", "|---|---|---|---|"]
        for label, m in (("today", t["paraphrase"]), ("semantic alone", s["semantic_alone"]),
                         ("fused", f["paraphrase"])):
            md.append(f"| {label} | {m['R@5']} | {m['R@10']} | {m['MRR']} |")
        md += ["", "| category | n | today R@5 | fused R@5 | fused R@10 | fused MRR |", "|---|---|---|---|---|---|"]
        for c, m in f["paraphrase_by_category"].items():
            md.append(f"| {c} | {m['n']} | {t['paraphrase_by_category'][c]['R@5']} | {m['R@5']} | {m['R@10']} "
                      f"| {m['MRR']} |")
        part = "tuning" if split == "tune" else "held-out"
        md += ["", f"## LoCoMo, {part} conversations (no category 1-4 down by more than one question: "
               f"{s['locomo_categories_ok']})", "",
               "| cat | n | today R@10 | fused R@10 | today MRR | fused MRR |", "|---|---|---|---|---|---|"]
        for cat in ("1-4", "1", "2", "3", "4", "5"):
            a, b = t["locomo"].get(cat), f["locomo"].get(cat)
            if a and b:
                md.append(f"| {cat} | {a['n']} | {a['R@10']} | {b['R@10']} | {a['MRR']} | {b['MRR']} |")
        e = f["empty"]
        md += ["", f"No-answer probes without a semantic candidate: {e['all']} (by kind {e['semantic']}); "
               f"with nothing back at all (today's ranking empty too): {e['nothing_back']}.", ""]
        if s["e2e_ranks"]:
            md += [f"The end-to-end questions' gold rank (fused): {s['e2e_ranks']}.", ""]
    return md


# --- floor forms -----------------------------------------------------------------------------------

def _forms(c: np.ndarray) -> dict[str, np.ndarray]:
    """Per memory, each floor form's value from one query's cosines ``c`` over the bank."""
    top = float(np.sort(c)[::-1][:adaptive.TOP_K].mean())
    out = {"absolute: c": c, "z-score: (c - mean) / std": (c - c.mean()) / (c.std() or 1.0),
           "margin over the mean: c - mean": c - c.mean(), "margin over the 99th percentile": c - np.quantile(c, 0.99)}
    for lift in LIFTS[1:]:
        out[f"lifted: c + {lift:g} x top{adaptive.TOP_K}"] = c + lift * top
    return out


def floor_forms(work: Path, name: str) -> dict[str, Any]:
    """The ``floor-forms`` command: per floor form, the threshold at which each share of the
    no-answer probes gets no semantic candidate (its best memory below it), and the share of the
    tuning questions' gold memories at or above it."""
    enc = E.Encoded(option(work, name), work)
    mems = paraphrase.memories()
    index = {m.id: i for i, m in enumerate(mems)}
    docs = enc.encode([m.text for m in mems])
    qs = paraphrase.questions("tune")
    gold: dict[str, list[float]] = {}
    for j, c in enumerate(covered_cos(enc, docs, [q.question for q in qs])):
        for k, v in _forms(c).items():
            gold.setdefault(k, []).extend(float(v[index[g]]) for g in qs[j].gold)
    probe: dict[str, list[float]] = {}
    for c in covered_cos(enc, docs, [t for ts in PROBES.values() for t in ts]):
        for k, v in _forms(c).items():
            probe.setdefault(k, []).append(float(v.max()))
    out: dict[str, Any] = {"option": name, "probes": len(probe["absolute: c"]), "gold": len(gold["absolute: c"]),
                           "forms": {}}
    for k in gold:
        cells = {}
        for e in EMPTY_MIN:
            thr = float(np.quantile(probe[k], e))
            clearing = float(np.mean(np.array(gold[k]) > thr))
            cells[str(e)] = {"threshold": round(thr, 3), "gold_clearing": round(clearing, 3)}
        out["forms"][k] = cells
    return out


def markdown_floor_forms(out: dict[str, Any]) -> list[str]:
    md = [f"# Floor forms for semantic-only candidates: {out['option']}, tuning split", "",
          f"{out['probes']} no-answer probes, {out['gold']} gold memories of the tuning questions. Per form: the "
          "threshold leaving each share of the probes without a candidate, and the share of gold memories above it.",
          "", "| form | " + " | ".join(f"probes empty {e}: threshold, gold clearing" for e in EMPTY_MIN) + " |",
          "|---|" + "---|" * len(EMPTY_MIN)]
    for k, cells in out["forms"].items():
        md.append(f"| {k} | " + " | ".join(f"{c['threshold']}, {c['gold_clearing']}" for c in cells.values()) + " |")
    return md


# --- one fusion family across embedding options ---------------------------------------------------

FAMILY: dict[str, Any] = {"signal": "z", "coverage": "top", "powers": (1.0, 2.0),
                          "weights": (8.0, 12.0, 16.0, 24.0, 32.0, 48.0), "reranks": (0.0, 0.2, 0.35, 0.5),
                          "lifts": (0.0, 2.0, 4.0, 8.0)}


def family(work: Path, names: list[str]) -> dict[str, Any]:
    """The ``family`` command: per option, the chosen fusion family (``FAMILY``: the z signal
    weighted by the top candidate's coverage, today's candidates re-ranked by a share of it, the
    lifted floor) with its floors calibrated again on the probes for that option's cosines, the
    best fusion with no LoCoMo loss at each empty rate, checked per LoCoMo category."""
    out: dict[str, Any] = {"family": FAMILY, "options": {}}
    for name in names:
        enc = E.Encoded(option(work, name), work)
        s = load_split(work, enc, "tune")
        today = metrics(s, Adaptive(0.0), by_category=True)
        every = [q for qs in s.probes.values() for q in qs]
        rows = []
        for lift, e in itertools.product(FAMILY["lifts"], EMPTY_MIN):
            floor = adaptive.calibrated_floor(every, lift, e)
            for w, p, rr in itertools.product(FAMILY["weights"], FAMILY["powers"], FAMILY["reranks"]):
                f = Adaptive(w, p, FAMILY["coverage"], FAMILY["signal"], floor, lift, rerank=rr)
                rows.append(row(f, metrics(s, f)))
        res: dict[str, Any] = {"semantic_alone": semantic_alone(s), "dim": enc.opt.dim, "best": {}}
        for e in EMPTY_MIN:
            b = best(rows, today["locomo"]["1-4"], e, 0.0)
            if b is not None:
                m = metrics(s, Adaptive(**b["f"]), by_category=True)
                b["categories_ok"] = locomo_categories_ok(today["locomo"], m["locomo"])
            res["best"][str(e)] = b
        out["options"][name] = res
        print(name, {e: (b or {}).get("para") for e, b in res["best"].items()}, flush=True)
    return out


def markdown_family(out: dict[str, Any]) -> list[str]:
    md = ["# One fusion family across embedding options, tuning split", "", f"Family: {out['family']}.", "",
          "| option | dims | alone R@5 | empty >= | fusion | R@5 | R@10 | MRR | LoCoMo R@10 | MRR | categories ok |",
          "|" + "---|" * 11]
    for name, r in out["options"].items():
        for e, b in r["best"].items():
            if b is None:
                md.append(f"| {name} | {r['dim']} | {r['semantic_alone']['R@5']} | {e} | - | | | | | | |")
                continue
            md.append(f"| {name} | {r['dim']} | {r['semantic_alone']['R@5']} | {e} | {fusion_label(b['f'])} "
                      f"| {b['para']['R@5']} | {b['para']['R@10']} | {b['para']['MRR']} | {b['loc']['R@10']} "
                      f"| {b['loc']['MRR']} | {b['categories_ok']} |")
    return md


# --- speed of the numpy forward --------------------------------------------------------------------

BATCH_TOKENS = (256, 512, 1024, 2048, 4096)
CUTS = (32, 64, 128)


def _times(fn: Any, repeats: int) -> dict[str, float]:
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1000)
    return {"p50": round(float(np.median(ts)), 2), "min": round(min(ts), 2)}


def speed(work: Path, fp16: Path) -> dict[str, Any]:
    """The ``speed`` command: ``embedders.FastMiniLM`` (each GELU) against the reference
    ``embedders.MiniLM``: cosines over 300 texts, single-query ms per length, a 600-word message
    cut to ``CUTS`` word pieces, 1,000 memories embedded in batches of ``BATCH_TOKENS``."""
    import os

    ref = embedders.MiniLM(work / "minilm" / "model")
    mems = [m.text for m in paraphrase.memories()]
    convs = locomo.load()
    thousand = (mems + [d for c in convs for d in c.docs])[:1000]
    texts = mems[:200] + [q.question for q in paraphrase.questions("tune")] + thousand[-100:]
    reference = ref.encode(texts)
    qs = E.query_texts()
    long = " ".join(" ".join(qs[40]).split()[:600])
    out: dict[str, Any] = {"threads": {v: os.environ.get(v) for v in E.THREAD_VARS}, "load_before": os.getloadavg(),
                           "reference_ms": {f"{n}w": _times(lambda t=ts[0]: ref.encode([t]), 10)
                                            for n, ts in qs.items()},
                           "gelus": {}}
    for g in embedders.GELUS:
        fast = embedders.FastMiniLM(fp16, gelu=g)
        single = np.stack([fast.encode([t])[0] for t in texts])
        batch = fast.encode(texts)
        row: dict[str, Any] = {"cos_single": _cos(single, reference), "cos_batch": _cos(batch, reference)}
        for n, ts in qs.items():
            times = [_times(lambda t=t, m=fast: m.encode([t]), 3) for t in ts]
            row[f"{n}w"] = {"p50": round(float(np.median([x["p50"] for x in times])), 2),
                            "min": round(min(x["min"] for x in times), 2)}
        for cut in CUTS:
            fast.tokenizer.enable_truncation(max_length=cut)
            row[f"600w_cut_{cut}"] = _times(lambda m=fast: m.encode([long]), 20)
        fast.tokenizer.enable_truncation(max_length=embedders.WINDOW)
        out["gelus"][g] = row
    out["tokenize_ms"] = _times(lambda: ref.tokenizer.encode(qs[20][0]), 200)
    out["import_1000"] = import_speed(fp16, thousand)
    out["load_after"] = os.getloadavg()
    return out


def _cos(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    c = (a * b).sum(1)
    return {"min": round(float(c.min()), 7), "mean": round(float(c.mean()), 7)}


def import_speed(fp16: Path, texts: list[str]) -> dict[str, Any]:
    """ms per memory to embed ``texts`` at once (tokenising included), per ``BATCH_TOKENS``, and
    one at a time."""
    fast = embedders.FastMiniLM(fp16)
    fast.encode(texts[:50])
    lengths = [len(e.ids) for e in fast.tokenizer.encode_batch(texts)]
    out: dict[str, Any] = {"texts": len(texts), "word_pieces_p50": int(np.median(lengths)), "max": max(lengths)}
    for bt in BATCH_TOKENS:
        fast.batch_tokens = bt
        t = _times(lambda: fast.encode(texts), 2)
        out[f"batch_{bt}"] = {"ms_per_memory_min": round(t["min"] / len(texts), 3),
                              "total_s_min": round(t["min"] / 1000, 2)}
    t0 = time.perf_counter()
    for x in texts:
        fast.encode([x])
    out["one_at_a_time_ms_per_memory"] = round((time.perf_counter() - t0) * 1000 / len(texts), 3)
    return out


# --- the scan at 100k ----------------------------------------------------------------------------

SCAN_DIMS = (384, 256, 128)
SCAN_N = 100_000


def scan(n: int = SCAN_N, repeats: int = 30) -> dict[str, Any]:
    """The ``scan`` command: per dimension, ms for one query against ``n`` stored unit vectors
    (float32; int8 codes with a float32 scale beside at 384): the matrix-vector product, then what
    the fusion needs from it (the mean and standard deviation, the ``VECTOR_K`` greatest with the
    mean of the ``TOP_K`` greatest), and both together; p50 and min of ``repeats``."""
    import os

    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"n": n, "threads": {v: os.environ.get(v) for v in E.THREAD_VARS},
                           "load_before": os.getloadavg(), "dims": {}}
    for d in SCAN_DIMS:
        out["dims"][str(d)] = _scan_dim(embedders.normalise(rng.standard_normal((n, d)).astype(np.float32)), repeats)
    out["load_after"] = os.getloadavg()
    return out


def _scan_dim(docs: np.ndarray, repeats: int) -> dict[str, Any]:
    q = docs[7]
    rows: dict[str, Any] = {"bytes_per_memory": docs.shape[1] * 4, "matrix_mb": round(docs.nbytes / 1e6, 1)}
    cos = docs @ q
    rows["matvec"] = _times(lambda: docs @ q, repeats)
    rows["stats_topk"] = _times(lambda: _stats(cos), repeats)
    rows["total"] = _times(lambda: _stats(docs @ q), repeats)
    if docs.shape[1] == 384:
        codes, scale = embedders.quantise_int8(docs)
        rows["int8_total"] = _times(lambda: _stats(embedders.int8_scores(codes, scale, q)), repeats)
    return rows


def _stats(cos: np.ndarray) -> tuple[float, float, float, np.ndarray]:
    """What ``adaptive.Query`` takes from the bank's cosines, the service's way: no full sort."""
    k = adaptive.VECTOR_K
    top = np.argpartition(-cos, k - 1)[:k]
    top = top[np.argsort(-cos[top], kind="stable")]
    return float(cos.mean()), float(cos.std()), float(cos[top[:adaptive.TOP_K]].mean()), top


# --- a word-level static model --------------------------------------------------------------------

WORD_LIST = 100_000


def build_words(work: Path, fp16: Path, n: int = WORD_LIST) -> dict[str, Any]:
    """The ``words`` command: ``embedders.WordTable`` from the ``n`` most frequent English words of
    ``wordfreq`` (those that are one word to the table's splitter), each embedded whole by
    ``embedders.FastMiniLM``, every word piece too (the fallback), and the common component fitted
    on the neutral corpus (``<work>/corpus16k.txt``, WordNet glosses); written to
    ``<work>/artifacts/static-words-<n>[-pca<d>]``. Returns the files' bytes and sha256, timings."""
    import shutil

    import wordfreq

    started = time.perf_counter()
    fast = embedders.FastMiniLM(fp16)
    words = [w for w in wordfreq.top_n_list("en", int(n * 1.2)) if embedders._WORD.fullmatch(w)][:n]
    freq = np.array([wordfreq.word_frequency(w, "en") for w in words], dtype=np.float64)
    t0 = time.perf_counter()
    table = fast.encode(words)
    words_s = time.perf_counter() - t0
    cls_id, sep_id = fast.tokenizer.token_to_id("[CLS]"), fast.tokenizer.token_to_id("[SEP]")
    assert cls_id is not None and sep_id is not None, "a BERT word-piece vocabulary has [CLS] and [SEP]"
    pieces = embedders.normalise(fast.pooled([[cls_id, t, sep_id] for t in range(fast.tokenizer.get_vocab_size())]))
    corpus = (work / "corpus16k.txt").read_text(encoding="utf-8").splitlines()
    out: dict[str, Any] = {"words": len(words), "embed_words_s": round(words_s, 1), "artifacts": {}}
    for dims in (None, 256, 128):
        wt = embedders.WordTable("static-words", words, table, freq, pieces, fast.tokenizer)
        wt.fit_common(corpus, dims)
        folder = work / "artifacts" / (f"static-words-{n}" + ("" if dims is None else f"-pca{dims}"))
        files = wt.save(folder, words, freq)
        shutil.copy(fp16 / "tokenizer.json", folder / "tokenizer.json")
        files.append(folder / "tokenizer.json")
        out["artifacts"][folder.name] = {f.name: {"bytes": f.stat().st_size, "sha256": E.sha256(f)} for f in files}
    out["total_s"] = round(time.perf_counter() - started, 1)
    return out


SIF_VALUES = (1e-5, 1e-4, 1e-3, 1e-2, 1.0)


def word_weighting(work: Path, n: int = WORD_LIST) -> dict[str, Any]:
    """The ``words-weighting`` command: the word table's semantic-alone R@5 on the tuning
    questions per SIF ``a`` and common-component removal (none, the neutral corpus's mean, the mean
    and its first principal component)."""
    wt = embedders.WordTable.load(work / "artifacts" / f"static-words-{n}")
    freq = np.load(work / "artifacts" / f"static-words-{n}" / "freq.npy")
    corpus = (work / "corpus16k.txt").read_text(encoding="utf-8").splitlines()[:4000]
    mems = paraphrase.memories()
    index = {m.id: i for i, m in enumerate(mems)}
    qs = paraphrase.questions("tune")
    out: dict[str, Any] = {"words": n, "corpus": len(corpus), "r5": {}}
    for a, common in itertools.product(SIF_VALUES, ("none", "mean", "mean+pc")):
        wt.weight, wt.unknown_weight = (a / (a + freq)).astype(np.float32), float(a / (a + freq.min()))
        wt.mean, wt.pc = np.zeros(wt.dim, np.float32), np.zeros(wt.dim, np.float32)
        if common != "none":
            wt.fit_common(corpus)
            if common == "mean":
                wt.pc = np.zeros(wt.dim, np.float32)
        cos = wt.encode([q.question for q in qs]) @ wt.encode([m.text for m in mems]).T
        hits = [bool(set(np.argsort(-cos[j])[:5].tolist()) & {index[g] for g in q.gold}) for j, q in enumerate(qs)]
        out["r5"][f"a={a:g}, {common}"] = round(float(np.mean(hits)), 4)
    return out


# --- reports --------------------------------------------------------------------------------------

def fusion_label(f: dict[str, Any]) -> str:
    lift = f" - {f['lift']:g} x top{adaptive.TOP_K}" if f["lift"] else ""
    cov = "" if f["coverage"] == "none" else f" x (1-{f['coverage']})^{f['p']:g}"
    if f.get("ramp"):
        cov = f" x ramp({f['coverage']}: {f['ramp'][0]}..{f['ramp'][1]})"
    rr = float(f.get("rerank", 1.0))
    cov += "" if rr == 1 else " (vector-only candidates)" if rr == 0 else f" (today's candidates x {rr:g})"
    norm = "today/attainable" if f["norm"] == "attainable" else "today"
    return f"{norm} + {f['w']:g}{cov} x {f['signal']}; floor {f['floor']}{lift}"


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    return f"{r['para']['R@5']} ({r['loc']['R@10']}/{r['loc']['MRR']})"


def markdown_sweep(out: dict[str, Any]) -> list[str]:
    t = out["today"]
    md = [f"# Fusion that knows when lexical evidence is strong: {out['option']}, tuning split", "",
          f"{out['questions']} paraphrase tuning questions; {out['locomo_questions']} LoCoMo tuning questions "
          f"(conversations {', '.join(locomo.TUNE)}); no-answer probes {out['probes']}; {out['grid']['fusions']} "
          f"fusions (bench.adaptive); threads {out['threads']}.", "",
          f"Today: paraphrase R@5 {t['paraphrase']['R@5']}, R@10 {t['paraphrase']['R@10']}, MRR "
          f"{t['paraphrase']['MRR']}; LoCoMo 1-4 R@10 {t['locomo']['1-4']['R@10']}, MRR {t['locomo']['1-4']['MRR']}. "
          f"Semantic alone: R@5 {out['semantic_alone']['R@5']}, R@10 {out['semantic_alone']['R@10']}, MRR "
          f"{out['semantic_alone']['MRR']}.", "",
          "## Best paraphrase R@5 (LoCoMo 1-4 R@10/MRR) by the no-answer probes left without a semantic "
          "candidate (rows) and the LoCoMo loss allowed (columns)", "",
          "| empty >= | " + " | ".join(f"loss <= {sl}" for sl in LOCOMO_SLACK) + " |",
          "|---|" + "---|" * len(LOCOMO_SLACK)]
    for e, cells in out["tradeoff"].items():
        md.append(f"| {e} | " + " | ".join(_cell(cells[str(sl)]) for sl in LOCOMO_SLACK) + " |")
    md += ["", "The fusions of that table:", "", "| empty >= | loss <= | fusion | R@5 | R@10 | MRR | LoCoMo R@10 | MRR "
           "| empty (by kind) | LoCoMo categories within one question |", "|---|---|---|---|---|---|---|---|---|---|"]
    for e, cells in out["tradeoff"].items():
        for sl, r in cells.items():
            if r is None:
                continue
            c = out["checked"][f"{e}/{sl}"]
            md.append(f"| {e} | {sl} | {fusion_label(r['f'])} | {r['para']['R@5']} | {r['para']['R@10']} "
                      f"| {r['para']['MRR']} | {r['loc']['R@10']} | {r['loc']['MRR']} | {r['empty']} "
                      f"{r['empty_by_kind']} | {c['categories_ok']} |")
    md += ["", "## What each ingredient adds (no-answer empty >= 0.95, no LoCoMo 1-4 loss)", "",
           "| step | fusion | R@5 | R@10 | MRR | LoCoMo R@10 | MRR |", "|---|---|---|---|---|---|---|"]
    for a in out["ablation"]:
        r = a["best"]
        md.append(f"| {a['label']} | - | | | | | |" if r is None else
                  f"| {a['label']} | {fusion_label(r['f'])} | {r['para']['R@5']} | {r['para']['R@10']} "
                  f"| {r['para']['MRR']} | {r['loc']['R@10']} | {r['loc']['MRR']} |")
    md += ["", f"## Floors for semantic-only candidates: c + lift x top{adaptive.TOP_K} >= floor", "",
           "Calibrated on every no-answer probe (the least floor leaving the share given without a semantic "
           "candidate); and calibrated on half of them, the other half's empty rate and the paraphrase gold "
           "memories that clear it.", "",
           "| lift | empty >= | floor | half's floor | other half empty | gold clearing |", "|---|---|---|---|---|---|"]
    for k, v in out["floors"].items():
        lift, e = k.split("/")
        md.append(f"| {lift} | {e} | {v['floor']} | {v['half_floor']} | {v['other_half_empty']} "
                  f"| {v['gold_passing']} |")
    md += ["", "## The best fusion of each signal and coverage (empty >= 0.95, no LoCoMo loss)", "",
           "| signal / coverage | fusion | R@5 | R@10 | MRR | LoCoMo R@10 | MRR | empty |", "|---" * 8 + "|"]
    for k, r in out["shapes"].items():
        if r is None:
            md.append(f"| {k} | - | | | | | | |")
            continue
        md.append(f"| {k} | {fusion_label(r['f'])} | {r['para']['R@5']} | {r['para']['R@10']} | {r['para']['MRR']} "
                  f"| {r['loc']['R@10']} | {r['loc']['MRR']} | {r['empty']} |")
    return md


# --- commands -------------------------------------------------------------------------------------

def option(work: Path, name: str) -> E.Option:
    return next(o for o in E.options(work) if o.name == name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.semantic", description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("candidates", "sweep", "evaluate", "speed", "scan", "words",
                                        "words-weighting", "family", "floor-forms"))
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "cairn-embeddings")
    ap.add_argument("--option", default="minilm-l6-full",
                    help="the embedding option (bench.embeddings); family: comma-separated options")
    ap.add_argument("--focused", action="store_true", help="sweep: the focused grid (grid())")
    ap.add_argument("--fusion", default="", help="evaluate: the fusion as JSON (bench.adaptive.Adaptive)")
    args = ap.parse_args(argv)
    if args.command == "candidates":
        out = candidates(args.work)
        print({k: len(v) for k, v in out.items()})
        return 0
    if args.command == "sweep":
        out = sweep(args.work, args.option, args.focused)
        path = _write("sweep", out, markdown_sweep(out))
    elif args.command == "floor-forms":
        out = floor_forms(args.work, args.option)
        path = _write(args.command, out, markdown_floor_forms(out))
    elif args.command == "family":
        out = family(args.work, args.option.split(","))
        path = _write(args.command, out, markdown_family(out))
    elif args.command == "words-weighting":
        out = word_weighting(args.work)
        path = _write(args.command, out, ["```json", json.dumps(out, indent=1), "```"])
    elif args.command in ("speed", "scan", "words"):
        fp16 = args.work / "artifacts" / "minilm-fp16"
        out = speed(args.work, fp16) if args.command == "speed" else scan() if args.command == "scan" else \
            build_words(args.work, fp16)
        path = _write(args.command, out, ["```json", json.dumps(out, indent=1), "```"])
    else:
        f = Adaptive(**json.loads(args.fusion))
        out = evaluate(args.work, args.option, f)
        path = _write("evaluate", out, markdown_evaluate(out))
    print(path.with_suffix(".md").read_text())
    return 0


def _write(kind: str, out: dict[str, Any], md: list[str]) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    E.RESULTS.mkdir(parents=True, exist_ok=True)
    path = E.RESULTS / f"semantic-{kind}-{stamp}"
    path.with_suffix(".json").write_text(json.dumps(out, indent=1, sort_keys=True, default=str))
    path.with_suffix(".md").write_text("\n".join(md) + "\n")
    return path


if __name__ == "__main__":
    sys.exit(main())
