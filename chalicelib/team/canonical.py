"""The canonical document of an entry and its SHA-256.

The document is what retrieval would index for the entry, so the hash a reviewer sends with
``accept`` pins exactly the text they reviewed. Canonical form (version 1):

    UTF-8 bytes of the JSON object
    {"v": 1, "kind": <kind>, "title": <title>, "supersedes": <entry id or null>,
     "links": [<link>, ...], "text": <text>}
    serialised with keys sorted, separators "," and ":" (no whitespace), non-ASCII characters
    written as themselves (ensure_ascii=False), strings exactly as stored (no Unicode
    normalisation), links in their stored order.

``title`` and ``text`` are the DLP-processed values (what is indexed: findings replaced at
``redact``), so ``documentSha256`` of ``GET /entries/{id}`` is computed over the same ``text``
that GET shows. ``sha256_hex`` is lower-case hex of 64 characters.
"""

from __future__ import annotations

import hashlib
import json
from typing import TypedDict

VERSION = 1


class CanonicalDocument(TypedDict):
    """The canonical document before serialisation (see the module docstring)."""

    v: int
    kind: str
    title: str
    supersedes: str | None
    links: list[str]
    text: str


def document(*, kind: str, title: str, supersedes: str | None, links: list[str], text: str) -> CanonicalDocument:
    """The canonical document of an entry."""
    return {"v": VERSION, "kind": kind, "title": title, "supersedes": supersedes, "links": list(links), "text": text}


def serialize(doc: CanonicalDocument) -> bytes:
    """The canonical bytes of ``doc`` (see the module docstring)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_hex(doc: CanonicalDocument) -> str:
    """SHA-256 (lower-case hex) of ``serialize(doc)``."""
    return hashlib.sha256(serialize(doc)).hexdigest()


def indexed_text(doc: CanonicalDocument) -> str:
    """The text the retrieval projection indexes: title, then a blank line, then the text."""
    return f"{doc['title']}\n\n{doc['text']}" if doc["text"] else doc["title"]
