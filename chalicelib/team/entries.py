"""Team-memory entries: create, read, list, patch, edit through Yjs updates, history
(keystone-team-memory.md, "Entries", "How editing works" and "Routes").

Wire shape of an entry (``public()``): ``{id, spaceId, kind, title, status, links, supersedes,
supersededBy, classification, metaVersion, revision, createdBy, createdAt, updatedAt,
acceptedAt, acceptedBy}`` with times as ISO 8601 UTC with milliseconds. ``GET`` adds ``text``
(DLP-gated), ``documentSha256``, ``projectionSha256``, ``stateVector``, ``snapshot`` (base64 V1
update of the whole document) and ``limits``.

Edits: ``post_update`` merges one client V1 update (``merge``), checks caps, client-id ownership
and the rate, then commits in ONE transaction the log row (``seq#``), the updateId row (``uid#``),
new client-id owners (``client#``), the entry's derived text and counters (conditioned on the
``log_seq`` read), the rate counters and the audit event. Anything refused writes nothing.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator
from pynamodb.exceptions import DoesNotExist

from .. import audit, clock
from ..auth.principal import Principal
from ..core.store import decode_cursor, encode_cursor
from ..errors import (
    BadRequest,
    CairnError,
    Conflict,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    Unprocessable,
)
from ..storage import blobs
from ..storage.damage import MAX_SAFE_INT, Damaged, time_ms
from ..storage.tables import (
    TeamEntryModel,
    TeamEventModel,
    TeamRateModel,
    TeamSpaceModel,
    TeamUpdateModel,
    bind,
)
from ..storage.txn import Retry, run_transaction
from ..validation import Line
from . import canonical, dlp, merge, permissions, spaces
from .limits import get_limits

KINDS = ("decision", "convention", "note", "glossary")
STATUSES = ("draft", "accepted", "superseded", "archived")
EDITABLE = ("draft", "accepted")
UPDATE_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
ENTRY_ID = re.compile(r"ent_[0-9a-f]{20}")
SOURCE_LINK = re.compile(r"source:[A-Za-z0-9_.:-]{1,200}")
ENTRY_LINK = re.compile(r"entry:(ent_[0-9a-f]{20})")


# --- request bodies ---------------------------------------------------------------------------

class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _check_links(v: list[str] | None) -> list[str] | None:
    if v is None:
        return v
    for link in v:
        if SOURCE_LINK.fullmatch(link) or ENTRY_LINK.fullmatch(link):
            continue
        url = urlparse(link)
        if url.scheme != "https" or not url.netloc or len(link) > 2048:
            raise ValueError(f"link {link[:80]!r} is neither an https URL, 'source:<id>' nor 'entry:<id>'")
    return v


class EntryCreate(_In):
    """Body of ``POST /entries``: an empty draft."""

    space_id: Line = Field(alias="spaceId", min_length=1, max_length=64)
    kind: Literal["decision", "convention", "note", "glossary"]
    title: Line = Field(min_length=1, max_length=200)
    links: list[Line] = Field(default_factory=list, max_length=50)
    supersedes: Line | None = None
    classification: Literal["public", "internal", "confidential", "restricted"] | None = None
    _links = field_validator("links")(classmethod(lambda cls, v: _check_links(v)))


class EntryPatch(_In):
    """Body of ``PATCH /entries/{id}``; ``ifMetaVersion`` makes it conditional."""

    title: Line | None = Field(None, min_length=1, max_length=200)
    kind: Literal["decision", "convention", "note", "glossary"] | None = None
    links: list[Line] | None = Field(None, max_length=50)
    supersedes: Line | None = None
    classification: Literal["public", "internal", "confidential", "restricted"] | None = None
    if_meta_version: int | None = Field(None, alias="ifMetaVersion", ge=1)
    _links = field_validator("links")(classmethod(lambda cls, v: _check_links(v)))


class UpdatePost(_In):
    """Body of ``POST /entries/{id}/updates``: one base64 Yjs V1 update under a retry-safe id."""

    update_id: StrictStr = Field(alias="updateId", pattern=r"^[A-Za-z0-9_-]{8,64}$")
    update: StrictStr = Field(min_length=1, max_length=200_000)


# --- errors -----------------------------------------------------------------------------------

class EntryReadOnly(Conflict):
    """409 ``entry_read_only``: superseded and archived entries cannot change."""

    code = "entry_read_only"


def limit_error(cls: type[CairnError], code: str, message: str, variable: str, limit: int, value: int) -> CairnError:
    """A cap error naming the ``KEYSTONE_CONTEXT_MEMORY_*`` variable, its limit and the value seen."""
    return cls(message, code=code, details={"variable": variable, "limit": limit, "value": value})


# --- helpers ----------------------------------------------------------------------------------

def iso(ms: object) -> str | None:
    """ms since epoch -> ISO 8601 UTC with milliseconds (``2026-11-29T14:04:41.123Z``); ``None``
    for ``None`` or anything that is not a time (a damaged stored value)."""
    ms = time_ms(ms)
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def entry_key(org_id: str, entry_id: str) -> str:
    """Hash key of an entry's log, events: ``<org_id>#<entry_id>``."""
    return f"{org_id}#{entry_id}"


def state_key(org_id: str, entry_id: str) -> str:
    """S3 key of an entry's compacted Yjs state: ``<org>/entries/<id>/state.bin``."""
    return blobs.org_key(org_id, "entries", entry_id, "state.bin")


def public(row: TeamEntryModel) -> dict[str, Any]:
    """The entry's metadata as the API shows it; the title is DLP-gated like the text."""
    d = row.doc
    return {"id": row.entry_id, "spaceId": row.space_id, "kind": row.kind, "title": dlp.gated(d["title"])[0],
            "status": row.status,
            "links": list(d.get("links", [])), "supersedes": d.get("supersedes"), "supersededBy": d.get("superseded_by"),
            "classification": d["classification"], "metaVersion": int(row.meta_version), "revision": int(row.revision),
            "createdBy": d["created_by"], "createdAt": iso(row.created_at), "updatedAt": iso(row.updated_at),
            "acceptedAt": iso(d.get("accepted_at")), "acceptedBy": d.get("accepted_by")}


_ROW_FIELDS = ("space_sk", "space_id", "status", "kind", "doc", "text", "units", "meta_version", "revision",
               "log_seq", "compacted_seq", "created_at", "updated_at")
_DOC_FIELDS = {"title": str, "classification": str, "created_by": str, "changed_by": list, "links": list}
DAMAGED_HINT = "Archive it and continue in a new entry, or restore its stored row."


def check_row(row: TeamEntryModel) -> TeamEntryModel:
    """The one decoder of a stored entry row: ``row`` when every field its readers use is there
    with its type (``doc`` with title, classification, authorship and links; a known status and
    kind; counters and times in range), else ``Damaged`` (409 ``damaged``)."""
    def bad(reason: str) -> Damaged:
        return Damaged("team entry", row.entry_id, reason, hint=DAMAGED_HINT)

    for name in _ROW_FIELDS:
        if name in row.damaged:
            raise bad(f"{name}: {row.damaged[name]}")
    if row.status not in STATUSES or row.kind not in KINDS:
        raise bad("status or kind: unknown value")
    if not isinstance(row.doc, dict):
        raise bad("doc: not a JSON object")
    for name, typ in _DOC_FIELDS.items():
        if not isinstance(row.doc.get(name), typ):
            raise bad(f"doc.{name}: missing or wrong type")
    for name in ("units", "meta_version", "revision", "log_seq", "compacted_seq"):
        value = getattr(row, name)
        if not isinstance(value, (int, float)) or not 0 <= value <= MAX_SAFE_INT:
            raise bad(f"{name}: out of range")
    if time_ms(row.created_at) is None or time_ms(row.updated_at) is None:
        raise bad("created_at or updated_at: not a time")
    if not isinstance(row.space_id, str) or not isinstance(row.text, str):
        raise bad("space_id or text: wrong type")
    return row


def get_row(org_id: str, entry_id: str) -> TeamEntryModel | None:
    """The entry row (consistent read, ``check_row``ed) or ``None``; 409 ``damaged`` when the
    stored row cannot be read."""
    bind()
    if not ENTRY_ID.fullmatch(entry_id):
        return None
    try:
        return check_row(TeamEntryModel.get(org_id, entry_id, consistent_read=True))
    except DoesNotExist:
        return None


NOT_FOUND = "No such entry."


def for_read(principal: Principal, entry_id: str) -> tuple[TeamEntryModel, dict[str, Any]]:
    """``(row, space)`` when the caller may read the entry; else 404 ``not_found`` (also for
    another org's entry or an unreadable space: indistinguishable from a missing one)."""
    row = get_row(principal.org_id, entry_id)
    if row is None:
        raise NotFound(NOT_FOUND, code="not_found")
    acc = permissions.access(principal, row.space_id)
    if acc is None or not acc.read:
        raise NotFound(NOT_FOUND, code="not_found")
    return row, acc.space


def for_write(principal: Principal, entry_id: str) -> tuple[TeamEntryModel, dict[str, Any]]:
    """``(row, space)`` when the caller may change the entry: 404 as ``for_read``, 403
    ``forbidden`` without a write grant."""
    row = get_row(principal.org_id, entry_id)
    if row is None:
        raise NotFound(NOT_FOUND, code="not_found")
    return row, permissions.writable(principal, row.space_id, not_found=NOT_FOUND)


def require_editable(row: TeamEntryModel) -> None:
    """409 ``entry_read_only`` for superseded and archived entries."""
    if row.status not in EDITABLE:
        raise EntryReadOnly(f"The entry is {row.status} and read-only.", details={"status": row.status})


def event(tx, org_id: str, entry_id: str, action: str, actor: str, details: dict[str, Any] | None = None,
          at: int | None = None) -> None:
    """Stage one history event (never text) into ``tx``."""
    at = at or clock.now_ms()
    tx.save(TeamEventModel(entry_key=entry_key(org_id, entry_id), sk=f"{at:013d}#{uuid.uuid4().hex}", action=action,
                           actor=actor, details=details or None, at=at), condition=TeamEventModel.sk.does_not_exist())


def state_parts(org_id: str, row: TeamEntryModel) -> list[bytes]:
    """The entry's Yjs state: the compacted S3 state (when ``compacted_seq`` > 0) followed by the
    retained payloads above it. Raises ``Retry`` when a concurrent compaction stripped a payload
    this read expected (the caller re-reads)."""
    parts: list[bytes] = []
    compacted = int(row.compacted_seq or 0)
    if compacted:
        blob = blobs.get_bytes(state_key(org_id, row.entry_id))
        if blob is None:
            raise Retry()
        parts.append(blob)
    for item in _log_rows(org_id, row.entry_id, compacted, int(row.log_seq)):
        if item.payload is None:
            raise Retry()
        parts.append(bytes(item.payload))
    return parts


def _log_rows(org_id: str, entry_id: str, after: int, upto: int):
    if upto <= after:
        return []
    return TeamUpdateModel.query(entry_key(org_id, entry_id),
                                 TeamUpdateModel.sk.between(f"seq#{after + 1:012d}", f"seq#{upto:012d}"),
                                 consistent_read=True)


def load_doc(org_id: str, row: TeamEntryModel):
    """``(row, Doc)``: the merged document, re-reading the row if a compaction raced the read."""
    for _ in range(5):
        try:
            return row, merge.load(state_parts(org_id, row), entry_id=row.entry_id)
        except Retry:
            row = get_row(org_id, row.entry_id) or row
    return row, merge.load(state_parts(org_id, row), entry_id=row.entry_id)


def document(row: TeamEntryModel, space: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``(canonical document, DLP kinds found)`` of the entry as it would be indexed now."""
    title, k1 = dlp.gated(row.doc["title"])
    text, k2 = dlp.gated(row.text or "")
    doc = canonical.document(kind=row.kind, title=title, supersedes=row.doc.get("supersedes"),
                             links=row.doc.get("links", []), text=text)
    return doc, sorted(set(k1) | set(k2))


# --- create / read / list / patch -------------------------------------------------------------

def _check_refs(org_id: str, space: dict[str, Any], entry_id: str | None, links: list[str] | None,
                supersedes: str | None, classification: str | None) -> None:
    if classification is not None and spaces.rank(classification) < spaces.rank(space["classification"]):
        raise BadRequest(f"classification may only tighten the space's ({space['classification']}).",
                         code="validation_error", details={"field": "classification", "space": space["classification"]})
    for link in links or []:
        m = ENTRY_LINK.fullmatch(link)
        if m:
            other = get_row(org_id, m.group(1))
            if other is None or other.space_id != space["id"]:
                raise BadRequest("An entry link must name an entry of the same space.",
                                 details={"field": "links", "link": link})
    if supersedes is not None:
        other = get_row(org_id, supersedes)
        if other is None or other.space_id != space["id"] or supersedes == entry_id:
            raise BadRequest("supersedes must name another entry of the same space.", details={"field": "supersedes"})


def create(principal: Principal, req: EntryCreate) -> dict[str, Any]:
    """Create an empty draft in a team space; returns the entry. 404 ``not_found`` (space
    unreadable), 403 ``forbidden`` (no write grant), 403 ``context.collab_policy.capability_disabled``,
    422 ``personal_space``, 409 ``space_entry_limit`` (``KEYSTONE_CONTEXT_MEMORY_ENTRIES_PER_SPACE``).
    Audited ``context.memory.create``."""
    limits = get_limits()
    org = principal.org_id
    space = permissions.writable(principal, req.space_id)
    permissions.require_collab(space)
    if space["kind"] != "team":
        raise Unprocessable("Entries cannot be created in personal spaces.", code="personal_space")
    _check_refs(org, space, None, req.links, req.supersedes, req.classification)
    author = permissions.member_id(principal)
    entry_id = "ent_" + uuid.uuid4().hex[:20]

    def attempt(tx):
        srow = TeamSpaceModel.get(org, f"space#{space['id']}", consistent_read=True)
        live = int(srow.entries_live or 0)
        if live >= limits.entries_per_space:
            raise limit_error(Conflict, "space_entry_limit", "The space has reached its number of entries; archive some.",
                              "KEYSTONE_CONTEXT_MEMORY_ENTRIES_PER_SPACE", limits.entries_per_space, live)
        now = clock.now_ms()
        doc = {"title": req.title, "links": list(req.links), "supersedes": req.supersedes, "superseded_by": None,
               "classification": req.classification or space["classification"], "created_by": author,
               "changed_by": [], "accepted_at": None, "accepted_by": None, "projection_sha256": None}
        row = TeamEntryModel(org_id=org, entry_id=entry_id, space_sk=f"{space['id']}#{now:013d}#{entry_id}",
                             space_id=space["id"], status="draft", kind=req.kind, doc=doc, text="", units=0,
                             meta_version=1, revision=0, log_seq=0, compacted_seq=0, created_at=now, updated_at=now)
        tx.save(row, condition=TeamEntryModel.entry_id.does_not_exist())
        tx.update(srow, actions=[TeamSpaceModel.entries_live.add(1)],
                  condition=TeamSpaceModel.entries_live == live)
        event(tx, org, entry_id, "create", author, {"kind": req.kind}, at=now)
        audit.add_to(tx, org, "context.memory.create", principal.actor, entry_id, {"space_id": space["id"], "kind": req.kind})
        return row

    return public(run_transaction(attempt))


def get(principal: Principal, entry_id: str) -> dict[str, Any]:
    """The entry with ``text`` (DLP-gated), ``documentSha256``, ``projectionSha256``,
    ``stateVector``, ``snapshot`` (base64) and ``limits``; 404 ``not_found``."""
    row, space = for_read(principal, entry_id)
    row, ydoc = load_doc(principal.org_id, row)
    doc, kinds = document(row, space)
    return {**public(row), "text": doc["text"], "dlpFindings": kinds,
            "documentSha256": canonical.sha256_hex(doc), "projectionSha256": row.doc.get("projection_sha256"),
            "stateVector": merge.b64(ydoc.get_state()), "snapshot": merge.b64(ydoc.get_update()),
            "seq": int(row.log_seq), "limits": get_limits().public()}


def list_entries(principal: Principal, space_id: str | None, *, status: str | None, kind: str | None,
                 q: str | None, limit: int, cursor: str | None) -> dict[str, Any]:
    """``{entries: [entry + snippet?], cursor?, damaged?}`` of a readable space, oldest first;
    ``q`` matches title or text case-insensitively and the ``snippet`` is cut from the DLP-gated
    text. An entry whose stored row cannot be read is left out; ``damaged`` counts those (only
    when there were some; the route moves it to the ``X-Cairn-Damaged`` header)."""
    if not space_id:
        raise BadRequest("spaceId is required.", details={"field": "spaceId"})
    if status is not None and status not in STATUSES:
        raise BadRequest(f"status must be one of {list(STATUSES)}.", details={"field": "status"})
    if kind is not None and kind not in KINDS:
        raise BadRequest(f"kind must be one of {list(KINDS)}.", details={"field": "kind"})
    permissions.readable(principal, space_id)
    owner = f"{principal.org_id}/{space_id}"
    pos = decode_cursor(cursor, "entries", owner, {"after": str}, {"after": f"{space_id}#"})
    lo = pos["after"] if pos else f"{space_id}#"
    bind()
    out: list[dict[str, Any]] = []
    damaged = 0
    needle = (q or "").casefold()
    last = None
    for row in TeamEntryModel.by_space.query(principal.org_id, TeamEntryModel.space_sk.between(lo, f"{space_id}#~"),
                                             consistent_read=True):
        if row.space_sk == lo:
            continue
        last = row.space_sk
        try:
            check_row(row)
        except Damaged:
            damaged += 1
            continue
        if (status and row.status != status) or (kind and row.kind != kind):
            continue
        item = public(row)
        if needle:
            text, _ = dlp.gated(row.text or "")
            title, _ = dlp.gated(row.doc["title"])
            at = text.casefold().find(needle)
            if at < 0 and needle not in title.casefold():
                continue
            start = max(0, at - 60) if at >= 0 else 0
            item["snippet"] = ("…" if start else "") + text[start:start + 200] + ("…" if start + 200 < len(text) else "")
        out.append(item)
        if len(out) >= limit:
            break
    more = len(out) >= limit and last is not None
    return {"entries": out, **({"cursor": encode_cursor("entries", owner, {"after": last})} if more else {}),
            **({"damaged": damaged} if damaged else {})}


def patch(principal: Principal, entry_id: str, req: EntryPatch) -> dict[str, Any]:
    """Change title, kind, links, supersedes or classification; 409 ``meta_version_conflict`` when
    ``ifMetaVersion`` is stale, 409 ``entry_read_only``, 400 ``validation_error``. A patch to an
    accepted entry is a pending change. Audited ``context.memory.patch``."""
    org = principal.org_id
    changes = req.model_dump(exclude_none=True, exclude={"if_meta_version"})
    author = permissions.member_id(principal)

    def attempt(tx):
        row, space = for_write(principal, entry_id)
        permissions.require_collab(space)
        require_editable(row)
        if req.if_meta_version is not None and req.if_meta_version != int(row.meta_version):
            raise Conflict("The entry's metadata changed since you read it.", code="meta_version_conflict",
                           details={"metaVersion": int(row.meta_version)})
        _check_refs(org, space, entry_id, changes.get("links"), changes.get("supersedes"), changes.get("classification"))
        doc = dict(row.doc)
        for k in ("title", "links", "supersedes", "classification"):
            if k in changes:
                doc[k] = changes[k]
        if author not in doc["changed_by"]:
            doc["changed_by"] = [*doc["changed_by"], author]
        now = clock.now_ms()
        tx.update(row, actions=[TeamEntryModel.doc.set(doc), TeamEntryModel.kind.set(changes.get("kind", row.kind)),
                                TeamEntryModel.meta_version.add(1), TeamEntryModel.updated_at.set(now)],
                  condition=(TeamEntryModel.meta_version == row.meta_version) & (TeamEntryModel.status == row.status))
        event(tx, org, entry_id, "patch", author, {"fields": sorted(changes)}, at=now)
        audit.add_to(tx, org, "context.memory.patch", principal.actor, entry_id, {"fields": sorted(changes)})
        row.doc, row.kind, row.updated_at = doc, changes.get("kind", row.kind), now
        row.meta_version = int(row.meta_version) + 1
        return row

    return public(run_transaction(attempt))


# --- updates ----------------------------------------------------------------------------------

def _rate_rows(org_id: str, author: str, entry_id: str, now: int) -> list[tuple[str, int]]:
    limits = get_limits()
    minute = now // 60_000
    return [(f"{org_id}#{author}#{entry_id}#{minute}", limits.updates_per_minute),
            (f"{org_id}#{author}#*#{minute}", limits.updates_per_minute_all)]


def post_update(principal: Principal, entry_id: str, req: UpdatePost) -> dict[str, Any]:
    """Merge one client Yjs V1 update into the entry.

    Returns ``{duplicate: false, seq, stateVector}`` or, for the same bytes under a used id,
    ``{duplicate: true, seq}``. Errors (nothing written): 404 ``not_found``, 403 ``forbidden``,
    403 ``context.collab_policy.capability_disabled``, 409 ``entry_read_only``, 413
    ``update_too_large``, 409 ``update_id_reused``, 422 ``unsupported_update``, 409
    ``missing_dependency`` (``details.stateVector``), 403 ``client_id_owned``, 422
    ``unit_cap_reached`` / ``text_too_large``, 409 ``update_log_full``, 429 ``rate_limited``.
    Audited ``context.memory.update`` (seq, updateId, size; never the text).
    """
    limits = get_limits()
    org = principal.org_id
    raw = merge.decode_b64(req.update)
    digest = hashlib.sha256(raw).hexdigest()
    author = permissions.member_id(principal)
    key = entry_key(org, entry_id)
    after: dict[str, Any] = {}

    def attempt(tx):
        row, space = for_write(principal, entry_id)
        permissions.require_collab(space)
        require_editable(row)
        if len(raw) > limits.max_update_bytes:
            raise limit_error(PayloadTooLarge, "update_too_large", "The update is larger than allowed.",
                              "KEYSTONE_CONTEXT_MEMORY_MAX_UPDATE_BYTES", limits.max_update_bytes, len(raw))
        try:
            used = TeamUpdateModel.get(key, f"uid#{req.update_id}", consistent_read=True)
        except DoesNotExist:
            used = None
        if used is not None:
            if used.sha256 == digest:
                return {"duplicate": True, "seq": int(used.seq)}
            raise Conflict("This updateId was already used with other bytes.", code="update_id_reused",
                           details={"updateId": req.update_id})
        insp = merge.inspect(raw)
        merged = merge.apply(state_parts(org, row), raw, insp, entry_id=entry_id)
        advanced = sorted(c for c, clk in merged.sv.items() if clk > merged.before.get(c, 0))
        for client in advanced:
            try:
                owner = TeamUpdateModel.get(key, f"client#{client}", consistent_read=True).author
            except DoesNotExist:
                owner = None
            if owner is not None and owner != author:
                raise Forbidden("This Yjs client id belongs to another author in this entry; use a fresh client id.",
                                code="client_id_owned", details={"clientId": client})
        new_units = merge.units(merged.sv)
        if advanced and new_units > limits.max_units:
            raise limit_error(Unprocessable, "unit_cap_reached", "The entry reached its unit cap and accepts deletions "
                              "only; continue in a new entry that supersedes it.",
                              "KEYSTONE_CONTEXT_MEMORY_MAX_UNITS", limits.max_units, new_units)
        new_bytes = len(merged.text.encode("utf-8"))
        if new_bytes > limits.max_text_bytes and new_bytes > len((row.text or "").encode("utf-8")):
            raise limit_error(Unprocessable, "text_too_large", "The entry's text would exceed its size limit.",
                              "KEYSTONE_CONTEXT_MEMORY_MAX_TEXT_BYTES", limits.max_text_bytes, new_bytes)
        if int(row.log_seq) >= limits.max_updates_per_entry:
            raise limit_error(Conflict, "update_log_full", "The entry's edit log is full; continue in a new entry "
                              "that supersedes it.", "KEYSTONE_CONTEXT_MEMORY_MAX_UPDATES_PER_ENTRY",
                              limits.max_updates_per_entry, int(row.log_seq))
        now = clock.now_ms()
        rates = _rate_rows(org, author, entry_id, now)
        for rk, cap in rates:
            try:
                n = int(TeamRateModel.get(rk, consistent_read=True).n)
            except DoesNotExist:
                n = 0
            if n >= cap:
                raise RateLimited("Too many updates; slow down.", retry_after_s=60 - (now // 1000) % 60,
                                  details={"variable": "KEYSTONE_CONTEXT_MEMORY_UPDATES_PER_MINUTE", "limit": cap})
            tx.update(TeamRateModel(key=rk), actions=[TeamRateModel.n.add(1),
                                                      TeamRateModel.expires_at.set(now // 1000 + 180)],
                      condition=TeamRateModel.key.does_not_exist() | (TeamRateModel.n < cap))
        seq = int(row.log_seq) + 1
        tx.save(TeamUpdateModel(entry_key=key, sk=f"seq#{seq:012d}", seq=seq, update_id=req.update_id, sha256=digest,
                                payload=raw, size=len(raw), author=author, at=now),
                condition=TeamUpdateModel.sk.does_not_exist())
        tx.save(TeamUpdateModel(entry_key=key, sk=f"uid#{req.update_id}", seq=seq, sha256=digest, author=author, at=now),
                condition=TeamUpdateModel.sk.does_not_exist())
        for client in advanced:
            tx.save(TeamUpdateModel(entry_key=key, sk=f"client#{client}", author=author, at=now),
                    condition=TeamUpdateModel.sk.does_not_exist() | (TeamUpdateModel.author == author))
        doc = dict(row.doc)
        if author not in doc["changed_by"]:
            doc["changed_by"] = [*doc["changed_by"], author]
        tx.update(row, actions=[TeamEntryModel.log_seq.set(seq), TeamEntryModel.text.set(merged.text),
                                TeamEntryModel.units.set(new_units), TeamEntryModel.doc.set(doc),
                                TeamEntryModel.updated_at.set(now)],
                  condition=(TeamEntryModel.log_seq == row.log_seq) & (TeamEntryModel.status == row.status))
        audit.add_to(tx, org, "context.memory.update", principal.actor, entry_id,
                     {"seq": seq, "update_id": req.update_id, "bytes": len(raw)})
        after.update(seq=seq, compacted=int(row.compacted_seq))
        return {"duplicate": False, "seq": seq, "stateVector": merge.b64(merged.doc.get_state())}

    result = run_transaction(attempt)
    if not result["duplicate"] and after["seq"] - after["compacted"] >= limits.compact_after:
        from .compaction import compact
        try:
            compact(org, entry_id)
        except Exception:  # noqa: BLE001 - the update committed; the schedule retries compaction
            pass
    return result


def get_updates(principal: Principal, entry_id: str, *, since_seq: int | None, state_vector: str | None) -> dict[str, Any]:
    """Catch up: ``?stateVector=`` -> ``{update, seq}`` (the diff); ``?sinceSeq=N`` ->
    ``{updates: [{seq, updateId, update, author, at}], seq}`` or, when updates above N were
    compacted, ``{snapshot, seq}``."""
    row, _ = for_read(principal, entry_id)
    org = principal.org_id
    if state_vector is not None:
        sv = merge.decode_b64(state_vector, "stateVector")
        row, ydoc = load_doc(org, row)
        try:
            diff = ydoc.get_update(sv)
        except ValueError:
            raise BadRequest("stateVector is not a Yjs state vector.", details={"field": "stateVector"}) from None
        return {"update": merge.b64(diff), "seq": int(row.log_seq)}
    since = since_seq or 0
    for _ in range(5):
        if since < int(row.compacted_seq):
            row, ydoc = load_doc(org, row)
            return {"snapshot": merge.b64(ydoc.get_update()), "seq": int(row.log_seq)}
        items = list(_log_rows(org, entry_id, since, int(row.log_seq)))
        bad = next((i for i in items if "payload" in i.damaged or "seq" in i.damaged), None)
        if bad is not None:
            raise Damaged("team entry", entry_id, f"update log {bad.sk}: not decodable", hint=DAMAGED_HINT)
        if all(i.payload is not None for i in items):
            return {"updates": [{"seq": int(i.seq), "updateId": i.update_id, "update": merge.b64(bytes(i.payload)),
                                 "author": i.author, "at": iso(i.at)} for i in items], "seq": int(row.log_seq)}
        row = get_row(org, entry_id) or row
    raise Conflict("The edit log is being compacted; retry.")


def history(principal: Principal, entry_id: str, limit: int = 1000) -> dict[str, Any]:
    """``{events: [{type, action?, seq?, updateId?, author, at, details?}]}``, oldest first: status
    and metadata events plus edits (the last ``limit`` of each)."""
    for_read(principal, entry_id)
    key = entry_key(principal.org_id, entry_id)
    bind()
    events = [{"type": "status" if e.action in ("create", "accept", "supersede", "archive", "superseded") else "meta",
               "action": e.action, "author": e.actor, "at": iso(e.at), "ms": time_ms(e.at) or 0,
               "details": dict(e.details) if isinstance(e.details, dict) else {}}
              for e in TeamEventModel.query(key, scan_index_forward=False, limit=limit, consistent_read=True)]
    edits = [{"type": "edit", "action": "update", "seq": int(i.seq or 0), "updateId": i.update_id, "author": i.author,
              "bytes": int(i.size or 0), "at": iso(i.at), "ms": time_ms(i.at) or 0}
             for i in TeamUpdateModel.query(key, TeamUpdateModel.sk.startswith("seq#"), scan_index_forward=False,
                                            limit=limit, consistent_read=True,
                                            attributes_to_get=["sk", "seq", "update_id", "author", "size", "at"])]
    merged = sorted(events + edits, key=lambda e: (e["ms"], e.get("seq", 0)))
    for e in merged:
        e.pop("ms")
    return {"events": merged}
