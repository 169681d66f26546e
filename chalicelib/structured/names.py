"""Turnstone's memory-name and description normalizers (a port of
``turnstone.core.memory.normalize_memory_name`` and ``memory_index.normalize_memory_description``
from turnstone 1.8.7, so a name means the same key here as there).

A name is trimmed of space separators, case-folded; runs of spaces and Unicode hyphens become one
``_``; Latin letters fold to ASCII (``Café`` -> ``cafe``); anything else, a leading, trailing or
doubled ``_``, or more than 256 characters after normalization is 400 ``invalid_name``. The result
matches ``[a-z0-9]+(_[a-z0-9]+)*``, so every name is safe in a URL path and a storage key.
"""

from __future__ import annotations

import unicodedata

from .. import patterns
from ..errors import BadRequest
from ..validation import line_problem

MAX_NAME = 256
MAX_DESCRIPTION = 512
NAME_RE = patterns.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
# Latin letters NFKD does not decompose to an ASCII letter.
_LATIN_FOLD_OVERRIDES = {
    "æ": "ae", "đ": "d", "ð": "d", "ħ": "h",
    "ı": "i",  # noqa: RUF001 - the dotless i is one of the letters folded, on purpose
    "ł": "l", "ŋ": "n", "œ": "oe", "ø": "o", "þ": "th", "ŧ": "t"}
# Turnstone's whitespace set (Python's and JavaScript's \s disagree on some separators).
_DESCRIPTION_WS = patterns.stdlib(r"[\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a"
                                   r"\u2028\u2029\u202f\u205f\u3000\ufeff]+", "a run of one class")


def _invalid(message: str) -> BadRequest:
    return BadRequest(message, code="invalid_name", details={"field": "name"})


def _trimmed(name: str) -> str:
    """``name`` without leading and trailing space separators (Unicode ``Zs``)."""
    start, end = 0, len(name)
    while start < end and unicodedata.category(name[start]) == "Zs":
        start += 1
    while end > start and unicodedata.category(name[end - 1]) == "Zs":
        end -= 1
    return name[start:end]


def _latin(char: str, cat: str, out: list[str]) -> str | None:
    """What a non-ASCII letter or mark contributes: its ASCII fold, ``""`` for a decomposed
    diacritic on a Latin base, or ``None`` when it is not Latin."""
    repl = _LATIN_FOLD_OVERRIDES.get(char)
    if repl is not None:
        return repl
    if cat.startswith("M") and out and out[-1][-1:].isalpha():
        return ""  # a decomposed diacritic on the preceding Latin base
    if cat.startswith("L") and "LATIN" in unicodedata.name(char, ""):
        folded = "".join(p for p in unicodedata.normalize("NFKD", char) if p.isascii() and p.isalpha())
        return folded or None
    return None


def _folded(raw: str) -> str:
    """The case-folded name with separators as one ``_`` and Latin letters folded to ASCII;
    raises 400 ``invalid_name`` on any other character."""
    out: list[str] = []
    in_sep = False
    for char in raw.casefold():
        cat = unicodedata.category(char)
        if (char.isascii() and char.isalnum()) or char == "_":
            out.append(char)
            in_sep = False
            continue
        if cat in ("Zs", "Pd"):
            if not in_sep:
                out.append("_")
                in_sep = True
            continue
        latin = _latin(char, cat, out)
        if latin is None and cat.startswith("L"):
            raise _invalid("memory name contains unsupported characters; choose an ASCII semantic key and "
                           "keep native-language wording in the description or content")
        if latin is None:
            raise _invalid("memory name may contain only Latin letters, ASCII digits, spaces, hyphens, "
                           "and single underscores")
        if latin:
            out.append(latin)
            in_sep = False
    return "".join(out)


def normalize_name(name: object) -> str:
    """The canonical snake_case key of a memory name; raises 400 ``invalid_name``."""
    if not isinstance(name, str):
        raise _invalid("memory name is required")
    raw = _trimmed(name)
    if not raw:
        raise _invalid("memory name is required")
    normalized = _folded(raw)
    if len(normalized) > MAX_NAME:
        raise _invalid(f"memory name exceeds {MAX_NAME} characters after normalization")
    if not NAME_RE.fullmatch(normalized):
        raise _invalid("memory name must normalize to ASCII snake_case without leading, trailing, "
                       "or repeated underscores")
    return normalized


def normalize_description(description: object) -> str:
    """Whitespace-collapsed description; 400 ``validation_error`` with Turnstone's messages when
    missing or blank (``description is required and must be non-empty``) or over 512 characters,
    and when a control character other than white space is left (``validation.line_problem``)."""
    if not isinstance(description, str):
        raise BadRequest("description is required and must be non-empty", details={"field": "description"})
    normalized = _DESCRIPTION_WS.sub(" ", description).strip(" ")
    problem = line_problem(normalized)  # white space is collapsed above; other controls are refused
    if problem:
        raise BadRequest(f"description {problem}", details={"field": "description"})
    if not normalized:
        raise BadRequest("description is required and must be non-empty", details={"field": "description"})
    if len(normalized) > MAX_DESCRIPTION:
        raise BadRequest(f"description exceeds {MAX_DESCRIPTION} character limit", details={"field": "description"})
    return normalized
