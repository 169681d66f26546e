"""Parsing the extraction model's reply.

The model is asked for a JSON array of ``{text, entities, tags, confidence, kind}``. Models wrap
it in prose or code fences, so the parser takes the first decodable JSON array in the reply
(fenced blocks first). No array at all, or an array that is not valid JSON, raises
``ExtractionParseError``: the job then fails without advancing the cursor and the queue retries.
Items that do not validate (wrong types, empty text) are dropped one by one; the caps of the
job apply after parsing.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from .. import patterns
from ..banks.records import normalize_handles
from ..validation import Model

_FENCE = patterns.compile(rf"(?s)```[A-Za-z0-9_-]*[{patterns.SPACE}]*\n?(.*?)```")
# where an array of objects (or an empty one) can start: decoding at every "[" of "[[[[..." is
# quadratic (each attempt descends to the recursion limit)
_ARRAY_START = patterns.compile(r"\[[ \t\n\r]*[{\]]")


class ExtractionParseError(ValueError):
    """The model's reply holds no valid JSON array. ``code`` = ``invalid_model_output``."""

    code = "invalid_model_output"


class Candidate(Model):
    """One extracted item: a memory (``kind`` = memory) or a standing instruction for the bank's
    ``learned`` rule (``kind`` = rule). ``text`` is one self-contained sentence."""

    model_config = ConfigDict(extra="ignore")
    text: str = Field(min_length=1)
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    confidence: Literal["extracted", "inferred"] = "extracted"
    kind: Literal["memory", "rule"] = "memory"

    @field_validator("text")
    @classmethod
    def _strip(cls, v: str) -> str:
        return " ".join(v.split())

    @field_validator("entities", "tags", mode="before")
    @classmethod
    def _handles(cls, v: Any, info: ValidationInfo) -> list[str]:
        """Scalars as strings, then the API's handle rules, dropping what they refuse."""
        if v is None:
            return []
        if not isinstance(v, list):
            raise ValueError("must be a list")
        values = [str(x) for x in v if isinstance(x, (str, int, float))]
        return normalize_handles(values, info.field_name or "tags", strict=False)

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, v: Any) -> str:
        return v if v in ("extracted", "inferred") else "extracted"

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: Any) -> str:
        return v if v in ("memory", "rule") else "memory"


def _arrays(reply: str):
    """Candidate JSON texts: fenced blocks, then every ``[`` position decoded with raw_decode."""
    for m in _FENCE.finditer(reply):
        yield m.group(1).strip()
    yield reply


def parse_candidates(reply: str) -> list[Candidate]:
    """The candidates in ``reply`` (prose and code fences tolerated).

    Raises ``ExtractionParseError`` when no JSON array decodes. An empty array is valid (the
    turn taught nothing).
    """
    decoder = json.JSONDecoder()
    for text in _arrays(reply or ""):
        first = text.find("[")
        for m in _ARRAY_START.finditer(text):
            try:
                value, _ = decoder.raw_decode(text, m.start())
            except (ValueError, RecursionError):  # a reply nested past the parser's recursion limit
                value = None
            # an empty list counts only as the block's first array: inside a broken array, the
            # ``[]`` of some item's tags must not pass for "nothing learned"
            if isinstance(value, list) and (value or m.start() == first) and all(isinstance(v, dict) for v in value):
                out = []
                for item in value:
                    try:
                        out.append(Candidate.model_validate(item))
                    except ValidationError:
                        continue
                return out
    raise ExtractionParseError("The extraction model's reply holds no valid JSON array.")
