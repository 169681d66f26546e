"""Fingerprint ids: FNV-1a 64 over the whitespace-collapsed, lower-cased text."""

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chalicelib.fingerprint import (
    FINGERPRINT_RE,
    WHITE_SPACE,
    collapse_whitespace,
    fingerprint,
    fnv1a64,
    normalize_text,
)


def test_issue_vectors():
    assert fingerprint("User prefers  short   names") == "fp37dab55090b26303"
    assert fingerprint("user prefers short names") == "fp37dab55090b26303"


def test_fnv1a64_reference_values():
    # the published FNV-1a 64 test values
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8


@pytest.mark.parametrize("sep", ["\u001c", "\u001d", "\u001e", "\u001f"])
def test_information_separators_are_not_whitespace(sep):
    text = f"user{sep}prefers short names"
    assert sep.isspace()  # what Python believes, and why str.split() is wrong here
    assert normalize_text(text) == text
    assert fingerprint(text) != fingerprint("user prefers short names")
    assert fingerprint(f"  {sep} x y ") == fingerprint(f"{sep} X Y")  # kept, and not trimmed


@pytest.mark.parametrize("ws", ["\u00a0", "\u0085", "\u2028", "\u3000", "\t", "\r\n", "\u202f"])
def test_unicode_white_space_collapses(ws):
    assert fingerprint(f"{ws}user{ws}prefers{ws}{ws}short names{ws}") == "fp37dab55090b26303"


def test_id_shape_and_utf8():
    fp = fingerprint("Ünïcödé text ✓")
    assert re.fullmatch(r"fp[0-9a-f]{16}", fp)
    assert fp == "fp%016x" % fnv1a64("ünïcödé text ✓".encode())


_ws_run = st.text(alphabet=st.sampled_from(list(WHITE_SPACE)), min_size=1, max_size=4)


def _respell(text: str, data) -> str:
    """``text`` with every whitespace run replaced by another run and random letters upper-cased."""
    parts = re.split("([" + re.escape(WHITE_SPACE) + "]+)", text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(data.draw(_ws_run))
        else:
            out.append("".join(c.upper() if len(c.upper()) == 1 and data.draw(st.booleans()) else c for c in part))
    if data.draw(st.booleans()):
        out.insert(0, data.draw(_ws_run))
    if data.draw(st.booleans()):
        out.append(data.draw(_ws_run))
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40), data=st.data())
def test_equal_after_collapse_and_lower_share_an_id(text, data):
    """Any two texts equal after whitespace collapse and lower-casing share an id."""
    other = _respell(text, data)
    assume(collapse_whitespace(text).lower() == collapse_whitespace(other).lower())
    assert fingerprint(text) == fingerprint(other)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_fingerprint_is_a_function_of_the_normalized_text(text):
    assert fingerprint(text) == fingerprint(normalize_text(text))
    assert fingerprint(text) == fingerprint(" " + text.replace(" ", " \u00a0\t") + "\u0085")


def test_variant_ids_hash_the_normalized_text_nul_and_k():
    from chalicelib.fingerprint import fingerprint_variant
    assert fingerprint_variant("  Hello\tWORLD ", 2) == f"fp{fnv1a64(b'hello world' + bytes([0]) + b'2'):016x}"
    ids = {fingerprint("hello world")} | {fingerprint_variant("hello world", k) for k in range(1, 50)}
    assert len(ids) == 50 and all(FINGERPRINT_RE.fullmatch(i) for i in ids)
