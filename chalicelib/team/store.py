"""Team memory's storage: every key format, condition and query of the team tables, and the
one write function for team writes that are not bank writes.

Tables (``storage.tables``) and their keys:

- ``team_spaces`` (org_id, sk): ``space#<space id>`` (the space, ``entries_live``),
  ``member#<space id>#<member id>`` (grants), ``deny`` (the org's deny rules);
- ``team_entries`` (org_id, entry_id), listed per space by ``space_sk`` =
  ``<space id>#<created_at, 13 digits>#<entry id>``;
- ``team_updates`` (``<org_id>#<entry_id>``, sk): ``seq#<12 digits>`` (one edit),
  ``uid#<updateId>`` (the seq and SHA-256 an updateId was first used with),
  ``client#<Yjs client id>`` (the author owning that client id in the entry);
- ``team_events`` (``<org_id>#<entry_id>``, ``<at, 13 digits>#<uuid>``): history, never text;
- ``team_attributions`` (``<org_id>#<space_id>``, ``<at, 13 digits>#<attribution id>``);
- ``team_rates`` (``<org>#<author>#<entry id or *>#<minute>``): fixed-window counters;
- S3 ``<org>/entries/<entry id>/state.bin``: an entry's compacted Yjs state.

Readers return decoded values (``Entry``, ``Space``, ``LogRow``, ...); a stored row that cannot
be decoded raises ``Damaged`` (409 ``damaged``). Stagers add conditioned writes to an open
``TransactWrite``; ``write`` runs one (a bank write goes through ``core.store.write`` instead,
staging its team rows into ``BankTx.tx``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict, TypeVar, cast

from pynamodb.exceptions import DoesNotExist, UpdateError
from pynamodb.transactions import TransactWrite

from ..clock import now_ms
from ..storage import blobs
from ..storage.damage import MAX_SAFE_INT, Damaged, time_ms
from ..storage.tables import (
    TeamAttributionModel,
    TeamEntryModel,
    TeamEventModel,
    TeamRateModel,
    TeamSpaceModel,
    TeamUpdateModel,
    bind,
)
from ..storage.txn import run_transaction

KINDS = ("decision", "convention", "note", "glossary")
STATUSES = ("draft", "accepted", "superseded", "archived")
ENTRY_DAMAGED_HINT = "Archive it and continue in a new entry, or restore its stored row."

T = TypeVar("T")
Tx = TransactWrite  # the open transaction every stager adds to


def write(attempt: Callable[[TransactWrite], T]) -> T:
    """The one write path of team rows that are not bank writes (spaces, members, deny rules,
    entries, edits, attributions): ``attempt(tx)`` reads, stages conditioned writes with this
    module's stagers and returns a value; retried from a fresh read when a condition fails, 409
    ``conflict`` after ``Settings.write_retries`` (``storage.txn.run_transaction``). A
    ``CairnError`` it raises writes nothing."""
    bind()
    return run_transaction(attempt)


# --- keys -------------------------------------------------------------------------------------

def _scoped_key(org_id: str, object_id: str) -> str:
    """The hash key of an entry's log and events, or of a space's attributions."""
    return f"{org_id}#{object_id}"


def _seq_sk(seq: int) -> str:
    return f"seq#{seq:012d}"


def _space_sk(space_id: str) -> str:
    return f"space#{space_id}"


def _member_sk(space_id: str, member_id: str) -> str:
    return f"member#{space_id}#{member_id}"


_DENY_SK = "deny"


def _time_sk(at: int, suffix: str) -> str:
    return f"{at:013d}#{suffix}"


def state_key(org_id: str, entry_id: str) -> str:
    """S3 key of an entry's compacted Yjs state: ``<org>/entries/<id>/state.bin``."""
    return blobs.org_key(org_id, "entries", entry_id, "state.bin")


def listing_prefix(space_id: str) -> str:
    """What every listing position (``EntryPage.cursor``'s ``after``) of a space starts with."""
    return f"{space_id}#"


def _listing_position(space_id: str, created_at: int, entry_id: str) -> str:
    return f"{listing_prefix(space_id)}{created_at:013d}#{entry_id}"


# --- spaces -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Space:
    """A team space: ``data`` holds its stored fields (``id``, ``name``, ``kind``,
    ``classification``, and as stored ``dlp_policy``, ``team_memory_enabled``, ``created_at``,
    ``updated_at`` (ms), ``created_by``); ``entries_live`` counts its entries not archived."""

    data: dict[str, Any]
    entries_live: int = 0

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def kind(self) -> str:
        return str(self.data["kind"])

    @property
    def classification(self) -> str:
        return str(self.data["classification"])

    @property
    def dlp_policy(self) -> str:
        return self.data.get("dlp_policy", "redact")  # as stored

    @property
    def team_memory_enabled(self) -> bool:
        return self.data.get("team_memory_enabled", True)  # as stored


def _check_data(row: TeamSpaceModel, kind: str, required: dict[str, type]) -> None:
    """The one check of a stored space, membership or deny-rule row: its ``data`` is a JSON
    object with each ``required`` field of its type, else ``Damaged`` (409 ``damaged``)."""
    if "data" in row.damaged or not isinstance(row.data, dict):
        raise Damaged(kind, row.sk, f"data: {row.damaged.get('data', 'not a JSON object')}")
    for name, typ in required.items():
        if not isinstance(row.data.get(name), typ):
            raise Damaged(kind, row.sk, f"{name}: missing or wrong type")


def _get_space_row(org_id: str, space_id: str) -> TeamSpaceModel | None:
    bind()
    try:
        return TeamSpaceModel.get(org_id, _space_sk(space_id), consistent_read=True)
    except DoesNotExist:
        return None


def get_space(org_id: str, space_id: str, classifications: tuple[str, ...]) -> Space | None:
    """The space (consistent read) or ``None``; 409 ``damaged`` when it lacks ``id``, ``name``,
    ``kind`` or ``classification`` or the classification is not one of ``classifications``."""
    row = _get_space_row(org_id, space_id)
    return _space(row, classifications) if row is not None else None


def _space(row: TeamSpaceModel, classifications: tuple[str, ...]) -> Space:
    """The one decoder of a stored space row (``get_space``'s checks); raises ``Damaged``."""
    _check_data(row, "team space", {"id": str, "name": str, "kind": str, "classification": str})
    data = row.data
    if data["classification"] not in classifications:
        raise Damaged("team space", row.sk, "classification: unknown value")
    entries_live = row.entries_live if isinstance(row.entries_live, (int, float)) else 0
    return Space(data=dict(data), entries_live=int(entries_live))


def iter_spaces(org_id: str, after: str | None,
                classifications: tuple[str, ...]) -> Iterator[tuple[str, Space | Damaged]]:
    """``(space id, space or its Damaged)`` of the org's spaces by id, from the first or strictly
    after space id ``after``: a lazy consistent key query on ``space#`` (``~`` sorts above every
    space id character)."""
    bind()
    lo, hi = _space_sk(after or ""), _space_sk("~")
    for row in TeamSpaceModel.query(org_id, TeamSpaceModel.sk.between(lo, hi), consistent_read=True):
        if after is not None and row.sk == lo:
            continue
        try:
            yield row.sk[len("space#"):], _space(row, classifications)
        except Damaged as exc:
            yield row.sk[len("space#"):], exc


def stage_new_space(tx: TransactWrite, org_id: str, data: dict[str, Any], now: int) -> None:
    """Create space ``data["id"]`` (no entries, version 1); fails if the id exists."""
    tx.save(TeamSpaceModel(org_id=org_id, sk=_space_sk(data["id"]), data=data, entries_live=0, version=1,
                           updated_at=now), condition=TeamSpaceModel.sk.does_not_exist())


def stage_space_change(tx: TransactWrite, org_id: str, space_id: str, changes: dict[str, Any],
                       now: int) -> Space | None:
    """Stage ``changes`` merged into the space's stored fields (``updated_at`` = ``now``),
    conditioned on the ``version`` read; the space as it will be, or ``None`` when there is none."""
    row = _get_space_row(org_id, space_id)
    if row is None:
        return None
    _check_data(row, "team space", {})
    data = {**row.data, **changes, "updated_at": now}
    tx.update(row, actions=[TeamSpaceModel.data.set(data), TeamSpaceModel.version.add(1),
                            TeamSpaceModel.updated_at.set(now)],
              condition=TeamSpaceModel.version == row.version)
    return Space(data=data, entries_live=int(row.entries_live or 0))


def live_entries(org_id: str, space_id: str) -> int:
    """The space's count of entries not archived, as stored now (``stage_entry_created`` is
    conditioned on it)."""
    bind()
    return int(TeamSpaceModel.get(org_id, _space_sk(space_id), consistent_read=True).entries_live or 0)


def stage_entry_removed(tx: TransactWrite, org_id: str, space_id: str) -> None:
    """One entry of the space less counts as live (an archive)."""
    tx.update(TeamSpaceModel(org_id=org_id, sk=_space_sk(space_id)), actions=[TeamSpaceModel.entries_live.add(-1)],
              condition=TeamSpaceModel.sk.exists())


def member_grants(org_id: str, space_id: str, member_id: str) -> list[Any]:
    """The stored grant list of a membership ([] when there is none); ``Damaged`` when it cannot
    be read."""
    bind()
    try:
        row = TeamSpaceModel.get(org_id, _member_sk(space_id, member_id), consistent_read=True)
    except DoesNotExist:
        return []
    _check_data(row, "team membership", {"permissions": list})
    return list(row.data["permissions"])


def members_grants(org_id: str, space_ids: list[str], member_id: str) -> dict[str, list[Any] | Damaged]:
    """``{space id: stored grant list, or its Damaged}`` of one member in each of ``space_ids``
    where it is a member (consistent BatchGetItems of 100 keys)."""
    bind()
    out: dict[str, list[Any] | Damaged] = {}
    keys = [(org_id, _member_sk(sid, member_id)) for sid in dict.fromkeys(space_ids)]
    for row in TeamSpaceModel.batch_get(keys, consistent_read=True):
        space_id = row.sk[len("member#"):-len("#" + member_id)]
        try:
            _check_data(row, "team membership", {"permissions": list})
            out[space_id] = list(row.data["permissions"])
        except Damaged as exc:
            out[space_id] = exc
    return out


def stage_member(tx: TransactWrite, org_id: str, space_id: str, member_id: str, perms: list[str], now: int) -> None:
    """Set (replace) a member's grants in a space."""
    tx.save(TeamSpaceModel(org_id=org_id, sk=_member_sk(space_id, member_id),
                           data={"space_id": space_id, "member_id": member_id, "permissions": perms}, updated_at=now))


def stage_member_removed(tx: TransactWrite, org_id: str, space_id: str, member_id: str) -> bool:
    """Delete a membership; ``False`` (nothing staged) when there is none."""
    try:
        row = TeamSpaceModel.get(org_id, _member_sk(space_id, member_id), consistent_read=True)
    except DoesNotExist:
        return False
    tx.delete(row)
    return True


class DenyRuleJSON(TypedDict, total=False):
    """A deny rule as stored and as answered: ``memberId`` loses ``permissions`` in ``spaceId``
    (``None``: every space). Read tolerantly (``.get``): a stored rule may lack a key."""

    memberId: str
    spaceId: str | None
    permissions: list[str]


def deny_rules(org_id: str) -> list[DenyRuleJSON]:
    """The org's stored deny rules ([] when none); 409 ``damaged`` when they cannot be read (a
    deny rule never reads as absent)."""
    bind()
    try:
        row = TeamSpaceModel.get(org_id, _DENY_SK, consistent_read=True)
    except DoesNotExist:
        return []
    _check_data(row, "team deny rules", {"rules": list})
    rules = row.data["rules"]
    if not all(isinstance(r, dict) for r in rules):
        raise Damaged("team deny rules", row.sk, "rules: an element is not an object")
    return list(rules)


def stage_deny_rules(tx: TransactWrite, org_id: str, rules: list[DenyRuleJSON], now: int) -> None:
    """Replace the org's deny rules."""
    tx.save(TeamSpaceModel(org_id=org_id, sk=_DENY_SK, data={"rules": rules}, updated_at=now))


# --- entries ----------------------------------------------------------------------------------

class EntryDoc(TypedDict, total=False):
    """An entry's stored metadata (``doc``); authors are member ids, ``accepted_at`` ms."""

    title: str
    links: list[str]
    supersedes: str | None
    superseded_by: str | None
    classification: str
    created_by: str
    changed_by: list[str]
    accepted_at: int | None
    accepted_by: str | None
    projection_sha256: str | None


@dataclass(frozen=True)
class Entry:
    """A decoded entry row. ``doc``: title, links, supersedes, superseded_by, classification,
    created_by, changed_by, accepted_at, accepted_by, projection_sha256. Counters: ``meta_version``
    (PATCH), ``log_seq`` (edit log rows), ``compacted_seq`` (payloads folded into S3),
    ``revision`` (accepted revisions), ``units`` (UTF-16 units). Times in ms since epoch."""

    org_id: str
    entry_id: str
    space_id: str
    status: str
    kind: str
    doc: EntryDoc
    text: str
    units: int
    meta_version: int
    revision: int
    log_seq: int
    compacted_seq: int
    created_at: int
    updated_at: int
    # the counters as stored, which the writes that replace them are conditioned on
    stored: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


_ROW_FIELDS = ("space_sk", "space_id", "status", "kind", "doc", "text", "units", "meta_version", "revision",
               "log_seq", "compacted_seq", "created_at", "updated_at")
_DOC_FIELDS = {"title": str, "classification": str, "created_by": str, "changed_by": list, "links": list}
_COUNTERS = ("units", "meta_version", "revision", "log_seq", "compacted_seq")


def _row_problem(row: TeamEntryModel) -> str | None:
    for name in _ROW_FIELDS:
        if name in row.damaged:
            return f"{name}: {row.damaged[name]}"
    if row.status not in STATUSES or row.kind not in KINDS:
        return "status or kind: unknown value"
    if not isinstance(row.doc, dict):
        return "doc: not a JSON object"
    for name, typ in _DOC_FIELDS.items():
        if not isinstance(row.doc.get(name), typ):
            return f"doc.{name}: missing or wrong type"
    for name in _COUNTERS:
        value = getattr(row, name)
        if not isinstance(value, (int, float)) or not 0 <= value <= MAX_SAFE_INT:
            return f"{name}: out of range"
    if time_ms(row.created_at) is None or time_ms(row.updated_at) is None:
        return "created_at or updated_at: not a time"
    if not isinstance(row.space_id, str) or not isinstance(row.text, str):
        return "space_id or text: wrong type"
    return None


def _entry(row: TeamEntryModel) -> Entry:
    """The one decoder of a stored entry row: every field its readers use there with its type,
    else ``Damaged`` (409 ``damaged``)."""
    problem = _row_problem(row)
    if problem is not None:
        raise Damaged("team entry", row.entry_id, problem, hint=ENTRY_DAMAGED_HINT)
    return Entry(org_id=row.org_id, entry_id=row.entry_id, space_id=row.space_id, status=row.status, kind=row.kind,
                 doc=cast(EntryDoc, dict(row.doc)), text=row.text, units=int(row.units),
                 meta_version=int(row.meta_version),
                 revision=int(row.revision), log_seq=int(row.log_seq), compacted_seq=int(row.compacted_seq),
                 created_at=time_ms(row.created_at) or 0, updated_at=time_ms(row.updated_at) or 0,
                 stored={"meta_version": row.meta_version, "log_seq": row.log_seq,
                         "compacted_seq": row.compacted_seq})


def get_entry(org_id: str, entry_id: str) -> Entry | None:
    """The entry (consistent read) or ``None``; 409 ``damaged`` when its row cannot be decoded."""
    bind()
    try:
        return _entry(TeamEntryModel.get(org_id, entry_id, consistent_read=True))
    except DoesNotExist:
        return None


def space_entries(org_id: str, space_id: str, after: str | None) -> Iterator[tuple[str, Entry | Damaged]]:
    """``(position, entry or its Damaged)`` of a space's entries, oldest first, after listing
    position ``after`` (``None``: from the start)."""
    bind()
    lo = after or listing_prefix(space_id)
    hi = listing_prefix(space_id) + "~"  # above every position of the space
    for row in TeamEntryModel.by_space.query(org_id, TeamEntryModel.space_sk.between(lo, hi), consistent_read=True):
        if row.space_sk == lo:
            continue
        try:
            yield row.space_sk, _entry(row)
        except Damaged as exc:
            yield row.space_sk, exc


def stage_entry_created(tx: TransactWrite, entry: Entry, live: int) -> None:
    """Create ``entry`` and count it live in its space, conditioned on the space's count being
    ``live`` (the value the per-space cap was checked against)."""
    tx.save(TeamEntryModel(org_id=entry.org_id, entry_id=entry.entry_id,
                           space_sk=_listing_position(entry.space_id, entry.created_at, entry.entry_id),
                           space_id=entry.space_id, status=entry.status, kind=entry.kind, doc=entry.doc,
                           text=entry.text, units=entry.units, meta_version=entry.meta_version,
                           revision=entry.revision, log_seq=entry.log_seq, compacted_seq=entry.compacted_seq,
                           created_at=entry.created_at, updated_at=entry.updated_at),
            condition=TeamEntryModel.entry_id.does_not_exist())
    tx.update(TeamSpaceModel(org_id=entry.org_id, sk=_space_sk(entry.space_id)),
              actions=[TeamSpaceModel.entries_live.add(1)], condition=TeamSpaceModel.entries_live == live)


def _key(entry: Entry) -> TeamEntryModel:
    return TeamEntryModel(org_id=entry.org_id, entry_id=entry.entry_id)


def stage_meta_change(tx: TransactWrite, entry: Entry, doc: EntryDoc, kind: str, now: int) -> Entry:
    """Replace the entry's metadata (``doc``, ``kind``), advancing ``meta_version``; conditioned
    on the ``meta_version`` and status read. Returns the entry as it will be."""
    tx.update(_key(entry), actions=[TeamEntryModel.doc.set(doc), TeamEntryModel.kind.set(kind),
                                    TeamEntryModel.meta_version.add(1), TeamEntryModel.updated_at.set(now)],
              condition=(TeamEntryModel.meta_version == entry.stored["meta_version"])
              & (TeamEntryModel.status == entry.status))
    return replace(entry, doc=doc, kind=kind, updated_at=now, meta_version=entry.meta_version + 1)


def stage_text_change(tx: TransactWrite, entry: Entry, seq: int, text: str, units: int, doc: EntryDoc,
                      now: int) -> None:
    """Record edit ``seq``'s derived text, units and authorship on the entry; conditioned on the
    ``log_seq`` and status read."""
    tx.update(_key(entry), actions=[TeamEntryModel.log_seq.set(seq), TeamEntryModel.text.set(text),
                                    TeamEntryModel.units.set(units), TeamEntryModel.doc.set(doc),
                                    TeamEntryModel.updated_at.set(now)],
              condition=(TeamEntryModel.log_seq == entry.stored["log_seq"]) & (TeamEntryModel.status == entry.status))


def stage_accepted(tx: TransactWrite, entry: Entry, revision: int, doc: EntryDoc, now: int) -> Entry:
    """Move the entry to ``accepted`` at ``revision``; conditioned on the ``log_seq``,
    ``meta_version`` and status the accepted document was computed from."""
    tx.update(_key(entry), actions=[TeamEntryModel.status.set("accepted"), TeamEntryModel.revision.set(revision),
                                    TeamEntryModel.doc.set(doc), TeamEntryModel.updated_at.set(now)],
              condition=(TeamEntryModel.log_seq == entry.stored["log_seq"])
              & (TeamEntryModel.meta_version == entry.stored["meta_version"]) & (TeamEntryModel.status == entry.status))
    return replace(entry, status="accepted", revision=revision, doc=doc, updated_at=now)


def stage_status(tx: TransactWrite, entry: Entry, status: str, doc: EntryDoc, now: int) -> Entry:
    """Move the entry to ``status`` with ``doc``; conditioned on the status read."""
    tx.update(_key(entry), actions=[TeamEntryModel.status.set(status), TeamEntryModel.doc.set(doc),
                                    TeamEntryModel.updated_at.set(now)],
              condition=TeamEntryModel.status == entry.status)
    return replace(entry, status=status, doc=doc, updated_at=now)


def take_lease(entry: Entry, now: int, until: int) -> bool:
    """Take the entry's compaction lease up to ``until`` (ms) unless a live one (past ``now``)
    is held; ``False`` when it is."""
    try:
        _key(entry).update(actions=[TeamEntryModel.compacting_until.set(until)],
                           condition=TeamEntryModel.compacting_until.does_not_exist()
                           | (TeamEntryModel.compacting_until < now))
    except UpdateError:
        return False
    return True


def release_lease(org_id: str, entry_id: str, lease: int) -> None:
    """Drop the compaction lease ``lease`` if still held (an expired one another compactor took
    over is left alone)."""
    with contextlib.suppress(UpdateError):
        TeamEntryModel(org_id=org_id, entry_id=entry_id).update(
            actions=[TeamEntryModel.compacting_until.remove()], condition=TeamEntryModel.compacting_until == lease)


def set_compacted(entry: Entry, upto: int, lease: int) -> bool:
    """Move ``compacted_seq`` to ``upto``, conditioned on the value read and on holding ``lease``;
    ``False`` when either changed."""
    try:
        _key(entry).update(actions=[TeamEntryModel.compacted_seq.set(upto)],
                           condition=(TeamEntryModel.compacted_seq == entry.stored["compacted_seq"])
                           & (TeamEntryModel.compacting_until == lease))
    except UpdateError:
        return False
    return True


def read_state(org_id: str, entry_id: str) -> bytes | None:
    """The entry's compacted Yjs state from S3, or ``None``."""
    return blobs.get_bytes(state_key(org_id, entry_id))


def write_state(org_id: str, entry_id: str, state: bytes) -> None:
    """Replace the entry's compacted Yjs state in S3."""
    blobs.put_bytes(state_key(org_id, entry_id), state)


# --- the edit log -----------------------------------------------------------------------------

@dataclass(frozen=True)
class LogRow:
    """One edit of the log: ``payload`` (the V1 update) is ``None`` once compacted; ``damaged``
    when its payload or seq cannot be decoded (``ref`` names the stored row)."""

    ref: str
    seq: int
    update_id: str | None
    payload: bytes | None
    author: str | None
    size: int
    at: Any  # ms since epoch as stored (``time_ms`` decodes it)
    damaged: bool = False


def _log_row(item: TeamUpdateModel) -> LogRow:
    seq = item.seq if isinstance(item.seq, (int, float)) else 0
    return LogRow(ref=item.sk, seq=int(seq), update_id=item.update_id,
                  payload=None if item.payload is None else bytes(item.payload), author=item.author,
                  size=int(item.size or 0), at=item.at, damaged="payload" in item.damaged or "seq" in item.damaged)


def log_rows(org_id: str, entry_id: str, after: int, upto: int) -> list[LogRow]:
    """The edits ``after`` < seq <= ``upto``, oldest first (consistent)."""
    if upto <= after:
        return []
    bind()
    return [_log_row(i) for i in TeamUpdateModel.query(_scoped_key(org_id, entry_id),
                                                        TeamUpdateModel.sk.between(_seq_sk(after + 1), _seq_sk(upto)),
                                                        consistent_read=True)]


def last_edits(org_id: str, entry_id: str, limit: int) -> list[LogRow]:
    """The last ``limit`` edits, newest first, without payloads."""
    bind()
    items = TeamUpdateModel.query(_scoped_key(org_id, entry_id), TeamUpdateModel.sk.startswith("seq#"),
                                  scan_index_forward=False, limit=limit, consistent_read=True,
                                  attributes_to_get=["sk", "seq", "update_id", "author", "size", "at"])
    return [LogRow(ref=i.sk, seq=int(i.seq or 0), update_id=i.update_id, payload=None, author=i.author,
                   size=int(i.size or 0), at=i.at) for i in items]


@dataclass(frozen=True)
class UsedUpdateId:
    """The edit an ``updateId`` was first used for: its ``seq`` and the SHA-256 (hex) of its bytes."""

    seq: int
    sha256: str | None


def used_update_id(org_id: str, entry_id: str, update_id: str) -> UsedUpdateId | None:
    """Where ``update_id`` was already used in the entry, or ``None``."""
    try:
        used = TeamUpdateModel.get(_scoped_key(org_id, entry_id), f"uid#{update_id}", consistent_read=True)
    except DoesNotExist:
        return None
    return UsedUpdateId(seq=int(used.seq), sha256=used.sha256)


def client_owner(org_id: str, entry_id: str, client: int) -> str | None:
    """The author owning Yjs client id ``client`` in the entry, or ``None``."""
    try:
        return TeamUpdateModel.get(_scoped_key(org_id, entry_id), f"client#{client}", consistent_read=True).author
    except DoesNotExist:
        return None


def append_log(tx: TransactWrite, entry: Entry, seq: int, *, update_id: str, sha256: str, payload: bytes,
               author: str, clients: list[int], now: int) -> None:
    """Append edit ``seq`` (its row, its ``updateId`` row) and the author's ownership of the Yjs
    ``clients`` it advanced; each conditioned on not being there yet (a client row may already be
    the same author's)."""
    key = _scoped_key(entry.org_id, entry.entry_id)
    tx.save(TeamUpdateModel(entry_key=key, sk=_seq_sk(seq), seq=seq, update_id=update_id, sha256=sha256,
                            payload=payload, size=len(payload), author=author, at=now),
            condition=TeamUpdateModel.sk.does_not_exist())
    tx.save(TeamUpdateModel(entry_key=key, sk=f"uid#{update_id}", seq=seq, sha256=sha256, author=author, at=now),
            condition=TeamUpdateModel.sk.does_not_exist())
    for client in clients:
        tx.save(TeamUpdateModel(entry_key=key, sk=f"client#{client}", author=author, at=now),
                condition=TeamUpdateModel.sk.does_not_exist() | (TeamUpdateModel.author == author))


def strip_payloads(org_id: str, entry_id: str, upto: int) -> int:
    """Remove the payloads of edits <= ``upto`` (folded into the S3 state); the rows stay.
    Returns how many were stripped."""
    stripped = 0
    for item in TeamUpdateModel.query(_scoped_key(org_id, entry_id), TeamUpdateModel.sk.between("seq#", _seq_sk(upto)),
                                      filter_condition=TeamUpdateModel.payload.exists(), consistent_read=True):
        item.update(actions=[TeamUpdateModel.payload.remove()])
        stripped += 1
    return stripped


# --- rates ------------------------------------------------------------------------------------

def rate_windows(org_id: str, author: str, entry_id: str, now: int) -> tuple[str, str]:
    """The current minute's counters of an author: ``(this entry, all entries)``."""
    minute = now // 60_000
    return f"{org_id}#{author}#{entry_id}#{minute}", f"{org_id}#{author}#*#{minute}"


def rate_count(window: str) -> int:
    """Updates counted in a window so far."""
    try:
        return int(TeamRateModel.get(window, consistent_read=True).n)
    except DoesNotExist:
        return 0


def stage_rate(tx: TransactWrite, window: str, cap: int, now: int) -> None:
    """Count one update in ``window``, conditioned on staying under ``cap``; expires 3 minutes on."""
    tx.update(TeamRateModel(key=window),
              actions=[TeamRateModel.n.add(1), TeamRateModel.expires_at.set(now // 1000 + 180)],
              condition=TeamRateModel.key.does_not_exist() | (TeamRateModel.n < cap))


# --- history ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Event:
    """One status or metadata event of an entry (never text); ``at`` as stored (ms)."""

    action: str
    actor: str
    details: dict[str, Any]
    at: Any


def add_event(tx: TransactWrite, org_id: str, entry_id: str, action: str, actor: str,
              details: dict[str, Any] | None = None, at: int | None = None) -> None:
    """Stage one history event (``at``: ms, default now)."""
    at = at or now_ms()
    tx.save(TeamEventModel(entry_key=_scoped_key(org_id, entry_id), sk=_time_sk(at, uuid.uuid4().hex), action=action,
                           actor=actor, details=details or None, at=at), condition=TeamEventModel.sk.does_not_exist())


def last_events(org_id: str, entry_id: str, limit: int) -> list[Event]:
    """The last ``limit`` events of an entry, newest first."""
    bind()
    return [Event(action=e.action, actor=e.actor, details=dict(e.details) if isinstance(e.details, dict) else {},
                  at=e.at)
            for e in TeamEventModel.query(_scoped_key(org_id, entry_id), scan_index_forward=False, limit=limit,
                                          consistent_read=True)]


# --- attributions -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Attribution:
    """What one retrieval served from a space: ``entries`` [{entryId, revision}], to ``actor``."""

    id: str
    actor: str
    entries: list[Any]
    at: Any  # ms since epoch as stored


def stage_attribution(tx: TransactWrite, org_id: str, space_id: str, attribution: Attribution, now: int) -> None:
    """Record what a retrieval served from one space."""
    tx.save(TeamAttributionModel(space_key=_scoped_key(org_id, space_id), sk=_time_sk(now, attribution.id),
                                 attribution_id=attribution.id, actor=attribution.actor, entries=attribution.entries,
                                 at=now))


def attributions(org_id: str, space_id: str, limit: int) -> list[Attribution]:
    """The last ``limit`` attributions of a space, newest first."""
    bind()
    rows = TeamAttributionModel.query(_scoped_key(org_id, space_id), scan_index_forward=False, limit=limit,
                                      consistent_read=True)
    return [Attribution(id=r.attribution_id, actor=r.actor, entries=r.entries if isinstance(r.entries, list) else [],
                        at=r.at) for r in rows]
