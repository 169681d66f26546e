"""The limits in force for an org: the ``Settings`` defaults, overridden per org.

``effective(org_id)`` is the one place every check reads a limit from. A value of 0 means no limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import Settings, get_settings


@dataclass(frozen=True)
class Limits:
    """Limits of one org. Rates are per token; quotas per bank (memories), per org (banks) or per
    org and UTC day (extraction model tokens). 0 = no limit."""

    requests_per_minute: int
    burst: int
    as_of_cost: int
    memories_per_bank: int
    banks_per_org: int
    extraction_tokens_per_day: int


def defaults(settings: Settings | None = None) -> Limits:
    """The limits of an org without overrides, from ``Settings`` (``CAIRN_RATE_*``, ``CAIRN_QUOTA_*``)."""
    s = settings or get_settings()
    return Limits(requests_per_minute=s.rate_requests_per_minute, burst=s.rate_burst, as_of_cost=s.rate_as_of_cost,
                  memories_per_bank=s.quota_memories_per_bank, banks_per_org=s.quota_banks_per_org,
                  extraction_tokens_per_day=s.quota_extraction_tokens_per_day)


def effective(org_id: str) -> Limits:
    """The limits in force for ``org_id``."""
    return defaults()
