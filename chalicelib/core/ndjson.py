"""One line of an ndjson import file, parsed and validated (the bank import and the
Turnstone row import share it). Errors are ``ValueError`` whose message is
reported against the line number by the caller."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import PayloadTooLarge
from ..settings import get_settings
from ..validation import InvalidInput, loads

M = TypeVar("M", bound=BaseModel)

MIB = 1024 * 1024


def check_inline_size(body: bytes, hint: str = "") -> None:
    """413 ``payload_too_large`` when an inline import body is over
    ``Settings.import_inline_bytes`` (UTF-8 bytes); ``hint`` ends the message (what to do instead)."""
    cap = get_settings().import_inline_bytes
    if len(body) > cap:
        size = f"{cap // MIB} MB" if cap % MIB == 0 else f"{cap} bytes"
        raise PayloadTooLarge(f"Inline imports are limited to {size}{hint}.")


def parse_line(raw: bytes, model: type[M]) -> M:
    """Decode one UTF-8 JSON object line through the edge rules (``chalicelib.validation.loads``)
    into ``model``.

    Raises ``ValueError`` ("not valid JSON", "JSON nested deeper than 64 levels", "a line must be
    a JSON object", or "<field>: <problem>" for the first validation error); the message never
    quotes the value."""
    try:
        data = loads(raw, root="line")
    except InvalidInput as exc:
        raise ValueError(exc.problem if exc.field == "line" else f"{exc.field}: {exc.problem}") from None
    if not isinstance(data, dict):
        raise ValueError("a line must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}") from None
