"""The index cache's accounting against the memory it really adds: ``--banks`` banks of
``--size`` memories (the speed part's corpus, each bank its own seed) built into one directory
each, then opened one after the other in one process as a warm container holds them (the index
opened, its reader kept, a few selective and common queries ranked so the postings and columns
recall keeps are decoded); after each, the growth of the process's resident memory (``VmRSS``,
after a garbage collection) beside what the cache counts for the bank
(``BankIndex.resident_bytes()``, the sum ``IndexCache`` evicts on).

``python -m bench.cache_memory [--banks 20] [--size 1000] [--dir DIR]`` prints one JSON object:
per bank opened the RSS growth and the accounted bytes, their medians and ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
from typing import Any

from .harness import median
from .ranking import build
from .speed import corpus, queries


def rss_bytes() -> int:
    """This process's resident set size (``VmRSS`` of ``/proc/self/status``), bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m bench.cache_memory", description=__doc__.splitlines()[0])
    ap.add_argument("--banks", type=int, default=20)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args(argv)
    from whoosh import index as whoosh_index

    from chalicelib.core.store import Clock
    from chalicelib.search import recall as recall_mod
    from chalicelib.search.index import INDEX_NAME, BankIndex
    from chalicelib.tuning import MemoryTuning

    root = args.dir or f"/tmp/cairn-bench-cache-{args.size}"
    t0 = 1_800_000_000_000
    paths = []
    for b in range(args.banks):  # built first (and closed): only the opening is measured
        texts, ents, vocab = corpus(args.size, seed=100 + b)
        path = os.path.join(root, f"bank{b}")
        build(path, texts, ents, t0).close_reader()
        paths.append((path, queries(vocab, 10)))
    tuning = MemoryTuning()
    held = []
    rows = []
    gc.collect()
    before = rss_bytes()
    for path, qs in paths:
        entry = BankIndex("bench", path, "inc", path, whoosh_index.open_dir(path, indexname=INDEX_NAME),
                          clock=Clock((args.size,)))
        entry.measure()
        leaves = [(leaf, entry.stats_cache, "b") for leaf, _off in entry.reader().leaf_readers()]
        for q in qs["selective"] + qs["common"]:
            recall_mod._rank(leaves, q, limit=tuning.recall_limit, tag=None, include_superseded=False,
                             tuning=tuning, filter=None, now=t0 + args.size)
        held.append(entry)
        gc.collect()
        after = rss_bytes()
        rows.append({"rss_growth": after - before, "accounted": entry.resident_bytes(),
                     "disk": entry.size_bytes, "arrays": entry.memory_bytes()})
        before = after
    grow = median([r["rss_growth"] for r in rows[1:]])  # the first pays one-off imports and caches
    acc = median([r["accounted"] for r in rows[1:]])
    out = {"banks": args.banks, "size": args.size, "rss_growth_median": grow, "accounted_median": acc,
           "accounted_over_rss": round(acc / grow, 2) if grow else None,
           "rows": rows, "loadavg": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
