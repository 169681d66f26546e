"""Review and accept, supersede, archive, and the retrieval projection (keystone-team-memory.md, "Review and accept", "Retrieval").

Accept pins the exact document: ``documentSha256`` must equal the SHA-256 of the canonical
document (``canonical``) of the entry as it stands, else 409 ``document_changed`` with the
current hash. Separation of duties: the creator, and every author of an update or patch since
the last accepted revision, get 403 ``context.memory.self_accept``; only a signed-in person may
accept (403 ``context.person_required``). DLP runs at the space's policy (``dlp``).

In ONE transaction accept then: writes the accepted revision as a memory record (id = entry id,
text = the DLP-processed indexed document, ``meta`` = {entryId, revision, kind, title,
acceptedAt}) into the space's internal namespace ``!space/<space_id>`` through
``core.store.stage`` (the namespace's ``seq`` advance conditioned on the value read), moves the
entry to ``accepted`` (conditioned on the ``log_seq`` and ``meta_version`` the hash was computed
from), and, when ``supersedes`` names an accepted entry, supersedes it and tombstones its
projection. Supersede and archive tombstone the projection in their own transaction, so a retired
entry leaves retrieval when it is retired. Pending edits never touch the projection.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from .. import audit, clock
from ..auth.principal import Principal
from ..core import store
from ..core.records import Memory, Source
from ..errors import BadRequest, Conflict, Forbidden
from ..storage.tables import TeamEntryModel, TeamSpaceModel, bind
from ..storage.txn import run_transaction
from ..validation import Line
from . import canonical, dlp, entries, permissions


class AcceptBody(BaseModel):
    """Body of ``POST /entries/{id}/accept``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    document_sha256: StrictStr = Field(alias="documentSha256", pattern=r"^[0-9a-f]{64}$")


class SupersedeBody(BaseModel):
    """Body of ``POST /entries/{id}/supersede``: the accepted entry of the same space that replaces it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    superseded_by: Line = Field(alias="supersededBy", min_length=1, max_length=64)


class InvalidTransition(Conflict):
    """409 ``invalid_transition``: the status machine does not allow the move."""

    code = "invalid_transition"


def namespace(space_id: str) -> str:
    """The space's retrieval namespace: ``!space/<space_id>`` (a key no bank name can take)."""
    return f"{store.NAMESPACE_PREFIX}space/{space_id}"


def _tombstone(org_id: str, inc: str | None, entry_id: str, now: int, superseded_by: str | None) -> store.Write | None:
    if inc is None:
        return None
    item = store.get_item(inc, entry_id)
    if item is None:
        return None
    prev, guard = store.current(item)  # a damaged projection is tombstoned all the same
    if not prev.live and guard is None:
        return None
    rec = prev.model_copy(update={"invalid_at": now, "updated_at": max(now, prev.updated_at),
                                  "superseded_by": superseded_by, "revision": prev.revision + 1})
    return store.Write(record=rec, prev=prev, op="supersede" if superseded_by else "tombstone", fp=None, guard=guard)


def _commit(org_id: str, attempt) -> Any:
    committed: dict[str, Any] = {}

    def wrapped(tx):
        committed.clear()
        return attempt(tx, committed)

    result = run_transaction(wrapped)
    if committed.get("row") is not None:
        store.notify(org_id, committed["bank"], committed["row"], committed["changes"])
    return result


def accept(principal: Principal, entry_id: str, body: AcceptBody) -> dict[str, Any]:
    """Accept the entry's current document as a new revision; returns the entry.

    Errors (nothing written): 404 ``not_found``, 403 ``forbidden``, 403
    ``context.collab_policy.capability_disabled``, 403 ``context.person_required``, 409
    ``invalid_transition``, 403 ``context.memory.self_accept``, 409 ``document_changed``
    (``details.documentSha256``), 422 ``dlp_blocked`` (``details.kinds``). Audited
    ``context.memory.accept`` (and ``context.memory.supersede`` for the entry it replaces).
    """
    org = principal.org_id
    me = permissions.member_id(principal)

    def attempt(tx, committed):
        row, space = entries.for_write(principal, entry_id)
        permissions.require_collab(space)
        if principal.kind != "person":
            raise Forbidden("Only a signed-in person can accept an entry.", code="context.person_required")
        if row.status not in ("draft", "accepted"):
            raise InvalidTransition(f"A {row.status} entry cannot be accepted.", details={"status": row.status})
        if me == row.doc["created_by"] or me in row.doc.get("changed_by", []):
            raise Forbidden("You created or changed this entry since its last accepted revision; another member "
                            "must accept it.", code="context.memory.self_accept")
        doc, kinds = entries.document(row, space)
        sha = canonical.sha256_hex(doc)
        if body.document_sha256 != sha:
            raise Conflict("The entry changed since you reviewed it.", code="document_changed",
                           details={"documentSha256": sha})
        dlp.enforce(space.get("dlp_policy", "redact"), kinds)
        now = clock.now_ms()
        revision = int(row.revision) + 1
        bank = namespace(space["id"])
        bank_row = store.get_bank_row(org, bank)
        inc = bank_row.incarnation if bank_row is not None else None
        prev_item = store.get_item(inc, entry_id) if inc else None
        prev, guard = store.current(prev_item) if prev_item is not None else (None, None)  # a damaged one is replaced
        meta = {"entryId": entry_id, "revision": revision, "kind": row.kind, "title": doc["title"],
                "acceptedAt": entries.iso(now)}
        rec = Memory(id=entry_id, text=canonical.indexed_text(doc), created_at=prev.created_at if prev else now,
                     updated_at=now, revision=(prev.revision + 1) if prev else 1, meta=meta,
                     source=Source(entry_id=entry_id), tags=[f"kind:{row.kind}"])
        writes = [store.Write(record=rec, prev=prev, op="accept", fp=None, guard=guard)]
        target = None
        sup = row.doc.get("supersedes")
        if sup:
            target = entries.get_row(org, sup)
            if target is not None and target.status == "accepted" and target.space_id == row.space_id:
                tomb = _tombstone(org, inc, sup, now, entry_id)
                if tomb is not None:
                    writes.append(tomb)
            else:
                target = None
        new_bank, changes = store.stage(tx, org, bank, bank_row, writes, principal.actor)
        committed.update(row=new_bank, bank=bank, changes=changes)
        d = dict(row.doc)
        d.update(changed_by=[], accepted_at=now, accepted_by=me, projection_sha256=sha)
        tx.update(row, actions=[TeamEntryModel.status.set("accepted"), TeamEntryModel.revision.set(revision),
                                TeamEntryModel.doc.set(d), TeamEntryModel.updated_at.set(now)],
                  condition=(TeamEntryModel.log_seq == row.log_seq) & (TeamEntryModel.meta_version == row.meta_version)
                  & (TeamEntryModel.status == row.status))
        entries.event(tx, org, entry_id, "accept", me, {"revision": revision, "documentSha256": sha,
                                                        "dlpRedacted": kinds}, at=now)
        audit.add_to(tx, org, "context.memory.accept", principal.actor, entry_id,
                     {"revision": revision, "document_sha256": sha, "dlp_kinds": kinds})
        if target is not None:
            td = dict(target.doc)
            td["superseded_by"] = entry_id
            tx.update(target, actions=[TeamEntryModel.status.set("superseded"), TeamEntryModel.doc.set(td),
                                       TeamEntryModel.updated_at.set(now)],
                      condition=TeamEntryModel.status == "accepted")
            entries.event(tx, org, target.entry_id, "superseded", me, {"supersededBy": entry_id}, at=now)
            audit.add_to(tx, org, "context.memory.supersede", principal.actor, target.entry_id,
                         {"superseded_by": entry_id, "via": "accept"})
        row.status, row.revision, row.doc, row.updated_at = "accepted", revision, d, now
        return row

    return entries.public(_commit(org, attempt))


def supersede(principal: Principal, entry_id: str, body: SupersedeBody) -> dict[str, Any]:
    """Supersede an accepted entry by another accepted entry of the same space; its projection is
    tombstoned in the same transaction. Allowed while team memory is switched off. Errors: 404,
    403 ``forbidden``, 409 ``invalid_transition``, 400 ``validation_error``. Audited
    ``context.memory.supersede``."""
    org = principal.org_id
    me = permissions.member_id(principal)

    def attempt(tx, committed):
        row, space = entries.for_write(principal, entry_id)
        if row.status != "accepted":
            raise InvalidTransition(f"Only an accepted entry can be superseded; this one is {row.status}.",
                                    details={"status": row.status})
        other = entries.get_row(org, body.superseded_by)
        if other is None or other.space_id != row.space_id or other.entry_id == entry_id:
            raise BadRequest("supersededBy must name another entry of the same space.", details={"field": "supersededBy"})
        if other.status != "accepted":
            raise InvalidTransition("supersededBy must be an accepted entry.", details={"status": other.status})
        now = clock.now_ms()
        _retire(tx, committed, principal, org, row, space, "superseded", now, superseded_by=other.entry_id)
        entries.event(tx, org, entry_id, "supersede", me, {"supersededBy": other.entry_id}, at=now)
        audit.add_to(tx, org, "context.memory.supersede", principal.actor, entry_id, {"superseded_by": other.entry_id})
        return row

    return entries.public(_commit(org, attempt))


def archive(principal: Principal, entry_id: str) -> dict[str, Any]:
    """Archive a draft, accepted or superseded entry (its projection, if live, is tombstoned in the
    same transaction; the space's live-entry count drops). Allowed while team memory is switched
    off. Errors: 404, 403 ``forbidden``, 409 ``invalid_transition``. Audited ``context.memory.archive``."""
    org = principal.org_id
    me = permissions.member_id(principal)

    def attempt(tx, committed):
        row, space = entries.for_write(principal, entry_id)
        if row.status == "archived":
            raise InvalidTransition("The entry is already archived.", details={"status": row.status})
        now = clock.now_ms()
        _retire(tx, committed, principal, org, row, space, "archived", now)
        tx.update(TeamSpaceModel(org_id=org, sk=f"space#{space['id']}"), actions=[TeamSpaceModel.entries_live.add(-1)],
                  condition=TeamSpaceModel.sk.exists())
        entries.event(tx, org, entry_id, "archive", me, {}, at=now)
        audit.add_to(tx, org, "context.memory.archive", principal.actor, entry_id, {})
        return row

    return entries.public(_commit(org, attempt))


def _retire(tx, committed, principal: Principal, org: str, row: TeamEntryModel, space: dict[str, Any], status: str,
            now: int, superseded_by: str | None = None) -> None:
    bind()
    bank = namespace(space["id"])
    bank_row = store.get_bank_row(org, bank)
    tomb = _tombstone(org, bank_row.incarnation if bank_row else None, row.entry_id, now, superseded_by)
    if tomb is not None:
        new_bank, changes = store.stage(tx, org, bank, bank_row, [tomb], principal.actor)
        committed.update(row=new_bank, bank=bank, changes=changes)
    d = dict(row.doc)
    if superseded_by:
        d["superseded_by"] = superseded_by
    tx.update(row, actions=[TeamEntryModel.status.set(status), TeamEntryModel.doc.set(d),
                            TeamEntryModel.updated_at.set(now)],
              condition=TeamEntryModel.status == row.status)
    row.status, row.doc, row.updated_at = status, d, now
