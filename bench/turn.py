"""The per-turn paths on the local stack, phase by phase: the pre-generate hook and the structured
session context at ``MEMORIES`` memories.

A launcher (``infra.local.launch.StackProcess`` through ``bench.local.Launcher``) without
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
server's total less its phases (parsing, the pipeline). ``stack_root`` adds another checkout's
launcher beside this one ("before" and "after"): both stacks run at once, are filled at once and
take turns request by request (which goes first alternates), each on its own keep-alive
connection, so a load that drifts on a shared machine favours neither (a checkout without
``Server-Timing`` reports ``wall`` only).
"""

from __future__ import annotations

import contextlib
import threading
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


def _series(stacks: list[tuple[requests.Session, str]], bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each ``(session, url)``: ``WARM`` turns unmeasured, then one per body, the stacks
    taking turns (which goes first alternates per body, so a drifting load favours none); p50/p95
    of every column and how many turns, per stack."""
    for b in bodies[:WARM]:
        for s, url in stacks:
            _turn(s, url, b)
    turns: list[list[dict[str, float]]] = [[] for _ in stacks]
    for i, b in enumerate(bodies):
        order = range(len(stacks)) if i % 2 == 0 else reversed(range(len(stacks)))
        for k in order:
            turns[k].append(_turn(*stacks[k], b))
    out = []
    for got in turns:
        r: dict[str, Any] = {"turns": len(got)}
        for c in COLUMNS:
            values = [t[c] for t in got if c in t]
            if values:
                r[c] = {"p50_ms": round(median(values), 2), "p95_ms": round(pct(values, 0.95), 2)}
        out.append(r)
    return out


def _fill(st: Launcher, n: int, out: dict[str, Any]) -> None:
    """Bank ``k10`` and the structured ``global`` namespace with ``n`` memories each, and one
    interactive session: ``out`` gets the import seconds and the session id."""
    texts, ents, _vocab = corpus(n)
    s = _session()
    _ok(s.post(f"{st.base}/v1/banks", json={"name": "k10"}), 201)
    out["import_bank_s"] = _load(st.base, "k10", texts, ents)
    out["import_structured_s"] = fill(st.base, n, TOKEN)
    out["session_id"] = _ok(s.post(f"{st.base}/v1/api/sessions", json={"kind": "interactive"}), 201
                            ).json()["session_id"]


def measure(stacks: dict[str, Launcher], n: int = MEMORIES, turns: int = TURNS) -> dict[str, dict[str, Any]]:
    """Every figure on every running stack (module docstring), filled at once, turns interleaved."""
    _texts, _ents, vocab = corpus(n)
    qs = queries(vocab, turns)["selective"]
    out: dict[str, dict[str, Any]] = {name: {"memories": n} for name in stacks}
    fills = [threading.Thread(target=_fill, args=(st, n, out[name])) for name, st in stacks.items()]
    for t in fills:
        t.start()
    for t in fills:
        t.join()
    for name in stacks:
        if "session_id" not in out[name]:
            raise RuntimeError(f"filling the {name} stack failed")
    print("turn: filled", flush=True)

    def hook(q: str) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": q}], "metadata": {"memory_bank": "k10"}}

    hooks = [(_session(), f"{st.base}/v1/hooks/pre-generate") for st in stacks.values()]
    contexts = [(_session(), f"{st.base}/v1/api/sessions/{out[name]['session_id']}/context")
                for name, st in stacks.items()]
    for key, pairs, bodies in (("hook", hooks, [hook(q) for q in qs]),
                               ("hook_floor", hooks, [hook(NO_MATCH)] * turns),
                               ("context", contexts, [{"messages": [{"role": "user", "content": q}]} for q in qs])):
        for name, r in zip(stacks, _series(pairs, bodies), strict=True):
            out[name][key] = r
    return out


FLOOR_CALLS = 200


def floor(moto_url: str, calls: int = FLOOR_CALLS) -> dict[str, dict[str, float]]:
    """The local stack's floor: each DynamoDB call a turn makes, sent ``calls`` times
    sequentially from a bare boto3 client on one keep-alive connection to the stack's moto
    (absent keys: the round trip, not the item, is measured), p50/p95 in ms: the token
    ``GetItem``, the bank read (a consistent ``BatchGetItem`` of 1 key and of the bank row plus one
    per default write lane) and the usage counter (a conditional ``UpdateItem`` with ``ADD``)."""
    import boto3

    from chalicelib.settings import Settings

    lanes = Settings.model_fields["write_lanes"].default  # a bank read asks for the bank row and one per lane
    db = boto3.client("dynamodb", endpoint_url=moto_url, region_name="us-east-1",
                      aws_access_key_id="bench", aws_secret_access_key="bench")
    tables = {t.rsplit("-", 1)[-1]: t for t in db.list_tables()["TableNames"]}

    def key_of(table: str, i: int) -> dict[str, Any]:
        desc = db.describe_table(TableName=table)["Table"]
        types = {a["AttributeName"]: a["AttributeType"] for a in desc["AttributeDefinitions"]}
        return {k["AttributeName"]: {"S": f"floor#{i}"} if types[k["AttributeName"]] == "S" else {"N": str(i)}
                for k in desc["KeySchema"]}

    tok, banks, usage = tables["tokens"], tables["banks"], tables["usage"]
    tk, bk, uk = key_of(tok, 0), [key_of(banks, i) for i in range(1 + lanes)], key_of(usage, 0)
    probes = {
        "token GetItem": lambda: db.get_item(TableName=tok, Key=tk),
        "bank BatchGetItem, 1 key": lambda: db.batch_get_item(
            RequestItems={banks: {"Keys": bk[:1], "ConsistentRead": True}}),
        f"bank BatchGetItem, {1 + lanes} keys": lambda: db.batch_get_item(
            RequestItems={banks: {"Keys": bk, "ConsistentRead": True}}),
        "usage UpdateItem": lambda: db.update_item(
            TableName=usage, Key=uk, UpdateExpression="ADD #n :one", ConditionExpression="attribute_not_exists(#x)",
            ExpressionAttributeNames={"#n": "n", "#x": "x"}, ExpressionAttributeValues={":one": {"N": "1"}}),
    }
    out = {}
    for name, fn in probes.items():
        for _ in range(WARM):
            fn()
        ms = []
        for _ in range(calls):
            started = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - started) * 1000)
        out[name] = {"p50_ms": round(median(ms), 2), "p95_ms": round(pct(ms, 0.95), 2)}
    return out


def run(stack_root: Path | None = None, n: int = MEMORIES, turns: int = TURNS) -> tuple[dict, list[str]]:
    """``(json, markdown)`` for this checkout's launcher and, with ``stack_root``, that
    checkout's beside it (both stacks at once, turns interleaved: "before" and "after")."""
    roots = {"this checkout": ROOT}
    if stack_root is not None:
        roots = {f"as found in {stack_root}": stack_root, **roots}
    started = time.perf_counter()
    try:
        with contextlib.ExitStack() as es:
            stacks = {name: es.enter_context(Launcher(root, ["--no-persist"],
                                                      env={"CAIRN_RATE_REQUESTS_PER_MINUTE": "0"}))
                      for name, root in roots.items()}
            out: dict[str, Any] = {"stacks": measure(stacks, n, turns)}
            out["floor"] = floor(stacks["this checkout"].stack.moto_url)
    except Exception as exc:  # noqa: BLE001 - report what failed
        out = {"error": f"{type(exc).__name__}: {exc}"}
    out["memories"] = n
    out["wall_s"] = round(time.perf_counter() - started, 1)
    return out, markdown(out)


def markdown(out: dict[str, Any]) -> list[str]:
    md = ["## Per-turn paths", "",
          f"Local stack without persistence, {out.get('memories', MEMORIES):,} memories in the bank and in the "
          f"structured namespace; sequential turns on one keep-alive connection per stack; ms, p50 / p95 "
          f"(target: p95 under {TARGET_P95_MS:.0f} ms). `wall`: the client's; the rest from the server's "
          f"`Server-Timing` header (`other`: its total less the phases).", ""]
    if "error" in out:
        return [*md, f"failed: {out['error']}"]
    md += ["| stack | turn | " + " | ".join(COLUMNS) + " |", "|---|---|" + "---|" * len(COLUMNS)]
    for name, r in out["stacks"].items():
        for key, label in (("hook", "pre-generate hook, selective query"),
                           ("hook_floor", "pre-generate hook, nothing matches (ambient floor)"),
                           ("context", "structured context, selective query")):
            cells = [f"{r[key][k]['p50_ms']} / {r[key][k]['p95_ms']}" if k in r[key] else "-" for k in COLUMNS]
            md.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    md.append("")
    if "floor" in out:
        md += [f"The stack's floor: each DynamoDB call a turn makes, {FLOOR_CALLS} times from a bare boto3 client "
               "on one keep-alive connection to the same moto (`bench.turn.floor`), ms p50 / p95: "
               + "; ".join(f"{k} {v['p50_ms']} / {v['p95_ms']}" for k, v in out["floor"].items()) + ".", ""]
    for name, r in out["stacks"].items():
        md.append(f"{name}: imports bank {r['import_bank_s']} s, structured {r['import_structured_s']} s; "
                  f"{r['hook']['turns']} turns a row.")
    return md
