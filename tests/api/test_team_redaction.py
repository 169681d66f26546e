"""Redaction is idempotent: a text scanned again after redaction reads the same.

The projection an accepted entry keeps is the redacted text, and every read passes DLP again, so
a second scan must leave each ``[REDACTED:<kind>]`` marker as it is (it found ``password]`` in
``[REDACTED:password]`` and served ``[REDACTED:password]]``: a false diff after accepting).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.team import dlp
from tests.api.team_support import MEM, World

FORMS = ["Connect with password: hunter2x please.", "The password is hunter2x for staging.",
         "db password=hunter2x", 'PGPASSWORD=s3cr3t psql -h db', 'password="hunter2x"',
         "Mail bob@example.com or call +1 415 555 0100.", "key AKIAIOSFODNN7EXAMPLE and card 4111 1111 1111 1111"]


@pytest.fixture
def world(api):
    return World(api)


@pytest.mark.parametrize("text", FORMS)
def test_the_accepted_revision_reads_as_the_entry_it_accepted(world, text):
    e = world.create(title="Credentials note")
    world.write_text("alice", e["id"], text)
    reviewed = world.entry("bob", e["id"])
    assert world.accept("bob", e["id"], reviewed["documentSha256"])[0] == 200
    entry = world.entry("reader", e["id"])
    st, accepted = world.call("reader", "GET", f"{MEM}/entries/{e['id']}/accepted")
    assert st == 200, accepted
    assert accepted["text"] == entry["text"] == reviewed["text"], (entry["text"], accepted["text"])
    assert accepted["dlpFindings"] == entry["dlpFindings"] and "]]" not in accepted["text"]


_FRAGMENTS = ["password", "passwd", " is ", ": ", "=", '"', "'", " ", "\n", "hunter2x", "s3cr3t", "PGPASSWORD",
              "bob@example.com", "+1 415 555 0100", "4111 1111 1111 1111", "AKIAIOSFODNN7EXAMPLE", "x", ".", "]",
              "[", "[REDACTED:password]", "[REDACTED:email]", "REDACTED", "api_key", "ghp_" + "a" * 36]


def _is_subsequence(first: list[str], second: list[str]) -> bool:
    rest = iter(second)
    return all(any(m == n for n in rest) for m in first)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=10).map("".join))
def test_scanning_a_redacted_text_again_keeps_every_marker_whole(text):
    """Each marker of the first pass is found again, whole and in order, as a finding of its kind
    (a second pass may still find more where a marker changed what borders a word)."""
    redacted, kinds = dlp.gated(text)
    again, kinds_again = dlp.gated(redacted)
    first = [m.group() for m in dlp._MARKER.finditer(redacted)]
    assert _is_subsequence(first, [m.group() for m in dlp._MARKER.finditer(again)]), (redacted, again)
    assert set(kinds) <= set(kinds_again)


@pytest.mark.parametrize("text", FORMS)
def test_a_redacted_form_scans_to_itself(text):
    redacted, kinds = dlp.gated(text)
    assert "[REDACTED:" in redacted and dlp.gated(redacted) == (redacted, kinds)
