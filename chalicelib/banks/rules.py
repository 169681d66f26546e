"""Bank rules: markdown injected whole on every turn (``memory::rule::list`` / ``::set``).

Rules are S3 objects ``<org>/banks/<bank>/rules/<name>.md``; editing them there by hand is
equivalent to the API. The bank row keeps a rule count and a ``rules_version`` that every API
write (and every hand edit's S3 event) bumps, so caches know to reload; the count is derived
from the listing, conditioned on that version (``refresh_rule_count``).
"""

from __future__ import annotations

from typing import TypedDict

from ..core import store
from ..core.store import BankTx, get_bank_row
from ..names import check_name
from ..storage import blobs
from .service import require_bank


def rule_key(org_id: str, bank: str, name: str) -> str:
    """S3 key of one rule: ``<org>/banks/<bank>/rules/<name>.md``."""
    return store.rules_prefix(org_id, bank) + f"{name}.md"


class Rule(TypedDict):
    """One rule as listed: its name, its Markdown content and its object's mtime (ms)."""

    name: str
    content: str
    updated_at: int


def list_rules(org_id: str, bank: str) -> list[Rule]:
    """``[{name, content, updated_at}]`` in name order; ``updated_at`` is the object's mtime, ms.
    Objects whose names are not valid rule names are skipped."""
    require_bank(org_id, bank)
    prefix = store.rules_prefix(org_id, bank)
    out: list[Rule] = []
    for obj in blobs.list_objects(prefix):
        fname = obj["Key"][len(prefix):]
        if not fname.endswith(".md"):
            continue
        name = fname[:-3]
        try:
            check_name(name, "rule")
        except Exception:  # noqa: BLE001 - a hand-written object with a bad name is ignored
            continue
        data = blobs.get_bytes(obj["Key"])
        if data is None:
            continue
        out.append(Rule(name=name, content=data.decode("utf-8", errors="replace"),
                        updated_at=int(obj["LastModified"].timestamp() * 1000)))
    return sorted(out, key=lambda r: r["name"])


def set_rule(org_id: str, bank: str, name: str, content: str) -> bool:
    """Create or replace rule ``name`` (an S3 PUT is an atomic replace); empty or whitespace
    content removes it. Creates the bank on first use. Returns whether the rule now exists."""
    check_name(bank)
    check_name(name, "rule")
    key = rule_key(org_id, bank, name)
    exists = bool(content.strip())
    if get_bank_row(org_id, bank) is None:
        store.write(org_id, lambda btx: btx.create(bank))
    if exists:
        blobs.put_text(key, content)
    else:
        blobs.delete(key)
    refresh_rule_count(org_id, bank)
    return exists


def refresh_rule_count(org_id: str, bank: str) -> None:
    """Recount a bank's rule objects and bump its ``rules_version`` (also after hand edits).

    The count is written conditioned on the ``rules_version`` read before listing, and retried
    when another writer moved it: the last count to land was listed after every earlier rule
    write had landed, so concurrent writers never leave a stale count (the last writer cannot
    overwrite a newer listing with its older one)."""
    prefix = store.rules_prefix(org_id, bank)

    def attempt(btx: BankTx) -> None:
        row = btx.row(bank)
        if row is None:
            return  # the bank was trashed meanwhile: nothing to count
        btx.set_rule_count(row, sum(1 for o in blobs.list_objects(prefix) if o["Key"].endswith(".md")))

    store.write(org_id, attempt)
