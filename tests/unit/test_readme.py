"""README.md's Configuration table names every setting of chalicelib/settings.py."""

from __future__ import annotations

import re
from pathlib import Path

from chalicelib.settings import ENV_PREFIX, Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def _configuration_section() -> str:
    text = README.read_text()
    match = re.search(r"^## Configuration\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert match, "README.md has no '## Configuration' section"
    return match.group(1)


def test_every_setting_is_documented():
    documented = set(re.findall(r"^\| `(CAIRN_[A-Z0-9_]+)` \|", _configuration_section(), flags=re.M))
    expected = {f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields}
    assert not expected - documented, f"add to README.md's Configuration table: {sorted(expected - documented)}"


def test_readme_has_the_two_commands():
    text = README.read_text()
    assert "make run" in text and "make test" in text
