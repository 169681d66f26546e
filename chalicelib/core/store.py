"""The one core every surface writes through (DESIGN.md, "The three surfaces, one core").

A *bank* is the unit of isolation and indexing: a named bank, a structured-memory scope's
namespace or a team space's retrieval projection, each a ``BankModel`` row whose ``incarnation``
keys its records. ``stage()`` puts one or more record changes into a transaction together with
the bank's ``seq`` advance (conditioned on the value read), so ``seq`` order is commit order and
the recall index can catch up by querying revisions above its own ``seq``. Observers registered
with ``on_commit`` (the recall index's own cache) are told after each commit.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from pynamodb.exceptions import DoesNotExist
from pynamodb.transactions import TransactWrite

from ..clock import now_ms
from ..errors import BadRequest, CairnError
from ..storage.tables import BankModel, MemoryModel, RevisionModel, bind
from ..validation import loads
from .records import Memory

POINTER_PREFIX = "~fp/"
NAME_POINTER_PREFIX = "~name/"
TRASH_PREFIX = ".trash/"
NAMESPACE_PREFIX = "!"  # internal namespaces: a key no bank name ([a-z0-9]...) can take


# Observers told after every committed document change: (org_id, bank, BankModel row after the
# commit, [(seq, Memory)]). The recall index registers one to update its own cache at once.
_on_commit: list[Callable[[str, str, BankModel, list[tuple[int, Memory]]], None]] = []


def on_commit(fn: Callable[[str, str, BankModel, list[tuple[int, Memory]]], None]) -> None:
    """Register ``fn`` to be called after each committed change (never inside the transaction)."""
    _on_commit.append(fn)


def notify(org_id: str, bank: str, row: BankModel, changes: list[tuple[int, Memory]]) -> None:
    for fn in list(_on_commit):
        try:
            fn(org_id, bank, row, changes)
        except Exception:  # noqa: BLE001 - an observer (a cache) must never fail a committed write
            pass


def get_bank_row(org_id: str, name: str) -> BankModel | None:
    """The live bank row (consistent read), or ``None``."""
    bind()
    try:
        return BankModel.get(org_id, name, consistent_read=True)
    except DoesNotExist:
        return None



def new_bank(org_id: str, name: str, description: str = "") -> BankModel:
    now = now_ms()
    return BankModel(org_id=org_id, name=name, bank_name=name, incarnation=uuid.uuid4().hex,
                     description=description, seq=0, memories=0, pinned=0, records=0, rules=0,
                     rules_version=0, created_at=now, updated_at=now)



def get_item(inc: str, sk: str) -> MemoryModel | None:
    try:
        return MemoryModel.get(inc, sk, consistent_read=True)
    except DoesNotExist:
        return None


def get_items(inc: str, sks: Iterable[str]) -> dict[str, MemoryModel]:
    """The items of ``sks`` in one bank incarnation that exist, by sort key: consistent
    BatchGetItem calls of up to 100 keys (pynamodb retries unprocessed keys), instead of one
    GetItem each."""
    keys = [(inc, sk) for sk in dict.fromkeys(sks)]
    if not keys:
        return {}
    bind()
    return {it.sk: it for it in MemoryModel.batch_get(keys, consistent_read=True)}


def record_of(item: MemoryModel) -> Memory:
    return Memory.model_validate(item.record)



@dataclass
class Write:
    """One record change staged into a transaction."""

    record: Memory
    prev: Memory | None
    op: str
    fp: str | None  # fingerprint of the record's current text (None once purged)


def deltas(writes: Iterable[Write]) -> tuple[int, int, int]:
    live = pinned = records = 0
    for w in writes:
        before_live = bool(w.prev and w.prev.live)
        before_pin = bool(w.prev and w.prev.live and w.prev.pinned)
        live += int(w.record.live) - int(before_live)
        pinned += int(w.record.live and w.record.pinned) - int(before_pin)
        records += int(w.prev is None)
    return live, pinned, records


def stage(tx: TransactWrite, org_id: str, bank: str, row: BankModel | None, writes: list[Write],
           actor: str, *, fresh: BankModel | None = None) -> tuple[BankModel, list[tuple[int, Memory]]]:
    """Stage ``writes`` plus the bank's ``seq`` advance (or the bank's creation) into ``tx``.

    Takes ``len(writes)`` consecutive ``seq`` values; returns the bank row as it will be after the
    commit and the ``(seq, record)`` pairs.
    """
    live, pinned, records = deltas(writes)
    now = now_ms()
    if row is None:
        row = fresh or new_bank(org_id, bank)
        first = 1
        row.seq, row.memories, row.pinned, row.records, row.updated_at = len(writes), live, pinned, records, now
        tx.save(row, condition=BankModel.name.does_not_exist())
    else:
        first = int(row.seq) + 1
        tx.update(row, actions=[BankModel.seq.set(int(row.seq) + len(writes)), BankModel.memories.add(live),
                                BankModel.pinned.add(pinned), BankModel.records.add(records),
                                BankModel.updated_at.set(now)],
                  condition=(BankModel.seq == int(row.seq)) & (BankModel.incarnation == row.incarnation))
        row = BankModel(**{k: getattr(row, k) for k in BankModel.get_attributes()})
        row.seq, row.updated_at = first + len(writes) - 1, now
        row.memories, row.pinned, row.records = row.memories + live, row.pinned + pinned, row.records + records
    inc = row.incarnation
    out = []
    for i, w in enumerate(writes):
        seq = first + i
        rec = w.record
        item = MemoryModel(bank_key=inc, sk=rec.id, ord=rec.order_key(), record=rec.model_dump(mode="json"),
                           fp=w.fp, live=rec.live, revision=rec.revision, tags=set(rec.tags) or None)
        cond = MemoryModel.sk.does_not_exist() if w.prev is None else (MemoryModel.revision == w.prev.revision)
        tx.save(item, condition=cond)
        tx.save(RevisionModel(bank_key=inc, seq=seq, rev_key=f"{rec.id}#{rec.revision:012d}#{seq:012d}",
                              memory_id=rec.id, op=w.op, record=rec.model_dump(mode="json"), at=now, actor=actor),
                condition=RevisionModel.seq.does_not_exist())
        out.append((seq, rec))
    return row, out


def _owner_tag(owner: str) -> str:
    return hashlib.sha256(owner.encode("utf-8")).hexdigest()[:16]


def encode_cursor(kind: str, owner: str, data: dict[str, str | int]) -> str:
    """An opaque base64url page cursor holding ``data``, bound to the listing that issued it:
    ``kind`` names the listing and ``owner`` what it lists (an org, a bank, a filter), so a
    cursor replayed elsewhere is refused by ``decode_cursor``."""
    body = {"r": kind, "o": _owner_tag(owner), **data}
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, kind: str, owner: str, fields: dict[str, type],
                  prefixes: dict[str, str] | None = None) -> dict[str, Any] | None:
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


def iter_records(inc: str) -> Iterable[Memory]:
    """Every memory record of a bank incarnation, newest first (export)."""
    bind()
    for it in MemoryModel.by_order.query(inc, consistent_read=True):
        yield record_of(it)


def iter_records_any_order(inc: str) -> Iterable[Memory]:
    """Every memory record of a bank incarnation in sort-key order (index rebuild): a query on
    the base table's partition, cheaper than the ``by_order`` index when order does not matter.
    Pointer items (``~fp/``, ``~name/``) hold no ``record`` and are filtered out server-side."""
    bind()
    for it in MemoryModel.query(inc, filter_condition=MemoryModel.record.exists(), consistent_read=True,
                                attributes_to_get=["record"]):  # one attribute per item to decode
        yield record_of(it)


def iter_revisions(inc: str, after_seq: int = 0) -> Iterable[tuple[int, str, Memory]]:
    """``(seq, op, record)`` of every revision with ``seq > after_seq``, in commit order."""
    bind()
    for rev in RevisionModel.query(inc, RevisionModel.seq > after_seq, consistent_read=True):
        yield int(rev.seq), rev.op, Memory.model_validate(rev.record)
