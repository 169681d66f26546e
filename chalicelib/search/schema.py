"""The Whoosh schema of a bank's recall index and the record <-> document mapping.

Every memory record of a bank incarnation is one document, live or not (``live`` is ``"1"`` or
``"0"``), so recall can rank with ``include_superseded`` and a purge replaces the document with a
content-free one. Each document keeps what ranking and rendering need and nothing twice: the
record minus the fields its columns hold, compactly (``encode_record``), in a column compressed
in blocks of many documents (``whoosh_private.RecordColumn``), so a recall reads no record from
DynamoDB.

| field        | type                              | role |
|--------------|-----------------------------------|------|
| id           | column only (``IdField``)         | a record's document (``index.IdLookup``); tie-break (id asc) |
| text         | TEXT (memory analyzer)            | BM25F |
| name         | TEXT (memory analyzer)            | BM25F (structured memories) |
| description  | TEXT (memory analyzer)            | BM25F (structured memories) |
| cjk          | TEXT (CJK bigrams)                | BM25F over the CJK runs of text, name, description (none without) |
| entities     | KEYWORD (exact handles)           | entity candidates and ``entity_hits`` |
| tags         | KEYWORD (exact handles)           | tag filter |
| live         | ID                                | live filter |
| updated_at   | column only (int64)               | recency, ties, entity candidates newest first |
| pinned, corroboration | column only (uint8, int64) | the ambient floor's order |
| created_at   | column only (int64)               | the time and neighbourhood signals |
| session      | column only (int64)               | ``session_key(source.session_id)``: the neighbourhood signal |
| record       | column only (``RecordColumn``)    | the rest of the record (``encode_record``) |
| vector       | column only (fixed 388 bytes)     | the semantic signal (``core.vectors.index_value``) |
| linked       | column only (uint8)               | conflict links: 1 some, 0 none, 2 (default) not known |

``vector`` holds the record's current sentence vector: its float32 scale then its int8 codes, all
zero bytes for a record without one.

``FORMAT`` names this layout: an index directory or snapshot of another format is never opened
(the bank is rebuilt from its records instead). ``vector`` and ``linked`` joined format 2 later: an
index written without them gets them when opened (``with_added_fields``), its documents having no
vector and links not known (``linked`` 2: their records are read to see) until they are written
again or the bank is rebuilt, so a deploy forces no rebuild. A merge gives the documents of a
segment without a column that column's default, which is why ``linked``'s is "not known".
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any, NamedTuple, NotRequired, TypedDict

from whoosh.columns import FixedBytesColumn, NumericColumn, VarBytesColumn
from whoosh.fields import COLUMN, ID, KEYWORD, TEXT, Schema

from ..core import vectors
from ..core.records import Memory, decode_memory
from ..storage.damage import Damaged
from .analyzers import (
    HANDLE_SEP,
    cjk_analyzer,
    handle_analyzer,
    has_cjk,
    memory_analyzer,
)
from .whoosh_private import InliningCodec, RecordColumn, cached_column

# The layout of documents and their record column; a directory or snapshot of another format is
# rebuilt (1: the whole record as JSON in a stored field, numeric fields indexed too).
FORMAT = 2

TEXT_FIELDS = ("text", "name", "description", "cjk")


class IdField(COLUMN):
    """The memory id as a per-document column of UTF-8 bytes and no term: a term per document
    cost about 150 bytes of term index and postings each, for lookups a per-segment table of the
    column does as well (``index.IdLookup``). Pickled into the index's table of contents by its
    import path, like ``whoosh_private.RecordColumn``: renaming or moving it makes existing
    indexes unreadable (they are then rebuilt)."""

    def __init__(self) -> None:
        super().__init__(VarBytesColumn())

    def to_bytes(self, v: str) -> bytes:
        return v.encode()

    def from_bytes(self, b: bytes) -> str:
        return bytes(b).decode()


@lru_cache(maxsize=1)
def schema() -> Schema:
    """The recall index schema (see the module docstring)."""
    ma = memory_analyzer()
    return Schema(
        id=IdField(),
        text=TEXT(analyzer=ma, phrase=False),
        name=TEXT(analyzer=ma, phrase=False),
        description=TEXT(analyzer=ma, phrase=False),
        cjk=TEXT(analyzer=cjk_analyzer(), phrase=False),
        entities=KEYWORD(analyzer=handle_analyzer(), scorable=False),
        tags=KEYWORD(analyzer=handle_analyzer(), scorable=False),
        live=ID(),
        # read as columns only (sorting, scoring): no term at all
        updated_at=COLUMN(NumericColumn("q")),
        pinned=COLUMN(NumericColumn("B")),
        corroboration=COLUMN(NumericColumn("q")),
        created_at=COLUMN(NumericColumn("q")),
        session=COLUMN(NumericColumn("q")),
        record=COLUMN(RecordColumn()),
        vector=vector_field(),
        linked=linked_field(),
    )


VECTOR_FIELD = "vector"


def vector_field() -> COLUMN:
    """The ``vector`` column: ``core.vectors.INDEX_BYTES`` per document, zeros for none."""
    return COLUMN(FixedBytesColumn(vectors.INDEX_BYTES))


LINKED_FIELD = "linked"
LINK_UNKNOWN = 2  # ``linked`` of a document written before the column: its record says


def linked_field() -> COLUMN:
    """The ``linked`` column: 1 when the record has conflict links, 0 when not."""
    return COLUMN(NumericColumn("B", default=LINK_UNKNOWN))


def with_added_fields(ix: Any) -> Any:
    """``ix`` (an open Whoosh index) with the fields format 2 gained later (``vector``,
    ``linked``), added in a commit of its own when the index was written before them; returns
    the index to use."""
    added = {VECTOR_FIELD: vector_field, LINKED_FIELD: linked_field}
    missing = [name for name in added if name not in ix.schema]
    if not missing:
        return ix
    writer = ix.writer(codec=codec())
    try:
        for name in missing:
            writer.add_field(name, added[name]())
    except BaseException:
        writer.cancel()
        raise
    writer.commit()
    return ix


# posting lists shorter than this are kept in the term index (``whoosh_private.InliningCodec``):
# most of a vocabulary's terms are rare, and a list of its own costs about 70 bytes of framing
# where an inlined posting costs about 5 (4: 5.3 MB at 10k memories, 16: 4.8 MB, 64: 4.76 MB)
INLINE_LIMIT = 16


@lru_cache(maxsize=1)
def codec() -> InliningCodec:
    """The codec every writer of a recall index uses (``ix.writer(codec=codec())``); segments
    keep the codec that wrote them, so any reader reads them."""
    return InliningCodec(inlinelimit=INLINE_LIMIT)


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
    record: bytes
    text: NotRequired[str]
    name: NotRequired[str]
    description: NotRequired[str]
    cjk: NotRequired[str]
    entities: NotRequired[str]
    tags: NotRequired[str]
    vector: NotRequired[bytes]
    linked: int


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
        "record": encode_record(rec), "linked": int(bool(rec.conflicts_with)),
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
    vec = vectors.index_value(rec)
    if vec is not None:
        doc["vector"] = vec
    return doc


# held by the document's columns, so never in its record value
_IN_COLUMNS = frozenset({"id", "updated_at", "pinned", "corroboration"})


def encode_record(rec: Memory) -> bytes:
    """The record value of a document: the record as compact UTF-8 JSON without the fields the
    columns hold (``_IN_COLUMNS``), without fields at their default, and without ``created_at``
    when it equals ``updated_at``. ``decode_record`` gives back a record equal to ``rec``."""
    data = rec.model_dump(mode="json", exclude_defaults=True, exclude=set(_IN_COLUMNS))
    if data.get("created_at") == rec.updated_at:
        del data["created_at"]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def decode_record(raw: Any, *, id: str, updated_at: int, pinned: int, corroboration: int) -> Memory:
    """The record of a document from its record value (``encode_record``) and its columns.
    Raises ``Damaged`` (kind ``memory``, key ``id``) when it does not decode (documents are written
    from decoded records, so only a damaged snapshot or cache directory has one)."""
    try:
        data = json.loads(raw)
    except (TypeError, ValueError, RecursionError):
        raise Damaged("memory", id, "index document: not valid JSON") from None
    if not isinstance(data, dict) or _IN_COLUMNS & data.keys():
        raise Damaged("memory", id, "index document: not a record value")
    data.setdefault("created_at", updated_at)
    data.update(id=id, updated_at=updated_at, pinned=bool(pinned), corroboration=corroboration)
    return decode_memory(data, key=id)


class ColumnValues(NamedTuple):
    """A document's values of the columns its record is read with (``read_record``)."""

    id: str
    updated_at: int
    pinned: int
    corroboration: int


def read_record(reader: Any, docnum: int, known: ColumnValues | None = None) -> Memory:
    """The record of document ``docnum`` of one segment reader, from its columns (each opened
    once per reader). ``known``: its ``ColumnValues`` already read (the ranking's per-segment
    arrays), so only the record value is read. Raises ``Damaged`` when it does not decode, and
    whatever a damaged column file raises while it is read."""
    def column(name: str) -> Any:
        col = cached_column(reader, name)
        return reader.schema[name].from_column_value(col[docnum]) if col is not None else None

    key, updated_at, pinned, corroboration = known if known is not None else (
        column("id"), column("updated_at"), column("pinned"), column("corroboration"))
    if not isinstance(key, str) or not key:
        raise Damaged("memory", None, "index document: no id")
    if not (type(updated_at) is int and type(pinned) is int and type(corroboration) is int):
        raise Damaged("memory", key, "index document: a column is missing")
    return decode_record(column("record"), id=key, updated_at=updated_at, pinned=pinned, corroboration=corroboration)
