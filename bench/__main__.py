"""``python -m bench`` (``make bench``): retrieval quality, recall speed, local stack, writes under contention.

Writes ``bench/results/bench-<UTC timestamp>-<part>.md`` and ``.json`` per part that ran
(``quality``, ``speed``, ``local``, ``contention``, ``mcp``, ``cold``, ``turn``, ``extraction``,
``embed``, ``startup``, ``replay``, ``fleet``, ``save``, ``knowledge_update``), and
``latest-<part>.md``/``.json`` when that part produced figures. Options: ``--quality`` /
``--speed`` / ``--local`` / ``--contention`` / ``--mcp`` run those parts only (default: all five, and the
embedder part); ``--cold`` the cold first
structured context on the local stack (``bench/cold.py``, never by default: it imports 10k memories);
``--turn`` the per-turn paths (pre-generate hook and structured context, phase by phase) on the
local stack (``bench/turn.py``, never by default: it imports 10k memories twice);
``--save`` the save latency at 10k memories, warm and cold container (``bench/save_latency.py``, in the
default run; with ``--stack-root`` beside that checkout); ``--knowledge-update`` write-time detection and
the newer statement first on the knowledge-update set (``bench/corrections.py``, never by default);
``--fanout`` recall across 1, 10 and 50 banks of 1k (``bench/fanout.py``, never by default; with
``--stack-root`` that checkout beside this one); ``--extraction`` the extraction set's precision and
recall per split for today's extractor (``bench/extraction_set.py``, under in-process moto; never by
default);
``--embed`` the
semantic embedder's speed and memory in a fresh process (``bench/embed.py``; in the default run);
``--startup`` ``import app`` against its third-party imports alone, in the checkout and in
``build/deployment.zip`` when ``make package`` made one (``bench/startup.py``; in the default run);
``--replay`` the cold first recall after 10k writes since the last snapshot (``bench/replay.py``; in
the default run); ``--fleet`` the fleet simulation of index caches (``bench/fleet.py``; in the
default run);
``--fleet-scale`` every fleet-scale figure side by side in one results file (``bench/fleet_scale.py``:
recall across banks, the cold first recall after unsnapshotted writes, ranking at each of ``--sizes``
beside bm25s's fair path and tantivy, index bytes, cache accounting against RSS, ``import app`` and
the package's sizes, the fleet table; never by default), sized by ``--sizes``, ``--fanout-banks 1,10,50``,
``--fanout-size 1000``, ``--replay-writes 10000``, ``--cache-banks 20`` and ``--fleet-recalls``
(``--fleet-scale-jobs 2``: two pieces at once, only on an otherwise idle machine);
``--writers 1,8,32``, ``--contention-seconds 20`` and ``--contention-seed 10000`` (memories in the
bank beforehand) size the contention part;
``--stack-root PATH`` runs the local (cold) part on another checkout's launcher, and the turn part
on it beside this checkout's; ``--sizes 1000,10000,100000``;
``--rebuild-max`` (10000) the largest size whose whole cold recall through a rebuild is timed (a
rebuild's Cairn share and the records' read are timed at every size);
``--tune`` also runs the weight grid on the tuning conversations (conv-26, conv-30, conv-41).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# the benchmarks measure the service, not the per-token rate limit (one token sends every burst);
# local stacks they start inherit it
os.environ.setdefault("CAIRN_RATE_REQUESTS_PER_MINUTE", "0")

RESULTS = Path(__file__).resolve().parent / "results"


def _sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated positive memory counts."""
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes must be comma-separated integers, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return sizes


def _at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse


def _write(name: str, text: str, blob: str) -> None:
    (RESULTS / f"{name}.md").write_text(text)
    (RESULTS / f"{name}.json").write_text(blob)


def _no_error(data: dict) -> bool:
    return "error" not in data


def _simple_part(part: str) -> tuple[dict, list[str], bool, bool] | None:
    """The parts that take no option: ``(data, md, ok, good)``, ``None`` for another part."""
    import importlib
    checks = {"embed": _no_error, "mcp": _no_error,
              "startup": lambda d: not any("error" in v for v in d.values()),
              "replay": lambda d: not any("error" in r for r in d["settings"].values()),
              "fleet": lambda d: True, "extraction": lambda d: True, "knowledge_update": lambda d: True}
    if part not in checks:
        return None
    modules = {"extraction": "extraction_set", "knowledge_update": "corrections"}
    module = importlib.import_module(f".{modules.get(part, part)}", __package__)
    data, md = module.run()
    ok = checks[part](data)
    return data, md, ok, ok


def _run_part(part: str, args: argparse.Namespace, counter: Any) -> tuple[dict, list[str], bool, bool]:
    """Run one part: ``(data, markdown lines, ok: its figures may become latest-*, good: it did not
    fail)``."""
    simple = _simple_part(part)
    if simple is not None:
        return simple
    if part == "fleet_scale":
        from . import fleet_scale
        data, md = fleet_scale.run({k: getattr(args, k) for k in (
            "sizes", "fanout_banks", "fanout_size", "replay_writes", "cache_banks", "fleet_recalls")}
            | {"startup_repeat": 5, "jobs": args.fleet_scale_jobs})
        ok = not any("error" in p["data"] for p in data["pieces"].values())
        return data, md, ok, ok
    root = args.stack_root.resolve() if args.stack_root else None
    good = True
    if part == "turn":
        from . import turn
        data, md = turn.run(root)
        ok = good = "error" not in data  # with --stack-root this checkout runs beside it: its figures are real
    elif part == "cold":
        from . import cold
        data, md = cold.run(root)
        good = "error" not in data
        ok = good and root is None
    elif part == "save":
        from . import save_latency
        data, md = save_latency.run(root)
        ok = good = "error" not in data
    elif part == "fanout":
        from . import fanout
        data, md = fanout.run(root=root)
        ok = good = "error" not in data["here"]
    elif part == "quality":
        from . import quality
        data, md = quality.run(tune=args.tune)
        ok = not data.get("skipped")
    elif part == "speed":
        from . import speed
        data, md = speed.run(args.sizes, counter, queries=args.queries, rebuild_max=args.rebuild_max)
        ok = good = not any("error" in r for r in data["sizes"].values())
    elif part == "contention":
        from . import contention
        data, md = contention.run(counter, args.writers, float(args.contention_seconds),
                                  args.contention_seed)
        ok = good = not any("error" in s for s in data["settings"].values())
    else:
        from . import local
        data, md = local.run(root)
        good = not any("error" in r for r in data["modes"].values())
        ok = good and root is None  # another checkout's figures never become latest-local
    return data, md, ok, good


def main(argv: list[str] | None = None) -> int:
    """Run the requested parts; each part that ran writes ``bench-<stamp>-<part>.md/.json`` and,
    when it produced figures (not skipped, no size failed), ``latest-<part>.*``. Exit status 1
    when a speed size failed, else 0 (a quality part skipped for want of data is not a failure)."""
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quality", action="store_true",
                    help="run the quality part only (the paraphrase set through recall; LoCoMo)")
    ap.add_argument("--speed", action="store_true", help="run the speed part only")
    ap.add_argument("--local", action="store_true", help="run the local-stack part only")
    ap.add_argument("--contention", action="store_true",
                    help="run the writes-under-contention part only (in-process and on the local stack)")
    ap.add_argument("--writers", type=_sizes, default=[1, 8, 32],
                    help="contention part: concurrent writer counts (default 1,8,32)")
    ap.add_argument("--contention-seconds", type=_at_least(1), default=20,
                    help="contention part: seconds each writer count saves for (default 20)")
    ap.add_argument("--contention-seed", type=_at_least(0), default=10000,
                    help="contention part: memories imported into the bank before the writers start")
    ap.add_argument("--mcp", action="store_true",
                    help="run the MCP part only: memory_recall over /mcp against REST recall (local stack)")
    ap.add_argument("--cold", action="store_true",
                    help="run the cold first structured context part (local stack, 10k memories)")
    ap.add_argument("--turn", action="store_true",
                    help="run the per-turn paths part (local stack, 10k memories): hook and context by phase")
    ap.add_argument("--extraction", action="store_true",
                    help="run the extraction set (bench/extraction) through today's extractor: precision/recall")
    ap.add_argument("--fanout", action="store_true",
                    help="recall across 1, 10 and 50 banks of 1k (bench/fanout.py; with --stack-root beside that "
                         "checkout; never by default: it imports 51k memories)")
    ap.add_argument("--embed", action="store_true",
                    help="run the embedder part only: query and document embedding time, model load, RSS")
    ap.add_argument("--save", action="store_true",
                    help="run the save-latency part only (local stack, 10k memories, warm and cold container; "
                         "with --stack-root, that checkout beside this one)")
    ap.add_argument("--knowledge-update", action="store_true",
                    help="run the knowledge-update set through the service: write-time detection per split, "
                         "the current fact first, look-alikes retired under on_conflict: supersede")
    ap.add_argument("--startup", action="store_true",
                    help="run the Lambda start part only: import app against its third-party imports alone")
    ap.add_argument("--replay", action="store_true",
                    help="run the cold-first-recall-after-10k-unsnapshotted-writes part only (in-process moto)")
    ap.add_argument("--fleet", action="store_true",
                    help="run the fleet simulation of the index caches only (measures 4 bank sizes, then simulates)")
    ap.add_argument("--fleet-scale", action="store_true",
                    help="every fleet-scale figure side by side in one results file (bench/fleet_scale.py; "
                         "never by default)")
    ap.add_argument("--fanout-banks", type=_sizes, default=[1, 10, 50], help="fleet-scale: bank counts recalled across")
    ap.add_argument("--fanout-size", type=_at_least(1), default=1000,
                    help="fleet-scale: memories per bank recalled across")
    ap.add_argument("--replay-writes", type=_at_least(1), default=10000,
                    help="fleet-scale: writes since the last scheduled snapshot before the cold first recall")
    ap.add_argument("--cache-banks", type=_at_least(2), default=20,
                    help="fleet-scale: banks of 1k the cache accounting opens")
    ap.add_argument("--fleet-recalls", type=_at_least(100), default=None,
                    help="fleet-scale: recalls the fleet simulation counts (default: bench.fleet's)")
    ap.add_argument("--fleet-scale-jobs", type=_at_least(1), default=1,
                    help="fleet-scale: pieces run at once (default 1; 2 only on an otherwise idle machine)")
    ap.add_argument("--stack-root", type=Path, default=None,
                    help="local part: measure the launcher of this checkout (e.g. an older one) instead")
    ap.add_argument("--tune", action="store_true", help="also run the weight grid on the tune split")
    ap.add_argument("--sizes", type=_sizes, default=[1000, 10000, 100000],
                    help="memory counts for the speed part (default 1000,10000,100000)")
    ap.add_argument("--queries", type=_at_least(5), default=200, help="queries per kind for the speed part (>= 5)")
    ap.add_argument("--rebuild-max", type=_at_least(0), default=10000,
                    help="largest size whose whole cold recall through a rebuild from (moto) DynamoDB the speed "
                         "part times (Cairn's share of a rebuild is timed at every size)")
    args = ap.parse_args(argv)
    every = not (args.quality or args.speed or args.local or args.contention or args.mcp or args.cold
                 or args.turn or args.extraction or args.embed or args.startup or args.replay or args.fleet
                 or args.fanout or args.fleet_scale or args.save or args.knowledge_update)

    from .harness import CallCounter, fake_aws_env
    fake_aws_env()
    counter = CallCounter()
    counter.install()

    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
    head = [f"# Cairn benchmark ({started})", "", f"Command: `{command}`", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    failed = False
    written = []
    for part in ("startup", "embed", "quality", "speed", "replay", "fleet", "local", "contention", "mcp", "save",
                 "cold", "turn", "extraction", "fanout", "fleet_scale", "knowledge_update"):
        if not ((every and part not in ("cold", "turn", "extraction", "fanout", "fleet_scale", "knowledge_update"))
                or getattr(args, part)):
            continue
        data, md, ok, good = _run_part(part, args, counter)
        failed = failed or not good
        text = "\n".join(head + md) + "\n"
        blob = json.dumps({"started": started, "command": command, part: data}, indent=2, sort_keys=True)
        _write(f"bench-{stamp}-{part}", text, blob)
        written.append(f"{RESULTS}/bench-{stamp}-{part}.md")
        if ok:
            _write(f"latest-{part}", text, blob)  # a skipped or failed run keeps the last real figures
        print(text)
    print("results: " + ", ".join(written) + " (and .json)")
    if failed:
        print("bench: a speed size, local mode or contention setting failed (see its row); its latest-* kept",
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
