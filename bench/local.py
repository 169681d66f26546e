"""The local stack over HTTP (``make run``'s launcher): the cost of one write, recall on one
keep-alive connection, and recall and throughput at 10k memories, each with persistence on (the
write-ahead journal) and off (``--no-persist``).

One launcher per mode runs on free ports with an empty state dir, both at once; each figure is
taken for both modes back to back (alternating which goes first), so a drifting load on a shared
machine favours neither. In order: (i) one memory save into an empty stack, then again into a
bank that holds 10k memories; (ii) recall p50/p95 at 1k memories on ONE ``requests.Session`` (a
keep-alive connection) and, beside it, on a new connection per request; (iii) recall p50/p95 at
10k memories and the throughput of 8 clients (each its own session, recalls back to back for
``THROUGHPUT_S``, twice in opposite orders, pooled). Memories are the speed part's synthetic
corpus (``bench.speed.corpus``), loaded through the bank import route in batches of
``IMPORT_BATCH`` lines; queries are its selective queries. The schedule worker is off
(``CAIRN_LOCAL_SCHEDULE_S``), so no stack snapshots its indexes meanwhile. ``stack_root``
measures another checkout's launcher instead (for "before" figures), in its one default mode.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import requests  # type: ignore[import-untyped]  # no types-requests in the environment

from infra.local.launch import ROOT, StackProcess

from .harness import median, pct
from .speed import corpus, queries

TOKEN = "cairn_bench_local_token_0123456789abcdef"
IMPORT_BATCH = 2000
WRITES = 40
RECALLS = 150
CLIENTS = 8
THROUGHPUT_S = 10.0
READY_TIMEOUT_S = 180.0
MODES = {"durable": [], "no-persist": ["--no-persist"]}


class Launcher:
    """``python -m infra.local.stack`` in ``root`` on free ports with a temp state dir, as a
    context manager (``infra.local.launch.StackProcess``); ``env`` adds to the launcher's environment."""

    def __init__(self, root: Path, args: list[str], env: dict[str, str] | None = None) -> None:
        self.args = args
        self.state = Path(tempfile.mkdtemp(prefix="cairn-bench-local-"))
        # no scheduled index snapshots: their bursts of CPU in one stack would land in the other's figures
        self.stack = StackProcess(self.state / "state", TOKEN, self.state / "stack.log", root=root,
                                  env={"CAIRN_LOCAL_SCHEDULE_S": "86400", **(env or {})})
        self.base = ""

    def __enter__(self) -> Launcher:
        try:
            self.stack.start(*self.args, timeout_s=READY_TIMEOUT_S)
        except RuntimeError:
            shutil.rmtree(self.state, ignore_errors=True)
            raise
        self.base = self.stack.base_url
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stack.stop(timeout_s=120)
        shutil.rmtree(self.state, ignore_errors=True)


def _session() -> requests.Session:
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {TOKEN}"
    return s


def _ms(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _lat(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(median(ms), 2), "p95_ms": round(pct(ms, 0.95), 2)}


def _ok(r: requests.Response, status: int = 200) -> requests.Response:
    if r.status_code != status:
        raise RuntimeError(f"{r.request.method} {r.request.path_url}: {r.status_code} {r.text[:300]}")
    return r


def _journal_bytes(state: Path) -> int:
    return sum(p.stat().st_size for p in state.glob("journal-*.bin"))


def _writes(st: Launcher, bank: str, tag: str) -> dict[str, float]:
    """p50/p95 of ``WRITES`` memory saves of new texts into ``bank`` on one session, and the
    bytes each appended to the journal (0 without persistence)."""
    s = _session()
    url = f"{st.base}/v1/banks/{bank}/memories"
    for i in range(3):  # warm-up: bank row, index, connections
        _ok(s.post(url, json={"text": f"warm-up write {tag} {i}"}), 201)
    before = _journal_bytes(st.state)
    out = _lat([_ms(lambda i=i: _ok(s.post(url, json={"text": f"Benchmark write {tag} number {i:03d}"}), 201))
                for i in range(WRITES)])
    out["journal_bytes_per_write"] = max(0, _journal_bytes(st.state) - before) // WRITES
    return out


def _load(base: str, bank: str, texts: list[str], ents: list[str]) -> float:
    """Import ``texts`` through the bank import route in batches; returns seconds."""
    s = _session()
    started = time.perf_counter()
    t0 = 1_700_000_000_000
    for i in range(0, len(texts), IMPORT_BATCH):
        batch = zip(texts[i:i + IMPORT_BATCH], ents[i:i + IMPORT_BATCH], strict=False)
        body = "".join(json.dumps({"text": t, "entities": [e], "created_at": t0 + k, "updated_at": t0 + k}) + "\n"
                       for k, (t, e) in enumerate(batch, start=i))
        res = _ok(s.post(f"{base}/v1/banks/{bank}/import", data=body.encode(),
                         headers={"Content-Type": "application/x-ndjson"}, timeout=600)).json()
        if res.get("errors"):
            raise RuntimeError(f"import errors: {res['errors'][:3]}")
    return round(time.perf_counter() - started, 1)


def _recall(session: requests.Session | None, base: str, bank: str, q: str) -> None:
    body = {"query": q, "limit": 6}
    if session is None:  # a new connection per request
        _ok(requests.post(f"{base}/v1/banks/{bank}/recall", json=body,
                          headers={"Authorization": f"Bearer {TOKEN}", "Connection": "close"}))
    else:
        _ok(session.post(f"{base}/v1/banks/{bank}/recall", json=body))


def _recalls(base: str, bank: str, qs: list[str], keep_alive: bool = True) -> dict[str, float]:
    s = _session() if keep_alive else None
    for q in qs[:5]:
        _recall(s, base, bank, q)
    return _lat([_ms(lambda q=q: _recall(s, base, bank, q)) for q in qs])


def _throughput(base: str, bank: str, qs: list[str]) -> dict[str, float]:
    """``{requests, s}``: recalls that ``CLIENTS`` threads, each its own session, completed in
    ``THROUGHPUT_S``, and the seconds it took."""
    done = [0] * CLIENTS
    stop = time.monotonic() + THROUGHPUT_S
    errors: list[str] = []

    def client(c: int) -> None:
        s = _session()
        k = c
        try:
            while time.monotonic() < stop:
                _recall(s, base, bank, qs[k % len(qs)])
                done[c] += 1
                k += CLIENTS
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(str(exc))

    threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"throughput clients failed: {errors[:2]}")
    return {"requests": sum(done), "s": time.perf_counter() - started}


def _each(stacks: dict[str, Launcher], out: dict[str, dict], key: str, fn, step: int) -> None:
    """``out[mode][key] = fn(stack)`` for every stack, back to back (the order alternates per
    step, so a load that drifts on a shared machine favours neither mode)."""
    names = list(stacks) if step % 2 == 0 else list(reversed(stacks))
    for name in names:
        out[name][key] = fn(stacks[name])


def measure(stacks: dict[str, Launcher]) -> dict[str, dict[str, Any]]:
    """Every figure for every running stack, interleaved figure by figure."""
    texts, ents, vocab = corpus(11000)
    qs = queries(vocab, RECALLS)["selective"]
    out: dict[str, dict[str, Any]] = {name: {"args": st.args} for name, st in stacks.items()}
    steps = [
        ("write_empty", lambda st: (_ok(_session().post(f"{st.base}/v1/banks", json={"name": "writes"}), 201),
                                    _writes(st, "writes", "empty"))[1]),
        ("load_1k_s", lambda st: _load(st.base, "k1", texts[:1000], ents[:1000])),
        ("recall_1k_keepalive", lambda st: _recalls(st.base, "k1", qs)),
        ("recall_1k_new_connection", lambda st: _recalls(st.base, "k1", qs, keep_alive=False)),
        ("load_10k_s", lambda st: _load(st.base, "k10", texts[1000:11000], ents[1000:11000])),
        ("write_10k", lambda st: _writes(st, "k10", "full")),
        ("recall_10k_keepalive", lambda st: _recalls(st.base, "k10", qs)),
        ("throughput_10k", lambda st: _throughput(st.base, "k10", qs)),
        ("throughput_10k_again", lambda st: _throughput(st.base, "k10", qs)),
    ]
    for step, (key, fn) in enumerate(steps):
        _each(stacks, out, key, fn, step)
        print(f"local: {key} done", flush=True)
    for r in out.values():  # two rounds in opposite orders, pooled
        a, b = r.pop("throughput_10k"), r.pop("throughput_10k_again")
        r["throughput_10k"] = {"clients": CLIENTS, "requests": a["requests"] + b["requests"],
                               "req_per_s": round((a["requests"] + b["requests"]) / (a["s"] + b["s"]), 1)}
    return out


def run(stack_root: Path | None = None) -> tuple[dict, list[str]]:
    """Both modes of this checkout side by side, or the default mode of ``stack_root``:
    ``(json, markdown)``."""
    modes = {f"as found in {stack_root}": (stack_root, [])} if stack_root else \
        {name: (ROOT, args) for name, args in MODES.items()}
    started = time.perf_counter()
    try:
        with contextlib.ExitStack() as es:
            stacks = {name: es.enter_context(Launcher(root, args)) for name, (root, args) in modes.items()}
            out: dict[str, Any] = {"modes": measure(stacks)}
    except Exception as exc:  # noqa: BLE001 - report what failed
        out = {"modes": {name: {"error": f"{type(exc).__name__}: {exc}"} for name in modes}}
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out, markdown(out)


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Local stack", "",
          "`python -m infra.local.stack` over HTTP; latencies in ms, p50 / p95. Writes: memory saves of new "
          "texts on one keep-alive session. Recalls: selective queries, limit 6.", "",
          "| mode | one write, empty stack | one write, 10k stored | recall 1k, one keep-alive connection | "
          "recall 1k, new connection each | recall 10k, keep-alive | 8 clients at 10k (req/s) | "
          "import 1k / 10k (s) |",
          "|---|---|---|---|---|---|---|---|"]

    def lat(x: dict) -> str:
        return f"{x['p50_ms']} / {x['p95_ms']}"

    def write(x: dict) -> str:
        return lat(x) + (f" ({x['journal_bytes_per_write']:,} B journaled)" if x.get("journal_bytes_per_write") else "")

    for name, r in out["modes"].items():
        if "error" in r:
            md.append(f"| {name} | failed: {r['error']} |||||||")
            continue
        md.append(f"| {name} | {write(r['write_empty'])} | {write(r['write_10k'])} | {lat(r['recall_1k_keepalive'])} | "
                  f"{lat(r['recall_1k_new_connection'])} | {lat(r['recall_10k_keepalive'])} | "
                  f"{r['throughput_10k']['req_per_s']} | {r['load_1k_s']} / {r['load_10k_s']} |")
    d, n = out["modes"].get("durable"), out["modes"].get("no-persist")
    if d and n and "error" not in d and "error" not in n:
        rows = [("recall p50 at 10k", d["recall_10k_keepalive"]["p50_ms"], n["recall_10k_keepalive"]["p50_ms"]),
                ("recall p95 at 10k", d["recall_10k_keepalive"]["p95_ms"], n["recall_10k_keepalive"]["p95_ms"]),
                ("8-client time per request at 10k", round(1000 / d["throughput_10k"]["req_per_s"], 2),
                 round(1000 / n["throughput_10k"]["req_per_s"], 2))]
        md += ["", "| durable vs no persistence (target: within 1.5x) | durable | no-persist | ratio |",
               "|---|---|---|---|"]
        md += [f"| {k} | {a} | {b} | {a / b:.2f}x |" for k, a, b in rows]
    return md
