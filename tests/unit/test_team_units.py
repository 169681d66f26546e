"""Unit tests of team memory's pure parts: the V1 struct inspection, causal
completeness, the canonical document, DLP findings and the Luhn check."""

from __future__ import annotations

import hashlib

import pytest
from pycrdt import Doc, Text

from chalicelib.team import canonical, dlp, merge


def _edits():
    d = Doc(client_id=7)
    t = d.get("content", type=Text)
    ups = []
    d.observe(lambda e: ups.append(e.update))
    t.insert(0, "hello")
    t.insert(5, " world")
    del t[0:1]
    return ups


def test_inspect_reports_clients_and_deletes():
    ins, follow, delete = _edits()
    assert merge.inspect(ins).clients == {7: (0, 5)}
    assert merge.inspect(follow).clients == {7: (5, 11)}
    assert merge.inspect(delete).deletes == [(7, 0, 1)] and merge.inspect(delete).clients == {}


def test_utf16_units_match_yjs_clocks():
    d = Doc(client_id=3)
    d.get("content", type=Text).insert(0, "a\U0001F600\u00e9")  # 1 + 2 + 1 UTF-16 units
    assert merge.inspect(d.get_update()).clients == {3: (0, 4)}
    assert merge.units(merge.state_vector(d)) == 4


def test_apply_detects_missing_structs_and_deletes():
    ins, follow, delete = _edits()
    with pytest.raises(merge.MissingDependency) as exc:
        merge.apply([], follow)
    assert exc.value.details == {"stateVector": "AA=="}
    with pytest.raises(merge.MissingDependency):
        merge.apply([], delete)
    assert merge.apply([ins, follow], delete).text == "ello world"


def test_canonical_document_form_and_hash():
    doc = canonical.document(kind="note", title="T\u00e9", supersedes=None, links=["https://a.example/x"], text="x\ny")
    raw = canonical.serialize(doc)
    assert raw == '{"kind":"note","links":["https://a.example/x"],"supersedes":null,"text":"x\\ny","title":"Té","v":1}'.encode()
    assert canonical.sha256_hex(doc) == hashlib.sha256(raw).hexdigest()


@pytest.mark.parametrize("text,kinds", [
    ("key AKIAIOSFODNN7EXAMPLE secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ["aws_key", "token"]),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
     ["private_key"]),
    ("the deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789 ok", ["token"]),
    ("the api token is 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c please", ["token"]),
    ("slack xoxb-123456789012-1234567890123-abcdefghijABCDEFGHIJklmn here", ["token"]),
    ("write to jane.doe+ops@example.co.uk", ["email"]),
    ("call +1 (415) 555-0132 today", ["phone"]),
    ("card 4242-4242-4242-4242 on file", ["payment_card"]),
    ("card 4242 4242 4242 4241 is not valid Luhn", []),
    ("We chose Postgres 16.2 on 2026-11-29; p99 120 ms; see https://example.com/adr/0001-use-postgres.html", []),
])
def test_dlp_findings(text, kinds):
    redacted, found = dlp.gated(text)
    assert found == kinds
    for k in kinds:
        assert f"[REDACTED:{k}]" in redacted


def test_dlp_policy_enforcement_names_kinds_never_values():
    dlp.enforce("redact", ["token"])
    with pytest.raises(dlp.DlpBlocked) as exc:
        dlp.enforce("block_source", ["email", "token"])
    assert exc.value.details == {"policy": "block_source", "kinds": ["email", "token"]}


def test_luhn():
    assert dlp.luhn_ok("4111111111111111") and not dlp.luhn_ok("4111111111111112")
