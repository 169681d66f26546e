"""The Python client (clients/python) without a server: its generated modules match openapi.json,
every operation has a method, errors map by status, the retry policy's waits, and no runtime import
of the service's code."""

from __future__ import annotations

import email.utils
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import cairn_client
import httpx
import pytest
from cairn_client import AsyncCairn, Cairn, CairnError, RetryPolicy, errors
from cairn_client._core import retry_after

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
GENERATED = ("models.py", "_operations.py", "_responses.py", "_sync_client.py")


def _documented_operations() -> set[str]:
    doc = json.loads((ROOT / "openapi.json").read_text())
    return {op["operationId"] for item in doc["paths"].values() for m, op in item.items()
            if m in ("get", "put", "post", "delete", "patch", "head", "options")}


def test_generated_modules_match_openapi_json(tmp_path):
    """`make client` output is committed: regenerating from openapi.json changes nothing."""
    subprocess.run([sys.executable, str(CLIENT / "scripts" / "generate.py"), "--out", str(tmp_path)], check=True)
    stale = [name for name in GENERATED
             if (tmp_path / name).read_text() != (CLIENT / "cairn_client" / name).read_text()]
    assert not stale, f"run `make client`: {stale} differ from what openapi.json generates"


def test_every_operation_of_the_document_has_a_client_method():
    methods = Cairn.operation_methods()
    missing = _documented_operations() - set(methods)
    assert not missing, f"add a client method (clients/python/cairn_client/_async_client.py) for {sorted(missing)}"
    assert set(methods) <= _documented_operations(), "a client method calls an operation the document lacks"
    assert AsyncCairn.operation_methods() == methods
    assert len(set(methods.values())) == len(methods)  # one method per operation
    assert methods["save_memory"] == "memories.save" and methods["health"] == "health"


def _named_responses(operations_py: str) -> set[str]:
    return set(re.findall(r'\d{3}: "(\w+)"', operations_py))


def test_every_named_success_schema_is_parsed_into_its_model(tmp_path):
    """A response component maps to the class datamodel-code-generator makes of it, so the client
    parses it into that model instead of falling back to plain JSON: in the committed modules, and
    for component names the generator has to rewrite (``Page_Item_``, ``list``, ``Item-Out``)."""
    committed = CLIENT / "cairn_client"
    classes = set(re.findall(r"^class (\w+)\(", (committed / "models.py").read_text(), flags=re.M))
    assert _named_responses((committed / "_operations.py").read_text()) <= classes

    doc = json.loads((ROOT / "openapi.json").read_text())
    item = {"type": "object", "properties": {"id": {"type": "string"}}, "title": "Item"}
    awkward = {"Page_Item_": {"type": "object", "title": "Page[Item]", "properties": {
        "items": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}}}, "list": item, "Item-Out": item}
    doc["components"]["schemas"].update({"Item": item, **awkward})
    for (path, method), name in zip([("/v1/banks", "get"), ("/v1/me", "get"), ("/v1/health", "get")], awkward,
                                    strict=True):
        doc["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"] = {
            "$ref": f"#/components/schemas/{name}"}
    (tmp_path / "openapi.json").write_text(json.dumps(doc))
    out = tmp_path / "gen"
    subprocess.run([sys.executable, str(CLIENT / "scripts" / "generate.py"),
                    "--openapi", str(tmp_path / "openapi.json"), "--out", str(out)], check=True)
    classes = set(re.findall(r"^class (\w+)\(", (out / "models.py").read_text(), flags=re.M))
    named = _named_responses((out / "_operations.py").read_text())
    assert {"PageItem", "List", "ItemOut"} <= named <= classes, sorted(named - classes)
    assert "ListBanks: TypeAlias = models.PageItem" in (out / "_responses.py").read_text()


def test_each_method_is_annotated_with_its_operations_success_type():
    """A method returns ``_responses.<CamelCaseOperationId>`` (the document's model once it names one)."""
    from cairn_client import _responses

    for cls in (Cairn, AsyncCairn):
        client = cls("http://127.0.0.1:9")
        for op_id, dotted in cls.operation_methods().items():
            owner: object = client
            *surfaces, name = dotted.split(".")
            for surface in surfaces:
                owner = getattr(owner, surface)
            returns = getattr(type(owner), name).__annotations__["return"]
            camel = "".join(part.capitalize() for part in op_id.split("_"))
            assert hasattr(_responses, camel)
            assert returns == ("bytes | int" if op_id == "export_bank" else f"r.{camel}"), (dotted, returns)


def test_only_keyed_operations_carry_an_idempotency_key():
    from cairn_client._operations import OPERATIONS
    assert {op_id for op_id, op in OPERATIONS.items() if op.keyed} == {"save_memory"}


@pytest.mark.parametrize(("status", "cls"), [
    (400, errors.BadRequest), (401, errors.Unauthorized), (403, errors.Forbidden), (404, errors.NotFound),
    (409, errors.Conflict), (413, errors.PayloadTooLarge), (415, errors.UnsupportedMediaType),
    (422, errors.Unprocessable), (429, errors.RateLimited), (500, errors.ServerError),
    (503, errors.ServiceUnavailable), (418, CairnError), (502, CairnError)])
def test_each_status_maps_to_its_class_with_the_envelope(status, cls):
    response = httpx.Response(status, headers={"X-Request-Id": "req-1"},
                              json={"error": "Nope.", "code": "some_code", "details": {"field": "x"}})
    err = errors.from_response(response)
    assert type(err) is cls and isinstance(err, CairnError)
    assert (err.status, err.code, err.message, err.details, err.request_id) == (
        status, "some_code", "Nope.", {"field": "x"}, "req-1")


def test_an_error_without_the_envelope_keeps_its_text():
    err = errors.from_response(httpx.Response(502, text="<html>Bad gateway</html>"))
    assert (err.status, err.code, err.message, err.request_id) == (502, None, "<html>Bad gateway</html>", None)


def test_retry_after_in_seconds_or_as_a_date_and_capped():
    assert retry_after(httpx.Response(503, headers={"Retry-After": "3"})) == 3.0
    assert retry_after(httpx.Response(503)) is None
    assert retry_after(httpx.Response(503, headers={"Retry-After": "soon"})) is None
    later = email.utils.formatdate(time.time() + 120, usegmt=True)
    assert 100 < (retry_after(httpx.Response(503, headers={"Retry-After": later})) or 0) <= 120
    policy = RetryPolicy(max_retry_after=10)
    assert policy.delay(0, httpx.Response(429, headers={"Retry-After": "3600"})) == 10


def test_backoff_doubles_within_its_jitter_and_stops_at_the_cap():
    policy = RetryPolicy(backoff=1.0, max_backoff=4.0)
    for attempt, cap in ((0, 1.0), (1, 2.0), (2, 4.0), (5, 4.0)):
        waits = [policy.delay(attempt, None) for _ in range(50)]
        assert all(cap / 2 <= w <= cap for w in waits), (attempt, waits)
        assert len(set(waits)) > 1  # jittered


def test_the_client_imports_nothing_of_the_service():
    code = "import sys, cairn_client; assert not [m for m in sys.modules if m.startswith('chalicelib')]"
    subprocess.run([sys.executable, "-c", code], check=True)
    sources = "".join(p.read_text() for p in (CLIENT / "cairn_client").glob("*.py"))
    assert "chalicelib" not in sources
    assert cairn_client.__all__ and "Cairn" in cairn_client.__all__


def test_base_url_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("CAIRN_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("CAIRN_TOKEN", "cairn_x")
    with Cairn() as c:
        assert (c._t.base_url, c._t.token) == ("http://127.0.0.1:9", "cairn_x")
    monkeypatch.delenv("CAIRN_URL")
    with pytest.raises(ValueError, match="CAIRN_URL"):
        Cairn()


def test_listing_fields_are_read_from_models_by_their_wire_name():
    """Iterators read a page's list and cursor by wire name, from JSON or from a generated model
    (which renames a keyword field: ``from`` -> ``from_`` with an alias)."""
    from typing import Annotated

    from cairn_client._core import as_data, field_of
    from pydantic import BaseModel, ConfigDict, Field

    class Item(BaseModel):
        model_config = ConfigDict(extra="allow")
        from_: Annotated[str | None, Field(alias="from")] = None

    item = Item.model_validate({"from": "x", "later": 1})
    assert (field_of(item, "from"), field_of(item, "later"), field_of(item, "absent")) == ("x", 1, None)
    assert field_of({"next_cursor": "c"}, "next_cursor") == "c"
    assert as_data(item) == {"from": "x", "later": 1}


def test_answers_without_a_model_read_by_key_and_by_attribute():
    from cairn_client._core import Op, parse

    got = parse(Op("POST", "/v1/banks/{bank}/memories", {201: None}),
                httpx.Response(201, json={"created": True, "memory": {"id": "m1", "tags": [{"tag": "a"}]}}))
    assert got.memory.id == got["memory"]["id"] == "m1" and got.memory.tags[0].tag == "a"
    assert got == {"created": True, "memory": {"id": "m1", "tags": [{"tag": "a"}]}}
    with pytest.raises(AttributeError):
        _ = got.missing
    assert parse(Op("GET", "/x", {200: None}), httpx.Response(200, content=b"a\n", headers={
        "Content-Type": "application/x-ndjson"})) == b"a\n"


@pytest.mark.parametrize("token", ["cairn_x\ny", "cairn_x\n", "cairn_tökén", "cairn x", "\tcairn_x"])
@pytest.mark.parametrize("cls", [Cairn, AsyncCairn])
def test_a_token_that_cannot_go_in_a_header_is_refused_at_construction(monkeypatch, cls, token):
    with pytest.raises(ValueError, match="token") as err:
        cls("http://127.0.0.1:9", token)
    assert "printable ASCII" in str(err.value) and token.strip() not in str(err.value)  # a secret is not echoed
    monkeypatch.setenv("CAIRN_TOKEN", token)
    with pytest.raises(ValueError, match="CAIRN_TOKEN"):
        cls("http://127.0.0.1:9")


def test_a_body_that_cannot_be_encoded_is_a_value_error_and_nothing_is_sent():
    import asyncio

    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(400, json={"error": "Seen.", "code": "validation_error"})

    with Cairn("http://cairn.test", "cairn_x", transport=httpx.MockTransport(answer)) as c:
        with pytest.raises(ValueError, match="lone surrogate") as err:
            c.memories.save("main", "a\ud800b")
        assert not isinstance(err.value, UnicodeError)
        assert seen == []
        with pytest.raises(errors.BadRequest):  # any other text goes as UTF-8 JSON, as before
            c.memories.save("main", "Café ☕")
    [sent] = seen
    assert sent.headers["content-type"] == "application/json"
    assert json.loads(sent.content)["text"] == "Café ☕" and "Café ☕".encode() in sent.content

    async def run() -> None:
        async def aanswer(request: httpx.Request) -> httpx.Response:
            return answer(request)

        async with AsyncCairn("http://cairn.test", "cairn_x", transport=httpx.MockTransport(aanswer)) as c:
            with pytest.raises(ValueError, match="lone surrogate"):
                await c.memories.save("main", "a\udfffb")

    asyncio.run(run())
    assert len(seen) == 1
