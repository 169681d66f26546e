"""The local stack's start-up check: refuse to start on an invalid setting instead of serving
500s. Validates the ``CAIRN_*`` settings and the ``KEYSTONE_CONTEXT_MEMORY_*`` caps in the
environment the API child will get (the launcher's own plus the ``local`` stage's variables from
``.chalice/config.json``); an invalid memory tuning only warns, since the service keeps the last
good tuning and says so."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def stage_environment(stage: str = "local") -> dict[str, str]:
    """The environment variables ``chalice local --stage <stage>`` sets (app-wide, then stage)."""
    config = json.loads((ROOT / ".chalice" / "config.json").read_text())
    env = dict(config.get("environment_variables") or {})
    env.update((config.get("stages", {}).get(stage) or {}).get("environment_variables") or {})
    return env


def problems(stage: str = "local") -> tuple[list[str], list[str]]:
    """``(errors, warnings)``: each a sentence naming the variable or file and the key."""
    from chalicelib.errors import ConfigError
    from chalicelib.settings import get_settings
    from chalicelib.team.limits import get_limits
    from chalicelib.tuning import load_tuning

    saved = dict(os.environ)
    os.environ.update(stage_environment(stage))
    errors: list[str] = []
    warnings: list[str] = []
    try:
        for check in (get_settings, get_limits):
            try:
                check()
            except ConfigError as exc:
                errors.append(str(exc))
        try:
            load_tuning()
        except ConfigError as exc:
            warnings.append(f"{exc} (the defaults run until it is fixed)")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return errors, warnings
