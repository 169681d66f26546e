"""Review and accept, supersede, archive, and the retrieval projection (keystone-team-memory.md,
"Review and accept", "Retrieval").

Accept pins the exact document: ``documentSha256`` must equal the SHA-256 of the canonical
document (``canonical``) of the entry as it stands, else 409 ``document_changed`` with the
current hash. Separation of duties: the creator, and every author of an update or patch since
the last accepted revision, get 403 ``context.memory.self_accept``; only a signed-in person may
accept (403 ``context.person_required``). DLP runs at the space's policy (``dlp``).

In ONE transaction accept then: writes the accepted revision as a memory record (id = entry id,
text = the DLP-processed indexed document, ``meta`` = {entryId, revision, kind, title,
acceptedAt}) into the space's internal namespace ``!space/<space_id>`` through the bank write path
``core.store.write`` (the namespace's ``seq`` advance conditioned on the value read), moves the
entry to ``accepted`` (conditioned on the ``log_seq`` and ``meta_version`` the hash was computed
from), and, when ``supersedes`` names an accepted entry, supersedes it and tombstones its
projection. Supersede and archive tombstone the projection in their own transaction, so a retired
entry leaves retrieval when it is retired. Pending edits never touch the projection.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ConfigDict, Field, StrictStr

from .. import audit, clock
from ..auth.principal import Principal
from ..core import store as core_store
from ..core.records import Memory, Source
from ..errors import BadRequest, Conflict, Forbidden, NotFound
from ..storage.damage import Damaged
from ..validation import Line, Model
from . import canonical, dlp, entries, permissions, store
from .store import Entry, EntryDoc, Space


class AcceptBody(Model):
    """Body of ``POST /entries/{id}/accept``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    document_sha256: StrictStr = Field(alias="documentSha256", pattern=r"^[0-9a-f]{64}$")


class SupersedeBody(Model):
    """Body of ``POST /entries/{id}/supersede``: the accepted entry of the same space that replaces it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    superseded_by: Line = Field(alias="supersededBy", min_length=1, max_length=64)


class InvalidTransition(Conflict):
    """409 ``invalid_transition``: the status machine does not allow the move."""

    code = "invalid_transition"


def namespace(space_id: str) -> str:
    """The space's retrieval namespace: ``!space/<space_id>`` (a key no bank name can take)."""
    return f"{core_store.NAMESPACE_PREFIX}space/{space_id}"


def _tombstone(inc: str | None, entry_id: str, now: int, superseded_by: str | None) -> core_store.Write | None:
    """The write that retires entry ``entry_id``'s live projection in bank incarnation ``inc``, or
    ``None`` when there is nothing live to retire."""
    if inc is None:
        return None
    item = core_store.get_item(inc, entry_id)
    if item is None:
        return None
    prev, guard = core_store.current(item)  # a damaged projection is tombstoned all the same
    if not prev.live and guard is None:
        return None
    rec = prev.model_copy(update={"invalid_at": now, "updated_at": max(now, prev.updated_at),
                                  "superseded_by": superseded_by, "revision": prev.revision + 1})
    return core_store.Write(record=rec, prev=prev, op="supersede" if superseded_by else "tombstone", fp=None,
                            guard=guard)


def _check_acceptable(principal: Principal, row: Entry, space: Space, me: str) -> None:
    """403 ``context.collab_policy.capability_disabled`` / ``context.person_required`` /
    ``context.memory.self_accept``, 409 ``invalid_transition``."""
    permissions.require_collab(space)
    if principal.kind != "person":
        raise Forbidden("Only a signed-in person can accept an entry.", code="context.person_required")
    if row.status not in ("draft", "accepted"):
        raise InvalidTransition(f"A {row.status} entry cannot be accepted.", details={"status": row.status})
    if me == row.doc["created_by"] or me in row.doc.get("changed_by", []):
        raise Forbidden("You created or changed this entry since its last accepted revision; another member "
                        "must accept it.", code="context.memory.self_accept")


@dataclass(frozen=True)
class _Reviewed:
    """The accepted document: its SHA-256 (hex), the DLP kinds redacted, the projection's text."""

    sha256: str
    kinds: list[str]
    title: str
    text: str


def _review(row: Entry, space: Space, body: AcceptBody) -> _Reviewed:
    """The document as it stands, pinned by the reviewer's hash (409 ``document_changed``) and
    passed through the space's DLP policy (422 ``dlp_blocked``)."""
    doc, kinds = entries.document(row, space)
    sha = canonical.sha256_hex(doc)
    if body.document_sha256 != sha:
        raise Conflict("The entry changed since you reviewed it.", code="document_changed",
                       details={"documentSha256": sha})
    dlp.enforce(space.dlp_policy, kinds)
    return _Reviewed(sha256=sha, kinds=kinds, title=doc["title"], text=canonical.indexed_text(doc))


def _projection(inc: str | None, row: Entry, revision: int, reviewed: _Reviewed, now: int) -> core_store.Write:
    """The write of the accepted revision as the entry's memory record (replacing a damaged one)."""
    prev_item = core_store.get_item(inc, row.entry_id) if inc else None
    prev, guard = core_store.current(prev_item) if prev_item is not None else (None, None)
    meta = {"entryId": row.entry_id, "revision": revision, "kind": row.kind, "title": reviewed.title,
            "acceptedAt": entries.iso(now)}
    rec = Memory(id=row.entry_id, text=reviewed.text, created_at=prev.created_at if prev else now, updated_at=now,
                 revision=(prev.revision + 1) if prev else 1, meta=meta, source=Source(entry_id=row.entry_id),
                 tags=[f"kind:{row.kind}"])
    return core_store.Write(record=rec, prev=prev, op="accept", fp=None, guard=guard)


def _superseded_target(org: str, row: Entry) -> Entry | None:
    """The accepted entry of the same space that ``row`` supersedes, if any."""
    sup = row.doc.get("supersedes")
    if not sup:
        return None
    target = entries.get_row(org, sup)
    if target is not None and target.status == "accepted" and target.space_id == row.space_id:
        return target
    return None


def _stage_supersede_target(tx: store.Tx, principal: Principal, target: Entry, by: str, me: str, now: int) -> None:
    store.stage_status(tx, target, "superseded", {**target.doc, "superseded_by": by}, now)
    store.add_event(tx, principal.org_id, target.entry_id, "superseded", me, {"supersededBy": by}, at=now)
    audit.add_to(tx, principal.org_id, "context.memory.supersede", principal.actor, target.entry_id,
                 {"superseded_by": by, "via": "accept"})


def accept(principal: Principal, entry_id: str, body: AcceptBody) -> Entry:
    """Accept the entry's current document as a new revision; returns the entry.

    Errors (nothing written): 404 ``not_found``, 403 ``forbidden``, 403
    ``context.collab_policy.capability_disabled``, 403 ``context.person_required``, 409
    ``invalid_transition``, 403 ``context.memory.self_accept``, 409 ``document_changed``
    (``details.documentSha256``), 422 ``dlp_blocked`` (``details.kinds``). Audited
    ``context.memory.accept`` (and ``context.memory.supersede`` for the entry it replaces).
    """
    org = principal.org_id
    me = permissions.member_id(principal)

    def attempt(btx: core_store.BankTx) -> Entry:
        row, space = entries.for_write(principal, entry_id)
        _check_acceptable(principal, row, space, me)
        reviewed = _review(row, space, body)
        now = clock.now_ms()
        revision = row.revision + 1
        bank = namespace(space.id)
        bank_row = btx.row(bank)
        inc = bank_row.incarnation if bank_row is not None else None
        writes = [_projection(inc, row, revision, reviewed, now)]
        target = _superseded_target(org, row)
        tomb = _tombstone(inc, target.entry_id, now, entry_id) if target is not None else None
        if tomb is not None:
            writes.append(tomb)
        btx.stage(bank, bank_row, writes, principal.actor)
        doc: EntryDoc = {**row.doc, "changed_by": [], "accepted_at": now, "accepted_by": me,
                         "projection_sha256": reviewed.sha256}
        after = store.stage_accepted(btx.tx, row, revision, doc, now)
        store.add_event(btx.tx, org, entry_id, "accept", me, {"revision": revision, "documentSha256": reviewed.sha256,
                                                              "dlpRedacted": reviewed.kinds}, at=now)
        audit.add_to(btx.tx, org, "context.memory.accept", principal.actor, entry_id,
                     {"revision": revision, "document_sha256": reviewed.sha256, "dlp_kinds": reviewed.kinds})
        if target is not None:
            _stage_supersede_target(btx.tx, principal, target, entry_id, me, now)
        return after

    return core_store.write(org, attempt)


def supersede(principal: Principal, entry_id: str, body: SupersedeBody) -> Entry:
    """Supersede an accepted entry by another accepted entry of the same space; its projection is
    tombstoned in the same transaction. Allowed while team memory is switched off. Errors: 404,
    403 ``forbidden``, 409 ``invalid_transition``, 400 ``validation_error``. Audited
    ``context.memory.supersede``."""
    org = principal.org_id
    me = permissions.member_id(principal)

    def attempt(btx: core_store.BankTx) -> Entry:
        row, space = entries.for_write(principal, entry_id)
        if row.status != "accepted":
            raise InvalidTransition(f"Only an accepted entry can be superseded; this one is {row.status}.",
                                    details={"status": row.status})
        other = entries.get_row(org, body.superseded_by)
        if other is None or other.space_id != row.space_id or other.entry_id == entry_id:
            raise BadRequest("supersededBy must name another entry of the same space.",
                             details={"field": "supersededBy"})
        if other.status != "accepted":
            raise InvalidTransition("supersededBy must be an accepted entry.", details={"status": other.status})
        now = clock.now_ms()
        after = _retire(btx, principal, row, space, "superseded", now, superseded_by=other.entry_id)
        store.add_event(btx.tx, org, entry_id, "supersede", me, {"supersededBy": other.entry_id}, at=now)
        audit.add_to(btx.tx, org, "context.memory.supersede", principal.actor, entry_id,
                     {"superseded_by": other.entry_id})
        return after

    return core_store.write(org, attempt)


def archive(principal: Principal, entry_id: str) -> Entry:
    """Archive a draft, accepted or superseded entry (its projection, if live, is tombstoned in the
    same transaction; the space's live-entry count drops). Allowed while team memory is switched
    off. Errors: 404, 403 ``forbidden``, 409 ``invalid_transition``. Audited ``context.memory.archive``."""
    org = principal.org_id
    me = permissions.member_id(principal)

    def attempt(btx: core_store.BankTx) -> Entry:
        row, space = entries.for_write(principal, entry_id)
        if row.status == "archived":
            raise InvalidTransition("The entry is already archived.", details={"status": row.status})
        now = clock.now_ms()
        after = _retire(btx, principal, row, space, "archived", now)
        store.stage_entry_removed(btx.tx, org, space.id)
        store.add_event(btx.tx, org, entry_id, "archive", me, {}, at=now)
        audit.add_to(btx.tx, org, "context.memory.archive", principal.actor, entry_id, {})
        return after

    return core_store.write(org, attempt)


def _retire(btx: core_store.BankTx, principal: Principal, row: Entry, space: Space, status: str, now: int,
            superseded_by: str | None = None) -> Entry:
    """Stage the entry's move to ``status`` and the tombstone of its live projection."""
    bank = namespace(space.id)
    bank_row = btx.row(bank)
    tomb = _tombstone(bank_row.incarnation if bank_row else None, row.entry_id, now, superseded_by)
    if tomb is not None:
        btx.stage(bank, bank_row, [tomb], principal.actor)
    doc = row.doc.copy()
    if superseded_by:
        doc["superseded_by"] = superseded_by
    return store.stage_status(btx.tx, row, status, doc, now)


@dataclass(frozen=True)
class AcceptedRevision:
    """An entry's last accepted revision, as its projection holds it: the title and text
    (DLP-gated like every read of entry text, ``dlp_findings`` the kinds found), the
    ``document_sha256`` the reviewer accepted, who accepted it (member id) and when (ms)."""

    entry_id: str
    revision: int
    title: str
    text: str
    dlp_findings: list[str]
    document_sha256: str
    accepted_by: str | None
    accepted_at: int | None


def _accepted_text(rec: Memory, title: str) -> str:
    """The text of an accepted document from its projection (``canonical.indexed_text``: the
    one-line title, a blank line, the text; the title alone for an empty text)."""
    if rec.text == title:
        return ""
    if not rec.text.startswith(title + "\n\n"):
        raise Damaged("team entry projection", rec.id, "text: does not start with the accepted title")
    return rec.text[len(title) + 2:]


def last_accepted(principal: Principal, entry_id: str) -> AcceptedRevision:
    """The entry's last accepted revision (what a reviewer diffs against), also once it is
    superseded or archived. Errors: 404 ``not_found`` (as reading the entry), 404
    ``entry_not_accepted`` when it was never accepted, 409 ``damaged`` when its projection is
    missing or cannot be read."""
    row, space = entries.for_read(principal, entry_id)
    sha = row.doc.get("projection_sha256")
    if row.revision < 1 or not sha:
        raise NotFound("This entry has never been accepted.", code="entry_not_accepted")
    bank_row = core_store.get_bank_row(principal.org_id, namespace(space.id))
    item = core_store.get_item(bank_row.incarnation, entry_id) if bank_row is not None else None
    if item is None:
        raise Damaged("team entry projection", entry_id, "missing")
    rec = core_store.record_of(item)
    stored_title = rec.meta.get("title") if isinstance(rec.meta, dict) else None
    if not isinstance(stored_title, str):
        raise Damaged("team entry projection", entry_id, "meta.title: missing or wrong type")
    title, k1 = dlp.gated(stored_title)
    text, k2 = dlp.gated(_accepted_text(rec, stored_title))
    return AcceptedRevision(entry_id=entry_id, revision=row.revision, title=title, text=text,
                            dlp_findings=sorted(set(k1) | set(k2)), document_sha256=sha,
                            accepted_by=row.doc.get("accepted_by"), accepted_at=row.doc.get("accepted_at"))
