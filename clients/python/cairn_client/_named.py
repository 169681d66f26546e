"""Records addressed by a key in one structured-memory scope: what the framework integrations
(``cairn_client.anthropic``, ``cairn_client.langgraph``) store their files and items as.

Each record is a structured memory (``/v1/api/memories``, Turnstone's contract): its identity is
``(name, scope, scope_id)`` and a save upserts it, so writing a key again, even after a delete,
replaces the record and never meets the content fingerprint of a bank memory. The name is
``<prefix>_<slug>_<hash>``: a readable slug of the key and 16 hex digits of its SHA-256, so a key
maps to one name with no lookup; the record's content holds the key itself, which the readers
check.

The integrations describe what they do as *plans*: generators that yield ``Get``, ``List``,
``Save``, ``Delete`` or ``Search`` and receive each call's result, so one copy of their logic
runs on the sync client (``run``) and the async one (``arun``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from ._core import as_data
from .errors import NotFound

MAX_NAME = 256  # a structured memory name, after normalization
MAX_CONTENT = 65536  # characters of a structured memory's content over REST
MAX_DESCRIPTION = 512
LIST_CAP = 200  # the most ``GET /v1/api/memories`` returns, with no cursor
SEARCH_CAP = 50  # the most ``POST /v1/api/memories/search`` returns
PREFIX_RE = re.compile(r"[a-z][a-z0-9]{0,15}")
_SLUG_CHARS = re.compile(r"[^a-z0-9]+")
_SLUG_MAX = 48
# what a content line may not hold (the service's text rule): escaped as JSON does
_JSON_UNSAFE = re.compile("[\x7f\ud800-\udfff]")


@dataclass(frozen=True)
class Scope:
    """Where the records live: a structured-memory scope (``user``, ``global`` or ``workstream``)
    and its id (``None`` for ``global``, and for ``user``, meaning the token's own user)."""

    scope: str = "user"
    scope_id: str | None = None

    def __post_init__(self) -> None:
        if self.scope not in ("user", "global", "workstream"):
            raise ValueError(f"scope must be 'user', 'global' or 'workstream', not {self.scope!r}")
        if self.scope == "workstream" and not self.scope_id:
            raise ValueError("a workstream scope needs its scope_id (the workstream's id)")


def check_prefix(prefix: str) -> str:
    """``prefix`` when it is 1-16 characters of ``[a-z0-9]`` starting with a letter, else
    ``ValueError``: it starts every record name of an integration instance."""
    if not isinstance(prefix, str) or not PREFIX_RE.fullmatch(prefix):
        raise ValueError(f"prefix must be 1 to 16 characters of a-z and 0-9, starting with a letter; got {prefix!r}")
    return prefix


def record_name(prefix: str, key: str) -> str:
    """The structured memory name of ``key``: ``<prefix>_<slug>_<16 hex of sha256(prefix + NUL +
    key)>``, at most 83 characters of ``[a-z0-9_]`` (a valid, already normalized name)."""
    digest = hashlib.sha256(f"{prefix}\x00{key}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    slug = _SLUG_CHARS.sub("_", key.lower()).strip("_")[:_SLUG_MAX].strip("_")
    return "_".join(p for p in (prefix, slug, digest) if p)


def json_text(value: Any) -> str:
    """Compact JSON of ``value`` that the service accepts as content: non-ASCII kept readable,
    DEL and lone surrogates escaped (``\\uXXXX``) as JSON allows."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def description_line(text: str) -> str:
    """``text`` as a structured memory description: control characters as spaces, at most 512
    characters."""
    clean = "".join(" " if ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF
                    or c in "\u2028\u2029" else c for c in text)
    clean = " ".join(clean.split())
    return clean[:MAX_DESCRIPTION] or "record"


# --- the calls a plan makes --------------------------------------------------------------------

@dataclass(frozen=True)
class Get:
    """The row named ``name`` (a dict), or ``None`` when there is none."""

    name: str


@dataclass(frozen=True)
class List:
    """``Listing`` of the scope's newest records (at most ``LIST_CAP``)."""


@dataclass(frozen=True)
class Save:
    """Upsert ``name``: the row saved."""

    name: str
    content: str
    description: str


@dataclass(frozen=True)
class Delete:
    """Tombstone ``name``: ``True``, or ``False`` when there was none."""

    name: str


@dataclass(frozen=True)
class Search:
    """The scope's best ``SEARCH_CAP`` rows for ``query`` (Cairn's recall), best first."""

    query: str


Call = Get | List | Save | Delete | Search
T = TypeVar("T")
Plan = Generator[Call, Any, T]


@dataclass(frozen=True)
class Listing:
    """Rows newest first; ``full`` when the service's cap was reached, so older rows may exist."""

    rows: list[dict[str, Any]]
    full: bool


def _rows(listing: Any) -> list[dict[str, Any]]:
    return [r for r in as_data(listing).get("memories", []) if isinstance(r, dict)]


def _listing(listing: Any) -> Listing:
    rows = _rows(listing)
    return Listing(rows, len(rows) >= LIST_CAP)


_RAISE = object()  # a 404 that is an error, not an answer


def _request(s: Any, call: Call, kw: dict[str, str | None]) -> tuple[Callable[[], Any], Callable[[Any], Any], Any]:
    """``(send, finish, if_missing)`` of one call on a client's ``structured`` surface: ``send()``
    makes the request (a coroutine on the async client), ``finish`` turns its answer into the
    call's result, ``if_missing`` is the result of a 404 (``_RAISE``: the error propagates)."""
    if isinstance(call, Get):
        return (lambda: s.get(call.name, **kw)), as_data, None
    if isinstance(call, List):
        return (lambda: s.list(limit=LIST_CAP, **kw)), _listing, _RAISE
    if isinstance(call, Save):
        return ((lambda: s.save(call.name, call.content, description=call.description, type="general", **kw)),
                as_data, _RAISE)
    if isinstance(call, Delete):
        return (lambda: s.delete(call.name, **kw)), lambda _: True, False
    return (lambda: s.search(call.query, limit=SEARCH_CAP, **kw)), _rows, _RAISE


def run(plan: Plan[T], cairn: Any, scope: Scope) -> T:
    """Run ``plan`` on a sync ``Cairn`` client; a ``CairnError`` other than the 404s the calls
    expect propagates."""
    kw = {"scope": scope.scope, "scope_id": scope.scope_id}
    result: Any = None
    try:
        while True:
            send, finish, if_missing = _request(cairn.structured, plan.send(result), kw)
            try:
                result = finish(send())
            except NotFound:
                if if_missing is _RAISE:
                    raise
                result = if_missing
    except StopIteration as done:
        return done.value


async def arun(plan: Plan[T], cairn: Any, scope: Scope) -> T:
    """``run`` on an ``AsyncCairn`` client."""
    kw = {"scope": scope.scope, "scope_id": scope.scope_id}
    result: Any = None
    try:
        while True:
            send, finish, if_missing = _request(cairn.structured, plan.send(result), kw)
            try:
                result = finish(await send())
            except NotFound:
                if if_missing is _RAISE:
                    raise
                result = if_missing
    except StopIteration as done:
        return done.value
