"""Audit events and their storage. Events name the actor, action and target, never memory text
or secrets. Writers add the event to the same transaction as the change it records
(``add_to``), so an audited change and its event commit or fail together.

Stored in the ``audit`` table: ``(org_id, sk)`` with ``sk`` = ``<at ms, 13 digits>#<uuid hex>``
(time order), ``action_sk`` = ``<action>#<sk>`` for the per-action index, and ``actor_key`` /
``target_key`` = ``<org_id>#<actor or target>`` for the per-actor and per-target global indexes
(sort key ``sk``; an event without a target is not in the target index).

Details are sanitised as they are written (``validation.shown_line``: no control, separator or
bidirectional formatting character, strings cut to ``DETAIL_CHARS``), whoever chose them.
``note_refusal`` aggregates the per-turn hook's refusals: one ``hook.refused`` event per token and
UTC hour, counting them, so a caller cannot grow the trail by sending refused hooks.

Reading (``query``, ``page``): every filter is a key condition on one index, never a scan. With
several filters the most selective key is used (target, then actor, then action, then the table)
and the others are filtered server-side in the same query. The global indexes are eventually
consistent: an event may reach an actor or target listing a moment after it commits."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

from pynamodb.expressions.condition import Condition
from pynamodb.transactions import TransactWrite

from . import patterns
from .clock import now_ms
from .core.store import decode_cursor, encode_cursor
from .errors import BadRequest
from .storage.tables import AuditModel, bind
from .validation import shown_line

MEMORY_ACTIONS = ("memory.save", "memory.update", "memory.delete")
# Every action the service writes; ``_event`` refuses any other, so this list stays complete.
ACTIONS: tuple[str, ...] = (
    *MEMORY_ACTIONS, "memory.pin", "memory.supersede", "memory.purge",
    "bank.create", "bank.update", "bank.trash", "bank.restore", "bank.import", "bank.backfill",
    "rule.set", "rule.delete",
    "rule.reload", "config.reload",
    "token.mint", "token.revoke", "session.forget", "hook.refused", "usage.limits",
    "extraction.run", "extraction.reset",
    "session.create", "session.delete", "workstream.create", "project.create", "project.update",
    "project.member", "project.member_remove",
    "context.space.create", "context.space.patch", "context.space.member", "context.space.member_remove",
    "context.deny_rules",
    "context.memory.create", "context.memory.patch", "context.memory.update", "context.memory.accept",
    "context.memory.supersede", "context.memory.archive",
)
_SK = patterns.compile(r"[0-9]{13}#[0-9a-f]{32}")


def _scoped(org_id: str, value: str) -> str:
    return f"{org_id}#{value}"


DETAIL_CHARS = 200  # a string in an event's details, at most
DETAIL_ITEMS = 50  # a list in an event's details, at most


def _clean(value: Any) -> Any:
    """``value`` (an event's details) with every string sanitised (``shown_line``), lists cut to
    ``DETAIL_ITEMS``; numbers and booleans as they are."""
    if isinstance(value, str):
        return shown_line(value, DETAIL_CHARS)
    if isinstance(value, dict):
        return {shown_line(str(k), DETAIL_CHARS): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in list(value)[:DETAIL_ITEMS]]
    return value


def _event(org_id: str, action: str, actor: str, target: str | None, details: dict[str, Any] | None,
           at: int | None = None, sk: str | None = None) -> AuditModel:
    if action not in ACTIONS:  # a programming error: a new action must be listed to be readable
        raise ValueError(f"unknown audit action {action!r}")
    at = at if at is not None else now_ms()
    sk = sk or f"{at:013d}#{uuid.uuid4().hex}"
    return AuditModel(org_id=org_id, sk=sk, action_sk=f"{action}#{sk}", action=action, actor=actor,
                      target=target, details=_clean(details) or None, at=at, actor_key=_scoped(org_id, actor),
                      target_key=_scoped(org_id, target) if target is not None else None)


def add_to(tx: TransactWrite, org_id: str, action: str, actor: str, target: str | None = None,
           details: dict[str, Any] | None = None) -> None:
    """Add one audit event to transaction ``tx`` (committed with it, or not at all)."""
    bind()
    tx.save(_event(org_id, action, actor, target, details), condition=AuditModel.sk.does_not_exist())


def record(org_id: str, action: str, actor: str, target: str | None = None,
           details: dict[str, Any] | None = None) -> None:
    """Write one audit event on its own (for changes that are not a DynamoDB transaction)."""
    bind()
    _event(org_id, action, actor, target, details).save()


REFUSALS_WINDOW_MS = 3_600_000  # hook refusals of one token are one event per UTC hour


def note_refusal(org_id: str, actor: str, token_id: str, details: dict[str, Any]) -> None:
    """Count one refusal of the per-turn hook: the event ``hook.refused`` of this token and UTC
    hour (``at`` = the hour's start, ``details`` = the first refusal's, sanitised) is created on
    the first and counted on each (``details.count``, ``details.last_at``): one item per token and
    hour, whatever the caller sends."""
    bind()
    now = now_ms()
    start = now - now % REFUSALS_WINDOW_MS
    tag = hashlib.sha256(json.dumps([org_id, token_id, start]).encode("utf-8")).hexdigest()[:32]
    ev = _event(org_id, "hook.refused", actor, None, details, at=start, sk=f"{start:013d}#{tag}")
    ev.update(actions=[AuditModel.action_sk.set(ev.action_sk), AuditModel.action.set(ev.action),
                       AuditModel.actor.set(ev.actor), AuditModel.actor_key.set(ev.actor_key),
                       AuditModel.at.set(start), AuditModel.details.set(AuditModel.details | ev.details),
                       AuditModel.times.add(1), AuditModel.last_at.set(now)])


def retarget(org_id: str, old: str, new: str) -> int:
    """Re-target every event of ``org_id`` on ``old`` to ``new`` (a purge: the purged memory's id
    leaves the trail; who did what, and when, stays); returns how many. Read through the target
    index, which is eventually consistent: an event that committed a moment before can be missed,
    and is re-targeted by the purge's next run."""
    bind()
    found = list(AuditModel.by_target.query(_scoped(org_id, old), filter_condition=AuditModel.org_id == org_id))
    for ev in found:
        ev.update(actions=[AuditModel.target.set(new), AuditModel.target_key.set(_scoped(org_id, new))])
    return len(found)


class AuditEvent(TypedDict):
    """An event's public JSON shape (``at`` in ms since epoch; ``details`` ``{}`` when none)."""

    id: str
    action: str
    actor: str
    target: str | None
    details: dict[str, Any]
    at: int | None


def to_dict(ev: AuditModel) -> AuditEvent:
    """The event's public JSON shape: ``{id, action, actor, target, details, at}`` (``at`` in ms)."""
    details = dict(ev.details.as_dict()) if ev.details is not None else {}
    if isinstance(ev.times, (int, float)):  # an aggregated event (``note_refusal``)
        details.update(count=int(ev.times), last_at=int(ev.last_at) if isinstance(ev.last_at, (int, float)) else None)
    return {"id": ev.sk, "action": ev.action, "actor": ev.actor, "target": ev.target, "details": details,
            "at": int(ev.at) if isinstance(ev.at, (int, float)) else None}


def events(org_id: str, *, since_ms: int, after: str | None, action: str | None,
           actions: tuple[str, ...]) -> Iterator[tuple[str, AuditModel]]:
    """An org's events oldest first, from ``since_ms`` (ms since epoch) or strictly after the
    cursor position ``after``, as ``(position, event)`` pairs (consistent reads). With ``action``,
    only that action's events (its index); otherwise only those whose action is in ``actions``."""
    bind()
    lo = f"{max(0, since_ms):013d}"
    if action:
        start = after if after else f"{action}#{lo}"
        for ev in AuditModel.by_action.query(org_id, AuditModel.action_sk.between(start, f"{action}#~"),
                                             consistent_read=True):
            if ev.action_sk != after:
                yield ev.action_sk, ev
        return
    cond = (AuditModel.sk > after) if after else (AuditModel.sk >= lo)
    for ev in AuditModel.query(org_id, cond, consistent_read=True, filter_condition=AuditModel.action.is_in(*actions)):
        yield ev.sk, ev


# --- reading every event, filtered ----------------------------------------------------------

@dataclass(frozen=True)
class Filter:
    """What ``query`` reads: events with ``since <= at < until`` (ms since the epoch; ``until``
    ``None`` = no end), of ``action``, ``actor`` and ``target`` when given (exact matches)."""

    action: str | None = None
    actor: str | None = None
    target: str | None = None
    since: int = 0
    until: int | None = None

    def tag(self) -> str:
        """The filter as one string, so a cursor is bound to the filter that issued it."""
        return json.dumps([self.action, self.actor, self.target, self.since, self.until])


def _sk_bounds(flt: Filter, after: str | None) -> tuple[str, str]:
    """The inclusive ``sk`` range of ``flt``'s time window, starting at ``after`` when given (a
    position outside the window, which only a forged cursor holds, never widens it)."""
    lo = max(after or "", f"{max(0, flt.since):013d}")
    hi = f"{flt.until - 1:013d}#~" if flt.until is not None else "~"
    return lo, hi


def _also(*conds: Condition | None) -> Condition | None:
    out = None
    for c in conds:
        if c is not None:
            out = c if out is None else out & c
    return out


def query(org_id: str, flt: Filter, *, after: str | None = None) -> Iterator[AuditModel]:
    """``org_id``'s events matching ``flt``, oldest first, strictly after the event whose ``sk`` is
    ``after`` when given. One key query on the most selective index (target, actor, action, then
    the table); the other filters are applied server-side in that query."""
    bind()
    lo, hi = _sk_bounds(flt, after)
    if lo > hi:  # a forged cursor past the window: nothing (DynamoDB refuses an inverted range)
        return
    by_action = AuditModel.action == flt.action if flt.action else None
    if flt.target is not None or flt.actor is not None:
        index, key = ((AuditModel.by_target, _scoped(org_id, flt.target)) if flt.target is not None
                      else (AuditModel.by_actor, _scoped(org_id, str(flt.actor))))
        by_actor = AuditModel.actor == flt.actor if flt.target is not None and flt.actor is not None else None
        # the org is in the key; checking it again keeps an org id holding '#' from reaching another's
        cond = _also(AuditModel.org_id == org_id, by_action, by_actor)
        rows = index.query(key, AuditModel.sk.between(lo, hi), filter_condition=cond)
    elif flt.action:
        rows = AuditModel.by_action.query(org_id, AuditModel.action_sk.between(f"{flt.action}#{lo}",
                                                                                f"{flt.action}#{hi}"),
                                          consistent_read=True)
    else:
        rows = AuditModel.query(org_id, AuditModel.sk.between(lo, hi), consistent_read=True)
    for ev in rows:
        if ev.sk != after:
            yield ev


@dataclass(frozen=True)
class Page:
    """One page of events (``to_dict`` shapes), oldest first, and the next page's cursor (``None``
    on the last)."""

    events: list[AuditEvent]
    next_cursor: str | None


def page(org_id: str, flt: Filter, *, cursor: str | None, limit: int) -> Page:
    """At most ``limit`` of ``org_id``'s events matching ``flt``, after ``cursor``. A cursor from
    another listing, org or filter, or not made here, is 400 ``validation_error`` naming
    ``cursor``."""
    owner = f"{org_id}|{flt.tag()}"
    cur = decode_cursor(cursor, "audit-events", owner, {"k": str})
    if cur is not None and not _SK.fullmatch(cur["k"]):
        raise BadRequest("Invalid cursor: it is malformed or was issued by another listing.",
                         details={"field": "cursor"})
    events: list[AuditEvent] = []
    last = ""
    for ev in query(org_id, flt, after=cur["k"] if cur else None):
        if len(events) == limit:
            return Page(events, encode_cursor("audit-events", owner, {"k": last}))
        events.append(to_dict(ev))
        last = ev.sk
    return Page(events, None)
