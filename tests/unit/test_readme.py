"""The README and docs/ stay true and usable: every setting of chalicelib/settings.py is in the
table of docs/configuration.md, no example hard-codes the local API's host and port, and every
relative link leads to a file (and heading) that exists."""

from __future__ import annotations

import re
from pathlib import Path

from chalicelib.settings import ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CONFIGURATION = ROOT / "docs" / "configuration.md"

# the one line that names the local API's address; every example uses $CAIRN_URL
URL_DEFINITION = re.compile(r"^export CAIRN_URL=http://127\.0\.0\.1:8000\b")
LOOPBACK = re.compile(r"\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]):\d+")
# languages of the fenced blocks a reader runs or copies (text blocks show output)
RUNNABLE = {"", "sh", "bash", "shell", "console", "python", "py"}
FENCE = re.compile(r"^(`{3,})([\w+-]*)[^\n]*\n(.*?)^\1[ \t]*$", flags=re.S | re.M)
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def _code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return [(m.group(2).lower(), m.group(3)) for m in FENCE.finditer(text)]


def _commands(body: str) -> list[str]:
    """Logical lines of a shell block: backslash continuations joined."""
    return body.replace("\\\n", " ").splitlines()


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    """Anchors of a markdown text's headings (fenced blocks hold none)."""
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} +(.+?)\s*#*$", FENCE.sub("", text), flags=re.M)}


def _configuration_section() -> str:
    text = CONFIGURATION.read_text()
    match = re.search(r"^## Settings\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert match, "docs/configuration.md has no '## Settings' section"
    return match.group(1)


def test_every_setting_is_documented():
    documented = set(re.findall(r"^\| `(CAIRN_[A-Z0-9_]+)` \|", _configuration_section(), flags=re.M))
    expected = {f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields}
    assert not expected - documented, (
        f"add to the table of docs/configuration.md: {sorted(expected - documented)}")


def test_readme_has_the_two_commands():
    text = README.read_text()
    assert "make run" in text and "make test" in text


def test_readme_defines_cairn_url_once():
    definitions = [line for doc in _documents() for line in doc.read_text().splitlines()
                   if line.startswith("export CAIRN_URL=")]
    assert len(definitions) == 1 and URL_DEFINITION.match(definitions[0]), definitions
    assert definitions[0] in README.read_text(), "define CAIRN_URL in the README's quick start"


def test_no_example_hard_codes_the_api_address():
    """Every runnable example reaches the API through $CAIRN_URL: no loopback host:port in a code
    block but the one definition, and every curl command names $CAIRN_URL."""
    bad = []
    for doc in _documents():
        for lang, body in _code_blocks(doc.read_text()):
            if lang not in RUNNABLE:
                continue
            for line in _commands(body):
                code = line.strip()
                if URL_DEFINITION.match(code):
                    continue
                is_curl = lang not in {"python", "py"} and not code.startswith("#") and re.search(r"\bcurl\b", code)
                if LOOPBACK.search(code) or (is_curl and "$CAIRN_URL" not in code):
                    bad.append(f"{doc.relative_to(ROOT)}: {code}")
    assert not bad, "use $CAIRN_URL in:\n" + "\n".join(bad)


def test_every_relative_link_resolves():
    broken = []
    for doc in _documents():
        for target in LINK.findall(FENCE.sub("", doc.read_text())):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            dest = (doc.parent / path_part).resolve() if path_part else doc
            if not dest.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text()):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_checks_catch_what_they_guard():
    """The helpers the tests above rely on see what they must (a check that cannot fail is none)."""
    sample = "# A\n\n```bash\ncurl -s http://127.0.0.1:8000/v1/me \\\n  -H x\n```\n\n## How recall ranks\n"
    [(lang, body)] = _code_blocks(sample)
    assert lang == "bash" and LOOPBACK.search(_commands(body)[0])
    assert _anchors(sample) == {"a", "how-recall-ranks"}
    assert _slug("Events, health and logs") == "events-health-and-logs"
    assert LINK.findall("see [x](docs/a.md#b) and ![img](i.png)") == ["docs/a.md#b"]
