"""Cold first structured context on the local stack: the first per-turn injection a new API
process serves for a session whose namespace holds ``MEMORIES`` structured memories.

One launcher (``infra.local.launch.StackProcess``, schedule worker off) on an empty state dir:
the ``global`` namespace is filled through the admin import route (Turnstone rows, ``IMPORT_BATCH``
lines a request), an interactive session is created, and the stack is stopped. Then, each time on
a restarted stack (a new API process: no index directory, the state replayed from the journal):

1. ``cold_no_snapshot``: no index snapshot exists (those of earlier runs are deleted first), so
   the first ``POST /v1/api/sessions/{id}/context`` rebuilds the namespace's index from its
   records;
2. ``cold_with_snapshot``: a snapshot exists (the one the cold rebuild left behind, else one
   written by ``python -m chalicelib.cli rebuild-indexes``), so the first context loads it.

Each figure is the first context's latency and the next one's (warm), in ms, plus the S3
snapshots present before the first. ``stack_root`` measures another checkout's launcher (for
"before" figures).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests  # type: ignore[import-untyped]  # no types-requests in the environment

from infra.local.launch import ROOT, StackProcess

from .speed import corpus, queries

TOKEN = "cairn_bench_cold_token_0123456789abcdef"
MEMORIES = 10000
IMPORT_BATCH = 2000
READY_TIMEOUT_S = 300.0
TARGET_MS = 2000.0


def _session() -> requests.Session:
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    return s


def _ok(r: requests.Response, status: int = 200) -> requests.Response:
    if r.status_code != status:
        raise RuntimeError(f"{r.request.method} {r.request.path_url}: {r.status_code} {r.text[:300]}")
    return r


def fill(base: str, n: int, token: str = TOKEN) -> float:
    """Import ``n`` structured memories (the speed part's corpus) into the ``global`` namespace
    of the stack at ``base`` as ``token``; returns seconds."""
    texts, _ents, _vocab = corpus(n)
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {token}"
    started = time.perf_counter()
    for i in range(0, n, IMPORT_BATCH):
        body = "".join(json.dumps({"name": f"bench_memory_{k:05d}", "description": f"benchmark memory {k}",
                                   "content": t, "type": "general", "scope": "global", "scope_id": ""}) + "\n"
                       for k, t in enumerate(texts[i:i + IMPORT_BATCH], start=i))
        res = _ok(s.post(f"{base}/v1/api/admin/memories/import", data=body.encode(),
                         headers={"Content-Type": "application/x-ndjson"}, timeout=1200)).json()
        if res.get("errors"):
            raise RuntimeError(f"import errors: {res['errors'][:3]}")
    return round(time.perf_counter() - started, 1)


def _context_ms(base: str, sid: str, query: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    r = _ok(_session().post(f"{base}/v1/api/sessions/{sid}/context", timeout=600,
                            json={"messages": [{"role": "user", "content": query}]}))
    return round((time.perf_counter() - started) * 1000, 1), r.json()


def _cli(stack: StackProcess, *args: str) -> str:
    """``python -m chalicelib.cli`` of the stack's checkout against its moto."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "AWS_"))}
    env["CAIRN_MOTO_PORT"] = str(stack.moto_port)
    done = subprocess.run([sys.executable, "-m", "chalicelib.cli", *args], cwd=stack.root, env=env,
                          capture_output=True, text=True, timeout=1200, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cli {args}: {done.returncode} {done.stderr[-500:]}")
    return done.stdout


def _snapshots(stack: StackProcess) -> list[str]:
    """The index snapshot keys in the stack's bucket (boto3 against its moto)."""
    import boto3
    s3 = boto3.client("s3", endpoint_url=stack.moto_url, region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    keys = []
    for b in s3.list_buckets()["Buckets"]:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b["Name"]):
            keys += [f"{b['Name']}/{o['Key']}" for o in page.get("Contents", []) if "/indexes/" in o["Key"]]
    return keys


def _drop_snapshots(stack: StackProcess) -> int:
    import boto3
    s3 = boto3.client("s3", endpoint_url=stack.moto_url, region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    keys = _snapshots(stack)
    for k in keys:
        bucket, _, key = k.partition("/")
        s3.delete_object(Bucket=bucket, Key=key)
    return len(keys)


def _cold(stack: StackProcess, args: list[str], sid: str, query: str) -> dict[str, Any]:
    """Restart the stack and time its first and second context for ``sid``."""
    stack.start(*args, timeout_s=READY_TIMEOUT_S)
    snaps = _snapshots(stack)
    first, body = _context_ms(stack.base_url, sid, query)
    second, _ = _context_ms(stack.base_url, sid, query)
    return {"first_ms": first, "second_ms": second, "snapshots_before": len(snaps),
            "candidates": body.get("candidates"), "in_scope": body.get("in_scope")}


def measure(root: Path, n: int = MEMORIES) -> dict[str, Any]:
    """Every figure on one stack of ``root``'s launcher (module docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix="cairn-bench-cold-"))
    stack = StackProcess(tmp / "state", TOKEN, tmp / "stack.log", root=root,
                         env={"CAIRN_LOCAL_SCHEDULE_S": "86400"})
    _texts, _e, vocab = corpus(n)
    query = queries(vocab, 5)["selective"][0]
    out: dict[str, Any] = {"memories": n}
    try:
        stack.start(timeout_s=READY_TIMEOUT_S)
        out["import_s"] = fill(stack.base_url, n)
        sid = _ok(_session().post(f"{stack.base_url}/v1/api/sessions", json={"kind": "interactive"}), 201
                  ).json()["session_id"]
        stack.stop(timeout_s=300)
        print("cold: filled", flush=True)
        stack.start(timeout_s=READY_TIMEOUT_S)
        _drop_snapshots(stack)
        stack.stop(timeout_s=300)
        out["cold_no_snapshot"] = _cold(stack, [], sid, query)
        if not _snapshots(stack):  # the cold rebuild left none: write one as the schedule would
            _cli(stack, "rebuild-indexes")
            out["snapshot_by"] = "cli rebuild-indexes"
        else:
            out["snapshot_by"] = "the cold rebuild"
        stack.stop(timeout_s=300)
        print("cold: no snapshot done", flush=True)
        out["cold_with_snapshot"] = _cold(stack, [], sid, query)
        stack.stop(timeout_s=300)
    finally:
        stack.stop(timeout_s=300)
        log = (tmp / "stack.log").read_text(errors="replace")[-2000:] if (tmp / "stack.log").exists() else ""
        shutil.rmtree(tmp, ignore_errors=True)
    out["log_tail"] = log if "Traceback" in log else ""
    return out


def run(stack_root: Path | None = None, n: int = MEMORIES) -> tuple[dict, list[str]]:
    """``(json, markdown)`` for this checkout, or for ``stack_root``'s."""
    root = stack_root or ROOT
    started = time.perf_counter()
    try:
        out: dict[str, Any] = measure(root, n)
    except Exception as exc:  # noqa: BLE001 - report what failed
        out = {"error": f"{type(exc).__name__}: {exc}"}
    out["root"] = str(root)
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out, markdown(out)


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Cold first structured context", "",
          f"First `POST /v1/api/sessions/{{id}}/context` of a new API process on the local stack, one "
          f"namespace of {out.get('memories', MEMORIES):,} structured memories; ms (target: under "
          f"{TARGET_MS:.0f} ms). Second: the next context, warm.", ""]
    if "error" in out:
        return [*md, f"failed: {out['error']}"]
    md += ["| cold start | first context (ms) | second (ms) | snapshots present |", "|---|---|---|---|"]
    for key, label in (("cold_no_snapshot", "no snapshot: rebuild from the records"),
                       ("cold_with_snapshot", f"with a snapshot (written by {out.get('snapshot_by')})")):
        r = out[key]
        md.append(f"| {label} | {r['first_ms']} | {r['second_ms']} | {r['snapshots_before']} |")
    md += ["", f"Import of {out['memories']:,} memories: {out['import_s']} s."]
    return md
