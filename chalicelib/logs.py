"""Structured JSON logging: one line per event, never memory text or tokens."""

from __future__ import annotations

import logging
import os
import sys


def configure_logging() -> None:
    """Send ``cairn.*`` loggers to stderr at ``CAIRN_LOG_LEVEL`` (default INFO), once."""
    root = logging.getLogger("cairn")
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root.addHandler(handler)
    root.setLevel(os.environ.get("CAIRN_LOG_LEVEL", "INFO").upper() if os.environ.get("CAIRN_LOG_LEVEL", "INFO").upper()
                  in ("DEBUG", "INFO", "WARNING", "ERROR") else "INFO")
    root.propagate = False
