"""The embedder's speed and memory (``python -m bench --embed``), in a fresh interpreter.

One child process, BLAS and tokenizer threads pinned (``infra.threads``; the values are printed
with every figure), measures in order: RSS at start, ``import app`` (time, RSS), the model's load
(``chalicelib.semantic.available()``: time, RSS), the first query embedding (time, RSS); then
``embed_query`` for ``REPS`` distinct queries of each of ``QUERY_WORDS`` words and a
``HOOK_WORDS``-word hook message (cut to ``QUERY_WINDOW``): wall p50, p95 and min, and the
thread's CPU time (p50, min: a loaded machine inflates wall time), with the word pieces
embedded; ``embed_documents`` of ``DOCS`` distinct memories of 10-60 words in one call (batched
by length): total time and per memory; and the cosine of the model's query vectors with the
float32 reference (``tests/data/semantic-reference.json``). Texts are English words drawn with a
fixed seed. Target: query p50 under ``QUERY_TARGET_MS``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from infra.threads import THREAD_ENV

ROOT = Path(__file__).resolve().parent.parent
QUERY_WORDS = (5, 10, 20, 40)
HOOK_WORDS = 600
REPS = 60
DOCS = 1000
QUERY_TARGET_MS = 5.0

PROBE = r"""
import json, os, random, statistics, sys, time

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024

def clock(fn):
    t = time.perf_counter(); value = fn(); return (time.perf_counter() - t) * 1000, value

QUERY_WORDS, HOOK_WORDS, REPS, DOCS, THREADS = json.loads(sys.argv[1])
WORDS = ("memory agent project deploy lambda package weights model query search recall bank token "
    "meeting review design launch quarterly plan tests failed because limit size keys garage spare "
    "morning coffee tea prefers notes thursday invite team room book move customer invoice payment "
    "database index snapshot cache timeout retry error warning user password account settings "
    "python function module import class method string number list dictionary file folder path "
    "travel flight hotel booking city weather rain sunny weekend family birthday dinner friend").split()
rng = random.Random(7)
def text(n): return " ".join(rng.choice(WORDS) for _ in range(n))

out = {"threads": {k: os.environ.get(k) for k in THREADS}, "rss_start_mb": rss_mb()}
out["import_app_ms"], _ = clock(lambda: __import__("app"))
out["rss_after_import_app_mb"] = rss_mb()
from chalicelib import semantic
out["model_load_ms"], ok = clock(semantic.available)
out["rss_after_model_load_mb"] = rss_mb()
assert ok, semantic.unavailable_reason()
out["first_query_ms"], _ = clock(lambda: semantic.embed_query("the first query after the load"))
out["rss_after_first_query_mb"] = rss_mb()
tok = semantic._tokenizer
def pieces(t): return min(len(tok.encode(t).ids), semantic.QUERY_WINDOW)
rows = {}
for label, n in [(f"{w} words", w) for w in QUERY_WORDS] + [(f"{HOOK_WORDS}-word hook message", HOOK_WORDS)]:
    texts = [text(n) for _ in range(REPS)]
    times, cpu = [], []
    for t in texts:
        c = time.thread_time()
        times.append(clock(lambda t=t: semantic.embed_query(t))[0])
        cpu.append((time.thread_time() - c) * 1000)
    times.sort()
    rows[label] = {"p50_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))],
                   "min_ms": times[0], "cpu_p50_ms": statistics.median(cpu), "cpu_min_ms": min(cpu),
                   "word_pieces": statistics.median(pieces(t) for t in texts)}
out["queries"] = rows
docs = [text(rng.randint(10, 60)) for _ in range(DOCS)]
c = time.thread_time()
total, _ = clock(lambda: semantic.embed_documents(docs))
out["documents"] = {"count": DOCS, "total_ms": total, "per_memory_ms": total / DOCS,
                    "cpu_ms": (time.thread_time() - c) * 1000,
                    "word_pieces": sum(len(tok.encode(d).ids) for d in docs)}
out["rss_after_documents_mb"] = rss_mb()
ref = json.load(open("tests/data/semantic-reference.json"))
import numpy as np
got = np.stack([semantic.embed_query(s) for s in ref["sentences"]])
out["reference_min_cosine"] = float(np.einsum("ij,ij->i", got, np.asarray(ref["vectors"], np.float32)).min())
print(json.dumps(out))
"""


def measure() -> dict[str, Any]:
    """The child's figures (module docstring); ``{"error": ...}`` when it fails."""
    args = json.dumps([list(QUERY_WORDS), HOOK_WORDS, REPS, DOCS, sorted(THREAD_ENV)])
    r = subprocess.run([sys.executable, "-c", PROBE, args], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, **THREAD_ENV}, timeout=1800, check=False)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-2000:]}
    out: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    out["load_average"] = os.getloadavg()
    out["cpus"] = os.cpu_count()
    return out


def render(d: dict[str, Any]) -> list[str]:
    """Markdown lines for ``measure()``'s figures."""
    if "error" in d:
        return ["## Embedder speed", "", f"Failed: {d['error']}"]
    env = ", ".join(f"{k}={v}" for k, v in sorted(d["threads"].items()))
    load = ", ".join(f"{x:.2f}" for x in d["load_average"])
    lines = ["## Embedder speed (chalicelib.semantic, fresh process)", "",
             f"Threads: {env}. Load average before the run's end: {load} on {d['cpus']} CPUs.", "",
             "Wall time counts the waits of a loaded machine; CPU time is this thread's own.", "",
             f"| query ({env}) | word pieces | p50 ms | p95 ms | min ms | CPU p50 ms | CPU min ms |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label, r in d["queries"].items():
        lines.append(f"| {label} | {r['word_pieces']:.0f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['min_ms']:.2f} "
                     f"| {r['cpu_p50_ms']:.2f} | {r['cpu_min_ms']:.2f} |")
    doc = d["documents"]
    ten = d["queries"][f"{QUERY_WORDS[1]} words"]
    target = "met" if ten["p50_ms"] < QUERY_TARGET_MS else "not met"
    lines += ["", f"Query p50 target < {QUERY_TARGET_MS} ms (10 words, wall): {target} "
              f"({ten['p50_ms']:.1f} ms wall, {ten['cpu_p50_ms']:.1f} ms CPU).", "",
              f"| one process ({env}) | figure |", "|---|---:|",
              f"| {doc['count']} memories in one embed_documents call | {doc['total_ms']:.0f} ms "
              f"({doc['per_memory_ms']:.2f} ms each, {doc['cpu_ms']:.0f} ms CPU, {doc['word_pieces']} word pieces) |",
              f"| import app | {d['import_app_ms']:.0f} ms |",
              f"| model load (available()) | {d['model_load_ms']:.0f} ms |",
              f"| first query after the load | {d['first_query_ms']:.1f} ms |",
              f"| RSS at start / after import app / after model load / after first query / after documents | "
              f"{d['rss_start_mb']:.0f} / {d['rss_after_import_app_mb']:.0f} / {d['rss_after_model_load_mb']:.0f} / "
              f"{d['rss_after_first_query_mb']:.0f} / {d['rss_after_documents_mb']:.0f} MB |",
              f"| min cosine with the float32 reference | {d['reference_min_cosine']:.6f} |"]
    return lines


def run() -> tuple[dict[str, Any], list[str]]:
    data = measure()
    return data, render(data)
