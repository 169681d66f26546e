"""The structured-memory name normaliser (Turnstone's), as a unit."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("raw,norm", [("Café", "cafe"), ("  Hello   World ", "hello_world"), ("a-b\u2014c", "a_b_c"),
                                      ("Straße", "strasse"), ("ÆON", "aeon"), ("naïve-Ø", "naive_o"),
                                      ("cafe\u0301", "cafe"), ("x" * 256, "x" * 256)])
def test_name_normalizer_matches_turnstone(raw, norm):
    from chalicelib.structured.names import normalize_name
    assert normalize_name(raw) == norm


@pytest.mark.parametrize("raw", ["", "   ", "a\tb", "a__b", "_a", "a_", "a.b", "Ωmega", "x" * 257, None, 5])
def test_name_normalizer_rejects(raw):
    from chalicelib.errors import BadRequest
    from chalicelib.structured.names import normalize_name
    with pytest.raises(BadRequest) as exc:
        normalize_name(raw)
    assert exc.value.code == "invalid_name" and exc.value.status == 400
