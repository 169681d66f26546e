"""What recall and injection read of a bank's settings: its match threshold, whether the hook
pads with the ambient floor and how the bank is fed (the injected section's wording). One
accessor over the bank row the turn already read (no read of its own), falling back to the
``[memory]`` tuning's defaults (``match_threshold``, ``ambient_floor``) for a bank that sets neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.store import BankHead, BankRow
from ..tuning import MemoryTuning
from .records import BankSettings, Feed


@dataclass(frozen=True)
class RecallSettings:
    """``match_threshold``: in [0, 1], hits under it are not returned (0: every hit is);
    ``ambient_floor``: the hook pads fewer than 3 matches with the bank's top memories;
    ``feed``: ``BankSettings.feed`` (``None``: not stated)."""

    match_threshold: float
    ambient_floor: bool
    feed: Feed | None = None


def recall_settings(head: BankHead | None, tuning: MemoryTuning) -> RecallSettings:
    """The settings of the bank ``head`` (as the turn's one consistent read found it; ``None``
    for a missing bank): each field the bank sets (``BankSettings``), else the tuning's default."""
    s, d = settings_of(head.row if head is not None else None), defaults(tuning)
    return RecallSettings(d.match_threshold if s.match_threshold is None else s.match_threshold,
                          d.ambient_floor if s.ambient_floor is None else s.ambient_floor, s.feed)


def defaults(tuning: MemoryTuning) -> RecallSettings:
    """What a bank's settings left ``null`` stand for: the tuning's ``match_threshold`` and
    ``ambient_floor`` (``feed``: not stated)."""
    return RecallSettings(tuning.match_threshold, tuning.ambient_floor)


def settings_of(row: BankRow | None) -> BankSettings:
    """The bank ``row``'s settings (``BankSettings``); the defaults for a bank that never set
    any, for no bank (``None``: created on first use) and for a stored value that does not
    validate (hand-edited: a save never fails on it)."""
    raw = row.settings if row is not None else None
    if not raw:
        return BankSettings()
    try:
        return BankSettings.model_validate_json(raw)
    except ValueError:
        return BankSettings()
