"""The OpenAPI 3.1 document of the HTTP API, built from what each route declares to ``endpoint``
(``http.ROUTES``): its body and query models, its success responses and the error codes it can
answer. No schema is written twice: bodies and query strings are the very models the pipeline and
the views validate with, and responses are the models their renderers are typed by.

``document()`` is served at ``GET /v1/openapi.json`` and committed as ``openapi.json``
(``make openapi`` writes it; a test fails when the two differ).
"""

from __future__ import annotations

import inspect
import json
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from .. import patterns
from ..errors import CODES
from ..validation import Model
from . import areas
from .http import ROUTES, Raw, Route
from .mcp import McpError

TITLE = "Cairn"
API_VERSION = "1.0.0"
REF = "#/components/schemas/{model}"
SECURITY = "bearer"

TAGS: tuple[tuple[str, str, str], ...] = (
    # (path prefix, tag, description): the first prefix a path starts with names its tag
    ("/v1/banks/{bank}/recall", "Recall and injection", "Ranked recall, the exact injection a turn gets."),
    ("/v1/banks/{bank}/preview", "Recall and injection", ""),
    ("/v1/hooks/pre-generate", "Recall and injection", ""),
    ("/v1/hooks", "Hooks", "What an agent runtime calls when a turn or a session ends."),
    ("/v1/banks/{bank}/forget-session", "Hooks", ""),
    ("/v1/banks", "Memory banks", "Banks of markdown rules and one-sentence memories."),
    ("/v1/api/admin/tokens", "Tokens", "Minting, listing and revoking bearer tokens."),
    ("/v1/api", "Structured memory (Turnstone)",
     "Typed, scoped, named memories: wire-compatible with the Turnstone memory API."),
    ("/api/v1/context", "Team memory", "Entries edited together, accepted by a second person, then retrievable."),
    ("/v1/audit", "Audit", "Every event the service writes, filtered by key, never with content."),
    ("/v1/usage", "Usage", "What an org uses, and the limits that bound it."),
    ("/v1", "Service", "Health, identity, the document itself, diagnostics."),
    ("/console", "Console", "The web console's page and files."),
    ("/mcp", "MCP", "The Model Context Protocol endpoint: Cairn's memory as tools for agents."),
)

PIPELINE_ERRORS = ("payload_too_large", "internal_error", "misconfigured", "backend_unavailable")
WRITE_ERRORS = ("write_contention",)
RETRY_STATUSES = (429, 503)
SHARED_ERRORS = {("unauthorized",), ("forbidden",), ("payload_too_large",), ("unsupported_media_type",),
                 ("internal_error", "misconfigured"), ("backend_unavailable",),
                 ("backend_unavailable", "write_contention")}


def tag_of(path: str) -> str:
    """The tag of ``path``: that of the first ``TAGS`` prefix it starts with."""
    for prefix, tag, _ in TAGS:
        if path == prefix or path.startswith(prefix + "/") or path.startswith(prefix + "?"):
            return tag
    raise ValueError(f"no tag for {path}")


def error_codes(route: Route, method: str) -> list[str]:
    """Every code ``route`` can answer to ``method``: the pipeline's, from the declaration, and the
    view's own (``route.errors``), in ``CODES`` order."""
    codes = set(PIPELINE_ERRORS) | set(route.errors)
    if method in ("POST", "PUT", "PATCH", "DELETE"):
        codes |= set(WRITE_ERRORS)
    if route.meter in ("read", "write", "tool"):
        codes.add("rate_limited")  # the token's and the org's rate limits (chalicelib.usage.meter)
    if not route.public:
        codes |= {"unauthorized", "validation_error"}
        if route.permission is not None or not route.bank_scoped or "{bank}" in route.path:
            codes.add("forbidden")
    elif "{" in route.path:
        codes.add("validation_error")
    if method in ("POST", "PUT", "PATCH") and not route.public:
        codes |= {"unsupported_media_type", "invalid_json"} if "application/json" in route.body_types else {
            "unsupported_media_type"}
    if "{bank}" in route.path:
        codes.add("invalid_name")
    return [c for c in CODES if c in codes]


_SENTENCE_END = patterns.compile(r"[.:]\s")
_PATH_PARAM = patterns.compile(r"{(\w+)}")


def _summary(doc: str) -> str:
    text = " ".join(doc.split()) if doc else ""
    end = _SENTENCE_END.search(text)  # "." or ":" before a space
    first = text[:end.start() + 1] if end else text
    return first.rstrip(":.")[:120]


class _Schemas:
    """The models the document names, gathered first and rendered in one pass so that a model
    used by several routes is one component."""

    def __init__(self) -> None:
        self.models: dict[tuple[type[BaseModel], JsonSchemaMode], None] = {}

    def add(self, model: type[BaseModel], mode: JsonSchemaMode) -> None:
        self.models[(model, mode)] = None

    def build(self) -> tuple[dict[Any, dict[str, Any]], dict[str, Any]]:
        """(``{(model, mode): schema or $ref}``, the ``$defs`` every model's schema refers to)."""
        keys = list(self.models)
        refs, top = models_json_schema(keys, ref_template=REF)
        defs = top.get("$defs", {})
        _word_defaults(defs)
        return dict(refs), defs


def _word_defaults(node: Any) -> None:
    """A query string's boolean (``http.Flag``) is a string enum: its default is the word too."""
    if isinstance(node, dict):
        if isinstance(node.get("default"), bool) and all(isinstance(e, str) for e in node.get("enum", [0])):
            node["default"] = "true" if node["default"] else "false"
        for value in node.values():
            _word_defaults(value)
    elif isinstance(node, list):
        for value in node:
            _word_defaults(value)


def _parameters(route: Route, query_schema: dict[str, Any] | None, defs: dict[str, Any]) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    for name in _PATH_PARAM.findall(route.path):
        schema: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 512}
        if name == "bank":
            schema = {"type": "string", "pattern": r"^[a-z0-9][a-z0-9_-]{0,63}$"}
        params.append({"name": name, "in": "path", "required": True, "schema": schema})
    if query_schema is not None:
        schema = query_schema
        if "$ref" in schema:
            schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
        required = set(schema.get("required", ()))
        for name, prop in schema.get("properties", {}).items():
            entry: dict[str, Any] = {"name": name, "in": "query", "required": name in required, "schema": prop}
            if prop.get("description"):
                entry["description"] = prop["description"]
            params.append(entry)
    return params


def _error_response(status: int, group: list[str], envelope: str = "error") -> dict[str, Any]:
    lines = "\n".join(f"- `{c}`: {CODES[c][1]}" for c in group)
    if envelope == "jsonrpc":
        schema: dict[str, Any] = {"allOf": [{"$ref": REF.format(model="McpError")}], "properties": {"error": {
            "properties": {"data": {"properties": {"code": {"enum": group}}}}}}}
    else:
        schema = {"allOf": [{"$ref": REF.format(model="Error")}], "properties": {"code": {"enum": group}}}
    headers: dict[str, Any] = {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}}
    if status in RETRY_STATUSES:
        headers["Retry-After"] = {"$ref": "#/components/headers/RetryAfter"}
    return {"description": lines, "headers": headers, "content": {"application/json": {"schema": schema}}}


def _shared_name(group: list[str]) -> str:
    return "".join(part.capitalize() for code in group for part in code.split("_"))


def _error_responses(codes: list[str], shared: dict[str, Any], envelope: str = "error") -> dict[str, Any]:
    """Per status, the error body with the codes of that status; a group that recurs across
    operations (``SHARED_ERRORS``) is a reference to ``components.responses``."""
    by_status: dict[int, list[str]] = {}
    for code in codes:
        by_status.setdefault(CODES[code][0], []).append(code)
    out: dict[str, Any] = {}
    for status, group in sorted(by_status.items()):
        if envelope != "error":
            out[str(status)] = _error_response(status, group, envelope)
        elif tuple(group) in SHARED_ERRORS:
            name = _shared_name(group)
            shared[name] = _error_response(status, group)
            out[str(status)] = {"$ref": f"#/components/responses/{name}"}
        else:
            out[str(status)] = _error_response(status, group)
    return out


def _success(status: int, body: Any, refs: dict[Any, Any]) -> dict[str, Any]:
    headers = {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}}
    if isinstance(body, tuple):  # one status, several media types: their contents together
        parts = [_success(status, b, refs) for b in body]
        return {"description": " Or: ".join(p["description"] for p in parts), "headers": headers,
                "content": {k: v for p in parts for k, v in p["content"].items()}}
    if isinstance(body, Raw) and not body.media_type:
        return {"description": body.description, "headers": headers}
    if isinstance(body, Raw):
        return {"description": body.description or body.media_type, "headers": headers,
                "content": {body.media_type: {"schema": {"type": "string"}}}}
    return {"description": _summary(body.__doc__ or "") or body.__name__, "headers": headers,
            "content": {"application/json": {"schema": refs[(body, "serialization")]}}}


def _request_body(route: Route, refs: dict[Any, Any]) -> dict[str, Any]:
    content: dict[str, Any] = {}
    for media in route.body_types:
        if media == "application/json":
            # no model: the view reads the raw body (an import's ndjson lines), so any JSON text
            content[media] = {"schema": refs[(route.body, "validation")] if route.body else {}}
        else:
            content[media] = {"schema": {"type": "string"}}
    return {"required": route.body is not None, "content": content}


def _operation(route: Route, method: str, refs: dict[Any, Any], defs: dict[str, Any],
               shared: dict[str, Any]) -> dict[str, Any]:
    doc = inspect.cleandoc(route.doc)
    op: dict[str, Any] = {"operationId": route.name, "tags": [tag_of(route.path)], "summary": _summary(doc),
                          "description": doc}
    if route.permission:
        op["description"] += f"\n\nPermission: `{route.permission}`."
    query = refs[(route.query, "validation")] if route.query else None
    params = _parameters(route, query, defs)
    if params:
        op["parameters"] = params
    if method in ("POST", "PUT", "PATCH") and (route.body is not None or route.body_types != ("application/json",)):
        op["requestBody"] = _request_body(route, refs)
    responses = {str(s): _success(s, b, refs) for s, b in sorted(route.responses.items())}
    responses.update(_error_responses(error_codes(route, method), shared, route.envelope))
    op["responses"] = responses
    op["security"] = [] if route.public else [{SECURITY: []}]
    return op


class Error(Model):
    """Every error's body."""

    error: str
    """A sentence a person understands."""
    code: str
    """Stable and machine-readable: one of the codes this operation lists."""
    details: dict[str, Any] | None = None
    """What the code's description says it carries (``field``, ``limit_bytes``, ``request_id``...)."""


def _gather(routes: list[Route]) -> _Schemas:
    schemas = _Schemas()
    schemas.add(Error, "serialization")
    for route in routes:
        if route.envelope == "jsonrpc":
            schemas.add(McpError, "serialization")
        if route.body is not None:
            schemas.add(route.body, "validation")
        if route.query is not None:
            schemas.add(route.query, "validation")
        for declared in route.responses.values():
            for body in declared if isinstance(declared, tuple) else (declared,):
                if isinstance(body, type):
                    schemas.add(body, "serialization")
    return schemas


@cache
def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document as a JSON-ready dict (built once per process, every area loaded)."""
    areas.load_all()
    routes = sorted(ROUTES, key=lambda r: (r.path, r.methods))
    refs, defs = _gather(routes).build()
    names = [r.name for r in routes]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"operation ids must be unique: {dupes}")
    paths: dict[str, dict[str, Any]] = {}
    shared: dict[str, Any] = {}
    for route in routes:
        for method in route.methods:
            paths.setdefault(route.path, {})[method.lower()] = _operation(route, method, refs, defs, shared)
    tags = sorted({t for _, t, _ in TAGS})
    described = {t: d for _, t, d in TAGS if d}
    return {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": API_VERSION,
                 "description": "Memory for AI agents and their teams: memory banks with recall and injection, "
                                "structured (Turnstone-compatible) memory, and reviewed team memory."},
        "tags": [{"name": t, "description": described.get(t, "")} for t in tags],
        "paths": paths,
        "components": {
            "schemas": defs,
            "responses": dict(sorted(shared.items())),
            "securitySchemes": {SECURITY: {"type": "http", "scheme": "bearer",
                                           "description": "A Cairn token: `Authorization: Bearer cairn_...`."}},
            "headers": {
                "RequestId": {"description": "The request's id, as logged.", "required": True,
                              "schema": {"type": "string"}},
                "RetryAfter": {"description": "Seconds to wait before retrying.", "schema": {"type": "string"}},
            },
        },
    }


def dumps() -> str:
    """The document as committed: indented JSON, keys in document order, a final newline."""
    return json.dumps(document(), indent=2, ensure_ascii=False) + "\n"
