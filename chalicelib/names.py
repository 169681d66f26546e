"""Names that become storage keys: banks and rules (the bank worker's
``[a-z0-9][a-z0-9_-]{0,63}``). A name that fails is 400 ``invalid_name`` before anything is read
or written, so ``../evil`` can never reach an S3 key."""

from __future__ import annotations

from . import patterns
from .errors import BadRequest

NAME_RE = patterns.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def check_name(value: object, what: str = "bank") -> str:
    """Return ``value`` when it is a valid bank or rule name, else raise 400 ``invalid_name``.

    ``what`` ("bank" or "rule") is used in the message.
    """
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        shown = value if isinstance(value, str) and len(value) <= 80 else "(name)"
        raise BadRequest(
            f"Invalid {what} name {shown!r}: use 1 to 64 characters of a-z, 0-9, '_' or '-', "
            "starting with a letter or digit.",
            code="invalid_name", details={"field": what, "pattern": NAME_RE.pattern})
    return value
