"""Quotas no wait lifts: live memories per bank and live banks per org (429 ``quota_exceeded``,
``details: {limit, max, used}``, no ``Retry-After``). The limits come from ``limits.effective``.

Only what adds is checked: a write that adds live memories, a bank's creation or restore.
Deletes, forgets, purges, trash and exports are never refused (a tenant can always shrink and
leave); a trash gives its bank back to the org's count.

- Memories per bank: the one write path (``core.store``) sums the bank's live counters over every
  lane in the consistent read it makes just before its commit and refuses a write that would pass
  the limit. Sequential writes stop exactly at it; concurrent writes in different lanes each commit
  on their own lane's condition, so together they may pass it by at most ``lanes - 1`` memories.
- Banks per org: an item ``q#<org>`` / ``banks`` holds ``n``, the org's live named banks
  (internal namespaces and team projections are not counted). The transaction creating or
  restoring a bank adds 1 conditioned on ``n < max``; a trash subtracts 1. A missing item is
  filled once, by counting the org's live banks, in the first transaction that creates one.
"""

from __future__ import annotations

from typing import Any

from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path
from pynamodb.transactions import TransactWrite

from ..errors import QuotaExceeded
from ..storage.tables import UsageModel
from . import limits

BANKS_SK = "banks"
_count = Path(["n"])


def counted(bank: str) -> bool:
    """Whether bank ``bank`` counts towards the org's banks (named banks, not ``!`` namespaces)."""
    return not bank.startswith("!")


def check_memories_needed(org_id: str, bank: str) -> bool:
    """Whether ``bank``'s live memories are bounded (a limit is set; team projections, ``!space/``,
    are bounded by their space's own limits instead)."""
    return not bank.startswith("!space/") and limits.effective(org_id).memories_per_bank > 0


def check_memories(org_id: str, bank: str, used: int, adding: int) -> None:
    """Raise 429 ``quota_exceeded`` (``memories_per_bank``) when ``used`` live memories of ``bank``
    plus ``adding`` would pass the org's limit; nothing when ``adding <= 0`` (a write that does not
    grow the bank) or without a limit."""
    top = limits.effective(org_id).memories_per_bank
    if adding > 0 and top and used + adding > top:
        # a batch (an import) may be refused below the limit: say how many it would add
        why = f"its quota is {top}" if adding == 1 else f"{adding} more would pass its quota of {top}"
        raise QuotaExceeded("memories_per_bank", top, used,
                            f"Bank '{bank}' holds {used} live memories; {why}. Delete or purge memories, or "
                            "ask your operator to raise the limit.")


def _bank_count(org_id: str) -> int | None:
    """``n`` of the org's banks item (consistent), or ``None`` when there is none yet."""
    got = limits.raw_client().get_item(TableName=limits.usage_table(), ConsistentRead=True,
                                        Key={"pk": {"S": f"q#{org_id}"}, "sk": {"S": BANKS_SK}}).get("Item") or {}
    raw: Any = got.get("n", {}).get("N")
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None  # hand-edited: counted afresh


def live_banks(org_id: str) -> int:
    """The org's live named banks counted from the banks table (the backfill; a key query)."""
    from ..core.store import iter_live_bank_rows
    return sum(1 for _ in iter_live_bank_rows(org_id))


def stage_banks(tx: TransactWrite, org_id: str, delta: int) -> None:
    """Stage ``delta`` on the org's bank count into ``tx`` (the one operation on that item in
    the transaction). Growing (creations, restores): conditioned on the count read, so racing
    creators cannot pass the limit together (the loser retries from a fresh read); raises 429
    ``quota_exceeded`` (``banks_per_org``) when the org would pass its limit, and a missing count
    is filled by counting the live banks. Shrinking (trash): never refuses; without a count
    nothing is staged (the first growth counts the live banks)."""
    if delta == 0 or org_id.startswith("_"):  # a system org (the doctor's probe) holds no quota
        return
    n = _bank_count(org_id)
    key = UsageModel(f"q#{org_id}", BANKS_SK)
    if delta < 0:
        if n is not None:
            tx.update(key, actions=[_count.add(delta)], condition=_count.exists())
        return
    top = limits.effective(org_id).banks_per_org
    cond: Condition
    if n is None:
        used = live_banks(org_id)
        cond = _count.does_not_exist()
    else:
        used, cond = n, _count == n
    if top and used + delta > top:
        raise QuotaExceeded("banks_per_org", top, used,
                            f"The org holds {used} live banks; its quota is {top}. Trash a bank, or ask your "
                            "operator to raise the limit.")
    tx.update(key, actions=[_count.set(used + delta)], condition=cond)
