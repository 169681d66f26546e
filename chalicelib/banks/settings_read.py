"""What recall and injection read of a bank's settings: its match threshold and whether the hook
pads with the ambient floor. One accessor over the bank row the turn already read (no read of
its own), falling back to the ``[memory]`` tuning's defaults (``match_threshold``,
``ambient_floor``) for a bank that sets neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.store import BankHead
from ..tuning import MemoryTuning


@dataclass(frozen=True)
class RecallSettings:
    """``match_threshold``: in [0, 1], hits under it are not returned (0: every hit is);
    ``ambient_floor``: the hook pads fewer than 3 matches with the bank's top memories."""

    match_threshold: float
    ambient_floor: bool


def recall_settings(head: BankHead | None, tuning: MemoryTuning) -> RecallSettings:
    """The settings of the bank ``head`` (as the turn's one consistent read found it; ``None``
    for a missing bank): today every bank has the tuning's defaults."""
    return RecallSettings(tuning.match_threshold, tuning.ambient_floor)
