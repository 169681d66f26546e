"""Vector backfill: give every memory of a bank the current model's sentence vector.

A memory lacks one when it was written before vectors were stored, while the model was not
available, or under another model (``MODEL_ID`` changed): ``core.vectors.current_blob`` is
``None``. ``backfill_bank`` embeds them in bounded runs:

- a run examines at most ``limit`` memories (``Settings.backfill_batch``) in id order from the
  bank's cursor (``core.store.BackfillCursor``, an item of the bank's records partition, so a
  trashed and re-created bank starts afresh) and embeds those without a current vector;
- each batch is one bank write (``core.store.write``) of ``embed`` changes (``store.EMBED_OP``):
  the memory item's ``vec`` alone is set, conditioned on its revision and vector as read, and a
  revision carrying the record and its vector takes the lane's next position, so a warm index in
  another container learns the vector through its normal catch-up, and the bank's ``vectors``
  counter moves in the same transaction. ``updated_at``, ``revision``, history, exports and
  ``as_of`` recall do not change (they leave ``embed`` revisions out);
- the last transaction of a run also advances the cursor (conditioned on the version read) and
  writes the run's one audit event (``bank.backfill`` by ``system:backfill``: ``{model, examined,
  embedded, left, done, on_behalf_of?}``). A crash before it loses nothing: the next run examines the same
  memories again and finds the ones already embedded current;
- a pass ends at the bank's last id; the cursor then notes the model and how many live memories
  the model cannot embed (text it does not cover, damaged records), so a bank starts no new pass
  until its counters show more live memories without a vector than that.

No quota or rate limit applies. The texts embedded are counted in usage as the system's work:
``texts_embedded`` under the token ``system:backfill`` (operation ``backfill``, one per run).
Nothing runs while the model is not available (``status`` ``unavailable``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass

from .. import audit, semantic
from ..auth.principal import Principal
from ..core import store, vectors
from ..core.records import Memory
from ..core.store import BackfillCursor, BankTx, MemoryRow
from ..errors import NotFound
from ..settings import get_settings
from ..storage.damage import Damaged
from ..usage import meter

ACTOR = "system:backfill"
ACTION = "bank.backfill"
TX_RECORDS = 25  # memories per transaction: two items each, plus lanes, cursor, audit and usage, within 100
TX_LANES = 16


@dataclass(frozen=True)
class BackfillRun:
    """What one run did in bank ``bank`` of ``org``: ``status`` ``ran``, ``covered`` (nothing to
    do: read from the counters, no scan) or ``unavailable`` (no model); ``examined`` memories,
    ``embedded`` (given a current vector now), ``left`` (live ones the model cannot embed, so far
    in this pass), ``done`` (the pass reached the bank's end), and the coverage after it:
    ``with_vector`` of ``live`` memories under ``model``."""

    org: str
    bank: str
    status: str
    model: str
    examined: int = 0
    embedded: int = 0
    left: int = 0
    done: bool = False
    with_vector: int = 0
    live: int = 0


def _needs(rec: Memory | Damaged) -> bool:
    """Whether the backfill can give ``rec`` a vector it lacks."""
    if isinstance(rec, Damaged):
        return False
    text = vectors.embedded_text(rec)
    return bool(text.strip()) and semantic.covered(text) and vectors.current_blob(rec) is None


def _lacking(rec: Memory | Damaged) -> bool:
    """Whether ``rec`` is live (or unreadable) and will stay without a current vector."""
    if isinstance(rec, Damaged):
        return True
    return rec.live and not _needs(rec) and vectors.current_blob(rec) is None


def _covered(cursor: BackfillCursor, with_vector: int, live: int) -> bool:
    """Whether a bank needs no new pass: every live memory has a vector, or no more lack one than
    the last finished pass (under this model) left."""
    if cursor.after is not None:
        return False
    missing = live - with_vector
    return missing <= 0 or (cursor.model == semantic.MODEL_ID and missing <= cursor.left)


def backfill_bank(org_id: str, bank: str, *, limit: int | None = None, on_behalf_of: str | None = None) -> BackfillRun:
    """One bounded run of the backfill of bank ``bank`` (a named bank or an internal namespace):
    examines at most ``limit`` (default ``Settings.backfill_batch``) memories; ``on_behalf_of``
    (who started it, e.g. ``cli:<user>``) goes into its audit event. Raises 404
    ``bank_not_found`` when the bank does not exist."""
    head = store.get_bank_head(org_id, bank)
    if head is None:
        raise NotFound(f"Bank '{bank}' not found.", code="bank_not_found")
    run = BackfillRun(org_id, bank, "covered", semantic.MODEL_ID, with_vector=max(0, head.vectors),
                      live=head.memories)
    inc = head.incarnation
    cursor = store.get_backfill_cursor(inc)
    if _covered(cursor, run.with_vector, run.live):
        return run
    if not semantic.available():
        return BackfillRun(org_id, bank, "unavailable", semantic.MODEL_ID, with_vector=run.with_vector, live=run.live)
    items = store.memory_items_after(inc, cursor.after, limit or get_settings().backfill_batch)
    done = len(items) < (limit or get_settings().backfill_batch)
    recs = [(it, store.decoded(it)) for it in items]
    left = (0 if cursor.after is None else cursor.left) + sum(_lacking(r) for _it, r in recs)
    todo = [it.sk for it, r in recs if _needs(r)]
    if done:  # what the counters will still show missing: no new pass until more lack one
        left = max(left, run.live - run.with_vector - len(todo))
    new = BackfillCursor(None if done else items[-1].sk, left, semantic.MODEL_ID if done else cursor.model)
    batches = store.lane_batches(org_id, bank, todo, lambda sk: sk, size=TX_RECORDS, max_lanes=TX_LANES) or [[]]
    principal = Principal(token_id=ACTOR, org_id=org_id, kind="service", user_id=None)
    embedded = 0
    with meter.metering(principal, "backfill", "exempt", bank):
        for i, batch in enumerate(batches):
            finish = _Finish(cursor, new, len(items), embedded, on_behalf_of) if i == len(batches) - 1 else None
            embedded += store.write(org_id, functools.partial(_attempt, bank=bank, inc=inc, ids=batch, finish=finish))
    after = store.vector_coverage(org_id, bank) or (0, 0)
    return BackfillRun(org_id, bank, "ran", semantic.MODEL_ID, len(items), embedded, left, done, *after)


@dataclass(frozen=True)
class _Finish:
    """What a run's last transaction also writes: the cursor (``read`` -> ``new``) and the audit
    event of ``examined`` memories, ``embedded`` by the run's earlier transactions, started by
    ``on_behalf_of`` (``None``: the schedule)."""

    read: BackfillCursor
    new: BackfillCursor
    examined: int
    embedded: int
    on_behalf_of: str | None


def _attempt(btx: BankTx, bank: str, inc: str, ids: list[str], finish: _Finish | None) -> int:
    """Stage the embed changes of the memories ``ids`` that still need one (read again: a retry
    sees what committed meanwhile) and, with ``finish``, the cursor's advance and the run's audit
    event; returns how many memories get a vector."""
    row = btx.row(bank)
    if row is None or row.incarnation != inc:
        return 0  # trashed since the run began: nothing of this incarnation is written
    writes = [store.embed_write(it, rec) for it, rec in _current(inc, ids)]
    # embedded here, before staging, so a write the model gave no vector is left out
    meter.add({"emb_t": vectors.attach([(w.record, w.prev) for w in writes])}, bank)
    writes = [w for w in writes if vectors.current_blob(w.record) is not None]
    if writes:
        btx.stage(bank, row, writes, ACTOR)
    if finish is not None:
        if store.get_backfill_cursor(inc) == finish.read:  # else a concurrent run moved it: its cursor stands
            store.stage_backfill_cursor(btx.tx, inc, finish.read, finish.new)
        details: dict[str, object] = {
            "model": semantic.MODEL_ID, "examined": finish.examined, "embedded": finish.embedded + len(writes),
            "left": finish.new.left, "done": finish.new.after is None}
        if finish.on_behalf_of is not None:
            details["on_behalf_of"] = finish.on_behalf_of
        audit.add_to(btx.tx, btx.org_id, ACTION, ACTOR, bank, details)
    return len(writes)


def _current(inc: str, ids: list[str]) -> Iterator[tuple[MemoryRow, Memory]]:
    """``(item, record)`` of each of ``ids`` that still needs a vector, read now (consistent)."""
    for it in store.get_items(inc, ids).values():
        rec = store.decoded(it)
        if isinstance(rec, Memory) and _needs(rec):
            yield it, rec


def backfill_all(org_id: str | None = None, bank: str | None = None, *, limit: int | None = None,
                 on_behalf_of: str | None = None, budget_s: float | None = None) -> list[BackfillRun]:
    """One run in each selected bank: ``bank`` of ``org_id``, every bank and namespace of
    ``org_id``, or with neither every bank of every org (a table scan: the schedule and the CLI
    only). Banks fully covered cost a read of their counters and are reported ``covered``. With
    ``budget_s`` (seconds), no bank's run starts once that much time has passed (a Lambda's
    timeout): the banks not reached wait for the next call."""
    deadline = None if budget_s is None else time.monotonic() + budget_s
    if bank is not None:
        if org_id is None:
            raise ValueError("a bank needs its org")
        return [backfill_bank(org_id, bank, limit=limit, on_behalf_of=on_behalf_of)]
    out = []
    for row in store.list_bank_rows(org_id):
        if deadline is not None and time.monotonic() >= deadline:
            break
        if row.org_id == store.CONFIG_ORG or row.name == store.CONFIG_NAME \
                or row.name.startswith(store.TRASH_PREFIX):
            continue
        try:
            out.append(backfill_bank(row.org_id, row.name, limit=limit, on_behalf_of=on_behalf_of))
        except (Damaged, NotFound):
            continue  # a damaged bank is reported where it is read; a bank gone meanwhile has nothing to do
    return out
