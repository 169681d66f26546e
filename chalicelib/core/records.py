"""The memory record: one type for every surface (DESIGN.md; issue 2, item 7).

A bank memory is ``{id, text, entities[], tags[], confidence, corroboration, pinned, source,
created_at, updated_at, invalid_at?, superseded_by?, revision}`` (times in ms since epoch) whose
id is its content fingerprint. A structured memory (issue 4) is the same record with ``name``,
``description`` and ``type`` set and a UUID id; a team entry's projection (issue 5) carries its
metadata in ``meta``. Stored whole (``MemoryModel.record``), replayed whole
(``RevisionModel.record``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

MAX_ORDER_MS = 10**15 - 1  # ord = (MAX_ORDER_MS - updated_at): newest first when read ascending

Confidence = Literal["stated", "inferred", "extracted"]


class Source(BaseModel):
    """Provenance: the session, team entry or agent that taught the memory."""

    model_config = ConfigDict(extra="forbid")
    session_id: StrictStr | None = Field(None, max_length=256)
    entry_id: StrictStr | None = Field(None, max_length=256)
    agent: StrictStr | None = Field(None, max_length=256)


class Memory(BaseModel):
    """One memory record (the bank worker's ``memories.jsonl`` line)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    text: str
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    confidence: Confidence = "stated"
    corroboration: int = Field(0, ge=0)
    pinned: bool = False
    source: Source = Field(default_factory=Source)
    created_at: int = Field(ge=0)
    updated_at: int = Field(ge=0)
    invalid_at: int | None = Field(None, ge=0)
    superseded_by: str | None = None
    revision: int = Field(0, ge=0)
    purged_at: int | None = Field(None, ge=0)
    # structured memory (issue 4) and team projections (issue 5); None for bank memories
    name: str | None = None
    description: str | None = None
    type: str | None = None
    meta: dict[str, Any] | None = None

    @property
    def live(self) -> bool:
        """True while the memory is neither tombstoned nor superseded."""
        return self.invalid_at is None

    def public(self) -> dict[str, Any]:
        """The JSON shape clients see: optional fields only when set."""
        out = self.model_dump(exclude_none=True)
        out["source"] = self.source.model_dump(exclude_none=True)
        return out

    def order_key(self) -> str:
        """The ``order-index`` sort key: newest ``updated_at`` first, then id ascending."""
        return f"{MAX_ORDER_MS - self.updated_at:015d}#{self.id}"


