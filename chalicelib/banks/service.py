"""Bank and memory operations: the bank worker's functions over DynamoDB and S3.
Domain code: no Chalice here.

Every change of a bank's documents is one transaction that writes the current record, appends
its revision and advances the bank's ``seq`` conditioned on the value it read, so ``seq`` order
is commit order. A bank is created on first use inside that same
transaction. Records are keyed by the bank's incarnation id, so a trashed bank never mixes with a
new bank of the same name.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from .. import audit, idempotency, metrics
from ..clock import now_ms
from ..core import store
from ..core.records import Confidence, Memory, RelatedMemory, SaveResult, Source, stated_at
from ..core.store import (
    BankRow,
    BankTx,
    History,
    MemoryRow,
    Write,
    current,
    decode_cursor,
    encode_cursor,
    get_bank_row,
    get_item,
    record_of,
)
from ..digests import keyed, keyed_if_any
from ..errors import BadRequest, Conflict, NotFound
from ..fingerprint import FINGERPRINT_RE, fingerprint, fingerprint_variant
from ..idempotency import IdemKey
from ..names import NAME_RE, check_name
from ..settings import get_settings
from ..storage import blobs
from ..storage.damage import Damaged
from ..storage.txn import Retry
from . import conflicts
from .records import (
    MAX_HANDLES,
    BankPatch,
    BankSettings,
    SaveRequest,
    UpdateRequest,
    check_observed_at,
    check_text,
    normalize_handles,
)
from .settings_read import settings_of

# --- domain values --------------------------------------------------------------------------

@dataclass(frozen=True)
class Bank:
    """A live bank as its users see it: counts of live and pinned memories and of rules, and its
    settings."""

    name: str
    description: str
    memories: int
    pinned: int
    rules: int
    settings: BankSettings = field(default_factory=BankSettings)


@dataclass(frozen=True)
class TrashEntry:
    """A trashed bank: its name, the trash id to restore it by, and when it was trashed (ms)."""

    name: str
    trashed_to: str
    trashed_at: int


@dataclass
class MemoryPage:
    """One page of a listing: the readable records, ``total`` matches of the filter (not of the
    page; ``None`` for a text filter), the cursor of the next page, and ``{id, reason}`` of each
    record that cannot be read."""

    memories: list[Memory]
    total: int | None
    next_cursor: str | None
    damaged: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class TagCount:
    tag: str
    count: int


# --- banks ----------------------------------------------------------------------------------

def bank_of(org_id: str, row: BankRow) -> Bank:
    """A bank row as its users see it (its counters summed over its lanes: one more read)."""
    return banks_of(org_id, [row])[0]


def banks_of(org_id: str, rows: list[BankRow]) -> list[Bank]:
    """Bank rows as their users see them (their lane rows read in one BatchGetItem per 100)."""
    return [Bank(name=h.row.bank_name, description=h.row.description or "", memories=h.memories,
                 pinned=h.pinned, rules=int(h.row.rules), settings=settings_of(h.row))
            for h in store.heads_of(org_id, rows, strict=False)]


def require_bank(org_id: str, name: str, btx: BankTx | None = None) -> BankRow:
    """The live bank row (read by the write attempt ``btx`` when given, so an answer from what is
    stored moves the bank's version: ``BankTx.row``); 404 ``bank_not_found`` when absent
    (another org's bank included)."""
    check_name(name)
    row = btx.row(name) if btx is not None else get_bank_row(org_id, name)
    if row is None:
        raise NotFound(f"Bank '{name}' not found.", code="bank_not_found")
    return row


def get_bank(org_id: str, name: str) -> Bank:
    """Bank ``name``; 404 ``bank_not_found`` when absent."""
    return bank_of(org_id, require_bank(org_id, name))


def ensure_bank(org_id: str, name: str, description: str = "", *, actor: str) -> tuple[Bank, bool]:
    """Create bank ``name`` or return the existing one: ``(bank, created)``. A creation is
    audited as ``bank.create``."""
    check_name(name)

    def attempt(btx: BankTx) -> tuple[BankRow, bool]:
        row, created = btx.create(name, description)
        if created:
            audit.add_to(btx.tx, org_id, "bank.create", actor, name, {"bank": name})
        return row, created

    row, created = store.write(org_id, attempt)
    return bank_of(org_id, row), created


def update_bank(org_id: str, name: str, patch: BankPatch, *, actor: str) -> Bank:
    """Set bank ``name``'s description and/or settings (the settings fields given replace theirs);
    returns the bank. Raises 400 ``invalid_name``, 400 ``validation_error`` (neither given), 404
    ``bank_not_found`` (nothing written). Audited as ``bank.update`` (``{fields}``: ``description``,
    ``settings.<field>``)."""
    check_name(name)
    given = sorted(patch.settings.model_fields_set) if patch.settings is not None else []
    if patch.description is None and not given:
        raise BadRequest("Nothing to update: give description or settings.", details={"field": "body"})

    def attempt(btx: BankTx) -> BankRow:
        row = btx.row(name)
        if row is None:
            raise NotFound(f"Bank '{name}' not found.", code="bank_not_found")
        settings = None
        if given and patch.settings is not None:
            merged = settings_of(row).model_copy(update={k: getattr(patch.settings, k) for k in given})
            settings = merged.model_dump_json()
        after = btx.set_fields(row, description=patch.description, settings=settings)
        fields = (["description"] if patch.description is not None else []) + [f"settings.{k}" for k in given]
        audit.add_to(btx.tx, org_id, "bank.update", actor, name, {"fields": fields})
        return after

    return bank_of(org_id, store.write(org_id, attempt))


BANKS_PAGE_DEFAULT = 100  # banks per page of the listing when no limit is given
BANKS_PAGE_MAX = 200  # a page's counters cost one BatchGetItem per 100 lane rows


@dataclass(frozen=True)
class BankPage:
    """One page of the live banks, by name, and the cursor of the next (``None``: the last page)."""

    banks: list[Bank]
    next_cursor: str | None


def list_banks(org_id: str, *, limit: int = BANKS_PAGE_DEFAULT, cursor: str | None = None,
               allowed: Collection[str] | None = None) -> BankPage:
    """A page of the org's live banks by name: up to ``limit`` (1..``BANKS_PAGE_MAX``) after the
    ``cursor`` of the previous page; ``allowed``: only these bank names (a token's allow-list),
    pages filled from them alone. Raises 400 ``validation_error`` for a limit out of range or a
    cursor of another listing or org."""
    rows, next_cursor = live_rows_page(org_id, "banks", limit=limit, cursor=cursor, page_max=BANKS_PAGE_MAX,
                                       allowed=allowed)
    return BankPage(banks=banks_of(org_id, rows), next_cursor=next_cursor)


def live_rows_page(org_id: str, listing: str, *, limit: int, cursor: str | None, page_max: int,
                   allowed: Collection[str] | None = None) -> tuple[list[BankRow], str | None]:
    """A page of the org's live bank rows by name for ``listing`` (a cursor names its listing):
    up to ``limit`` (1..``page_max``) after ``cursor``, only ``allowed`` names when given, and the
    next page's cursor (``None`` on the last). Raises 400 ``validation_error`` for a limit out of
    range or a cursor of another listing or org."""
    if not 1 <= limit <= page_max:
        raise BadRequest(f"limit must be between 1 and {page_max}.", details={"field": "limit"})
    start = decode_cursor(cursor, listing, org_id, {"after": str})
    after = str(start["after"]) if start is not None else None
    if after is not None and not NAME_RE.fullmatch(after):
        raise BadRequest("Invalid cursor: it is malformed or was issued by another listing.",
                         details={"field": "cursor"})
    rows: list[BankRow] = []
    more = False
    for row in store.iter_live_bank_rows(org_id, after, page_size=limit + 1 if allowed is None else None):
        if allowed is not None and row.name not in allowed:
            continue
        if len(rows) == limit:
            more = True
            break
        rows.append(row)
    return rows, (encode_cursor(listing, org_id, {"after": rows[-1].name}) if more else None)


def list_trash(org_id: str) -> list[TrashEntry]:
    """Every trash entry of the org, oldest first."""
    out = [TrashEntry(r.bank_name, r.trashed_to or "", int(r.trashed_at or 0)) for r in store.list_trash_rows(org_id)]
    return sorted(out, key=lambda e: (e.trashed_at, e.trashed_to))


def trash_bank(org_id: str, name: str, *, actor: str) -> str:
    """Move bank ``name`` (rules, memories, history) to the trash; returns its ``trashed_to`` id.

    Rules are copied to the trash before the bank row moves and deleted after, so a failure
    half-way loses nothing. Raises 404 ``bank_not_found``. Audited as ``bank.trash``.
    """
    row = require_bank(org_id, name)
    trashed_to = f"{name}.{uuid.uuid4().hex[:12]}"
    src, dst = store.rules_prefix(org_id, name), store.trash_rules_prefix(org_id, trashed_to)
    copied = []
    for obj in blobs.list_objects(src):
        target = dst + obj["Key"][len(src):]
        blobs.copy(obj["Key"], target)
        copied.append((obj["Key"], target))

    def attempt(btx: BankTx) -> None:
        live = btx.row(name)
        if live is None or live.incarnation != row.incarnation:
            raise NotFound(f"Bank '{name}' not found.", code="bank_not_found")
        btx.trash(live, trashed_to)
        audit.add_to(btx.tx, org_id, "bank.trash", actor, name, {"trashed_to": trashed_to})

    try:
        store.write(org_id, attempt)
    except Exception:
        for _, target in copied:
            blobs.delete(target)
        raise
    for key, _ in copied:
        blobs.delete(key)
    return trashed_to


def restore_bank(org_id: str, name: str, trashed_to: str, *, actor: str) -> Bank:
    """Bring a trashed bank back whole under ``name``, history included; returns the bank.

    Its rules move back after the commit, then are recounted (``rules.refresh_rule_count``), so
    no container keeps the empty rule set it may have read in between.
    Raises 404 ``not_found`` for an unknown trash id (or one of another bank name) and
    409 ``bank_exists`` when a live bank has that name. Audited as ``bank.restore``.
    """
    check_name(name)

    def attempt(btx: BankTx) -> BankRow:
        trash = store.get_trash_row(org_id, trashed_to)
        if trash is None:
            raise NotFound(f"Trash entry '{trashed_to}' not found.")
        if trash.bank_name != name:
            raise NotFound(f"Trash entry '{trashed_to}' does not hold bank '{name}'.")
        if btx.row(name) is not None:
            raise Conflict(f"A live bank named '{name}' exists; trash or rename it first.", code="bank_exists")
        live = btx.restore(trash, name)
        audit.add_to(btx.tx, org_id, "bank.restore", actor, name, {"trashed_to": trashed_to})
        return live

    live = store.write(org_id, attempt)
    if blobs.move_prefix(store.trash_rules_prefix(org_id, trashed_to), store.rules_prefix(org_id, name)):
        from .rules import refresh_rule_count  # rules import this module, not the reverse
        # a reader of the restored row before the rules were back cached none: the recount moves rules_version
        refresh_rule_count(org_id, name)
    return bank_of(org_id, live)


# --- records --------------------------------------------------------------------------------

def require_item(org_id: str, bank: str, memory_id: str, btx: BankTx | None = None) -> tuple[BankRow, MemoryRow]:
    """``(bank row, item)`` of a memory, its record not decoded (the row read by ``btx`` when
    given: ``require_bank``); 404 ``bank_not_found`` / ``memory_not_found``."""
    row = require_bank(org_id, bank, btx)
    item = get_item(row.incarnation, memory_id) if FINGERPRINT_RE.fullmatch(memory_id or "") else None
    if item is None:
        raise NotFound(f"Memory '{memory_id}' not found in bank '{bank}'.", code="memory_not_found")
    return row, item


def require_memory(org_id: str, bank: str, memory_id: str) -> tuple[BankRow, MemoryRow, Memory]:
    """``(bank row, item, record)``; 404 ``bank_not_found`` / ``memory_not_found``, 409
    ``damaged`` when the stored record cannot be read."""
    row, item = require_item(org_id, bank, memory_id)
    return row, item, record_of(item)


def get_memory(org_id: str, bank: str, memory_id: str) -> Memory:
    """One memory by id, tombstoned and superseded ones included."""
    return require_memory(org_id, bank, memory_id)[2]


def _merge_tags(existing: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    merged = list(existing)
    dropped = []
    for t in new:
        if t in merged:
            continue
        if len(merged) < MAX_HANDLES:
            merged.append(t)
        else:
            dropped.append(t)
    return merged, dropped


def _free_id(inc: str, text: str) -> str:
    """An id for ``text`` when its fingerprint id is held by a memory whose text moved away:
    ``fingerprint_variant(text, k)`` for the first free k."""
    for k in range(1, 1000):
        cand = fingerprint_variant(text, k)
        if get_item(inc, cand) is None:
            return cand
    raise Conflict("Could not allocate a memory id.")


@dataclass
class _Save:
    """A save's input, checked: the text, its handles and fingerprint, and the request's flags
    (``revive``: bring back the retired memory of this text; ``supersedes``: ids to retire)."""

    text: str
    entities: list[str]
    tags: list[str]
    fp: str
    pinned: bool
    confidence: Confidence
    source: Source
    revive: bool = False
    supersedes: list[str] = field(default_factory=list)
    observed_at: int | None = None  # when the statement was made (ms), when its writer said so


@dataclass
class _Target:
    """Where a save lands: the memory id, its stored record (``None`` when new), the condition to
    replace a damaged one, and whether the text's pointer already exists."""

    id: str
    existing: Memory | None
    guard: Any
    has_pointer: bool


def _find_target(inc: str, known: bool, save: _Save) -> _Target:
    """The memory ``save`` lands on in incarnation ``inc`` (``known``: the bank exists): the one
    the text's pointer names, else its fingerprint id, else (that id held by a memory whose text
    moved away) a free id. Raises ``Retry`` for a pointer whose record is not visible yet."""
    if not known:
        return _Target(save.fp, None, None, False)
    pointer = store.get_pointer(inc, save.fp)
    target = pointer.memory_id if pointer is not None else save.fp
    item = get_item(inc, target)
    existing, guard = current(item) if item is not None else (None, None)
    if pointer is None and existing is not None and existing.purged_at is None:
        return _Target(_free_id(inc, save.text), None, None, False)
    if pointer is not None and existing is None:
        raise Retry()  # a pointer without its record: a half-seen state, read again
    return _Target(target, existing, guard, pointer is not None)


def retired_conflict(rec: Memory) -> Conflict:
    """409 ``memory_retired`` for a save of the retired ``rec``'s text, with ``details``
    ``{memory_id, superseded_by, invalid_at}`` (``superseded_by`` ``None`` when forgotten)."""
    return Conflict(f"Memory '{rec.id}' has this text and is retired "
                    f"({'superseded by ' + rec.superseded_by if rec.superseded_by else 'forgotten'}); "
                    "nothing was saved. Save with revive: true to bring it back.", code="memory_retired",
                    details={"memory_id": rec.id, "superseded_by": rec.superseded_by, "invalid_at": rec.invalid_at})


def _saved_record(save: _Save, t: _Target) -> tuple[Memory, str, list[str]]:
    """``(record, op, tags dropped)``: a new record (new, purged or damaged target), else the
    existing one reinforced, or revived when retired and ``save.revive`` (409 ``memory_retired``
    without it)."""
    now = now_ms()
    existing = t.existing
    if existing is None or existing.purged_at is not None or t.guard is not None:
        rec = Memory(id=t.id, text=save.text, entities=save.entities, tags=save.tags, confidence=save.confidence,
                     corroboration=0, pinned=save.pinned, source=save.source, created_at=now, updated_at=now,
                     observed_at=save.observed_at, revision=0 if existing is None else existing.revision + 1)
        return rec, "create", []
    merged, dropped = _merge_tags(existing.tags, save.tags)
    update: dict[str, Any] = {
        "corroboration": existing.corroboration + 1, "revision": existing.revision + 1,
        "pinned": existing.pinned or save.pinned,
        "confidence": "stated" if save.confidence == "stated" else existing.confidence,
        "tags": merged, "updated_at": now,
        # said again: now, or when its writer says, never earlier than it was last said
        "observed_at": None if save.observed_at is None else max(save.observed_at, stated_at(existing))}
    op = "reinforce"
    if not existing.live:
        if not save.revive:
            raise retired_conflict(existing)
        update.update(invalid_at=None, superseded_by=None)
        op = "revive"
    return existing.model_copy(update=update), op, dropped


_UNCHECKED = conflicts.Detection(checked=False)  # a save told not to look (never changed)


def save_memory(org_id: str, bank: str, req: SaveRequest, *, actor: str, idem: IdemKey | None = None,
                confidence: Confidence = "stated", source: Source | None = None, audited: bool = True,
                detect: bool = True) -> SaveResult:
    """Save one memory (the bank worker's ``memory::save``). First it looks up the live memories
    the text duplicates or contradicts (``banks.conflicts``; not with ``detect=False``; in a bank
    whose index is cold here a new memory is checked later, ``_defer_check``): the result's
    ``related``; a new memory's conflicts are linked, or retired (``on_conflict``).
    New text: ``created`` with revision 0, corroboration 0 (a damaged stored record of that text
    is replaced the same way, keeping its id and history). Text whose fingerprint matches a live
    memory: not ``created``, corroboration +1, revision +1, text and entities kept, pinned kept
    or set, confidence ``stated``, tags merged (the ones beyond 8 in ``tags_dropped``). Text
    matching a retired (forgotten or superseded) memory writes nothing and raises 409
    ``memory_retired`` (``details: {memory_id, superseded_by, invalid_at}``) unless
    ``req.revive``: then it comes back (``created``, op ``revive``). A purged memory's text saves
    as new. ``req.supersedes`` (up to 10 ids) retires each named memory in favour of the saved one
    in the same transaction (``superseded_by`` set, op ``supersede``, its revision's ``why``
    naming the save), or nothing is written. The bank is created on first use. With ``idem``, a
    retry returns the first result and changes nothing (``_replayed``). Audited as
    ``memory.save`` (target ``<bank>/<id>``, ``details.op``) and one ``memory.supersede`` per
    retired memory, in the save's transaction, unless ``audited`` is False (a bulk operation
    writes one event of its own).
    Raises 400 ``invalid_name`` / ``validation_error`` before anything is read; for
    ``supersedes``: 400 ``validation_error`` (the saved memory itself), 404 ``memory_not_found``,
    409 ``memory_retired`` (already retired), 409 ``conflict`` (pinned).
    """
    check_name(bank)
    text = check_text(req.text)
    save = _Save(text=text, entities=normalize_handles(req.entities, "entities"),
                 tags=normalize_handles(req.tags, "tags"), fp=fingerprint(text), pinned=bool(req.pinned),
                 confidence=confidence, source=source or Source(session_id=req.session_id),
                 revive=bool(req.revive), supersedes=list(dict.fromkeys(req.supersedes or [])),
                 observed_at=check_observed_at(req.observed_at, now_ms()))
    found = conflicts.detect(org_id, bank, text, save.entities, exclude=save.fp) if detect else _UNCHECKED

    def attempt(btx: BankTx) -> SaveResult:
        replay = idempotency.replay(idem)
        if replay is not None:
            return _replayed(btx, bank, replay)
        row, fresh = btx.row_or_new(bank)
        target = _find_target(fresh.incarnation, row is not None, save)
        rec, op, dropped = _saved_record(save, target)
        retiring = _superseded_writes(bank, row, rec, save.supersedes)
        rec, links, actions = _conflict_writes(row, rec, op, found, {w.record.id for w in retiring})
        changes = btx.stage(bank, row, [Write(rec, target.existing, op, save.fp, target.guard), *retiring, *links],
                            actor, fresh=fresh)
        if not target.has_pointer:
            btx.put_pointer(fresh.incarnation, save.fp, rec.id)
        else:  # found through the pointer: it must still name this memory when the save commits
            btx.check_pointer(fresh.incarnation, save.fp, rec.id)
        result = SaveResult(created=op != "reinforce", memory=rec, tags_dropped=dropped, bank_created=row is None,
                            related=conflicts.answer(found, actions), related_checked=found.checked)
        idempotency.add_to(btx.tx, idem, result, revision=(fresh.incarnation, changes[0][0]))
        if audited:
            audit.add_to(btx.tx, org_id, "memory.save", actor, f"{bank}/{rec.id}", {"bank": bank, "op": op})
            for w in [*retiring, *(w for w in links if w.op == "supersede")]:
                audit.add_to(btx.tx, org_id, "memory.supersede", actor, f"{bank}/{w.record.id}",
                             {"bank": bank, "op": "supersede"})
        return result

    return _defer_check(org_id, bank, found, store.write(org_id, attempt), actor)


def _defer_check(org_id: str, bank: str, found: conflicts.Detection, result: SaveResult, actor: str) -> SaveResult:
    """``result``, the related check of the memory it created queued first when ``found`` is a
    look-up skipped because the bank's index is cold here (``conflicts.defer``). The save is
    committed, so a failure to queue is counted (metric ``related``: ``RelatedDeferFailures``),
    never raised."""
    rec = result.memory
    if not (found.cold and result.created and rec is not None):
        return result
    try:  # a save into another incarnation than the one read (trashed meanwhile): its check finds nothing
        sent = conflicts.defer(conflicts.RelatedJob(org_id=org_id, bank=bank, inc=found.inc, memory_id=rec.id,
                                                    fp=fingerprint(rec.text), revision=rec.revision,
                                                    saved_at=rec.updated_at, actor=actor))
        metrics.emit("related", {"RelatedDeferred": int(sent)})
    except Exception as exc:  # noqa: BLE001 - the save is committed: never fail it for a deferred check
        metrics.emit("related", {"RelatedDeferFailures": 1}, {"reason": type(exc).__name__})
    return result


def check_deferred(job: conflicts.RelatedJob) -> dict[str, conflicts.Action]:
    """Run a deferred related check (``conflicts.defer``) with the bank's index loaded as a recall
    loads it: against the memories created by the time of the save, store what that save would
    have (links, or ``on_conflict: supersede``; duplicates are only reported, so nothing). Nothing
    when the bank was trashed, the memory retired, purged or given another text since, or when the
    links are already there (a redelivered job). Returns ``{partner id: action}`` written."""
    row = get_bank_row(job.org_id, job.bank)
    item = get_item(job.inc, job.memory_id) if row is not None and row.incarnation == job.inc else None
    rec = record_of(item) if item is not None else None
    if rec is None or not rec.live or fingerprint(rec.text) != job.fp:
        return {}
    found = conflicts.detect(job.org_id, job.bank, rec.text, rec.entities, exclude=rec.id, load=True,
                             before=job.saved_at)
    found = conflicts.Detection([(m, v) for m, v in found.found if v.relation == "conflict"])
    if not found.found:
        return {}
    done: dict[str, conflicts.Action] = {}

    def decide(row: BankRow, item: MemoryRow, rec: Memory) -> Decision | None:
        if row.incarnation != job.inc or not rec.live or fingerprint(rec.text) != job.fp:
            return None
        linked, writes, actions = conflicts.link_writes(row, rec, found, settings_of(row).on_conflict,
                                                        when="after its save")
        if linked.conflicts_with != rec.conflicts_with:
            now = ", ".join(linked.conflicts_with or []) or "none"
            writes.insert(0, Write(linked.model_copy(update={"revision": rec.revision + 1}), rec, "link", item.fp,
                                   why=f"conflict links detected after its save: {now}"))
        if not writes:
            return None
        done.clear()  # the actions of the attempt that commits, not of one that lost a race
        done.update(actions)
        retired = [w.record.id for w in writes if w.op == "supersede"]
        unwritten = writes[0].record.id != rec.id

        def audited(btx: BankTx) -> None:
            if unwritten:  # the partners' writes rest on this memory as read (live, this text)
                btx.check_unchanged(item)
            for mid in retired:
                audit.add_to(btx.tx, job.org_id, "memory.supersede", job.actor, f"{job.bank}/{mid}",
                             {"bank": job.bank, "op": "supersede"})
        return writes, audited

    try:
        _change(job.org_id, job.bank, job.memory_id, job.actor, decide, event=None)
    except NotFound:
        return {}  # trashed or purged meanwhile
    return done


def _conflict_writes(row: BankRow | None, rec: Memory, op: str, found: conflicts.Detection,
                     retiring: set[str]) -> tuple[Memory, list[Write], dict[str, conflicts.Action]]:
    """``(rec with its conflict links, the partners' writes, {id: action})`` for a save's
    detected conflicts (``banks.conflicts.link_writes``, the bank's ``on_conflict``): only a
    memory this save creates links; the memories ``supersedes`` retires are left to it."""
    if row is None or op not in ("create", "revive") or not found.found:
        return rec, [], {}
    kept = conflicts.Detection([(m, v) for m, v in found.found if m.id not in retiring], found.checked)
    return conflicts.link_writes(row, rec, kept, settings_of(row).on_conflict)


def _superseded_writes(bank: str, row: BankRow | None, winner: Memory, ids: list[str]) -> list[Write]:
    """The writes retiring each memory of ``ids`` in favour of ``winner`` (being saved), each
    conditioned on the revision read. Raises 400 ``validation_error`` (``winner`` itself), 404
    ``memory_not_found``, 409 ``memory_retired`` / ``conflict`` (pinned)."""
    out = []
    now = now_ms()
    for mid in ids:
        if mid == winner.id:
            raise BadRequest("A memory cannot supersede itself.", details={"field": "supersedes", "memory_id": mid})
        item = get_item(row.incarnation, mid) if row is not None and FINGERPRINT_RE.fullmatch(mid) else None
        if item is None:
            raise NotFound(f"Memory '{mid}' not found in bank '{bank}'.", code="memory_not_found",
                           details={"field": "supersedes", "memory_id": mid})
        old = record_of(item)
        if not old.live:
            raise Conflict(f"Memory '{mid}' is already retired.", code="memory_retired",
                           details={"memory_id": mid, "superseded_by": old.superseded_by,
                                    "invalid_at": old.invalid_at})
        if old.pinned:
            raise Conflict(f"Memory '{mid}' is pinned and cannot be superseded; unpin it first.",
                           details={"memory_id": mid})
        new = old.model_copy(update={"invalid_at": now, "superseded_by": winner.id, "conflicts_with": None,
                                     "revision": old.revision + 1, "updated_at": now})
        out.append(Write(new, old, "supersede", item.fp, why=f"superseded by {winner.id} on its save"))
    if row is not None:  # each retired memory leaves its partners' conflict links
        written = {winner.id, *ids}
        for w in list(out):
            for u in conflicts.unlink_writes(row, w.prev or w.record, frozenset(written)):
                written.add(u.record.id)
                out.append(u)
    return out


def _replayed(btx: BankTx, bank: str, replay: idempotency.Replay) -> SaveResult:
    """A retried save's first answer, if it is still true: 404 ``bank_not_found`` once the bank it
    was written in is trashed (or replaced by a new bank of that name), 404 ``memory_not_found``
    once its memory is purged."""
    row = btx.row(bank)
    if row is None or (replay.bank_key is not None and row.incarnation != replay.bank_key):
        raise NotFound(f"Bank '{bank}' not found.", code="bank_not_found")
    mem = replay.result.memory
    if mem is None or mem.purged_at is not None or get_item(row.incarnation, mem.id) is None:
        raise NotFound(f"The memory this request saved is gone from bank '{bank}' (purged).",
                       code="memory_not_found")
    return replay.result


# what a decision stages besides its writes (pointer moves, conditions, audit)
Extra = Callable[[BankTx], None]
Decision = tuple[list[Write], Extra | None]


@dataclass(frozen=True)
class Audited:
    """The audit event of a change: ``action`` (``memory.update``...) and ``details`` beside the
    bank and op; ``None`` in its place: a bulk operation that writes one event of its own."""

    action: str
    details: dict[str, Any] = field(default_factory=dict)


def _change(org_id: str, bank: str, memory_id: str, actor: str,
            decide: Callable[[BankRow, MemoryRow, Memory], Decision | None], *, event: Audited | None,
            repair: str | None = None) -> Memory:
    """Read-decide-write for one existing memory. ``decide`` returns ``None`` (nothing to write;
    the current record is returned) or the writes plus an extra staging step (``writes[0]``
    replaces the memory). A damaged stored record is 409 ``damaged``, unless ``repair`` names the
    op that may replace it: ``decide`` then gets a salvaged record (``core.store.current``) and,
    when it would write nothing, the salvaged record is written as revision +1 under that op.
    A write is audited as ``event`` (target ``<bank>/<id written>``) in its transaction."""

    def attempt(btx: BankTx) -> Memory:
        # read through btx: a change found done already (a retry) is acknowledged with a version move
        row, item = require_item(org_id, bank, memory_id, btx)
        rec, guard = current(item) if repair else (record_of(item), None)
        decision = decide(row, item, rec)
        if decision is None and guard is None:
            return rec
        if decision is None:
            fixed = rec.model_copy(update={"revision": rec.revision + 1, "updated_at": max(now_ms(), rec.updated_at)})
            decision = [Write(fixed, rec, repair or "", item.fp)], None
        writes, extra = decision
        writes[0].guard = guard
        btx.stage(bank, row, writes, actor)
        if extra is not None:
            extra(btx)
        if event is not None:
            audit.add_to(btx.tx, org_id, event.action, actor, f"{bank}/{writes[0].record.id}",
                         {"bank": bank, "op": writes[0].op, **event.details})
        return writes[0].record

    return store.write(org_id, attempt)


def _require_live(rec: Memory) -> None:
    if not rec.live:
        raise Conflict(f"Memory '{rec.id}' is retired (tombstoned or superseded); "
                       "save its text with revive: true to bring it back.", code="memory_retired",
                       details={"memory_id": rec.id, "superseded_by": rec.superseded_by, "invalid_at": rec.invalid_at})


def _move_pointer(row: BankRow, item: MemoryRow, rec: Memory, new_fp: str) -> Extra:
    """The staging step that moves memory ``rec``'s text pointer from ``item.fp`` to ``new_fp``
    (taking over a retired memory's pointer). Raises 409 ``duplicate_text`` when the new text is
    another live memory's."""
    inc = row.incarnation
    ptr = store.get_pointer(inc, new_fp)
    other = get_item(inc, ptr.memory_id) if ptr is not None else None
    if ptr is not None and ptr.memory_id != rec.id and other is not None and record_of(other).live:
        raise Conflict("Another live memory already has this text.", code="duplicate_text",
                       details={"memory_id": ptr.memory_id})
    old_ptr = store.get_pointer(inc, item.fp) if item.fp else None
    old_fp = item.fp if old_ptr is not None and old_ptr.memory_id == rec.id else None

    def extra(btx: BankTx) -> None:
        if old_fp:
            btx.drop_pointer(inc, old_fp, rec.id)
        btx.put_pointer(inc, new_fp, rec.id, taking_over=ptr.memory_id if ptr is not None else None)
        if other is not None and ptr is not None and ptr.memory_id != rec.id:
            btx.check_unchanged(other)  # still retired: a save resurrecting it meanwhile wins

    return extra


@dataclass(frozen=True)
class Updated:
    """An update's memory and, for a new text, the related memories found (``SaveResult``'s
    ``related`` and ``related_checked``)."""

    memory: Memory
    related: list[RelatedMemory] = field(default_factory=list)
    related_checked: bool = True


def update_memory_related(org_id: str, bank: str, memory_id: str, req: UpdateRequest, *, actor: str) -> Updated:
    """``update_memory``, and for a text change the bank's live memories the new text duplicates
    or contradicts (``banks.conflicts.detect``, looked up before the write; reported, not linked)."""
    found = conflicts.Detection()
    if req.text is not None:
        handles = normalize_handles(req.entities, "entities") if req.entities is not None \
            else get_memory(org_id, bank, memory_id).entities
        found = conflicts.detect(org_id, bank, check_text(req.text), handles, exclude=memory_id)
    rec = update_memory(org_id, bank, memory_id, req, actor=actor)
    return Updated(rec, conflicts.answer(found, {}), found.checked)


def update_memory(org_id: str, bank: str, memory_id: str, req: UpdateRequest, *, actor: str) -> Memory:
    """Revise text, entities, tags or pinned in place (``memory::update``): same id, revision +1,
    the prior revision kept in history; fields not given stay. A text change moves the
    fingerprint pointer in the same transaction.

    Raises 400 ``validation_error`` (nothing to change, bad field), 404, 409 ``memory_retired``,
    409 ``duplicate_text`` when the new text is another live memory's. Audited as
    ``memory.update`` (``details.fields``: the fields given).
    """
    if req.text is None and req.entities is None and req.tags is None and req.pinned is None:
        raise BadRequest("Nothing to update: give text, entities, tags or pinned.", details={"field": "body"})
    text = check_text(req.text) if req.text is not None else None
    changes: dict[str, Any] = {}
    if req.entities is not None:
        changes["entities"] = normalize_handles(req.entities, "entities")
    if req.tags is not None:
        changes["tags"] = normalize_handles(req.tags, "tags")
    if req.pinned is not None:
        changes["pinned"] = req.pinned

    def decide(row: BankRow, item: MemoryRow, rec: Memory) -> Decision:
        _require_live(rec)
        update: dict[str, Any] = {}
        extra = None
        new_fp = item.fp
        if text is not None and text != rec.text:
            update["text"] = text
            new_fp = fingerprint(text)
            if new_fp != item.fp:
                extra = _move_pointer(row, item, rec, new_fp)
        update.update(changes)
        update.update(revision=rec.revision + 1, updated_at=now_ms())
        return [Write(rec.model_copy(update=update), rec, "update", new_fp)], extra

    fields = sorted([*changes, *(["text"] if text is not None else [])])
    return _change(org_id, bank, memory_id, actor, decide, event=Audited("memory.update", {"fields": fields}))


def pin_memory(org_id: str, bank: str, memory_id: str, pinned: bool, *, actor: str) -> Memory:
    """Pin or unpin (``memory::pin``). 409 ``memory_retired`` on a retired memory. Audited as
    ``memory.pin`` (``details.pinned``)."""

    def decide(row: BankRow, item: MemoryRow, rec: Memory) -> Decision:
        _require_live(rec)
        new = rec.model_copy(update={"pinned": pinned, "revision": rec.revision + 1, "updated_at": now_ms()})
        return [Write(new, rec, "pin", item.fp)], None

    return _change(org_id, bank, memory_id, actor, decide, event=Audited("memory.pin", {"pinned": pinned}))


def delete_memory(org_id: str, bank: str, memory_id: str, *, actor: str, audited: bool = True) -> Memory:
    """Tombstone (``memory::delete``): sets ``invalid_at``; a retired memory is returned unchanged.
    A damaged stored record is replaced by a tombstone of what can be salvaged of it. Audited as
    ``memory.delete`` unless ``audited`` is False (a bulk operation's own event)."""

    def decide(row: BankRow, item: MemoryRow, rec: Memory) -> Decision | None:
        if not rec.live:
            return None
        now = now_ms()
        new = rec.model_copy(update={"invalid_at": now, "conflicts_with": None, "revision": rec.revision + 1,
                                     "updated_at": now})
        return [Write(new, rec, "delete", item.fp), *conflicts.unlink_writes(row, rec)], None

    return _change(org_id, bank, memory_id, actor, decide, repair="delete",
                   event=Audited("memory.delete") if audited else None)


def supersede_memory(org_id: str, bank: str, memory_id: str, superseded_by: str, *, actor: str) -> Memory:
    """Retire ``memory_id`` in favour of ``superseded_by`` (``memory::supersede``).

    Raises 400 ``validation_error`` (a memory superseding itself), 404 ``memory_not_found`` (no
    such winner), 409 ``memory_retired`` (target or winner retired), 409 ``conflict`` (a pinned
    target). Audited as ``memory.supersede`` (the winner is in the record, not in the event: a
    purge of the winner re-points the record, an event would keep its id).
    """
    if superseded_by == memory_id:
        raise BadRequest("A memory cannot supersede itself.", details={"field": "superseded_by"})

    def decide(row: BankRow, item: MemoryRow, rec: Memory) -> Decision:
        _require_live(rec)
        if rec.pinned:
            raise Conflict("A pinned memory cannot be superseded; unpin it first.")
        winner = get_item(row.incarnation, superseded_by) if FINGERPRINT_RE.fullmatch(superseded_by) else None
        if winner is None:
            raise NotFound(f"Memory '{superseded_by}' not found in bank '{bank}'.", code="memory_not_found")
        won = record_of(winner)
        if not won.live:
            raise Conflict(f"Memory '{superseded_by}' is retired and cannot supersede another.", code="memory_retired")
        now = now_ms()
        new = rec.model_copy(update={"invalid_at": now, "superseded_by": superseded_by, "conflicts_with": None,
                                     "revision": rec.revision + 1, "updated_at": now})

        def extra(btx: BankTx) -> None:
            # the winner must still be live at commit: condition on its revision
            btx.check_revision(row.incarnation, superseded_by, won.revision)

        unlinks = conflicts.unlink_writes(row, rec)  # the winner's too: its write conditions on its revision
        return [Write(new, rec, "supersede", item.fp), *unlinks], \
            None if any(u.record.id == superseded_by for u in unlinks) else extra

    return _change(org_id, bank, memory_id, actor, decide, event=Audited("memory.supersede"))


REFS_IN_PURGE = 40  # memories superseded by the purged one, re-pointed in the purge's own transaction


def _tombstone_id(org_id: str, inc: str, memory_id: str, k: int, *, create: bool = True) -> str | None:
    """The ``k``-th tombstone id of ``memory_id`` in incarnation ``inc``: ``fp`` + 16 hex digits
    of a keyed digest (``digests.keyed``), so neither it nor the audit event naming it can be
    checked against a guessed text; ``None`` with ``create=False`` while no service secret exists."""
    got = (keyed if create else keyed_if_any)(org_id, "purged-memory", inc, memory_id, str(k))
    return f"fp{got[:16]}" if got is not None else None


def _free_tombstone_id(org_id: str, inc: str, memory_id: str) -> str:
    """The first tombstone id of ``memory_id`` no item holds (a text saved again after a purge and
    purged again gets the next)."""
    for k in range(1000):
        cand = _tombstone_id(org_id, inc, memory_id, k)
        if cand is not None and get_item(inc, cand) is None:
            return cand
    raise Conflict("Could not allocate a tombstone id.")


def _last_tombstone(org_id: str, inc: str, memory_id: str) -> Memory | None:
    """The tombstone of the latest purge of ``memory_id`` (for a purge run again), or ``None``."""
    last = None
    for k in range(1000):
        cand = _tombstone_id(org_id, inc, memory_id, k, create=False)
        item = get_item(inc, cand) if cand is not None else None
        rec = store.decoded(item) if item is not None else None
        if not isinstance(rec, Memory) or rec.purged_at is None:
            return last
        last = rec
    return last


def _tombstone(rec: Memory, tomb_id: str, now: int) -> Memory:
    """What a purge leaves of ``rec``: no text, entities or tags, under the id ``tomb_id``;
    its times, source, confidence and successor stay."""
    return Memory(id=tomb_id, text="", confidence=rec.confidence, corroboration=rec.corroboration,
                  source=rec.source, created_at=rec.created_at, updated_at=max(now, rec.updated_at),
                  invalid_at=rec.invalid_at or now, superseded_by=rec.superseded_by, purged_at=now)


def _after_purge(org_id: str, bank: str, inc: str, old_id: str, tomb: Memory) -> None:
    """What a purge of ``old_id`` (now the tombstone ``tomb``) does after its transaction, each
    step idempotent, so a run cut short is finished by the next: delete the bank's exports and
    index snapshots and the old id's revisions, re-point the memories it superseded (and their
    revisions), re-target its audit events, drop the extraction provenance naming it."""
    from ..extraction import store as extraction_store  # extraction imports the banks area
    from ..search.index import snapshot_prefix  # the index imports the banks area, not the reverse
    blobs.delete_prefix(store.exports_prefix(org_id, bank))
    blobs.delete_prefix(snapshot_prefix(org_id, bank))
    store.delete_memory_revisions(inc, old_id)
    for item, ref in store.referrers(inc, old_id):  # beyond what the transaction re-pointed
        store.relink(item, ref, tomb.id)
    for item, _ref in store.referrers(inc, tomb.id):
        store.relink_revisions(inc, item.sk, old_id, tomb.id)
    audit.retarget(org_id, f"{bank}/{old_id}", f"{bank}/{tomb.id}")
    if tomb.source.session_id:
        extraction_store.drop_provenance(org_id, tomb.source.session_id, bank, old_id)


def purge_memory(org_id: str, bank: str, memory_id: str, *, actor: str, audited: bool = True) -> Memory:
    """Erase a memory (privacy requests, leaked secrets): its id is the fingerprint of its text, so
    the id goes too. The record moves to a content-free tombstone under a keyed id
    (``_tombstone_id``) in one transaction that also drops its text pointer, re-points the memories
    it superseded and writes the audit event ``memory.purge`` (target ``<bank>/<tombstone id>``;
    not with ``audited=False``, for a bulk operation that writes one event itself). Then
    ``_after_purge`` deletes its revisions, exports and index snapshots, and re-targets its audit
    events and provenance; every recall index drops the bank's index and rebuilds it from the
    records on its next read. Afterwards the old id answers 404 and saving the text again makes a
    new memory (revision 0). A damaged stored record is purged too. Returns the tombstone.

    Raises 404 ``bank_not_found`` / ``memory_not_found``; a purge of an id already purged
    finishes what an interrupted run left and moves the bank's version (as its first run would
    have before answering), then answers 404 ``memory_not_found``.
    """
    row = require_bank(org_id, bank)
    if not FINGERPRINT_RE.fullmatch(memory_id or "") or get_item(row.incarnation, memory_id) is None:
        tomb = _last_tombstone(org_id, row.incarnation, memory_id) if FINGERPRINT_RE.fullmatch(memory_id or "") \
            else None
        if tomb is not None:
            _after_purge(org_id, bank, row.incarnation, memory_id, tomb)
            # this 404 acknowledges the purge, whose first run may have stopped before its version move
            store.bump_versions(org_id, [row.incarnation])
        raise NotFound(f"Memory '{memory_id}' not found in bank '{bank}'.", code="memory_not_found")

    def decide(row: BankRow, item: MemoryRow, rec: Memory) -> Decision:
        tomb = _tombstone(rec, _free_tombstone_id(org_id, row.incarnation, rec.id), now_ms())
        # the pointer may belong to another memory that took this retired memory's text over
        ptr = store.get_pointer(row.incarnation, item.fp) if item.fp else None
        owned = ptr is not None and ptr.memory_id == rec.id
        refs = store.referrers(row.incarnation, rec.id)[:REFS_IN_PURGE]

        def extra(btx: BankTx) -> None:
            if owned:
                btx.drop_pointer(row.incarnation, item.fp, rec.id)
            for ref_item, ref in refs:
                btx.relink(ref_item, ref, tomb.id)

        return [Write(tomb, rec, "purge", None, moved_from=rec.id)], extra

    tomb = _change(org_id, bank, memory_id, actor, decide, repair="purge",
                   event=Audited("memory.purge") if audited else None)
    _after_purge(org_id, bank, row.incarnation, memory_id, tomb)
    return tomb


# --- reads ----------------------------------------------------------------------------------

def list_memories(org_id: str, bank: str, *, limit: int | None = None, cursor: str | None = None,
                  tag: str | None = None, include_superseded: bool = False, text: str | None = None) -> MemoryPage:
    """A page of memories newest first (``updated_at`` desc, ``id`` asc); ``text``: only those whose
    text contains it, ignoring case. ``total`` counts every match of the filter, not the page, from
    the bank's counters (its lanes' live and record counts; with ``tag``, its tag counters); with
    ``text`` it is ``None``: counting would read every record. A
    page holds up to ``limit`` stored records; one that cannot be read is left out of
    ``memories`` and listed in ``damaged`` as ``{id, reason}``.
    ``limit`` defaults to ``Settings.memories_page_default``.
    Raises 400 ``validation_error`` (``limit`` outside 1..``Settings.memories_page_max``, a bad
    cursor), 404.
    """
    settings = get_settings()
    limit = settings.memories_page_default if limit is None else limit
    if not 1 <= limit <= settings.memories_page_max:
        raise BadRequest(f"limit must be between 1 and {settings.memories_page_max}.", details={"field": "limit"})
    row = require_bank(org_id, bank)
    tag = tag.strip().lower() if tag else None
    owner = f"{org_id}/{bank}"
    start = decode_cursor(cursor, "memories", owner, {"sk": str, "ord": str})
    live_only = not include_superseded
    needle = text.casefold() if text else None
    records, last = store.query_memories_page(row.incarnation, start=start, limit=limit,
                                              max_page=settings.memories_page_max, live_only=live_only, tag=tag,
                                              text=needle)
    total: int | None = None  # with ``text``, counting would read every record: not counted
    if needle is None and tag and row.tag_counts:
        total = store.tag_total(row.incarnation, store.lane_count(row), tag, live_only=live_only)
    elif needle is None and tag:  # a bank made before tag counters were kept
        total = store.count_memories(row.incarnation, live_only=live_only, tag=tag)
    elif needle is None:
        head = store.heads_of(org_id, [row], strict=False)[0]
        total = head.records if include_superseded else head.memories
    return MemoryPage(memories=[r for r in records if isinstance(r, Memory)], total=total,
                      next_cursor=encode_cursor("memories", owner, last) if last is not None else None,
                      damaged=[r.entry() for r in records if isinstance(r, Damaged)])


def history(org_id: str, bank: str, memory_id: str) -> History:
    """Every revision of one memory, oldest first (``core.store.memory_history``); 404
    ``bank_not_found`` / ``memory_not_found``. Answers even when the current record is
    damaged."""
    row, _ = require_item(org_id, bank, memory_id)
    return store.memory_history(row.incarnation, memory_id)


def tags(org_id: str, bank: str) -> list[TagCount]:
    """Distinct tags over live memories with counts, most used first, then by tag: from the bank's
    tag counters (a bank made before they were kept counts its records)."""
    row = require_bank(org_id, bank)
    counts = (store.live_tag_totals(row.incarnation) if row.tag_counts
              else store.live_tag_counts(row.incarnation))
    return [TagCount(t, c) for t, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


@dataclass
class ConflictPage:
    """A page of a bank's open conflicts (``banks.conflicts.open_conflicts``) and the cursor of
    the next (``None``: the last page)."""

    conflicts: list[conflicts.OpenConflict]
    next_cursor: str | None


def list_conflicts(org_id: str, bank: str, *, limit: int = 20, cursor: str | None = None) -> ConflictPage:
    """A page of the open conflicts of ``bank``: live memories linked as conflicting
    (``Memory.conflicts_with``), each under its later statement with the earlier ones. Resolve
    one by superseding either side (``supersede_memory``). Raises 400 ``validation_error``
    (``limit`` outside 1..100, a bad cursor), 404 ``bank_not_found``."""
    if not 1 <= limit <= conflicts.CONFLICTS_PAGE_MAX:
        raise BadRequest(f"limit must be between 1 and {conflicts.CONFLICTS_PAGE_MAX}.", details={"field": "limit"})
    row = require_bank(org_id, bank)
    owner = f"{org_id}/{bank}"
    start = decode_cursor(cursor, "conflicts", owner, {"sk": str, "ord": str})
    found, last = conflicts.open_conflicts(row.incarnation, limit=limit,
                                           start={k: str(v) for k, v in start.items()} if start else None)
    return ConflictPage(found, encode_cursor("conflicts", owner, last) if last is not None else None)
