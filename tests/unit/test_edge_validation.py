"""Validation at the edge (chalicelib/validation.py), the rules as units: deep nesting, the universal
rules every JSON value follows and the field rules. The same rules over every route are in
tests/api/test_edge_validation.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def test_nesting_bound_counts_brackets_outside_strings_only():
    from chalicelib.validation import MAX_DEPTH, InvalidInput, loads, nesting_ok

    assert MAX_DEPTH == 64
    assert nesting_ok("[" * 64 + "]" * 64) and not nesting_ok("[" * 65 + "]" * 65)
    assert nesting_ok('{"a": "%s"}' % ("[" * 1000))  # brackets in a string are text
    assert nesting_ok('["\\"[[[", %s]' % ",".join(["[1]"] * 500))  # an escaped quote does not end it
    assert nesting_ok('["unterminated \\' + "[" * 100)  # what follows is inside the string
    assert not nesting_ok('["closed \\\\"' + "[" * 100)  # an escaped backslash does end it
    assert not nesting_ok("[" * 5_000_000)  # linear: no recursion, no quadratic scan
    assert not nesting_ok('"' + '\\"' * 10_000 + "[" * 0 + '"' + "{" * 65)
    assert loads('{"a": [[[1]]]}') == {"a": [[[1]]]}
    with pytest.raises(InvalidInput) as exc:
        loads("]" * 10 + "[" * 100_000)
    assert exc.value.code == "invalid_json"


def _depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        depth += (ch in "[{") - (ch in "]}")
        deepest = max(deepest, depth)
    return deepest


_balanced = st.recursive(st.just(""), lambda inner: st.lists(st.tuples(st.sampled_from("[{"), inner), max_size=3).map(
    lambda parts: "".join(o + body + ("]" if o == "[" else "}") for o, body in parts)), max_leaves=40)


@settings(derandomize=True, max_examples=100, deadline=None, database=None)
@given(_balanced, st.integers(min_value=0, max_value=12), st.data())
def test_nesting_bound_is_exact_on_balanced_text_and_safe_on_prefixes(text, limit, data):
    from chalicelib.validation import nesting_ok
    text = text * 2 + "[" * limit + "]" * limit  # past the fast path (more openers than the limit)
    assert nesting_ok(text, limit) == (_depth(text) <= limit)
    prefix = text[:data.draw(st.integers(min_value=0, max_value=len(text)))]
    if nesting_ok(prefix, limit):  # an unclosed prefix may be refused, never accepted too deep
        assert _depth(prefix) <= limit


@pytest.mark.parametrize("text,field,code", [
    ('{"a": 9007199254740992}', "a", "validation_error"),
    ('{"a": -9007199254740992}', "a", "validation_error"),
    ('{"a": [1, 2, 1%s]}' % ("0" * 5000), "a.2", "validation_error"),
    ('{"a": 1e16}', "a", "validation_error"),
    ('{"a": {"b": NaN}}', "a.b", "invalid_json"),
    ('{"a": "\\u0000"}', "a", "validation_error"),
    ('{"a": ["\\udc00\\ud800"]}', "a.0", "validation_error"),
    ('"\\ud800"', "body", "validation_error"),
    ('{"a": "ok"', "body", "invalid_json"),
])
def test_universal_rules(text, field, code):
    from chalicelib.validation import InvalidInput, loads

    with pytest.raises(InvalidInput) as exc:
        loads(text)
    assert (exc.value.field, exc.value.code) == (field, code)
    assert "\ud800" not in exc.value.message and "\u0000" not in exc.value.message


def test_universal_rules_keep_what_is_valid():
    from chalicelib.validation import MAX_SAFE_INT, loads
    text = '{"i": [%d, -%d, 0, 1.5, -0.0], "s": "\\ud83d\\ude00 \\t\\n \\u0085 \\u001f", "b": true, "n": null}'
    assert loads(text % (MAX_SAFE_INT, MAX_SAFE_INT)) == {
        "i": [MAX_SAFE_INT, -MAX_SAFE_INT, 0, 1.5, -0.0], "s": "\U0001F600 \t\n \u0085 \u001f", "b": True, "n": None}


def test_field_rules():
    from chalicelib.validation import line_problem, text_problem
    for ok in ("plain", "ünïcödé ✓", "tab-free line"):
        assert line_problem(ok) is None
    for bad in ("a\nb", "a\tb", "a\u0085b", "a\u009fb", "a\u007fb", "a\u2028b", "a\u0000b", "a\ud800b"):
        assert line_problem(bad) is not None, repr(bad)
    for ok in ("a\tb\nc\r\n", "a\u0085b", "a\u2028b", "ünïcödé"):
        assert text_problem(ok) is None
    for bad in ("a\u0000b", "a\u0001b", "a\u000bb", "a\u000cb", "a\u001fb", "a\u007fb", "a\udfffb"):
        assert text_problem(bad) is not None, repr(bad)
