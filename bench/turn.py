"""The per-turn paths on the local stack, phase by phase: the pre-generate hook and the structured
session context at ``MEMORIES`` memories.

One launcher (``infra.local.launch.StackProcess`` through ``bench.local.Launcher``) without
persistence (``--no-persist``), the schedule worker off and no rate limit. Bank ``k10`` gets
``MEMORIES`` memories through the bank import route, the structured ``global`` namespace the same
texts through the admin import (``bench.cold.fill``), and one interactive session is opened. Then,
on ONE ``requests.Session`` (a keep-alive connection), sequentially, ``TURNS`` turns each (after
``WARM`` warm-up turns) of:

- ``hook``: ``POST /v1/hooks/pre-generate`` with a selective query (two rare words, the speed
  part's queries) as the newest user message;
- ``hook_floor``: the same with a query that matches nothing, so the ambient floor fills the
  injection;
- ``context``: ``POST /v1/api/sessions/{id}/context`` with the selective queries.

Each figure is p50/p95 in ms: ``wall`` is the client's time per turn (request to parsed answer),
``total`` the server's own, and every phase the server reports in its ``Server-Timing`` header
(``chalicelib.timing``; a phase that did not run in a turn counts 0 for it); ``other`` is the
server's total less its phases (parsing, the pipeline). ``stack_root`` measures another
checkout's launcher (for "before" figures; without ``Server-Timing`` only ``wall`` is known).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import requests  # type: ignore[import-untyped]  # no types-requests in the environment

from chalicelib.timing import HEADER, PHASES, parse
from infra.local.launch import ROOT

from .cold import fill
from .harness import median, pct
from .local import TOKEN, Launcher, _load, _ok, _session
from .speed import corpus, queries

MEMORIES = 10000
TURNS = 200
WARM = 10
TARGET_P95_MS = 30.0
NO_MATCH = "zqxv wlkj"  # no word of the corpus: the hook's ambient floor pads the injection
COLUMNS = ("wall", "total", *PHASES, "other")


def _turn(s: requests.Session, url: str, body: dict[str, Any]) -> dict[str, float]:
    """One turn: ``{wall, total, <phase>..., other}`` in ms."""
    started = time.perf_counter()
    r = _ok(s.post(url, json=body))
    r.json()
    wall = (time.perf_counter() - started) * 1000
    server = parse(r.headers.get(HEADER, ""))
    out = {"wall": wall, **{k: server.get(k, 0.0) for k in PHASES}}
    if "total" in server:
        out["total"] = server["total"]
        out["other"] = max(0.0, server["total"] - sum(server.get(k, 0.0) for k in PHASES))
    return out


def _series(s: requests.Session, url: str, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """``WARM`` turns unmeasured, then one per body: p50/p95 of every column, and how many turns."""
    for b in bodies[:WARM]:
        _turn(s, url, b)
    turns = [_turn(s, url, b) for b in bodies]
    out: dict[str, Any] = {"turns": len(turns)}
    for k in COLUMNS:
        values = [t[k] for t in turns if k in t]
        if values:
            out[k] = {"p50_ms": round(median(values), 2), "p95_ms": round(pct(values, 0.95), 2)}
    return out


def measure(st: Launcher, n: int = MEMORIES, turns: int = TURNS) -> dict[str, Any]:
    """Every figure on the running stack ``st`` (module docstring)."""
    texts, ents, vocab = corpus(n)
    qs = queries(vocab, turns)["selective"]
    out: dict[str, Any] = {"memories": n}
    s = _session()
    _ok(s.post(f"{st.base}/v1/banks", json={"name": "k10"}), 201)
    out["import_bank_s"] = _load(st.base, "k10", texts, ents)
    out["import_structured_s"] = fill(st.base, n, TOKEN)
    sid = _ok(s.post(f"{st.base}/v1/api/sessions", json={"kind": "interactive"}), 201).json()["session_id"]
    print("turn: filled", flush=True)

    def hook(q: str) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": q}], "metadata": {"memory_bank": "k10"}}

    hook_url, context_url = f"{st.base}/v1/hooks/pre-generate", f"{st.base}/v1/api/sessions/{sid}/context"
    out["hook"] = _series(s, hook_url, [hook(q) for q in qs])
    out["hook_floor"] = _series(s, hook_url, [hook(NO_MATCH)] * turns)
    out["context"] = _series(s, context_url, [{"messages": [{"role": "user", "content": q}]} for q in qs])
    return out


def run(stack_root: Path | None = None, n: int = MEMORIES, turns: int = TURNS) -> tuple[dict, list[str]]:
    """``(json, markdown)`` for this checkout's launcher, or ``stack_root``'s."""
    root = stack_root or ROOT
    started = time.perf_counter()
    try:
        with Launcher(root, ["--no-persist"], env={"CAIRN_RATE_REQUESTS_PER_MINUTE": "0"}) as st:
            out: dict[str, Any] = measure(st, n, turns)
    except Exception as exc:  # noqa: BLE001 - report what failed
        out = {"error": f"{type(exc).__name__}: {exc}"}
    out["root"] = str(root)
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out, markdown(out)


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Per-turn paths", "",
          f"Local stack without persistence, {out.get('memories', MEMORIES):,} memories in the bank and in the "
          f"structured namespace; sequential turns on one keep-alive connection; ms, p50 / p95 (target: "
          f"p95 under {TARGET_P95_MS:.0f} ms). `wall`: the client's; the rest from the server's "
          f"`Server-Timing` header (`other`: its total less the phases).", ""]
    if "error" in out:
        return [*md, f"failed: {out['error']}"]
    md += ["| turn | " + " | ".join(COLUMNS) + " |", "|---|" + "---|" * len(COLUMNS)]
    for key, label in (("hook", "pre-generate hook, selective query"),
                       ("hook_floor", "pre-generate hook, nothing matches (ambient floor)"),
                       ("context", "structured context, selective query")):
        r = out[key]
        cells = [f"{r[k]['p50_ms']} / {r[k]['p95_ms']}" if k in r else "-" for k in COLUMNS]
        md.append(f"| {label} | " + " | ".join(cells) + " |")
    md += ["", f"Imports: bank {out['import_bank_s']} s, structured {out['import_structured_s']} s; "
               f"{out['hook']['turns']} turns a row."]
    return md
