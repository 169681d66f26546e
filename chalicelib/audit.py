"""Audit events. Events name the actor, action and target,
never memory text or secrets. Writers add the event to the same transaction as the change it
records (``add_to``), so an audited change and its event commit or fail together."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from pynamodb.transactions import TransactWrite

from .clock import now_ms
from .storage.tables import AuditModel, bind


def _event(org_id: str, action: str, actor: str, target: str | None, details: dict[str, Any] | None,
           at: int | None = None) -> AuditModel:
    at = at if at is not None else now_ms()
    sk = f"{at:013d}#{uuid.uuid4().hex}"
    return AuditModel(org_id=org_id, sk=sk, action_sk=f"{action}#{sk}", action=action, actor=actor,
                      target=target, details=details or None, at=at)


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


def to_dict(ev: AuditModel) -> dict[str, Any]:
    """The event's public JSON shape: ``{id, action, actor, target, details, at}`` (``at`` in ms)."""
    return {"id": ev.sk, "action": ev.action, "actor": ev.actor, "target": ev.target,
            "details": dict(ev.details.as_dict()) if ev.details is not None else {},
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
