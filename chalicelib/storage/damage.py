"""Values at rest that cannot be decoded, rendered or indexed: hand edits, older versions, objects
edited in S3. Reads never fail on one; they skip it with a ``damaged`` marker or answer a clear 4xx.

Two layers:

- every item read from DynamoDB goes through ``scrub`` (``tables._Base.from_raw_data``): an
  attribute whose stored type or JSON does not decode is left at its default; a string holding a
  lone UTF-16 surrogate (nothing can encode it as UTF-8) gets U+FFFD in its place and a non-finite
  number becomes ``None``; an integer beyond +-(2^53 - 1), which JavaScript clients cannot hold and
  the index cannot store beyond 2^63, is kept but flagged. The item's ``damaged`` mapping names
  each such attribute and the problem (``{"record": "text: lone surrogate"}``), and one
  ``DamagedValues`` metric is emitted per item;
- each record type's decoder (memory records in ``core.records``, team entries, structured-memory
  objects) decides whether that damage, or a shape its schema rejects, makes the record
  unreadable: it raises ``Damaged`` (409 ``damaged``, metric ``DamagedRecords``), which lists and
  exports turn into a marker, recall skips, and a direct read answers.

Reasons name the field and the kind of problem, never the stored value (it may be memory text).
"""

from __future__ import annotations

import logging
import math
from typing import Any, TypedDict

from .. import metrics, patterns
from ..errors import CairnError
from ..validation import (  # the bounds the edge enforces on input
    MAX_SAFE_INT,
    MAX_TIME_MS,
)

REPLACEMENT = "\ufffd"

log = logging.getLogger("cairn.damage")


class DamagedMarker(TypedDict):
    """What an export writes in a damaged record's place: ``{id, damaged: true, reason}``."""

    id: str
    damaged: bool
    reason: str


class Damaged(CairnError):
    """409 ``damaged``: the stored ``kind`` ``key`` cannot be decoded, rendered or indexed.

    ``reason`` says which field and what is wrong (never the value); ``details`` carry ``kind``,
    ``id`` and ``reason``; ``hint`` tells the caller how to recover. Creating one emits the
    ``DamagedRecords`` metric."""

    status = 409
    code = "damaged"

    def __init__(self, kind: str, key: Any, reason: str, *, hint: str = "") -> None:
        self.kind, self.key, self.reason = kind, clean(str(key)), reason
        super().__init__(f"The stored {kind} '{self.key}' is damaged ({reason}) and cannot be read."
                         + (f" {hint}" if hint else ""),
                         details={"kind": kind, "id": self.key, "reason": reason})
        metrics.emit("damaged", {"DamagedRecords": 1}, {"kind": kind, "reason": reason})
        log.warning("damaged %s %s: %s", kind, self.key, reason)

    def marker(self) -> DamagedMarker:
        """``{id, damaged: true, reason}``: what an export writes in the record's place."""
        return {"id": self.key, "damaged": True, "reason": self.reason}

    def entry(self) -> dict[str, str]:
        """``{id, reason}``: one element of a listing's ``damaged`` array."""
        return {"id": self.key, "reason": self.reason}


def _bad_str(s: str) -> bool:
    if s.isascii():
        return False
    try:
        s.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


MAX_DEPTH = 64  # deeper stored JSON is damage too (nothing Cairn writes nests beyond a few levels)
_SURROGATE = patterns.stdlib("[\ud800-\udfff]", "one class, finding lone surrogates")
_FIELD = patterns.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,40}$")


def _name(key: Any) -> str:
    return key if isinstance(key, str) and _FIELD.match(key) else "?"  # never quote a stored value


_Found = tuple[list[str], str] | None


def _find(value: Any, depth: int) -> _Found:
    """``(path, problem)`` of the first problem in ``value``; exact type checks first (this runs
    on every attribute of every item read)."""
    t = type(value)
    if t is str or t is int or t is float:
        return _scalar(value, t)
    if value is None or t is bool:
        return None
    if isinstance(value, dict):
        return _in_dict(value, depth)
    if isinstance(value, (list, tuple, set, frozenset)):
        return _in_items(value, depth)
    if isinstance(value, str):
        return _find(str(value), depth)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _find(float(value) if isinstance(value, float) else int(value), depth)
    return None


def _scalar(value: Any, t: type) -> _Found:
    # an exact str, int or float
    if t is str:
        return None if not _bad_str(value) else ([], "lone surrogate")
    if t is int:
        return None if -MAX_SAFE_INT <= value <= MAX_SAFE_INT else ([], "integer out of range")
    if not math.isfinite(value):
        return [], "non-finite number"
    return None if abs(value) <= MAX_SAFE_INT else ([], "number out of range")


def _in_dict(value: dict[Any, Any], depth: int) -> _Found:
    if depth >= MAX_DEPTH:
        return [], "nested too deeply"
    for k, v in value.items():
        if isinstance(k, str) and _bad_str(k):
            return [_name(k)], "lone surrogate in a key"
        found = _find(v, depth + 1)
        if found is not None:
            found[0].insert(0, _name(k))
            return found
    return None


def _in_items(value: Any, depth: int) -> _Found:
    if depth >= MAX_DEPTH:
        return [], "nested too deeply"
    for v in value:
        found = _find(v, depth + 1)
        if found is not None:
            return found
    return None


def problem(value: Any, path: str = "") -> str | None:
    """The first problem of ``value`` (strings, numbers, dicts, lists, sets, nested) as
    ``"<path>: <problem>"`` (``lone surrogate``, ``non-finite number``, ``integer out of range``,
    ``number out of range``, ``nested too deeply``), or ``None`` when every client can take it.
    The path names fields (``meta.x``), never a stored value."""
    found = _find(value, 0)
    if found is None:
        return None
    where = ".".join([p for p in (path, *found[0]) if p])
    return f"{where}: {found[1]}" if where else found[1]


def clean(value: Any, *, clamp: bool = False, _depth: int = 0) -> Any:
    """``value`` with lone surrogates replaced by U+FFFD and non-finite numbers by ``None``
    (nested; containers nested beyond ``MAX_DEPTH`` become ``None``); with ``clamp``, integers
    beyond +-(2^53 - 1) are clamped too. Healthy values are returned as they are."""
    if isinstance(value, str):
        return _SURROGATE.sub(REPLACEMENT, value) if _bad_str(value) else value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return max(-MAX_SAFE_INT, min(MAX_SAFE_INT, value)) if clamp else value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (dict, list, tuple, set, frozenset)) and _depth >= MAX_DEPTH:
        return None
    d = _depth + 1
    if isinstance(value, dict):
        return {clean(k): clean(v, clamp=clamp, _depth=d) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v, clamp=clamp, _depth=d) for v in value]
    if isinstance(value, (set, frozenset, tuple)):
        return type(value)(clean(v, clamp=clamp, _depth=d) for v in value)
    return value


def time_ms(value: Any) -> int | None:
    """``value`` as ms since the epoch when it is an integer (or integral float) within
    [0, ``MAX_TIME_MS``], else ``None``: what renderers of stored times call first."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    value = int(value)
    return value if 0 <= value <= MAX_TIME_MS else None


def report_values(table: str, found: dict[str, str]) -> None:
    """One ``DamagedValues`` metric for an item of ``table`` whose attributes ``found`` were
    scrubbed or left undecoded (attribute names and problems only)."""
    metrics.emit("damaged", {"DamagedValues": 1},
                 {"kind": table, "reason": "; ".join(f"{k}: {v}" for k, v in sorted(found.items()))})
    log.warning("damaged values in %s: %s", table, sorted(found))
