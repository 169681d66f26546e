"""The launcher's response check (``infra.local.contract``) on bodies that are not JSON."""

from __future__ import annotations

from infra.local.contract import ResponseContract

DOC = {
    "openapi": "3.1.0",
    "paths": {"/export": {"get": {"responses": {"200": {
        "description": "ndjson or a link",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}},
                    "application/json": {"schema": {"type": "object", "required": ["url"],
                                                    "properties": {"url": {"type": "string"}}}}}}}}}},
}


def test_ndjson_body_is_not_parsed_as_json():
    """Two JSON lines are a valid ndjson body, not a broken JSON one."""
    body = b'{"id": "a"}\n{"id": "b"}\n'
    assert ResponseContract(DOC).check("GET", "/export", 200, {"Content-Type": "application/x-ndjson"}, body) == []


def test_json_body_of_the_same_status_is_still_checked():
    problems = ResponseContract(DOC).check("GET", "/export", 200, {"Content-Type": "application/json"}, b'{"u": 1}')
    assert problems and "url" in problems[0]
