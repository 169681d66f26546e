"""The repository explains itself: no comment, docstring or document in it points to a planning
item or to a document kept outside the repository. The same search as
``grep -rniE '<pattern>' <paths>`` (case-insensitive), walked in Python; the pattern is built from
parts so that this file does not match it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# what is searched; a path that does not exist is skipped
SEARCHED = ("chalicelib", "infra", "tests", "bench", "clients", "app.py", "README.md", "docs", "ARCHITECTURE.md",
            "Makefile", ".ci")
SKIPPED_DIRS = {"node_modules", ".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
SKIPPED_PATHS = ("bench/results",)

_DIGIT = "[0-9]"
PATTERN = re.compile(
    "|".join(
        [
            "iss" + "ue " + _DIGIT,  # a planning issue
            "it" + "em " + _DIGIT,  # a planning item
            "DES" + r"IGN\.md",  # the design map kept outside the repository
            "STACK" + "-NOTES",  # the notes on our libraries kept outside the repository
        ]
    ),
    re.IGNORECASE,
)


def _is_binary(data: bytes) -> bool:
    """grep's rule: a NUL byte in the file makes it binary (also anything that is not UTF-8)."""
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _files() -> Iterator[Path]:
    for name in SEARCHED:
        top = ROOT / name
        if top.is_file():
            yield top
        elif top.is_dir():
            for here, dirs, files in os.walk(top):
                base = Path(here)
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS
                                 and (base / d).relative_to(ROOT).as_posix() not in SKIPPED_PATHS)
                yield from (base / f for f in sorted(files))


def matches(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of ``text`` the pattern matches."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if PATTERN.search(line)]


def test_no_reference_to_planning_items_or_outside_documents():
    found: list[str] = []
    searched = 0
    for path in _files():
        data = path.read_bytes()
        if _is_binary(data):
            continue
        searched += 1
        rel = path.relative_to(ROOT).as_posix()
        found.extend(f"  {rel}:{n}: {line[:160]}" for n, line in matches(data.decode("utf-8")))
    assert searched > 50, f"only {searched} text files searched: is the walk broken?"
    print(f"references to planning items or outside documents: {len(found)}")
    if found:
        pytest.fail(f"{len(found)} line(s) cite a planning item or an outside document:\n" + "\n".join(found),
                    pytrace=False)


@pytest.mark.parametrize(
    "line",
    [
        "# see Iss" + "ue 6, it" + "em 1",
        "(is" + "sue 12)",
        "item" + " 4: the cap",
        "the map in " + "des" + "ign.MD",
        "../shared/" + "stack" + "-notes.md",
    ],
)
def test_the_pattern_finds_each_kind_of_reference(line):
    assert matches(line), line


@pytest.mark.parametrize("line", ["issues are tracked elsewhere", "an item of the list", "the design"])
def test_the_pattern_leaves_ordinary_words_alone(line):
    assert not matches(line)


def test_this_file_does_not_match_its_own_pattern():
    assert matches(Path(__file__).read_text(encoding="utf-8")) == []
