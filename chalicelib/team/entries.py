"""Team-memory entries: create, read, list, patch, edit through Yjs updates, history
(keystone-team-memory.md, "Entries", "How editing works" and "Routes").

Services return domain values (``store.Entry``, ``EntryDetail``, ``EntryPage``, ``UpdateResult``,
``CatchUp``, ``HistoryItem``); ``api.team`` renders them (an entry as ``{id, spaceId, kind, title,
status, links, supersedes, supersededBy, classification, metaVersion, revision, createdBy,
createdAt, updatedAt, acceptedAt, acceptedBy}``, times as ISO 8601 UTC with milliseconds).

Edits: ``post_update`` merges one client V1 update (``merge``), checks caps, client-id ownership
and the rate, then commits in ONE transaction (``store.write``) the log row, the updateId row and
new client-id owners (``store.append_log``), the entry's derived text and counters (conditioned on
the ``log_seq`` read), the rate counters and the audit event. Anything refused writes nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urlparse

from pydantic import ConfigDict, Field, StrictStr, field_validator

from .. import audit, clock, patterns
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
from ..storage.damage import Damaged, time_ms
from ..storage.txn import Retry
from ..usage import meter
from ..validation import Line, Model, check_text
from . import canonical, dlp, merge, permissions, spaces, store
from .limits import Limits, get_limits
from .store import KINDS, STATUSES, Entry, EntryDoc, LogRow, Space, Tx

if TYPE_CHECKING:
    from pycrdt import Doc  # loaded on first use (team.merge)

EDITABLE = ("draft", "accepted")
UPDATE_ID = patterns.compile(r"[A-Za-z0-9_-]{8,64}")
ENTRY_ID = patterns.compile(r"ent_[0-9a-f]{20}")
SOURCE_LINK = patterns.compile(r"source:[A-Za-z0-9_.:-]{1,200}")
ENTRY_LINK = patterns.compile(r"entry:(ent_[0-9a-f]{20})")


# --- request bodies ---------------------------------------------------------------------------

class _In(Model):
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

    update_id: StrictStr = Field(alias="updateId", pattern=f"^{UPDATE_ID.pattern}$")
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


DAMAGED_HINT = store.ENTRY_DAMAGED_HINT


def get_row(org_id: str, entry_id: str) -> Entry | None:
    """The entry (consistent read) or ``None`` (also for a malformed id); 409 ``damaged`` when
    the stored row cannot be read."""
    if not ENTRY_ID.fullmatch(entry_id):
        return None
    return store.get_entry(org_id, entry_id)


NOT_FOUND = "No such entry."


def for_read(principal: Principal, entry_id: str) -> tuple[Entry, Space]:
    """``(entry, space)`` when the caller may read the entry; else 404 ``not_found`` (also for
    another org's entry or an unreadable space: indistinguishable from a missing one)."""
    row = get_row(principal.org_id, entry_id)
    if row is None:
        raise NotFound(NOT_FOUND, code="not_found")
    acc = permissions.access(principal, row.space_id)
    if acc is None or not acc.read:
        raise NotFound(NOT_FOUND, code="not_found")
    return row, acc.space


def for_write(principal: Principal, entry_id: str) -> tuple[Entry, Space]:
    """``(entry, space)`` when the caller may change the entry: 404 as ``for_read``, 403
    ``forbidden`` without a write grant."""
    row = get_row(principal.org_id, entry_id)
    if row is None:
        raise NotFound(NOT_FOUND, code="not_found")
    return row, permissions.writable(principal, row.space_id, not_found=NOT_FOUND)


def require_editable(row: Entry) -> None:
    """409 ``entry_read_only`` for superseded and archived entries."""
    if row.status not in EDITABLE:
        raise EntryReadOnly(f"The entry is {row.status} and read-only.", details={"status": row.status})


def with_author(doc: EntryDoc, author: str) -> EntryDoc:
    """A copy of the entry's ``doc`` with ``author`` among ``changed_by``."""
    doc = doc.copy()
    if author not in doc["changed_by"]:
        doc["changed_by"] = [*doc["changed_by"], author]
    return doc


def state_parts(org_id: str, row: Entry, upto: int | None = None) -> list[bytes]:
    """The entry's Yjs state (as it was at seq ``upto``, when given: at most ``row.log_seq`` and at
    least ``row.compacted_seq``): the compacted S3 state (when ``compacted_seq`` > 0) followed by
    the retained payloads above it. Raises ``Retry`` when a concurrent compaction stripped a
    payload this read expected (the caller re-reads)."""
    parts: list[bytes] = []
    if row.compacted_seq:
        blob = store.read_state(org_id, row.entry_id)
        if blob is None:
            raise Retry()
        parts.append(blob)
    for item in store.log_rows(org_id, row.entry_id, row.compacted_seq, row.log_seq if upto is None else upto):
        if item.payload is None:
            raise Retry()
        parts.append(item.payload)
    return parts


def load_doc(org_id: str, row: Entry) -> tuple[Entry, Doc]:
    """``(entry, Doc)``: the merged document, re-reading the entry if a compaction raced the read."""
    for _ in range(5):
        try:
            return row, merge.load(state_parts(org_id, row), entry_id=row.entry_id)
        except Retry:
            row = get_row(org_id, row.entry_id) or row
    return row, merge.load(state_parts(org_id, row), entry_id=row.entry_id)


def document(row: Entry, space: Space) -> tuple[canonical.CanonicalDocument, list[str]]:
    """``(canonical document, DLP kinds found)`` of the entry as it would be indexed now."""
    title, k1 = dlp.gated(row.doc["title"])
    text, k2 = dlp.gated(row.text or "")
    doc = canonical.document(kind=row.kind, title=title, supersedes=row.doc.get("supersedes"),
                             links=row.doc.get("links", []), text=text)
    return doc, sorted(set(k1) | set(k2))


# --- create / read / list / patch -------------------------------------------------------------

def _check_classification(space: Space, classification: str | None) -> None:
    if classification is not None and spaces.rank(classification) < spaces.rank(space.classification):
        raise BadRequest(f"classification may only tighten the space's ({space.classification}).",
                         code="validation_error", details={"field": "classification", "space": space.classification})


def _check_refs(org_id: str, space: Space, entry_id: str | None, links: list[str] | None,
                supersedes: str | None, classification: str | None) -> None:
    _check_classification(space, classification)
    for link in links or []:
        m = ENTRY_LINK.fullmatch(link)
        if m:
            other = get_row(org_id, m.group(1))
            if other is None or other.space_id != space.id:
                raise BadRequest("An entry link must name an entry of the same space.",
                                 details={"field": "links", "link": link})
    if supersedes is not None:
        other = get_row(org_id, supersedes)
        if other is None or other.space_id != space.id or supersedes == entry_id:
            raise BadRequest("supersedes must name another entry of the same space.", details={"field": "supersedes"})


def create(principal: Principal, req: EntryCreate) -> Entry:
    """Create an empty draft in a team space; returns the entry. 404 ``not_found`` (space
    unreadable), 403 ``forbidden`` (no write grant), 403 ``context.collab_policy.capability_disabled``,
    422 ``personal_space``, 409 ``space_entry_limit`` (``KEYSTONE_CONTEXT_MEMORY_ENTRIES_PER_SPACE``).
    Audited ``context.memory.create``."""
    limits = get_limits()
    org = principal.org_id
    space = permissions.writable(principal, req.space_id)
    permissions.require_collab(space)
    if space.kind != "team":
        raise Unprocessable("Entries cannot be created in personal spaces.", code="personal_space")
    _check_refs(org, space, None, req.links, req.supersedes, req.classification)
    author = permissions.member_id(principal)
    entry_id = "ent_" + uuid.uuid4().hex[:20]

    def attempt(tx: Tx) -> Entry:
        live = store.live_entries(org, space.id)
        if live >= limits.entries_per_space:
            raise limit_error(Conflict, "space_entry_limit",
                              "The space has reached its number of entries; archive some.",
                              "KEYSTONE_CONTEXT_MEMORY_ENTRIES_PER_SPACE", limits.entries_per_space, live)
        now = clock.now_ms()
        doc: EntryDoc = {"title": req.title, "links": list(req.links), "supersedes": req.supersedes,
                         "superseded_by": None, "classification": req.classification or space.classification,
                         "created_by": author, "changed_by": [], "accepted_at": None, "accepted_by": None,
                         "projection_sha256": None}
        row = Entry(org_id=org, entry_id=entry_id, space_id=space.id, status="draft", kind=req.kind, doc=doc, text="",
                    units=0, meta_version=1, revision=0, log_seq=0, compacted_seq=0, created_at=now, updated_at=now)
        store.stage_entry_created(tx, row, live)
        store.add_event(tx, org, entry_id, "create", author, {"kind": req.kind}, at=now)
        audit.add_to(tx, org, "context.memory.create", principal.actor, entry_id,
                     {"space_id": space.id, "kind": req.kind})
        return row

    return store.write(attempt)


@dataclass(frozen=True)
class EntryDetail:
    """An entry as ``GET`` shows it: ``text`` (DLP-gated), the DLP kinds found, the canonical
    document's SHA-256 (hex), the Yjs ``state_vector`` and ``snapshot`` (V1 update of the whole
    document) and the caps."""

    entry: Entry
    text: str
    dlp_findings: list[str]
    document_sha256: str
    state_vector: bytes
    snapshot: bytes
    limits: Limits


def get(principal: Principal, entry_id: str) -> EntryDetail:
    """The entry with its text, hashes, Yjs state and caps; 404 ``not_found``."""
    row, space = for_read(principal, entry_id)
    row, ydoc = load_doc(principal.org_id, row)
    doc, kinds = document(row, space)
    return EntryDetail(entry=row, text=doc["text"], dlp_findings=kinds, document_sha256=canonical.sha256_hex(doc),
                       state_vector=ydoc.get_state(), snapshot=ydoc.get_update(), limits=get_limits())


@dataclass(frozen=True)
class Listed:
    """One entry of a listing; ``snippet`` (cut from the DLP-gated text) when a query matched."""

    entry: Entry
    snippet: str | None = None


@dataclass(frozen=True)
class EntryPage:
    """A page of a space's entries; ``cursor`` continues it; ``damaged`` counts entries left out
    because their stored row cannot be read."""

    entries: list[Listed]
    cursor: str | None
    damaged: int


def _check_filters(space_id: str | None, status: str | None, kind: str | None) -> str:
    if not space_id:
        raise BadRequest("spaceId is required.", details={"field": "spaceId"})
    if status is not None and status not in STATUSES:
        raise BadRequest(f"status must be one of {list(STATUSES)}.", details={"field": "status"})
    if kind is not None and kind not in KINDS:
        raise BadRequest(f"kind must be one of {list(KINDS)}.", details={"field": "kind"})
    return space_id


def _match(row: Entry, needle: str) -> Listed | None:
    """``row`` listed with a snippet around ``needle`` (casefolded) in its DLP-gated text, or
    ``None`` when neither title nor text contains it; no needle lists it plainly."""
    if not needle:
        return Listed(row)
    text, _ = dlp.gated(row.text or "")
    title, _ = dlp.gated(row.doc["title"])
    at = text.casefold().find(needle)
    if at < 0 and needle not in title.casefold():
        return None
    start = max(0, at - 60) if at >= 0 else 0
    return Listed(row, ("…" if start else "") + text[start:start + 200] + ("…" if start + 200 < len(text) else ""))


def list_entries(principal: Principal, space_id: str | None, *, status: str | None, kind: str | None,
                 q: str | None, limit: int, cursor: str | None) -> EntryPage:
    """A page of a readable space's entries, oldest first; ``q`` matches title or text
    case-insensitively. 400 ``validation_error`` (missing ``spaceId``, unknown ``status`` or
    ``kind``, a bad cursor), 404 ``not_found``."""
    space_id = _check_filters(space_id, status, kind)
    permissions.readable(principal, space_id)
    owner = f"{principal.org_id}/{space_id}"
    pos = decode_cursor(cursor, "entries", owner, {"after": str}, {"after": store.listing_prefix(space_id)})
    out: list[Listed] = []
    damaged = 0
    needle = (q or "").casefold()
    last = None
    for position, row in store.space_entries(principal.org_id, space_id, pos["after"] if pos else None):
        last = position
        if isinstance(row, Damaged):
            damaged += 1
            continue
        if (status and row.status != status) or (kind and row.kind != kind):
            continue
        item = _match(row, needle)
        if item is None:
            continue
        out.append(item)
        if len(out) >= limit:
            break
    more = len(out) >= limit and last is not None
    return EntryPage(entries=out, damaged=damaged,
                     cursor=encode_cursor("entries", owner, {"after": last}) if more and last is not None else None)


def patch(principal: Principal, entry_id: str, req: EntryPatch) -> Entry:
    """Change title, kind, links, supersedes or classification; 409 ``meta_version_conflict`` when
    ``ifMetaVersion`` is stale, 409 ``entry_read_only``, 400 ``validation_error``. A patch to an
    accepted entry is a pending change. Audited ``context.memory.patch``."""
    org = principal.org_id
    changes = req.model_dump(exclude_none=True, exclude={"if_meta_version"})
    author = permissions.member_id(principal)

    def attempt(tx: Tx) -> Entry:
        row, space = for_write(principal, entry_id)
        permissions.require_collab(space)
        require_editable(row)
        if req.if_meta_version is not None and req.if_meta_version != row.meta_version:
            raise Conflict("The entry's metadata changed since you read it.", code="meta_version_conflict",
                           details={"metaVersion": row.meta_version})
        _check_refs(org, space, entry_id, changes.get("links"), changes.get("supersedes"),
                    changes.get("classification"))
        changed = {k: changes[k] for k in ("title", "links", "supersedes", "classification") if k in changes}
        doc = with_author(cast(EntryDoc, {**row.doc, **changed}), author)
        now = clock.now_ms()
        after = store.stage_meta_change(tx, row, doc, changes.get("kind", row.kind), now)
        store.add_event(tx, org, entry_id, "patch", author, {"fields": sorted(changes)}, at=now)
        audit.add_to(tx, org, "context.memory.patch", principal.actor, entry_id, {"fields": sorted(changes)})
        return after

    return store.write(attempt)


# --- updates ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class UpdateResult:
    """The outcome of one posted update: its log ``seq``; ``duplicate`` when the same bytes were
    already posted under its updateId (then no ``state_vector``), else the merged state vector."""

    duplicate: bool
    seq: int
    state_vector: bytes | None = None


@dataclass(frozen=True)
class _Edit:
    """One checked edit ready to stage: the merge, the clients it advanced, the new unit count."""

    merged: merge.Merged
    advanced: list[int]
    units: int


def _replayed(org: str, entry_id: str, update_id: str, digest: str) -> UpdateResult | None:
    """The earlier result when ``update_id`` was used with the same bytes; 409
    ``update_id_reused`` with other bytes; ``None`` when unused."""
    used = store.used_update_id(org, entry_id, update_id)
    if used is None:
        return None
    if used.sha256 == digest:
        return UpdateResult(duplicate=True, seq=used.seq)
    raise Conflict("This updateId was already used with other bytes.", code="update_id_reused",
                   details={"updateId": update_id})


def _check_owners(org: str, entry_id: str, advanced: list[int], author: str) -> None:
    """403 ``client_id_owned`` when another author owns a Yjs client id the update advances."""
    for client in advanced:
        owner = store.client_owner(org, entry_id, client)
        if owner is not None and owner != author:
            raise Forbidden("This Yjs client id belongs to another author in this entry; use a fresh client id.",
                            code="client_id_owned", details={"clientId": client})


def _check_caps(row: Entry, merged: merge.Merged, advanced: list[int], limits: Limits) -> int:
    """The merged document's unit count, once it, the text size and the log length are within
    their caps (422 ``unit_cap_reached`` / ``text_too_large``, 409 ``update_log_full``)."""
    new_units = merge.units(merged.sv)
    if advanced and new_units > limits.max_units:
        raise limit_error(Unprocessable, "unit_cap_reached", "The entry reached its unit cap and accepts deletions "
                          "only; continue in a new entry that supersedes it.",
                          "KEYSTONE_CONTEXT_MEMORY_MAX_UNITS", limits.max_units, new_units)
    new_bytes = len(merged.text.encode("utf-8"))
    if new_bytes > limits.max_text_bytes and new_bytes > len((row.text or "").encode("utf-8")):
        raise limit_error(Unprocessable, "text_too_large", "The entry's text would exceed its size limit.",
                          "KEYSTONE_CONTEXT_MEMORY_MAX_TEXT_BYTES", limits.max_text_bytes, new_bytes)
    if row.log_seq >= limits.max_updates_per_entry:
        raise limit_error(Conflict, "update_log_full", "The entry's edit log is full; continue in a new entry "
                          "that supersedes it.", "KEYSTONE_CONTEXT_MEMORY_MAX_UPDATES_PER_ENTRY",
                          limits.max_updates_per_entry, row.log_seq)
    return new_units


def _checked_edit(org: str, row: Entry, raw: bytes, author: str, limits: Limits) -> _Edit:
    """Merge ``raw`` into the entry's state on a scratch copy and check ownership and caps."""
    insp = merge.inspect(raw)
    merged = merge.apply(state_parts(org, row), raw, insp, entry_id=row.entry_id)
    advanced = sorted(c for c, clk in merged.sv.items() if clk > merged.before.get(c, 0))
    _check_owners(org, row.entry_id, advanced, author)
    return _Edit(merged=merged, advanced=advanced, units=_check_caps(row, merged, advanced, limits))


def _stage_rates(tx: Tx, org: str, author: str, entry_id: str, now: int, limits: Limits) -> None:
    """Count the update against the author's per-entry and all-entries minute; 429
    ``rate_limited`` when either is full."""
    caps = (limits.updates_per_minute, limits.updates_per_minute_all)
    for window, cap in zip(store.rate_windows(org, author, entry_id, now), caps, strict=True):
        if store.rate_count(window) >= cap:
            raise RateLimited("Too many updates; slow down.", retry_after_s=60 - (now // 1000) % 60,
                              details={"variable": "KEYSTONE_CONTEXT_MEMORY_UPDATES_PER_MINUTE", "limit": cap})
        store.stage_rate(tx, window, cap, now)


def _stage_edit(tx: Tx, principal: Principal, row: Entry, req: UpdatePost, raw: bytes, digest: str, edit: _Edit,
                now: int) -> int:
    """Stage the log rows, the entry's new text and the audit event; returns the new seq."""
    author = permissions.member_id(principal)
    seq = row.log_seq + 1
    store.append_log(tx, row, seq, update_id=req.update_id, sha256=digest, payload=raw, author=author,
                     clients=edit.advanced, now=now)
    store.stage_text_change(tx, row, seq, edit.merged.text, edit.units, with_author(row.doc, author), now)
    audit.add_to(tx, row.org_id, "context.memory.update", principal.actor, row.entry_id,
                 {"seq": seq, "update_id": req.update_id, "bytes": len(raw)})
    return seq


def _compact_if_due(org: str, entry_id: str, seq: int, compacted: int, limits: Limits) -> None:
    if seq - compacted < limits.compact_after:
        return
    from .compaction import compact  # compaction reads entries: imported when first due
    with contextlib.suppress(Exception):  # the update committed; the schedule retries compaction
        compact(org, entry_id)


def post_update(principal: Principal, entry_id: str, req: UpdatePost) -> UpdateResult:
    """Merge one client Yjs V1 update into the entry.

    Returns the new seq and state vector or, for the same bytes under a used id, the duplicate's
    seq. Errors (nothing written): 404 ``not_found``, 403 ``forbidden``,
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
    compacted: list[int] = [0]

    def attempt(tx: Tx) -> UpdateResult:
        row, space = for_write(principal, entry_id)
        permissions.require_collab(space)
        require_editable(row)
        if len(raw) > limits.max_update_bytes:
            raise limit_error(PayloadTooLarge, "update_too_large", "The update is larger than allowed.",
                              "KEYSTONE_CONTEXT_MEMORY_MAX_UPDATE_BYTES", limits.max_update_bytes, len(raw))
        replay = _replayed(org, entry_id, req.update_id, digest)
        if replay is not None:
            meter.replayed()
            return replay
        edit = _checked_edit(org, row, raw, author, limits)
        now = clock.now_ms()
        _stage_rates(tx, org, author, entry_id, now, limits)
        seq = _stage_edit(tx, principal, row, req, raw, digest, edit, now)
        meter.note(bytes_yjs=len(raw))  # stored Yjs state grows by the update
        compacted[0] = row.compacted_seq
        return UpdateResult(duplicate=False, seq=seq, state_vector=edit.merged.doc.get_state())

    result = store.write(attempt)
    if not result.duplicate:
        _compact_if_due(org, entry_id, result.seq, compacted[0], limits)
    return result


def _check_text(text: str, limits: Limits) -> None:
    """400 ``validation_error`` for control characters, 422 ``text_too_large`` over the size cap."""
    check_text(text, "text")
    size = len(text.encode("utf-8"))
    if size > limits.max_text_bytes:
        raise limit_error(Unprocessable, "text_too_large", "The entry's text would exceed its size limit.",
                          "KEYSTONE_CONTEXT_MEMORY_MAX_TEXT_BYTES", limits.max_text_bytes, size)


def check_new_text(principal: Principal, text: str) -> None:
    """What would refuse ``text`` as a new entry's first edit by ``principal``, for a caller to check
    before it creates or changes anything: 400 ``validation_error`` for control characters, 422
    ``text_too_large`` over ``KEYSTONE_CONTEXT_MEMORY_MAX_TEXT_BYTES``, 413 ``update_too_large``
    when the update writing it would exceed ``..._MAX_UPDATE_BYTES``, 429 ``rate_limited`` when the
    author's minute across entries is spent."""
    limits = get_limits()
    _check_text(text, limits)
    update = merge.replacement([], text, 1) or b""
    if len(update) > limits.max_update_bytes:
        raise limit_error(PayloadTooLarge, "update_too_large", "The text is larger than one update may carry.",
                          "KEYSTONE_CONTEXT_MEMORY_MAX_UPDATE_BYTES", limits.max_update_bytes, len(update))
    now = clock.now_ms()
    window = store.rate_windows(principal.org_id, permissions.member_id(principal), "", now)[1]
    if store.rate_count(window) >= limits.updates_per_minute_all:
        raise RateLimited("Too many updates; slow down.", retry_after_s=60 - (now // 1000) % 60,
                          details={"variable": "KEYSTONE_CONTEXT_MEMORY_UPDATES_PER_MINUTE",
                                   "limit": limits.updates_per_minute_all})


def check_base(row: Entry, base_seq: int) -> None:
    """409 ``conflict`` unless the entry's state at ``base_seq`` can be rebuilt: at most its
    ``log_seq`` and at least its ``compacted_seq``."""
    if base_seq > row.log_seq:
        raise Conflict(f"seq {base_seq} is ahead of the entry's ({row.log_seq}); pass a seq the entry returned.",
                       details={"field": "seq", "seq": row.log_seq})
    if base_seq < row.compacted_seq:
        raise Conflict("The entry's state at that seq was compacted away; read the entry again and write from "
                       "its current text.", details={"field": "seq", "seq": row.log_seq})


def _base_parts(org_id: str, row: Entry, base_seq: int) -> list[bytes]:
    """The entry's Yjs state as it was at ``base_seq`` (``check_base``'s 409 otherwise)."""
    check_base(row, base_seq)
    return state_parts(org_id, row, upto=base_seq)


def write_text(principal: Principal, entry_id: str, text: str, base_seq: int | None = None) -> UpdateResult | None:
    """Make ``text`` the entry's text as one Yjs update written by the server on the caller's
    behalf, by a fresh Yjs client id, posted through ``post_update`` with all its checks.

    The update changes only the middle that differs (``merge.replacement``) from the text the
    caller started from: the text at ``base_seq`` (the ``seq`` it read) when given, so edits made
    since by others merge with it; else the current text, which ``text`` then replaces. ``None``
    when that leaves the text as it is (nothing written). The same ``text`` from the same
    ``base_seq`` by the same author is one edit: a repeat answers the first (``duplicate``) and
    writes nothing. Errors: those of ``post_update`` and ``for_write``, 400 ``validation_error``
    for control characters, 422 ``text_too_large``, 409 ``conflict`` for a ``base_seq`` ahead of
    the entry or compacted away (``check_base``)."""
    _check_text(text, get_limits())
    row, _ = for_write(principal, entry_id)
    require_editable(row)
    update_id = _text_update_id(principal, entry_id, text, base_seq)
    if base_seq is not None:
        used = store.used_update_id(principal.org_id, entry_id, update_id)
        if used is not None:  # this very edit was made already (a retried call)
            meter.replayed()
            return UpdateResult(duplicate=True, seq=used.seq)
    for _ in range(5):
        try:
            current = state_parts(principal.org_id, row)
            parts = current if base_seq is None else _base_parts(principal.org_id, row, base_seq)
            break
        except Retry:
            row = get_row(principal.org_id, entry_id) or row
    else:
        raise Conflict("The entry's edit log is being compacted; retry.")
    taken = set(merge.state_vector(merge.load(current, entry_id=entry_id)))
    update = merge.replacement(parts, text, _free_client_id(update_id, taken), entry_id=entry_id)
    if update is None:
        return None
    return post_update(principal, entry_id, UpdatePost.model_validate({"updateId": update_id,
                                                                         "update": merge.b64(update)}))


def _text_update_id(principal: Principal, entry_id: str, text: str, base_seq: int | None) -> str:
    """The ``updateId`` of a server-written edit: from its author, entry, base and text when it has
    a base (so a repeat is recognised, and concurrent twins write the same bytes), else random."""
    if base_seq is None:
        return "srv_" + uuid.uuid4().hex
    key = "\n".join((permissions.member_id(principal), entry_id, str(base_seq), text))
    return "srv_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _free_client_id(update_id: str, taken: set[int]) -> int:
    """A Yjs client id of the update's own, none of ``taken`` (no clock it could reuse), derived
    from ``update_id`` so the same edit computed twice is the same bytes."""
    for i in range(64):
        digest = hashlib.sha256(f"{update_id}/{i}".encode()).digest()
        client = int.from_bytes(digest[:4], "big")
        if client and client not in taken:
            return client
    client = 0
    while client == 0 or client in taken:  # 64 derived ids all taken: a random one (never in practice)
        client = secrets.randbits(32)
    return client


@dataclass(frozen=True)
class CatchUp:
    """What a replica needs to catch up to ``seq``: exactly one of ``update`` (the diff against
    its state vector), ``snapshot`` (the whole document, when the edits asked for were
    compacted) or ``updates`` (the edits above the seq asked for)."""

    seq: int
    update: bytes | None = None
    snapshot: bytes | None = None
    updates: list[LogRow] | None = None


def _diff_since(org: str, row: Entry, state_vector: str) -> CatchUp:
    sv = merge.decode_b64(state_vector, "stateVector")
    row, ydoc = load_doc(org, row)
    try:
        diff = ydoc.get_update(sv)
    except ValueError:
        raise BadRequest("stateVector is not a Yjs state vector.", details={"field": "stateVector"}) from None
    return CatchUp(seq=row.log_seq, update=diff)


def _edits_since(org: str, row: Entry, since: int) -> CatchUp:
    for _ in range(5):
        if since < row.compacted_seq:
            row, ydoc = load_doc(org, row)
            return CatchUp(seq=row.log_seq, snapshot=ydoc.get_update())
        items = store.log_rows(org, row.entry_id, since, row.log_seq)
        bad = next((i for i in items if i.damaged), None)
        if bad is not None:
            raise Damaged("team entry", row.entry_id, f"update log {bad.ref}: not decodable", hint=DAMAGED_HINT)
        if all(i.payload is not None for i in items):
            return CatchUp(seq=row.log_seq, updates=items)
        row = get_row(org, row.entry_id) or row
    raise Conflict("The edit log is being compacted; retry.")


def get_updates(principal: Principal, entry_id: str, *, since_seq: int | None, state_vector: str | None) -> CatchUp:
    """Catch up by ``state_vector`` (base64; the diff) or by ``since_seq`` (the edits above it, or
    the snapshot when they were compacted). 400 ``validation_error`` for a bad state vector, 409
    ``damaged`` for an undecodable log row, 409 ``conflict`` while a compaction keeps racing."""
    row, _ = for_read(principal, entry_id)
    if state_vector is not None:
        return _diff_since(principal.org_id, row, state_vector)
    return _edits_since(principal.org_id, row, since_seq or 0)


_STATUS_ACTIONS = ("create", "accept", "supersede", "archive", "superseded")


@dataclass(frozen=True)
class HistoryItem:
    """One history line: ``type`` ``status`` or ``meta`` (an event, with ``details``) or ``edit``
    (an update, with ``seq``, ``update_id`` and ``size`` in bytes); ``at`` as stored (ms), ``ms``
    its sortable value."""

    type: str
    action: str
    author: str | None
    at: Any
    ms: int
    details: dict[str, Any] | None = None
    seq: int = 0
    update_id: str | None = None
    size: int = 0


def history(principal: Principal, entry_id: str, limit: int = 1000) -> list[HistoryItem]:
    """Status and metadata events plus edits (the last ``limit`` of each), oldest first."""
    for_read(principal, entry_id)
    org = principal.org_id
    events = [HistoryItem(type="status" if e.action in _STATUS_ACTIONS else "meta", action=e.action, author=e.actor,
                          at=e.at, ms=time_ms(e.at) or 0, details=e.details)
              for e in store.last_events(org, entry_id, limit)]
    edits = [HistoryItem(type="edit", action="update", author=i.author, at=i.at, ms=time_ms(i.at) or 0, seq=i.seq,
                         update_id=i.update_id, size=i.size)
             for i in store.last_edits(org, entry_id, limit)]
    return sorted(events + edits, key=lambda e: (e.ms, e.seq))
