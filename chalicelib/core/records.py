"""The memory record: one type for every surface.

A bank memory is ``{id, text, entities[], tags[], confidence, corroboration, pinned, source,
created_at, updated_at, invalid_at?, superseded_by?, revision, dates?}`` (times in ms since epoch)
whose id is its content fingerprint; ``dates`` are the dates its text states (``core.dates``). A
structured memory is the same record with ``name``, ``description`` and ``type`` set and a UUID id;
a team entry's projection carries its metadata in ``meta``. Stored whole (``MemoryModel.record``), replayed whole
(``RevisionModel.record``). ``decode_memory`` is the one decoder of a stored record (a record it
rejects is damaged: lists skip it, recall never indexes it); ``salvage_memory`` is what a write
that replaces a damaged record starts from.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict, cast

from pydantic import ConfigDict, Field, PrivateAttr, StrictStr, ValidationError

from ..storage.damage import MAX_SAFE_INT, MAX_TIME_MS, Damaged, clean, problem
from ..validation import Model

MAX_ORDER_MS = 10**15 - 1  # ord = (MAX_ORDER_MS - updated_at): newest first when read ascending
MAX_DATES = 8  # stated dates kept per memory

Confidence = Literal["stated", "inferred", "extracted"]


class Source(Model):
    """Provenance: the session, team entry or agent that taught the memory."""

    model_config = ConfigDict(extra="forbid")
    session_id: StrictStr | None = Field(None, max_length=256)
    entry_id: StrictStr | None = Field(None, max_length=256)
    agent: StrictStr | None = Field(None, max_length=256)


class SourceJSON(TypedDict, total=False):
    """A ``Source`` as clients see it: only the fields that are set."""

    session_id: str
    entry_id: str
    agent: str


class StatedDate(Model):
    """A date a memory's text states (``core.dates``): the expression as written (``text``,
    whitespace collapsed, at most 64 characters) and the range it names, ``[start, end)`` in ms
    since epoch (UTC), resolved against when the memory was said."""

    model_config = ConfigDict(extra="forbid")
    text: StrictStr = Field(max_length=64)
    start: int = Field(ge=0, le=MAX_TIME_MS)
    end: int = Field(ge=0, le=MAX_TIME_MS + 1)


class StatedDateJSON(TypedDict):
    """A ``StatedDate`` as clients see it."""

    text: str
    start: int
    end: int


class MemoryJSON(TypedDict, total=False):
    """A ``Memory`` as clients see it (``Memory.public``): optional fields only when set."""

    id: str
    text: str
    entities: list[str]
    tags: list[str]
    confidence: Confidence
    corroboration: int
    pinned: bool
    source: SourceJSON
    created_at: int
    updated_at: int
    invalid_at: int
    superseded_by: str
    conflicts_with: list[str]
    observed_at: int
    revision: int
    purged_at: int
    dates: list[StatedDateJSON]
    name: str
    description: str
    type: str
    meta: dict[str, Any]


class Memory(Model):
    """One memory record (the bank worker's ``memories.jsonl`` line)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    text: str
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    confidence: Confidence = "stated"
    corroboration: int = Field(0, ge=0, le=MAX_SAFE_INT)
    pinned: bool = False
    source: Source = Field(default_factory=Source)
    created_at: int = Field(ge=0, le=MAX_TIME_MS)
    updated_at: int = Field(ge=0, le=MAX_TIME_MS)
    invalid_at: int | None = Field(None, ge=0, le=MAX_TIME_MS)
    superseded_by: str | None = None
    # live memories this one was detected to contradict (``banks.conflicts``), both sides linked
    conflicts_with: list[str] | None = Field(None, max_length=64)
    # when the statement was made (ms), given by its writer (an import line, extraction); None: when saved
    observed_at: int | None = Field(None, ge=0, le=MAX_TIME_MS)
    revision: int = Field(0, ge=0, le=MAX_SAFE_INT)
    purged_at: int | None = Field(None, ge=0, le=MAX_TIME_MS)
    # set by every write of a bank memory (``core.dates.attach``); None: states none, or written before
    dates: list[StatedDate] | None = Field(None, max_length=MAX_DATES)
    # structured memory and team projections; None for bank memories
    name: str | None = None
    description: str | None = None
    type: str | None = None
    meta: dict[str, Any] | None = None
    # the stored sentence vector (``core.vectors``): private, so no dump, export or response holds it
    _vector: bytes | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        # records are equal by their fields: the vector is derived from them (``core.vectors``)
        return isinstance(other, Memory) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, as every pydantic model

    def vector_blob(self) -> bytes | None:
        """The stored vector this record was read or staged with (``core.vectors``), or ``None``."""
        return self._vector

    def set_vector_blob(self, blob: bytes | None) -> None:
        """Carry ``blob`` (``core.vectors.encode``) with this record, or none."""
        self._vector = blob

    @property
    def live(self) -> bool:
        """True while the memory is neither tombstoned nor superseded."""
        return self.invalid_at is None

    def public(self) -> MemoryJSON:
        """The JSON shape clients see: optional fields only when set."""
        out = self.model_dump(exclude_none=True)
        out["source"] = self.source.model_dump(exclude_none=True)
        return cast("MemoryJSON", out)  # the dump holds exactly the model's fields, as MemoryJSON names them

    def order_key(self) -> str:
        """The ``order-index`` sort key: newest ``updated_at`` first, then id ascending."""
        return f"{MAX_ORDER_MS - self.updated_at:015d}#{self.id}"


def stated_at(rec: Memory) -> int:
    """When ``rec`` was last said (ms since epoch): the ``observed_at`` its writer gave, else its
    ``created_at``, or its last reinforcement (``updated_at`` of a memory saved again,
    ``corroboration`` > 0). Never a date its text mentions (that is the event's date)."""
    if rec.observed_at is not None:
        return rec.observed_at
    return max(rec.created_at, rec.updated_at) if rec.corroboration > 0 else rec.created_at


def validation_reason(exc: ValidationError) -> str:
    """``"<field>: <error type>"`` of a validation error's first problem (never the value)."""
    errs = exc.errors(include_input=False, include_url=False)
    if not errs:
        return "invalid"
    loc = ".".join(str(p) for p in errs[0].get("loc", ())) or "record"
    return f"{clean(loc)}: {errs[0].get('type', 'invalid')}"


def decode_memory(raw: Any, *, key: str | None = None, kind: str = "memory", hint: str = "",
                  scrubbed: bool = False) -> Memory:
    """The one decoder of a stored memory record (current or revision, DynamoDB or an index's
    stored field): ``raw`` (the parsed JSON) validated as a ``Memory`` that every client can take
    and the index can hold. ``key``: the id the record is stored under (it must match).

    Raises ``Damaged`` (409 ``damaged``; ``kind``, ``hint`` in its message) for anything else:
    not an object, a value ``damage.problem`` rejects (lone surrogate, non-finite number, integer
    beyond +-(2^53 - 1)), a missing or ill-typed field, a time beyond ``MAX_TIME_MS``, an id that is
    not its key. ``scrubbed``: ``raw`` is an attribute the table layer already checked for those
    values (and found none), so the walk is not repeated."""
    label = key if key is not None else (raw.get("id") if isinstance(raw, dict) else None)
    if not isinstance(raw, dict):
        raise Damaged(kind, label, "record: not a JSON object", hint=hint)
    reason = None if scrubbed else problem(raw)
    if reason is not None:
        raise Damaged(kind, label, reason, hint=hint)
    try:
        rec = Memory.model_validate(raw)
    except ValidationError as exc:
        raise Damaged(kind, label, validation_reason(exc), hint=hint) from None
    if key is not None and rec.id != key:
        raise Damaged(kind, label, "id: does not match its key", hint=hint)
    return rec


def salvage_memory(raw: Any, *, key: str, now: int) -> Memory:
    """A valid record made from whatever of a damaged ``raw`` record still validates, for the
    writes that repair one (tombstone, purge, a save or import of it): strings scrubbed
    (``damage.clean``), each field that still fails (out of range included) dropped to its
    default, ``meta`` clamped, ``id`` = ``key``, ``text`` ``""`` and both times ``now`` when
    missing. Never raises."""
    data = clean(raw) if isinstance(raw, dict) else {}
    data = {k: v for k, v in data.items() if k in Memory.model_fields}
    if "meta" in data:
        data["meta"] = clean(data["meta"], clamp=True)
    data["id"] = key
    required = {"text": "", "created_at": now, "updated_at": now}
    for _ in range(len(Memory.model_fields) + 1):
        for k, v in required.items():
            data.setdefault(k, v)
        try:
            return Memory.model_validate(data)
        except ValidationError as exc:
            for e in exc.errors(include_input=False, include_url=False):
                if e.get("loc"):
                    data.pop(e["loc"][0], None)
    return Memory(id=key, text="", created_at=now, updated_at=now)


class RelatedMemory(Model):
    """A live memory a write found to say the same (``duplicate``) or to contradict it
    (``conflict``): its ``id``, ``score`` (sentence similarity, in [-1, 1]), ``why`` (a sentence
    for a person) and ``text`` (left out for a caller that may not read the bank); ``action``:
    what the write did about it (``linked``, ``superseded``, ``none``)."""

    id: str
    relation: Literal["duplicate", "conflict"]
    score: float
    why: str
    text: str | None = None
    action: Literal["linked", "superseded", "none"] = "none"


class SaveResult(Model):
    """What a save did: ``created`` (a new, resurrected or repaired memory, else a
    reinforcement), the memory as saved (``None`` only when an idempotent replay finds its bank's
    records gone), the tags beyond the cap that a reinforcement could not merge and whether the save
    created its bank (``bank_created``: a bank is created on first use)."""

    created: bool
    memory: Memory | None
    tags_dropped: list[str] = Field(default_factory=list)
    bank_created: bool = False
    related: list[RelatedMemory] = Field(default_factory=list)
    related_checked: bool = True
