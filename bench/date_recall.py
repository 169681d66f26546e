"""The date-question set (``bench/dates``) through the service's own recall:
``python -m bench.date_recall [--tune]``.

The set is imported into one bank through the import path the REST route runs
(``banks.transfer.import_lines``), each memory at its ``created_at``, under the benchmark's moto
backend; each question is recalled as of the set's ``now`` with the default tuning, and hit@1 (the
first hit is the memory stating the date) is reported per split and kind: ``ranked`` (the ranking
alone) and ``returned`` (under the default match threshold, what ``POST .../recall`` answers).
``--tune`` also reports the ``when`` questions of the ``tune`` split for each ``VAGUE_TIME`` of a
small grid (the value is chosen there, never on ``eval``). Runs on any checkout (one without
stated dates too), so the same command measures the code before and after."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from . import dates
from .harness import backend, fast_moto_transactions

ORG = "bench"
BANK = "dates"
GRID = (0.0, 0.25, 0.5, 0.75, 1.0)


def _score(tuning: Any, ids: dict[str, str], threshold: float | None) -> dict[str, Any]:
    from chalicelib.search.recall import recall

    now = int(dates.data()["now"])
    cells: dict[str, list[int]] = {}
    for q in dates.data()["questions"]:
        hits = recall(ORG, [BANK], q["question"], limit=5, now=now, tuning=tuning, min_match=threshold).hits
        first = ids.get(hits[0].memory.id) if hits else None
        cells.setdefault(f"{q['split']}/{q['kind']}", []).append(int(first in q["gold"]))
    return {k: {"hit@1": round(sum(v) / len(v), 3), "n": len(v)} for k, v in sorted(cells.items())}


def run(*, tune: bool = False) -> dict[str, Any]:
    from chalicelib.banks.transfer import import_lines
    from chalicelib.fingerprint import fingerprint
    from chalicelib.search import signals
    from chalicelib.tuning import get_tuning

    started = time.perf_counter()
    result = import_lines(ORG, BANK, dates.import_lines(), actor="bench")
    if result.errors:
        raise RuntimeError(f"date set: import errors {result.errors[:3]}")
    ids = {fingerprint(m["text"]): m["id"] for m in dates.data()["memories"]}
    tuning = get_tuning()
    out: dict[str, Any] = {"memories": len(ids), "questions": len(dates.data()["questions"]),
                           "stated_dates": hasattr(signals, "VAGUE_TIME"),
                           "ranked": _score(tuning, ids, None), "returned": _score(tuning, ids, tuning.match_threshold)}
    if tune and hasattr(signals, "VAGUE_TIME"):
        chosen = signals.VAGUE_TIME
        grid = {}
        for v in GRID:
            signals.VAGUE_TIME = v
            grid[str(v)] = _score(tuning, ids, None)["tune/when"]
        signals.VAGUE_TIME = chosen
        out["tune_vague_time"] = grid
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tune", action="store_true", help="also the VAGUE_TIME grid on the tune split")
    args = parser.parse_args()
    fast_moto_transactions()
    with backend():
        print(json.dumps(run(tune=args.tune), indent=1))


if __name__ == "__main__":
    main()
