"""The date-question set (``bench/dates/README.md``): a bank of one-sentence memories, some
stating the date of a subject's event in one of several forms, others about the same event
stating none; questions asking when (``when``) or naming a date in another form (``date``),
split by subject into ``tune`` and ``eval``. Standard library only."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

DIR = Path(__file__).resolve().parent
SPLITS = ("tune", "eval")
KINDS = ("when", "date")
HOUR_MS = 3_600_000


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    return json.loads((DIR / "set.json").read_text(encoding="utf-8"))


def saved_at(memory: dict[str, Any]) -> int:
    """ms since epoch at which ``memory`` is saved: the set's start plus one hour per ``order``."""
    return int(data()["start"]) + int(memory["order"]) * HOUR_MS


def import_lines() -> list[bytes]:
    """The bank as ``memories.jsonl`` lines, each saved at its time (``saved_at``)."""
    return [json.dumps({"text": m["text"], "entities": [m["subject"].lower()], "created_at": saved_at(m)}).encode()
            for m in data()["memories"]]
