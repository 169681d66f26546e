"""Every use of Whoosh's private API, in one place, checked against the version it was written for.

Recall reads Whoosh's W3 codec below its public interface for speed: posting blocks read whole
(``W3LeafMatcher``'s ``_ids``/``_weights`` buffers), the field-length column read at once and
any column opened once per segment (``W3PerDocReader._cached_reader``), an open segment reader
moved onto a segment with more deletions (``SegmentReader._segment``, the ``deleted_docs_set``
cached property) and the index's table of contents (``FileIndex._read_toc``), and the stemmer a ``StemFilter`` calls
(``StemFilter._stem``, given an LRU cache). None of these is a stable interface, so this module
is the only one allowed to touch them, and it refuses to import under any Whoosh version but
``WRITTEN_FOR`` (the ``whoosh-reloaded`` pin in requirements.txt): upgrading Whoosh means
re-reading the code below against the new sources, then moving the pin here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import whoosh
from whoosh.codec import whoosh3
from whoosh.matching.wrappers import FilterMatcher
from whoosh.reading import SegmentReader, TermNotFound
from whoosh.util.numeric import length_to_byte

WRITTEN_FOR: tuple[int, int, int] = (2, 7, 5)  # whoosh-reloaded==2.7.5


class WhooshVersionError(ImportError):
    """The installed Whoosh is not the version this module's private accesses were written for."""


def check_version(found: Sequence[int] | str) -> None:
    """Raise ``WhooshVersionError`` unless ``found`` (a version tuple such as ``whoosh.__version__``
    or a string ``"2.7.5"``) is ``WRITTEN_FOR``."""
    parts = tuple(int(p) for p in found.split(".")) if isinstance(found, str) else tuple(found)
    if parts != WRITTEN_FOR:
        raise WhooshVersionError(
            f"chalicelib.search.whoosh_private was written against Whoosh {'.'.join(map(str, WRITTEN_FOR))} "
            f"and reaches into its private API; found {'.'.join(map(str, parts))}. Re-check this module "
            "against that version's sources before moving WRITTEN_FOR (or install the pinned version).")


check_version(whoosh.__version__)  # at import: fail loudly rather than rank wrongly


def set_stemmer(stem_filter: Any, stem: Any) -> None:
    """Make a ``StemFilter`` stem with ``stem`` (a ``str -> str`` callable) instead of the
    function its ``clear()`` installs as ``_stem``."""
    stem_filter._stem = stem


def read_toc(ix: Any) -> Any:
    """The latest committed table of contents of a ``FileIndex`` (``.segments``, ``.schema``,
    ``.generation``) without opening a reader."""
    return ix._read_toc()


def deleted_docs(reader: Any) -> frozenset[int] | set[int]:
    """The deleted document numbers of one segment reader (empty when it has none); the set
    ``SegmentReader`` caches for its own postings filter."""
    return reader.deleted_docs_set if reader.has_deletions() else frozenset()


def move_deletions(reader: Any, seg: Any) -> bool:
    """Point an open segment reader at ``seg``, the same segment with more documents deleted
    (the W3 codec reads deletions from the ``Segment`` object alone; the segment's files never
    change), instead of reopening it; False when the reader is not of that shape."""
    perdoc = getattr(reader, "_perdoc", None)
    if type(reader) is not SegmentReader or not isinstance(perdoc, whoosh3.W3PerDocReader):
        return False
    old = reader.segment()
    if (perdoc._segment is not old or old.doc_count_all() != seg.doc_count_all()
            or not set(old.deleted_docs()) <= set(seg.deleted_docs())):
        return False
    reader._segment = perdoc._segment = seg
    # deleted_docs_set is a cached_property (kept in the instance dict): drop it, or postings()
    # and recall keep filtering with the old deletion set
    reader.__dict__.pop("deleted_docs_set", None)
    return True


def length_bytes(reader: Any, fieldname: str) -> bytes | None:
    """A segment's field-length column as bytes, one Whoosh length byte per document (decode
    with ``whoosh.util.numeric.byte_to_length``): the W3 codec's cached column read at once
    (``None`` when the segment has no such column), or for another codec one public
    per-document call each."""
    n = reader.doc_count_all()
    try:
        col = reader._perdoc._cached_reader(whoosh3._lenfield(fieldname), whoosh3.LENGTHS_COLUMN)
    except AttributeError:  # another codec: the public per-document call
        return bytes(length_to_byte(reader.doc_field_length(d, fieldname, 0) or 0) for d in range(n))
    return None if col is None else bytes(col[d] for d in range(n))


def cached_column(reader: Any, fieldname: str) -> Any:
    """A segment reader's raw column reader of ``fieldname`` (values before the field's
    ``from_column_value``), opened once and kept by the W3 codec's per-document reader (its
    ``_cached_reader``) for the reader's life, or ``None`` when the segment has no such column;
    for another codec a fresh public column reader each call."""
    column = reader.schema[fieldname].column_type
    try:
        return reader._perdoc._cached_reader(fieldname, column)
    except AttributeError:  # another codec: the public call
        return reader.column_reader(fieldname, translate=False) if reader.has_column(fieldname) else None


def posting_blocks(reader: Any, fieldname: str, text: str) -> Iterator[tuple[Sequence[int], Sequence[float]]]:
    """``(docnums, weights)`` blocks of a term's postings in one segment, deleted documents
    included (the caller masks them); nothing when the segment lacks the term. Reads the W3
    codec's blocks whole instead of making one matcher call per posting."""
    try:
        m = reader.postings(fieldname, text)
    except TermNotFound:
        return
    if isinstance(m, FilterMatcher):
        m = m.child  # the deletion filter: the caller's mask covers deleted documents
    if isinstance(m, whoosh3.W3LeafMatcher):
        while m.is_active():
            if m._ids is None:
                m._read_ids()
            if m._weights is None:
                m._read_weights()
            yield m._ids[m._i:], m._weights[m._i:]
            if m._lastblock:
                return
            m._next_block()
        return
    ids, weights = [], []
    while m.is_active():
        ids.append(m.id())
        weights.append(m.weight())
        m.next()
    yield ids, weights


__all__ = [
    "WRITTEN_FOR",
    "WhooshVersionError",
    "cached_column",
    "check_version",
    "deleted_docs",
    "length_bytes",
    "move_deletions",
    "posting_blocks",
    "read_toc",
]
