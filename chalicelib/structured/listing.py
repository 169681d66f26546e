"""Paged listings of structured memory's own objects (workstreams, projects, sessions): a key
query on the org's ``<kind>#`` range, by id, keeping only what the caller may see (each kind's
module passes its visibility rule), a page at a time behind an opaque cursor bound to the
listing and the org."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..core.store import decode_cursor, encode_cursor
from ..errors import BadRequest
from ..storage.damage import Damaged
from . import objects

T = TypeVar("T")

PAGE_DEFAULT = 50  # objects per page when no limit is given
PAGE_MAX = 200


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page by id; ``next_cursor`` ``None`` on the last page; ``damaged`` counts stored objects
    of the range read that could not be decoded and were left out."""

    items: list[T]
    next_cursor: str | None
    damaged: int


def _start(org_id: str, kind: str, cursor: str | None) -> str | None:
    start = decode_cursor(cursor, f"structured.{kind}", org_id, {"after": str})
    after = str(start["after"]) if start is not None else None
    if after is not None and not objects.ID_RE.fullmatch(after):
        raise BadRequest("Invalid cursor: it is malformed or was issued by another listing.",
                         details={"field": "cursor"})
    return after


def page(org_id: str, kind: str, shown: Callable[[objects.Stored], T | None], *, limit: int,
         cursor: str | None) -> Page[T]:
    """Up to ``limit`` (1..``PAGE_MAX``) objects of ``kind`` after ``cursor``, each as ``shown``
    renders it (``None``: the caller may not see it, skipped; pages are filled from the visible
    ones alone). Raises 400 ``validation_error`` for a limit out of range or a cursor of another
    listing or org."""
    if not 1 <= limit <= PAGE_MAX:
        raise BadRequest(f"limit must be between 1 and {PAGE_MAX}.", details={"field": "limit"})
    items: list[T] = []
    last, more, damaged = None, False, 0
    for object_id, stored in objects.iter_kind(org_id, kind, _start(org_id, kind, cursor)):
        if isinstance(stored, Damaged):
            damaged += 1
            continue
        item = shown(stored)
        if item is None:
            continue
        if len(items) == limit:
            more = True
            break
        items.append(item)
        last = object_id
    next_cursor = encode_cursor(f"structured.{kind}", org_id, {"after": last}) if more and last else None
    return Page(items=items, next_cursor=next_cursor, damaged=damaged)
