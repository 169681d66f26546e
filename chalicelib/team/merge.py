"""The server-side Yjs merge (keystone-team-memory.md, "How editing
works"). The server is the only author of an entry's plain text: it decodes each client update,
refuses what is not plain text, checks causal completeness on a scratch copy, and derives the text.

pycrdt merges but does not say what an update contains: an
update with missing dependencies is silently kept pending, a V2 update is silently empty, and
format items set and cleared in one update only show at the struct level. So ``inspect()`` reads
the V1 encoding itself (lib0 varints; Yjs ``UpdateDecoderV1``) just far enough to classify it:

- plain text only: every item's parent is the root ``content`` (by name, or implied by an origin),
  has no parent key (a Map entry) and holds a string or deleted content; anything else (another
  root, a nested type, a Map, an embed, a format item, JSON/Any/binary/subdocument content) or
  bytes that do not decode exactly (a V2 update, garbage) is ``UnsupportedUpdate`` (422
  ``unsupported_update``);
- ``clients``: ``{client id: (first clock, end clock)}`` of the structs it carries, so client-id
  ownership and the unit cap can be judged.

``apply()`` then merges into a scratch ``Doc`` and raises ``MissingDependency`` (409
``missing_dependency``) when structs stay pending or the delete set names clocks the merged state
lacks; nothing is stored in either case.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import Conflict, Unprocessable
from ..storage.damage import Damaged
from ..validation import InvalidInput, text_problem

if TYPE_CHECKING:
    from pycrdt import Doc

ROOT = "content"

# Yjs content refs (lib0 ``contentRefs``)
GC, DELETED, JSON, BINARY, STRING, EMBED, FORMAT, TYPE, ANY, DOC, SKIP = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
_NAMES = {JSON: "JSON content", BINARY: "binary content", EMBED: "an embed", FORMAT: "a format attribute",
          TYPE: "a nested type", ANY: "a Map/Array value", DOC: "a subdocument"}


class UnsupportedUpdate(Unprocessable):
    """422 ``unsupported_update``: not a plain-text V1 update of the root ``content``."""

    code = "unsupported_update"


class MissingDependency(Conflict):
    """409 ``missing_dependency``; ``details.stateVector`` is the server's (base64)."""

    code = "missing_dependency"


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ValueError("unexpected end of update")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def uint(self) -> int:
        n = shift = 0
        while True:
            b = self.byte()
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def string(self) -> str:
        size = self.uint()
        if self.pos + size > len(self.data):
            raise ValueError("string past the end")
        raw = self.data[self.pos:self.pos + size]
        self.pos += size
        return raw.decode("utf-8")


@dataclass
class Inspection:
    """What one V1 update carries: ``clients`` {client: (first clock, end clock)} of its structs
    (GC and items; skips excluded), ``deletes`` [(client, clock, length)], ``items`` (count)."""

    clients: dict[int, tuple[int, int]] = field(default_factory=dict)
    deletes: list[tuple[int, int, int]] = field(default_factory=list)
    items: int = 0


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def _check_parent(r: _Reader, info: int) -> None:
    """Read an item's explicit parent (no origin, no right neighbour): it must be the root text
    ``content`` itself, not another root, a nested type or a Map entry."""
    if r.uint() == 1:
        root = r.string()
        if root != ROOT:
            raise UnsupportedUpdate(f"Only the root text '{ROOT}' may be edited; this update writes "
                                    f"'{root[:64]}'.", details={"reason": "other_root"})
    else:
        raise UnsupportedUpdate("Nested types are not supported.", details={"reason": "nested_type"})
    if info & 0x20:
        raise UnsupportedUpdate("Map entries are not supported (plain text only).", details={"reason": "map"})


def _item_length(r: _Reader, info: int) -> int:
    """Read one item struct after its info byte; its length in clocks (UTF-16 units for text)."""
    has_origin, has_right = info & 0x80, info & 0x40
    if has_origin:
        r.uint(), r.uint()
    if has_right:
        r.uint(), r.uint()
    if not (has_origin or has_right):
        _check_parent(r, info)
    ref = info & 0x1F
    if ref == STRING:
        inserted = r.string()
        problem = text_problem(inserted)  # the entry's text is body text like any other
        if problem:
            raise InvalidInput("update", f"inserted text {problem}")
        return _utf16_len(inserted)
    if ref == DELETED:
        return r.uint()
    if ref in _NAMES:
        raise UnsupportedUpdate(f"Only plain text is supported; this update carries {_NAMES[ref]}.",
                                details={"reason": _NAMES[ref]})
    raise ValueError(f"unknown content ref {ref}")


def _read_client_structs(r: _Reader, out: Inspection) -> None:
    """Read one client's run of structs into ``out`` (its clock range, its item count)."""
    n_structs, client, clock = r.uint(), r.uint(), r.uint()
    first, end = clock, clock
    for _ in range(n_structs):
        info = r.byte()
        ref = info & 0x1F
        if ref in (GC, SKIP):
            length = r.uint()
            if ref == GC:
                end = clock + length
            clock += length
            continue
        clock += _item_length(r, info)
        out.items += 1
        end = clock
    if end > first:
        lo, hi = out.clients.get(client, (first, end))
        out.clients[client] = (min(lo, first), max(hi, end))


def _read_delete_set(r: _Reader, out: Inspection) -> None:
    for _ in range(r.uint()):
        client = r.uint()
        for _ in range(r.uint()):
            out.deletes.append((client, r.uint(), r.uint()))


def inspect(update: bytes) -> Inspection:
    """Decode a V1 update's structs and delete set; ``UnsupportedUpdate`` unless plain text, 400
    ``validation_error`` (field ``update``) when inserted text breaks the body-text rule
    (``chalicelib.validation``: NUL and control characters other than TAB, LF and CR)."""
    r = _Reader(update)
    out = Inspection()
    try:
        for _ in range(r.uint()):
            _read_client_structs(r, out)
        _read_delete_set(r, out)
    except UnicodeDecodeError:
        raise UnsupportedUpdate("The update does not decode as a Yjs V1 update.",
                                details={"reason": "undecodable"}) from None
    except ValueError as exc:
        raise UnsupportedUpdate(f"The update does not decode as a Yjs V1 update ({exc}).",
                                details={"reason": "undecodable"}) from None
    if r.pos != len(update):
        # A V2 update read as V1 decodes an empty prefix and leaves the rest over.
        raise UnsupportedUpdate("The update does not decode as a Yjs V1 update (a V2 update?).",
                                details={"reason": "undecodable"})
    return out


def decode_b64(value: str, field_name: str = "update") -> bytes:
    """Standard base64 (padding optional) -> bytes; 400 ``validation_error`` naming the field."""
    from ..errors import BadRequest
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (ValueError, TypeError):
        raise BadRequest(f"{field_name} is not valid base64.", details={"field": field_name}) from None


def b64(data: bytes) -> str:
    """Standard base64 text of ``data``."""
    return base64.b64encode(data).decode("ascii")


def load(state_parts: list[bytes], *, entry_id: str = "?", client_id: int | None = None) -> Doc:
    """A ``Doc`` (of Yjs client ``client_id``, when it will edit) with the root text ``content``
    and every update of ``state_parts`` applied. Raises ``Damaged`` (409 ``damaged``) when a
    stored part does not decode (a corrupt S3 ``state.bin`` or log payload of entry ``entry_id``)."""
    from pycrdt import Doc, Text  # on first use: only the team routes load the CRDT library

    doc: Doc = Doc() if client_id is None else Doc(client_id=client_id)
    doc.get(ROOT, type=Text)
    for part in state_parts:
        if part:
            try:
                doc.apply_update(part)
            except ValueError:
                raise Damaged("team entry", entry_id, "state: not a Yjs V1 update",
                              hint="Its stored edit state is corrupt; continue in a new entry.") from None
    return doc


def _common_ends(old: str, new: str) -> tuple[int, int]:
    """``(prefix, suffix)``: the lengths in characters of the longest common prefix of ``old``
    and ``new`` and of their longest common suffix after it."""
    n = min(len(old), len(new))
    prefix = 0
    while prefix < n and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < n - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def replacement(state_parts: list[bytes], text: str, client_id: int, *, entry_id: str = "?") -> bytes | None:
    """The V1 update, authored by Yjs client ``client_id``, that turns the text of the document
    made of ``state_parts`` into ``text``: one deletion and one insertion between the common
    prefix and suffix, so concurrent edits elsewhere in the text merge with it. ``None`` when the
    text is already ``text``. Raises ``Damaged`` as ``load``."""
    from pycrdt import Text

    doc = load(state_parts, entry_id=entry_id, client_id=client_id)
    ytext = doc.get(ROOT, type=Text)
    old = str(ytext)
    if old == text:
        return None
    before = doc.get_state()
    prefix, suffix = _common_ends(old, text)
    # pycrdt indexes text by UTF-8 bytes; slicing at character boundaries keeps every index whole
    start = len(old[:prefix].encode("utf-8"))
    removed = len(old[prefix:len(old) - suffix].encode("utf-8"))
    with doc.transaction():
        if removed:
            del ytext[start:start + removed]
        inserted = text[prefix:len(text) - suffix]
        if inserted:
            ytext.insert(start, inserted)
    return doc.get_update(before)


def text_of(doc: Doc) -> str:
    """The plain text of the root ``content``."""
    from pycrdt import Text

    return str(doc.get(ROOT, type=Text))


def state_vector(doc: Doc) -> dict[int, int]:
    """``{client: clock}`` decoded from the doc's V1 state vector."""
    r = _Reader(doc.get_state())
    return {r.uint(): r.uint() for _ in range(r.uint())}


def units(sv: dict[int, int]) -> int:
    """UTF-16 units inserted into a document, live and deleted: the sum of its clocks."""
    return sum(sv.values())


@dataclass
class Merged:
    """The outcome of merging one update: the scratch ``doc`` (now holding it), its text, state
    vector, and the update's inspection."""

    doc: Doc
    text: str
    sv: dict[int, int]
    inspection: Inspection
    before: dict[int, int] = field(default_factory=dict)


def apply(state_parts: list[bytes], update: bytes, insp: Inspection | None = None, *, entry_id: str = "?") -> Merged:
    """Merge ``update`` into the state made of ``state_parts`` on a scratch doc.

    Raises ``UnsupportedUpdate`` (not plain text), ``MissingDependency`` (structs that depend on
    clocks the server lacks stay pending; or a deletion of clocks the merged state lacks) or
    ``Damaged`` (the stored state of entry ``entry_id`` does not decode).
    """
    from pycrdt import get_update

    insp = insp or inspect(update)
    doc = load(state_parts, entry_id=entry_id)
    before = doc.get_state()
    before_sv = state_vector(doc)
    try:
        doc.apply_update(update)
    except ValueError:
        raise UnsupportedUpdate("The update does not decode as a Yjs update.",
                                details={"reason": "undecodable"}) from None
    after = doc.get_state()
    sv = state_vector(doc)
    # Structs the merged doc still lacks after applying: they wait for a missing dependency.
    leftover = _Reader(get_update(update, after))
    missing = leftover.uint() != 0
    if not missing:
        missing = any(clock + length > sv.get(client, 0) for client, clock, length in insp.deletes)
    if missing:
        raise MissingDependency("The update depends on changes the server does not have; send your changes "
                                "against details.stateVector.", details={"stateVector": b64(before)})
    return Merged(doc=doc, text=text_of(doc), sv=sv, inspection=insp, before=before_sv)

