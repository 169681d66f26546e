"""The OpenAPI document: served without a token, valid OpenAPI 3.1, identical to the committed
``openapi.json``, and in agreement with the routes the app answers, both ways."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from openapi_spec_validator import validate

ROOT = Path(__file__).resolve().parents[2]
METHODS = {"get", "post", "put", "patch", "delete", "head"}


def _document():
    from chalicelib.api.openapi import document
    return document()


def test_served_without_a_token_and_valid(client):
    resp = client.http.get("/v1/openapi.json")
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("application/json")
    doc = json.loads(resp.body)
    validate(doc)
    assert doc["openapi"].startswith("3.1")
    assert doc == json.loads(json.dumps(_document()))


def test_committed_copy_is_current(app):
    from chalicelib.api.openapi import dumps
    committed = (ROOT / "openapi.json").read_text(encoding="utf-8")
    assert committed == dumps(), "openapi.json is stale: run `make openapi` and commit it"


def _app_routes(app) -> set[tuple[str, str]]:
    """(path, method) of every view declared through ``endpoint``: not the 405/404 answers
    ``finalize`` adds."""
    out = set()
    for path, entries in app.routes.items():
        for method, entry in entries.items():
            name = entry.view_name
            if name.startswith(("method_not_allowed_", "not_found_")):
                continue
            out.add((path, method.lower()))
    return out


def test_routes_and_document_agree_both_ways(app):
    doc = _document()
    documented = {(p, m) for p, ops in doc["paths"].items() for m in ops if m in METHODS}
    served = _app_routes(app)
    assert served - documented == set(), "routes missing from the document"
    assert documented - served == set(), "documented operations no route answers"


def test_every_operation_lists_its_errors_and_security(app):
    doc = _document()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            codes = set(op["responses"])
            assert "500" in codes and "503" in codes, (method, path)
            if path in ("/v1/health", "/v1/openapi.json", "/console", "/console/{asset}"):
                assert op["security"] == [], path
            else:
                assert op["security"] == [{"bearer": []}], path
                assert "401" in codes, (method, path)


def test_every_code_the_service_raises_is_in_the_catalog():
    """A code a client can get is one of ``CODES``, so the document can list it."""
    from chalicelib.errors import CODES
    found: set[str] = set()
    for path in (ROOT / "chalicelib").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            keyword = isinstance(node, ast.keyword) and node.arg == "code"
            attribute = (isinstance(node, ast.Assign) and len(node.targets) == 1
                         and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "code")
            value = getattr(node, "value", None)
            if (keyword or attribute) and isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(value.value)
    not_client_facing = {"invalid_model_output"}  # an extraction job's parse failure, never an HTTP answer
    assert found - not_client_facing - set(CODES) == set()
    assert all(re.fullmatch(r"[a-z_]+(\.[a-z_]+)*", c) for c in CODES)


def test_a_route_without_its_responses_or_with_an_unknown_code_is_refused():
    """The document cannot hold an undescribed body or an uncatalogued code: declaring one fails."""
    import pytest
    from chalice import Blueprint
    from pydantic import BaseModel

    from chalicelib.api.http import endpoint

    bp = Blueprint("probe")
    with pytest.raises(ValueError, match="must declare its success responses"):
        endpoint(bp, "/v1/probe", ["GET"])
    with pytest.raises(ValueError, match=r"not in chalicelib\.errors\.CODES"):
        endpoint(bp, "/v1/probe", ["GET"], responses={200: BaseModel}, errors=("no_such_code",))
