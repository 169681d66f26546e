"""The match of a recalled memory (``chalicelib.search.match``): names, the combination, levels."""

from __future__ import annotations

import pytest

from chalicelib.search import match


@pytest.mark.parametrize(("query", "want"), [
    ("Who leads Skylark?", ["Skylark"]),
    ("What time zone is Elena Costa in?", ["Elena", "Costa"]),
    ("how many replicas does translation_service run?", ["translation_service"]),
    ("why a cross-platform toolkit?", []),
    ("Is Heron's launch late?", ["Heron"]),
    ("when do we go live?", []),
    ("Which URL shows the metrics?", ["URL"]),  # an acronym too
    ("Kestrel launch date", []),  # a first word is capitalised anyway
    ("fp3910022638d5023e", ["fp3910022638d5023e"]),  # an identifier: letters and digits
    ("which region, eu-west-1?", ["eu-west-1"]),
    ("launch in 2026?", []),  # a number is not a name
])
def test_names_are_capitalised_or_joined_words(query, want):
    assert match.names(query) == want


def test_the_semantic_part_does_not_answer_for_an_unknown_name():
    assert match.combine(0.2, 0.9, False) == 1.0
    assert match.combine(0.2, 0.9, True) == 0.2
    assert match.combine(0.9, 0.9, True) == match.UNKNOWN_CAP
    assert match.combine(0.7, None, False) == 0.7
    assert match.combine(0.0, match.SEM_ZERO, False) == 0.0


def test_levels():
    assert match.level(None) == "none"
    assert match.level(match.STRONG) == "strong"
    assert match.level(match.PARTIAL) == "partial"
    assert match.level(match.PARTIAL - 0.01) == "weak"
