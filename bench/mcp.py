"""``memory_recall`` over ``POST /mcp`` against the REST recall it runs, on the local stack.

One launcher (``--no-persist``, schedule worker off) on an empty state dir; ``MEMORIES`` memories
of the speed part's corpus (``bench.speed.corpus``) are imported into one bank. Then, on ONE
keep-alive ``requests.Session`` each, in ``ROUNDS`` rounds that alternate which goes first (so a
load that drifts on a shared machine favours neither):

- ``rest``: ``POST /v1/banks/{bank}/recall`` with ``{query, limit: 6}``;
- ``mcp``: ``POST /mcp`` with a ``tools/call`` of ``memory_recall`` (same bank, query and limit),
  as a client of protocol 2025-11-25 sends it after ``initialize``;

over the speed part's selective queries, each query sent once per round by each; every answer is
checked (the MCP one: a result without ``isError`` holding the same memory ids as REST's). The
first MCP request of the process is timed apart (``first_mcp_ms``: it imports the SDK's types),
as is ``tools/list``. Figures: p50 and p95 in ms, and their ratio MCP / REST (target: within 1.2x).
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import requests  # type: ignore[import-untyped]  # no types-requests in the environment

from infra.local.launch import ROOT

from .harness import median, pct
from .local import Launcher, _load, _ok
from .speed import corpus, queries

TOKEN_HEADER = "Authorization"
MEMORIES = 1000
QUERIES = 100
ROUNDS = 4
BANK = "mcpbench"
PROTOCOL = "2025-11-25"
_ids = itertools.count(1)


def _session(token: str) -> requests.Session:
    s = requests.Session()
    s.headers[TOKEN_HEADER] = f"Bearer {token}"
    return s


def _rest(s: requests.Session, base: str, q: str) -> list[str]:
    r = _ok(s.post(f"{base}/v1/banks/{BANK}/recall", json={"query": q, "limit": 6}))
    return [h["memory"]["id"] for h in r.json()["memories"]]


def _rpc(s: requests.Session, base: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, **({"params": params} if params else {})}
    r = _ok(s.post(f"{base}/mcp", data=json.dumps(body),
                   headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                            "MCP-Protocol-Version": PROTOCOL}))
    answer = r.json()
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


def _mcp(s: requests.Session, base: str, q: str) -> list[str]:
    result = _rpc(s, base, "tools/call", {"name": "memory_recall", "arguments": {"bank": BANK, "query": q,
                                                                                  "limit": 6}})
    if result.get("isError"):
        raise RuntimeError(f"memory_recall failed: {result['structuredContent']}")
    return [h["memory"]["id"] for h in result["structuredContent"]["memories"]]


def _timed(fn) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return (time.perf_counter() - started) * 1000, out


def measure(launcher: Launcher) -> dict[str, Any]:
    """The figures on one running stack (see the module docstring)."""
    base, token = launcher.base, launcher.stack.token
    texts, ents, vocab = corpus(MEMORIES)
    _ok(_session(token).post(f"{base}/v1/banks", json={"name": BANK}), 201)
    load_s = _load(base, BANK, texts, ents)
    qs = queries(vocab, QUERIES)["selective"]
    rest, mcp = _session(token), _session(token)
    first_ms, _ = _timed(lambda: _rpc(mcp, base, "initialize", {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}))
    list_ms, listed = _timed(lambda: _rpc(mcp, base, "tools/list"))
    for q in qs[:5]:  # warm-up: bank head, index, connections
        if _rest(rest, base, q) != _mcp(mcp, base, q):
            raise RuntimeError(f"REST and MCP recall differ for {q!r}")
    times: dict[str, list[float]] = {"rest": [], "mcp": []}
    for round_ in range(ROUNDS):
        order = ("rest", "mcp") if round_ % 2 == 0 else ("mcp", "rest")
        for q in qs:
            for kind in order:
                fn = (lambda q=q: _rest(rest, base, q)) if kind == "rest" else (lambda q=q: _mcp(mcp, base, q))
                elapsed, _ = _timed(fn)
                times[kind].append(elapsed)
    out: dict[str, Any] = {"memories": MEMORIES, "queries": len(qs), "rounds": ROUNDS, "load_s": load_s,
                           "first_mcp_ms": round(first_ms, 1), "tools_list_ms": round(list_ms, 1),
                           "tools": len(listed["tools"])}
    for kind, samples in times.items():
        out[kind] = {"p50_ms": round(median(samples), 2), "p95_ms": round(pct(samples, 0.95), 2), "n": len(samples)}
    out["ratio_p50"] = round(out["mcp"]["p50_ms"] / out["rest"]["p50_ms"], 3)
    out["ratio_p95"] = round(out["mcp"]["p95_ms"] / out["rest"]["p95_ms"], 3)
    return out


def run() -> tuple[dict[str, Any], list[str]]:
    """``(json, markdown)`` of one run on a fresh local stack of this checkout."""
    started = time.perf_counter()
    try:
        with Launcher(ROOT, ["--no-persist"]) as launcher:
            out = measure(launcher)
    except Exception as exc:  # noqa: BLE001 - report what failed
        out = {"error": f"{type(exc).__name__}: {exc}"}
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out, markdown(out)


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## MCP recall", "",
          f"`memory_recall` over `POST /mcp` (protocol {PROTOCOL}) against `POST /v1/banks/{{bank}}/recall`, each "
          "on one keep-alive connection to the local stack (`--no-persist`), selective queries, limit 6; "
          "ms, p50 / p95.", ""]
    if "error" in out:
        return [*md, f"Failed: {out['error']}"]
    md += ["| memories | REST recall | MCP memory_recall | MCP / REST p50 | MCP / REST p95 (target: within 1.2x) | "
           "first MCP request | tools/list |",
           "|---|---|---|---|---|---|---|",
           f"| {out['memories']} | {out['rest']['p50_ms']} / {out['rest']['p95_ms']} | "
           f"{out['mcp']['p50_ms']} / {out['mcp']['p95_ms']} | {out['ratio_p50']}x | {out['ratio_p95']}x | "
           f"{out['first_mcp_ms']} | {out['tools_list_ms']} ({out['tools']} tools) |"]
    return md
