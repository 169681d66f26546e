"""``python -m bench`` (``make bench``): LoCoMo retrieval quality and recall speed (issue 3, item 6).

Writes ``bench/results/bench-<UTC timestamp>-<part>.md`` and ``.json`` plus ``latest-<part>.md``/``.json``
(part: ``all``, ``quality`` or ``speed``).
Options: ``--quality`` / ``--speed`` run one part only; ``--sizes 1000,10000,100000``;
``--rebuild-max`` (10000) the largest size whose cold rebuild is timed;
``--tune`` also runs the weight grid on the tuning conversations (conv-26, conv-30, conv-41).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quality", action="store_true", help="run the LoCoMo quality part only")
    ap.add_argument("--speed", action="store_true", help="run the speed part only")
    ap.add_argument("--tune", action="store_true", help="also run the weight grid on the tune split")
    ap.add_argument("--sizes", default="1000,10000,100000", help="memory counts for the speed part")
    ap.add_argument("--queries", type=int, default=200, help="queries per kind for the speed part")
    ap.add_argument("--rebuild-max", type=int, default=10000,
                    help="largest size whose cold rebuild from (moto) DynamoDB the speed part times")
    args = ap.parse_args(argv)
    both = not args.quality and not args.speed

    from .harness import CallCounter, fake_aws_env
    fake_aws_env()
    counter = CallCounter()
    counter.install()

    report: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "command": "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])}
    md: list[str] = [f"# Cairn benchmark ({report['started']})", "", f"Command: `{report['command']}`", ""]
    if args.quality or both:
        from . import quality
        q, qmd = quality.run(tune=args.tune)
        report["quality"] = q
        md += qmd
    if args.speed or both:
        from . import speed
        s, smd = speed.run([int(x) for x in args.sizes.split(",") if x], counter, queries=args.queries,
                            rebuild_max=args.rebuild_max)
        report["speed"] = s
        md += smd
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    text = "\n".join(md) + "\n"
    blob = json.dumps(report, indent=2, sort_keys=True)
    parts = "all" if both else ("quality" if args.quality else "speed")
    names = [f"bench-{stamp}-{parts}"]
    if not (report.get("quality") or {}).get("skipped"):
        names.append(f"latest-{parts}")  # a run without the LoCoMo data keeps the last real figures
    for name in names:
        (RESULTS / f"{name}.md").write_text(text)
        (RESULTS / f"{name}.json").write_text(blob)
    print(text)
    print(f"results: {RESULTS}/bench-{stamp}-{parts}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
