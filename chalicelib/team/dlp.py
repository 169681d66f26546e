"""Data-loss prevention: at accept, and on every read that serves an entry's title or text.

Findings come from two sources:

- **detect-secrets** (Yelp), run line by line with the plugins in ``PLUGINS``: AWS access key ids
  (``AWSKeyDetector``) and the 40-character secret key beside them (``Base64HighEntropyString``
  at entropy 4.3: an AWS key *pair* is caught whole), PEM private keys (``PrivateKeyDetector``;
  the finding is widened to the whole ``BEGIN .. END`` block), provider tokens (GitHub, GitLab,
  Slack, Stripe, npm, PyPI, OpenAI, Twilio, SendGrid, JWT) and unquoted high-entropy tokens in
  prose (entropy plugins in eager, non-quoted mode: a token after "the token is" is caught).
  A finding is widened to the whitespace-delimited word that contains it, so ``ghp_...`` is
  removed whole, not just its prefix. ``KeywordDetector`` reads each line as a YAML file would
  be read (``password: X``, ``password=X``, ``PGPASSWORD=X``); as plain text it only sees quoted
  assignments.
- **one prose rule** of our own (``PROSE_PASSWORD``): "the password is X", "password for the
  db was X", "passphrase: X" in a sentence; the value is the word after the verb unless it is an
  ordinary word of the sentence ("the password is stored in the vault" finds nothing).
- **patterns** for personal data: e-mail addresses, phone numbers (E.164 or grouped national
  forms with 7 to 15 digits) and payment card numbers (13 to 19 digits, spaces or dashes allowed,
  that pass the Luhn check).

``scan(text)`` returns the findings (kind + span; values never leave this module except as spans
into the caller's own text); ``redact(text, findings)`` replaces each with ``[REDACTED:<kind>]``.
Policies: ``redact`` indexes the redacted text; ``drop`` and ``block_source`` refuse the accept
(422 ``dlp_blocked`` naming the kinds found, never the values).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .. import patterns
from ..errors import Unprocessable

POLICIES = ("redact", "drop", "block_source")

PLUGINS: list[dict[str, Any]] = [
    {"name": "AWSKeyDetector"}, {"name": "PrivateKeyDetector"}, {"name": "GitHubTokenDetector"},
    {"name": "GitLabTokenDetector"}, {"name": "SlackDetector"}, {"name": "StripeDetector"},
    {"name": "NpmDetector"}, {"name": "PypiTokenDetector"}, {"name": "OpenAIDetector"},
    {"name": "TwilioKeyDetector"}, {"name": "SendGridDetector"}, {"name": "JwtTokenDetector"},
    {"name": "BasicAuthDetector"}, {"name": "KeywordDetector"},
    {"name": "Base64HighEntropyString", "limit": 4.3}, {"name": "HexHighEntropyString", "limit": 3.0},
]

_KIND_OF_TYPE = {"AWS Access Key": "aws_key", "Private Key": "private_key", "Base64 High Entropy String": "token",
                 "Hex High Entropy String": "token", "Secret Keyword": "password", "Basic Auth Credentials": "password"}

# The personal-data patterns, in RE2 (``patterns``): a look-around of the old stdlib patterns is
# context matched outside the group ``hit`` (read with ``hits``), with Python's Unicode classes.
_W, _S, _D = patterns.WORD, patterns.SPACE, patterns.DIGIT
EMAIL = patterns.compile(rf"(?:^|[^{_W}.+-])(?P<hit>[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
                         rf"\.[A-Za-z]{{2,}}){patterns.AFTER_WORD}")
PHONE = patterns.compile(rf"(?:^|[^{_W}+])(?P<hit>(?:\+[{_D}]{{1,3}}[ .-]?)?(?:\([{_D}]{{1,4}}\)[ .-]?)?"
                         rf"[{_D}]{{2,4}}(?:[ .-][{_D}]{{2,4}}){{1,4}}|\+[{_D}]{{7,15}}){patterns.AFTER_WORD}")
CARD = patterns.compile(rf"(?:^|[^{_D}])(?P<hit>(?:[{_D}][ -]?){{12,18}}[{_D}])(?:$|[^{_D}])")
PEM = patterns.compile(r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
                       r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)")
_MARKER = patterns.compile(r"\[REDACTED:(?P<kind>aws_key|private_key|token|password|email|phone|payment_card)\]")
_DATE_OR_VERSION = patterns.compile(rf"[{_D}]{{4}}-[{_D}]{{2}}-[{_D}]{{2}}|[{_D}]+(?:\.[{_D}]+){{1,3}}")
_WORD_TRIM = ".,;:!?)]}>\"'"
# "the password is X" / "db passwd for staging was X" / "passphrase: X"
# (the word boundary after the keyword is implied: a space, ":" or "=" must follow it)
PROSE_PASSWORD = patterns.compile(
    rf"(?i){patterns.BEFORE_WORD}(?:pass(?:word|wd|phrase)|pwd)s?(?:[{_S}]+(?:for|of|on|to)[{_S}]+(?:the[{_S}]+)?"
    rf"[{_W}.@/:-]+){{0,2}}[{_S}]*(?:\b(?:is|was|are)\b|[:=])[{_S}]*[\"'`]?(?P<value>[^{_S}\"'`]+)")
# words that follow "the password is" in ordinary sentences, never a password themselves
_PROSE_WORDS = frozenset([
    "a", "an", "the", "in", "on", "at", "of", "to", "for", "by", "with", "from", "not", "now", "still",
    "also", "never", "always", "stored", "kept", "saved", "held", "set", "reset", "changed", "rotated",
    "managed", "shared", "expired", "required", "needed", "missing", "empty", "blank", "wrong", "correct",
    "same", "different", "unknown", "secret", "private", "written", "listed", "located", "available",
    "being", "been", "rotating", "changing", "under", "per", "our", "your", "their", "its", "this", "that"
])


class DlpBlocked(Unprocessable):
    """422 ``dlp_blocked``: ``details.kinds`` lists what was found (never the values)."""

    code = "dlp_blocked"


@dataclass(frozen=True)
class Finding:
    """One finding: ``kind`` (aws_key, private_key, token, password, email, phone, payment_card)
    and the character span ``[start, end)`` in the scanned text."""

    kind: str
    start: int
    end: int


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum of a digit string (payment card numbers)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


@lru_cache(maxsize=1)
def _plugins():
    """The detect-secrets plugins of ``PLUGINS`` (but ``KeywordDetector``: ``_keywords``), each
    regex-based plugin's patterns recompiled by RE2 (its own are Python's: some scan a long line in
    quadratic time, ``//`` repeated or ``eyJ`` repeated)."""
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.settings import get_plugins, transient_settings
    with transient_settings({"plugins_used": [p for p in PLUGINS if p.get("name") != "KeywordDetector"],
                             "filters_used": []}):
        plugins = tuple(get_plugins())
    for plugin in plugins:
        if isinstance(plugin, RegexBasedDetector):
            plugin.denylist = [patterns.from_stdlib(r) for r in plugin.denylist]  # type: ignore[misc]  # typed read-only; a class list
    return plugins


@lru_cache(maxsize=1)
def _keywords() -> list[patterns.Pattern]:
    """detect-secrets' ``KeywordDetector`` for config files (``password: X``, ``password=X``,
    ``"X" == password``, ``password "X";``), its four patterns rewritten for RE2 from its own word
    list and flags: its look-aheads folded into the secret's first character, its quote
    back-reference spelled out per quote. The secret is the first group that matched."""
    from detect_secrets.plugins.keyword import DENYLIST
    deny = f"(?:{'|'.join(DENYLIST)})[{_W}]*"
    closing, ws = "[\\]'\"]{0,2}", f"[{_S}]*"

    def secret(n: int) -> str:
        return f"(?P<s{n}>[{_W}](?:[^\\v'\"]*[^\\v,'\"`])?)"

    def quoted(n: int, optional: bool) -> str:
        forms = [f"{q}{secret(n * 4 + i)}{q}" for i, q in enumerate(("'", '"', "`"))]
        return "(?:" + "|".join(forms + ([secret(n * 4 + 3)] if optional else [])) + ")"
    return [patterns.compile(f"(?i){deny}{closing}:{ws}{quoted(0, True)}"),
            patterns.compile(f"{quoted(1, False)}{ws}[!=]{{2,3}}{ws}[{_W}]*{deny}"),  # theirs: case-sensitive
            patterns.compile(f"(?i){deny}{closing}{ws}(?:={{1,3}}|!==?){ws}{quoted(2, True)}"),
            patterns.compile(f"(?i){deny}[^{_S}]{{0,50}}?{ws}{quoted(3, False)};")]


def _keyword_values(line: str) -> list[str]:
    values = []
    for pattern in _keywords():
        m = pattern.search(line)
        if m is not None:
            values.append(next(g for g in m.groups() if g is not None))
    return values


@lru_cache(maxsize=1)
def _scanners() -> tuple[tuple[Any, tuple[patterns.Pattern, ...]], ...]:
    """Per plugin (and ``None`` for ``_keywords``), the RE2 patterns that find every line it can
    report on: a regex plugin's own, and for an entropy plugin a run of its charset long enough to
    pass its limit (a string of n characters has an entropy of at most log2(n) bits)."""
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin
    out: list[tuple[Any, tuple[patterns.Pattern, ...]]] = []
    for plugin in _plugins():
        if isinstance(plugin, HighEntropyStringsPlugin):
            charset = "".join(f"\\x{{{ord(c):x}}}" for c in plugin.charset)
            out.append((plugin, (patterns.compile(f"[{charset}]{{{int(2 ** plugin.entropy_limit) + 1},}}"),)))
        else:
            out.append((plugin, tuple(plugin.denylist)))
    out.append((None, tuple(_keywords())))
    return tuple(out)


def _lines_to_scan(text: str, starts: list[int], finders: tuple[patterns.Pattern, ...]) -> set[int]:
    """Indexes of the lines (starting at ``starts``) that a match of a finder in the whole text
    touches: a match inside one line is found by the whole-text scan, or overlaps one it finds."""
    lines: set[int] = set()
    for finder in finders:
        for m in finder.finditer(text):
            first, last = bisect_right(starts, m.start()) - 1, bisect_right(starts, max(m.end() - 1, m.start())) - 1
            lines.update(range(first, last + 1))
    return lines


def _line_values(plugin: Any, line: str) -> Iterator[tuple[str, str]]:
    """``(kind, value)`` per secret one plugin (``None``: ``_keywords``) finds in one line."""
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin
    if plugin is None:
        yield from (("password", value) for value in _keyword_values(line))
        return
    if isinstance(plugin, HighEntropyStringsPlugin):
        with plugin.non_quoted_string_regex(is_exact_match=False):
            found = plugin.analyze_line(filename="entry.txt", line=line, line_number=1)
        found = {s for s in found if plugin.calculate_shannon_entropy(str(s.secret_value)) > plugin.entropy_limit}
    else:
        found = plugin.analyze_line(filename="entry.txt", line=line, line_number=1)
    for secret in found:
        yield _KIND_OF_TYPE.get(secret.type, "token"), str(secret.secret_value or "")


def _secret_findings(text: str) -> list[Finding]:
    """PEM blocks, then what each plugin finds line by line, in the lines its finders touch (a
    plugin is not run on every line of a text of thousands of short lines)."""
    out = [Finding("private_key", m.start(), m.end()) for m in PEM.finditer(text)]
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    words: dict[int, _Words] = {}
    for plugin, finders in _scanners():
        for i in sorted(_lines_to_scan(text, starts, finders)):
            line, offset = lines[i], starts[i]
            for kind, value in _line_values(plugin, line):
                start = line.find(value) if value else -1
                while start >= 0:
                    s, e = words.setdefault(i, _Words(line)).widen(start, start + len(value))
                    out.append(Finding(kind, offset + s, offset + e))
                    start = line.find(value, start + len(value))
    return out


_NON_SPACE_RUN = patterns.stdlib(r"\S+", "a run of one class, once over each line holding a secret")


class _Words:
    """One line's whitespace-delimited words, found once, and each finding widened to the words
    it touches, once per span of words (a value repeated inside one long word is not re-walked)."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.spans: list[tuple[int, int]] | None = None
        self.starts: list[int] = []
        self.done: dict[tuple[int, int], tuple[int, int]] = {}

    def _word(self, i: int) -> tuple[int, int] | None:
        """The word holding character ``i``, if it is not a space."""
        if i < 0 or i >= len(self.line) or self.line[i].isspace():
            return None
        if self.spans is None:
            self.spans = [m.span() for m in _NON_SPACE_RUN.finditer(self.line)]
            self.starts = [s for s, _ in self.spans]
        return self.spans[bisect_right(self.starts, i) - 1]

    def widen(self, start: int, end: int) -> tuple[int, int]:
        before, after = self._word(start - 1), self._word(end)
        key = (before[0] if before else start, after[1] if after else end)
        if key not in self.done:
            self.done[key] = _widen(self.line, *key)
        return self.done[key]


def _widen(line: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` (whole words) without the punctuation around it, and without the key of
    ``key=value`` / ``key: value``."""
    while end > start and line[end - 1] in _WORD_TRIM:
        end -= 1
    while start < end and line[start] in "([{<\"'":
        start += 1
    # "key=value" / "key: value" keeps the key readable
    for sep in ("=", ":"):
        cut = line.find(sep, start, end)
        if 0 <= cut < end - 1 and not line[start:cut].startswith(("http", "-----")):
            head = line[start:cut]
            if head.isidentifier() or head.replace("-", "_").isidentifier():
                start = cut + 1
    return start, end


def _prose_findings(text: str) -> list[Finding]:
    out = []
    for m in PROSE_PASSWORD.finditer(text):
        value = m.group("value").rstrip(_WORD_TRIM)
        if value and value.casefold() not in _PROSE_WORDS:
            out.append(Finding("password", m.start("value"), m.start("value") + len(value)))
    return out


def _pattern_findings(text: str) -> list[Finding]:
    out = [Finding("email", *m.span("hit")) for m in EMAIL.hits(text)]
    for m in CARD.hits(text):
        digits = _digits(m["hit"] or "")
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            out.append(Finding("payment_card", *m.span("hit")))
    for m in PHONE.hits(text):
        found = m["hit"] or ""
        if 7 <= len(_digits(found)) <= 15 and not _DATE_OR_VERSION.fullmatch(found.strip()):
            out.append(Finding("phone", *m.span("hit")))
    return out


def _digits(s: str) -> str:
    return "".join(c for c in s if c.isdecimal())


def _merge(findings: list[Finding]) -> list[Finding]:
    # Overlaps: the earlier, then longer, finding wins; a card beats the phone pattern on the same digits.
    rank = {"private_key": 0, "aws_key": 1, "token": 2, "password": 3, "payment_card": 4, "email": 5, "phone": 6}
    out: list[Finding] = []
    for f in sorted(findings, key=lambda f: (f.start, -(f.end - f.start), rank.get(f.kind, 9))):
        if out and f.start < out[-1].end:
            if f.end > out[-1].end:
                out[-1] = Finding(out[-1].kind, out[-1].start, f.end)
            continue
        out.append(f)
    return out


def scan(text: str) -> list[Finding]:
    """Every finding in ``text``, non-overlapping, in order of position. A ``[REDACTED:<kind>]``
    marker already in the text is a finding of its kind, and what a detector finds in or across
    it is not: scanning a redacted text again finds what it found, and redacts nothing more (the
    stored projection of an accepted entry holds the redacted text)."""
    if not text:
        return []
    markers = [Finding(m["kind"], m.start(), m.end()) for m in _MARKER.finditer(text)]
    found = _secret_findings(text) + _prose_findings(text) + _pattern_findings(text)
    if markers:
        ends = [f.end for f in markers]
        found = [f for f in found if not _overlaps(f, markers, ends)]
    return _merge(found + markers)


def _overlaps(f: Finding, markers: list[Finding], ends: list[int]) -> bool:
    i = bisect_right(ends, f.start)  # the first marker ending after f starts
    return i < len(markers) and markers[i].start < f.end


def redact(text: str, findings: list[Finding]) -> str:
    """``text`` with each finding replaced by ``[REDACTED:<kind>]``."""
    parts, pos = [], 0
    for f in findings:
        parts.append(text[pos:f.start])
        parts.append(f"[REDACTED:{f.kind}]")
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def gated(text: str) -> tuple[str, list[str]]:
    """``(redacted text, sorted kinds found)``: what GET shows and what would be indexed.
    Memoised per text (a 64 KB scan costs about a second; reads repeat the same texts)."""
    redacted, kinds = _gated(text)
    return redacted, list(kinds)


@lru_cache(maxsize=256)
def _gated(text: str) -> tuple[str, tuple[str, ...]]:
    findings = scan(text)
    return redact(text, findings), tuple(sorted({f.kind for f in findings}))


SECRET_KINDS = frozenset({"aws_key", "private_key", "token", "password"})  # credentials, not personal data


def holds_secret(text: str) -> bool:
    """True when ``text`` holds a credential (``SECRET_KINDS``): what extraction never saves."""
    return any(kind in SECRET_KINDS for kind in _gated(text)[1])


def enforce(policy: str, kinds: list[str]) -> None:
    """At accept: ``drop``/``block_source`` with findings -> ``DlpBlocked``; ``redact`` passes."""
    if kinds and policy in ("drop", "block_source"):
        raise DlpBlocked(f"DLP policy '{policy}' refuses this entry: it contains {', '.join(kinds)}.",
                         details={"policy": policy, "kinds": kinds})
