"""Request bodies of the bank routes and the rules that shape a memory's fields.

A record is ``{id, text, entities[], tags[], confidence, corroboration, pinned, source,
created_at, updated_at, invalid_at?, superseded_by?, revision}``; times are ms since epoch.
It is stored whole (``MemoryModel.record``) and replayed whole (``RevisionModel.record``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from .. import validation
from ..core.records import (  # noqa: F401 - re-exported
    MAX_ORDER_MS,
    Confidence,
    Memory,
    Source,
)
from ..errors import BadRequest
from ..names import NAME_RE
from ..validation import MAX_TIME_MS, Line, Model, Text

MAX_HANDLES = 8
MAX_HANDLE_CHARS = 64
MAX_SESSION_ID = 256  # characters of a session id (hooks, provenance, ``source.session_id``)
MAX_SUPERSEDES = 10  # memories one save may retire (each adds its record, revision and audit event)
MIN_TEXT_BYTES = 3
MAX_TEXT_BYTES = 2000
OBSERVED_SKEW_MS = 5 * 60 * 1000  # how far ahead of ours the clock of a writer giving observed_at may run

Feed = Literal["hooks", "tools", "both"]  # how a bank gets its memories (``BankSettings.feed``)


def check_text(text: str, field: str = "text") -> str:
    """Trim ``text`` and require body text (``validation.check_text``: no control character but
    TAB, LF and CR) of 3..2000 UTF-8 bytes; else 400 ``validation_error`` naming ``field``."""
    stripped = validation.check_text(text, field).strip()
    n = len(stripped.encode("utf-8"))
    if n < MIN_TEXT_BYTES or n > MAX_TEXT_BYTES:
        raise BadRequest(f"{field} must be {MIN_TEXT_BYTES} to {MAX_TEXT_BYTES} UTF-8 bytes after trimming (got {n}).",
                         details={"field": field, "bytes": n})
    return stripped


def check_observed_at(value: int | None, now: int, field: str = "observed_at") -> int | None:
    """``value`` (ms since epoch: when the statement was made) unless it is later than ``now``
    (ms) by more than ``OBSERVED_SKEW_MS``: then 400 ``validation_error`` naming ``field``."""
    if value is not None and value > now + OBSERVED_SKEW_MS:
        raise BadRequest(f"{field} is in the future: it is when the statement was made (ms since epoch), "
                         f"at most {OBSERVED_SKEW_MS // 60000} minutes ahead of the server's clock.",
                         details={"field": field, "value": value, "now": now})
    return value


def normalize_handles(values: list[str] | None, field: str, *, strict: bool = True) -> list[str]:
    """Entities or tags: trimmed, lower-cased, empties dropped, deduplicated in order.

    More than 8 handles, one over 64 characters or one that is not a single line
    (``validation.check_line``) is 400 ``validation_error`` naming ``field`` (never a silent cut).
    With ``strict=False`` (handles an extractor produced) what the strict rules refuse is dropped
    instead and the list cut to 8: never an error.
    """
    out: list[str] = []
    for i, raw in enumerate(values or []):
        if strict:
            validation.check_line(raw, f"{field}.{i}")
        elif validation.line_problem(raw) is not None:
            continue
        v = raw.strip().lower()
        if not v or v in out:
            continue
        if len(v) > MAX_HANDLE_CHARS and not strict:
            continue
        if len(v) > MAX_HANDLE_CHARS:
            raise BadRequest(f"Each of {field} must be at most {MAX_HANDLE_CHARS} characters.",
                             details={"field": field, "value_chars": len(v)})
        out.append(v)
    if len(out) > MAX_HANDLES and strict:
        raise BadRequest(f"At most {MAX_HANDLES} {field} are allowed (got {len(out)}).",
                         details={"field": field, "count": len(out)})
    return out[:MAX_HANDLES]


class SaveRequest(Model):
    """Body of ``POST /v1/banks/{bank}/memories``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    text: StrictStr
    entities: list[StrictStr] | None = Field(None, max_length=64)
    tags: list[StrictStr] | None = Field(None, max_length=64)
    pinned: StrictBool | None = None
    session_id: Line | None = Field(None, min_length=1, max_length=MAX_SESSION_ID)
    supersedes: list[Annotated[Line, Field(min_length=1, max_length=64)]] | None = Field(
        None, max_length=MAX_SUPERSEDES, description="Ids of memories this one replaces: each is retired "
        "(superseded_by this memory) in the same transaction as the save, or nothing is written.")
    revive: StrictBool | None = Field(
        None, description="Bring back the retired (forgotten or superseded) memory with this text; "
        "without it such a save is 409 memory_retired and writes nothing.")
    observed_at: StrictInt | None = Field(
        None, ge=0, le=MAX_TIME_MS, description="When the statement was made (ms since epoch), when it was "
        "not just now (a transcript, a note from earlier): between two conflicting memories the later "
        "statement ranks first. At most 5 minutes ahead of the server's clock.")


class UpdateRequest(Model):
    """Body of ``PATCH /v1/banks/{bank}/memories/{id}``: only the fields given change."""

    model_config = ConfigDict(extra="forbid", strict=True)
    text: StrictStr | None = None
    entities: list[StrictStr] | None = Field(None, max_length=64)
    tags: list[StrictStr] | None = Field(None, max_length=64)
    pinned: StrictBool | None = None


class PinRequest(Model):
    """Body of ``POST .../{id}/pin``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    pinned: StrictBool


class SupersedeRequest(Model):
    """Body of ``POST .../{id}/supersede``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    superseded_by: Line = Field(min_length=1, max_length=64)


class BankRequest(Model):
    """Body of ``POST /v1/banks``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    # the pattern is checked by ``check_name`` (400 ``invalid_name``); here it is only documented
    name: StrictStr = Field(json_schema_extra={"pattern": f"^{NAME_RE.pattern}$"})
    description: Text = Field("", max_length=1000)


class BankSettings(Model):
    """A bank's settings (``PATCH /v1/banks/{bank}`` ``settings``; every field has a default).

    ``on_conflict``: what a save does when it detects that a live memory states the same thing
    about the same subject with another value: ``flag`` keeps both and links them
    (``conflicts_with``), ``supersede`` retires the older one (never a pinned one).
    ``match_threshold``: the lowest ``match`` a recall, preview or hook hit may have (0..1; 0:
    every hit); ``null``: the service's default (the ``[memory]`` tuning's ``match_threshold``).
    ``ambient_floor``: whether the hook pads fewer than 3 matches with the bank's top pinned and
    corroborated memories (marked ambient); ``null``: the tuning's default.
    ``feed``: how the bank gets its memories, which the injected system-prompt section tells the
    model: ``hooks`` (the host hands every finished turn to the turn-completed hook: saved
    automatically), ``tools`` (only the model's own ``memory_save``/``memory_observe`` calls),
    ``both``; ``null``: not stated, and the section says what is true either way."""

    model_config = ConfigDict(extra="forbid", strict=True)
    on_conflict: Literal["flag", "supersede"] = "flag"
    match_threshold: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    ambient_floor: bool | None = None
    feed: Feed | None = None


class BankPatch(Model):
    """Body of ``PATCH /v1/banks/{bank}``: the new ``description`` (body text, up to 1000
    characters; ``""`` clears it) and/or ``settings`` (the fields given replace theirs; the
    others stay)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    description: Text | None = Field(None, max_length=1000)
    settings: BankSettings | None = None


class RestoreRequest(Model):
    """Body of ``POST /v1/banks/{bank}/restore``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    trashed_to: Line = Field(min_length=1, max_length=200)


MAX_RULE_BYTES = 65536


def _rule_bytes(content: str) -> str:
    if len(content.encode("utf-8")) > MAX_RULE_BYTES:
        raise ValueError(f"a rule is at most {MAX_RULE_BYTES} UTF-8 bytes")
    return content


class RuleRequest(Model):
    """Body of ``PUT /v1/banks/{bank}/rules/{name}``: up to 64 KiB (65,536 UTF-8 bytes) of markdown."""

    model_config = ConfigDict(extra="forbid", strict=True)
    content: Annotated[Text, AfterValidator(_rule_bytes)] = Field(
        max_length=MAX_RULE_BYTES, description="Markdown, at most 65,536 UTF-8 bytes.")


__all__ = [
    "MAX_SESSION_ID",
    "BankPatch",
    "BankRequest",
    "BankSettings",
    "Feed",
    "Memory",
    "PinRequest",
    "RestoreRequest",
    "RuleRequest",
    "SaveRequest",
    "Source",
    "StrictInt",
    "SupersedeRequest",
    "UpdateRequest",
    "check_text",
    "normalize_handles",
]
