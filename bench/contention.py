"""Writes under contention: 1, 8 and 32 concurrent writers saving distinct new memories into ONE
bank that already holds 10k memories, in-process and on the local stack.

Each writer is a thread that saves new texts (``POST /v1/banks/{bank}/memories``) back to back for
``seconds`` (run as two halves, the counts in one order then the other, pooled; closed loop: a
writer sends its next save when the last one answered; saves in flight at the deadline finish and
count). Per writer count: successful saves per second (over the time until the last writer
stopped), latency p50/p95/p99 of the successful saves, the failed saves by HTTP status, and the
DynamoDB calls per successful save: ``TransactWriteItems`` (every attempt, cancelled ones included)
and the reads ``GetItem``, ``BatchGetItem`` and ``Query``.

- in-process: the Chalice app over in-process moto (``harness.backend``, ``motolock`` serialising
  moto's transactions as in the API tests), driven through Chalice's own ``LocalGateway`` (the
  router behind both ``chalice.test.Client`` and ``chalice local``), one per writer thread. The
  app's ``current_request`` is made thread-local the way ``chalice local`` does it (the app's
  class becomes a ``LocalChalice`` subclass): ``chalice.test.Client`` is not thread-safe, since
  it keeps ``current_request`` in one attribute of the app and swaps ``os.environ`` per request.
  DynamoDB calls are counted client-side with botocore ``before-call`` hooks
  (``harness.CallCounter``).
- local stack: ``python -m infra.local.stack --no-persist`` (``bench.local.Launcher``, schedule
  worker off) over HTTP, one ``requests.Session`` per writer. DynamoDB calls are counted
  server-side with moto's request recorder (``/moto-api/recorder/*``, the operation read from
  each recorded request's ``X-Amz-Target``), started and stopped around each writer count, so
  whatever the API process and the launcher's workers called is counted. ``--no-persist``: the
  contention is in the app's write path, and the journal's fsync per write would only add the
  disk's noise.

Seeding: the speed part's synthetic corpus (``bench.speed.corpus``) through the bank import route
in batches of ``IMPORT_BATCH`` lines; then ``WARMUP_SAVES`` single saves (index loaded,
connections open) before the first writer count. Writer counts run in the order given, on the
same bank (it grows by the saves of the earlier counts).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import logging
import os
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests  # type: ignore[import-untyped]  # no types-requests in the environment

from .harness import median, pct
from .speed import corpus

WRITERS = [1, 8, 32]
SECONDS = 20.0
SEED = 10_000
IMPORT_BATCH = 2000
WARMUP_SAVES = 5
BANK = "contention"
ORG = "default"
READS = ("GetItem", "BatchGetItem", "Query")
RECORDED_OP = re.compile(r'"x-amz-target":\s*"DynamoDB_\d+\.(\w+)"', re.IGNORECASE)


class Transport(Protocol):
    """One writer's connection to the API."""

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str = "application/json") -> tuple[int, str]:
        """``(status, body text)``."""
        ...


@dataclass
class Level:
    """What the writers of one count did: latencies (ms) of the successful saves, failures
    by status (``"error:<exception>"`` when no status came back), wall seconds."""

    writers: int
    latencies_ms: list[float] = field(default_factory=list)
    failed: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


def summary(level: Level, calls: Counter[str]) -> dict[str, Any]:
    """One writer count's row: ``{writers, saves, seconds, saves_per_s, p50_ms, p95_ms, p99_ms,
    failed: {status: n}, transact_per_save, reads_per_save: {GetItem, BatchGetItem, Query, total},
    dynamodb_calls: {operation: n}}``. ``calls``: DynamoDB calls by operation name over the
    level. Per-save figures and latencies are ``None`` when no save succeeded."""
    saves = len(level.latencies_ms)

    def per_save(n: int) -> float | None:
        return round(n / saves, 2) if saves else None

    def ms(value: float) -> float | None:
        return round(value, 1) if saves else None

    reads: dict[str, float | None] = {op: per_save(calls.get(op, 0)) for op in READS}
    reads["total"] = per_save(sum(calls.get(op, 0) for op in READS))
    lat = level.latencies_ms
    return {"writers": level.writers, "saves": saves, "seconds": round(level.seconds, 2),
            "saves_per_s": round(saves / level.seconds, 1) if level.seconds > 0 else None,
            "p50_ms": ms(median(lat)), "p95_ms": ms(pct(lat, 0.95)), "p99_ms": ms(pct(lat, 0.99)),
            "failed": dict(sorted(level.failed.items())),
            "transact_per_save": per_save(calls.get("TransactWriteItems", 0)),
            "reads_per_save": reads, "dynamodb_calls": dict(sorted(calls.items()))}


def recorded_operations(recording: str) -> Counter[str]:
    """DynamoDB operations in a moto recording (one JSON request a line, headers included),
    by name. Matched in the raw text: concurrent requests may interleave the recorder's lines."""
    return Counter(RECORDED_OP.findall(recording))


# --- transports ------------------------------------------------------------------------------

class Http:
    """The local stack over HTTP on one keep-alive ``requests.Session``."""

    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str = "application/json") -> tuple[int, str]:
        r = self.session.request(method, self.base + path, data=body, headers={"Content-Type": content_type},
                                 timeout=600)
        return r.status_code, r.text


class Gateway:
    """The in-process app through Chalice's ``LocalGateway`` (what ``chalice local`` serves)."""

    def __init__(self, app: Any, token: str) -> None:
        from chalice.config import Config
        from chalice.local import LocalGateway
        self.gateway = LocalGateway(app, Config.create(chalice_stage="bench", app_name="cairn"))
        self.token = token

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str = "application/json") -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": content_type}
        res = self.gateway.handle_request(method=method, path=path, headers=headers, body=body or b"")
        text = res.get("body") or ""
        return int(res["statusCode"]), text.decode() if isinstance(text, bytes) else text


def _ok(res: tuple[int, str], *statuses: int) -> dict[str, Any]:
    status, text = res
    if status not in statuses:
        raise RuntimeError(f"expected {statuses}, got {status}: {text[:300]}")
    return json.loads(text) if text else {}


@contextlib.contextmanager
def _thread_local_requests(app: Any) -> Iterator[None]:
    """The app's ``current_request`` per thread while inside, as ``chalice local`` makes it
    (``chalice.local.LocalChalice``); the app's class is put back on exit."""
    from chalice.local import LocalChalice
    original = app.__class__
    app.__class__ = type("ThreadLocalChalice", (LocalChalice, original), {})
    try:
        yield
    finally:
        app.__class__ = original


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No request log lines (logger ``cairn`` at WARNING) and no metric lines (the app's stdout)
    while inside: thousands of them would bury the report."""
    logger = logging.getLogger("cairn")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            yield
    finally:
        logger.setLevel(level)


# --- seeding and the writers -------------------------------------------------------------------

def seed(t: Transport, texts: list[str], ents: list[str]) -> float:
    """Create ``BANK`` and import ``texts`` through the import route in batches; returns seconds."""
    started = time.perf_counter()
    _ok(t.request("POST", "/v1/banks", json.dumps({"name": BANK}).encode()), 200, 201)
    t0 = 1_700_000_000_000
    for i in range(0, len(texts), IMPORT_BATCH):
        batch = zip(texts[i:i + IMPORT_BATCH], ents[i:i + IMPORT_BATCH], strict=True)
        body = "".join(json.dumps({"text": x, "entities": [e], "created_at": t0 + k, "updated_at": t0 + k}) + "\n"
                       for k, (x, e) in enumerate(batch, start=i))
        res = _ok(t.request("POST", f"/v1/banks/{BANK}/import", body.encode(), "application/x-ndjson"), 200)
        if res.get("errors"):
            raise RuntimeError(f"import errors: {res['errors'][:3]}")
    return round(time.perf_counter() - started, 1)


class Texts:
    """Distinct new texts for every save of the run, thread-safe: the extra corpus texts, each
    with a serial number (so they stay distinct however many saves are made)."""

    def __init__(self, pool: list[str]) -> None:
        self.pool = pool
        self.serial = itertools.count()
        self.lock = threading.Lock()

    def next(self) -> str:
        with self.lock:
            n = next(self.serial)
        return f"{self.pool[n % len(self.pool)]} save{n}"


def _save(t: Transport, text: str) -> tuple[int, str]:
    return t.request("POST", f"/v1/banks/{BANK}/memories", json.dumps({"text": text}).encode())


def run_level(connect: Callable[[], Transport], writers: int, seconds: float, texts: Texts) -> Level:
    """``writers`` threads, each on its own ``connect()``, saving new texts for ``seconds``."""
    level = Level(writers)
    lock = threading.Lock()
    barrier = threading.Barrier(writers + 1)
    deadline = [0.0]

    def writer() -> None:
        t = connect()
        barrier.wait()
        while time.perf_counter() < deadline[0]:
            started = time.perf_counter()
            try:
                status = str(_save(t, texts.next())[0])
            except Exception as exc:  # noqa: BLE001 - counted as a failed save, by exception type
                status = f"error:{type(exc).__name__}"
            ms = (time.perf_counter() - started) * 1000
            with lock:
                if status == "201":
                    level.latencies_ms.append(ms)
                else:
                    level.failed[status] += 1

    threads = [threading.Thread(target=writer, name=f"bench-writer-{w}") for w in range(writers)]
    for th in threads:
        th.start()
    started = time.perf_counter()
    deadline[0] = started + seconds
    barrier.wait()
    for th in threads:
        th.join()
    level.seconds = time.perf_counter() - started
    return level


def write_settings(env: Mapping[str, str]) -> dict[str, str]:
    """The documented settings of the write path found in ``env`` (``CAIRN_WRITE_RETRIES``, any
    ``CAIRN_*LANE*``), passed on to the local stack as well and named in the report header."""
    return {k: v for k, v in env.items() if k == "CAIRN_WRITE_RETRIES" or (k.startswith("CAIRN_") and "LANE" in k)}


def _bank_settings(t: Transport) -> dict[str, Any]:
    """What ``GET /v1/banks/{bank}`` says of the bank's write path (any ``lane`` field), for the
    report header; ``{}`` when it exposes none."""
    bank = _ok(t.request("GET", f"/v1/banks/{BANK}"), 200).get("bank") or {}
    return {k: v for k, v in bank.items() if "lane" in k.lower()}


def _measure(connect: Callable[[], Transport], counted: Callable[[Callable[[], Level]], tuple[Level, Counter[str]]],
             writers: list[int], seconds: float, seeded: int) -> dict[str, Any]:
    """Seed, warm up, then every writer count; ``counted(fn)`` runs ``fn`` and returns its
    result with the DynamoDB calls made meanwhile, by operation."""
    texts, ents, _ = corpus(seeded + 5000)
    t = connect()
    out: dict[str, Any] = {"seed_s": seed(t, texts[:seeded], ents[:seeded])}
    pool = Texts(texts[seeded:])
    for _ in range(WARMUP_SAVES):
        _ok(_save(t, pool.next()), 201)
    out["bank"] = _bank_settings(t)
    pooled: dict[int, tuple[Level, Counter[str]]] = {n: (Level(n), Counter()) for n in writers}
    # each count twice for half the time, in one order then the other, pooled: a load drifting
    # on a shared machine favours no count
    for n in [*writers, *reversed(writers)]:
        level, calls = counted(functools.partial(run_level, connect, n, seconds / 2, pool))
        into, seen = pooled[n]
        into.latencies_ms.extend(level.latencies_ms)
        into.failed.update(level.failed)
        into.seconds += level.seconds
        seen.update(calls)
        print(f"contention: {n} writers done", file=sys.stderr, flush=True)
    out["levels"] = [summary(*pooled[n]) for n in writers]
    return out


# --- the two settings ----------------------------------------------------------------------------

def in_process(counter: Any, writers: list[int], seconds: float, seeded: int) -> dict[str, Any]:
    """The in-process setting; ``counter``: the installed ``harness.CallCounter``."""
    from .harness import backend

    with backend():
        from app import app
        from chalicelib.auth.principal import PERMISSIONS
        from chalicelib.auth.tokens import MintRequest, mint
        token = mint(ORG, MintRequest(kind="person", user_id="bench", permissions=list(PERMISSIONS)),
                     created_by="bench").token

        def counted(fn: Callable[[], Level]) -> tuple[Level, Counter[str]]:
            with counter.counting() as calls:
                level = fn()
            ddb = Counter({k.split(":")[1]: v for k, v in calls.items() if k.startswith("dynamodb:")
                           and k.count(":") == 1})
            return level, ddb

        with _thread_local_requests(app), _quiet():
            return _measure(lambda: Gateway(app, token), counted, writers, seconds, seeded)


def local_stack(writers: list[int], seconds: float, seeded: int) -> dict[str, Any]:
    """The local-stack setting (``--no-persist``)."""
    from .local import ROOT, TOKEN, Launcher

    launcher = Launcher(ROOT, ["--no-persist"])
    launcher.stack.extra_env.update(write_settings(os.environ))  # the launcher drops the caller's CAIRN_*
    launcher.stack.extra_env["MOTO_RECORDER_FILEPATH"] = str(launcher.state / "moto-recording.jsonl")
    with launcher as st:
        moto = st.stack.moto_url

        def counted(fn: Callable[[], Level]) -> tuple[Level, Counter[str]]:
            requests.post(f"{moto}/moto-api/recorder/reset-recording", timeout=30).raise_for_status()
            requests.post(f"{moto}/moto-api/recorder/start-recording", timeout=30).raise_for_status()
            try:
                level = fn()
            finally:
                requests.post(f"{moto}/moto-api/recorder/stop-recording", timeout=30).raise_for_status()
            rec = requests.get(f"{moto}/moto-api/recorder/download-recording", timeout=300)
            rec.raise_for_status()
            return level, recorded_operations(rec.text)

        out = _measure(lambda: Http(st.base, TOKEN), counted, writers, seconds, seeded)
        out["args"] = st.args
        return out


def run(counter: Any, writers: list[int] | None = None, seconds: float = SECONDS,
        seeded: int = SEED) -> tuple[dict, list[str]]:
    """Both settings, one after the other, each on a bank seeded with ``seeded`` memories:
    ``(json, markdown)``. A setting that fails is reported as ``{"error": ...}``."""
    writers = writers or WRITERS
    out: dict[str, Any] = {"writers": writers, "seconds_per_level": seconds, "seed_memories": seeded,
                           "environment": write_settings(os.environ), "settings": {}}
    steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("in-process", lambda: in_process(counter, writers, seconds, seeded)),
        ("local stack (--no-persist)", lambda: local_stack(writers, seconds, seeded))]
    for name, fn in steps:
        started = time.perf_counter()
        try:
            out["settings"][name] = fn()
        except Exception as exc:  # noqa: BLE001 - report what failed, run the other setting
            out["settings"][name] = {"error": f"{type(exc).__name__}: {exc}"}
        out["settings"][name]["wall_s"] = round(time.perf_counter() - started, 1)
        print(f"contention: {name} done", flush=True)
    return out, markdown(out)


def _row(name: str, r: dict[str, Any]) -> str:
    reads = r["reads_per_save"]
    failed = ", ".join(f"{k}: {v}" for k, v in r["failed"].items()) or "0"
    return (f"| {name} | {r['writers']} | {r['saves']} | {r['saves_per_s']} | {r['p50_ms']} / {r['p95_ms']} / "
            f"{r['p99_ms']} | {r['transact_per_save']} | {reads['GetItem']} / {reads['BatchGetItem']} / "
            f"{reads['Query']} / {reads['total']} | {failed} |")


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Writes under contention", "",
          f"Concurrent writers saving distinct new memories into one bank seeded with {out['seed_memories']:,} "
          f"memories, each writer count for {out['seconds_per_level']:g} s (two halves, the counts in one order "
          "then the other, pooled; closed loop). Latencies of the "
          "successful saves in ms; DynamoDB calls per successful save (TransactWriteItems: every attempt).", "",
          f"- write-path settings in the environment: {out['environment'] or 'none (the app defaults)'}"]
    for name, s in out["settings"].items():
        if "error" not in s:
            lanes = s["bank"] or "none exposed by GET /v1/banks/{bank}"
            md.append(f"- {name}: seeded in {s['seed_s']} s; the bank's write-path fields: {lanes}")
    md += ["", "| setting | writers | saves | saves/s | p50 / p95 / p99 | TransactWriteItems per save | "
           "reads per save: GetItem / BatchGetItem / Query / total | failed saves (status: n) |",
           "|---|---|---|---|---|---|---|---|"]
    for name, s in out["settings"].items():
        if "error" in s:
            md.append(f"| {name} | failed: {s['error']} |||||||")
            continue
        md += [_row(name, r) for r in s["levels"]]
    md += ["", "Target: 8 writers at least as many saves/s as 1; at most 1.5 TransactWriteItems per save.", ""]
    md += _targets(out)
    return md


def _targets(out: dict[str, Any]) -> list[str]:
    lines = ["| setting | saves/s 8 writers / 1 writer | TransactWriteItems per save at 8 writers | met |",
             "|---|---|---|---|"]
    for name, s in out["settings"].items():
        by = {r["writers"]: r for r in s.get("levels", [])}
        if 1 not in by or 8 not in by or not by[1]["saves_per_s"]:
            continue
        ratio = (by[8]["saves_per_s"] or 0) / by[1]["saves_per_s"]
        tx = by[8]["transact_per_save"]
        met = ratio >= 1 and tx is not None and tx <= 1.5
        lines.append(f"| {name} | {ratio:.2f}x | {tx} | {'yes' if met else 'no'} |")
    return lines
