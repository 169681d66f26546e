"""Content fingerprints of memory texts (the bank worker's ``fp`` ids).

``fingerprint(text)`` = ``"fp"`` + 16 lowercase hex digits of 64-bit FNV-1a over the UTF-8 bytes
of ``normalize_text(text)``: runs of Unicode White_Space collapsed to one space, trimmed, then
lower-cased with ``str.lower()``. Re-saving the same sentence therefore reinforces instead of
duplicating. When that id is held by a memory whose text has moved away (an update changed its
text), the new text takes ``fingerprint_variant(text, k)`` for the first free ``k``.
"""

from __future__ import annotations

from . import patterns

FNV64_OFFSET = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3
_MASK64 = 0xFFFFFFFFFFFFFFFF

# The Unicode White_Space property, exactly (PropList.txt). Python's str.isspace() and
# str.split() also treat U+001C..U+001F as spaces, which White_Space does not.
WHITE_SPACE = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WS_RUN = patterns.stdlib("[" + "".join(f"\\u{ord(c):04x}" for c in WHITE_SPACE) + "]+",
                          "a run of one class, on every text saved")


def collapse_whitespace(text: str) -> str:
    """Collapse runs of Unicode White_Space to one U+0020 and trim both ends."""
    return _WS_RUN.sub(" ", text).strip(WHITE_SPACE)


def normalize_text(text: str) -> str:
    """The fingerprinted form: whitespace collapsed, trimmed, ``str.lower()``-ed."""
    return collapse_whitespace(text).lower()


def fnv1a64(data: bytes) -> int:
    """64-bit FNV-1a of ``data`` (offset 0xcbf29ce484222325, prime 0x100000001b3)."""
    h = FNV64_OFFSET
    for byte in data:
        h ^= byte
        h = (h * FNV64_PRIME) & _MASK64
    return h


def fingerprint(text: str) -> str:
    """The memory id of ``text``: ``"fp"`` + 16 hex digits, e.g. ``fp37dab55090b26303``."""
    return f"fp{fnv1a64(normalize_text(text).encode('utf-8')):016x}"


def fingerprint_variant(text: str, k: int) -> str:
    """The ``k``-th alternative id of ``text`` (``k`` >= 1): ``"fp"`` + 16 hex digits of FNV-1a
    over the normalized text's UTF-8 bytes + NUL + the decimal digits of ``k``."""
    data = normalize_text(text).encode("utf-8") + b"\x00" + str(k).encode("ascii")
    return f"fp{fnv1a64(data):016x}"


FINGERPRINT_RE = patterns.compile(r"fp[0-9a-f]{16}")
