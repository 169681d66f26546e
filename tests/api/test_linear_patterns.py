"""Every regular expression that runs on caller input runs in time linear in it.

Every pattern of chalicelib is made by ``chalicelib.patterns`` (``tests/unit/test_structure.py``
keeps ``re`` out of every other module): RE2 for all but a few stdlib patterns that cannot
backtrack. Here each one, and each function that scans caller text (DLP, the tokenizer, time
expressions, extraction, rule rendering, JSON decoding), runs on adversarial 64 KB inputs built
from the pattern's own characters and words (runs, repeated separators, a keyword before a long
run), each test under a pytest-timeout of a few seconds: a pattern a backtracking engine retries at
every position takes seconds to minutes on one of them. The rewritten patterns are held to the
stdlib patterns they replace (kept below as oracles) on generated short texts.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import app  # noqa: F401 - the app's modules
import chalicelib
from chalicelib import patterns
from chalicelib.core import dates
from chalicelib.extraction import models as extraction_models
from chalicelib.extraction.parse import parse_candidates
from chalicelib.extraction.transcript import Window
from chalicelib.inject.render import rule_body
from chalicelib.search import analyzers, signals
from chalicelib.team import dlp
from chalicelib.validation import loads, nesting_ok

N = 64 * 1024
SWEEP_TIMEOUT = 40  # seconds for one pattern's few hundred inputs: linear scans take a few; quadratic ones, hours
TIMEOUT = 5  # seconds for one input

# every module, those the app imports on first use too (the MCP protocol), so every pattern is made
for _module in pkgutil.walk_packages(chalicelib.__path__, "chalicelib."):
    importlib.import_module(_module.name)
dlp._plugins()  # the detect-secrets patterns, recompiled by RE2 on first use
dlp._keywords()


def _source(p: patterns.Pattern | re.Pattern) -> str:
    s = p.pattern
    return s.decode("latin-1") if isinstance(s, bytes) else s


def _pattern_id(p: patterns.Pattern | re.Pattern) -> str:
    return ("re2:" if isinstance(p, patterns.Pattern) else "stdlib:") + _source(p)[:60]


ALL = list(patterns.PATTERNS)


def _baits(p: patterns.Pattern | re.Pattern) -> list[str]:
    """64 KB inputs for one pattern: each of its characters and a few separators repeated alone
    and in pairs, each literal word of it repeated (bare and with separators), and a word before
    a long run of each separator."""
    src = _source(p)
    chars = sorted({c for c in src if c.isprintable()} | set(" \n.-_:@/=\"'a0A%+é٣\u3000"))
    seps = [" ", ".", "-", "/", "@", ":", "\n", "a", "0"]
    words = sorted(set(re.findall(r"[A-Za-z_]{2,}", src)) - {"xa", "xff"})[:24]
    out = [c * N for c in chars]
    out += [(c + s) * (N // 2) for c in chars for s in seps[:4]]
    for w in words:
        out += [(w + s) * (N // (len(w) + 1)) for s in ("", " ", "-", ".", ": ")]
        out += [w + " " + s * N for s in seps]
    return out


def _scan(p: patterns.Pattern | re.Pattern, text: str) -> None:
    if isinstance(p, patterns.Pattern):
        p.search(text)
        p.fullmatch(text)
        for _ in p.hits(text) if "hit" in p.names else p.finditer(text):
            pass
    elif isinstance(p.pattern, bytes):
        b = text.encode("utf-8")
        p.search(b)
        for _ in p.finditer(b):
            pass
    else:
        p.search(text)
        for _ in p.finditer(text):
            pass


def test_every_pattern_is_made_by_patterns():
    """Each module attribute holding a compiled pattern is one ``patterns`` made (and so is on
    the list the generated test walks), and detect-secrets' regex plugins use RE2 patterns."""
    seen = []
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("chalicelib") or module is None:
            continue
        for attr, value in vars(module).items():
            if isinstance(value, (re.Pattern, patterns.Pattern)):
                seen.append((name, attr, any(value is p for p in patterns.PATTERNS)))
    assert seen and all(ok for _, _, ok in seen), [s for s in seen if not s[2]]
    from detect_secrets.plugins.base import RegexBasedDetector
    regex_plugins = [p for p in dlp._plugins() if isinstance(p, RegexBasedDetector)]
    assert len(regex_plugins) >= 12
    assert all(isinstance(r, patterns.Pattern) for p in regex_plugins for r in p.denylist)
    assert "KeywordDetector" not in {type(p).__name__ for p in dlp._plugins()}  # dlp._keywords, in RE2


@pytest.mark.timeout(SWEEP_TIMEOUT)
@pytest.mark.parametrize("pattern", ALL, ids=_pattern_id)
def test_each_pattern_scans_adversarial_64kb_inputs_in_linear_time(pattern):
    for text in _baits(pattern):
        _scan(pattern, text)


# --- the functions that scan caller text, on their own worst inputs -------------------------

_TEXTS = ["%" * N, "a@" * (N // 2), "@a." * (N // 3), "1 " * (N // 2), "1-" * (N // 2), "+1" * (N // 2),
          "//" * (N // 2), "password = " + "/" * N, "eyJ" * (N // 3), "passwordsecret" + "secret" * (N // 6),
          "password is " * (N // 12), "password: " + "a " * (N // 2), "api_key" * (N // 7), "sk-" * (N // 3),
          "glagent-" * (N // 8), "AKIA" * (N // 4), "-----BEGIN " * (N // 11), "xoxb-1-" * (N // 7),
          "a" * N, "a." * (N // 2), "A1-" * (N // 3), "may 1, " * (N // 7), "in 2020 " * (N // 8),
          "the 20th of " * (N // 12), "2026-07-" * (N // 8), "Q3 " * (N // 3),
          "3 days ago " * (N // 11), "```" * (N // 3), "``` x" * (N // 5), "# " * (N // 2), "= \n" * (N // 3),
          "\\" * N, '"' * N, "[" * N, "é" * N, "東京" * (N // 2), "\u2028" * N]


@pytest.mark.timeout(TIMEOUT)
def test_dlp_scans_64kb_of_percent_signs_in_linear_time():
    """The reported input: 64 KB of ``%`` took the e-mail pattern ~6.4 s."""
    assert dlp.scan("%" * N) == []


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("text", _TEXTS, ids=lambda t: repr(t[:12]))
def test_dlp_scan_is_linear_on_adversarial_texts(text):
    dlp._gated.cache_clear()
    dlp.scan(text)
    dlp.scan(text.replace(" ", "\n"))  # line by line, as the plugins read it


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("text", _TEXTS, ids=lambda t: repr(t[:12]))
def test_text_readers_are_linear_on_adversarial_texts(text):
    list(analyzers.memory_analyzer()(text))
    list(analyzers.cjk_analyzer()(text))
    signals.date_ranges(text, 1_700_000_000_000)
    signals.is_when(text)
    signals.states_time(text)
    dates.stated(text, 1_700_000_000_000)
    extraction_models.OfflineExtractor().extract(Window(lines=[("user", text)], end=1, last_id=None))
    with pytest.raises(Exception):  # noqa: B017 - any refusal: the point is that it ends
        parse_candidates(text)
    rule_body(text)
    nesting_ok(text)
    with pytest.raises(Exception):  # noqa: B017 - any refusal: the point is that it ends
        loads(text)


@pytest.mark.timeout(TIMEOUT)
def test_a_secret_repeated_inside_one_long_word_is_widened_once():
    """A 64 KB word made of one AWS key id repeated: each occurrence is widened to the same word,
    which is walked once, not once per occurrence."""
    text = "AKIAIOSFODNN7EXAMPLE" * (N // 20)
    assert dlp.scan(text) == [dlp.Finding("aws_key", 0, len(text))]


# --- the RE2 classes are Python's -------------------------------------------------------------

def test_word_space_and_digit_classes_match_pythons_on_every_assigned_code_point():
    text = "".join(chr(c) for c in range(0x110000)
                   if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn")
    for body, python in ((patterns.WORD, r"\w"), (patterns.SPACE, r"\s"), (patterns.DIGIT, r"\d")):
        ours = {i for m in patterns.Pattern(f"[{body}]+").finditer(text) for i in range(m.start(), m.end())}
        assert ours == {m.start() for m in re.finditer(python, text)}, body


def test_positions_are_characters_and_a_lone_surrogate_reads_as_itself():
    p = patterns.Pattern(r"(?P<hit>b+)")
    text = "é\ud800東bb"
    m = p.search(text)
    assert m is not None and m.span() == (3, 5) and m.group("hit") == "bb"
    assert p.sub("x", "a\udc00bb") == "a\udc00x"
    assert [m.span() for m in patterns.Pattern("[^b]").finditer("\ud800é")] == [(0, 1), (1, 2)]


def test_a_pattern_re2_cannot_read_or_that_matches_nothing_is_refused():
    with pytest.raises(ValueError, match="RE2 refuses"):
        patterns.Pattern(r"(?<=a)b")
    with pytest.raises(ValueError, match="empty"):
        patterns.Pattern(r"a*")


# --- the rewritten patterns find what the stdlib ones did --------------------------------------

OLD_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
OLD_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}(?![\w])"
                       r"|(?<![\w+])\+\d{7,15}\b")
OLD_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
OLD_PROSE = re.compile(
    r"\b(?:pass(?:word|wd|phrase)|pwd)s?\b(?:\s+(?:for|of|on|to)\s+(?:the\s+)?[\w.@/:-]+){0,2}"
    r"\s*(?:\b(?:is|was|are|=)\b|[:=])\s*[\"'`]?(?P<value>[^\s\"'`]+)", re.I)
_MON = signals._MON
OLD_MONTH_DATE = re.compile(rf"\b(?:(\d{{1,2}})\s+)?({_MON})\.?(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?)?,?"
                            r"(?:\s+(\d{4}))?\b", re.I)
OLD_YEAR = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b", re.I)
OLD_RELATIVE = re.compile(r"\b(yesterday|today|tonight|last (?:week|weekend|month|year)|this (?:week|month|year)"
                          r"|(\d+|a|one|two|three|four|five|six) (day|week|month|year)s? ago)\b", re.I)

_FRAGMENTS = ["password", "pwd", "passphrase", " is ", " was ", " are ", ": ", "=", '"', "'", "`", " for ", " the ",
              "db", "bob@example.com", "a.b", "@", "%", "+", "+1 415 555 0100", "(020) 7946 0958",
              "4111 1111 1111 1111", "4111-1111-1111-1111", "2024-01-02", "1.2.3", " ", "\n", ".", ",", "x",
              "Zoë", "é", "٣", "12", "345",
              "6789", "-", "(", ")", "may", "June", "3rd", "2023", "in ", "since ", "yesterday", "two", " days",
              " ago", "last week", "this month", "_", "\u00a0", "\u2003"]
texts = st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=14).map("".join)


def _spans(matches, group: str | int = 0) -> list[tuple[int, int]]:
    return [m.span(group) for m in matches]


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_personal_data_patterns_find_what_the_stdlib_patterns_found(text):
    assert _spans(dlp.EMAIL.hits(text), "hit") == _spans(OLD_EMAIL.finditer(text))
    assert _spans(dlp.PHONE.hits(text), "hit") == _spans(OLD_PHONE.finditer(text))
    assert _spans(dlp.CARD.hits(text), "hit") == _spans(OLD_CARD.finditer(text))
    assert _spans(dlp.PROSE_PASSWORD.finditer(text), "value") == _spans(OLD_PROSE.finditer(text), "value")


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_time_expressions_read_what_the_stdlib_patterns_read(text):
    assert [(m["d1"], m["mon"], m["d2"], m["yr"]) for m in signals._MONTH_DATE.hits(text)] == \
        [m.groups() for m in OLD_MONTH_DATE.finditer(text)]
    assert [m["year"] for m in signals._YEAR.hits(text)] == [m.group(1) for m in OLD_YEAR.finditer(text)]
    assert [(m["w"], m["n"], m["unit"]) for m in signals._RELATIVE.hits(text)] == \
        [m.groups() for m in OLD_RELATIVE.finditer(text)]


_KEYWORD_FRAGMENTS = ["password", "api_key", "db_pass", "secret", "PGPASSWORD", "my_password_x", "contraseña", "pwd",
                      ":", "=", "==", "!=", ":=", "=>", ";", '"', "'", "`", " ", "  ", "[0]", "]", "abc", "s3cr3t",
                      "x y", ",", "@", "\t", "é", "_", "-", "1"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_KEYWORD_FRAGMENTS), min_size=1, max_size=10).map("".join))
def test_keyword_patterns_find_what_detect_secrets_finds_in_a_config_line(line):
    from detect_secrets.plugins.keyword import KeywordDetector
    theirs = sorted(str(s.secret_value) for s in KeywordDetector().analyze_line(filename="entry.yaml", line=line))
    assert sorted(set(dlp._keyword_values(line))) == theirs


def test_the_generated_inputs_hold_each_patterns_own_words():
    """The bait generator is not empty-handed: words of a pattern are among its inputs."""
    baits = _baits(dlp.PROSE_PASSWORD)
    assert any(b.startswith("phrase ") for b in baits) and all(len(b) >= N // 2 for b in baits)
