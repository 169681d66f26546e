"""A memory's sentence vector as stored with its record (the semantic recall signal's input).

What is embedded (``embedded_text``): a bank memory's ``text``; a structured memory's ``name``,
``description`` and ``text`` joined by newlines (the parts that are set); a team projection's
``text`` (the entry's title and text); nothing for a purged record. The model is
``chalicelib.semantic`` (``MODEL_ID``, ``DIM``); a text it does not cover (mostly CJK) gets no
vector.

Stored form (``MemoryModel.vec`` and ``RevisionModel.vec``, a binary attribute of about 410
bytes): ``VERSION`` (1 byte), the model id's length (1 byte) and UTF-8 bytes, the first
``DIGEST_BYTES`` of the BLAKE2b digest of the embedded text, the scale (float32, little-endian)
and ``DIM`` int8 codes: ``vector ~= codes * scale``. A vector whose model id or digest does not
match the record's current text under the current model is stale: the next write of the record
embeds it again. The recall index keeps the scale and the codes only (``index_value``): a
document gets a vector only when it is current.

A bank's ``vectors`` counter (per lane row, ``core.store``) names the model it counts
(``vectors_model``; a row written before it did counts ``COUNTED_BEFORE``'s): a row counting
another model reads as 0 and its next write sets the count afresh, so a model change never leaves
old-model vectors counted as current (``banks.backfill`` then embeds them again).

A record carries its vector privately (``Memory.vector_blob``): never in ``public()``, exports,
history, logs or audit details.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import semantic
from .records import Memory

VERSION = 1
DIGEST_BYTES = 8
_SCALE = struct.Struct("<f")
INDEX_BYTES = _SCALE.size + semantic.DIM  # what a document's vector column holds
COUNTED_BEFORE = "minilm-l6-v2"  # the model a counter counts when its row names none


def counts_current(counter_model: object) -> bool:
    """Whether a ``vectors`` counter naming ``counter_model`` (``None``: a row written before
    counters named theirs) counts the current model's vectors."""
    return (counter_model if isinstance(counter_model, str) else COUNTED_BEFORE) == semantic.MODEL_ID


def embedded_text(rec: Memory) -> str:
    """The text ``rec``'s vector embeds (module docstring); ``""`` for a purged record."""
    if rec.purged_at is not None:
        return ""
    if rec.name is None and rec.description is None:
        return rec.text
    return "\n".join(p for p in (rec.name, rec.description, rec.text) if p)


def text_digest(text: str) -> bytes:
    """The first ``DIGEST_BYTES`` of the BLAKE2b digest of ``text``'s UTF-8 bytes."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


@dataclass(frozen=True)
class StoredVector:
    """A decoded stored vector: ``model`` id, ``digest`` of the text embedded, int8 ``codes``
    (``DIM`` bytes) and ``scale``."""

    model: str
    digest: bytes
    codes: bytes
    scale: float

    def current_for(self, text: str) -> bool:
        """Whether this is the current model's vector of ``text``."""
        return self.model == semantic.MODEL_ID and self.digest == text_digest(text)


def encode(vec: np.ndarray, text: str) -> bytes:
    """The stored form of unit vector ``vec`` (``DIM`` floats) embedding ``text``."""
    v = np.asarray(vec, dtype=np.float32).reshape(-1)
    peak = float(np.abs(v).max()) if len(v) else 0.0
    scale = peak / 127.0 if peak > 0 else 1.0
    codes = np.clip(np.rint(v / scale), -127, 127).astype(np.int8)
    model = semantic.MODEL_ID.encode("utf-8")
    return (bytes([VERSION, len(model)]) + model + text_digest(text) + _SCALE.pack(scale) + codes.tobytes())


def decode(blob: bytes | None) -> StoredVector | None:
    """The vector ``blob`` holds, or ``None`` (none, or a blob that does not decode: treated as
    no vector, so the next write embeds again)."""
    if not blob or len(blob) < 2 or blob[0] != VERSION:
        return None
    n = blob[1]
    head = 2 + n + DIGEST_BYTES
    if len(blob) != head + _SCALE.size + semantic.DIM:
        return None
    try:
        model = bytes(blob[2:2 + n]).decode("utf-8")
    except UnicodeDecodeError:
        return None
    (scale,) = _SCALE.unpack_from(blob, head)
    if not np.isfinite(scale) or scale <= 0:
        return None
    return StoredVector(model, bytes(blob[2 + n:head]), bytes(blob[head + _SCALE.size:]), float(scale))


def current_blob(rec: Memory) -> bytes | None:
    """``rec``'s stored vector when it is the current model's vector of its current text, else
    ``None``."""
    got = decode(rec.vector_blob())
    return rec.vector_blob() if got is not None and got.current_for(embedded_text(rec)) else None


def index_value(rec: Memory) -> bytes | None:
    """What the recall index's vector column holds for ``rec`` (scale then codes,
    ``INDEX_BYTES``), or ``None`` when it has no current vector."""
    got = decode(current_blob(rec))
    return None if got is None else _SCALE.pack(got.scale) + got.codes


def attach(writes: Sequence[tuple[Memory, Memory | None]]) -> int:
    """Give each ``(record, previous)`` pair's record its current vector: its own or the previous
    record's when still current for its text, else embedded now, all missing ones in one batch
    (the embedder keeps recent texts: a retried write embeds nothing again). A record with no
    text to embed, or one the model does not cover, or any record while the model is not
    available, gets none. Returns how many texts were embedded (given a vector now)."""
    todo: list[tuple[Memory, str]] = []
    for rec, prev in writes:
        text = embedded_text(rec)
        blob = current_blob(rec)
        if blob is None and prev is not None and (got := decode(prev.vector_blob())) is not None \
                and got.current_for(text):
            blob = prev.vector_blob()
        rec.set_vector_blob(blob)
        if blob is None and text.strip():
            todo.append((rec, text))
    if not todo:
        return 0
    done = 0
    for (rec, text), vec in zip(todo, semantic.embed_documents([t for _r, t in todo]), strict=True):
        rec.set_vector_blob(encode(vec, text) if vec is not None else None)
        done += vec is not None
    return done


def has_current(rec: Memory | None) -> bool:
    """Whether ``rec`` is live and carries the current model's vector of its text (what a bank's
    ``vectors`` counter counts)."""
    return rec is not None and rec.live and current_blob(rec) is not None
