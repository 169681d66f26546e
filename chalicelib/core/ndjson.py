"""ndjson import files: their size bounds, their lines as a stream, and one line parsed and
validated (the bank import and the Turnstone row import share it). Errors of a line are
``ValueError`` whose message is reported against the line number by the caller."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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
        raise PayloadTooLarge(f"Inline imports are limited to {_shown(cap)}{hint}.")


def check_upload_size(size: int) -> None:
    """413 ``payload_too_large`` when an uploaded import file of ``size`` bytes is over
    ``Settings.import_upload_max_bytes`` (checked before the file is read)."""
    cap = get_settings().import_upload_max_bytes
    if size > cap:
        raise PayloadTooLarge(f"Import files are limited to {_shown(cap)}; this one has {size} bytes: "
                              "split it and import the parts one after the other.",
                              details={"limit_bytes": cap, "size_bytes": size})


def _shown(n: int) -> str:
    return f"{n // MIB} MB" if n % MIB == 0 else f"{n} bytes"


def lines_of(chunks: Iterable[bytes], max_bytes: int | None = None) -> Iterator[bytes]:
    """The lines of a file given as consecutive ``chunks``, as ``bytes.splitlines`` cuts them (at
    ``\\n``, ``\\r`` and ``\\r\\n``, without the breaks), one at a time: a file is never held
    whole. Past ``max_bytes`` bytes read, 413 ``payload_too_large`` (a file that grew after its
    size was checked)."""
    pending: list[bytes] = []  # the parts of the line not ended yet
    total, cr = 0, False
    for chunk in chunks:
        if not chunk:
            continue
        total += len(chunk)
        if max_bytes is not None and total > max_bytes:
            raise PayloadTooLarge(f"Import files are limited to {_shown(max_bytes)}.",
                                  details={"limit_bytes": max_bytes})
        if cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the \n of a \r\n cut between two chunks
        cr = chunk.endswith(b"\r")
        for part in chunk.splitlines(keepends=True):
            if part.endswith((b"\n", b"\r")):
                yield b"".join([*pending, part[:-2] if part.endswith(b"\r\n") else part[:-1]])
                pending = []
            else:
                pending.append(part)
    if pending:
        yield b"".join(pending)


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
