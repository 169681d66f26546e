"""Storage of extraction state in the ``extraction`` table, one partition per session
(``<org_id>#<session_id>``), typed sort keys:

- ``cursor``: how far the session's transcript was extracted (``position`` messages, the
  ``last_message_id``, the recent ``turns`` applied);
- ``job#<turn_id>``: what an unfinished job already applied (expires by TTL): keyed digests of
  the items' fingerprints (``digests.keyed``), never the fingerprints, which are memory ids;
- ``mem#<bank>#<memory_id>``: provenance, a memory the session taught;
- ``parked#<total:010d>#<enqueued_at:013d>#<turn_id>``: a job deferred past the org's daily
  extraction quota (its JSON), in the session's turn order, until it runs again.

The only extraction module that knows the table and its keys."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pynamodb.exceptions import DoesNotExist, PutError
from pynamodb.expressions.condition import Condition

from ..clock import now_ms
from ..digests import keyed, keyed_if_any
from ..storage.tables import ExtractionModel, bind

JOB_ROW_TTL_S = 14 * 24 * 3600  # a job# row outlives the queue's retention (4 days) and its DLQ's (14)


def session_key(org_id: str, session_id: str) -> str:
    """The extraction table's hash key of one session."""
    return f"{org_id}#{session_id}"


@dataclass(frozen=True)
class Cursor:
    """A session's cursor as read: ``position`` (``None`` when unset or damaged), the last
    message id, the recent turn ids (newest last) and ``updated_at`` as stored (the value a
    write conditions on; not a number when damaged)."""

    position: int | None
    last_message_id: str | None
    turns: list[str]
    updated_at: object


def get_cursor(org_id: str, session_id: str) -> Cursor | None:
    """The session's cursor (consistent read), or ``None``."""
    bind()
    try:
        row = ExtractionModel.get(session_key(org_id, session_id), "cursor", consistent_read=True)
    except DoesNotExist:
        return None
    pos = row.position
    return Cursor(int(pos) if isinstance(pos, (int, float)) else None, row.last_message_id,
                  [str(t) for t in row.turns or []], row.updated_at)


def save_cursor(org_id: str, session_id: str, read: Cursor | None, *, position: int, last_message_id: str | None,
                turns: list[str]) -> bool:
    """Replace the cursor, conditioned on it being as ``read`` (absent when ``None``; a damaged
    cursor is overwritten): False when a concurrent write moved it first."""
    row = ExtractionModel(session_key=session_key(org_id, session_id), sk="cursor", org_id=org_id,
                          session_id=session_id, position=position, last_message_id=last_message_id, turns=turns,
                          updated_at=now_ms())
    cond: Condition
    if read is None:
        cond = ExtractionModel.sk.does_not_exist()
    elif isinstance(read.updated_at, (int, float)):
        cond = ExtractionModel.updated_at == read.updated_at
    else:
        cond = ExtractionModel.sk.exists()
    try:
        row.save(condition=cond)
    except PutError:
        return False
    return True


def drop_cursor(org_id: str, session_id: str) -> bool:
    """Delete the session's cursor: False when there was none."""
    if get_cursor(org_id, session_id) is None:
        return False
    ExtractionModel(session_key=session_key(org_id, session_id), sk="cursor").delete()
    return True


@dataclass
class Progress:
    """What an unfinished job of turn ``turn_id`` already applied: ``applied`` holds keyed digests
    of fingerprints (and, in rows written before, fingerprints); ask ``done``."""

    org_id: str
    session_id: str
    turn_id: str
    applied: set[str] = field(default_factory=set)
    expires_at: int = 0


def _job_sk(turn_id: str) -> str:
    return f"job#{turn_id}"


def get_progress(org_id: str, session_id: str, turn_id: str) -> Progress:
    """The job's progress row, or an empty one (not stored until ``mark_applied``)."""
    bind()
    try:
        row = ExtractionModel.get(session_key(org_id, session_id), _job_sk(turn_id), consistent_read=True)
    except DoesNotExist:
        return Progress(org_id, session_id, turn_id, set(), int(time.time()) + JOB_ROW_TTL_S)
    expires = row.expires_at if isinstance(row.expires_at, (int, float)) else int(time.time()) + JOB_ROW_TTL_S
    return Progress(org_id, session_id, turn_id, set(row.applied or ()), int(expires))


def _applied_key(org_id: str, fp: str, *, create: bool = True) -> str | None:
    got = (keyed if create else keyed_if_any)(org_id, "extraction-applied", fp)
    return got[:32] if got is not None else None


def done(p: Progress, fp: str) -> bool:
    """Whether the job already applied the item of fingerprint ``fp``."""
    return fp in p.applied or _applied_key(p.org_id, fp, create=False) in p.applied


def mark_applied(p: Progress, fp: str) -> None:
    """Record that the job applied the item of fingerprint ``fp`` (as its keyed digest) on its
    progress row (created on first use, with its TTL)."""
    key = _applied_key(p.org_id, fp)
    assert key is not None  # made above
    p.applied.add(key)
    ExtractionModel(session_key=session_key(p.org_id, p.session_id), sk=_job_sk(p.turn_id)).update(
        actions=[ExtractionModel.applied.add({key}), ExtractionModel.updated_at.set(now_ms()),
                 ExtractionModel.org_id.set(p.org_id), ExtractionModel.session_id.set(p.session_id),
                 ExtractionModel.turn_id.set(p.turn_id), ExtractionModel.expires_at.set(p.expires_at)])


def drop_progress(p: Progress) -> None:
    """Delete the job's progress row (absent is fine)."""
    ExtractionModel(session_key=session_key(p.org_id, p.session_id), sk=_job_sk(p.turn_id)).delete()


def record_provenance(org_id: str, session_id: str, bank: str, memory_id: str, turn_id: str) -> None:
    """Remember that the session taught ``memory_id`` of ``bank`` (in turn ``turn_id``)."""
    ExtractionModel(session_key=session_key(org_id, session_id), sk=f"mem#{bank}#{memory_id}", org_id=org_id,
                    session_id=session_id, bank=bank, memory_id=memory_id, turn_id=turn_id,
                    updated_at=now_ms()).save()


def drop_provenance(org_id: str, session_id: str, bank: str, memory_id: str) -> None:
    """Forget that the session taught ``memory_id`` of ``bank`` (a purge; absent is fine)."""
    bind()
    ExtractionModel(session_key=session_key(org_id, session_id), sk=f"mem#{bank}#{memory_id}").delete()


def taught(org_id: str, session_id: str, bank: str) -> list[str]:
    """The memory_ids of ``bank`` the session taught (its provenance rows; a key query)."""
    bind()
    rows = ExtractionModel.query(session_key(org_id, session_id), ExtractionModel.sk.startswith(f"mem#{bank}#"),
                                 consistent_read=True)
    return [r.memory_id for r in rows if r.memory_id]


PARKED_PREFIX = "parked#"


def parked_sk(total: int, enqueued_at: int, turn_id: str) -> str:
    """The sort key of a parked job: turn order (the hook's message count, then its time)."""
    return f"{PARKED_PREFIX}{total:010d}#{enqueued_at:013d}#{turn_id}"


def park(org_id: str, session_id: str, sk: str, job_json: str) -> None:
    """Keep a deferred job (its JSON) under ``sk`` (the same job parked again overwrites itself)."""
    bind()
    ExtractionModel(session_key=session_key(org_id, session_id), sk=sk, org_id=org_id, session_id=session_id,
                    job=job_json, updated_at=now_ms()).save()


def parked(org_id: str, session_id: str) -> list[tuple[str, str]]:
    """``[(sk, job JSON)]`` of the session's parked jobs in turn order (a key query)."""
    bind()
    rows = ExtractionModel.query(session_key(org_id, session_id), ExtractionModel.sk.startswith(PARKED_PREFIX),
                                 consistent_read=True)
    return [(r.sk, r.job or "") for r in rows]


def unpark(org_id: str, session_id: str, sk: str) -> None:
    """Drop a parked job once it ran (absent is fine)."""
    ExtractionModel(session_key=session_key(org_id, session_id), sk=sk).delete()
