"""The banks area's key formats and stored names: fingerprint and name pointers, tag counters, trash
entries, the backfill cursor, internal revision ops, the S3 prefixes of rules, exports and uploads,
and page cursors. Domain code calls these and never builds a key itself.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any

from ...clock import now_ms
from ...errors import BadRequest, CairnError
from ...storage import blobs
from ...validation import loads

POINTER_PREFIX = "~fp/"


NAME_POINTER_PREFIX = "~name/"


TAG_PREFIX = "~tag/"  # a bank's tag counters: ~tag/<lane:02d>/<tag>, t_live and t_all (tag_total)


TRASH_PREFIX = ".trash/"


NAMESPACE_PREFIX = "!"  # internal namespaces: a key no bank name ([a-z0-9]...) can take


# A backfill's change (``banks.backfill``): the record as it was, given its current vector. Only
# the item's ``vec`` is updated; its revision (op ``embed``) exists so that readers catch up, and
# no history, export or ``as_of`` recall shows it (``INTERNAL_OPS``): the memory did not change.
EMBED_OP = "embed"


INTERNAL_OPS = frozenset({EMBED_OP})


BACKFILL_KEY = "~backfill"  # a bank's backfill cursor, in its records partition (no record: no range reads it)


def tag_key(lane: int, tag: str) -> str:
    """The sort key of the counter of ``tag`` in lane ``lane``."""
    return f"{TAG_PREFIX}{lane:02d}/{tag}"


def pointer_key(fp: str) -> str:
    """The sort key of the pointer from text fingerprint ``fp`` to the memory holding that text."""
    return POINTER_PREFIX + fp


def rules_prefix(org_id: str, bank: str) -> str:
    """``<org>/banks/<bank>/rules/``: where a live bank's rule objects live."""
    return blobs.org_key(org_id, "banks", bank, "rules") + "/"


def trash_rules_prefix(org_id: str, trashed_to: str) -> str:
    """``<org>/.trash/<trashed_to>/rules/``: where a trashed bank's rule objects wait."""
    return blobs.org_key(org_id, ".trash", trashed_to, "rules") + "/"


def exports_prefix(org_id: str, bank: str) -> str:
    """``<org>/exports/<bank>/``: a bank's large exports."""
    return blobs.org_key(org_id, "exports", bank) + "/"


def export_key(org_id: str, bank: str) -> str:
    """A new, unique key for one export file of ``bank``."""
    return exports_prefix(org_id, bank) + f"{now_ms()}-{uuid.uuid4().hex[:8]}.jsonl"


def upload_key(bank: str) -> str:
    """A new upload key for an import into ``bank``, relative to the org's prefix."""
    return f"{upload_prefix(bank)}{uuid.uuid4().hex}.jsonl"


def upload_prefix(bank: str) -> str:
    """``imports/<bank>/``: where the uploads for an import into ``bank`` go (org-relative)."""
    return f"imports/{bank}/"


def upload_object(org_id: str, rel: str) -> str:
    """The bucket key of the org-relative upload key ``rel``."""
    return blobs.org_key(org_id, rel)


def _owner_tag(owner: str) -> str:
    return hashlib.sha256(owner.encode("utf-8")).hexdigest()[:16]


def encode_cursor(kind: str, owner: str, data: Mapping[str, str | int]) -> str:
    """An opaque base64url page cursor holding ``data``, bound to the listing that issued it:
    ``kind`` names the listing and ``owner`` what it lists (an org, a bank, a filter), so a
    cursor replayed elsewhere is refused by ``decode_cursor``."""
    body = {"r": kind, "o": _owner_tag(owner), **data}
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, kind: str, owner: str, fields: dict[str, type],
                  prefixes: dict[str, str] | None = None) -> Mapping[str, Any] | None:
    """The ``data`` of a cursor made by ``encode_cursor(kind, owner, data)``, checked to hold
    exactly ``fields`` (name -> ``str``, never empty, or ``int``), each string field named in
    ``prefixes`` starting with its prefix; ``None`` for no cursor. A malformed cursor, or one
    issued by another listing or for another owner, is 400 ``validation_error`` naming ``cursor``."""
    if not cursor:
        return None
    bad = BadRequest("Invalid cursor: it is malformed or was issued by another listing.", details={"field": "cursor"})
    try:
        data = loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)), root="cursor")
    except (ValueError, binascii.Error, CairnError):
        raise bad from None
    if (not isinstance(data, dict) or data.get("r") != kind or data.get("o") != _owner_tag(owner)
            or set(data) != {"r", "o", *fields}
            or not all(type(data[name]) is t and data[name] != "" for name, t in fields.items())
            or not all(str(data[name]).startswith(p) for name, p in (prefixes or {}).items())):
        raise bad
    return {name: data[name] for name in fields}
