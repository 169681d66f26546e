"""Reloads and the cross-container config versions.

Two versions, each the ``seq`` of an internal bank row named ``!config`` (a key no bank
name can take):

- the global one, org ``_system``: bumped by an operator-level reload (``reload()``, run when
  ``config/memory.toml`` changes in S3), it makes every container drop every cached index, its
  tuning and its rules;
- one per org, org ``<org_id>``: bumped by that org's ``POST /v1/reload`` (``reload_org``), it
  makes every container drop that org's cached indexes and rules only.

Other containers see both in the recall core's one consistent read
(``chalicelib.search.recall.read_rows``, a BatchGetItem of the banks' version items and these two rows); the
rules cache is keyed by both, so rules reload on the same turn. No extra read on a warm turn.

The global row also keeps the last good memory tuning (``tuning``, JSON, written by every
successful reload of either kind: the tuning is global), so a cold container whose configured
tuning is invalid runs what the last reload validated (``chalicelib.tuning.get_tuning``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import audit
from ..core.store import CONFIG_ORG, get_config_row, update_config_row
from ..errors import BadRequest, ConfigError
from . import rules_cache


@dataclass(frozen=True)
class Reloaded:
    """A reload's outcome: the config version now in force (the global one, or the org's) and how
    many cached bank indexes this container dropped."""

    config_version: int
    banks: int


def read_version(org_id: str = CONFIG_ORG) -> int:
    """The stored config version of ``org_id`` (default: the global one; 0 before the first
    reload); one consistent GetItem."""
    row = get_config_row(org_id)
    return 0 if row is None else int(row.seq or 0)


def _update_row(org_id: str, *, bump: bool, tuning_json: str | None) -> int:
    """Update (creating on first use) the ``!config`` row of ``org_id``: add 1 to its ``seq``
    when ``bump``, keep ``tuning_json`` when given; returns the row's ``seq``."""
    return update_config_row(org_id, add=1 if bump else 0, tuning_json=tuning_json)


def bump_version(tuning_json: str | None = None, *, org_id: str = CONFIG_ORG) -> int:
    """Atomically add 1 to the config version of ``org_id`` (default: the global one), creating
    its row on first use, and return the new version. ``tuning_json``, when given, is kept as the
    last good tuning on the global row (in the same write for a global bump; for an org's bump
    only when it differs from the one kept)."""
    if org_id == CONFIG_ORG:
        return _update_row(CONFIG_ORG, bump=True, tuning_json=tuning_json)
    if tuning_json is not None and tuning_json != read_last_good():  # the global row moves only on a change
        _update_row(CONFIG_ORG, bump=False, tuning_json=tuning_json)
    return _update_row(org_id, bump=True, tuning_json=None)


def read_last_good() -> str | None:
    """The last good tuning's JSON kept in the global config row, or None."""
    row = get_config_row(CONFIG_ORG)
    return None if row is None else row.tuning


def _validated_tuning():
    """The configured tuning, read now; 400 ``invalid_config`` naming the file or variable, the
    key and the problem (``details.problems``: ``[{source, key, problem}]``) when invalid."""
    from ..tuning import current_tuning, note_problem

    try:
        return current_tuning()
    except ConfigError as exc:
        note_problem(exc)  # this container now reports it too, as a cold one would
        raise BadRequest(f"Nothing was reloaded: {exc}", code="invalid_config",
                         details={"problems": exc.problems}) from None


def reload(*, actor: str) -> Reloaded:
    """The operator-level reload (``config/memory.toml`` changed): validate the configured
    tuning, drop this container's caches of every org and bump the global config version, keeping
    the validated tuning as the last good one (``Reloaded``), audited as ``config.reload`` in org
    ``_system``. Raises ``BadRequest`` ``invalid_config`` (``_validated_tuning``); nothing is
    dropped or bumped then."""
    from ..search.recall import (
        drop_caches,  # the recall core owns the index cache and tuning
    )
    from ..tuning import set_config_version

    tuning = _validated_tuning()
    banks = drop_caches()
    rules_cache.drop()
    version = bump_version(tuning.model_dump_json())
    set_config_version(version)  # this container's caches are now those of the new version
    audit.record(CONFIG_ORG, "config.reload", actor, None, {"config_version": version})
    return Reloaded(version, banks)


def reload_invalid(*, actor: str) -> int:
    """``config/memory.toml`` changed and the tuning it gives is invalid: bump the global config
    version all the same, without a new last good tuning, so every container re-reads the tuning,
    finds the problem and runs (and reports) the last good one, warm or cold alike; returns the new
    version. Audited as ``config.reload`` (``details.valid``: false) in org ``_system``."""
    from ..search.recall import drop_caches
    from ..tuning import set_config_version

    drop_caches()
    rules_cache.drop()
    version = bump_version(None)
    set_config_version(version)
    audit.record(CONFIG_ORG, "config.reload", actor, None, {"config_version": version, "valid": False})
    return version


def reload_org(org_id: str, *, actor: str) -> Reloaded:
    """``POST /v1/reload`` for ``org_id``: validate the configured tuning, drop this container's
    cached indexes and rules of ``org_id`` (and its tuning, so a fixed configuration runs here at
    once), keep the validated tuning as the last good one, and bump the org's config version so
    every other container drops that org's indexes and rules on its next read, and no other
    org's (``Reloaded``: the org's version and how many of its cached bank indexes were dropped
    here), audited as ``config.reload``. Raises ``BadRequest`` ``invalid_config``; nothing is
    dropped or bumped then."""
    from ..search.recall import drop_caches
    from ..tuning import set_org_config_version

    tuning = _validated_tuning()
    banks = drop_caches(org_id)
    rules_cache.drop(org_id)
    version = bump_version(tuning.model_dump_json(), org_id=org_id)
    set_org_config_version(org_id, version)
    audit.record(org_id, "config.reload", actor, org_id, {"config_version": version})
    return Reloaded(version, banks)
