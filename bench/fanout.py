"""Recall across many banks: one warm recall over 1, 10 and 50 banks of 1,000 memories each,
under in-process moto, on the lexical path (no sentence model: the read of the banks is what is
measured, and an older checkout without the model runs the same code).

Per bank count: the recall's p50/p95 in ms over ``QUERIES`` queries once every bank is warm
(its second recall: the first reads each bank's lane rows and makes the index fresh), moto's
share of each recall (the time inside moto's request handler, ``BotocoreStubber.process_request``:
what DynamoDB itself would do; botocore's and pynamodb's work on the answer stay in Cairn's share)
and Cairn's share (the rest, p50), the AWS calls of one warm recall, and the first recall after
another container wrote into one of the banks (that bank's lane rows are read again). The corpus:
synthetic sentences over a made-up vocabulary imported through
``chalicelib.banks.transfer.import_lines``.

``python -m bench.fanout [--banks 1,10,50] [--size 1000] [--root PATH] [--profile]``: with
``--root``, the same measurement runs on that checkout's code in a process of its own (its
``.venv``), and both are printed side by side; ``--profile`` prints where the warm recalls of the
largest bank count spend their time (cProfile; the batch reads run in the calling thread then, so
their work shows). ``python -m bench --fanout`` runs it as a part of ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ORG = "fanout"
QUERIES = 40
WORDS = [a + b for a in ("ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "pi", "qua", "zen", "bri")
         for b in ("ta", "no", "ri", "mex", "sul", "par", "vin", "dox", "lem", "gor")]


def _lines(bank: int, size: int, rng: random.Random) -> list[bytes]:
    return [json.dumps({"text": f"{' '.join(rng.choices(WORDS, k=12))} note {bank} {i}"}).encode("utf-8")
            for i in range(size)]


def _p(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * len(s)))], 2)


class _Inline:
    """An executor whose ``map`` runs in the calling thread: what the profile puts in place of
    the parallel batch reads' pool, so their work (moto's, botocore's, the decoding) shows."""

    def map(self, fn: Any, *its: Any) -> Any:
        return list(map(fn, *its))


def _profile(recall: Any, banks: list[str], queries: list[str]) -> None:
    """Print the 30 functions warm recalls of ``banks`` (one per query) spend most time in,
    cumulative then their own time, to stderr; the batch reads run in the calling thread."""
    import cProfile
    import pstats
    from unittest import mock

    from chalicelib.core.store import lanes
    prof = cProfile.Profile()
    with mock.patch.object(lanes, "_batch_pool", _Inline):
        prof.runcall(lambda: [recall(ORG, banks, q, limit=10) for q in queries])
    for order in ("cumulative", "tottime"):
        pstats.Stats(prof, stream=sys.stderr).sort_stats(order).print_stats(30)


def measure(bank_counts: list[int], size: int, profile: bool = False) -> dict[str, Any]:
    """The figures of this checkout (see the module docstring): ``{banks: {n: {...}}}``."""
    os.environ["CAIRN_MODEL_DIR"] = tempfile.mkdtemp(prefix="no-model-")  # the lexical path
    from unittest import mock

    from moto.core.botocore_stubber import BotocoreStubber

    from bench.harness import CallCounter, Timer, backend, fast_moto_transactions

    counter = CallCounter()
    counter.install()
    out: dict[str, Any] = {"size": size, "banks": {}}
    with backend():
        fast_moto_transactions()
        from chalicelib.banks import service, transfer
        from chalicelib.search import index, recall
        rng = random.Random(7)
        names = [f"b{i:02d}" for i in range(max(bank_counts))]
        started = time.perf_counter()
        for i, name in enumerate(names):
            transfer.import_lines(ORG, name, _lines(i, size, rng), actor="bench")
        out["import_s"] = round(time.perf_counter() - started, 1)
        service.save_memory(ORG, "warm-up", service.SaveRequest(text="a first save loads the write path"),
                            actor="bench")
        for n in bank_counts:
            banks = names[:n]
            cache = index.IndexCache(tempfile.mkdtemp(prefix="fanout-"))
            with index.using(cache):
                for _ in range(2):  # cold, then the first read that can reuse lane rows
                    recall.recall(ORG, banks, "kata note", limit=10)
                times, moto_ms = [], []
                moto = Timer()
                with mock.patch.object(BotocoreStubber, "process_request", moto.wrap(BotocoreStubber.process_request)):
                    for _q in range(QUERIES):
                        words = " ".join(rng.sample(WORDS, 2))
                        moto.ms = 0.0
                        t0 = time.perf_counter()
                        recall.recall(ORG, banks, words, limit=10)
                        times.append((time.perf_counter() - t0) * 1000)
                        moto_ms.append(moto.ms)
                if profile and n == max(bank_counts):
                    queries = [" ".join(rng.sample(WORDS, 2)) for _q in range(QUERIES)]
                    _profile(recall.recall, banks, queries)
                counter.calls.clear()
                counter.on = True
                recall.recall(ORG, banks, "kata note", limit=10)
                counter.on = False
                calls = {k: v for k, v in counter.calls.items() if ":items" not in k}
            other = index.IndexCache(tempfile.mkdtemp(prefix="fanout-writer-"))
            after_write = 0.0
            for k in range(2):  # the second: the first also pays this process's first index write
                with index.using(other):
                    service.save_memory(ORG, banks[-1], service.SaveRequest(text=f"a fresh note {n} {k} kata"),
                                        actor="bench")
                with index.using(cache):
                    t0 = time.perf_counter()
                    recall.recall(ORG, banks, "kata note", limit=10)
                    after_write = (time.perf_counter() - t0) * 1000
            out["banks"][str(n)] = {"p50_ms": _p(times, 0.5), "p95_ms": _p(times, 0.95), "calls": calls,
                                    "moto_ms": round(sum(moto_ms) / len(moto_ms), 2),
                                    "cairn_p50_ms": _p([t - m for t, m in zip(times, moto_ms, strict=True)], 0.5),
                                    "after_write_ms": round(after_write, 2)}
    return out


def _other(root: Path, bank_counts: list[int], size: int) -> dict[str, Any]:
    """The same measurement on the checkout at ``root`` (its ``.venv``), in a process of its own."""
    python = root / ".venv" / "bin" / "python"
    args = [str(python), str(Path(__file__).resolve()), "--json", "--banks", ",".join(map(str, bank_counts)),
            "--size", str(size)]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(here: dict[str, Any], there: dict[str, Any] | None) -> list[str]:
    """Markdown lines: one row per bank count, this checkout (and ``there``) side by side."""
    md = ["## Recall across banks (in-process moto, lexical path)", "",
          f"Banks of {here['size']} memories each; p50/p95 of {QUERIES} warm recalls; moto's share (mean: time in "
          "moto's request handler) and Cairn's (the rest, p50); calls of one warm recall; the first recall after "
          "another container wrote into one of the banks.", "",
          "| banks | p50 ms | p95 ms | x one bank | moto ms | Cairn's share ms | Cairn's x one bank | AWS calls (warm) "
          "| after a write ms |"
          + (" before: p50 ms | before: x one bank | before: Cairn's share ms | before: Cairn's x one bank "
             "| before: calls |" if there else ""),
          "|---|---|---|---|---|---|---|---|---|" + ("---|---|---|---|---|" if there else "")]
    first = here["banks"][min(here["banks"], key=int)]
    one, cairn_one = first["p50_ms"], first.get("cairn_p50_ms") or 1.0
    for n, r in sorted(here["banks"].items(), key=lambda kv: int(kv[0])):
        calls = ", ".join(f"{k.split('.', 1)[-1]} {v}" for k, v in sorted(r["calls"].items()))
        row = (f"| {n} | {r['p50_ms']} | {r['p95_ms']} | {r['p50_ms'] / one:.1f}x | {r.get('moto_ms', '-')} | "
               f"{r.get('cairn_p50_ms', '-')} | {r.get('cairn_p50_ms', 0) / cairn_one:.1f}x | {calls} | "
               f"{r['after_write_ms']} |")
        if there and "banks" in there and n in there["banks"]:
            b = there["banks"][n]
            bfirst = there["banks"][min(there["banks"], key=int)]
            bone, bcairn = bfirst["p50_ms"], bfirst.get("cairn_p50_ms") or 1.0
            bcalls = ", ".join(f"{k.split('.', 1)[-1]} {v}" for k, v in sorted(b["calls"].items()))
            row += (f" {b['p50_ms']} | {b['p50_ms'] / bone:.1f}x | {b.get('cairn_p50_ms', '-')} | "
                    f"{b.get('cairn_p50_ms', 0) / bcairn:.1f}x | {bcalls} |")
        md.append(row)
    if there and "error" in there:
        md += ["", f"The other checkout failed: `{there['error'][-300:]}`"]
    return md


def run(bank_counts: list[int] | None = None, size: int = 1000,
        root: Path | None = None, profile: bool = False) -> tuple[dict[str, Any], list[str]]:
    """``make bench``'s part: ``(data, markdown lines)``."""
    counts = bank_counts or [1, 10, 50]
    here = measure(counts, size, profile)
    there = _other(root, counts, size) if root is not None else None
    return {"here": here, "before": there}, table(here, there)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--banks", default="1,10,50")
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--root", type=Path, default=None, help="another checkout to measure beside this one")
    ap.add_argument("--json", action="store_true", help="print this checkout's figures as one JSON line")
    ap.add_argument("--profile", action="store_true", help="print where the largest bank count's recalls spend time")
    args = ap.parse_args()
    counts = [int(x) for x in args.banks.split(",") if x.strip()]
    if args.json:
        print(json.dumps(measure(counts, args.size)))
        return
    _data, md = run(counts, args.size, args.root, args.profile)
    print("\n".join(md))


if __name__ == "__main__":
    if __package__ in (None, ""):
        sys.path.insert(0, os.getcwd())
    main()
