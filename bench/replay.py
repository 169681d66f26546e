"""Cold first recall after many unsnapshotted writes (``python -m bench --replay``; in the
default run): how much a new container replays, and what it costs, when a bank was written
``WRITES`` times since its last scheduled snapshot.

Per setting, in a fresh in-process moto backend: a bank of ``BASE`` memories is imported and
snapshotted (the scheduled job's snapshot, ``recall.snapshot_banks``), then a writer container
that never recalled the bank imports ``WRITES`` more (``IMPORT_BATCH`` lines a request, through
``banks.transfer.import_lines``, so each batch commits per lane and the writer's own cache hears
of it). Then a new container (an ``IndexCache`` of its own) serves its first recall. Settings:

- ``off``: ``CAIRN_SNAPSHOT_EVERY`` beyond the writes, so nobody leaves a snapshot (the behaviour
  before snapshots were left by readers and writers): the cold container replays every write;
- ``default``: ``Settings.snapshot_every``'s default, no rate bound in the way
  (``CAIRN_SNAPSHOT_MIN_INTERVAL_S=0``; writes arrive faster here than in any real bank).

The cold recall's moto share is timed apart: the bank read (``store.get_bank_rows``), the S3 list
and download (``blobs``) and the lanes' revision queries (``index._read_lanes``, wall time of the
parallel reads, so the records' decoding is counted as moto's there). "Cairn" is the rest.
The writers' figure is the whole import's time: the snapshots they left are in it.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from typing import Any
from unittest import mock

from .harness import Timer, backend, fast_moto_transactions

ORG = "bench"
BANK = "replay"
BASE = 1000
WRITES = 10000
IMPORT_BATCH = 500
TARGET_MS = 1000.0  # Cairn's share of the cold first recall


def _import(texts: list[str], t0: int) -> float:
    from chalicelib.banks.transfer import import_lines
    started = time.perf_counter()
    for i, j in itertools.pairwise([*range(0, len(texts), IMPORT_BATCH), len(texts)]):
        lines = [json.dumps({"text": t, "created_at": t0 + k, "updated_at": t0 + k}).encode()
                 for k, t in enumerate(texts[i:j], start=i)]
        res = import_lines(ORG, BANK, lines, actor="bench")
        if res.errors:
            raise RuntimeError(f"import errors: {res.errors[:3]}")
    return time.perf_counter() - started




def one(every: int, root: str) -> dict[str, Any]:
    """One setting (``CAIRN_SNAPSHOT_EVERY=every``) in a fresh backend."""
    from chalicelib.core import store
    from chalicelib.search import index
    from chalicelib.search.recall import recall, snapshot_banks
    from chalicelib.storage import blobs

    from .speed import corpus
    texts, _ents, _vocab = corpus(BASE + WRITES)
    t0 = int(time.time() * 1000) - len(texts)
    os.environ["CAIRN_SNAPSHOT_EVERY"] = str(every)
    os.environ["CAIRN_SNAPSHOT_MIN_INTERVAL_S"] = "0"
    try:
        with index.using(index.IndexCache(os.path.join(root, "seed"))) as seed:
            _import(texts[:BASE], t0)
            scheduled = snapshot_banks(1, org_id=ORG, banks=[BANK])
            seed.drop()
        writer = index.IndexCache(os.path.join(root, "writer"))
        with index.using(writer):
            write_s = _import([f"{t} later" for t in texts[BASE:]], t0 + BASE)
        print(f"replay: snapshot_every {every}: {WRITES} writes in {write_s:.0f} s", flush=True)
        left = sorted(int(o["Key"].rsplit("/", 1)[1].split(".")[0]) for o in blobs.list_objects(
            index.snapshot_prefix(ORG, BANK)))
        moto = Timer()
        cold = index.IndexCache(os.path.join(root, "cold"))
        with index.using(cold), mock.patch.object(blobs, "get_bytes", moto.wrap(blobs.get_bytes)), \
                mock.patch.object(blobs, "list_objects", moto.wrap(blobs.list_objects)), \
                mock.patch.object(store, "get_bank_rows", moto.wrap(store.get_bank_rows)), \
                mock.patch.object(index, "_read_lanes", moto.wrap(index._read_lanes)):
            started = time.perf_counter()
            recall(ORG, [BANK], texts[5].split()[0], limit=10)
            ms = (time.perf_counter() - started) * 1000
        out = {"snapshot_every": every, "scheduled_snapshot": scheduled, "writes_s": round(write_s, 1),
               "writer_snapshots_left": writer.counters["snapshots_left"], "snapshots_in_s3": left,
               "cold_ms": round(ms, 1), "moto_ms": round(moto.ms, 1), "cairn_ms": round(ms - moto.ms, 1),
               "replayed": cold.counters["replayed"], "path": dict(cold.counters)}
        writer.drop()
        cold.drop()
        return out
    finally:
        os.environ.pop("CAIRN_SNAPSHOT_EVERY", None)
        os.environ.pop("CAIRN_SNAPSHOT_MIN_INTERVAL_S", None)


def run() -> tuple[dict[str, Any], list[str]]:
    """Both settings: ``(json, markdown lines)``."""
    import tempfile

    from chalicelib.settings import Settings
    fast_moto_transactions()
    default = Settings.model_fields["snapshot_every"].default
    out: dict[str, Any] = {"base": BASE, "writes": WRITES, "settings": {}}
    for name, every in (("off", 10 * (BASE + WRITES)), ("default", default)):
        with backend(), tempfile.TemporaryDirectory(prefix="cairn-bench-replay-") as root:
            try:
                out["settings"][name] = one(every, root)
            except Exception as exc:  # noqa: BLE001 - report what failed and go on
                out["settings"][name] = {"snapshot_every": every, "error": f"{type(exc).__name__}: {exc}"}
        print(f"replay: {name} done", flush=True)
    return out, markdown(out)


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Cold first recall after unsnapshotted writes", "",
          f"A bank of {out['base']:,} memories snapshotted (the scheduled job), then {out['writes']:,} writes "
          f"by a container that never recalled it (imports of {IMPORT_BATCH}); then a new container's first "
          f"recall. Target: Cairn's share under {TARGET_MS:g} ms.", "",
          "| snapshot_every | writes (s) | snapshots the writer left | newest in S3 | replayed | cold first recall "
          "(ms) | moto's share | Cairn's share | met |", "|---|---|---|---|---|---|---|---|---|"]
    for _name, r in out["settings"].items():
        if "error" in r:
            md.append(f"| {r['snapshot_every']} | error: {r['error']} | | | | | | | |")
            continue
        newest = max(r["snapshots_in_s3"], default=None)
        md.append(f"| {r['snapshot_every']:,} | {r['writes_s']} | {r['writer_snapshots_left']} | {newest} | "
                  f"{r['replayed']:,} | {r['cold_ms']} | {r['moto_ms']} | {r['cairn_ms']} | "
                  f"{'yes' if r['cairn_ms'] < TARGET_MS else 'no'} |")
    return md
