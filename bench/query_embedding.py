"""The service's query embedding, timed: ``python -m bench.query_embedding``.

``chalicelib.semantic.embed_query`` (the call each recall makes, the lock included) on 50 queries
of each length in ``bench.embeddings.QUERY_WORDS`` (5 to 40 words cut from the paraphrase set's
memories: ``bench.embeddings.time_queries``), one at a time after a warm-up, and one 600-word
message (a per-turn hook's, cut to the query window). Target: p50 under ``TARGET_P50_MS``.

Writes ``bench/results/query-embedding-<UTC stamp>.md/.json`` with the BLAS thread variables and
the load average before and after: a timing means nothing without them on a shared machine.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .embeddings import THREAD_VARS, time_queries

RESULTS = Path(__file__).resolve().parent / "results"
TARGET_P50_MS = 5.0


class ServiceQueries:
    """``bench.embedders.Embedder`` over the service's ``embed_query``, one text per call."""

    name = "service embed_query"

    def __init__(self) -> None:
        from chalicelib import semantic

        if not semantic.available():
            raise SystemExit(f"the model is not available: {semantic.unavailable_reason()}")
        self.embed, self.dim = semantic.embed_query, semantic.DIM

    def encode(self, texts: list[str]) -> np.ndarray:
        out = []
        for t in texts:
            vec = self.embed(t)
            if vec is None:
                raise ValueError(f"not covered by the model: {t[:40]!r}")
            out.append(vec)
        return np.stack(out)


def run() -> dict[str, Any]:
    """``{threads, load_before, load_after, ms: time_queries(...), target}``."""
    load_before = os.getloadavg()
    started = time.perf_counter()
    model = ServiceQueries()
    load_ms = round((time.perf_counter() - started) * 1000, 1)
    ms = time_queries(model)
    return {"threads": {v: os.environ.get(v) for v in THREAD_VARS}, "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(), "model_load_ms": load_ms,
            "ms": ms, "target_p50_ms": TARGET_P50_MS, "met": ms["all"]["p50"] < TARGET_P50_MS}


def markdown(out: dict[str, Any], command: str) -> list[str]:
    ms = out["ms"]
    md = ["# Query embedding through the service", "", f"Command: `{command}`", "",
          f"Threads {out['threads']}; {out['cpus']} CPUs; load average before {out['load_before']}, after "
          f"{out['load_after']}. Model load (first call's process) {out['model_load_ms']} ms.", "",
          "| query words | p50 ms | p95 ms |", "|---|---|---|"]
    md += [f"| {k} | {v['p50']} | {v['p95']} |" for k, v in ms.items() if isinstance(v, dict)]
    md += ["", f"One 600-word message (cut to the query window): {ms['600w_message']} ms.", "",
           f"Target p50 < {out['target_p50_ms']} ms over 5-40 words: {'met' if out['met'] else 'NOT met'} "
           f"({ms['all']['p50']} ms).", ""]
    return md


def main() -> int:
    out = run()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    command = "python -m bench.query_embedding"
    text = "\n".join(markdown(out, command))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"query-embedding-{stamp}.md").write_text(text)
    (RESULTS / f"query-embedding-{stamp}.json").write_text(json.dumps({"command": command, **out}, indent=2))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
