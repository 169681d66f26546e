"""What a newcomer meets first: the README's quick start and client sections, and make's output."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def test_the_python_client_section_says_how_to_install_it():
    assert "pip install ./clients/python" in _section("Python client")


def test_the_first_make_run_is_announced_not_silent():
    """The first run installs for minutes: the README says so and make prints a line first."""
    assert re.search(r"first `make run` installs the dependencies.*minutes", _section("Quick start"), re.S)
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    lines = [x.strip() for x in recipe.splitlines()[1:]]
    assert lines[0].startswith('@echo "make venv: installing') and "pip install" in lines[1]


def test_the_recall_example_shows_only_signals_a_default_response_has():
    """The response's signals are tests/api/test_readme_recall.py's business; here the example's
    keys are read from the README so both use the same parse."""
    assert set(example_signals()) == {"bm25", "entity", "corroboration", "pinned", "recency", "time", "neighbour",
                                      "semantic"}


def example_signals() -> list[str]:
    """The signal names in the quick start's recall example."""
    block = _section("Quick start")
    m = re.search(r'"signals": \{(.*?)\}', block, re.S)
    assert m, "no recall example with signals in the quick start"
    return re.findall(r'"(\w+)":', m.group(1))
