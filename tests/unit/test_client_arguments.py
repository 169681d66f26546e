"""The Python client takes what the REST API takes: every query parameter of every documented
operation is passed by a client method, and an import takes a path as an export does."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import httpx
import pytest
from cairn_client import Cairn
from cairn_client._core import ndjson_bytes

ROOT = Path(__file__).resolve().parents[2]
ASYNC_CLIENT = ROOT / "clients" / "python" / "cairn_client" / "_async_client.py"


def _query_parameters() -> dict[str, set[str]]:
    doc = json.loads((ROOT / "openapi.json").read_text())
    return {op["operationId"]: {p["name"] for p in op.get("parameters", []) if p.get("in") == "query"}
            for item in doc["paths"].values() for m, op in item.items()
            if m in ("get", "put", "post", "delete", "patch") and isinstance(op, dict)}


def _passed_by_client() -> dict[str, set[str]]:
    """Per operation id, the query keys the client's calls of it pass (``call``/``send``/``pages``)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(ASYNC_CLIENT.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("call", "send", "pages") and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            continue
        keys = out.setdefault(node.args[0].value, set())
        for kw in node.keywords:
            if kw.arg == "query" and isinstance(kw.value, ast.Dict):
                keys |= {k.value for k in kw.value.keys if isinstance(k, ast.Constant)}
    return out


def test_every_query_parameter_of_the_document_is_passed_by_the_client():
    passed = _passed_by_client()
    missing = {op: sorted(params - passed.get(op, set())) for op, params in _query_parameters().items()
               if params - passed.get(op, set())}
    assert not missing, f"client methods lack these REST query parameters: {missing}"


def test_memories_list_sends_the_text_filter():
    seen: list[httpx.URL] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        return httpx.Response(200, json={"memories": [], "total": 0, "next_cursor": None})
    c = Cairn("http://cairn.test", "cairn_t", transport=httpx.MockTransport(answer))
    c.memories.list("main", q="coffee", tag="drinks")
    list(c.memories.iter("main", q="tea"))
    assert [dict(u.params) for u in seen] == [{"q": "coffee", "tag": "drinks"}, {"q": "tea"}]


def test_an_import_takes_a_path_as_an_export_does(tmp_path):
    f = tmp_path / "main.jsonl"
    f.write_bytes(b'{"text": "from a file"}\n')
    assert ndjson_bytes(str(f)) == ndjson_bytes(f) == b'{"text": "from a file"}\n'
    with pytest.raises(FileNotFoundError):
        ndjson_bytes(str(tmp_path / "missing.jsonl"))  # never the path's own text, imported as a line
    assert ndjson_bytes('  {"text": "inline"}\n') == b'  {"text": "inline"}\n'  # NDJSON text still works


def test_recall_and_preview_send_the_filter():
    """``filter`` goes in the body as given (a mapping, or the generated ``RecallFilter`` model,
    its unset fields left out); without it the body has none."""
    from cairn_client import models

    bodies: list[dict] = []

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        if request.url.path.endswith("/recall"):
            return httpx.Response(200, json={"memories": [], "match": {"level": "none", "score": None,
                                                                       "threshold": 0.35},
                                             "retrieval": "bm25-entity"})
        return httpx.Response(200, json={"system_prompt_section": "", "rules": 0, "rules_truncated": False,
                                         "memories": [], "match": {"level": "none", "score": None, "threshold": 0.35},
                                         "retrieval": "bm25-entity",
                                         "budget": {"rules": {"used_bytes": 0, "limit_bytes": 1, "truncated": False},
                                                    "memories": {"used_bytes": 0, "limit_bytes": 1}}})
    c = Cairn("http://cairn.test", "cairn_t", transport=httpx.MockTransport(answer))
    c.banks.recall("main", "deploy", filter={"tags_all": ["ops"], "session_id": None})
    c.banks.recall("main", "deploy", filter=models.RecallFilter.model_validate(
        {"entities_any": ["alice"], "created_after": 1764547200000}), tag="ops")
    c.banks.preview("main", "deploy", filter={"session_id": "s1"})
    c.banks.recall("main", "deploy")
    assert bodies == [{"query": "deploy", "filter": {"tags_all": ["ops"]}},
                      {"query": "deploy", "tag": "ops", "filter": {"entities_any": ["alice"],
                                                                   "created_after": 1764547200000}},
                      {"query": "deploy", "filter": {"session_id": "s1"}},
                      {"query": "deploy"}]
