"""Every fleet-scale figure side by side, in one run and one results file (``python -m bench
--fleet-scale``; never by default).

The pieces, each the function of the module that owns the measurement, each in a child process of
its own (``python -m bench.fleet_scale --piece NAME``, one after the other), so no piece's imports,
environment, moto backend or resident memory reaches another's figures (the cache accounting
measures the process's RSS growth):

- ``fanout``: ``bench.fanout.measure``, a recall across ``--fanout-banks`` (1,10,50) banks of
  ``--fanout-size`` (1,000) memories; target: 50 banks at most 3x one bank;
- ``replay``: ``bench.replay.one`` at the default ``CAIRN_SNAPSHOT_EVERY``: the cold first recall
  after ``--replay-writes`` (10,000) writes since the bank's last scheduled snapshot; target:
  Cairn's share under 1 s;
- ``ranking``: ``bench.ranking.main`` per size of ``--sizes``, the index built through the import
  path's commits (``--batch 23``) and merged in the background (``--merge``), each memory with a
  random unit vector (``--vectors``) when the sentence model is available, so the vectors' bytes
  are a figure of their own; lexical ranking (semantic weight 0: no query vector) and BM25F alone
  beside bm25s's fair path and tantivy where installed; targets: selective queries at least as
  fast as bm25s's fair path, common words within 1.5x, the lexical index at most 2x bm25s's;
- ``cache``: ``bench.cache_memory.main``, ``--cache-banks`` (20) banks of 1k; target: the
  cache's accounting within 20% of the resident memory a bank adds;
- ``startup``: ``bench.startup.run``: ``import app`` against its third-party imports alone
  (target: at most 1.3x) and the package's sizes from ``build/deployment.zip`` (``make package``);
- ``fleet``: ``bench.fleet.run``, the fleet simulation (``--fleet-recalls`` counted recalls,
  default ``fleet.RECALLS``, half as many to warm up).

``--fleet-scale-jobs 2`` runs two pieces at once (the longest first): the figures are then taken
beside another piece's work, so only on an otherwise idle machine. A quick run for testing:
``python -m bench --fleet-scale --sizes 1000,10000 --fanout-banks 1,10 --replay-writes 1000
--cache-banks 5 --fleet-recalls 10000``. The load average before and after
each piece, and each piece's wall time, are in the file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PIECES = ("startup", "fanout", "replay", "ranking", "cache", "fleet")
LONGEST_FIRST = ("ranking", "replay", "fanout", "fleet", "cache", "startup")  # with --fleet-scale-jobs above 1
IMPORT_PATH_BATCH = 23  # records per commit of the import path (banks.transfer)
TARGETS = {"fanout_x": 3.0, "replay_cairn_ms": 1000.0, "selective_x": 1.0, "common_x": 1.5, "lexical_x": 2.0,
           "cache_off": 0.2, "import_x": 1.3}


# --- the pieces, each run in a child process -----------------------------------------------------


def _fanout(banks: list[int], size: int) -> dict[str, Any]:
    from .fanout import measure
    return measure(banks, size)


def _replay(writes: int) -> dict[str, Any]:
    from chalicelib.settings import Settings

    from . import replay
    from .harness import backend, fast_moto_transactions

    replay.WRITES = writes  # the module's size, read when ``one`` runs
    fast_moto_transactions()
    with backend(), tempfile.TemporaryDirectory(prefix="cairn-bench-fleet-scale-replay-") as root:
        return replay.one(Settings.model_fields["snapshot_every"].default, root)


def _ranking(size: int) -> dict[str, Any]:
    from chalicelib import semantic

    from . import ranking
    with tempfile.TemporaryDirectory(prefix="cairn-bench-fleet-scale-ranking-") as d:
        argv = ["--size", str(size), "--batch", str(IMPORT_PATH_BATCH), "--merge", "--index-dir", f"{d}/index"]
        return ranking.main(argv + (["--vectors"] if semantic.available() else []))


def _cache(banks: int) -> dict[str, Any]:
    from . import cache_memory
    with tempfile.TemporaryDirectory(prefix="cairn-bench-fleet-scale-cache-") as d:
        return cache_memory.main(["--banks", str(banks), "--size", "1000", "--dir", d])


def _startup(repeat: int) -> dict[str, Any]:
    from . import startup
    data, _md = startup.run(repeat)
    return data


def _fleet(recalls: int | None) -> dict[str, Any]:
    from . import fleet
    if recalls:
        fleet.RECALLS, fleet.WARMUP = recalls, recalls // 2  # the module's sizes, read when ``run`` runs
    data, _md = fleet.run()
    return data


def _piece(name: str, options: dict[str, Any]) -> dict[str, Any]:
    if name == "fanout":
        return _fanout(options["fanout_banks"], options["fanout_size"])
    if name == "replay":
        return _replay(options["replay_writes"])
    if name == "ranking":
        return {str(n): _ranking(n) for n in options["sizes"]}
    if name == "cache":
        return _cache(options["cache_banks"])
    if name == "startup":
        return _startup(options["startup_repeat"])
    return _fleet(options["fleet_recalls"])


def _child(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """Run one piece in a child process: its figures, or ``{"error"}``; with its wall time and the
    load average before and after."""
    load0 = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.NamedTemporaryFile(prefix=f"cairn-fleet-scale-{name}-", suffix=".json", delete=False) as fh:
        result_path = fh.name
    try:
        done = subprocess.run([sys.executable, "-m", "bench.fleet_scale", "--piece", name, "--options",
                               json.dumps(options), "--out", result_path], cwd=ROOT, check=False,
                              stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            data: dict[str, Any] = {"error": done.stderr.strip()[-1500:] or f"exit status {done.returncode}"}
        else:
            data = json.loads(Path(result_path).read_text())
    finally:
        os.unlink(result_path)
    return {"data": data, "wall_s": round(time.perf_counter() - started, 1),
            "loadavg": [round(load0, 2), round(os.getloadavg()[0], 2)]}


def _one(name: str, options: dict[str, Any]) -> dict[str, Any]:
    print(f"fleet-scale: {name}...", flush=True)
    got = _child(name, options)
    print(f"fleet-scale: {name} done in {got['wall_s']} s", flush=True)
    return got


def run(options: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Every piece: ``(data, markdown lines)``; ``options``: ``sizes``, ``fanout_banks``,
    ``fanout_size``, ``replay_writes``, ``cache_banks``, ``startup_repeat``, ``fleet_recalls`` and
    ``jobs`` (pieces at once: 1, one after the other, unless the run must be shorter than the
    pieces' sum; each piece is single-threaded, so on an idle 2-core machine 2 disturb each other
    little, the longest pieces starting first)."""
    started = time.perf_counter()
    out: dict[str, Any] = {"options": options, "pieces": {}}
    jobs = max(1, int(options.get("jobs") or 1))
    order = PIECES if jobs == 1 else LONGEST_FIRST
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = dict(zip(order, pool.map(lambda name: _one(name, options), order), strict=True))
    out["pieces"] = {name: done[name] for name in PIECES}
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out, markdown(out)


# --- the one table --------------------------------------------------------------------------------


def _x(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else ""


def _met(ok: bool | None) -> str:
    return "" if ok is None else ("yes" if ok else "no")


def _row(figure: str, cairn: Any, bm25s: Any = "", tantivy: Any = "", target: str = "", met: bool | None = None) -> str:
    return f"| {figure} | {cairn} | {bm25s} | {tantivy} | {target} | {_met(met)} |"


def _fanout_rows(d: dict[str, Any]) -> list[str]:
    banks = d["banks"]
    one = banks[min(banks, key=int)]["p50_ms"]
    rows = []
    for n, r in sorted(banks.items(), key=lambda kv: int(kv[0])):
        x = r["p50_ms"] / one if one else None
        big = n == max(banks, key=int) and n != min(banks, key=int)
        rows.append(_row(f"recall across {n} bank(s) of {d['size']:,}: p50 / p95 ms (x one bank)",
                         f"{r['p50_ms']} / {r['p95_ms']} ({x:.1f}x)" if x else f"{r['p50_ms']} / {r['p95_ms']}",
                         target=f"<= {TARGETS['fanout_x']:g}x one bank" if big else "",
                         met=(x is not None and x <= TARGETS["fanout_x"]) if big else None))
    return rows


def _replay_rows(d: dict[str, Any], writes: int) -> list[str]:
    cairn = d["cairn_ms"]
    return [_row(f"cold first recall after {writes:,} writes since the last scheduled snapshot (snapshot_every "
                 f"{d['snapshot_every']:,}: the writer left {d['writer_snapshots_left']}, {d['replayed']:,} changes "
                 "replayed): ms, moto's share, Cairn's", f"{d['cold_ms']}, {d['moto_ms']}, {cairn}",
                 target=f"Cairn < {TARGETS['replay_cairn_ms']:g}", met=cairn < TARGETS["replay_cairn_ms"])]


def _ranking_rows(size: str, d: dict[str, Any]) -> list[str]:
    bm, tv = d.get("bm25s") or {}, d.get("tantivy") or {}
    n = f"{int(size):,}"
    rows = []
    for kind, limit in (("selective", TARGETS["selective_x"]), ("common", TARGETS["common_x"])):
        rank, score = d["ranking"][kind]["p50_ms"], d["scoring"][kind]["p50_ms"]
        fair = (bm.get(kind) or {}).get("p50_ms")
        t = (tv.get(kind) or {}).get("p50_ms")
        rows.append(_row(f"{kind} ranking at {n}: p50 ms, lexical (BM25F alone)", f"{rank} ({score})",
                         f"{fair} ({_x(rank, fair)}; BM25F {_x(score, fair)})" if fair is not None else "n/a",
                         t if t is not None else "not installed", f"<= {limit:g}x bm25s's fair path",
                         rank <= limit * fair if fair else None))
    ix = d["index"]
    lexical_x = ix["lexical"] / bm["bytes"] if bm.get("bytes") else None
    rows.append(_row(f"index bytes at {n}: lexical (vectors apart; segments)",
                     f"{ix['lexical']:,} ({ix['vectors']:,}; {ix['segments']})",
                     f"{bm['bytes']:,} ({lexical_x:.2f}x)" if lexical_x else "n/a",
                     f"{tv['bytes']:,}" if tv.get("bytes") else "not installed",
                     f"lexical <= {TARGETS['lexical_x']:g}x bm25s at 100k" if int(size) >= 100_000 else "",
                     lexical_x <= TARGETS["lexical_x"] if lexical_x and int(size) >= 100_000 else None))
    return rows


def _cache_rows(d: dict[str, Any]) -> list[str]:
    ratio = d["accounted_over_rss"]
    return [_row(f"cache accounting per bank of {d['size']:,} ({d['banks']} opened): accounted / RSS growth "
                 "(medians)", f"{d['accounted_median']:,} / {d['rss_growth_median']:,} ({ratio})",
                 target=f"within {TARGETS['cache_off']:.0%} of RSS",
                 met=ratio is not None and abs(ratio - 1) <= TARGETS["cache_off"])]


def _startup_rows(d: dict[str, Any]) -> list[str]:
    rows = []
    for name in ("checkout", "package", "package-source-only"):
        s = d.get(name)
        if s is None:
            continue
        if "error" in s:
            rows.append(_row(f"import app ({name})", f"error: {s['error'][-200:]}"))
            continue
        rows.append(_row(f"import app ({name}): ms against third-party alone (CPU)",
                         f"{s['import_app_ms']:.0f} / {s['third_party_ms']:.0f} = {s['ratio']}x "
                         f"(CPU {s['cpu_ratio']}x)", target=f"<= {TARGETS['import_x']:g}x",
                         met=s["ratio"] <= TARGETS["import_x"]))
    size = d.get("package_size")
    rows.append(_row("package: zipped / unzipped MiB", f"{size['zipped_mib']} / {size['unzipped_mib']}" if size
                     else "no build/deployment.zip: run make package first"))
    return rows


def markdown(out: dict[str, Any]) -> list[str]:
    """One table of every figure (Cairn beside bm25s's fair path and tantivy, the target, met), then
    the fleet simulation's own table."""
    o, pieces = out["options"], out["pieces"]
    md = ["## Fleet scale: every figure side by side", "",
          f"One run, each piece in a child process of its own, {o.get('jobs') or 1} at a time; wall "
          f"{out['wall_s']} s. Options: "
          f"`{json.dumps(o)}`. One BLAS thread; the ranking on indexes built through the import path's commits "
          f"(batches of {IMPORT_PATH_BATCH}) then merged in the background.", "",
          "| figure | Cairn | bm25s (fair path) | tantivy | target | met |", "|---|---|---|---|---|---|"]
    render = {"fanout": _fanout_rows, "cache": _cache_rows, "startup": _startup_rows}
    for name in PIECES:
        data = pieces[name]["data"]
        if "error" in data:
            md.append(_row(f"{name}: failed", f"`{data['error'][-300:]}`".replace("\n", " ")))
        elif name == "ranking":
            for size, d in sorted(data.items(), key=lambda kv: int(kv[0])):
                md += _ranking_rows(size, d)
        elif name == "replay":
            md += _replay_rows(data, o["replay_writes"])
        elif name in render:
            md += render[name](data)
    md += ["", "| piece | wall s | load average before / after |", "|---|---|---|"]
    md += [f"| {name} | {p['wall_s']} | {p['loadavg'][0]} / {p['loadavg'][1]} |" for name, p in pieces.items()]
    fleet = pieces["fleet"]["data"]
    if "error" not in fleet:
        from . import fleet as fleet_mod
        md += ["", *("#" + line if line.startswith("## ") else line for line in fleet_mod.markdown(fleet))]
    return md


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fleet_scale", description=__doc__.splitlines()[0])
    ap.add_argument("--piece", choices=PIECES, required=True, help="the piece this child process runs")
    ap.add_argument("--options", required=True, help="the run's options as JSON (see run)")
    ap.add_argument("--out", required=True, help="where to write the piece's figures (JSON)")
    args = ap.parse_args(argv)
    from infra.threads import pin
    pin()  # before numpy loads
    from .harness import fake_aws_env
    fake_aws_env()
    data = _piece(args.piece, json.loads(args.options))
    Path(args.out).write_text(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
