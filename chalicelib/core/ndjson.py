"""One line of an ndjson import file, parsed and validated (the bank import of issue 2 item 9
and the Turnstone row import of issue 4 share it). Errors are ``ValueError`` whose message is
reported against the line number by the caller."""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def parse_line(raw: bytes, model: type[M]) -> M:
    """Decode one UTF-8 JSON object line into ``model``.

    Raises ``ValueError`` ("not valid JSON", "a line must be a JSON object", or
    "<field>: <problem>" for the first validation error)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ValueError("not valid JSON") from None
    if not isinstance(data, dict):
        raise ValueError("a line must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}") from None
