"""The hook surface of extraction: request bodies and the one service call
each route makes. Domain code: no Chalice."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field, StrictBool

from ..auth.principal import Principal
from ..banks.records import MAX_SESSION_ID
from ..names import check_name
from ..validation import Line, Model
from . import job as jobs

MAX_HOOK_MESSAGES = 10000
OBSERVED_SESSION = "observe"
"""The session of an observed exchange sent without a ``session_id``."""


class TurnCompletedRequest(Model):
    """Body of ``POST /v1/hooks/turn-completed``: the session's messages (``{role, content,
    id?}``; content a string or text parts) and ``metadata.memory_bank`` choosing the bank."""

    model_config = ConfigDict(extra="forbid")
    session_id: Line = Field(min_length=1, max_length=MAX_SESSION_ID)
    turn_id: Line = Field(min_length=1, max_length=MAX_SESSION_ID)
    status: Line | None = Field(None, max_length=64)
    messages: list[Any] = Field(max_length=MAX_HOOK_MESSAGES)
    metadata: dict[str, Any] | None = None
    exchange: StrictBool = False
    """True: ``messages`` hold only the finished exchange, not the session so far, so the session's
    cursor does not skip them (``memory_observe`` and the client's ``memories.observe`` send it)."""


class SessionDeletedRequest(Model):
    """Body of ``POST /v1/hooks/session-deleted``."""

    model_config = ConfigDict(extra="forbid")
    session_id: Line = Field(min_length=1, max_length=MAX_SESSION_ID)


class ForgetSessionRequest(Model):
    """Body of ``POST /v1/banks/{bank}/forget-session``: ``purge`` erases instead of retiring."""

    model_config = ConfigDict(extra="forbid", strict=True)
    session_id: Line = Field(min_length=1, max_length=MAX_SESSION_ID)
    purge: StrictBool = False


def observed_ids(messages: list[Any], session_id: str | None, turn_id: str | None) -> tuple[str, str]:
    """``(session_id, turn_id)`` of an observed exchange: the ones given, else ``OBSERVED_SESSION``
    and ``obs-`` + the first 32 hex digits of the SHA-256 of the messages' canonical JSON (sorted
    keys, no spaces, UTF-8), so the same exchange sent twice is extracted once."""
    if turn_id is None:
        canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        turn_id = "obs-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]
    return session_id or OBSERVED_SESSION, turn_id


def hook_bank(metadata: dict[str, Any] | None) -> str:
    """The bank a hook targets: ``metadata.memory_bank``, else the tuning's ``default_bank``.
    Raises 400 ``invalid_name`` for a bad name."""
    bank = (metadata or {}).get("memory_bank")
    if bank is None:
        bank = jobs.tuning().default_bank
    return check_name(bank)


@dataclass(frozen=True)
class Submitted:
    """A turn hook's answer: ``accepted`` (``False`` with a ``reason`` when extraction is
    disabled), the bank, session and turn, and, once accepted, how the job ran (``jobs.Enqueued``)."""

    accepted: bool
    bank: str
    session_id: str
    turn_id: str
    reason: str | None = None
    run: jobs.Enqueued | None = None


def submit_turn(principal: Principal, req: TurnCompletedRequest) -> Submitted:
    """Enqueue (or, without a queue, run) the turn's extraction job. Raises 400
    ``invalid_name`` / 403 ``forbidden`` (bank not allowed) before anything is written."""
    bank = hook_bank(req.metadata)
    principal.require_bank(bank)
    tune = jobs.tuning()
    if not tune.extraction_enabled:
        return Submitted(False, bank, req.session_id, req.turn_id, reason="extraction_disabled")
    job = jobs.make_job(principal.org_id, bank, req.session_id, req.turn_id, req.messages, actor=principal.actor,
                        status=req.status, window_size=tune.extraction_window, token_id=principal.token_id,
                        exchange=req.exchange)
    return Submitted(True, bank, req.session_id, req.turn_id, run=jobs.enqueue(job))


def session_deleted(principal: Principal, req: SessionDeletedRequest) -> bool:
    """Drop the session's extraction cursor: False when there was none."""
    return jobs.drop_cursor(principal.org_id, req.session_id, actor=principal.actor)


def forget_session(principal: Principal, bank: str, req: ForgetSessionRequest) -> jobs.Forgotten:
    """Retire or purge what the session taught in ``bank`` (see ``job.forget_session``)."""
    check_name(bank)
    principal.require_bank(bank)
    return jobs.forget_session(principal.org_id, bank, req.session_id, purge=req.purge, actor=principal.actor)
