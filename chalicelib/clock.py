"""Wall-clock helpers. Every timestamp Cairn stores is an int of milliseconds since the epoch."""

from __future__ import annotations

import time


def now_ms() -> int:
    """Current time in milliseconds since the Unix epoch (UTC)."""
    return time.time_ns() // 1_000_000
