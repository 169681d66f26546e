"""``POST /v1/reload`` and the cross-container config version.

The config version is the ``seq`` of one internal ``BankModel`` row, org ``_system``, name
``!config`` (a key no bank name can take). ``reload()`` drops this container's cached indexes,
tuning (``chalicelib.search.recall.drop_caches``) and rules (``rules_cache.drop``), then bumps the
version atomically (UpdateItem ``ADD``). Other containers see the new version in the recall core's
one consistent read (``chalicelib.search.recall.read_rows``, a BatchGetItem of the bank rows and
this row), which drops their indexes and tuning; their rules are keyed by the config version too,
so they reload on the same turn. No extra read is needed on a warm turn.

The same row keeps the last good memory tuning (``tuning``, JSON, written by every successful
reload), so a cold container whose configured tuning is invalid runs what the last reload
validated (``chalicelib.tuning.get_tuning``).
"""

from __future__ import annotations

import uuid

from pynamodb.exceptions import DoesNotExist

from ..clock import now_ms
from ..errors import BadRequest, ConfigError
from ..storage.tables import BankModel, bind
from . import rules_cache

CONFIG_ORG = "_system"
CONFIG_NAME = "!config"


def read_version() -> int:
    """The stored config version (0 before the first reload); one consistent GetItem."""
    bind()
    try:
        return int(BankModel.get(CONFIG_ORG, CONFIG_NAME, consistent_read=True).seq or 0)
    except DoesNotExist:
        return 0


def bump_version(tuning_json: str | None = None) -> int:
    """Atomically add 1 to the config version (creating its row on first use), keeping
    ``tuning_json`` as the last good tuning when given; returns the new version."""
    bind()
    now = now_ms()
    row = BankModel(CONFIG_ORG, CONFIG_NAME)
    row.update(actions=[
        *([BankModel.tuning.set(tuning_json)] if tuning_json is not None else []),
        BankModel.seq.add(1),
        BankModel.bank_name.set(BankModel.bank_name | CONFIG_NAME),
        BankModel.incarnation.set(BankModel.incarnation | uuid.uuid4().hex),
        BankModel.created_at.set(BankModel.created_at | now),
        BankModel.updated_at.set(now),
    ])
    return int(row.seq)


def read_last_good() -> str | None:
    """The last good tuning's JSON kept in the config row, or None."""
    bind()
    try:
        return BankModel.get(CONFIG_ORG, CONFIG_NAME, consistent_read=True).tuning
    except DoesNotExist:
        return None


def reload() -> dict[str, int]:
    """Validate the configured tuning, drop this container's caches and bump the config version,
    keeping the validated tuning as the last good one:
    ``{config_version, banks}`` (``banks``: how many cached bank indexes were dropped).

    Raises ``BadRequest`` ``invalid_config`` naming the file or variable, the key and the problem
    (``details.problems``: ``[{source, key, problem}]``) when the tuning is invalid; nothing is
    dropped or bumped then."""
    from ..search.recall import drop_caches  # the recall core owns the index cache and tuning
    from ..tuning import current_tuning, set_config_version

    try:
        tuning = current_tuning()
    except ConfigError as exc:
        raise BadRequest(f"Nothing was reloaded: {exc}", code="invalid_config",
                         details={"problems": exc.problems}) from None
    banks = drop_caches()
    rules_cache.drop()
    version = bump_version(tuning.model_dump_json())
    set_config_version(version)  # this container's caches are now those of the new version
    return {"config_version": version, "banks": banks}
