"""Per-container cache of each bank's rules.

Rules live in S3 (``chalicelib.banks.rules``); every API write and every S3 event bumps the bank
row's ``rules_version``. The cache keys a bank's rules by ``(incarnation, rules_version)`` taken
from a bank row the caller has already read, plus the global and the org's config versions (a
reload in any container, ``chalicelib.inject.reload``), so a warm turn makes no S3 call.
``drop()`` empties it, ``drop(org_id)`` forgets one org's rules.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..banks.rules import list_rules
from ..tuning import config_version, org_config_version
from .render import Rule

if TYPE_CHECKING:
    from ..search.index import BankRow

_lock = threading.Lock()
# (org_id, bank) -> ((incarnation, rules_version, config version, org config version), rules)
_cache: dict[tuple[str, str], tuple[tuple[str, int, int, int], list[Rule]]] = {}


def get_rules(org_id: str, bank: str, row: BankRow) -> list[Rule]:
    """The rules of ``bank`` as ``[{name, content, updated_at}]`` in name order, from the cache
    when ``row`` (the bank row just read) carries the cached ``(incarnation, rules_version)`` and
    the config versions are unchanged, else from S3 (``list_rules``). Raises what ``list_rules``
    raises (404 ``bank_not_found``)."""
    version = (row.incarnation, int(row.rules_version or 0), config_version(), org_config_version(org_id))
    with _lock:
        hit = _cache.get((org_id, bank))
    if hit is not None and hit[0] == version:
        return hit[1]
    rules = [Rule(name=r["name"], content=r["content"], updated_at=r["updated_at"]) for r in list_rules(org_id, bank)]
    with _lock:
        _cache[(org_id, bank)] = (version, rules)
    return rules


def drop(org_id: str | None = None, bank: str | None = None) -> None:
    """Forget one bank's cached rules, every bank's of ``org_id`` (no ``bank``), or (no
    arguments) every bank's."""
    with _lock:
        if org_id is None:
            _cache.clear()
        elif bank is None:
            for key in [k for k in _cache if k[0] == org_id]:
                del _cache[key]
        else:
            _cache.pop((org_id, bank), None)
