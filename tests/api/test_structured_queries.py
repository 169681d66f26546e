"""The admin routes' query strings (parsed by pydantic models in ``api/structured.py``) keep their
codes and messages and their order of checks; the one handle normaliser's lenient mode (the
extraction path) drops exactly what its strict mode (the API) refuses."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chalicelib.banks.records import MAX_HANDLES, normalize_handles
from chalicelib.errors import BadRequest
from tests.api.state import assert_unchanged, dump

ACTION_MSG = "action must be one of ['memory.save', 'memory.update', 'memory.delete']."
TYPE_MSG = "invalid type: x; must be one of ['feedback', 'general', 'reference', 'user']"
SCOPE_MSG = "invalid scope: x; must be one of ['coordinator', 'global', 'project', 'user', 'workstream']"


@pytest.mark.parametrize("path,code,message", [
    ("/v1/api/admin/memories?limit=abc", "validation_error", "limit must be an integer"),
    ("/v1/api/admin/memories?type=x&limit=abc", "invalid_type", TYPE_MSG),
    ("/v1/api/admin/memories?scope=x&limit=abc", "invalid_scope", SCOPE_MSG),
    ("/v1/api/admin/memories/search", "validation_error", "query is required"),
    ("/v1/api/admin/memories/search?q=%20&type=x", "validation_error", "query is required"),
    ("/v1/api/admin/memories/search?q=deploy&type=x&scope=x", "invalid_type", TYPE_MSG),
    ("/v1/api/admin/memories/search?q=deploy&limit=1.5", "validation_error", "limit must be an integer"),
    ("/v1/api/admin/audit?since=x", "validation_error", "since must be an integer (ms since epoch)."),
    ("/v1/api/admin/audit?action=x&since=x", "validation_error", ACTION_MSG),
    ("/v1/api/admin/audit?limit=x", "validation_error", "limit must be an integer"),
])
def test_admin_query_errors_keep_code_message_and_order(api, path, code, message):
    before = dump()
    s, b = api.get(path)
    assert (s, b["code"], b["error"]) == (400, code, message), b
    assert_unchanged(before)


def test_admin_query_limits_are_clamped_not_refused(api):
    for path in ("/v1/api/admin/memories?limit=0", "/v1/api/admin/memories?limit=99999",
                 "/v1/api/admin/memories/search?q=x&limit=-5", "/v1/api/admin/audit?limit=100000&since=-3"):
        s, b = api.get(path)
        assert s == 200, (path, b)


def _accepts(schema, value):
    from jsonschema import Draft202012Validator
    return Draft202012Validator(schema).is_valid(value)


@pytest.mark.parametrize("path,param", [
    ("/v1/api/admin/audit?since=&limit=", "since"),
    ("/v1/api/admin/memories?limit=", "limit"),
    ("/v1/api/workstreams?limit=", "limit"),
    ("/v1/api/memories?limit=", "limit"),
])
def test_an_empty_integer_parameter_reads_as_absent_and_the_document_says_so(api, path, param):
    from chalicelib.api.openapi import document
    s, b = api.get(path)
    assert s == 200, b
    route = path.split("?")[0]
    (schema,) = [p["schema"] for p in document()["paths"][route]["get"]["parameters"] if p["name"] == param]
    assert _accepts(schema, "") and _accepts(schema, 5) and not _accepts(schema, "x")


handles = st.lists(st.one_of(st.text(max_size=70), st.sampled_from(["Tag", " tag ", "a\nb", "x\x00", "k" * 65, ""])),
                   max_size=12)


# a shared, loaded CI machine makes the first draws slow; the property, not the speed, is tested
@settings(derandomize=True, max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(handles)
def test_lenient_handles_drop_only_what_strict_refuses(values):
    lenient = normalize_handles(values, "tags", strict=False)
    assert len(lenient) <= MAX_HANDLES
    assert normalize_handles(lenient, "tags") == lenient  # what the extraction path keeps, the API accepts
    try:
        strict = normalize_handles(values, "tags")
    except BadRequest:
        return
    assert lenient == strict  # input the API accepts is cleaned the same way on both paths
