"""What the sync and async clients share: the operation table's row type, the retry policy, request
building and response parsing. No I/O here."""

from __future__ import annotations

import email.utils
import hashlib
import json
import random
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from . import models

F = TypeVar("F", bound=Callable[..., Any])

# Methods whose repeat has the effect of one call: retried after a connection error too.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT"})
RETRY_STATUSES = frozenset({429, 503})
USER_AGENT = "cairn-client-python/0.1"


@dataclass(frozen=True)
class Op:
    """One operation of openapi.json: ``method``, ``path`` (with ``{name}`` placeholders),
    ``responses`` (success status -> name of its model in ``cairn_client.models``, or ``None`` when
    the document names none) and ``keyed`` (the server honours an ``Idempotency-Key`` on it)."""

    method: str
    path: str
    responses: dict[int, str | None] = field(default_factory=dict)
    keyed: bool = False


def operation(op_id: str) -> Callable[[F], F]:
    """Mark a client method as the one calling ``op_id`` (``Cairn.operation_methods`` lists them)."""

    def mark(fn: F) -> F:
        fn.__cairn_operation__ = op_id  # type: ignore[attr-defined]
        return fn

    return mark


def operation_methods(root: object) -> dict[str, str]:
    """``{operationId: "surface.method"}`` over ``root``'s methods and its surfaces' (recursively)."""
    found: dict[str, str] = {}

    def walk(obj: object, prefix: str, seen: set[int]) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        for name in dir(obj):
            if name.startswith("__"):
                continue
            attr = getattr(type(obj), name, None)
            op_id = getattr(attr, "__cairn_operation__", None)
            if op_id is not None:
                found[op_id] = prefix + name
            elif not name.startswith("_"):
                value = getattr(obj, name, None)
                if isinstance(value, Surface):
                    walk(value, f"{prefix}{name}.", seen)

    walk(root, "", set())
    return found


class Surface:
    """A group of methods (``cairn.banks``, ``cairn.team.entries``...) over one transport."""

    def __init__(self, transport: Any) -> None:
        self._t = transport


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` further attempts (0: none) after a 429 or 503 answer, or after a connection
    error on an idempotent or keyed request. The wait before retry ``n`` (from 0) is the answer's
    ``Retry-After`` (seconds or an HTTP date, capped at ``max_retry_after``) when it has one, else
    ``min(max_backoff, backoff * 2**n)`` with jitter (between half and all of it), seconds."""

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        after = retry_after(response) if response is not None else None
        if after is not None:
            return min(after, self.max_retry_after)
        cap = min(self.max_backoff, self.backoff * 2 ** attempt)
        return cap / 2 + random.uniform(0, cap / 2)


def retry_after(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header in seconds (never negative), or ``None`` when absent or unreadable."""
    raw = response.headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retryable_status(response: httpx.Response) -> bool:
    return response.status_code in RETRY_STATUSES


def header_token_problem(value: str) -> str | None:
    """What makes ``value`` unusable as one token in an HTTP header (a bearer token, a bank name),
    as words to follow its name ("contains whitespace at position 3"); None when it is printable
    ASCII without whitespace. The value itself is never quoted: it may be a secret."""
    for i, ch in enumerate(value):
        if ch.isspace():
            return f"contains whitespace or a line break at position {i}"
        if not "\x21" <= ch <= "\x7e":
            return f"contains a character that is not printable ASCII at position {i}"
    return None


def json_body(value: Any) -> bytes:
    """``value`` as a request's JSON body (UTF-8, compact, the bytes ``httpx`` would send). Raises
    ``ValueError`` saying what cannot be encoded: a lone surrogate in a ``str`` (text decoded with
    ``surrogateescape``, say), a NaN or infinite float."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end]
        raise ValueError(f"the request body cannot be encoded as UTF-8: its text holds {bad!r}, a lone surrogate "
                         "(fix how the text was decoded, or remove it)") from None


def may_retry_connect(op: Op, method: str) -> bool:
    """A connection error is retried only where a repeat cannot apply the change twice."""
    return op.keyed or method in IDEMPOTENT_METHODS


def new_idempotency_key() -> str:
    return str(uuid.uuid4())


def url_path(op: Op, params: Mapping[str, Any]) -> str:
    """``op.path`` with each ``{name}`` replaced by ``params[name]``, percent-encoded."""
    path = op.path
    for name, value in params.items():
        path = path.replace("{" + name + "}", quote(str(value), safe=""))
    return path


def clean_query(query: Mapping[str, Any] | None) -> dict[str, str]:
    """Query parameters without the ``None`` ones; booleans as ``true``/``false``."""
    out: dict[str, str] = {}
    for k, v in (query or {}).items():
        if v is None:
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def observed_ids(messages: list[dict[str, Any]], session_id: str | None, turn_id: str | None) -> tuple[str, str]:
    """``(session_id, turn_id)`` of an observed exchange, as the server's ``memory_observe`` picks
    them: the ones given, else ``"observe"`` and ``obs-`` + 32 hex digits of the SHA-256 of the
    messages' canonical JSON, so the same exchange sent twice is extracted once."""
    if turn_id is None:
        canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        turn_id = "obs-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]
    return session_id or "observe", turn_id


def clean_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON body without the fields left ``None`` (the server applies its defaults)."""
    return {k: v for k, v in body.items() if v is not None}


RecallFilter = models.RecallFilter | Mapping[str, Any]
"""A recall or preview ``filter``: the model, or a mapping of its fields (``entities_any``,
``entities_all``, ``tags_any``, ``tags_all``, ``created_after``, ``created_before``, ``session_id``)."""


def filter_body(value: RecallFilter | None) -> dict[str, Any] | None:
    """A ``filter`` as its JSON object (fields left ``None`` out), or ``None``."""
    if value is None:
        return None
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return clean_body(value)


def parse(op: Op, response: httpx.Response) -> Any:
    """A success answer as the document describes it: its model from ``cairn_client.models`` when
    the document names one for that status, else the decoded JSON (objects as ``Record``), else the
    raw bytes."""
    ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        return response.content
    data = response.json()
    name = op.responses.get(response.status_code)
    model = getattr(models, name, None) if name else None
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_validate(data)
    return record(data)


class Record(dict[str, Any]):
    """A JSON object of an answer the document names no model for: a ``dict`` whose keys also
    read as attributes (``saved.memory.id``), as a model's fields do. A key that is also a dict
    method's name (``items``, ``keys``...) reads only as ``r["items"]``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def record(value: Any) -> Any:
    """JSON data with every object made a ``Record``."""
    if isinstance(value, dict):
        return Record((k, record(v)) for k, v in value.items())
    if isinstance(value, list):
        return [record(v) for v in value]
    return value


def field_of(value: Any, name: str) -> Any:
    """``value[name]`` of a dict, or the attribute of a model (``None`` when absent)."""
    if isinstance(value, Mapping):
        return value.get(name)
    if isinstance(value, BaseModel):
        for attr, info in type(value).model_fields.items():
            if name in (attr, info.alias):  # a generated model renames keywords: ``from`` -> ``from_``
                return getattr(value, attr)
        return (value.model_extra or {}).get(name)
    return None


def as_data(value: Any) -> Any:
    """A model as plain JSON data (``dict``); anything else as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return value


async def async_sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def sync_sleep(seconds: float) -> None:
    time.sleep(seconds)


def ndjson_bytes(source: Any) -> bytes:
    """An import's body: a path (``str`` or ``os.PathLike``, as ``export`` takes one) as the file's
    bytes, ``bytes`` as they are, a ``str`` that starts with ``{`` (after blanks) as NDJSON text, a
    binary file object as what it reads, an iterable of dicts as one JSON line each. Raises
    ``FileNotFoundError`` for a path that names no file (never imports the path itself) and
    ``TypeError`` for anything else."""
    import json
    import os

    if isinstance(source, bytes | bytearray):
        return bytes(source)
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return source.encode()
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as f:
            return f.read()
    if hasattr(source, "read"):
        data = source.read()
        return data.encode() if isinstance(data, str) else bytes(data)
    try:
        return b"".join(json.dumps(as_data(row), ensure_ascii=False).encode() + b"\n" for row in source)
    except TypeError as exc:
        raise TypeError("source must be bytes, NDJSON text, a path, a binary file or an iterable of dicts") from exc


class Sink:
    """Where an export goes: ``dest`` ``None`` (kept in memory: ``result()`` is the bytes), a path
    (``str`` or ``os.PathLike``) or a binary file object (``result()`` is the byte count)."""

    def __init__(self, dest: Any) -> None:
        import io

        self._owned = dest is not None and not hasattr(dest, "write")
        self._keep = dest is None
        self._file: Any = io.BytesIO() if dest is None else open(dest, "wb") if self._owned else dest  # noqa: SIM115
        self.count = 0

    def write(self, chunk: bytes) -> None:
        self._file.write(chunk)
        self.count += len(chunk)

    def abort(self) -> None:
        """Close a file this sink opened (an export that failed leaves what it wrote)."""
        if self._owned:
            self._file.close()

    def result(self) -> bytes | int:
        if self._keep:
            return bytes(self._file.getvalue())
        if self._owned:
            self._file.close()
        return self.count
