"""Reloads after hand edits in S3.

The bucket sends EventBridge ``Object Created`` / ``Object Deleted`` events (``chalice package``
cannot attach S3 notifications to a CloudFormation bucket). For ``<org>/banks/<bank>/rules/<name>.md``
the bank's rule count is recounted and its ``rules_version`` bumped
(``chalicelib.banks.rules.refresh_rule_count``, audited as ``rule.reload`` by ``system:reload``):
every container's rules cache is keyed by that version, so the next injection anywhere reads the
new rules. For ``config/memory.toml`` the file is validated with the rest of the tuning (an
invalid one is logged and the last good tuning keeps running everywhere: the version is bumped
all the same, ``reload_invalid``) and the config version is bumped
(``chalicelib.inject.reload.reload``), both audited as ``config.reload`` in org ``_system``, so
every container drops its caches and re-reads its tuning before the next call. Other keys,
and rule keys whose bank or rule name is invalid, are logged and ignored. Safe to run twice:
each run only recounts and bumps a version.
"""

from __future__ import annotations

import json
import logging
from typing import Any, TypedDict
from urllib.parse import unquote_plus

from ..errors import CairnError
from ..names import NAME_RE
from ..settings import get_settings
from ..tuning import CONFIG_KEY

log = logging.getLogger("cairn.events")
RELOAD_ACTOR = "system:reload"  # who the audit trail names for a reload an S3 event started

RULE_EVENTS = ("Object Created", "Object Deleted")


def parse_rule_key(key: str) -> tuple[str, str, str] | None:
    """``(org_id, bank, rule)`` of ``<org>/banks/<bank>/rules/<rule>.md``, else ``None``
    (including keys whose bank or rule name is not a valid name)."""
    parts = key.split("/")
    if len(parts) != 5 or parts[1] != "banks" or parts[3] != "rules" or not parts[4].endswith(".md"):
        return None
    org, bank, rule = parts[0], parts[2], parts[4][:-3]
    if not org or not NAME_RE.fullmatch(bank) or not NAME_RE.fullmatch(rule):
        return None
    return org, bank, rule


class ReloadResult(TypedDict, total=False):
    """What an S3 event did: ``action`` (``rules_reloaded | config_reloaded | config_invalid |
    ignored``) and, by action, ``reason``, ``org_id``/``bank``/``rule``, ``config_version`` or
    ``error``."""

    action: str
    reason: str
    org_id: str
    bank: str
    rule: str
    config_version: int
    error: str


def _log(msg: str, **fields: Any) -> None:
    log.info(json.dumps({"msg": msg, **fields}))


def handle_object_event(detail_type: str, detail: dict[str, Any]) -> ReloadResult:
    """Handle one S3 EventBridge event (``detail-type`` and ``detail``); returns what it did:
    ``{action: rules_reloaded | config_reloaded | config_invalid | ignored, ...}``."""
    bucket = ((detail or {}).get("bucket") or {}).get("name")
    key = unquote_plus(((detail or {}).get("object") or {}).get("key") or "")
    if detail_type not in RULE_EVENTS or bucket != get_settings().bucket:
        _log("s3 event ignored", reason="other bucket or event", detail_type=detail_type)
        return {"action": "ignored", "reason": "other_bucket_or_event"}
    if key == CONFIG_KEY:
        return reload_config(deleted=detail_type == "Object Deleted")
    parsed = parse_rule_key(key)
    if parsed is None:
        if "/rules/" in key:
            _log("s3 event ignored: invalid rule key", key=key[:300])
        return {"action": "ignored", "reason": "not_a_rule_key"}
    org, bank, rule = parsed
    from ..banks.rules import refresh_rule_count
    refresh_rule_count(org, bank, audit=("rule.reload", RELOAD_ACTOR, rule))
    _log("rules reloaded", org_id=org, bank=bank, rule=rule, event=detail_type)
    return {"action": "rules_reloaded", "org_id": org, "bank": bank, "rule": rule}


def reload_config(*, deleted: bool = False) -> ReloadResult:
    """Reload after ``config/memory.toml`` changed: bump the config version so every container
    re-reads the tuning it gives (layered over the file and under the environment,
    ``chalicelib.tuning``); when it is valid it becomes the last good one; an invalid one is logged,
    and every container, warm or cold, runs the last good one and reports the problem."""
    # loaded here, not at import app: the injection code behind it serves the routes that need it
    from ..inject.reload import reload, reload_invalid  # reload drops every cache of this container

    try:
        version = reload(actor=RELOAD_ACTOR).config_version
    except CairnError as exc:
        version = reload_invalid(actor=RELOAD_ACTOR)
        _log("config reload: invalid tuning, the last good one runs", error=exc.message[:500],
             config_version=version)
        return {"action": "config_invalid", "error": exc.message[:500], "config_version": version}
    _log("config reloaded", config_version=version, deleted=deleted)
    return {"action": "config_reloaded", "config_version": version}
