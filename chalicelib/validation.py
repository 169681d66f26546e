"""Validation at the edge: the one decoder of client JSON, and the text rules fields share.

``loads`` decodes every JSON request body, every ndjson import line and every page cursor. Before
any model, route or service sees the value it enforces, for every value at any depth (object keys
included):

- nesting at most ``MAX_DEPTH`` arrays/objects deep, checked on the raw text BEFORE parsing (a
  linear scan), so no input can exhaust the parser's recursion;
- numbers finite (``NaN``/``Infinity`` are not JSON: 400 ``invalid_json``; ``1e400`` overflows)
  and within +-``MAX_SAFE_INT`` (2^53 - 1, what a JavaScript client holds exactly);
- strings of Unicode scalar values without U+0000: a lone UTF-16 surrogate (``"\\ud800"``) can
  never be encoded in a response, and NUL is rejected everywhere.

Field rules, applied by request models through the ``Line``/``Text``/``Millis`` types and by
hand-written validators through ``check_line``/``check_text`` (never restated elsewhere):

- ``Line`` (names, ids, tags, entities, titles, labels): no C0 or C1 control character, no DEL,
  no line or paragraph separator (U+2028/U+2029);
- ``Text`` (memory text, content, rules, descriptions): TAB, LF and CR allowed; every other C0
  control character and DEL rejected;
- ``Millis`` (times): ms since the epoch within ``[0, MAX_TIME_MS]`` (the end of year 9999).

Errors are ``InvalidInput`` (a 400 ``BadRequest``: ``validation_error``, or ``invalid_json``)
naming the field as a dotted path (``tags.0``); a message never quotes the offending value, only
the code point at fault.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr

from . import patterns
from .errors import BadRequest

MAX_SAFE_INT = 2**53 - 1
MAX_TIME_MS = 253402300799999  # 9999-12-31T23:59:59.999Z
MAX_DEPTH = 64


class Model(BaseModel):
    """The base of chalicelib's pydantic models: each builds its validator and schema on first use
    (``defer_build``), not when its module is imported, so ``import app`` does not pay for every
    route's models (``tests/api/test_startup.py`` holds every model to it). Validation, errors and
    schemas are the same as built at once."""

    model_config = ConfigDict(defer_build=True)

# one class each, run on every string of every body; they must find lone surrogates (RE2 cannot)
_EVERY_STRING = "one class, on every string of a body, finding lone surrogates"
_SCALAR_BAD = patterns.stdlib("[\x00\ud800-\udfff]", _EVERY_STRING)
_LINE_BAD = patterns.stdlib("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]", _EVERY_STRING)
_TEXT_BAD = patterns.stdlib("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]", _EVERY_STRING)
# A JSON string literal, or an unterminated one running to the end: every alternative can always
# advance, so the scan is linear whatever the input.
_STRING = patterns.stdlib(r'"(?:[^"\\]++|\\[\s\S]?)*+(?:"|\Z)', "possessive repeats, over whole bodies")
_BRACKETS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_RUNS = patterns.stdlib(rb"\(+|\)+", "runs of one byte, over whole bodies")
_INT_LITERAL = patterns.compile(r"-?[0-9]{1,16}")
_NO_NUL = "must not hold U+0000"
_MAX_INT_CHARS = len(str(-MAX_SAFE_INT))


class InvalidInput(BadRequest):
    """A 400 naming ``field`` (a dotted path) and ``problem`` (a phrase without the value)."""

    def __init__(self, field: str, problem: str, *, code: str = "validation_error", whole: bool = False) -> None:
        message = f"The request {field} is {problem}." if whole else f"Invalid field '{field}': {problem}."
        super().__init__(message, code=code, details={"field": field})
        self.field, self.problem = field, problem


class _NonFinite:
    """What ``NaN``/``Infinity`` parse to, so the walk can name the field."""


class _TooLong:
    """What an integer literal of more digits than any allowed integer parses to."""


_NON_FINITE, _TOO_LONG = _NonFinite(), _TooLong()


def _int(literal: str) -> Any:
    return _TOO_LONG if len(literal) > _MAX_INT_CHARS else int(literal)


def _char_problem(value: str, bad: patterns.StdPattern[str], control: str) -> str | None:
    """A phrase ("must ...") saying what is wrong with ``value``, naming only the code point."""
    m = bad.search(value)
    if m is None:
        return None
    c = ord(m.group())
    if 0xD800 <= c <= 0xDFFF:
        return f"must not hold a lone UTF-16 surrogate (U+{c:04X} is not a Unicode scalar value)"
    return f"{control} (found U+{c:04X})"


def nesting_ok(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when no array/object in ``text`` opens more than ``limit`` levels deep (brackets
    inside string literals do not count). Linear in ``len(text)``: strings are cut out, the rest
    reduced to its brackets, innermost pairs dropped a few times over, and the depth followed run
    by run of equal brackets."""
    if text.count("[") + text.count("{") <= limit:
        return True
    # outside strings only ASCII is valid JSON: whatever else is there is dropped with the rest
    b = _STRING.sub("", text).encode("utf-8", "ignore").translate(_BRACKETS, _NOT_BRACKETS)
    # each pass that drops innermost pairs lowers every deeper group by exactly one level
    dropped = 0
    while dropped < 4 and b"()" in b:
        b = b.replace(b"()", b"")
        dropped += 1
    if dropped > limit:  # a pass drops something only while a group is at least that deep
        return False
    depth = 0
    for run in _RUNS.findall(b):
        depth += len(run) if run[0] == 40 else -len(run)  # 40 is "("
        if depth + dropped > limit:
            return False
    return True


def loads(raw: bytes | str, *, root: str = "body") -> Any:
    """Decode one JSON document of client input and apply the rules above.

    ``root`` names the whole document in errors (``body``, ``line``, ``cursor``). Raises
    ``InvalidInput``: ``invalid_json`` (not UTF-8, not JSON, nested deeper than ``MAX_DEPTH``,
    ``NaN``/``Infinity``) or ``validation_error`` (a number out of range, a surrogate or NUL).
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
    except UnicodeDecodeError:
        raise InvalidInput(root, "not valid UTF-8", code="invalid_json", whole=True) from None
    if not nesting_ok(text):
        raise InvalidInput(root, f"JSON nested deeper than {MAX_DEPTH} levels", code="invalid_json", whole=True)
    try:
        value = json.loads(text, parse_constant=lambda _: _NON_FINITE, parse_int=_int)
    except (ValueError, RecursionError):
        raise InvalidInput(root, "not valid JSON", code="invalid_json", whole=True) from None
    check_tree(value, root=root)
    return value


def _path(node: tuple | None, root: str) -> str:
    parts: list[str] = []
    while node is not None:
        node, key = node
        parts.append(key if len(key) <= 64 else key[:61] + "...")
    return ".".join(reversed(parts)) or root


def check_tree(value: Any, *, root: str = "body") -> None:
    """Apply the universal rules (numbers, scalar values, NUL) to an already decoded value.
    Raises ``InvalidInput`` (400) naming the path of the first bad value."""
    stack: list[tuple[Any, tuple | None]] = [(value, None)]
    while stack:
        v, at = stack.pop()
        t = type(v)
        if t is dict:
            for k, x in v.items():
                problem = _char_problem(k, _SCALAR_BAD, _NO_NUL)
                if problem:
                    raise InvalidInput(_path(at, root), "an object key " + problem)
                stack.append((x, (at, k)))
        elif t is list:
            stack.extend((x, (at, str(i))) for i, x in enumerate(v))
        else:
            problem, code = _leaf_problem(v, t)
            if problem:
                raise InvalidInput(_path(at, root), problem, code=code)


_INVALID = "validation_error"
_OUT_OF_RANGE = f"must be within +-{MAX_SAFE_INT} (2^53 - 1)"


def _leaf_problem(v: Any, t: type) -> tuple[str | None, str]:
    """``(problem or None, error code)`` of one decoded scalar."""
    if t is str:
        return _char_problem(v, _SCALAR_BAD, _NO_NUL), _INVALID
    if t is int:
        return (None if -MAX_SAFE_INT <= v <= MAX_SAFE_INT else _OUT_OF_RANGE), _INVALID
    if t is float:
        ok = math.isfinite(v) and -MAX_SAFE_INT <= v <= MAX_SAFE_INT
        return (None if ok else f"must be finite and within +-{MAX_SAFE_INT} (2^53 - 1)"), _INVALID
    if v is _NON_FINITE:
        return "NaN and Infinity are not JSON numbers", "invalid_json"
    if v is _TOO_LONG:
        return _OUT_OF_RANGE, _INVALID
    return None, _INVALID


def check_scalar(value: str, field: str) -> str:
    """``value`` when it has no lone surrogate and no NUL (query strings, path segments)."""
    problem = _char_problem(value, _SCALAR_BAD, _NO_NUL)
    if problem:
        raise InvalidInput(field, problem)
    return value


def as_int(raw: str) -> int | None:
    """The integer a query-string value spells (ASCII digits, optional ``-``) when it is within
    +-``MAX_SAFE_INT``, else ``None`` (``int()`` would also take ``" 5"``, ``"5_0"`` and
    non-ASCII digits)."""
    if not _INT_LITERAL.fullmatch(raw):
        return None
    n = int(raw)
    return n if -MAX_SAFE_INT <= n <= MAX_SAFE_INT else None


def line_problem(value: str) -> str | None:
    """Why ``value`` is not a valid single-line field, or ``None``."""
    return _char_problem(value, _LINE_BAD, "must be one line without control characters")


def text_problem(value: str) -> str | None:
    """Why ``value`` is not valid body text, or ``None``."""
    return _char_problem(value, _TEXT_BAD, "must not hold control characters other than TAB, LF and CR")


# what a one-line value shown to a person must not hold: control characters (C0, DEL, C1), line
# and paragraph separators, lone surrogates, and the bidirectional formatting characters that
# reorder what a terminal or page shows (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C)
_SHOWN_BAD = patterns.stdlib("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\u202a-\u202e\u2066-\u2069"
                             "\u200e\u200f\u061c]", _EVERY_STRING)


def shown_line(value: str, limit: int) -> str:
    """``value`` made safe to show on one line: every character ``_SHOWN_BAD`` names replaced by
    U+FFFD, cut to ``limit`` characters (for text a caller chose that the service records, e.g.
    audit details)."""
    return _SHOWN_BAD.sub("\ufffd", value[:limit])


def check_line(value: str, field: str) -> str:
    """``value`` when it is a valid single-line field; else 400 ``validation_error`` naming ``field``."""
    problem = line_problem(value)
    if problem:
        raise InvalidInput(field, problem)
    return value


def check_text(value: str, field: str) -> str:
    """``value`` when it is valid body text; else 400 ``validation_error`` naming ``field``."""
    problem = text_problem(value)
    if problem:
        raise InvalidInput(field, problem)
    return value


def _line(value: str) -> str:
    problem = line_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _text(value: str) -> str:
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


# Pydantic field types: a JSON string under the ``Line`` or ``Text`` rule (add ``Field`` limits
# where used).
Line = Annotated[StrictStr, AfterValidator(_line)]
Text = Annotated[StrictStr, AfterValidator(_text)]
# A time: ms since the epoch within [0, MAX_TIME_MS] (strict where the model is strict).
Millis = Annotated[int, Field(ge=0, le=MAX_TIME_MS)]
