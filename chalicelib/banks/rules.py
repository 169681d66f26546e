"""Bank rules: markdown injected whole on every turn (``memory::rule::list`` / ``::set``, and
reading or deleting one rule).

Rules are S3 objects ``<org>/banks/<bank>/rules/<name>.md``; editing them there by hand is
equivalent to the API. The bank row keeps a rule count and a ``rules_version`` that every API
write (and every hand edit's S3 event) bumps, so caches know to reload; the count is derived
from the listing, conditioned on that version (``refresh_rule_count``).
"""

from __future__ import annotations

from typing import TypedDict

from .. import audit as audit_log
from ..core import store
from ..core.store import BankTx, get_bank_row
from ..errors import NotFound
from ..names import check_name
from ..storage import blobs
from ..usage import meter
from .service import require_bank


def rule_key(org_id: str, bank: str, name: str) -> str:
    """S3 key of one rule: ``<org>/banks/<bank>/rules/<name>.md``."""
    return store.rules_prefix(org_id, bank) + f"{name}.md"


class Rule(TypedDict):
    """One rule as listed: its name, its Markdown content and its object's mtime (ms)."""

    name: str
    content: str
    updated_at: int


def _rule(prefix: str, obj: dict) -> Rule | None:
    """The rule a listed object under ``prefix`` holds, or ``None``: not ``<name>.md`` with a valid
    rule name (a hand-written object), or gone since it was listed."""
    fname = obj["Key"][len(prefix):]
    if not fname.endswith(".md"):
        return None
    name = fname[:-3]
    try:
        check_name(name, "rule")
    except Exception:  # noqa: BLE001 - a hand-written object with a bad name is ignored
        return None
    data = blobs.get_bytes(obj["Key"])
    if data is None:
        return None
    return Rule(name=name, content=data.decode("utf-8", errors="replace"),
                updated_at=int(obj["LastModified"].timestamp() * 1000))


def list_rules(org_id: str, bank: str) -> list[Rule]:
    """``[{name, content, updated_at}]`` in name order; ``updated_at`` is the object's mtime, ms.
    Objects whose names are not valid rule names are skipped."""
    require_bank(org_id, bank)
    prefix = store.rules_prefix(org_id, bank)
    out = [r for obj in blobs.list_objects(prefix) if (r := _rule(prefix, obj)) is not None]
    return sorted(out, key=lambda r: r["name"])


def _rule_not_found(bank: str, name: str) -> NotFound:
    return NotFound(f"Rule '{name}' not found in bank '{bank}'.", code="rule_not_found")


def get_rule(org_id: str, bank: str, name: str) -> Rule:
    """Rule ``name`` as ``list_rules`` shows it. Raises 400 ``invalid_name``, 404
    ``bank_not_found`` / ``rule_not_found``."""
    check_name(name, "rule")
    require_bank(org_id, bank)
    prefix, key = store.rules_prefix(org_id, bank), rule_key(org_id, bank, name)
    # listed, not fetched by key: the listing's mtime is the one list_rules shows
    for obj in blobs.list_objects(key):
        if obj["Key"] == key and (rule := _rule(prefix, obj)) is not None:
            return rule
    raise _rule_not_found(bank, name)


def delete_rule(org_id: str, bank: str, name: str, *, actor: str) -> None:
    """Remove rule ``name`` and recount the bank's rules (``refresh_rule_count``). Raises 400
    ``invalid_name``, 404 ``bank_not_found`` / ``rule_not_found`` (nothing written). Audited as
    ``rule.delete`` (target ``<bank>/<rule>``), in the count's transaction."""
    check_name(name, "rule")
    require_bank(org_id, bank)
    key = rule_key(org_id, bank, name)
    old = blobs.get_bytes(key)
    if old is None:
        raise _rule_not_found(bank, name)
    blobs.delete(key)
    refresh_rule_count(org_id, bank, audit=("rule.delete", actor, name), bytes_delta=-len(old))


def set_rule(org_id: str, bank: str, name: str, content: str, *, actor: str | None = None) -> bool:
    """Create or replace rule ``name`` (an S3 PUT is an atomic replace); empty or whitespace
    content removes it. Creates the bank on first use. Returns whether the rule now exists.
    With ``actor`` (a caller of the API), audited as ``rule.set`` (target ``<bank>/<rule>``), in
    the count's transaction."""
    check_name(bank)
    check_name(name, "rule")
    meter.settle()  # the rule's file is written before any transaction: count and rate limit first
    key = rule_key(org_id, bank, name)
    exists = bool(content.strip())
    if get_bank_row(org_id, bank) is None:
        store.write(org_id, lambda btx: btx.create(bank))
    old = len(blobs.get_bytes(key) or b"")
    if exists:
        blobs.put_text(key, content)
    else:
        blobs.delete(key)
    delta = (len(content.encode()) if exists else 0) - old
    refresh_rule_count(org_id, bank, audit=("rule.set", actor, name) if actor is not None else None,
                       bytes_delta=delta)
    return exists


def refresh_rule_count(org_id: str, bank: str, *, audit: tuple[str, str, str] | None = None,
                       bytes_delta: int = 0) -> None:
    """Recount a bank's rule objects and bump its ``rules_version`` (also after hand edits).
    ``audit``: ``(action, actor, rule name)`` of the rule write this count follows, whose audit
    event commits with the count (target ``<bank>/<rule>``); ``bytes_delta``: the change of the
    bank's stored rule bytes (UTF-8), counted as usage ``bytes_rules`` in the same transaction.

    The count is written conditioned on the ``rules_version`` read before listing, and retried
    when another writer moved it: the last count to land was listed after every earlier rule
    write had landed, so concurrent writers never leave a stale count (the last writer cannot
    overwrite a newer listing with its older one)."""
    prefix = store.rules_prefix(org_id, bank)

    def attempt(btx: BankTx) -> None:
        if audit is not None:
            action, actor, rule = audit
            audit_log.add_to(btx.tx, org_id, action, actor, f"{bank}/{rule}", {"bank": bank})
        row = btx.row(bank)
        if row is None:
            return  # the bank was trashed meanwhile: nothing to count
        btx.set_rule_count(row, sum(1 for o in blobs.list_objects(prefix) if o["Key"].endswith(".md")))
        meter.note(bank, bytes_rules=bytes_delta)

    store.write(org_id, attempt)
