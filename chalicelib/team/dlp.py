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

import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import Unprocessable

POLICIES = ("redact", "drop", "block_source")

PLUGINS = [
    {"name": "AWSKeyDetector"}, {"name": "PrivateKeyDetector"}, {"name": "GitHubTokenDetector"},
    {"name": "GitLabTokenDetector"}, {"name": "SlackDetector"}, {"name": "StripeDetector"},
    {"name": "NpmDetector"}, {"name": "PypiTokenDetector"}, {"name": "OpenAIDetector"},
    {"name": "TwilioKeyDetector"}, {"name": "SendGridDetector"}, {"name": "JwtTokenDetector"},
    {"name": "BasicAuthDetector"}, {"name": "KeywordDetector"},
    {"name": "Base64HighEntropyString", "limit": 4.3}, {"name": "HexHighEntropyString", "limit": 3.0},
]

_KIND_OF_TYPE = {"AWS Access Key": "aws_key", "Private Key": "private_key", "Base64 High Entropy String": "token",
                 "Hex High Entropy String": "token", "Secret Keyword": "password", "Basic Auth Credentials": "password"}

EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}(?![\w])"
                   r"|(?<![\w+])\+\d{7,15}\b")
CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
                 r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S)
_WORD_TRIM = ".,;:!?)]}>\"'"
# "the password is X" / "db passwd for staging was X" / "passphrase: X"
PROSE_PASSWORD = re.compile(
    r"\b(?:pass(?:word|wd|phrase)|pwd)s?\b(?:\s+(?:for|of|on|to)\s+(?:the\s+)?[\w.@/:-]+){0,2}"
    r"\s*(?:\b(?:is|was|are|=)\b|[:=])\s*[\"'`]?(?P<value>[^\s\"'`]+)", re.I)
# words that follow "the password is" in ordinary sentences, never a password themselves
_PROSE_WORDS = frozenset([
    "a", "an", "the", "in", "on", "at", "of", "to", "for", "by", "with", "from", "not", "now", "still",
    "also", "never", "always", "stored", "kept", "saved", "held", "set", "reset", "changed", "rotated",
    "managed", "shared", "expired", "required", "needed", "missing", "empty", "blank", "wrong", "correct",
    "same", "different", "unknown", "secret", "private", "written", "listed", "located", "available",
    "being", "been", "rotating", "changing", "under", "per", "our", "your", "their", "its", "this", "that"
])
# the KeywordDetector plugin reads assignments only in config-file syntax
_KEYWORD_FILENAME = "entry.yaml"


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
    from detect_secrets.settings import get_plugins, transient_settings
    with transient_settings({"plugins_used": PLUGINS, "filters_used": []}):
        return tuple(get_plugins())


def _secret_findings(text: str) -> list[Finding]:
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin
    out: list[Finding] = []
    for m in PEM.finditer(text):
        out.append(Finding("private_key", m.start(), m.end()))
    offset = 0
    for line in text.splitlines(keepends=True):
        for plugin in _plugins():
            if isinstance(plugin, HighEntropyStringsPlugin):
                with plugin.non_quoted_string_regex(is_exact_match=False):
                    found = plugin.analyze_line(filename="entry.txt", line=line, line_number=1)
                found = {s for s in found
                         if plugin.calculate_shannon_entropy(str(s.secret_value)) > plugin.entropy_limit}
            else:
                filename = _KEYWORD_FILENAME if type(plugin).__name__ == "KeywordDetector" else "entry.txt"
                found = plugin.analyze_line(filename=filename, line=line, line_number=1)
            for secret in found:
                value = str(secret.secret_value or "")
                if not value:
                    continue
                kind = _KIND_OF_TYPE.get(secret.type, "token")
                start = line.find(value)
                while start >= 0:
                    s, e = _widen(line, start, start + len(value))
                    out.append(Finding(kind, offset + s, offset + e))
                    start = line.find(value, start + len(value))
        offset += len(line)
    return out


def _widen(line: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and not line[start - 1].isspace():
        start -= 1
    while end < len(line) and not line[end].isspace():
        end += 1
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
    out = [Finding("email", m.start(), m.end()) for m in EMAIL.finditer(text)]
    for m in CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            out.append(Finding("payment_card", m.start(), m.end()))
    for m in PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 7 <= len(digits) <= 15 and not _is_date_or_version(m.group()):
            out.append(Finding("phone", m.start(), m.end()))
    return out


def _is_date_or_version(s: str) -> bool:
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}|\d+(\.\d+){1,3}", s.strip()))


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
    """Every finding in ``text``, non-overlapping, in order of position."""
    if not text:
        return []
    return _merge(_secret_findings(text) + _prose_findings(text) + _pattern_findings(text))


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
