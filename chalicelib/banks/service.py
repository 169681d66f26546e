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
from collections.abc import Callable
from typing import Any

from pynamodb.exceptions import DoesNotExist
from pynamodb.transactions import TransactWrite

from .. import audit, idempotency
from ..clock import now_ms
from ..core.records import Memory, Source, salvage_memory
from ..core.store import (
    POINTER_PREFIX,
    TRASH_PREFIX,
    Write,
    current,
    decode_cursor,
    decoded,
    encode_cursor,
    get_bank_row,
    get_item,
    new_bank,
    notify,
    record_of,
    revision_record,
    stage,
)
from ..errors import BadRequest, Conflict, NotFound
from ..fingerprint import FINGERPRINT_RE, fingerprint, fnv1a64, normalize_text
from ..idempotency import IdemKey
from ..names import check_name
from ..storage import blobs
from ..storage.damage import Damaged
from ..storage.tables import BankModel, MemoryModel, RevisionModel, bind
from ..storage.txn import Retry, run_transaction
from .records import (
    MAX_HANDLES,
    SaveRequest,
    UpdateRequest,
    check_text,
    normalize_handles,
)

LIST_MAX = 500
LIST_DEFAULT = 50
# --- banks ----------------------------------------------------------------------------------

def bank_public(row: BankModel) -> dict[str, Any]:
    """A bank row as the API shows it: ``{name, description, memories, pinned, rules}``."""
    return {"name": row.bank_name, "description": row.description or "", "memories": int(row.memories),
            "pinned": int(row.pinned), "rules": int(row.rules)}


def require_bank(org_id: str, name: str) -> BankModel:
    """The live bank row; 404 ``bank_not_found`` when absent (another org's bank included)."""
    check_name(name)
    row = get_bank_row(org_id, name)
    if row is None:
        raise NotFound(f"Bank '{name}' not found.", code="bank_not_found")
    return row


def ensure_bank(org_id: str, name: str, description: str = "", *, actor: str) -> tuple[dict[str, Any], bool]:
    """Create bank ``name`` or return the existing one: ``(bank, created)``."""
    check_name(name)
    bind()

    def attempt(tx: TransactWrite):
        row = get_bank_row(org_id, name)
        if row is not None:
            return row, False
        row = new_bank(org_id, name, description)
        tx.save(row, condition=BankModel.name.does_not_exist())
        return row, True

    row, created = run_transaction(attempt)
    return bank_public(row), created


def list_banks(org_id: str) -> list[dict[str, Any]]:
    """Every live bank of the org, by name (internal namespaces and trash sort before ``0``)."""
    bind()
    return [bank_public(r) for r in BankModel.query(org_id, BankModel.name >= "0", consistent_read=True)]


def list_trash(org_id: str) -> list[dict[str, Any]]:
    """Trash entries ``{name, trashed_to, trashed_at}`` (``trashed_at`` in ms), oldest first."""
    bind()
    rows = BankModel.query(org_id, BankModel.name.startswith(TRASH_PREFIX), consistent_read=True)
    out = [{"name": r.bank_name, "trashed_to": r.trashed_to or "", "trashed_at": int(r.trashed_at or 0)} for r in rows]
    return sorted(out, key=lambda e: (e["trashed_at"], e["trashed_to"]))


def _rules_prefix(org_id: str, bank: str) -> str:
    return blobs.org_key(org_id, "banks", bank, "rules") + "/"


def _trash_rules_prefix(org_id: str, trashed_to: str) -> str:
    return blobs.org_key(org_id, ".trash", trashed_to, "rules") + "/"


def trash_bank(org_id: str, name: str, *, actor: str) -> str:
    """Move bank ``name`` (rules, memories, history) to the trash; returns its ``trashed_to`` id.

    Rules are copied to ``.trash/<id>/rules/`` before the bank row moves and deleted after, so a
    failure half-way loses nothing. Raises 404 ``bank_not_found``. Audited as ``bank.trash``.
    """
    row = require_bank(org_id, name)
    trashed_to = f"{name}.{uuid.uuid4().hex[:12]}"
    src, dst = _rules_prefix(org_id, name), _trash_rules_prefix(org_id, trashed_to)
    copied = []
    for obj in blobs.list_objects(src):
        target = dst + obj["Key"][len(src):]
        blobs.copy(obj["Key"], target)
        copied.append((obj["Key"], target))

    def attempt(tx: TransactWrite):
        current = get_bank_row(org_id, name)
        if current is None or current.incarnation != row.incarnation:
            raise NotFound(f"Bank '{name}' not found.", code="bank_not_found")
        trash = BankModel(**{k: getattr(current, k) for k in BankModel.get_attributes()})
        trash.name = TRASH_PREFIX + trashed_to
        trash.trashed_to, trash.trashed_at = trashed_to, now_ms()
        tx.delete(current, condition=(BankModel.incarnation == current.incarnation) & (BankModel.seq == current.seq))
        tx.save(trash, condition=BankModel.name.does_not_exist())
        audit.add_to(tx, org_id, "bank.trash", actor, name, {"trashed_to": trashed_to})

    try:
        run_transaction(attempt)
    except Exception:
        for _, target in copied:
            blobs.delete(target)
        raise
    for key, _ in copied:
        blobs.delete(key)
    return trashed_to


def restore_bank(org_id: str, name: str, trashed_to: str, *, actor: str) -> dict[str, Any]:
    """Bring a trashed bank back whole under ``name``, history included; returns the bank.

    Raises 404 ``not_found`` for an unknown trash id (or one of another bank name) and
    409 ``bank_exists`` when a live bank has that name. Audited as ``bank.restore``.
    """
    check_name(name)
    bind()

    def attempt(tx: TransactWrite):
        try:
            trash = BankModel.get(org_id, TRASH_PREFIX + trashed_to, consistent_read=True)
        except DoesNotExist:
            raise NotFound(f"Trash entry '{trashed_to}' not found.") from None
        if trash.bank_name != name:
            raise NotFound(f"Trash entry '{trashed_to}' does not hold bank '{name}'.")
        if get_bank_row(org_id, name) is not None:
            raise Conflict(f"A live bank named '{name}' exists; trash or rename it first.", code="bank_exists")
        live = BankModel(**{k: getattr(trash, k) for k in BankModel.get_attributes()})
        live.name, live.trashed_to, live.trashed_at = name, None, None
        live.updated_at = now_ms()
        tx.save(live, condition=BankModel.name.does_not_exist())
        tx.delete(trash, condition=BankModel.name.exists())
        audit.add_to(tx, org_id, "bank.restore", actor, name, {"trashed_to": trashed_to})
        return live

    live = run_transaction(attempt)
    blobs.move_prefix(_trash_rules_prefix(org_id, trashed_to), _rules_prefix(org_id, name))
    return bank_public(live)


# --- records --------------------------------------------------------------------------------

def require_item(org_id: str, bank: str, memory_id: str) -> tuple[BankModel, MemoryModel]:
    """``(bank row, item)`` of a memory, its record not decoded; 404 ``bank_not_found`` /
    ``memory_not_found``."""
    row = require_bank(org_id, bank)
    item = get_item(row.incarnation, memory_id) if FINGERPRINT_RE.fullmatch(memory_id or "") else None
    if item is None:
        raise NotFound(f"Memory '{memory_id}' not found in bank '{bank}'.", code="memory_not_found")
    return row, item


def require_memory(org_id: str, bank: str, memory_id: str) -> tuple[BankModel, MemoryModel, Memory]:
    """``(bank row, item, record)``; 404 ``bank_not_found`` / ``memory_not_found``, 409
    ``damaged`` when the stored record cannot be read."""
    row, item = require_item(org_id, bank, memory_id)
    return row, item, record_of(item)


def get_memory(org_id: str, bank: str, memory_id: str) -> dict[str, Any]:
    """One memory by id, tombstoned and superseded ones included."""
    return require_memory(org_id, bank, memory_id)[2].public()


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
    FNV-1a of the normalized text + NUL + k, for the first free k."""
    base = normalize_text(text).encode("utf-8")
    for k in range(1, 1000):
        cand = "fp%016x" % fnv1a64(base + b"\x00" + str(k).encode())
        if get_item(inc, cand) is None:
            return cand
    raise Conflict("Could not allocate a memory id.")


def save_memory(org_id: str, bank: str, req: SaveRequest, *, actor: str, idem: IdemKey | None = None,
                confidence: str = "stated", source: Source | None = None) -> tuple[int, dict[str, Any]]:
    """Save one memory (the bank worker's ``memory::save``); returns ``(status, body)``.

    New text: 201 ``{created: true, memory}`` with revision 0, corroboration 0 (a damaged stored
    record of that text is replaced the same way, keeping its id and history). Text whose
    fingerprint matches a live memory: 200 ``{created: false, memory}``, corroboration +1,
    revision +1, text and entities kept, pinned kept or set, confidence ``stated``, tags merged
    (the ones beyond 8 named in ``details.tags_dropped``). Text matching a retired memory
    resurrects it (201, ``created: true``). The bank is created on first use. With ``idem``, a
    retry returns the first response and changes nothing.
    Raises 400 ``invalid_name`` / ``validation_error`` before anything is read.
    """
    check_name(bank)
    text = check_text(req.text)
    entities = normalize_handles(req.entities, "entities")
    tags = normalize_handles(req.tags, "tags")
    fp = fingerprint(text)
    src = source or Source(session_id=req.session_id)
    bind()
    committed: dict[str, Any] = {}

    def attempt(tx: TransactWrite):
        replay = idempotency.lookup(idem)
        if replay is not None:
            return replay
        row = get_bank_row(org_id, bank)
        fresh = None if row is not None else new_bank(org_id, bank)
        inc = row.incarnation if row is not None else fresh.incarnation
        pointer = get_item(inc, POINTER_PREFIX + fp) if row is not None else None
        target = pointer.memory_id if pointer is not None else fp
        item = get_item(inc, target) if row is not None else None
        existing, guard = current(item) if item is not None else (None, None)
        if pointer is None and existing is not None and existing.purged_at is None:
            target, item, existing, guard = _free_id(inc, text), None, None, None
        if pointer is not None and existing is None:
            raise Retry()  # a pointer without its record: a half-seen state, read again
        now = now_ms()
        dropped: list[str] = []
        if existing is None or existing.purged_at is not None or guard is not None:  # new, purged or damaged
            rec = Memory(id=target, text=text, entities=entities, tags=tags, confidence=confidence,
                         corroboration=0, pinned=bool(req.pinned), source=src, created_at=now, updated_at=now,
                         revision=0 if existing is None else existing.revision + 1)
            created, op = True, "create"
        else:
            merged, dropped = _merge_tags(existing.tags, tags)
            update = {"corroboration": existing.corroboration + 1, "revision": existing.revision + 1,
                      "pinned": existing.pinned or bool(req.pinned), "confidence": "stated" if confidence == "stated" else existing.confidence,
                      "tags": merged, "updated_at": now}
            created, op = False, "reinforce"
            if not existing.live:
                update.update(invalid_at=None, superseded_by=None)
                created, op = True, "resurrect"
            rec = existing.model_copy(update=update)
        writes = [Write(rec, existing, op, fp, guard)]
        new_row, changes = stage(tx, org_id, bank, row, writes, actor, fresh=fresh)
        if pointer is None:
            tx.save(MemoryModel(bank_key=inc, sk=POINTER_PREFIX + fp, memory_id=rec.id),
                    condition=MemoryModel.sk.does_not_exist())
        body: dict[str, Any] = {"created": created, "memory": rec.public()}
        if dropped:
            body["details"] = {"tags_dropped": dropped}
        status = 201 if created else 200
        idempotency.add_to(tx, idem, status, body, revision=(inc, changes[0][0]))
        committed.update(row=new_row, changes=changes)
        return status, body

    result = run_transaction(attempt)
    if committed:
        notify(org_id, bank, committed["row"], committed["changes"])
    return result


def _change(org_id: str, bank: str, memory_id: str, actor: str,
            decide: Callable[[BankModel, MemoryModel, Memory], tuple[list[Write], Callable[[TransactWrite], None] | None] | None],
            *, repair: str | None = None) -> Memory:
    """Read-decide-write for one existing memory. ``decide`` returns ``None`` (nothing to write;
    the current record is returned) or the writes plus an extra staging step (``writes[0]``
    replaces the memory). A damaged stored record is 409 ``damaged``, unless ``repair`` names the
    op that may replace it: ``decide`` then gets a salvaged record (``core.store.current``) and,
    when it would write nothing, the salvaged record is written as revision +1 under that op."""
    committed: dict[str, Any] = {}

    def attempt(tx: TransactWrite):
        row, item = require_item(org_id, bank, memory_id)
        rec, guard = current(item) if repair else (record_of(item), None)
        decision = decide(row, item, rec)
        if decision is None and guard is None:
            return rec
        if decision is None:
            fixed = rec.model_copy(update={"revision": rec.revision + 1, "updated_at": max(now_ms(), rec.updated_at)})
            decision = [Write(fixed, rec, repair, item.fp)], None
        writes, extra = decision
        writes[0].guard = guard
        new_row, changes = stage(tx, org_id, bank, row, writes, actor)
        if extra is not None:
            extra(tx)
        committed.update(row=new_row, changes=changes)
        return writes[0].record

    out = run_transaction(attempt)
    if committed:
        notify(org_id, bank, committed["row"], committed["changes"])
    return out


def _require_live(rec: Memory) -> None:
    if not rec.live:
        raise Conflict(f"Memory '{rec.id}' is retired (tombstoned or superseded); save its text again to bring it back.",
                       code="memory_retired")


def update_memory(org_id: str, bank: str, memory_id: str, req: UpdateRequest, *, actor: str) -> dict[str, Any]:
    """Revise text, entities, tags or pinned in place (``memory::update``): same id, revision +1,
    the prior revision kept in history; fields not given stay. A text change moves the
    fingerprint pointer in the same transaction.

    Raises 400 ``validation_error`` (nothing to change, bad field), 404, 409 ``memory_retired``,
    409 ``duplicate_text`` when the new text is another live memory's.
    """
    if req.text is None and req.entities is None and req.tags is None and req.pinned is None:
        raise BadRequest("Nothing to update: give text, entities, tags or pinned.", details={"field": "body"})
    text = check_text(req.text) if req.text is not None else None
    entities = normalize_handles(req.entities, "entities") if req.entities is not None else None
    tags = normalize_handles(req.tags, "tags") if req.tags is not None else None

    def decide(row: BankModel, item: MemoryModel, rec: Memory):
        _require_live(rec)
        update: dict[str, Any] = {}
        extra = None
        new_fp = item.fp
        if text is not None and text != rec.text:
            update["text"] = text
            new_fp = fingerprint(text)
            if new_fp != item.fp:
                ptr = get_item(row.incarnation, POINTER_PREFIX + new_fp)
                other = get_item(row.incarnation, ptr.memory_id) if ptr is not None else None
                if ptr is not None and ptr.memory_id != rec.id and other is not None and record_of(other).live:
                    raise Conflict("Another live memory already has this text.", code="duplicate_text",
                                   details={"memory_id": ptr.memory_id})
                old_ptr = get_item(row.incarnation, POINTER_PREFIX + item.fp) if item.fp else None
                old_fp = item.fp if old_ptr is not None and old_ptr.memory_id == rec.id else None

                def extra(tx: TransactWrite, ptr=ptr, old_fp=old_fp):
                    if old_fp:
                        tx.delete(MemoryModel(bank_key=row.incarnation, sk=POINTER_PREFIX + old_fp),
                                  condition=MemoryModel.memory_id == rec.id)
                    pointer = MemoryModel(bank_key=row.incarnation, sk=POINTER_PREFIX + new_fp, memory_id=rec.id)
                    if ptr is None:
                        tx.save(pointer, condition=MemoryModel.sk.does_not_exist())
                    else:  # take over a retired memory's pointer
                        tx.save(pointer, condition=MemoryModel.memory_id == ptr.memory_id)
        if entities is not None:
            update["entities"] = entities
        if tags is not None:
            update["tags"] = tags
        if req.pinned is not None:
            update["pinned"] = req.pinned
        update.update(revision=rec.revision + 1, updated_at=now_ms())
        return [Write(rec.model_copy(update=update), rec, "update", new_fp)], extra

    return _change(org_id, bank, memory_id, actor, decide).public()


def pin_memory(org_id: str, bank: str, memory_id: str, pinned: bool, *, actor: str) -> dict[str, Any]:
    """Pin or unpin (``memory::pin``). 409 ``memory_retired`` on a retired memory."""

    def decide(row, item, rec: Memory):
        _require_live(rec)
        new = rec.model_copy(update={"pinned": pinned, "revision": rec.revision + 1, "updated_at": now_ms()})
        return [Write(new, rec, "pin", item.fp)], None

    return _change(org_id, bank, memory_id, actor, decide).public()


def delete_memory(org_id: str, bank: str, memory_id: str, *, actor: str) -> dict[str, Any]:
    """Tombstone (``memory::delete``): sets ``invalid_at``; a retired memory is returned unchanged.
    A damaged stored record is replaced by a tombstone of what can be salvaged of it."""

    def decide(row, item, rec: Memory):
        if not rec.live:
            return None
        now = now_ms()
        new = rec.model_copy(update={"invalid_at": now, "revision": rec.revision + 1, "updated_at": now})
        return [Write(new, rec, "delete", item.fp)], None

    return _change(org_id, bank, memory_id, actor, decide, repair="delete").public()


def supersede_memory(org_id: str, bank: str, memory_id: str, superseded_by: str, *, actor: str) -> dict[str, Any]:
    """Retire ``memory_id`` in favour of ``superseded_by`` (``memory::supersede``).

    Raises 400 ``validation_error`` (a memory superseding itself), 404 ``memory_not_found`` (no
    such winner), 409 ``memory_retired`` (target or winner retired), 409 ``conflict`` (a pinned
    target).
    """
    if superseded_by == memory_id:
        raise BadRequest("A memory cannot supersede itself.", details={"field": "superseded_by"})

    def decide(row: BankModel, item, rec: Memory):
        _require_live(rec)
        if rec.pinned:
            raise Conflict("A pinned memory cannot be superseded; unpin it first.")
        winner = get_item(row.incarnation, superseded_by) if FINGERPRINT_RE.fullmatch(superseded_by) else None
        if winner is None:
            raise NotFound(f"Memory '{superseded_by}' not found in bank '{bank}'.", code="memory_not_found")
        if not record_of(winner).live:
            raise Conflict(f"Memory '{superseded_by}' is retired and cannot supersede another.", code="memory_retired")
        now = now_ms()
        new = rec.model_copy(update={"invalid_at": now, "superseded_by": superseded_by,
                                     "revision": rec.revision + 1, "updated_at": now})

        def extra(tx: TransactWrite):
            # the winner must still be live at commit: condition on its revision
            tx.condition_check(MemoryModel, row.incarnation, superseded_by,
                               condition=MemoryModel.revision == record_of(winner).revision)

        return [Write(new, rec, "supersede", item.fp)], extra

    return _change(org_id, bank, memory_id, actor, decide).public()


def purge_memory(org_id: str, bank: str, memory_id: str, *, actor: str) -> dict[str, Any]:
    """Erase a memory's content (privacy requests, leaked secrets): text, entities and tags leave
    the record, every revision, the bank's index snapshots and exports (idempotent replays hold
    no copy: they reference the revision). The recall index drops the text when it sees the
    ``purge`` revision. A content-free tombstone and an audit event (``memory.purge``) remain.
    Safe to re-run: a re-run finishes scrubbing. A damaged stored record or revision is purged
    too (what can be salvaged of it is scrubbed). Raises 404 ``bank_not_found`` /
    ``memory_not_found``.
    """

    def decide(row: BankModel, item: MemoryModel, rec: Memory):
        if rec.purged_at is not None and not (rec.text or rec.entities or rec.tags):
            return None
        now = now_ms()
        new = rec.model_copy(update={"text": "", "entities": [], "tags": [], "purged_at": now,
                                     "invalid_at": rec.invalid_at or now, "revision": rec.revision + 1,
                                     "updated_at": now})

        # the pointer may belong to another memory that took this retired memory's text over
        ptr = get_item(row.incarnation, POINTER_PREFIX + item.fp) if item.fp else None
        owned = ptr is not None and ptr.memory_id == rec.id

        def extra(tx: TransactWrite):
            if owned:
                tx.delete(MemoryModel(bank_key=row.incarnation, sk=POINTER_PREFIX + item.fp),
                          condition=MemoryModel.memory_id == rec.id)
            audit.add_to(tx, org_id, "memory.purge", actor, f"{bank}/{rec.id}", {"bank": bank})

        return [Write(new, rec, "purge", None)], extra

    rec = _change(org_id, bank, memory_id, actor, decide, repair="purge")
    row = require_bank(org_id, bank)
    for rev in RevisionModel.by_memory.query(row.incarnation, RevisionModel.rev_key.startswith(f"{memory_id}#"),
                                             consistent_read=True):
        r = revision_record(rev)
        if isinstance(r, Damaged):  # its content may still be in there: scrub what can be salvaged
            r = salvage_memory(rev.record, key=memory_id, now=now_ms())
        elif not (r.text or r.entities or r.tags):
            continue
        scrubbed = r.model_copy(update={"text": "", "entities": [], "tags": []}).model_dump(mode="json")
        rev.update(actions=[RevisionModel.record.set(scrubbed)])
    blobs.delete_prefix(blobs.org_key(org_id, "exports", bank) + "/")
    blobs.delete_prefix(blobs.org_key(org_id, "indexes", bank) + "/")
    return rec.public()


# --- reads ----------------------------------------------------------------------------------

def list_memories(org_id: str, bank: str, *, limit: int = LIST_DEFAULT, cursor: str | None = None,
                  tag: str | None = None, include_superseded: bool = False) -> dict[str, Any]:
    """A page of memories newest first (``updated_at`` desc, ``id`` asc):
    ``{memories, total, next_cursor, damaged?}``. ``total`` counts every match of the filter, not
    the page. A page holds up to ``limit`` stored records; one that cannot be read is left out of
    ``memories`` and listed in ``damaged`` as ``{id, reason}`` (the key is absent when none is).
    """
    if not 1 <= limit <= LIST_MAX:
        raise BadRequest(f"limit must be between 1 and {LIST_MAX}.", details={"field": "limit"})
    row = require_bank(org_id, bank)
    tag = tag.strip().lower() if tag else None
    owner = f"{org_id}/{bank}"
    start = decode_cursor(cursor, "memories", owner, {"sk": str, "ord": str})
    cond = None
    if not include_superseded:
        cond = MemoryModel.live == True  # noqa: E712 - a pynamodb condition, not a comparison
    if tag:
        tc = MemoryModel.tags.contains(tag)
        cond = tc if cond is None else cond & tc
    last_key = None
    if start is not None:
        last_key = {"bank_key": {"S": row.incarnation}, "sk": {"S": start["sk"]}, "ord": {"S": start["ord"]}}
    out: list[Memory] = []
    damaged: list[dict[str, str]] = []
    items = MemoryModel.by_order.query(row.incarnation, filter_condition=cond, last_evaluated_key=last_key,
                                       consistent_read=True, page_size=min(limit + 1, LIST_MAX) if cond is None else None)
    more = False
    last = None
    n = 0
    for it in items:
        if n == limit:
            more = True
            break
        n += 1
        last = it
        rec = decoded(it)
        if isinstance(rec, Damaged):
            damaged.append(rec.entry())
        else:
            out.append(rec)
    # the cursor is the last item's stored keys: a damaged record has no order_key() to offer
    next_cursor = encode_cursor("memories", owner, {"sk": last.sk, "ord": last.ord}) if more and last is not None else None
    if tag:
        total = MemoryModel.by_order.count(row.incarnation, filter_condition=cond, consistent_read=True)
    else:
        total = int(row.records if include_superseded else row.memories)
    body: dict[str, Any] = {"memories": [m.public() for m in out], "total": int(total), "next_cursor": next_cursor}
    if damaged:
        body["damaged"] = damaged
    return body


def history(org_id: str, bank: str, memory_id: str) -> dict[str, Any]:
    """Every revision of one memory, oldest first: ``{revisions: [record + {op, seq}], damaged?}``;
    a revision that cannot be read is listed in ``damaged`` as ``{id, seq, reason}`` instead.
    Answers even when the current record is damaged."""
    row, _ = require_item(org_id, bank, memory_id)
    revs = []
    damaged = []
    for rev in RevisionModel.by_memory.query(row.incarnation, RevisionModel.rev_key.startswith(f"{memory_id}#"),
                                             consistent_read=True):
        r = revision_record(rev)
        if isinstance(r, Damaged):
            damaged.append({**r.entry(), "seq": int(rev.seq)})
            continue
        rec = r.public()
        rec.update(op=rev.op, seq=int(rev.seq))
        revs.append(rec)
    return {"revisions": revs, **({"damaged": damaged} if damaged else {})}


def tags(org_id: str, bank: str) -> dict[str, Any]:
    """Distinct tags over live memories with counts, most used first, then by tag."""
    row = require_bank(org_id, bank)
    counts: dict[str, int] = {}
    for it in MemoryModel.by_order.query(row.incarnation, filter_condition=MemoryModel.live == True,  # noqa: E712
                                         consistent_read=True, attributes_to_get=["tags"]):
        for t in it.tags or ():
            counts[t] = counts.get(t, 0) + 1
    return {"tags": [{"tag": t, "count": c} for t, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]}

