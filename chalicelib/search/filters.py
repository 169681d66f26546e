"""Recall filters: which of a bank's memories a recall (or a preview) ranks.

A filter narrows the corpus before anything ranks: the ranking, its BM25F statistics included
(document count, average field lengths, document frequencies: ``scorer.CorpusStats.narrowed``),
runs over the memories that pass as if the bank held only them. Top-k is therefore taken over
passing memories only (a filtered recall never returns fewer hits than asked while more pass),
and a filtered recall equals the unfiltered recall of a bank holding only the passing memories.

``RecallFilter`` fields, each optional; every one given must hold:

- ``entities_any`` / ``entities_all``: handles (trimmed, lower-cased, as saved); the memory
  carries at least one / every one of them. ``tags_any`` / ``tags_all``: the same for tags.
- ``created_after`` / ``created_before``: ms since epoch, both exclusive, on ``created_at`` (when
  the memory was first saved; a reinforcement does not move it).
- ``session_id``: the memory's provenance (``source.session_id``): the session that first taught
  it, by a save with that ``session_id`` or by extraction from that session's turns (the
  turn-completed hook, ``memory_observe``). A later reinforcement from another session keeps the
  first one. Matched on the index's ``session`` column (``schema.session_key``, a 63-bit digest).

The older single ``tag`` argument is ``tags_all: [tag]`` (``with_tag``).
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import AfterValidator, ConfigDict, Field, model_validator

from ..banks.records import MAX_HANDLE_CHARS, MAX_HANDLES, MAX_SESSION_ID
from ..validation import Line, Millis, Model
from .schema import session_key
from .scorer import CorpusStats, SegmentData


def _handle(value: str) -> str:
    v = value.strip().lower()
    if not v:
        raise ValueError("a handle must not be blank")
    return v


Handle = Annotated[Line, Field(min_length=1, max_length=MAX_HANDLE_CHARS), AfterValidator(_handle)]
Handles = Annotated[list[Handle], Field(min_length=1, max_length=MAX_HANDLES)]


class RecallFilter(Model):
    """Which memories compete in a recall: only those passing every field given rank, and the
    ranking's statistics count only them. Each handle list holds 1 to 8 handles of up to 64
    characters (compared lower-cased); times are ms since epoch, and created_after must be below
    created_before."""

    model_config = ConfigDict(extra="forbid", strict=True)
    entities_any: Handles | None = Field(None, description="Only memories carrying at least one of these "
                                         "entities.", examples=[["alice", "billing-service"]])
    entities_all: Handles | None = Field(None, description="Only memories carrying every one of these entities.",
                                         examples=[["alice"]])
    tags_any: Handles | None = Field(None, description="Only memories carrying at least one of these tags.",
                                     examples=[["preference", "decision"]])
    tags_all: Handles | None = Field(None, description="Only memories carrying every one of these tags.",
                                     examples=[["preference"]])
    created_after: Millis | None = Field(None, description="Only memories first saved after this time "
                                         "(ms since epoch, exclusive).", examples=[1764547200000])
    created_before: Millis | None = Field(None, description="Only memories first saved before this time "
                                          "(ms since epoch, exclusive).", examples=[1767225600000])
    session_id: Line | None = Field(None, min_length=1, max_length=MAX_SESSION_ID,
                                    description="Only memories first taught by this conversation session "
                                    "(their source.session_id: saved with it, or extracted from its turns).",
                                    examples=["conv-2026-12-07"])

    @model_validator(mode="after")
    def _window(self) -> RecallFilter:
        after, before = self.created_after, self.created_before
        if after is not None and before is not None and after >= before:
            raise ValueError("created_after must be below created_before (both are exclusive)")
        return self

    def empty(self) -> bool:
        """True when no field is given (every memory passes)."""
        return all(v is None for v in self.__dict__.values())


def with_tag(where: RecallFilter | None, tag: str | None) -> RecallFilter | None:
    """``where`` with the single ``tag`` (already trimmed and lower-cased) added to ``tags_all``;
    ``None`` when neither narrows anything."""
    if tag:
        tags = list(dict.fromkeys([*(where.tags_all or []), tag])) if where is not None else [tag]
        where = (where or RecallFilter()).model_copy(update={"tags_all": tags})
    return None if where is None or where.empty() else where


def _holding(reader: Any, data: SegmentData, fieldname: str, handles: list[str], every: bool) -> np.ndarray:
    """A bool mask of the segment's documents holding any (``every``: all) of ``handles``."""
    out = np.full(data.n, every, dtype=bool)
    for h in handles:
        ids, _w = data.postings(reader, fieldname, h)
        one = np.zeros(data.n, dtype=bool)
        one[ids] = True
        out = (out & one) if every else (out | one)
    return out


def mask(where: RecallFilter, reader: Any, data: SegmentData) -> np.ndarray:
    """A bool mask of one segment's documents that pass ``where`` (deleted ones not excluded:
    the corpus statistics mask those), from the handle postings and the ``created_at`` and
    ``session`` columns; no record is decoded."""
    out = np.ones(data.n, dtype=bool)
    for fieldname, handles, every in (("entities", where.entities_any, False), ("entities", where.entities_all, True),
                                      ("tags", where.tags_any, False), ("tags", where.tags_all, True)):
        if handles:
            out &= _holding(reader, data, fieldname, handles, every)
    if where.created_after is not None:
        out &= data.created_at > where.created_after
    if where.created_before is not None:
        out &= data.created_at < where.created_before
    if where.session_id is not None:
        out &= data.session == session_key(where.session_id)
    return out


def narrow(stats: CorpusStats, readers: list[Any], where: RecallFilter | None) -> CorpusStats:
    """``stats`` over only the documents passing ``where`` (``stats`` itself without one)."""
    if where is None or where.empty():
        return stats
    return stats.narrowed([mask(where, r, stats.data(i)) for i, r in enumerate(readers)])


__all__ = ["RecallFilter", "mask", "narrow", "with_tag"]
