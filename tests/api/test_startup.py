"""Lambda start: what ``import app`` leaves for first use (``chalicelib.api.areas``, deferred models,
patterns compiled on first use), and the route table it registers from."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel
from pydantic_settings import BaseSettings

import chalicelib
from chalicelib.api import areas

ROOT = Path(__file__).resolve().parents[2]

DEFERRED = (
    # every route area and the response models only the OpenAPI document and MCP schemas use
    *(f"chalicelib.api.{area}" for area in areas.AREAS),
    "chalicelib.api.banks_models", "chalicelib.api.team_models", "chalicelib.api.structured_models",
    "chalicelib.api.openapi", "chalicelib.api.mcp_tools", "chalicelib.api.mcp_protocol",
    # the domain code behind them
    "chalicelib.search.recall", "chalicelib.search.index", "chalicelib.search.analyzers",
    "chalicelib.banks.service", "chalicelib.inject.reload", "chalicelib.inject.service",
    "chalicelib.structured.memories", "chalicelib.team.entries", "chalicelib.team.accept",
    "chalicelib.extraction.job", "chalicelib.extraction.offline",
    "chalicelib.semantic.model",  # the sentence model loads on the first embedding, never at import
    # third-party modules only those need
    "whoosh", "mcp", "tokenizers",
)

_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import app
from pydantic import BaseModel
from chalicelib import patterns
built = sorted(f"{c.__module__}.{c.__qualname__}" for m in list(sys.modules.values())
               if m is not None and m.__name__.startswith("chalicelib")
               for c in vars(m).values()
               if isinstance(c, type) and issubclass(c, BaseModel) and c.__module__ == m.__name__
               and "[" not in c.__qualname__ and c.__pydantic_complete__)
compiled = [p.pattern for p in patterns.PATTERNS if isinstance(p, patterns.Pattern) and p._rx is not None]
print(json.dumps({"modules": sorted(sys.modules), "built": built, "compiled": compiled}))
"""


def _import_app() -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(ROOT)], capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=120)
    got: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def test_import_app_leaves_the_route_areas_and_their_heavy_modules_for_first_use():
    got = _import_app()
    loaded = set(got["modules"])
    assert sorted(m for m in DEFERRED if m in loaded) == []
    # the settings are read at import (logging's level); every model of the service builds on first use
    assert [m for m in got["built"] if not m.startswith(("chalicelib.settings.", "chalicelib.team.limits."))] == []
    assert got["compiled"] == []


def test_every_model_of_the_service_builds_on_first_use():
    for info in pkgutil.walk_packages(chalicelib.__path__, "chalicelib."):
        importlib.import_module(info.name)
    eager = sorted(f"{c.__module__}.{c.__qualname__}" for c in _subclasses(BaseModel)
                   if c.__module__.startswith("chalicelib.") and "[" not in c.__qualname__
                   and not issubclass(c, BaseSettings) and not c.model_config.get("defer_build"))
    assert eager == [], "derive models from chalicelib.validation.Model (or set defer_build)"


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub, *_subclasses(sub)}
    return out


def test_route_table_is_what_the_areas_declare():
    committed = (ROOT / "chalicelib" / "api" / "route_table.py").read_text(encoding="utf-8")
    assert committed == areas.render(areas.table()), "route_table.py is stale: run `make openapi` and commit it"


def test_a_route_whose_module_cannot_load_answers_internal_error_in_the_api_shape():
    from chalice import Chalice
    from chalice.test import Client

    app = Chalice(app_name="probe")
    areas.register(app, (("no_such_area", "/v1/probe", ("GET",), "probe", "error"),
                         ("no_such_area", "/probe-rpc", ("POST",), "probe_rpc", "jsonrpc")))
    with Client(app) as client:
        got = client.http.get("/v1/probe")
        rpc = client.http.post("/probe-rpc", body=b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}',
                               headers={"Content-Type": "application/json"})
    assert got.status_code == 500 and got.json_body["code"] == "internal_error"
    assert got.json_body["details"]["request_id"] == got.headers["X-Request-Id"]
    assert rpc.json_body["id"] == 7 and rpc.json_body["error"]["data"]["code"] == "internal_error"
