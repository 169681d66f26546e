"""Every regular expression of chalicelib, compiled here so that each runs in time linear in its input.

Texts up to 64 KB (and request bodies larger still) reach these patterns from callers, so a
pattern that a backtracking engine can retry at every position is a denial of service: an e-mail
pattern scanned 64 KB of ``%`` in seconds. Two engines, nothing else:

- ``compile(regex)``: RE2 (``google-re2``), an automaton that never backtracks, so every search is
  linear whatever the pattern. Its syntax has no look-around and no back-references (write
  ``\\z`` for the end of the text); its ``\\b``, ``\\w``, ``\\s`` and ``\\d`` are ASCII. Where a
  pattern must see Unicode words, spaces or digits as Python does, it uses the class bodies
  ``WORD``, ``SPACE`` and ``DIGIT`` below; where it needs a look-around, it matches the context
  outside a group named ``hit`` and is read with ``Pattern.hits``. Positions and groups are
  characters of the text given (RE2 matches its UTF-8 bytes); a lone surrogate, which UTF-8
  cannot hold, is matched as U+FFFD.
- ``stdlib(regex, why)``: Python's ``re``, only for patterns it cannot retry: one character class
  or a run of one, alternatives of fixed length, possessive repeats. They are used where RE2
  cannot go (finding lone surrogates) or where the cost of a call counts (the tokenizer's every
  word, validation's every string); ``why`` says which.

``PATTERNS`` lists every pattern made here: ``tests/unit/test_patterns.py`` runs each on
adversarial 64 KB inputs, and ``tests/unit/test_structure.py`` keeps ``re`` out of every other
module of chalicelib.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

# Class bodies (for use inside [...]) equal to Python's Unicode classes for str patterns.
WORD = r"\p{L}\p{N}_"  # \w: str.isalnum() or "_"
SPACE = r"\t-\r\x{1c}-\x{1f}\x{85}\p{Z}"  # \s: str.isspace()
DIGIT = r"\p{Nd}"  # \d: str.isdecimal()
# Python's \b before and after a word character, as a character matched (or the text's edge)
BEFORE_WORD = rf"(?:^|[^{WORD}])"
AFTER_WORD = rf"(?:$|[^{WORD}])"

StdPattern = re.Pattern  # the type of what ``stdlib`` returns

_SURROGATES = {c: 0xFFFD for c in range(0xD800, 0xE000)}
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern raises; RE2 need not print it too
_RE2_MAX_REPEAT = 1000


@dataclass(frozen=True)
class Match:
    """One match: ``start``/``end``/``span``/``group``/``groups``/``groupdict`` as ``re.Match``
    has them, in characters of the text searched; an unmatched group is ``None`` (span -1)."""

    text: str
    spans: tuple[tuple[int, int], ...]  # per group (0: the whole match)
    names: dict[str, int]

    def _index(self, g: int | str) -> int:
        return self.names[g] if isinstance(g, str) else g

    def span(self, g: int | str = 0) -> tuple[int, int]:
        return self.spans[self._index(g)]

    def start(self, g: int | str = 0) -> int:
        return self.span(g)[0]

    def end(self, g: int | str = 0) -> int:
        return self.span(g)[1]

    def group(self, g: int | str = 0) -> str | Any:  # as typeshed types re.Match.group: None when unmatched
        s, e = self.span(g)
        return None if s < 0 else self.text[s:e]

    def __getitem__(self, g: int | str) -> str | Any:
        return self.group(g)

    def groups(self) -> tuple[str | None, ...]:
        return tuple(self.group(i) for i in range(1, len(self.spans)))

    def groupdict(self) -> dict[str, str | None]:
        return {name: self.group(i) for name, i in self.names.items()}


class _Text:
    """A text as RE2 reads it (UTF-8 bytes), and the way back from byte to character offsets
    (ASCII: the same; otherwise counted forward from the last match, so a scan stays linear)."""

    __slots__ = ("_ascii", "_at", "b", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            self.b = text.encode("utf-8")
        except UnicodeEncodeError:
            self.b = text.translate(_SURROGATES).encode("utf-8")
        self._ascii = len(self.b) == len(text)
        self._at = (0, 0)  # (byte offset, character offset) of the last match start

    def match(self, byte_spans: list[tuple[int, int]], p: Pattern) -> Match:
        if self._ascii:
            return Match(self.text, tuple(byte_spans), p.names)
        b0 = byte_spans[0][0]
        at_b, at_c = self._at if self._at[0] <= b0 else (0, 0)
        c0 = at_c + len(self.b[at_b:b0].decode("utf-8"))
        self._at = (b0, c0)
        spans = tuple((-1, -1) if s < 0 else (c0 + len(self.b[b0:s].decode("utf-8")),
                                               c0 + len(self.b[b0:e].decode("utf-8")))
                      for s, e in byte_spans)
        return Match(self.text, spans, p.names)


_UNANCHORED, _ANCHOR_START, _ANCHOR_BOTH = (re2._Anchor.UNANCHORED, re2._Anchor.ANCHOR_START,
                                            re2._Anchor.ANCHOR_BOTH)


class Pattern:
    """An RE2 pattern with ``re.Pattern``'s methods (``sub`` takes a literal replacement).

    ``lazy``: compiled on first use, not when made (``compile`` makes every module-level pattern
    so: RE2's compiling of them all was a tenth of ``import app``); a pattern RE2 refuses then
    raises at its first use, and ``tests/api/test_linear_patterns.py`` uses every one."""

    __slots__ = ("_groups", "_names", "_rx", "pattern")

    def __init__(self, regex: str, lazy: bool = False) -> None:
        self.pattern = regex
        self._rx: Any = None
        if not lazy:
            self._build()

    def _build(self) -> Any:
        """Compile (once; a race compiles twice, harmlessly): the compiled RE2 object. Raises
        ``ValueError`` when RE2 refuses the pattern or it matches the empty text."""
        try:
            compiled = re2.compile(self.pattern.encode("utf-8"), _OPTIONS)
        except re2.error as exc:
            raise ValueError(f"RE2 refuses the pattern {self.pattern!r}: {exc}") from None
        # the compiled RE2 object of google-re2's wrapper (pinned in requirements.txt): its Match
        # gives every group's byte span at once, without a match object per call
        rx = compiled._regexp
        # a match of nothing would step the scan into the middle of a UTF-8 sequence
        if rx.Match(_UNANCHORED, b"", 0, 0)[0][0] >= 0:
            raise ValueError(f"the pattern {self.pattern!r} matches the empty text")
        self._groups: int = compiled.groups
        self._names: dict[str, int] = {k.decode("utf-8"): v for k, v in compiled.groupindex.items()}
        self._rx = rx
        return rx

    @property
    def groups(self) -> int:
        if self._rx is None:
            self._build()
        return self._groups

    @property
    def names(self) -> dict[str, int]:
        if self._rx is None:
            self._build()
        return self._names

    def _spans(self, anchor: object, b: bytes, pos: int) -> list[tuple[int, int]] | None:
        spans = (self._rx or self._build()).Match(anchor, b, pos, len(b))
        return None if spans[0][0] < 0 else spans

    def _one(self, anchor: object, text: str) -> Match | None:
        t = _Text(text)
        spans = self._spans(anchor, t.b, 0)
        return None if spans is None else t.match(spans, self)

    def search(self, text: str) -> Match | None:
        return self._one(_UNANCHORED, text)

    def match(self, text: str) -> Match | None:
        return self._one(_ANCHOR_START, text)

    def fullmatch(self, text: str) -> Match | None:
        return self._one(_ANCHOR_BOTH, text)

    def finditer(self, text: str) -> Iterator[Match]:
        return self._scan(text, 0)

    def hits(self, text: str) -> Iterator[Match]:
        """The matches of a pattern that matches context around a group named ``hit`` (what a
        look-behind or look-ahead would check): the next search starts where the hit ended, so
        the context one match consumed after its hit can be the context before the next."""
        return self._scan(text, self.names["hit"])

    def _scan(self, text: str, resume: int) -> Iterator[Match]:
        """Successive matches, each search starting where group ``resume`` of the last ended."""
        t = _Text(text)
        pos = 0
        while pos <= len(t.b):
            spans = self._spans(_UNANCHORED, t.b, pos)
            if spans is None:
                return
            yield t.match(spans, self)
            end = spans[resume][1]
            pos = end if end > pos else pos + 1

    def findall(self, text: str) -> list:
        """As ``re.findall``: the matches, or the one group's text, or tuples of the groups."""
        out: list = []
        for m in self.finditer(text):
            if self.groups == 0:
                out.append(m.group())
            elif self.groups == 1:
                out.append(m.group(1) or "")
            else:
                out.append(tuple(g or "" for g in m.groups()))
        return out

    def sub(self, replacement: str, text: str) -> str:
        """``text`` with every match replaced by the literal ``replacement``."""
        parts, pos = [], 0
        for m in self.finditer(text):
            parts.append(text[pos:m.start()])
            parts.append(replacement)
            pos = m.end()
        if not parts:
            return text
        parts.append(text[pos:])
        return "".join(parts)


PATTERNS: list[Pattern | StdPattern] = []


def compile(regex: str) -> Pattern:
    """``regex`` compiled by RE2 (flags inline: ``(?i)``, ``(?s)``); raises ``ValueError`` when
    RE2 refuses it (a look-around, a back-reference) at its first use."""
    p = Pattern(regex, lazy=True)
    PATTERNS.append(p)
    return p


def stdlib(regex: str | bytes, why: str, flags: int = 0) -> StdPattern:
    """``regex`` compiled by Python's ``re``: only a pattern that engine cannot retry (see the
    module docstring); ``why`` says why RE2 is not used."""
    if not why:
        raise ValueError("say why this pattern is not RE2's")
    p = re.compile(regex, flags)
    PATTERNS.append(p)
    return p


def from_stdlib(regex: re.Pattern[str]) -> Pattern:
    """A library's compiled stdlib pattern, compiled again by RE2: its flags inline; a final
    ``(?!\\w)`` (RE2 has no look-ahead) becomes a consumed non-word character, outside the
    groups ``findall`` yields (the whole pattern becomes group 1 when it has none); a repeat
    counted past RE2's bound has no upper bound (``_split_repeats``). Raises
    ``ValueError`` when RE2 cannot read it (RE2's own refusal: at its first use)."""
    source, flags = regex.pattern, ""
    if regex.flags & re.IGNORECASE:
        flags += "i"
    if regex.flags & re.VERBOSE and any(c.isspace() or c == "#" for c in source):
        raise ValueError(f"a verbose pattern RE2 cannot read: {source!r}")
    source = _split_repeats(source)
    if source.endswith("(?!\\w)"):
        source = source[:-len("(?!\\w)")]
        if regex.groups == 0:
            source = f"({source})"
        source += AFTER_WORD
    return compile(f"(?{flags}){source}" if flags else source)


def _split_repeats(source: str) -> str:
    """``source`` with each ``[class]{m,n}`` whose ``n`` is over RE2's bound written ``[class]{m,}``:
    a superset (a finding, never one less), and an automaton that stays small (a repeat counted to
    a thousand made RE2 trade its DFA for a step per count and character)."""
    parts, pos = [], 0
    for m in _CLASS_REPEAT.finditer(source):
        if int(m["high"]) > _RE2_MAX_REPEAT:
            parts += [source[pos:m.start()], f"{m['cls']}{{{m['low']},}}"]
            pos = m.end()
    return "".join([*parts, source[pos:]])


_CLASS_REPEAT = compile(r"(?P<cls>\[(?:\\.|[^\]\\])*\])\{(?P<low>[0-9]+),(?P<high>[0-9]+)\}")
