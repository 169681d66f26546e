"""The console's files: no HTML is ever built from strings, nothing runs inline, every URL is
relative (so the page works under a stage prefix), and the vendored jsdiff is the locked npm
package, with its license."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "chalicelib" / "console"
OURS = sorted(p for p in STATIC.glob("*.js") if p.name != "diff.min.js")
NODE = ROOT / "tests" / "node"

FORBIDDEN_JS = ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                "setAttribute(\"on", "setAttribute('on", "srcdoc", "createContextualFragment", "DOMParser",
                "localStorage", "document.cookie", "setTimeout(\"", "javascript:")


def test_the_console_has_its_modules():
    assert {p.name for p in OURS} >= {"app.js", "api.js", "dom.js", "banks.js", "team.js", "admin.js"}


@pytest.mark.parametrize("path", OURS, ids=lambda p: p.name)
def test_no_script_builds_html_from_strings_or_reaches_for_an_absolute_url(path):
    text = path.read_text(encoding="utf-8")
    for bad in FORBIDDEN_JS:
        assert bad not in text, f"{path.name} uses {bad}"
    # API calls are relative: "v1/..." or "api/v1/...", never "/v1" or "/api"
    assert not re.search(r"""["'`]/(v1|api|console)\b""", text), path.name
    assert not re.search(r"https?://", text), path.name


def test_the_page_runs_nothing_inline_and_links_relatively():
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"<script(?![^>]*\bsrc=)", html), "inline script"
    assert not re.search(r"\son[a-z]+\s*=", html, re.I), "inline handler"
    assert "style=" not in html and "<style" not in html
    for url in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert url.startswith("console/") or url == "#main", url


def test_vendored_jsdiff_is_the_locked_package_with_its_license():
    lock = json.loads((NODE / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/diff"]["version"] == json.loads((NODE / "package.json").read_text())[
        "dependencies"]["diff"]
    assert "Copyright" in (STATIC / "diff.LICENSE").read_text() and "BSD" in (STATIC / "diff.LICENSE").read_text()
    installed = NODE / "node_modules" / "diff"
    if not installed.is_dir():
        pytest.skip("tests/node/node_modules not installed (npm ci in tests/node)")
    assert json.loads((installed / "package.json").read_text())["version"] == lock["packages"]["node_modules/diff"][
        "version"]
    assert (STATIC / "diff.min.js").read_bytes() == (installed / "dist" / "diff.min.js").read_bytes()
    assert (STATIC / "diff.LICENSE").read_bytes() == (installed / "LICENSE").read_bytes()
