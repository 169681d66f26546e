"""The Whoosh schema of a bank's recall index and the record <-> document mapping.

Every memory record of a bank incarnation is one document, live or not (``live`` is ``"1"`` or
``"0"``), so recall can rank with ``include_superseded`` and a purge replaces the document with a
content-free one. The whole record is stored (``record``, JSON) so a recall reads no record from
DynamoDB.

| field        | type                         | role |
|--------------|------------------------------|------|
| id           | ID unique, stored, sortable  | ``update_document`` key; tie-break (id asc) |
| text         | TEXT (memory analyzer)       | BM25F |
| name         | TEXT (memory analyzer)       | BM25F (structured memories) |
| description  | TEXT (memory analyzer)       | BM25F (structured memories) |
| cjk          | TEXT (CJK bigrams)           | BM25F over the CJK runs of text, name, description (none without) |
| entities     | KEYWORD (exact handles)      | entity candidates and ``entity_hits`` |
| tags         | KEYWORD (exact handles)      | tag filter |
| live         | ID                           | live filter |
| updated_at   | NUMERIC sortable, one term   | recency, ties, entity candidates newest first |
| pinned, corroboration | NUMERIC sortable, one term | the ambient floor's order |
| created_at   | NUMERIC sortable, one term   | the time and neighbourhood signals |
| session      | NUMERIC sortable, one term   | ``session_key(source.session_id)``: the neighbourhood signal |
| record       | STORED                       | the full record (JSON) |
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any, NotRequired, TypedDict

from pydantic import ValidationError
from whoosh.fields import ID, KEYWORD, NUMERIC, STORED, TEXT, Schema

from ..core.records import Memory, decode_memory
from ..storage.damage import Damaged
from .analyzers import (
    HANDLE_SEP,
    cjk_analyzer,
    handle_analyzer,
    has_cjk,
    memory_analyzer,
)

TEXT_FIELDS = ("text", "name", "description", "cjk")


@lru_cache(maxsize=1)
def schema() -> Schema:
    """The recall index schema (see the module docstring)."""
    ma = memory_analyzer()
    return Schema(
        id=ID(unique=True, stored=True, sortable=True),
        text=TEXT(analyzer=ma, phrase=False),
        name=TEXT(analyzer=ma, phrase=False),
        description=TEXT(analyzer=ma, phrase=False),
        cjk=TEXT(analyzer=cjk_analyzer(), phrase=False),
        entities=KEYWORD(analyzer=handle_analyzer(), scorable=False),
        tags=KEYWORD(analyzer=handle_analyzer(), scorable=False),
        live=ID(),
        # read as columns only (sorting, scoring): one term per value, not Whoosh's 16 trie
        # terms (shift_step 4) that only speed up NumericRange queries, which recall never runs
        updated_at=NUMERIC(bits=64, sortable=True, shift_step=0),
        pinned=NUMERIC(bits=32, sortable=True, shift_step=0),
        corroboration=NUMERIC(bits=64, sortable=True, shift_step=0),
        created_at=NUMERIC(bits=64, sortable=True, shift_step=0),
        session=NUMERIC(bits=64, sortable=True, shift_step=0),
        record=STORED(),
    )


class Document(TypedDict):
    """The fields of one record's Whoosh document (``writer.add_document(**doc)``): the schema's
    fields, the optional text and handle fields left out when empty."""

    id: str
    live: str
    updated_at: int
    pinned: int
    corroboration: int
    created_at: int
    session: int
    record: str
    text: NotRequired[str]
    name: NotRequired[str]
    description: NotRequired[str]
    cjk: NotRequired[str]
    entities: NotRequired[str]
    tags: NotRequired[str]


def session_key(session_id: str | None) -> int:
    """A session id as a column value: the first 63 bits of its BLAKE2b digest, never 0; 0 for
    none. Two sessions sharing a key (odds 2**-63 per pair) would count as one for the
    neighbourhood signal only."""
    if not session_id:
        return 0
    return (int.from_bytes(hashlib.blake2b(session_id.encode(), digest_size=8).digest(), "big") >> 1) or 1


def to_document(rec: Memory) -> Document:
    """The Whoosh document of one record (empty optional fields left out)."""
    doc: Document = {
        "id": rec.id, "live": "1" if rec.live else "0", "updated_at": int(rec.updated_at),
        "pinned": int(rec.pinned), "corroboration": int(rec.corroboration),
        "created_at": int(rec.created_at), "session": session_key(rec.source.session_id),
        "record": json.dumps(rec.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")),
    }
    if rec.text:
        doc["text"] = rec.text
    if rec.name:
        doc["name"] = rec.name
    if rec.description:
        doc["description"] = rec.description
    cjk = " ".join(x for x in (rec.text, rec.name, rec.description) if x)
    if has_cjk(cjk):  # without a CJK character the field has no token: leaving it out is the same
        doc["cjk"] = cjk
    if rec.entities:
        doc["entities"] = HANDLE_SEP.join(rec.entities)
    if rec.tags:
        doc["tags"] = HANDLE_SEP.join(rec.tags)
    return doc


def from_stored(fields: dict[str, Any]) -> Memory:
    """The record stored in a document. Raises ``Damaged`` when it does not decode (documents
    are written from decoded records, so only a damaged snapshot or cache directory has one)."""
    raw: Any = fields.get("record")  # anything a damaged document holds: both parsers refuse it below
    try:
        return Memory.model_validate_json(raw)
    except (ValidationError, TypeError, ValueError):
        pass
    key = fields.get("id") if isinstance(fields.get("id"), str) else None
    try:
        data = json.loads(raw)
    except (TypeError, ValueError, RecursionError):
        raise Damaged("memory", key, "index document: not valid JSON") from None
    return decode_memory(data, key=key)
