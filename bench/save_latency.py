"""Save latency at ``MEMORIES`` memories, warm and cold container, on the local stack: what the
write-time related-memories look-up (``chalicelib.banks.conflicts``) costs a save.

A launcher per checkout (``bench.local.Launcher``, no persistence, schedule worker off, no rate
limit): this one and, with ``stack_root``, another (the commit before, "as found in ...") beside
it. Each gets bank ``k10`` filled with the speed part's corpus (``bench.speed.corpus``) through
the import route, then one recall (its cold rebuild leaves the index snapshot a new container
loads). Then, on one keep-alive connection per stack, the stacks taking turns save by save (which
goes first alternates):

- ``warm``: ``SAVES`` saves of new texts (after ``WARM`` unmeasured), the bank's index loaded;
- ``cold``: ``COLD_SAVES`` saves, each after ``POST /v1/reload`` (not timed), which drops the
  container's indexes and their directories: the save finds its bank's index as a new container
  would (the snapshot in S3, then the revisions past it). Before each, the stack's queues are
  left to empty (not timed): a cold save defers its related-memories check to the queue's worker,
  a Lambda of its own on AWS but a thread of moto's process here, whose snapshot load would
  otherwise land inside the next timed save.

p50/p95 of the client's wall time per save, in ms; the target is this checkout's p50 at most
``TARGET_RATIO`` times the other's, in the same run.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import requests  # type: ignore[import-untyped]  # no types-requests in the environment

from chalicelib.semantic import artifact_dir
from infra.local.launch import ROOT

from .harness import median, pct
from .local import Launcher, _load, _ok, _session
from .speed import corpus

MEMORIES = 10000
SAVES = 100
COLD_SAVES = 20
WARM = 5
TARGET_RATIO = 1.5
BANK = "k10"


def _save(s: requests.Session, base: str, text: str, entity: str) -> float:
    started = time.perf_counter()
    _ok(s.post(f"{base}/v1/banks/{BANK}/memories", json={"text": text, "entities": [entity]}), 201)
    return (time.perf_counter() - started) * 1000


def _fill(st: Launcher, n: int) -> float:
    texts, ents, _vocab = corpus(n)
    s = _session()
    _ok(s.post(f"{st.base}/v1/banks", json={"name": BANK}), 201)
    took = _load(st.base, BANK, texts, ents)
    _ok(s.post(f"{st.base}/v1/banks/{BANK}/recall", json={"query": texts[0]}))
    return took


def _drain(moto_url: str, timeout_s: float = 60.0) -> None:
    """Wait until every queue of the stack's moto holds no message, visible or in flight."""
    import boto3

    sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=moto_url,
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    deadline = time.monotonic() + timeout_s
    for url in sqs.list_queues().get("QueueUrls", []):
        while time.monotonic() < deadline:
            got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
            if not any(int(got.get(n, 0)) for n in names):
                break
            time.sleep(0.05)


def _series(stacks: list[tuple[requests.Session, str, str]], texts: list[tuple[str, str]], *,
            cold: bool) -> list[dict[str, Any]]:
    ms: list[list[float]] = [[] for _ in stacks]
    for i, (text, ent) in enumerate(texts):
        order = range(len(stacks)) if i % 2 == 0 else reversed(range(len(stacks)))
        for k in order:
            s, base, moto_url = stacks[k]
            if cold:
                _drain(moto_url)
                _ok(s.post(f"{base}/v1/reload"))
            took = _save(s, base, f"{text} ({k})", ent)
            if cold or i >= WARM:
                ms[k].append(took)
    return [{"saves": len(m), "p50_ms": round(median(m), 2), "p95_ms": round(pct(m, 0.95), 2)} for m in ms]


def measure(stacks: dict[str, Launcher], n: int = MEMORIES) -> dict[str, Any]:
    """``{stack: {warm, cold, import_s}}`` (module docstring)."""
    out: dict[str, Any] = {name: {"import_s": _fill(st, n)} for name, st in stacks.items()}
    extra, ents, _vocab = corpus(n + SAVES + WARM + COLD_SAVES, seed=11)
    fresh = [(t, e) for t, e in zip(extra, ents, strict=True)][-(SAVES + WARM + COLD_SAVES):]
    pairs = [(_session(), st.base, st.stack.moto_url) for st in stacks.values()]
    for key, texts, cold in (("warm", fresh[:SAVES + WARM], False), ("cold", fresh[SAVES + WARM:], True)):
        for name, r in zip(stacks, _series(pairs, texts, cold=cold), strict=True):
            out[name][key] = r
    return out


def run(stack_root: Path | None = None, n: int = MEMORIES) -> tuple[dict[str, Any], list[str]]:
    """``(json, markdown)``: this checkout and, with ``stack_root``, that one beside it."""
    roots = {"this checkout": ROOT}
    if stack_root is not None:
        roots = {f"as found in {stack_root}": stack_root, **roots}
    started = time.perf_counter()
    try:
        with contextlib.ExitStack() as es:
            # one model folder for both: a checkout without its own built model would save without
            # embedding, and look faster than it is
            env = {"CAIRN_RATE_REQUESTS_PER_MINUTE": "0", "CAIRN_MODEL_DIR": str(artifact_dir())}
            stacks = {name: es.enter_context(Launcher(root, ["--no-persist"], env=env))
                      for name, root in roots.items()}
            out: dict[str, Any] = {"stacks": measure(stacks, n)}
    except Exception as exc:  # noqa: BLE001 - report what failed
        out = {"error": f"{type(exc).__name__}: {exc}"}
    out["memories"] = n
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out, markdown(out)


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Save latency", "", f"{out['memories']} memories in the bank; wall ms per save on the local stack "
          f"(p50 / p95); cold: each save after a reload dropped the container's indexes. Target: p50 at most "
          f"{TARGET_RATIO}x the commit before, in the same run.", ""]
    if "error" in out:
        return [*md, f"Failed: {out['error']}", ""]
    md += ["| stack | warm p50 / p95 | cold p50 / p95 |", "|---|---|---|"]
    for name, r in out["stacks"].items():
        md.append(f"| {name} | {r['warm']['p50_ms']} / {r['warm']['p95_ms']} | "
                  f"{r['cold']['p50_ms']} / {r['cold']['p95_ms']} |")
    names = list(out["stacks"])
    if len(names) == 2:
        before, after = (out["stacks"][x] for x in names)
        md.append("")
        md.append("p50 ratio (this / before): warm "
                  f"{after['warm']['p50_ms'] / before['warm']['p50_ms']:.2f}x, cold "
                  f"{after['cold']['p50_ms'] / before['cold']['p50_ms']:.2f}x.")
    return [*md, ""]
