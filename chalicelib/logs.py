"""Structured JSON logging: one line per event, never memory text or tokens."""

from __future__ import annotations

import logging
import sys

from .errors import ConfigError
from .settings import get_settings


def configure_logging() -> None:
    """Send ``cairn.*`` loggers to stderr at ``Settings.log_level`` (``CAIRN_LOG_LEVEL``, default
    INFO). Idempotent.

    Chalice names its app logger after ``app_name`` ("cairn", the same logger) and gives it a
    stdout handler at ERROR, which would hide every INFO request line: that handler is replaced
    and the level set again on each call (app.py calls this after creating the app).
    """
    root = logging.getLogger("cairn")
    for h in [h for h in root.handlers if not getattr(h, "_cairn", False)]:
        root.removeHandler(h)
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._cairn = True  # type: ignore[attr-defined]  # marks our own handler for the next configure
        root.addHandler(handler)
    root.setLevel(_level())
    root.propagate = False


def _level() -> str:
    try:
        return get_settings().log_level
    except ConfigError:
        # logging starts at import; the first request reports the bad setting (500 misconfigured)
        return "INFO"
